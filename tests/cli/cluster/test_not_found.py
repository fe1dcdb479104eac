"""Typos do not report success: a bookie the cluster has never heard of, or a root without a cluster, is "not
found" (exit 5) with the name echoed; a bookie that is gone but still named somewhere is accepted."""

import pytest

from bookie.codec.digest import DigestType
from bookie.meta.cookies import Cookie, CookieStore
from bookie.meta.ledger_manager import LedgerManager
from bookie.meta.ledger_metadata import LedgerMetadata, LedgerState, Segment

GONE = "127.0.0.1:3181"  # named by ledger 1's metadata, not registered
ENSEMBLE = (Segment(0, (GONE, "127.0.0.1:3182")),)


@pytest.fixture
def named(cluster):
    LedgerManager(cluster).create(
        1, LedgerMetadata(2, 2, 2, ENSEMBLE, LedgerState.CLOSED, 9, 100, DigestType.CRC32C, b"pw")
    )
    return cluster


def one_line_not_found(result, name):
    assert result.exit_code == 5, result.output
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1 and name in result.stderr
    assert result.stdout == ""


@pytest.mark.parametrize(
    "args",
    [
        ["bookie", "decommission", "127.0.0.1:9999", "--yes"],
        ["bookie", "recover", "9.9.9.9:3181", "--dry-run"],
        ["bookie", "recover", "9.9.9.9:3181", "--query"],
        ["bookie", "recover", f"{GONE},9.9.9.9:3181", "--yes"],
        ["cluster", "check-impact", "--bookie", "nope:1"],
    ],
)
def test_an_unknown_bookie_is_not_found(bkctl, service_uri, named, args):
    one_line_not_found(
        bkctl("-u", service_uri, *args),
        "9999" if "decommission" in args else "nope:1" if "check-impact" in args else "9.9.9.9:3181",
    )


def test_a_query_about_a_known_bookie_no_ledger_names_answers_none(bkctl, service_uri, named):
    CookieStore(named).write(
        Cookie(bookie_id="127.0.0.1:4000", journal_dirs=("/j",), ledger_dirs=("/l",), instance_id="x")
    )
    result = bkctl("-u", service_uri, "bookie", "recover", "127.0.0.1:4000", "--query")
    assert (result.exit_code, result.stderr) == (0, "no ledger names 127.0.0.1:4000\n")


def test_a_gone_bookie_named_by_a_ledger_or_a_cookie_is_accepted(bkctl, service_uri, named):
    result = bkctl("-u", service_uri, "bookie", "recover", GONE, "--dry-run", "-o", "json")
    assert result.exit_code == 0 and '"ledgerId": 1' in result.stdout
    assert bkctl("-u", service_uri, "cluster", "check-impact", "--bookie", GONE).exit_code == 3  # E2 W2 A2
    CookieStore(named).write(
        Cookie(bookie_id="127.0.0.1:4000", journal_dirs=("/j",), ledger_dirs=("/l",), instance_id="x")
    )
    assert bkctl("-u", service_uri, "bookie", "recover", "127.0.0.1:4000", "--dry-run").exit_code == 0


@pytest.mark.parametrize(
    "args",
    [
        ["ledger", "list"],
        ["bookies", "list"],
        ["cluster", "check"],
        ["autorecovery", "status"],
        ["ledger", "metadata", "1"],
    ],
)
@pytest.mark.parametrize("scheme", ["zk", "zk+hierarchical"])
def test_a_root_without_a_cluster_is_not_found(bkctl, zookeeper, named, scheme, args):
    uri = f"{scheme}://{zookeeper.address}/nope"
    one_line_not_found(bkctl("-u", uri, *args), f"{zookeeper.address}/nope")
