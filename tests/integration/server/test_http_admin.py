"""BookKeeper's HTTP admin API on a real bookie of ours: every endpoint's status codes, messages and JSON shapes
against what BookKeeper 4.17.4's source answers (bookkeeper_http_api.json says which file each comes from), then
what the endpoints of this bookie do (the ledger, bookies and autorecovery ones: test_http_*.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from bookie.client.metrics_client import parse

from support.cluster import http_call as call
from support.waiting import wait_for

API = json.loads((Path(__file__).with_name("bookkeeper_http_api.json")).read_text())
CASES = [(e["path"], case) for e in API["endpoints"] for case in e["cases"]]
TYPES = {"boolean": bool, "integer": int, "string": str, "null": type(None)}
ENTRIES = 12  # of the fixture's ledger: entry-0 .. entry-11


@pytest.fixture(scope="module")
def cluster(zookeeper, tmp_path_factory):
    from bookie.meta.underreplication import UnderReplicationManager

    from support.cluster import shared_cluster

    with shared_cluster(zookeeper, tmp_path_factory.mktemp("http"), bookies=1, http=True) as harness:
        UnderReplicationManager(harness.store).set_lost_bookie_recovery_delay(0)  # as an auditor does on start
        yield harness


@pytest.fixture(scope="module")
def bookie(cluster):
    return cluster.bookies[0]


@pytest.fixture(scope="module")
def ledger(cluster) -> int:
    """A closed ledger written by our client."""
    from bookie.client import BookKeeper

    with BookKeeper(cluster.service_uri) as bk:
        handle = bk.create_ledger(1, 1, 1)
        handle.add_entries(b"entry-%d" % i for i in range(ENTRIES))
        handle.close()
    return handle.ledger_id


def same_shape(value, shape) -> bool:
    """``value`` has ``shape``'s fields in its order and of its types (``*`` in a field name: any text; ``$Name``:
    the fixture's shape of that name)."""
    if isinstance(shape, str) and shape.startswith("$"):
        shape = API["shapes"][shape[1:]]["shape"]
    if isinstance(shape, dict):
        if not isinstance(value, dict) or len(value) != len(shape):
            return False
        return all(
            re.fullmatch(re.escape(k).replace(r"\*", ".*"), name) and same_shape(v, t)
            for (name, v), (k, t) in zip(value.items(), shape.items(), strict=True)
        )
    if isinstance(shape, list):
        return isinstance(value, list) and len(value) == len(shape) and all(map(same_shape, value, shape))
    return type(value) is TYPES[shape]


def _case_id(path: str, case: dict) -> str:
    query = f"?{case['query']}" if "query" in case else ""
    return f"{case['method']} {path}{query} {case['status']}"


@pytest.mark.parametrize(("path", "case"), CASES, ids=[_case_id(p, c) for p, c in CASES])
def test_every_endpoint_answers_as_bookkeeper(bookie, ledger, path, case):
    case = json.loads(json.dumps(case).replace("{ledger}", str(ledger)).replace("{bookie}", bookie.bookie_id))
    query = f"?{case['query']}" if "query" in case else ""
    status, headers, text = call(bookie, case["method"], path + query, case.get("body"))
    assert status == case["status"], text
    if "text" in case:
        assert text == case["text"]
    if "matches" in case:
        assert re.fullmatch(case["matches"], text), text
    if "shape" in case:
        assert same_shape(json.loads(text), case["shape"]), text
    if "every_value" in case:
        assert all(same_shape(v, case["every_value"]) for v in json.loads(text).values()), text
    if "starts" in case:
        assert json.loads(text).startswith(case["starts"])
    if "content_type" in case:
        assert headers["Content-Type"] == case["content_type"]


def test_bodies_are_jacksons_pretty_print(bookie):
    _, _, text = call(bookie, "GET", "/api/v1/bookie/state")
    assert (
        text == '{\n  "running" : true,\n  "readOnly" : false,\n  "shuttingDown" : false,\n'
        '  "availableForHighPriorityWrites" : true\n}'
    )


def test_read_only_through_http_is_the_bookies_state_and_registration(cluster, bookie):
    from bookie.meta.registration import READONLY, WRITABLE, BookieRegistry

    registry = BookieRegistry(cluster.store)
    try:
        status, _, text = call(bookie, "PUT", "/api/v1/bookie/state/readonly", '{"readOnly": true}')
        assert (status, json.loads(text)) == (200, {"readOnly": True})
        assert json.loads(call(bookie, "GET", "/api/v1/bookie/state")[2])["readOnly"] is True
        wait_for(lambda: registry.get(bookie.bookie_id).state == READONLY, what="registered read-only")
    finally:
        assert json.loads(call(bookie, "PUT", "/api/v1/bookie/state/readonly", '{"readOnly": false}')[2]) == {
            "readOnly": False
        }
    wait_for(lambda: registry.get(bookie.bookie_id).state == WRITABLE, what="registered writable")


