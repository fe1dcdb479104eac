"""Starts that must fail — a second bookie on live disks, a taken port, a clashing bookie id, a corrupt journal —
and fail cleanly: one line naming the cause, exit 1, and nothing of the live bookie or of the disks touched."""

import hashlib
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from bookie._proto import bookkeeper_protocol_pb2 as pb
from bookie.codec.entry import parse_entry
from bookie.errors import NotFound
from bookie.local.bookies import LocalBookie, wait_registered
from bookie.local.process import free_port, spawn
from bookie.meta.cookies import CookieStore
from bookie.storage import journal as jf
from bookie.storage.checkpoint import read_last_mark

from support.cluster import StreamWriter, metrics
from support.storage import DIGESTER, payload
from support.wire import read_stored


def run_bookie(conf, *flags):
    """A ``bkctl bookie run`` that is expected to exit by itself."""
    return subprocess.run(
        [sys.executable, "-m", "bkctl", "bookie", "run", "--conf", str(conf), *flags],
        capture_output=True,
        text=True,
        timeout=60,
    )


def error_lines(result):
    return [line for line in result.stderr.splitlines() if line.startswith("error:")]


def disk_state(bookie):
    """What a second process must not change: the journals, lastMark, the cookies, byte for byte. (Not the entry
    logs: the live bookie writes their buffered tail back within a second of the last add.)"""
    files = [*Path(bookie.journal_dir, "current").iterdir(), *Path(bookie.ledger_dir, "current").iterdir()]
    return {
        str(p): hashlib.sha1(p.read_bytes()).hexdigest()
        for p in files
        if p.is_file() and p.suffix != ".log" and p.name != "bookie.lock"
    }


def registration(store, bookie):
    stat = store.zk.exists(f"{store.root}/available/{bookie.bookie_id}")
    return stat and (stat.czxid, stat.ephemeralOwner)


def write(harness, bookie, ledger_id, count):
    writer = StreamWriter(bookie.port, ledger_id=ledger_id, batch=50, limit=count)
    writer.start()
    writer.join(30)
    assert writer.error is None and writer.acked == list(range(count))
    return writer.acked


def test_second_bookie_on_live_directories_is_refused_and_touches_nothing(harness, cluster):
    (bookie,) = harness.start(1, flushInterval=600000)  # no checkpoint of its own during the test
    acked = write(harness, bookie, 1, 500)
    before = disk_state(bookie), read_last_mark(bookie.ledger_dir), registration(cluster, bookie)

    result = run_bookie(bookie.conf_path)
    assert result.returncode == 1
    lock = Path(bookie.journal_dir, "current", "bookie.lock")
    assert result.stderr.splitlines() == [
        f"error: bookie {bookie.bookie_id} cannot start: {bookie.journal_dir} is locked by pid {bookie.pid} "
        f"(another bookie runs on it; {lock})"
    ]
    assert (disk_state(bookie), read_last_mark(bookie.ledger_dir), registration(cluster, bookie)) == before

    bookie.stop(kill=True)
    harness.restart(bookie)
    entries = read_stored(harness.wire(bookie), 1, 0, acked[-1])
    assert [e for e in acked if entries.get(e) != payload(1, e)] == []


def test_failed_start_leaves_the_live_bookies_registration(harness, cluster, tmp_path):
    (live,) = harness.start(1)
    before = registration(cluster, live)
    # another process with the same bookie id (its own disks and ports): refused by the cookie check
    twin = LocalBookie.create(2, tmp_path / "twin", harness.service_uri, {"bookieId": live.bookie_id})
    result = run_bookie(twin.conf_path)
    assert result.returncode == 1 and "cookie in ZooKeeper does not match: journal directories" in result.stderr
    assert registration(cluster, live) == before


@pytest.mark.parametrize("key, what", [("bookiePort", "bookie"), ("prometheusStatsHttpPort", "metrics")])
def test_port_in_use_is_named_and_the_failed_first_start_leaves_no_cookie(harness, cluster, tmp_path, key, what):
    bookie = LocalBookie.create(1, tmp_path / "bookie-1", harness.service_uri)
    harness.bookies.append(bookie)  # stopped by the fixture
    port = bookie.port if key == "bookiePort" else bookie.metrics_port
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", port))
        squatter.listen()
        result = run_bookie(bookie.conf_path)
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"error: bookie {bookie.bookie_id} cannot start: {what} address 127.0.0.1:{port} is already in use: "
        f"another process listens there; set {key} to a free port"
    ]
    with pytest.raises(NotFound):
        CookieStore(cluster).read(bookie.bookie_id)
    assert not Path(bookie.journal_dir, "current", "VERSION").exists()

    # the operator moves the port (a new bookie id, for the bookie port) and starts again on the same disks
    if key == "bookiePort":
        bookie.port = free_port()
    else:
        bookie.metrics_port = free_port()
    bookie.write_conf(harness.service_uri)
    bookie.start()
    wait_registered(cluster, [bookie])


