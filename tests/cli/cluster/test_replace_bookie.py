"""bookie replace-in-ledgers and ledger update (updateBookieInLedger, bookieid search-replace, updateledgers): the
bookie id rewritten in ledger metadata, compare-and-set per ledger, --dry-run and --limit; then a bookie moved to a
new address serves its ledgers under its new id."""

import json
from pathlib import Path

from bookie.codec.digest import DigestType
from bookie.local.process import free_port
from bookie.meta.cookies import Cookie, write_local_cookie
from bookie.meta.ledger_manager import LedgerManager
from bookie.meta.ledger_metadata import LedgerMetadata, LedgerState, Segment
from bookie.meta.registration import BookieRegistry, BookieServiceInfo

from support.checks import write_ledgers
from support.progress import RecordingProgress, show_bars

OLD, OTHER = "127.0.0.1:3181", "127.0.0.1:3182"


def ledger(*segments: tuple[str, ...]) -> LedgerMetadata:
    segs = tuple(Segment(i * 10, bookies) for i, bookies in enumerate(segments))
    return LedgerMetadata(2, 2, 2, segs, LedgerState.CLOSED, 9 + 10 * len(segs), 100, DigestType.CRC32C, b"pw")


def ensembles(cluster, ledger_id) -> list[tuple[str, ...]]:
    return [s.bookies for s in LedgerManager(cluster).read(ledger_id)[0].segments]


def test_replace_rewrites_every_segment_of_the_ledgers_naming_the_bookie(bkctl, cluster, service_uri):
    manager = LedgerManager(cluster)
    manager.create(1, ledger((OLD, OTHER), (OTHER, "127.0.0.1:3183")))
    manager.create(2, ledger((OTHER, "127.0.0.1:3183")))
    manager.create(3, ledger((OTHER, OLD), (OLD, "127.0.0.1:3183")))
    new = "bookie1.example.com:3181"
    dry = bkctl("-u", service_uri, "bookie", "replace-in-ledgers", OLD, new, "--dry-run", "-o", "json")
    assert dry.exit_code == 0, dry.stderr
    assert [(d["ledgerId"], d["segments"]) for d in json.loads(dry.stdout)] == [(1, 1), (3, 2)]
    assert ensembles(cluster, 1)[0] == (OLD, OTHER)  # unchanged by the dry run

    one = bkctl("-u", service_uri, "bookie", "replace-in-ledgers", OLD, new, "--limit", "1", "--yes")
    assert one.exit_code == 0, one.stderr
    assert one.stdout.splitlines() == ["LEDGER     SEGMENTS   VERSION", "ledger/1   1          1"]
    assert ensembles(cluster, 1) == [(new, OTHER), (OTHER, "127.0.0.1:3183")]
    assert ensembles(cluster, 3)[0] == (OTHER, OLD)
    rest = bkctl("-u", service_uri, "bookie", "replace-in-ledgers", OLD, new, "--yes", "-o", "json")
    assert [d["ledgerId"] for d in json.loads(rest.stdout)] == [3]
    assert ensembles(cluster, 3) == [(OTHER, new), (new, "127.0.0.1:3183")]
    assert ensembles(cluster, 2) == [(OTHER, "127.0.0.1:3183")] and LedgerManager(cluster).read(2)[1] == 0
    none = bkctl("-u", service_uri, "bookie", "replace-in-ledgers", OLD, new, "--yes")
    assert (none.exit_code, none.stdout, none.stderr) == (0, "", f"no ledger names {OLD}\n")


def test_replace_counts_every_ledger_it_reads_against_the_total_listed_first(bkctl, cluster, service_uri, monkeypatch):
    from admin.replace_bookie import replace_bookie_in_ledgers

    manager = LedgerManager(cluster)
    for ledger_id, bookies in ((1, (OLD, OTHER)), (2, (OTHER, "127.0.0.1:3183")), (3, (OTHER, OLD))):
        manager.create(ledger_id, ledger(bookies))
    progress = RecordingProgress()
    found = list(replace_bookie_in_ledgers(cluster, OLD, "b:3181", dry_run=True, progress=progress))
    assert [r.ledger_id for r in found] == [1, 3]
    assert [(p.name, p.total, p.unit) for p in progress.phases] == [("reading ledgers", 3, "ledgers")]
    progress.assert_complete()

    show_bars(monkeypatch)
    done = bkctl(
        "-u", service_uri, "bookie", "replace-in-ledgers", OLD, "b:3181", "--yes", "--rate", "100", "-o", "json"
    )
    assert [d["ledgerId"] for d in json.loads(done.stdout)] == [1, 3]  # the rows stay on stdout under the bar
    assert "reading ledgers" in done.stderr and "3/3 ledgers" in done.stderr


