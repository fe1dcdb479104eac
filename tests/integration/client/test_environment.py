"""BKCTL_USE_V2_WIRE_PROTOCOL is bkctl's: bkctl speaks v2 with it set, a library client built in the same process
still speaks v3 (its defaults read no environment)."""

import pytest

import bookie.client.core
from bookie.client import BookKeeper


@pytest.fixture
def spoken(monkeypatch):
    """Whether each bookie connection the process opens speaks v2."""
    seen: list[bool] = []
    connection = bookie.client.core.WireBookieClient

    def recorded(bookie_id, address, use_v2=False, tls=None):
        seen.append(use_v2)
        return connection(bookie_id, address, use_v2, tls)

    monkeypatch.setattr(bookie.client.core, "WireBookieClient", recorded)
    return seen


def test_the_v2_variable_switches_bkctl_and_not_a_library_client(five_bookies, bkctl, monkeypatch, spoken):
    monkeypatch.setenv("BKCTL_USE_V2_WIRE_PROTOCOL", "1")
    with BookKeeper(five_bookies.service_uri) as bk:
        ledger = bk.create_ledger(3, 2, 2, password=b"pw")
        ledger.add_entry(b"library")
        ledger.close()
        assert [e.payload for e in bk.open_ledger(ledger.ledger_id, b"pw").read(0, 0)] == [b"library"]
    assert spoken and not any(spoken)

    spoken.clear()
    done = bkctl("-u", five_bookies.service_uri, "ledger", "simpletest", "-n", "3")
    assert done.exit_code == 0, done.output
    assert spoken and all(spoken)