def test_start_failing_after_the_cookie_check_writes_no_cookie(harness, cluster, tmp_path):
    bookie = LocalBookie.create(1, tmp_path / "bookie-1", harness.service_uri)
    harness.bookies.append(bookie)
    journal = jf.JournalFile(Path(bookie.journal_dir), 1, prealloc_bytes=1 << 20)  # a disk with a bad journal
    journal.append(jf.INT.pack(-7))
    journal.close()
    result = run_bookie(bookie.conf_path)
    assert result.returncode == 1 and "corrupt journal record at offset 512 (length -7)" in result.stderr
    with pytest.raises(NotFound):
        CookieStore(cluster).read(bookie.bookie_id)
    assert not any(Path(d, "current", "VERSION").exists() for d in (bookie.journal_dir, bookie.ledger_dir))
    jf.journal_path(Path(bookie.journal_dir), 1).unlink()
    harness.restart(bookie)


def test_journal_corrupt_in_the_middle_refuses_the_start_until_overridden(harness):
    (bookie,) = harness.start(1, flushInterval=600000)  # lastMark stays at the start: the crash replays it all
    acked = write(harness, bookie, 1, 300)
    bookie.stop(kill=True)
    mark = read_last_mark(bookie.ledger_dir)
    path = jf.journal_path(Path(bookie.journal_dir), mark.journal_id)
    with open(path, "r+b") as f:  # a zeroed sector where the first write after lastMark begins
        f.seek(mark.offset)
        f.write(bytes(512))
    with open(path, "rb") as f:  # where the next write began
        resume = next(
            at for at in range(mark.offset + 512, 1 << 20, 512) if jf._whole_flush_at(f, at, path.stat().st_size, set())
        )

    result = run_bookie(bookie.conf_path)
    assert result.returncode == 1
    assert error_lines(result) == [
        f"error: {path}: corrupt journal record at offset {mark.offset} (length 0), and valid records follow at "
        f"offset {resume}: replay would drop them; to start anyway, skipping the damaged bytes, use "
        "--skip-journal-corruption (skipReplayJournalInvalidRecord=true)"
    ]
    assert read_last_mark(bookie.ledger_dir) == mark  # the refused start moved nothing

    bookie.pid = spawn(
        [sys.executable, "-m", "bkctl", "bookie", "run", "--conf", str(bookie.conf_path), "--skip-journal-corruption"],
        bookie.log_path,
    )
    wait_registered(harness.store, [bookie])
    values = metrics(bookie)  # ours: BookKeeper has no such metrics
    assert values.sum("bkctl_journal_corrupt_records_skipped") == 1
    assert values.sum("bkctl_journal_corrupt_bytes_skipped") == resume - mark.offset
    assert f"skipped corrupt journal record at offset {mark.offset} (length 0)" in bookie.log_path.read_text()
    conn = harness.wire(bookie)
    answers = [conn.ask(pb.ReadRequest(ledgerId=1, entryId=e)) for e in acked]
    present = [e for e, a in zip(acked, answers, strict=True) if a.status == pb.EOK]
    assert present == list(range(present[0], acked[-1] + 1))  # lost: only what the damaged write held
    assert 0 < present[0] < acked[-1]
    assert all(parse_entry(DIGESTER, answers[e].body, 1, e).payload == payload(1, e) for e in present)


JAAS_CLIENT = 'Client { org.apache.zookeeper.server.auth.DigestLoginModule required username="b" password="pw"; };\n'


@pytest.mark.parametrize(
    ("key", "text", "what"),
    [
        ("zkDigestAuthFile", "bookie:pw\n", "ZooKeeper digest credentials file"),
        ("java.security.auth.login.config", JAAS_CLIENT, "JAAS configuration file"),
    ],
)
def test_a_credentials_file_others_may_read_refuses_the_start_before_anything_is_claimed(tmp_path, key, text, what):
    """exit 2, one line naming the file and the fix; none of the bookie's directories created."""
    secret = tmp_path / "credentials"
    secret.write_text(text)
    secret.chmod(0o644)
    settings = {"zkEnableSecurity": "true", key: str(secret)}
    bookie = LocalBookie.create(1, tmp_path / "bookie", "zk+hierarchical://127.0.0.1:1/ledgers", settings)
    result = run_bookie(bookie.conf_path)
    assert result.returncode == 2, result.stderr
    assert error_lines(result) == [
        f"error: {what} {secret} is accessible by group or others (mode 0644): chmod 600 {secret}"
    ]
    assert not Path(bookie.journal_dir).exists() and not Path(bookie.ledger_dir).exists()
