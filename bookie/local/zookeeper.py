"""The embedded ZooKeeper: the real server, loopback only, run from a ZooKeeper on the host or PySpark's jars (no
download)."""

from __future__ import annotations

import importlib.util
import os
import socket
import time
from pathlib import Path

from bookie.errors import BKError, ServiceUnavailable
from bookie.files import private_dirs, write_private
from bookie.local.java import find_java
from bookie.local.process import pid_alive, spawn, stop_process_group, tail
from bookie.meta.ensemble import four_letters

MAIN_CLASS = "org.apache.zookeeper.server.ZooKeeperServerMain"
LOG4J2 = """\
appender.console.type = Console
appender.console.name = console
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{ISO8601} %-5p [%t] %c{1}: %m%n
rootLogger.level = INFO
rootLogger.appenderRef.console.ref = console
"""


# A ZooKeeper on the host, in the order they are tried after ZOOKEEPER_PATH: a jar whose manifest names the jars it
# needs (Debian's and Ubuntu's `zookeeper` package), or an installation directory (jars at its top or in lib/).
HOST_JARS = (Path("/usr/share/java/zookeeper.jar"),)
HOST_INSTALLS = (Path("/usr/share/zookeeper"),)
NO_ZOOKEEPER = (
    "no ZooKeeper on this host: install one (Debian, Ubuntu: apt-get install zookeeper), set ZOOKEEPER_PATH to a "
    "ZooKeeper installation, or pip install 'bkctl[sandbox]' (PySpark's jars carry one)"
)


def _installation(root: Path) -> str | None:
    """The classpath of a ZooKeeper installation directory, as kazoo's test harness reads ZOOKEEPER_PATH: a release
    (zookeeper-*.jar at its top or in lib/) or a source build (build/, build/lib/); None when it holds none."""
    folders = [d for d in (root, root / "lib", root / "build", root / "build" / "lib") if d.is_dir()]
    if not any(any(d.glob("zookeeper-*.jar")) for d in folders):
        return None
    return ":".join(f"{d}/*" for d in folders if any(d.glob("*.jar")))


def choose_classpath(
    zookeeper_path: str | None,
    pyspark_jars: Path | None,
    host_jars: tuple[Path, ...] = HOST_JARS,
    host_installs: tuple[Path, ...] = HOST_INSTALLS,
) -> str:
    """The classpath of the ZooKeeper to run: ``zookeeper_path`` (ZOOKEEPER_PATH) when set, else one on the host,
    else PySpark's jars folder (``pyspark_jars``: the 491 MB wheel of bkctl[sandbox] carries ZooKeeper 3.9)."""
    if zookeeper_path:
        found = _installation(Path(zookeeper_path))
        if found is None:
            raise BKError(f"ZOOKEEPER_PATH={zookeeper_path} holds no zookeeper-*.jar (at its top, in lib/ or build/)")
        return found
    for jar in host_jars:
        if jar.is_file():  # with slf4j's simple logger beside it (Debian's libslf4j-java), the log says why it failed
            logger = jar.parent / "slf4j-simple.jar"
            return f"{jar}:{logger}" if logger.is_file() else str(jar)
    for root in host_installs:
        if found := _installation(root):
            return found
    if pyspark_jars is not None and any(pyspark_jars.glob("zookeeper-*.jar")):
        return f"{pyspark_jars}/*"
    raise BKError(NO_ZOOKEEPER)


def zookeeper_classpath() -> str:
    """The classpath of this host's ZooKeeper (:func:`choose_classpath`)."""
    spec = importlib.util.find_spec("pyspark")
    pyspark = None
    if spec is not None and spec.submodule_search_locations:
        pyspark = Path(next(iter(spec.submodule_search_locations))) / "jars"
    return choose_classpath(os.environ.get("ZOOKEEPER_PATH"), pyspark)


def ruok(host: str, port: int, timeout: float = 0.5) -> bool:
    """ZooKeeper's four-letter health check: the server process answers (not that it serves clients yet)."""
    try:
        with socket.create_connection((host, port), timeout) as s:
            s.sendall(b"ruok")
            return s.recv(4) == b"imok"
    except OSError:
        return False


def serving(host: str, port: int, data_dir: Path | None = None, timeout: float = 0.5) -> bool:
    """Whether ZooKeeper serves clients (and, with ``data_dir``, is the server of that directory, not another one
    on the port). ``ruok`` answers ``imok`` as soon as the port accepts, while the server still loads its database
    and turns clients away ("ZooKeeperServer not running"); ``srvr`` names the server's mode only once it serves."""
    if b"Mode: " not in four_letters(host, port, b"srvr", timeout):
        return False
    return data_dir is None or f"dataDir={data_dir}".encode() in four_letters(host, port, b"conf", timeout)


