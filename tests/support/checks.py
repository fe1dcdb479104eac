"""Cluster checks' scenarios: ledgers written, data lost or corrupted on a bookie, bkctl's verdicts."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from bookie.client import BookKeeper


def write_ledgers(uri, count, quorum=(3, 3, 2), entries=20):
    with BookKeeper(uri) as bk:
        ids = []
        for _ in range(count):
            ledger = bk.create_ledger(*quorum)
            ledger.add_entries(b"entry-%d" % i for i in range(entries))
            ledger.close()
            ids.append(ledger.ledger_id)
        return ids


def wipe(bookie):
    """Lose a bookie's data but keep its cookies (as if its disks were restored empty, same identity)."""
    bookie.stop()
    for directory in (bookie.journal_dir, bookie.ledger_dir):
        for path in Path(directory, "current").iterdir():
            if path.name != "VERSION":
                shutil.rmtree(path) if path.is_dir() else path.unlink()


def check(bkctl, uri, *args):
    result = bkctl("-u", uri, "cluster", "check", "--recheck-delay", "1", *args, "-o", "json")
    return result.exit_code, json.loads(result.stdout) if result.stdout else None


def flip_byte(bookie, needle: bytes, offset: int = 2) -> bool:
    """Corrupt the first copy of ``needle`` in the bookie's entry log files; False while it is not on disk yet."""
    for log in Path(bookie.ledger_dir, "current").glob("*.log"):
        data = log.read_bytes()
        at = data.find(needle)
        if at >= 0:
            with open(log, "r+b") as f:
                f.seek(at + offset)
                f.write(b"X")
            return True
    return False


def ledgers_naming(bkctl, uri, bookie_id) -> list[int]:
    result = bkctl("-u", uri, "bookie", "recover", bookie_id, "--query", "-o", "json")
    if result.exit_code == 5:  # the cluster no longer knows it (no cookie, no ledger names it: decommissioned)
        return []
    assert result.exit_code == 0, result.stderr
    return [d["ledgerId"] for d in json.loads(result.stdout)]