def test_compaction_suspend_and_resume(bookie):
    name = f"Bookie Server listening on {bookie.bookie_id} with id {bookie.bookie_id}"
    status, _, text = call(bookie, "PUT", "/api/v1/bookie/gc/suspend_compaction", '{"suspendMajor": true}')
    assert (status, json.loads(text)) == (200, f"Suspend majorGC on BookieServer: {name}")
    assert json.loads(call(bookie, "GET", "/api/v1/bookie/gc/suspend_compaction")[2]) == {
        "isMinorGcSuspended": "false",
        "isMajorGcSuspended": "true",
    }
    status, _, text = call(
        bookie, "PUT", "/api/v1/bookie/gc/resume_compaction", '{"resumeMajor": true, "resumeMinor": true}'
    )
    assert json.loads(text) == f"Resume majorGC on BookieServer: {name}, Resume minorGC on BookieServer: {name}"
    assert json.loads(call(bookie, "GET", "/api/v1/bookie/gc/suspend_compaction")[2]) == {
        "isMinorGcSuspended": "false",
        "isMajorGcSuspended": "false",
    }


def gc_runs(bookie) -> float:
    return parse(call(bookie, "GET", "/metrics")[2]).sum("bookie_gc_THREAD_RUNTIME_count")


def test_put_gc_runs_a_collection(bookie):
    before = gc_runs(bookie)
    status, _, text = call(bookie, "PUT", "/api/v1/bookie/gc", "")
    assert (status, json.loads(text)) == (200, f"Triggered GC on BookieServer: {bookie.bookie_id}")
    wait_for(lambda: gc_runs(bookie) > before, what="a GC run")
    assert json.loads(call(bookie, "GET", "/api/v1/bookie/gc")[2]) in (
        {"is_in_force_gc": "false"},
        {"is_in_force_gc": "true"},
    )


def test_server_config_is_the_file_and_hides_secrets(bookie):
    config = json.loads(call(bookie, "GET", "/api/v1/config/server_config")[2])
    assert config["bookiePort"] == str(bookie.port) and config["httpServerEnabled"] == "true"
    assert config["journalDirectories"] == bookie.journal_dir
    status, _, text = call(bookie, "PUT", "/api/v1/config/server_config", '{"gcWaitTime": "1"}')
    assert status == 403 and "restart" in text


def test_last_log_mark_names_the_checkpointed_journal(bookie):
    ((key, value),) = json.loads(call(bookie, "GET", "/api/v1/bookie/last_log_mark")[2]).items()
    journal_id, hex_id = re.fullmatch(r"LastLogMark: Journal Id - (\d+)\(([0-9a-f]+)\.txn\)", key).groups()
    assert int(hex_id, 16) == int(journal_id) and re.fullmatch(r"Pos - \d+", value)


def test_sanity_writes_and_reads_on_this_bookie_and_leaves_no_ledger(cluster, bookie, ledger):
    from bookie.meta.ledger_manager import LedgerManager

    before = list(LedgerManager(cluster.store).iter_ledger_ids())
    assert json.loads(call(bookie, "GET", "/api/v1/bookie/sanity")[2]) == {"passed": True, "readOnly": False}
    assert list(LedgerManager(cluster.store).iter_ledger_ids()) == before
    try:
        call(bookie, "PUT", "/api/v1/bookie/state/readonly", '{"readOnly": true}')
        assert json.loads(call(bookie, "GET", "/api/v1/bookie/sanity")[2]) == {"passed": False, "readOnly": False}
    finally:
        call(bookie, "PUT", "/api/v1/bookie/state/readonly", '{"readOnly": false}')


def test_list_disk_file_names_the_bookies_files(bookie, ledger):
    journals = json.loads(call(bookie, "GET", "/api/v1/bookie/list_disk_file?file_type=journal")[2])
    on_disk = sorted(p.name for p in Path(bookie.journal_dir, "current").glob("*.txn"))
    assert journals["journal files"].endswith("\t") and sorted(journals["journal files"].split("\t")[:-1]) == on_disk
    logs = json.loads(call(bookie, "GET", "/api/v1/bookie/list_disk_file")[2])["entrylog files"]
    assert "0.log\t" in logs and all(name.endswith(".log") for name in logs.split("\t")[:-1])


def test_registration_advertises_the_http_endpoint_as_bookkeeper_does(cluster, bookie):
    from bookie.meta.registration import BookieRegistry

    endpoint = BookieRegistry(cluster.store).get(bookie.bookie_id).info.endpoint("httpserver")
    assert (endpoint.host, endpoint.port, endpoint.protocol) == ("127.0.0.1", bookie.http_port, "http")