def jaas_server_section(users: dict[str, str]) -> str:
    """A JAAS file whose ``Server`` section lets ``users`` (name -> password) log in with SASL DIGEST-MD5, as
    ZooKeeper's SASL documentation writes it."""
    quoted = {name: password.replace("\\", "\\\\").replace('"', '\\"') for name, password in users.items()}
    logins = "".join(f'\n    user_{name}="{password}"' for name, password in quoted.items())
    return f"Server {{\n    org.apache.zookeeper.server.auth.DigestLoginModule required{logins};\n}};\n"


class EmbeddedZooKeeper:
    """One standalone ZooKeeper server with its data and log under ``directory``.

    ``sasl_users`` (name -> password): accept SASL DIGEST-MD5 logins of these users (the JAAS ``Server`` section,
    in a 0600 file; the JVM is told its path, never a password). Digest authentication (``addauth digest``) needs
    nothing on the server: ZooKeeper always has it.

    ``max_session_ms``: the longest session the server grants (``maxSessionTimeout``); None leaves ZooKeeper's
    20 ticks. A client asking for more gets this much."""

    def __init__(
        self,
        directory: Path,
        port: int,
        tick_ms: int = 1000,
        sasl_users: dict[str, str] | None = None,
        four_letter_words: tuple[str, ...] = ("ruok", "srvr", "conf", "cons"),
        max_session_ms: int | None = None,
    ):
        self.directory = Path(directory)
        self.port = port
        self.tick_ms = tick_ms
        self.sasl_users = dict(sasl_users or {})
        self.four_letter_words = four_letter_words  # what the server answers: ruok, srvr, conf and cons are ours
        self.max_session_ms = max_session_ms
        self.log_path = self.directory / "zookeeper.log"

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def conf_path(self) -> Path:
        return self.directory / "zoo.cfg"

    @property
    def marker(self) -> tuple[str, ...]:
        """What names this server in its command line (see :func:`bookie.local.process.running`)."""
        return (MAIN_CLASS, str(self.conf_path))

    @property
    def jaas_path(self) -> Path:
        return self.directory / "jaas.conf"

    def _write_config(self) -> Path:
        data = private_dirs(self.directory / "data")
        private_dirs(self.directory)
        write_private(self.directory / "log4j2.properties", LOG4J2.encode())
        sasl = ""
        if self.sasl_users:
            write_private(self.jaas_path, jaas_server_section(self.sasl_users).encode())
            sasl = "authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider\n"
        max_session = "" if self.max_session_ms is None else f"maxSessionTimeout={self.max_session_ms}\n"
        cfg = self.conf_path
        write_private(
            cfg,
            (
                f"tickTime={self.tick_ms}\n"
                f"dataDir={data}\n"
                f"clientPort={self.port}\n"
                "clientPortAddress=127.0.0.1\n"
                "admin.enableServer=false\n"
                "maxClientCnxns=0\n"
                f"4lw.commands.whitelist={','.join(self.four_letter_words)}\n"
                # one tick minimum lets tests expire sessions quickly; clients still ask for their own timeout
                f"minSessionTimeout={2 * self.tick_ms}\n"
                f"{max_session}"
                f"{sasl}"
            ).encode(),
        )
        return cfg

    def start(self, timeout: float = 60.0) -> int:
        """Start the server and wait until it serves clients; return its pid."""
        cfg = self._write_config()
        args = [
            find_java(),
            "-Xmx256m",
            "-XX:+UseSerialGC",
            f"-Dlog4j2.configurationFile={self.directory / 'log4j2.properties'}",
            "-Dzookeeper.admin.enableServer=false",
            *([f"-Djava.security.auth.login.config={self.jaas_path}"] if self.sasl_users else []),
            "-cp",
            zookeeper_classpath(),
            MAIN_CLASS,
            str(cfg),
        ]
        pid = spawn(args, self.log_path)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            # not ruok: clients that come too early are turned away; and ours, not whatever else holds the port
            if serving("127.0.0.1", self.port, self.directory / "data"):
                return pid
            if not pid_alive(pid):
                raise ServiceUnavailable(
                    f"ZooKeeper exited while starting (log {self.log_path}):\n{tail(self.log_path)}"
                )
            time.sleep(0.1)
        stop_process_group(pid)
        raise ServiceUnavailable(f"ZooKeeper did not answer within {timeout:g} s (log {self.log_path})")
