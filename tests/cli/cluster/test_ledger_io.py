"""ledger create / read / recover / delete / simpletest and bench write / read, against real bookies."""

import base64
import json
import subprocess
import sys

import pytest
import yaml


@pytest.fixture
def uri(harness):
    harness.start(3)
    return harness.service_uri


def create(bkctl, uri, *args, input=None):
    result = bkctl("-u", uri, "ledger", "create", *args, "-o", "json", input=input)
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def test_create_from_stdin_and_read_back_in_every_format(bkctl, uri):
    doc = create(bkctl, uri, "--input", "-", "--password", "pw", "--meta", "owner=sre", input="one\ntwo\nthree\n")
    assert doc == {"ledgerId": doc["ledgerId"], "entries": 3, "length": 11, "state": "CLOSED"}
    lid = str(doc["ledgerId"])
    read = lambda *a: bkctl("-u", uri, "ledger", "read", lid, "--password", "pw", *a)  # noqa: E731
    assert read().stdout == "one\ntwo\nthree\n"
    assert read("--format", "hex", "--from", "1", "--to", "1").stdout == "74776f\n"
    assert read("--format", "base64", "--to", "0").stdout == "b25l\n"
    entries = json.loads(read("-o", "json").stdout)  # one document: an array
    assert entries[2] == {
        "ledgerId": int(lid),
        "entryId": 2,
        "length": 5,
        "payload": base64.b64encode(b"three").decode(),
    }
    assert yaml.safe_load(read("-o", "yaml", "--from", "1").stdout) == entries[1:]
    assert read("-o", "json", "--from", "3").exit_code == 2 and read("-o", "json", "--from", "3").stdout == ""
    meta = json.loads(bkctl("-u", uri, "ledger", "metadata", lid, "-o", "json").stdout)
    assert meta["customMetadata"] == {"owner": "sre"} and meta["lastEntryId"] == 2 and meta["passwordSet"]


def test_binary_file_round_trip_as_one_entry(bkctl, uri, tmp_path):
    blob = bytes(range(256)) * 100
    (tmp_path / "blob").write_bytes(blob)
    doc = create(bkctl, uri, "--input", str(tmp_path / "blob"), "--delimiter", "none", "--digest", "mac")
    raw = subprocess.run(
        [sys.executable, "-m", "bkctl", "-u", uri, "ledger", "read", str(doc["ledgerId"]), "--format", "raw"],
        capture_output=True,
        timeout=60,
    )
    assert raw.returncode == 0 and raw.stdout == blob


def test_errors_and_exit_codes(bkctl, uri, tmp_path):
    lid = str(create(bkctl, uri, "--password", "pw", "--input", "-", input="x\n")["ledgerId"])
    wrong = bkctl("-u", uri, "ledger", "read", lid, "--password", "nope")
    assert (wrong.exit_code, wrong.stderr) == (4, f"error: wrong password for ledger {lid}\n")
    unknown = bkctl("-u", uri, "ledger", "read", "424242")
    assert (unknown.exit_code, unknown.stderr) == (5, "error: ledger 424242 does not exist\n")
    too_wide = bkctl("-u", uri, "ledger", "create", "-e", "4")
    assert too_wide.exit_code == 1
    assert too_wide.stderr == "error: not enough writable bookies: need 4, 3 available\n"
    (tmp_path / "big").write_bytes(b"x" * (6 << 20))
    listed_before = bkctl("-u", uri, "ledger", "list").stdout
    big = bkctl("-u", uri, "ledger", "create", "--input", str(tmp_path / "big"), "--delimiter", "none")
    assert big.exit_code == 2 and "over the" in big.stderr and "nothing written" in big.stderr
    assert bkctl("-u", uri, "ledger", "list").stdout == listed_before  # the ledger was deleted again
    bad_quorum = bkctl("-u", uri, "ledger", "create", "-e", "2", "-w", "3")
    assert bad_quorum.exit_code == 2 and "ensemble >= write quorum" in bad_quorum.stderr


