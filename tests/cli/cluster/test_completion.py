"""Shell completion of the bookie ids and ledger ids of the cluster the command line names, read from ZooKeeper:
asked of a bkctl process as bash asks it, or bash itself running the script of `bkctl completion bash`.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from bookie.client import BookKeeper

from support.cli import values
from support.cluster import shared_cluster


@pytest.fixture(scope="module")
def live(zookeeper, tmp_path_factory):
    """Two bookies and three closed ledgers."""
    with shared_cluster(zookeeper, tmp_path_factory.mktemp("completion"), 2) as harness:
        with BookKeeper(harness.service_uri) as bk:
            ledgers = []
            for _ in range(3):
                ledger = bk.create_ledger(1, 1, 1)
                ledger.add_entries([b"x"])
                ledger.close()
                ledgers.append(str(ledger.ledger_id))
        bookies = sorted(b.bookie_id for b in harness.bookies)
        yield harness.service_uri, bookies, ledgers


def test_bookie_ids_and_ledger_ids_complete_from_the_cluster(live):
    uri, bookies, ledgers = live
    assert sorted(values("-u", uri, "bookie", "info", "")) == bookies
    assert sorted(values("-u", uri, "bookie", "gc", bookies[0], "")) == bookies  # [BOOKIE]...
    assert sorted(values("-u", uri, "cluster", "check-impact", "--bookie", "")) == bookies
    assert values("-u", uri, "bookie", "recover", f"{bookies[0]},") == [f"{bookies[0]},{bookies[1]}"]
    assert sorted(values("-u", uri, "ledger", "read", "")) == sorted(ledgers)
    assert values("-u", uri, "ledger", "metadata", ledgers[2]) == [ledgers[2]]
    assert sorted(values("-u", uri, "ledger", "delete", ledgers[0], "")) == sorted(ledgers)
    assert sorted(values("-u", uri, "cluster", "check", "--ledger", "")) == sorted(ledgers)
    # the cluster as every command finds it: from BKCTL_SERVICE_URI, or the current context
    assert sorted(values("bookie", "info", "", env={"BKCTL_SERVICE_URI": uri})) == bookies
    context = ["config", "set-context", "live", "--service-uri", uri]
    assert subprocess.run([sys.executable, "-m", "bkctl", *context], capture_output=True).returncode == 0
    assert sorted(values("--context", "live", "ledger", "recover", "")) == sorted(ledgers)
    assert values("--context", "") == ["live"]


def test_bash_completes_a_bookie_id_after_its_colon(live):
    """bash cuts host:port into three words; bkctl's bash script completes the whole id anyway."""
    uri, bookies, _ = live
    host, port = bookies[0].rsplit(":", 1)
    typed = f"bkctl -u {uri} bookie info {host}:{port[:-1]}"
    script = subprocess.run(
        [sys.executable, "-m", "bkctl", "completion", "bash"], capture_output=True, text=True, check=True
    ).stdout
    driver = f"""
{script}
COMP_LINE='{typed}'; COMP_POINT=${{#COMP_LINE}}
read -ra COMP_WORDS <<< "${{COMP_LINE//:/ : }}"  # as bash cuts them (':' is in COMP_WORDBREAKS): the URI too
COMP_CWORD=$(( ${{#COMP_WORDS[@]}} - 1 ))
_bkctl_completion bkctl
printf '%s\\n' "${{COMP_WORDS[COMP_CWORD]}}" "${{COMPREPLY[@]}}"
"""
    path = f"{os.path.dirname(sys.executable)}:{os.environ['PATH']}"  # the script runs `bkctl`: this one
    proc = subprocess.run(
        ["bash", "-c", driver], capture_output=True, text=True, timeout=30, env={**os.environ, "PATH": path}
    )
    assert proc.stderr == ""
    word, *replies = proc.stdout.splitlines()
    assert word == port[:-1]  # what bash replaces: the word after the colon ...
    assert replies == [port]  # ... by the rest of the one bookie id that fits
