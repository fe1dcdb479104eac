import pytest
from hypothesis import given
from hypothesis import strategies as st

from bookie.errors import InvalidArgument
from bookie.meta.paths import ledger_path, parse_ledger_id, parse_ledger_path


@pytest.mark.parametrize(
    "ledger_id,manager,path",
    [
        (1, "hierarchical", "/ledgers/00/0000/L0001"),
        (123456789, "hierarchical", "/ledgers/01/2345/L6789"),
        (2147483646, "hierarchical", "/ledgers/21/4748/L3646"),
        (2147483647, "hierarchical", "/ledgers/000/0000/0021/4748/L3647"),
        (4294967301, "hierarchical", "/ledgers/000/0000/0042/9496/L7301"),
        (1, "longhierarchical", "/ledgers/000/0000/0000/0000/L0001"),
        (2147483647, "legacyhierarchical", "/ledgers/21/4748/L3647"),
    ],
)
def test_spec_paths(ledger_id, manager, path):
    assert ledger_path("/ledgers", ledger_id, manager) == path
    assert parse_ledger_path("/ledgers", path) == ledger_id


@given(st.integers(0, 2**63 - 1), st.sampled_from(["hierarchical", "longhierarchical"]))
def test_round_trip(ledger_id, manager):
    assert parse_ledger_path("/a/ledgers", ledger_path("/a/ledgers", ledger_id, manager)) == ledger_id


@pytest.mark.parametrize("path", ["/ledgers/00/L0001", "/ledgers/00/0000/X0001", "/other/00/0000/L0001"])
def test_not_a_ledger_path(path):
    with pytest.raises(InvalidArgument):
        parse_ledger_path("/ledgers", path)


@pytest.mark.parametrize("text", ["-1", "abc", "1.5", str(2**63)])
def test_user_ledger_ids_are_checked(text):
    with pytest.raises(InvalidArgument, match="invalid ledger id"):
        parse_ledger_id(text)
