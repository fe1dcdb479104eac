"""Bookies and a client without the C codec (BKCTL_FRAMES=python: what runs where bookie.codec._frames was not
built): adds, reads, a recovery (fence reads) and long polls still work, in v3 and in v2, on real bookie processes."""

import os
import subprocess
import sys
from pathlib import Path

from support.cluster import shared_cluster

CLIENT = """
import os
import sys
from bookie.client import BookKeeper, ClientConfig
from bookie.codec import frames

assert not frames.ACCELERATED, "the client runs the C codec"
with BookKeeper(sys.argv[1], ClientConfig.from_environment(os.environ)) as bk:
    writer = bk.create_ledger(3, 2, 2, password=b"pw")
    writer.add_entries(b"entry-%d" % i for i in range(500))
    assert [e.payload for e in bk.open_ledger(writer.ledger_id, b"pw", recovery=False).read(0, 400)] == [
        b"entry-%d" % i for i in range(401)
    ]
    with bk.open_ledger(writer.ledger_id, b"pw", recovery=True) as recovered:  # fences the live writer
        assert recovered.last_add_confirmed == 499
        assert [e.payload for e in recovered.read(0, 499)] == [b"entry-%d" % i for i in range(500)]
print("ok")
"""


def test_bookies_and_client_run_without_the_c_codec(zookeeper, tmp_path, monkeypatch):
    monkeypatch.setenv("BKCTL_FRAMES", "python")
    with shared_cluster(zookeeper, tmp_path, 3) as harness:
        for bookie in harness.bookies:  # the bookie processes run the Python codec too, and say so
            assert b"BKCTL_FRAMES=python" in Path(f"/proc/{bookie.pid}/environ").read_bytes().split(b"\0")
            assert "BookKeeper's protocol runs in Python here" in bookie.log_path.read_text()
        for v2 in ("false", "true"):
            done = subprocess.run(
                [sys.executable, "-c", CLIENT, harness.service_uri],
                env={**os.environ, "BKCTL_USE_V2_WIRE_PROTOCOL": v2},
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert done.returncode == 0 and done.stdout.strip() == "ok", f"v2={v2}: {done.stderr[-2000:]}"
