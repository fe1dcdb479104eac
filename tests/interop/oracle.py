"""The real Apache BookKeeper 4.17.4 (../shared/bk-oracle) for interop tests: Java clusters, the Java client tools
and the BookKeeper shell, run as subprocesses on 127.0.0.1.

A test module that needs it calls :func:`require_oracle` at import: without the package or Java, the module is skipped
with the reason (CI has both)."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ORACLE = Path(os.environ.get("BK_ORACLE_DIR", Path(__file__).resolve().parents[3] / "shared" / "bk-oracle"))
if not ORACLE.is_dir():
    ORACLE = Path("/work/shared/bk-oracle")
ENV = {**os.environ, "BK_ORACLE_PYTHON": sys.executable}
CLASSPATH = f'. "{ORACLE}/bin/bk-common.sh"; bk_find_java; bk_find_spark_jars; bk_classpath 1'  # sets JAVA, BK_CP


def java() -> str | None:
    java_home = os.environ.get("JAVA_HOME")
    for candidate in (os.environ.get("BK_ORACLE_JAVA"), java_home and f"{java_home}/bin/java"):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return shutil.which("java")


def require_oracle() -> None:
    if not (ORACLE / "bin" / "bk-cluster").exists():
        pytest.skip(f"the BookKeeper oracle is missing ({ORACLE}/bin/bk-cluster)", allow_module_level=True)
    if java() is None:
        pytest.skip("no java: set BK_ORACLE_JAVA or JAVA_HOME, or put java on PATH", allow_module_level=True)


def free_ports(n: int) -> list[int]:
    sockets = [socket.socket() for _ in range(n)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def run(*args: str, timeout: float = 60, check: bool = True, env: dict[str, str] | None = None):
    """Run ``bin/<args[0]> args[1:]`` (``env``: more environment variables, e.g. BK_ORACLE_JAVA_OPTS); with
    ``check``, fail the test on a non-zero exit."""
    done = subprocess.run(
        [str(ORACLE / "bin" / args[0]), *args[1:]],
        env={**ENV, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if check:
        assert done.returncode == 0, f"{args[0]} failed ({done.returncode}): {done.stderr[-2000:]}"
    return done


def output(*args: str, timeout: float = 60) -> str:
    return run(*args, timeout=timeout).stdout


@dataclass
class JavaCluster:
    """A ZooKeeper and Java bookies under one directory (``bk-cluster``)."""

    root: Path
    zk: str
    service_uri: str
    bookie_ports: list[int]

    @classmethod
    def start(
        cls,
        root: Path,
        bookies: int = 3,
        *settings: str,
        zk: str | None = None,
        ledgers_root: str = "/ledgers",
        env: dict[str, str] | None = None,
        storage: str = "interleaved",
    ) -> JavaCluster:
        """``settings``: ``KEY=VALUE`` for every bookie's conf. ``zk``: an existing ZooKeeper to use, and
        ``ledgers_root`` the cluster's root in it (initialised when missing). ``env``: for the shell and bookies.
        ``storage``: interleaved or db (DbLedgerStorage)."""
        ports = free_ports(bookies + 1)
        where = ["--zk", zk] if zk else ["--zk-port", str(ports[0])]
        where += ["--root", ledgers_root, "--storage", storage]
        sets = [a for s in settings for a in ("--set", s)]
        run(
            "bk-cluster",
            "start",
            str(root),
            *where,
            "--bookie-ports",
            ",".join(map(str, ports[1:])),
            *sets,
            timeout=180,
            env=env,
        )
        env = dict(line.split("=", 1) for line in (root / "cluster.env").read_text().splitlines() if "=" in line)
        return cls(root, env["ZK"].strip("'\""), env["METADATA_SERVICE_URI"].strip("'\""), ports[1:])

    def bookie_id(self, n: int) -> str:
        """Bookie ``n`` (1-based, as bk-cluster counts)."""
        return f"127.0.0.1:{self.bookie_ports[n - 1]}"

    def conf(self, n: int = 1) -> Path:
        return self.root / f"b{n}" / "bookie.conf"

    def kill(self, n: int) -> None:
        pid = int((self.root / f"b{n}" / "bookie.pid").read_text())
        os.kill(pid, 9)

    def stop_bookie(self, n: int) -> None:
        run("bk-cluster", "stop", str(self.root), "--bookie", str(n), timeout=120)

    def start_bookie(self, n: int) -> None:
        run("bk-cluster", "start-bookie", str(self.root), str(n), timeout=180)

    def stop(self) -> None:
        run("bk-cluster", "stop", str(self.root), timeout=120)


def bk_write(zk: str, *args: str, timeout: float = 120) -> int:
    """The Java client writes a ledger (``bin/bk-write``); return its id."""
    return int(output("bk-write", "--zk", zk, *args, timeout=timeout).strip())


def bk_write_started(zk: str, *args: str) -> tuple[subprocess.Popen, int, list[str]]:
    """``bin/bk-write`` in the background, once its ledger exists: the process, the ledger id and its ensemble."""
    writer = subprocess.Popen(
        [str(ORACLE / "bin" / "bk-write"), "--zk", zk, *args],
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    line = ""
    while "ensemble" not in line:
        line = writer.stderr.readline()
        if not line and writer.poll() is not None:
            raise AssertionError(f"bk-write exited before creating its ledger: {writer.stderr.read()[-2000:]}")
    ensemble = re.search(r"ensemble \[(.*)\]", line).group(1).split(", ")
    return writer, int(re.search(r"ledger (\d+)", line).group(1)), ensemble


def bk_write_during(zk: str, *args: str, during, timeout: float = 180) -> int:
    """``bin/bk-write`` in the background; once its ledger exists, ``during(ledger_id, ensemble)`` runs while it
    writes (e.g. to kill a bookie of the ensemble). Fails the test unless bk-write then succeeds; its ledger id."""
    writer, ledger_id, ensemble = bk_write_started(zk, *args)
    try:
        during(ledger_id, ensemble)
        out, err = writer.communicate(timeout=timeout)
    finally:
        if writer.poll() is None:
            writer.kill()
    assert writer.returncode == 0, err[-2000:]
    assert int(out.strip()) == ledger_id
    return ledger_id


def bk_read(zk: str, ledger_id: int, *args: str, timeout: float = 120) -> list[tuple[int, bytes]]:
    """The Java client reads a ledger (``bin/bk-read``): ``[(entryId, payload)]``."""
    lines = output("bk-read", "--zk", zk, "--ledger", str(ledger_id), *args, timeout=timeout).splitlines()
    return [(int(e), bytes.fromhex(h)) for e, _, h in (line.split("\t") for line in lines)]


def compile_java(source: Path, where: Path) -> Path:
    """Compile a Java program of ours (tests/interop/java, benchmarks/java) against the oracle's jars; ``where``."""
    done = subprocess.run(
        [
            "bash",
            "-c",
            f'{CLASSPATH}; "$(dirname "$JAVA")/javac" -nowarn -encoding UTF-8 '
            f'--release 17 -cp "$BK_CP" -d "{where}" "{source}"',
        ],
        env=ENV,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise RuntimeError(f"javac {source.name} failed: {done.stderr[-3000:]}")
    return where


def java_command(classes: Path, main: str, *args: str) -> list[str]:
    """The command line that runs ``main`` of ``classes`` with the oracle's jars (and its log settings), plus
    ``$BK_ORACLE_JAVA_OPTS`` (word-split) as the oracle's tools take it."""
    return [
        "bash",
        "-c",
        f'{CLASSPATH}; exec "$JAVA" -Xmx1g ${{BK_ORACLE_JAVA_OPTS:-}} -cp "$BK_CP:{classes}" '
        f'-Dlog4j.configurationFile="$BK_ORACLE_HOME/conf/log4j2-tools.xml" {main} "$@"',
        main,
        *args,
    ]


def where(service_uri: str) -> tuple[str, str]:
    """ZooKeeper address and ledgers root of a service URI, as InteropClient takes them."""
    zk, root = service_uri.split("://", 1)[1].split("/", 1)
    return zk, "/" + root


def interop(
    classes: Path,
    service_uri: str,
    *args: str,
    timeout: float = 120,
    stdin: str | None = None,
    env: dict[str, str] | None = None,
) -> str:
    """Run a mode of tests/interop/java/InteropClient.java (``classes``: the ``classes`` fixture); its stdout.
    ``env``: more environment variables (BK_ORACLE_JAVA_OPTS)."""
    done = subprocess.run(
        java_command(classes, "InteropClient", args[0], *where(service_uri), *args[1:]),
        input=stdin,
        env={**ENV, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def java_write(
    classes: Path, service_uri: str, entries: int, text: str, *states: str, env: dict[str, str] | None = None
) -> list[int]:
    """The Java client writes a ledger per state, ``"close"`` or ``"open"`` (left open), of ``entries`` entries
    ``text-i`` (E3 W2 A2, CRC32C, password pw) in one JVM, as ``bk_write(..., "--suffix-index")`` writes one; their
    ids."""
    out = interop(classes, service_uri, "write", str(entries), text, *states, env=env)
    return [int(line) for line in out.split()]


def java_read(
    classes: Path,
    service_uri: str,
    ledger_ids: list[int],
    recovery: bool = True,
    env: dict[str, str] | None = None,
) -> dict[int, list[tuple[int, bytes]]]:
    """The Java client reads ledgers in one JVM, as ``bk_read`` reads one: ``{ledgerId: [(entryId, payload)]}``."""
    mode = "recovery" if recovery else "no-recovery"
    read: dict[int, list[tuple[int, bytes]]] = {ledger_id: [] for ledger_id in ledger_ids}
    for line in interop(classes, service_uri, "read", mode, *map(str, ledger_ids), env=env).splitlines():
        ledger, entry, payload = line.split("\t")
        read[int(ledger)].append((int(entry), bytes.fromhex(payload)))
    return read
