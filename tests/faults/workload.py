"""The workload: writer processes (killable with -9) and a tailing reader, and the history they leave.

Payloads are derived from (seed, ledger, entry), so the checker recomputes them instead of storing them.
A writer prints one line per event on stdout, flushed before it goes on:
    L <ledger> <E> <W> <A>        created ledger
    A <ledger> <first> <last>     entries first..last acknowledged (in order, as the client completes them)
    C <ledger> <last> <length>    closed by the writer
    F <ledger> <error>            a write failed; the writer left this ledger (closed it if it could)
    V <message>                   the client broke a promise (an entry id out of order)
"""

from __future__ import annotations

import hashlib
import os
import random
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

PASSWORD = b"nemesis"


def payload(seed: int, ledger_id: int, entry_id: int) -> bytes:
    digest = hashlib.blake2b(f"{seed}/{ledger_id}/{entry_id}".encode(), digest_size=16).digest()
    size = 16 + digest[0] * 2  # 16..526 bytes
    return (digest * (size // 16 + 1))[:size]


@dataclass
class LedgerRecord:
    ledger_id: int
    seed: int
    writer: str
    quorum: tuple[int, int, int]
    acked: int = -1  # entries 0..acked were acknowledged to the writer
    closed_by_writer: tuple[int, int] | None = None
    failed: str | None = None
    observed: int = -1  # the highest entry any reader saw before the end


@dataclass
class History:
    """Everything the workload saw, shared by the writers' readers, the tailer and the checker."""

    ledgers: dict[int, LedgerRecord] = field(default_factory=dict)
    violations: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def open_ledgers(self) -> list[LedgerRecord]:
        with self.lock:
            return [r for r in self.ledgers.values() if r.closed_by_writer is None and r.failed is None]

    def apply(self, writer: str, seed: int, line: str) -> None:
        kind, _, rest = line.strip().partition(" ")
        with self.lock:
            if kind == "L":
                lid, e, w, a = (int(x) for x in rest.split())
                self.ledgers[lid] = LedgerRecord(lid, seed, writer, (e, w, a))
            elif kind == "A":
                lid, first, last = (int(x) for x in rest.split())
                record = self.ledgers[lid]
                if first != record.acked + 1:
                    self.violations.append(f"{writer}: ledger {lid} acks {first}..{last} after {record.acked}")
                record.acked = max(record.acked, last)
            elif kind == "C":
                lid, last, length = (int(x) for x in rest.split())
                self.ledgers[lid].closed_by_writer = (last, length)
            elif kind == "F":
                lid, _, error = rest.partition(" ")
                self.ledgers[int(lid)].failed = error
            elif kind == "V":
                self.violations.append(f"{writer}: {rest}")

    def observe(self, ledger_id: int, entry_id: int) -> None:
        with self.lock:
            record = self.ledgers[ledger_id]
            record.observed = max(record.observed, entry_id)


# ---- the writer process ----
def writer_main(uri: str, seed: int, name: str, e: int, w: int, a: int, rate: float) -> None:
    """Write ledgers of a few hundred to a few thousand entries, one after another, forever (until killed)."""
    from bookie.client import BookKeeper, ClientConfig
    from bookie.errors import BKError

    rng = random.Random(f"{seed}/{name}")
    out = sys.stdout

    def say(line: str) -> None:
        out.write(line + "\n")
        out.flush()

    bk = BookKeeper(uri, ClientConfig(add_entry_timeout=2.0, read_entry_timeout=2.0))
    batch = 20
    while True:
        try:
            ledger = bk.create_ledger(e, w, a, password=PASSWORD)
        except BKError:  # ZooKeeper down, too few bookies: try again
            time.sleep(0.5)
            continue
        lid = ledger.ledger_id
        say(f"L {lid} {e} {w} {a}")
        target = rng.randint(300, 2500)
        next_id = 0
        try:
            while next_id < target:
                started = time.monotonic()
                futures = [ledger.add_entry_async(payload(seed, lid, next_id + k)) for k in range(batch)]
                acked, failure = [], None
                for k, future in enumerate(futures):
                    try:
                        entry_id = future.result(timeout=120)
                    except Exception as exc:  # noqa: BLE001 - any failure ends this ledger
                        failure = exc
                        break
                    if entry_id != next_id + k:
                        say(f"V ledger {lid}: add {next_id + k} completed as entry {entry_id}")
                        failure = RuntimeError("entry id out of order")
                        break
                    acked.append(entry_id)
                if acked:
                    say(f"A {lid} {acked[0]} {acked[-1]}")
                if failure is not None:
                    raise failure
                next_id += batch
                time.sleep(max(0.0, batch / rate - (time.monotonic() - started)))
            md = ledger.close()
            say(f"C {lid} {md.last_entry_id} {md.length}")
        except Exception as exc:  # noqa: BLE001
            reason = f"{type(exc).__name__}: {exc}".replace("\n", " ")
            try:  # what a careful application does: close at the last acknowledged entry if it still can
                md = ledger.close()
                say(f"F {lid} {reason} (closed at {md.last_entry_id})")
            except Exception:  # noqa: BLE001 - left for recovery
                say(f"F {lid} {reason} (left open)")
            if next_id == 0:  # its first writes failed (every bookie without power, say): not so fast again
                time.sleep(0.5)


def child_env() -> dict[str, str]:
    """The environment of a child Python: this checkout (and tests/, for ``faults``) first on its path."""
    here = Path(__file__).resolve()
    paths = [str(here.parents[2]), str(here.parents[1]), os.environ.get("PYTHONPATH", "")]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p)}