def test_replace_refuses_a_running_bookie_the_same_id_and_a_bad_one(bkctl, cluster, service_uri):
    BookieRegistry(cluster).register(OLD, BookieServiceInfo.for_bookie("127.0.0.1", 3181))
    running = bkctl("-u", service_uri, "bookie", "replace-in-ledgers", OLD, OTHER, "--yes")
    assert running.exit_code == 3 and "stop it before you replace its id in ledger metadata" in running.stderr
    same = bkctl("-u", service_uri, "bookie", "replace-in-ledgers", OTHER, OTHER, "--yes")
    assert same.exit_code == 2 and "is both the bookie id to replace and its replacement" in same.stderr
    bad = bkctl("-u", service_uri, "bookie", "replace-in-ledgers", OTHER, "not an id", "--yes")
    assert bad.exit_code == 2 and "is not a valid bookie id" in bad.stderr


def test_ledger_update_follows_a_bookie_from_its_ip_to_its_host_name(bkctl, cluster, service_uri, tmp_path):
    LedgerManager(cluster).create(5, ledger((OLD, OTHER)))
    conf = tmp_path / "bk_server.conf"
    conf.write_text(
        f"metadataServiceUri={service_uri}\nbookiePort=3181\nlisteningInterface=lo\nallowLoopback=true\n"
        "useHostNameAsBookieID=true\n"
    )
    wrong = bkctl("-c", str(conf), "ledger", "update", "--bookie-id", "ip", "--yes")
    assert wrong.exit_code == 2 and "--bookie-id ip needs useHostNameAsBookieID=false" in wrong.stderr
    done = bkctl("-c", str(conf), "ledger", "update", "--bookie-id", "hostname", "--yes", "-o", "json")
    assert done.exit_code == 0, done.stderr
    assert json.loads(done.stdout) == [
        {"ledgerId": 5, "segments": 1, "znodeVersion": 1, "from": OLD, "to": "localhost:3181", "dryRun": False}
    ]
    assert ensembles(cluster, 5) == [("localhost:3181", OTHER)]


def test_a_bookie_moved_to_a_new_port_serves_its_ledgers_under_its_new_id(bkctl, harness, cluster, tmp_path):
    uri = harness.service_uri
    bookies = harness.start(3)
    ledgers = write_ledgers(uri, 4, quorum=(3, 3, 2))
    moved = bookies[0]
    old_id = moved.bookie_id
    moved.stop()
    moved.port = free_port()
    moved.write_conf(uri)
    replaced = bkctl("-u", uri, "bookie", "replace-in-ledgers", old_id, moved.bookie_id, "--yes", "-o", "json")
    assert [d["ledgerId"] for d in json.loads(replaced.stdout)] == sorted(ledgers)
    cookie = tmp_path / "moved.cookie"
    assert (
        bkctl("-c", str(moved.conf_path), "cookie", "generate", moved.bookie_id, "--output-file", str(cookie)).exit_code
        == 0
    )
    assert bkctl("-u", uri, "cookie", "create", moved.bookie_id, "--cookie-file", str(cookie)).exit_code == 0
    assert bkctl("-u", uri, "cookie", "delete", old_id, "--yes").exit_code == 0
    for directory in moved.data_dirs:  # what BookKeeper's `cookie admin` does on the bookie's host
        write_local_cookie(Path(directory), Cookie.decode(cookie.read_bytes()))
    harness.restart(moved)
    check = bkctl("-u", uri, "cluster", "check", "--replicas", "--verify-entries", "100", "--recheck-delay", "1")
    assert check.exit_code == 0, check.stdout + check.stderr
