"""The cluster endpoints of BookKeeper's HTTP admin API on our bookies: list_bookies, list_bookie_info,
cluster_info, as bookies go read-only and down."""

from __future__ import annotations

import json
import re

from support.cluster import http_call as call
from support.waiting import wait_for

INFO = re.compile(r": \{Free: (\d+)(\([0-9.]+[KMGT]B\))?, Total: (\d+)(\([0-9.]+[KMGT]B\))?\},")


def get(bookie, path: str):
    status, _, text = call(bookie, "GET", path)
    assert status == 200, text
    return json.loads(text)


def test_the_cluster_as_bookkeepers_endpoints_show_it(harness):
    asked = harness.start(1, http=True)[0]
    other, stopped = harness.start(2)
    ids = {b.bookie_id for b in harness.bookies}
    assert get(asked, "/api/v1/bookie/list_bookies") == dict.fromkeys(ids)
    assert set(get(asked, "/api/v1/bookie/list_bookies?type=rw&print_hostnames=true").items()) == {
        (b, "127.0.0.1") for b in ids
    }
    assert get(asked, "/api/v1/bookie/cluster_info") == {
        "auditorElected": False,
        "auditorId": "",
        "clusterUnderReplicated": False,
        "ledgerReplicationEnabled": True,
        "totalBookiesCount": 3,
        "writableBookiesCount": 3,
        "readonlyBookiesCount": 0,
        "unavailableBookiesCount": 0,
    }

    info = get(asked, "/api/v1/bookie/list_bookie_info")
    assert list(info)[-1] == "ClusterInfo: " and set(list(info)[:-1]) == ids
    sizes = [INFO.fullmatch(info[b]).group(1, 3) for b in ids]
    free, total = (sum(int(s[i]) for s in sizes) for i in (0, 1))
    assert info["ClusterInfo: "].startswith(f"{{Free: {free}(") and f", Total: {total}(" in info["ClusterInfo: "]

    assert call(asked, "PUT", "/api/v1/bookie/state/readonly", '{"readOnly": true}')[0] == 200
    wait_for(lambda: get(asked, "/api/v1/bookie/list_bookies?type=ro") == {asked.bookie_id: None}, "read-only")
    assert set(get(asked, "/api/v1/bookie/list_bookies")) == ids - {asked.bookie_id}
    stopped.stop()  # a clean stop: unregistered at once, its cookie stays
    wait_for(lambda: stopped.bookie_id not in get(asked, "/api/v1/bookie/list_bookies"), "the stopped bookie gone")
    counts = {k: v for k, v in get(asked, "/api/v1/bookie/cluster_info").items() if k.endswith("Count")}
    assert counts == {
        "totalBookiesCount": 3,
        "writableBookiesCount": 1,
        "readonlyBookiesCount": 1,
        "unavailableBookiesCount": 1,
    }
    assert set(get(asked, "/api/v1/bookie/list_bookie_info")) == {asked.bookie_id, other.bookie_id, "ClusterInfo: "}
