"""Stored formats that do not need a ZooKeeper: LAYOUT, cookies, under-replication markers, registration data."""

import pytest

from bookie.errors import CorruptData, UnsupportedLayout
from bookie.meta.cookies import Cookie
from bookie.meta.layout import Layout
from bookie.meta.registration import READ_ONLY_REASON, READONLY, WRITABLE, BookieServiceInfo, RegisteredBookie
from bookie.meta.underreplication import UnderReplicatedLedger, marker_path

LAYOUT = b"2\norg.apache.bookkeeper.meta.HierarchicalLedgerManagerFactory:1"


def test_layout_bytes():
    assert Layout.for_manager("hierarchical").encode() == LAYOUT
    layout = Layout.decode(LAYOUT)
    assert (layout.format_version, layout.manager, layout.manager_version) == (2, "hierarchical", 1)


def test_layout_version_1_is_readable():
    assert Layout.decode(b"1\norg.apache.bookkeeper.meta.FlatLedgerManagerFactory:1").manager == "flat"


@pytest.mark.parametrize(
    "data,error,message",
    [
        (b"3\nx:1", UnsupportedLayout, "layout format version 3 is not supported"),
        (b"2", CorruptData, "absent from layout"),
        (b"2\nclass:1:2", CorruptData, "malformed ledger manager line"),
        (b"two\nx:1", CorruptData, "malformed layout format version"),
    ],
)
def test_bad_layouts(data, error, message):
    with pytest.raises(error, match=message):
        Layout.decode(data)


def test_cookie_text():
    cookie = Cookie("127.0.0.1:3181", ("/j1", "/j2"), ("/l1",), "a-uuid", ("/i1", "/i2"))
    assert cookie.encode() == (
        b'5\nbookieHost: "127.0.0.1:3181"\njournalDir: "/j1,/j2"\nledgerDirs: "1\\t/l1"\n'
        b'instanceId: "a-uuid"\nindexDirs: "2\\t/i1\\t/i2"\n'
    )
    assert Cookie.decode(cookie.encode()) == cookie


def test_cookie_differences_name_the_field():
    a = Cookie("b:1", ("/j",), ("/l",), "one")
    assert a.differences(a) == []
    assert a.differences(Cookie("b:1", ("/j",), ("/l",), "two")) == ["cluster instance id 'one' != 'two'"]


def test_cookie_of_unknown_version():
    with pytest.raises(CorruptData, match="cookie layout version '4'"):
        Cookie.decode(b'4\nbookieHost: "x"\n')


def test_marker_path_of_spec_example():
    assert (
        marker_path("/ledgers/underreplication", 1)
        == "/ledgers/underreplication/ledgers/0000/0000/0000/0001/urL0000000001"
    )
    assert marker_path("/u", 0x0001000200030004) == "/u/ledgers/0001/0002/0003/0004/urL281483566841860"


def test_marker_text():
    marker = UnderReplicatedLedger(5, ("b1:3181", "b2:3181"), 1700000000000)
    assert marker.encode() == b'replica: "b1:3181"\nreplica: "b2:3181"\nctime: 1700000000000\n'
    assert UnderReplicatedLedger.decode(5, marker.encode(), "m") == marker


def test_registration_data_round_trip():
    info = BookieServiceInfo.for_bookie("127.0.0.1", 3181, tls=True, rack="/r1")
    decoded = BookieServiceInfo.decode(info.encode())
    assert decoded == info and decoded.rack == "/r1"
    assert decoded.bookie_endpoint().extensions == ("tls",)


def test_read_only_reasons_are_what_the_bookie_published_and_unknown_when_it_published_none():
    plain = BookieServiceInfo.for_bookie("127.0.0.1", 3181)
    told = BookieServiceInfo(plain.endpoints, {**plain.properties, READ_ONLY_REASON: "operator,disk-threshold"})
    told = BookieServiceInfo.decode(told.encode())
    assert RegisteredBookie("b:1", READONLY, told).read_only_reasons == ["operator", "disk-threshold"]
    assert RegisteredBookie("b:1", READONLY, plain).read_only_reasons is None  # a Java bookie: it does not say
    assert RegisteredBookie("b:1", READONLY, None).read_only_reasons is None
    assert RegisteredBookie("b:1", WRITABLE, plain).read_only_reasons == []


def test_the_states_and_reasons_table_of_docs_cli_md_is_the_code_s():
    import re
    from pathlib import Path

    from bookie.meta.registration import READ_ONLY_REASONS, STATES

    cli_md = (Path(__file__).resolve().parents[3] / "docs" / "cli.md").read_text()
    documented = re.findall(r"^\| `([a-z-]+)` \| ", cli_md.split("A bookie's `state`")[1].split("\n\n")[1], re.M)
    assert documented == list(STATES)
    assert all(f"`{reason}`" in cli_md for reason in READ_ONLY_REASONS)