def test_a_bookie_waiting_for_zookeeper_is_alive_but_not_ready(tmp_path):
    """The HTTP port is bound before the bookie reaches ZooKeeper or replays its journal: /heartbeat answers (a
    liveness probe does not kill a long replay), is_ready says 503 until the bookie is registered."""
    from bookie.local.bookies import LocalBookie
    from bookie.local.process import free_port

    dead = f"zk+hierarchical://127.0.0.1:{free_port()}/ledgers"
    bookie = LocalBookie.create(1, tmp_path / "b", dead, {"zkTimeout": "60000"}, http=True)
    bookie.start()
    try:
        wait_for(lambda: _answers(bookie), what="the HTTP admin port")
        assert call(bookie, "GET", "/heartbeat")[::2] == (200, "OK\n")
        assert call(bookie, "GET", "/api/v1/bookie/is_ready")[::2] == (503, "Bookie is not fully started yet")
        state = json.loads(call(bookie, "GET", "/api/v1/bookie/state")[2])
        assert state["running"] is False
        for path in ("/api/v1/bookie/gc", "/api/v1/bookie/gc_details", "/api/v1/bookie/state/readonly"):
            assert call(bookie, "GET", path)[::2] == (503, "Bookie is not fully started yet")
    finally:
        bookie.stop(kill=True)


def _answers(bookie) -> bool:
    try:
        return call(bookie, "GET", "/heartbeat")[0] == 200
    except OSError:
        return False


# ---- bkctl driving a bookie through BookKeeper's HTTP admin API (the path a Java bookie takes) ----


@pytest.fixture(scope="module")
def http_only(cluster):
    """A bookie of ours with the gRPC admin port closed: it publishes only BookKeeper's HTTP admin API."""
    (bookie,) = cluster.start(1, http=True, bkctlAdminPort=-1)
    return bookie


def test_the_http_only_bookie_publishes_no_grpc_admin(cluster, http_only):
    from bookie.meta.registration import BookieRegistry

    registered = BookieRegistry(cluster.store).get(http_only.bookie_id)
    assert registered.admin_address() is None and registered.http_address() == ("127.0.0.1", http_only.http_port)


def test_gc_status_compaction_and_gc_over_http(cluster, http_only, bkctl):
    uri, bookie_id = cluster.service_uri, http_only.bookie_id
    status = bkctl("-u", uri, "bookie", "gc-status", bookie_id, "-o", "json")
    assert status.exit_code == 0, status.stderr
    (doc,) = json.loads(status.stdout)
    assert doc["majorSuspended"] is False and doc["entryLogs"] is None  # what BookKeeper's API does not say: null
    assert bkctl("-u", uri, "bookie", "compaction", "suspend", "--major", bookie_id).exit_code == 0
    assert json.loads(call(http_only, "GET", "/api/v1/bookie/gc/suspend_compaction")[2])["isMajorGcSuspended"] == "true"
    assert bkctl("-u", uri, "bookie", "compaction", "resume", bookie_id).exit_code == 0
    (doc,) = json.loads(bkctl("-u", uri, "bookie", "gc-status", bookie_id, "-o", "json").stdout)
    assert doc["majorSuspended"] is False and doc["minorSuspended"] is False
    table = bkctl("-u", uri, "bookie", "gc-status", bookie_id).stdout
    assert bookie_id in table
    before = gc_runs(http_only)
    ran = bkctl("-u", uri, "bookie", "gc", bookie_id, "--wait", "--timeout", "60", "-o", "json")
    assert ran.exit_code == 0, ran.stderr
    assert [d["bookieId"] for d in json.loads(ran.stdout)] == [bookie_id]
    assert gc_runs(http_only) > before  # the run happened, and --wait waited for it


def test_readonly_and_info_over_http(cluster, http_only, bkctl):
    from bookie.meta.registration import READONLY, WRITABLE, BookieRegistry

    uri, registry = cluster.service_uri, BookieRegistry(cluster.store)
    on = bkctl("-u", uri, "bookie", "readonly", http_only.bookie_id, "--on")
    assert on.exit_code == 0 and "read-only" in on.stdout, on.stderr
    assert registry.get(http_only.bookie_id).state == READONLY
    assert bkctl("-u", uri, "bookie", "readonly", http_only.bookie_id, "--off").exit_code == 0
    assert registry.get(http_only.bookie_id).state == WRITABLE
    info = bkctl("-u", uri, "bookie", "info", http_only.bookie_id, "-o", "json")
    assert info.exit_code == 0, info.stderr


def test_http_port_sends_the_operation_over_http(cluster, bookie, bkctl):
    """--http-port: the HTTP admin API even on a bookie that has our gRPC admin service."""
    args = ("-u", cluster.service_uri, "bookie", "gc-status", bookie.bookie_id, "-o", "json")
    (grpc,) = json.loads(bkctl(*args).stdout)
    (http,) = json.loads(bkctl(*args, "--http-port", str(bookie.http_port)).stdout)
    assert grpc["entryLogs"] is not None and http["entryLogs"] is None
    dead = bkctl(*args, "--http-port", "1")
    assert dead.exit_code == 6 and "HTTP admin API is unreachable at http://127.0.0.1:1" in dead.stderr


def test_a_bookie_with_no_admin_service_says_what_to_turn_on(cluster, bkctl):
    (bare,) = cluster.start(1, bkctlAdminPort=-1)
    try:
        result = bkctl("-u", cluster.service_uri, "bookie", "gc", bare.bookie_id)
        assert result.exit_code == 7
        (line,) = result.stderr.splitlines()
        assert bare.bookie_id in line and "httpServerEnabled=true" in line and "--http-port" in line
    finally:
        bare.stop()