def test_recover_dry_run_and_real(bkctl, uri):
    lid = str(create(bkctl, uri, "--no-close", "--input", "-", input="a\nb\n")["ledgerId"])
    dry = bkctl("-u", uri, "ledger", "recover", lid, "--dry-run")
    assert dry.stdout == f"ledger/{lid} is OPEN: would fence its bookies and close it (dry run)\n"
    assert json.loads(bkctl("-u", uri, "ledger", "metadata", lid, "-o", "json").stdout)["state"] == "OPEN"
    done = json.loads(bkctl("-u", uri, "ledger", "recover", lid, "-o", "json").stdout)
    assert done == {"ledgerId": int(lid), "state": "CLOSED", "lastEntryId": 1, "length": 2}


def test_delete_confirms(bkctl, uri):
    lid = str(create(bkctl, uri)["ledgerId"])
    assert bkctl("-u", uri, "ledger", "delete", lid, "--dry-run").stdout == f"ledger/{lid} would be deleted (dry run)\n"
    refused = bkctl("-u", uri, "ledger", "delete", lid)  # no terminal to confirm on
    assert refused.exit_code == 2 and "--yes" in refused.stderr
    assert bkctl("-u", uri, "ledger", "delete", lid, "--yes").stdout == f"ledger/{lid} deleted\n"
    gone = bkctl("-u", uri, "ledger", "metadata", lid)
    assert gone.exit_code == 5


def test_follow_tails_an_open_ledger_until_it_closes(bkctl, uri):
    from bookie.client import BookKeeper

    with BookKeeper(uri) as bk:
        writer = bk.create_ledger(3, 2, 2)
        writer.add_entry(b"first")
        follow = [sys.executable, "-m", "bkctl", "-u", uri, "ledger", "read", str(writer.ledger_id), "--follow"]
        tail = subprocess.Popen(follow, stdout=subprocess.PIPE, text=True)
        tail_json = subprocess.Popen([*follow, "-o", "json"], stdout=subprocess.PIPE, text=True)
        for i in range(5):
            writer.add_entry(b"more-%d" % i)
        writer.close()
        out, _ = tail.communicate(timeout=60)
        out_json, _ = tail_json.communicate(timeout=60)
    assert tail.returncode == 0 and tail_json.returncode == 0
    assert out.splitlines() == ["first"] + [f"more-{i}" for i in range(5)]
    # a tail may never end: one JSON object per line, as each entry comes (as kubectl get -w -o json)
    assert [base64.b64decode(json.loads(line)["payload"]) for line in out_json.splitlines()] == [
        b"first",
        *(b"more-%d" % i for i in range(5)),
    ]


def test_simpletest(bkctl, uri):
    result = bkctl("-u", uri, "ledger", "simpletest", "-n", "300", "-o", "json")
    assert result.exit_code == 0
    doc = json.loads(result.stdout)
    assert doc["ok"] is True and doc["entries"] == 300
    assert bkctl("-u", uri, "ledger", "list").stdout == ""  # deleted afterwards


def test_bench_write_and_read_report_their_numbers(bkctl, uri):
    for verb in ("write", "read"):
        result = bkctl("-u", uri, "bench", verb, "--entries", "3000", "-o", "json")
        assert result.exit_code == 0, result.stderr
        doc = json.loads(result.stdout)
        assert doc["entries"] == 3000 and doc["entriesPerSec"] > 0
        window = {"latencyWindow"} if verb == "read" else set()
        assert set(doc) == {"entries", "seconds", "entriesPerSec", "mbPerSec", "latencyMs", "cpuSeconds", *window}
        assert 0 < doc["cpuSeconds"] < 10 * doc["seconds"]  # this process's CPU over the timed phase
        assert 0 < doc["latencyMs"]["p50"] <= doc["latencyMs"]["max"]
    # a read of fewer entries than a window of 4096: the time per tenth of the ledger
    assert doc["latencyWindow"] == 300
    rated = json.loads(bkctl("-u", uri, "bench", "write", "--time", "1", "--rate", "500", "-o", "json").stdout)
    assert 300 <= rated["entries"] <= 600  # offered at 500/s for one second
    assert bkctl("-u", uri, "ledger", "list").stdout == ""  # bench ledgers are deleted