class WriterProcess:
    """One writer subprocess and the thread that reads its events into the history."""

    def __init__(
        self, name: str, uri: str, seed: int, quorum: tuple[int, int, int], history: History, rate: float = 200.0
    ):
        self.name, self.uri, self.seed, self.quorum, self.history, self.rate = name, uri, seed, quorum, history, rate
        self.proc: subprocess.Popen | None = None
        self.reader: threading.Thread | None = None
        self.starts = 0

    def start(self) -> None:
        e, w, a = self.quorum
        code = (
            "import sys; from faults.workload import writer_main; writer_main(*sys.argv[1:2], "
            "*map(int, sys.argv[2:3]), sys.argv[3], *map(int, sys.argv[4:7]), float(sys.argv[7]))"
        )
        self.starts += 1
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-c",
                code,
                self.uri,
                str(self.seed),
                f"{self.name}.{self.starts}",
                str(e),
                str(w),
                str(a),
                str(self.rate),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            start_new_session=True,
            env=child_env(),
        )
        proc = self.proc
        self.reader = threading.Thread(target=self._read, args=(proc,), daemon=True)
        self.reader.start()

    def _read(self, proc: subprocess.Popen) -> None:
        for line in proc.stdout:
            if line.strip():
                self.history.apply(self.name, self.seed, line)

    def kill(self) -> None:
        """kill -9: the client is abandoned with whatever it had in flight; its open ledger needs recovery."""
        if self.proc is None:
            return
        self.proc.kill()
        self.proc.wait()
        self.reader.join(10)  # every line written before the kill is in the pipe: read it all
        self.proc = None


class Tailer(threading.Thread):
    """A reader following the open ledgers up to their LAC (no recovery), checking every entry it reads and
    remembering the highest one: no later recovery may close a ledger below what a reader already saw."""

    def __init__(self, uri: str, history: History, seed: int):
        super().__init__(daemon=True, name="tailer")
        self.uri, self.history = uri, history
        self.rng = random.Random(f"{seed}/tailer")
        self.halt = threading.Event()
        self.reads = self.errors = 0

    def run(self) -> None:
        from bookie.client import BookKeeper, ClientConfig

        with BookKeeper(self.uri, ClientConfig(read_entry_timeout=2.0)) as bk:
            while not self.halt.wait(0.3):
                candidates = self.history.open_ledgers()
                if not candidates:
                    continue
                record = self.rng.choice(candidates)
                try:
                    handle = bk.open_ledger(record.ledger_id, PASSWORD, recovery=False)
                    lac = handle.last_add_confirmed
                    first = record.observed + 1
                    if lac < first:
                        continue
                    for entry in handle.read(first, min(lac, first + 199)):
                        if entry.payload != payload(record.seed, record.ledger_id, entry.entry_id):
                            with self.history.lock:
                                self.history.violations.append(
                                    f"tailer: ledger {record.ledger_id} entry {entry.entry_id} has wrong bytes"
                                )
                        self.history.observe(record.ledger_id, entry.entry_id)
                        self.reads += 1
                except Exception:  # noqa: BLE001 - faults make reads fail; only what was read counts
                    self.errors += 1

    def stop(self) -> None:
        self.halt.set()
        self.join(30)
