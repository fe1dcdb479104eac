"""The scripted workloads of the crash-point sweep: each short (a few dozen syncs), so that every sync is checked.
The suspects named are those of the crash-consistency audit of issue 28 (S1..S12)."""

from __future__ import annotations

from pathlib import Path

from faults.crashpoints.sweep import Session, Workload

KB = 1024
# A checkpoint every second where a workload waits for one (a forced one does not exist: flushInterval it is).
CHECKPOINTS = {"flushInterval": "1000"}
# Entry logs of 256 KiB: a few hundred 4 KiB entries roll and seal several.
SMALL_LOGS = {"logSizeLimit": str(256 * KB), **CHECKPOINTS}


def first_start(s: Session) -> None:
    """The first start on empty directories (their creation, the cookie in ZooKeeper then in each directory, the
    first journal), then adds, a checkpoint, more adds (S1, S7)."""
    ledger = s.ledger()
    s.add([ledger], 10, rounds=2)
    s.wait_for_sync("lastMark")
    s.add([ledger], 10)


def group_commit(s: Session) -> None:
    """Four writers at once, in rounds: each round's adds reach the journal together and are committed in groups,
    one fdatasync each; no checkpoint (everything is in the journal only)."""
    ledgers = [s.ledger() for _ in range(4)]
    s.add(ledgers, 10, rounds=4)


def checkpoint(s: Session) -> None:
    """New ledgers, then a checkpoint (entry log, index files, lastMark), then adds after it: a new ledger's index
    file must be durable, name included, before lastMark moves past its journal records (S2)."""
    ledgers = [s.ledger() for _ in range(3)]
    s.add(ledgers, 20, rounds=2)
    s.wait_for_sync("lastMark")
    s.add(ledgers, 10)


def fence(s: Session) -> None:
    """A ledger fenced and closed by a recovery open (a fence record, recovery's re-adds, each synced), then a
    checkpoint that writes the ledger's index header: its entries survive, and so does its fence (an add of its
    writer is refused with EFENCED at every crash point after the recovery open returned) (S2)."""
    ledgers = [s.ledger() for _ in range(2)]
    s.add(ledgers, 5)
    s.fence(ledgers[0])
    s.wait_for_sync("lastMark")
    s.add([ledgers[1]], 5)


def rotation(s: Session) -> None:
    """4 KiB entries across several entry logs of 256 KiB (each rolled: created, lastId; each sealed: ledgers map,
    header patch), a checkpoint, then a GC that scans the sealed logs (S4, S8)."""
    ledgers = [s.ledger(4 * KB) for _ in range(2)]
    s.add(ledgers, 50, rounds=3)
    s.wait_for_sync("lastMark")
    s.gc(minor=True)


def delete_gc(s: Session) -> None:
    """Ledger A fills the first entry logs alone, B the next ones; A is deleted and a forced GC removes A's logs
    (compaction off: deletion only). B reads back; A may come back, deleted again by the next GC (16, 19)."""
    a, b = s.ledger(4 * KB), s.ledger(4 * KB)
    s.add([a], 50, rounds=2)
    s.add([b], 50, rounds=2)
    s.wait_for_sync("lastMark")
    s.delete(a)
    run = s.gc()
    assert run.logs_deleted, f"the GC deleted no entry log: {run}"


def compaction(s: Session) -> None:
    """Ledgers A and B interleaved in one entry log, then B alone in the next (DbLedgerStorage writes each cache
    flush into one log and rolls between flushes: two checkpoints make two logs); A deleted; a forced major
    compaction copies B's entries out of the first log into a new one, flushes, then deletes the old log (S4)."""
    a, b = s.ledger(4 * KB), s.ledger(4 * KB)
    s.add([a, b], 4, rounds=10)  # 4 of A then 4 of B, ten times: every entry log of the interleaved engine has both
    s.wait_for_sync("lastMark")
    s.add([b], 20)
    s.wait_for_sync("lastMark")
    s.delete(a)
    run = s.gc(major=True)
    assert run.logs_compacted, f"the major compaction compacted no entry log: {run}"
    s.add([b], 10)


def write_cache(s: Session) -> None:
    """DbLedgerStorage's write cache (1 MB) fills: a flush of the cache into the entry log and RocksDB, without
    waiting for flushInterval, while adds go on."""
    ledgers = [s.ledger(8 * KB) for _ in range(2)]
    s.add(ledgers, 25, rounds=4)


