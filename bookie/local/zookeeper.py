"""The embedded ZooKeeper: the real server, run from PySpark's jars (no download), loopback only."""

from __future__ import annotations

import importlib.util
import socket
import time
from pathlib import Path

from bookie.errors import BKError, ServiceUnavailable
from bookie.files import private_dirs, write_private
from bookie.local.java import find_java
from bookie.local.process import pid_alive, spawn, stop_process_group, tail

MAIN_CLASS = "org.apache.zookeeper.server.ZooKeeperServerMain"
LOG4J2 = """\
appender.console.type = Console
appender.console.name = console
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{ISO8601} %-5p [%t] %c{1}: %m%n
rootLogger.level = INFO
rootLogger.appenderRef.console.ref = console
"""


def zookeeper_classpath() -> str:
    """PySpark's jars folder, which carries ZooKeeper 3.9 and everything it needs."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        raise BKError(
            "pyspark is not installed: the embedded ZooKeeper runs from its jars: pip install 'bkctl[sandbox]'"
        )
    jars = Path(next(iter(spec.submodule_search_locations))) / "jars"
    if not any(jars.glob("zookeeper-*.jar")):
        raise BKError(f"no ZooKeeper jars in {jars}")
    return f"{jars}/*"


def ruok(host: str, port: int, timeout: float = 0.5) -> bool:
    """ZooKeeper's four-letter health check: the server process answers (not that it serves clients yet)."""
    try:
        with socket.create_connection((host, port), timeout) as s:
            s.sendall(b"ruok")
            return s.recv(4) == b"imok"
    except OSError:
        return False


def _four_letters(host: str, port: int, command: bytes, timeout: float) -> bytes:
    try:
        with socket.create_connection((host, port), timeout) as s:
            s.sendall(command)
            answer = b""
            while chunk := s.recv(4096):
                answer += chunk
            return answer
    except OSError:
        return b""


def serving(host: str, port: int, data_dir: Path | None = None, timeout: float = 0.5) -> bool:
    """Whether ZooKeeper serves clients (and, with ``data_dir``, is the server of that directory, not another one
    on the port). ``ruok`` answers ``imok`` as soon as the port accepts, while the server still loads its database
    and turns clients away ("ZooKeeperServer not running"); ``srvr`` names the server's mode only once it serves."""
    if b"Mode: " not in _four_letters(host, port, b"srvr", timeout):
        return False
    return data_dir is None or f"dataDir={data_dir}".encode() in _four_letters(host, port, b"conf", timeout)


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
    nothing on the server: ZooKeeper always has it."""

    def __init__(
        self,
        directory: Path,
        port: int,
        tick_ms: int = 1000,
        sasl_users: dict[str, str] | None = None,
        four_letter_words: tuple[str, ...] = ("ruok", "srvr", "conf"),
    ):
        self.directory = Path(directory)
        self.port = port
        self.tick_ms = tick_ms
        self.sasl_users = dict(sasl_users or {})
        self.four_letter_words = four_letter_words  # what the server answers: ruok, srvr and conf are ours
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
