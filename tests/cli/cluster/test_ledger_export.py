"""`bkctl ledger export` before Spark starts: selection, the plan (--dry-run), and refusals. Metadata only: the
ledgers are written straight into ZooKeeper. Exports themselves are tested in tests/spark/."""

import json
from pathlib import Path

import pytest

from bookie.codec.digest import DigestType
from bookie.meta.ledger_manager import LedgerManager
from bookie.meta.ledger_metadata import LedgerMetadata, LedgerState, Segment

ENSEMBLE = (Segment(0, ("127.0.0.1:3181", "127.0.0.1:3182", "127.0.0.1:3183")),)


@pytest.fixture
def ledgers(cluster):
    """Ledger 1: 1000 entries of 1 KiB; 2: empty; 5: 10 entries, tagged; 7: open; 100: 3 entries, tagged."""
    manager = LedgerManager(cluster)

    def closed(last, length, **meta):
        return LedgerMetadata(
            3,
            2,
            2,
            ENSEMBLE,
            LedgerState.CLOSED,
            last,
            length,
            DigestType.CRC32C,
            b"pw",
            custom_metadata={k: v.encode() for k, v in meta.items()},
        )

    manager.create(1, closed(999, 1024 * 1000))
    manager.create(2, closed(-1, 0))
    manager.create(5, closed(9, 100, app="orders"))
    manager.create(7, LedgerMetadata(3, 2, 2, ENSEMBLE, digest_type=DigestType.CRC32C, password=b""))
    manager.create(100, closed(2, 30, app="orders", team="x"))
    return manager


def plan(bkctl, uri, *args):
    result = bkctl("-u", uri, "ledger", "export", *args, "--to", "/nonexistent/out", "--dry-run", "-o", "json")
    return result, json.loads(result.stdout) if result.exit_code == 0 else None


def test_dry_run_shows_the_plan_from_metadata(bkctl, service_uri, ledgers):
    result, doc = plan(bkctl, service_uri, "--all", "--partition-bytes", "256k")
    assert result.exit_code == 0, result.stderr
    assert doc == {
        "ledgers": 4,
        "entries": 1013,
        "bytes": 1024 * 1000 + 130,
        "partitions": 4,
        "openLedgers": 0,
        "leftOpen": [7],
        "skipped": {},
    }
    assert result.stderr == "warning: 1 open ledger(s) left out (--include-open exports them up to their LAC)\n"
    table = bkctl("-u", service_uri, "ledger", "export", "1", "--to", "x", "--dry-run")
    assert table.stdout == "would export 1 ledgers, 1000 entries, 1024000 bytes in 1 partitions to x (dry run)\n"


@pytest.mark.parametrize(
    ("args", "exported"),
    [
        (["--meta", "app=orders"], 2),
        (["--meta", "app=orders", "--meta", "team=x"], 1),
        (["1-5"], 3),
        (["2-6", "100", "--meta", "app=orders"], 2),
    ],
)
def test_selection_by_ids_ranges_and_custom_metadata(bkctl, service_uri, ledgers, args, exported):
    result, doc = plan(bkctl, service_uri, *args)
    assert result.exit_code == 0, result.stderr
    assert doc["ledgers"] == exported


def test_a_missing_ledger_fails_unless_skipped(bkctl, service_uri, ledgers):
    result = bkctl("-u", service_uri, "ledger", "export", "1", "404", "--to", "/nonexistent/out")
    assert (result.exit_code, result.stdout, result.stderr) == (5, "", "error: ledger 404 does not exist\n")
    ledgers.store.zk.set(ledgers.path(5), b"BookieMetadataFormatVersion\t3\ngarbage")
    result = bkctl("-u", service_uri, "ledger", "export", "5", "--to", "/nonexistent/out")
    assert result.exit_code == 5 and result.stderr.startswith("error: ledger 5 cannot be read: ")
    result, doc = plan(bkctl, service_uri, "1", "5", "404", "--skip-missing")
    assert result.exit_code == 0 and doc["ledgers"] == 1 and sorted(doc["skipped"]) == ["404", "5"]
    assert result.stderr.splitlines()[-1] == "warning: ledger 404 does not exist: skipped"


def test_a_range_with_no_ledger_is_missing_too(bkctl, service_uri, ledgers, tmp_path):
    result = bkctl("-u", service_uri, "ledger", "export", "1", "40-90", "--to", str(tmp_path / "out"))
    assert (result.exit_code, result.stdout, result.stderr) == (5, "", "error: no ledger in range 40-90\n")
    result, doc = plan(bkctl, service_uri, "1", "40-90", "3-6", "--skip-missing")  # 3-6 holds ledger 5
    assert result.exit_code == 0 and doc["ledgers"] == 2 and doc["skipped"] == {"40-90": "no ledger in range 40-90"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "name the ledgers (IDs or FIRST-LAST ranges), or give --all or --meta KEY=VALUE"),
        (["1", "--all"], "name the ledgers (IDs or FIRST-LAST ranges), or give --all or --meta KEY=VALUE"),
        (["--all", "--conf", "executor.memory=1g"], "'executor.memory=1g' is not spark.KEY=VALUE"),
        (["--all", "--format", "csv"], "'csv' is not one of 'parquet', 'json'"),
    ],
)
def test_usage_errors_exit_2(bkctl, service_uri, args, message):
    result = bkctl("-u", service_uri, "ledger", "export", *args, "--to", "out")
    assert result.exit_code == 2 and message in result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--all", "--partition-bytes", "big"], "error: invalid size 'big': expected a positive number of bytes"),
        (["x1"], "error: invalid ledger id 'x1'"),
        (["--meta", "novalue"], "error: Invalid value for '--meta': 'novalue' is not KEY=VALUE"),
    ],
)
def test_bad_values_are_one_line_errors(bkctl, service_uri, args, message):
    result = bkctl("-u", service_uri, "ledger", "export", *args, "--to", "out")
    assert result.exit_code == 2 and result.stderr.startswith(message) and result.stderr.count("\n") == 1


def test_an_existing_output_is_kept_unless_overwrite(bkctl, service_uri, ledgers, tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "part-0").write_text("earlier")
    result = bkctl("-u", service_uri, "ledger", "export", "1", "--to", str(tmp_path / "out"))
    assert (result.exit_code, result.stderr) == (
        2,
        f"error: {tmp_path / 'out'} exists and is not empty: pass --overwrite to replace it\n",
    )
    (tmp_path / "file").write_text("x")
    assert bkctl("-u", service_uri, "ledger", "export", "1", "--to", str(tmp_path / "file")).exit_code == 2
    assert (tmp_path / "out" / "part-0").read_text() == "earlier"


def test_spark_that_does_not_start_is_one_line_naming_its_log(service_uri, ledgers, tmp_path):
    import os
    import re
    import subprocess
    import sys

    command = [
        sys.executable,
        "-m",
        "bkctl",
        "-u",
        service_uri,
        "ledger",
        "export",
        "1",
        "--to",
        str(tmp_path / "o"),
        "--master",
        "bogus://x",
    ]
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=120, check=False, env={**os.environ, "TMPDIR": str(tmp_path)}
    )
    assert (done.returncode, done.stdout) == (1, "")
    match = re.fullmatch(
        r"error: Spark did not start: Master must either be yarn or start with spark, k8s, or local "
        r"\(Spark's log: (.+)\)\n",
        done.stderr,
    )
    log = Path(match.group(1)) if match else None
    assert log and log.parent.parent == tmp_path and "Exception in thread" in log.read_text()
    assert not (log.parent / "plan.pickle").exists()  # the ledgers' passwords do not stay behind