def several_dirs(s: Session) -> None:
    """Two ledger directories and two index directories apart from them: adds spread over both, a checkpoint
    writes lastMark into each (S3, S5)."""
    ledgers = [s.ledger() for _ in range(4)]
    s.add(ledgers, 10, rounds=2)
    s.wait_for_sync("lastMark")
    s.add(ledgers, 5)


def small_records(s: Session) -> None:
    """468-byte payloads: 508-byte entries, 512-byte journal records, so a group of them ends on a sector boundary
    and a lost first sector looks like a whole flush (S10, S11)."""
    ledgers = [s.ledger(468) for _ in range(4)]
    s.add(ledgers, 4, rounds=4)


def journal_rollover(s: Session) -> None:
    """A 1 MB journal in the ledger directory: adds roll it to new journal files, checkpoints delete old ones (S9)."""
    ledgers = [s.ledger(16 * KB) for _ in range(2)]
    s.add(ledgers, 20, rounds=2)
    s.wait_for_sync("lastMark")
    s.add(ledgers, 20)


def format_bookie(s: Session) -> None:
    """Adds and a checkpoint; a clean stop; ``bkctl bookie format --delete-cookie``; a start as a new bookie (new
    cookie, new directories) and adds again, with a checkpoint: what the format erased must not come back over what
    the new bookie acknowledged (S12)."""
    old = s.ledger()
    s.add([old], 10, rounds=2)
    s.wait_for_sync("lastMark")
    s.stop()
    s.format([old])
    s.start()
    s.cookie_written()
    new = s.ledger()
    s.add([new], 10, rounds=2)
    s.wait_for_sync("lastMark")
    s.add([new], 10)


def _several_dirs(storage: str, disk: Path) -> dict[str, str]:
    return {
        "ledgerDirectories": f"{disk / 'ledgers-0'},{disk / 'ledgers-1'}",
        "indexDirectories": f"{disk / 'index-0'},{disk / 'index-1'}",
        **CHECKPOINTS,
    }


def _journal_in_ledgers(storage: str, disk: Path) -> dict[str, str]:
    return {"journalDirectories": str(disk / "ledgers"), "journalMaxSizeMB": "1", **CHECKPOINTS}


WORKLOADS = [
    Workload(
        "first-start",
        first_start,
        "first start on empty dirs, adds, checkpoint",
        fresh=True,
        settings=lambda storage, disk: CHECKPOINTS,
    ),
    Workload("group-commit", group_commit, "restart, 4 concurrent writers, group commit", count_start=True),
    Workload("checkpoint", checkpoint, "new ledgers, checkpoint, adds", settings=lambda storage, disk: CHECKPOINTS),
    Workload("fence", fence, "recovery open (fence, close), checkpoint", settings=lambda storage, disk: CHECKPOINTS),
    Workload(
        "rotation",
        rotation,
        "entry log rolls and seals, checkpoint, GC scan",
        settings=lambda storage, disk: SMALL_LOGS,
    ),
    Workload(
        "delete-gc",
        delete_gc,
        "ledger deleted, GC removes its entry logs",
        settings=lambda storage, disk: {**SMALL_LOGS, "minorCompactionThreshold": "0", "majorCompactionThreshold": "0"},
    ),
    Workload(
        "compaction",
        compaction,
        "ledger deleted, major compaction of mixed logs",
        settings=lambda storage, disk: {**SMALL_LOGS, "majorCompactionThreshold": "0.99"},
    ),
    Workload(
        "write-cache",
        write_cache,
        "DbLedgerStorage write cache fills and flushes",
        storages=("db",),
        settings=lambda storage, disk: {"dbStorage_writeCacheMaxSizeMb": "1"},
    ),
    Workload("several-dirs", several_dirs, "2 ledger dirs, 2 index dirs, checkpoint", settings=_several_dirs),
    Workload("small-records", small_records, "512-byte journal records in groups"),
    Workload(
        "journal-roll",
        journal_rollover,
        "1 MB journals in the ledger dir roll, checkpoint",
        settings=_journal_in_ledgers,
    ),
    Workload(
        "format",
        format_bookie,
        "adds, format --delete-cookie, start anew, adds",
        settings=lambda storage, disk: CHECKPOINTS,
    ),
]
