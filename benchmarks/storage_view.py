"""How long the offline storage view of a bookie with many entry logs takes (bookie/storage/usage.py's view_of_dirs,
what `bkctl bookie usage` reads from a bookie's directories).

    python benchmarks/storage_view.py [--logs 1000] [--log-mb 1024] [--ledgers 2000] [--per-log 50] [--rounds 3]

Fabricates an interleaved bookie in a temporary directory: --logs sealed entry logs of --log-mb each, as sparse files
(a header, a hole where the entries would be, then a ledgers map of --per-log ledgers, as BookKeeper and our bookie
write them), so only what the view reads is on disk; a current log of 1,000 real 1 KiB entries, without a map (it
is scanned); an index file of 1,024 entries for each of --ledgers ledgers; one journal file. Then times the view,
--rounds times (the page cache warm after the first: the files are fabricated just before).
"""

from __future__ import annotations

import argparse
import random
import struct
import tempfile
import time
from pathlib import Path

from bookie.server.config import BookieConfig
from bookie.storage.entry_log import HEADER, HEADER_SIZE, MAGIC, MAP_BATCH_HEADER, MAP_ENTRY, VERSION, log_path
from bookie.storage.index import MAGIC as INDEX_MAGIC
from bookie.storage.index import PAGE_SIZE, index_path
from bookie.storage.usage import view_of_dirs

RECORD = struct.Struct(">iqq")  # int32 size | ledgerId | entryId, then the rest of the entry


def sealed_log(path: Path, size: int, ledgers: list[int]) -> None:
    """A sparse sealed log: header, a hole of ``size`` bytes, the ledgers map (one batch per 10,000 ledgers)."""
    share = size // len(ledgers)
    body = b"".join(MAP_ENTRY.pack(ledger_id, share) for ledger_id in ledgers)
    batch = MAP_BATCH_HEADER.pack(MAP_BATCH_HEADER.size - 4 + len(body), -1, -2, len(ledgers)) + body
    map_offset = HEADER_SIZE + size
    with open(path, "wb") as f:
        f.write(HEADER.pack(MAGIC, VERSION, map_offset, len(ledgers)).ljust(HEADER_SIZE, b"\0"))
        f.seek(map_offset)
        f.write(batch)


def current_log(path: Path, ledgers: list[int], entries: int = 1000, size: int = 1024) -> None:
    with open(path, "wb") as f:
        f.write(HEADER.pack(MAGIC, VERSION, 0, 0).ljust(HEADER_SIZE, b"\0"))
        for entry_id in range(entries):
            f.write(RECORD.pack(size, random.choice(ledgers), entry_id) + bytes(size - 16))


def index_file(path: Path, entries: int = 1024) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    header = INDEX_MAGIC + struct.pack(">iii", 1, 0, 0) + struct.pack(">i", 0)
    page = b"".join(struct.pack(">q", (1 << 32) | (HEADER_SIZE + i * 1024)) for i in range(PAGE_SIZE // 8))
    path.write_bytes(header.ljust(HEADER_SIZE, b"\0") + page * (entries * 8 // PAGE_SIZE))


def fabricate(root: Path, logs: int, log_mb: int, ledgers: int, per_log: int) -> BookieConfig:
    journal, data = root / "journal", root / "ledgers"
    (journal / "current").mkdir(parents=True)
    (data / "current").mkdir(parents=True)
    (journal / "current" / "0.txn").write_bytes(bytes(1 << 20))
    ids = list(range(ledgers))
    for log_id in range(logs):
        sealed_log(log_path(data, log_id), log_mb << 20, sorted(random.sample(ids, per_log)))
    current_log(log_path(data, logs), ids)
    (data / "current" / "lastId").write_text(f"{logs:x}\n")
    for ledger_id in ids:
        index_file(index_path(data, ledger_id))
    return BookieConfig.load(None, {"journalDirectories": str(journal), "ledgerDirectories": str(data)})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--logs", type=int, default=1000)
    parser.add_argument("--log-mb", type=int, default=1024, help="apparent size of each sealed log")
    parser.add_argument("--ledgers", type=int, default=2000)
    parser.add_argument("--per-log", type=int, default=50, help="ledgers in each log's ledgers map")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    random.seed(30)
    with tempfile.TemporaryDirectory(prefix="bkctl-storage-view-") as temp:
        config = fabricate(Path(temp), args.logs, args.log_mb, args.ledgers, args.per_log)
        on_disk = sum(p.stat().st_blocks * 512 for p in Path(temp).rglob("*") if p.is_file())
        print(
            f"{args.logs} sealed entry logs of {args.log_mb} MiB ({args.logs * args.log_mb / 1024:.0f} GiB apparent, "
            f"{on_disk / 2**20:.0f} MiB on disk), {args.ledgers} ledgers, {args.per_log} per log"
        )
        for round_no in range(1, args.rounds + 1):
            began = time.perf_counter()
            view = view_of_dirs(config)
            seconds = time.perf_counter() - began
            assert len(view.logs) == args.logs + 1 and len(view.local_ledgers) == args.ledgers
            print(f"round {round_no}: view of {len(view.logs)} logs in {seconds:.2f} s")


if __name__ == "__main__":
    main()
