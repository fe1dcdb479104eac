"""Pulsar's rack mapping (/bookies): the layout Pulsar reads and writes, and where a bookie's rack comes from."""

import json

import pytest

from bookie.errors import CorruptData, InvalidArgument
from bookie.meta.racks import BookieRack, RackMapping, check_rack
from bookie.meta.registration import WRITABLE, BookieServiceInfo, RegisteredBookie

# apache/pulsar BookieRackAffinityMappingTest.testBasic's document, as written there (with blanks)
PULSAR_TEST_DOCUMENT = (
    b'{"group1": {"127.0.0.1:3181": {"rack": "/rack0", "hostname": "bookie1.example.com"}, '
    b'"127.0.0.2:3181": {"rack": "/rack1", "hostname": "bookie2.example.com"}}}'
)


def test_pulsars_own_test_document_reads_as_pulsar_reads_it():
    mapping = RackMapping.decode(PULSAR_TEST_DOCUMENT)
    assert mapping.get("127.0.0.1:3181") == BookieRack("group1", "/rack0", "bookie1.example.com")
    assert mapping.rack_of("127.0.0.2:3181").location == "/rack1"
    assert mapping.rack_of("127.0.0.3:3181") is None


def test_written_as_jackson_writes_a_treemap_non_null_compact():
    """Groups and addresses sorted (TreeMap), BookieInfoImpl's fields in declaration order (rack, hostname), a null
    hostname left out (Include.NON_NULL), no blanks, UTF-8 as is."""
    mapping = (
        RackMapping()
        .updated("default", "10.0.0.2:3181", "/rack-b")
        .updated("default", "10.0.0.1:3181", "/rack-a", "bk1.example")
        .updated("another", "10.0.0.3:3181", "/räck")
    )
    assert (
        mapping.encode()
        == (
            '{"another":{"10.0.0.3:3181":{"rack":"/räck"}},"default":{"10.0.0.1:3181":{"rack":"/rack-a",'
            '"hostname":"bk1.example"},"10.0.0.2:3181":{"rack":"/rack-b"}}}'
        ).encode()
    )
    assert RackMapping.decode(mapping.encode()) == mapping
    # Pulsar's test document round-trips to the same content
    again = RackMapping.decode(RackMapping.decode(PULSAR_TEST_DOCUMENT).encode())
    assert json.loads(again.encode()) == json.loads(PULSAR_TEST_DOCUMENT)


def test_update_removes_the_address_from_every_group_and_an_empty_group_goes():
    mapping = RackMapping().updated("g1", "a:1", "/r1").updated("g1", "b:1", "/r1")
    moved = mapping.updated("g2", "a:1", "/r2")
    assert moved.groups == {"g1": {"b:1": BookieRack("g1", "/r1")}, "g2": {"a:1": BookieRack("g2", "/r2")}}
    assert moved.removed("b:1").groups == {"g2": {"a:1": BookieRack("g2", "/r2")}}
    assert moved.removed("b:1").removed("a:1").encode() == b"{}"


def test_an_empty_or_slash_rack_is_none_and_a_leading_slash_is_added():
    """BookieRackAffinityMappingTest.testInvalidRackName and testBookieInfoChange ("rack0" reads as "/rack0")."""
    mapping = RackMapping.decode(
        b'{"group1": {"127.0.0.1:3181": {"rack": "/", "hostname": "bookie1.example.com"}, '
        b'"127.0.0.2:3181": {"rack": "", "hostname": "bookie2.example.com"}, "127.0.0.3:3181": {"rack": "rack0"}, '
        b'"127.0.0.4:3181": {}}}'
    )
    assert [mapping.get(f"127.0.0.{i}:3181").location for i in range(1, 5)] == [None, None, "/rack0", None]
    assert RackMapping.decode(b"") == RackMapping() == RackMapping.decode(b"{}")


@pytest.mark.parametrize(
    "data", [b"[1]", b"{", b'{"g": 3}', b'{"g": {"a:1": "r"}}', b'{"g": {"a:1": {"rack": 5}}}', b"\xff"]
)
def test_a_document_of_another_shape_is_corrupt(data):
    with pytest.raises(CorruptData, match="bookies"):
        RackMapping.decode(data, "/bookies")


def test_racks_are_validated_as_pulsars_broker_does():
    for good in ("/rack-a", "rack-a", "/region/rack", "/rack/"):
        check_rack(good)
    for bad, why in (("", "give a rack"), ("/", "give a rack"), (" ", "give a rack"), ("/a/b/c", "no more '/'")):
        with pytest.raises(InvalidArgument, match=why):
            check_rack(bad)
    rack_aware = RackMapping().updated("default", "a:1", "/r1")
    check_rack("/r2", rack_aware)
    with pytest.raises(InvalidArgument, match="of the form /rack"):
        check_rack("/region/r2", rack_aware)


def test_a_bookies_rack_comes_from_the_mapping_then_its_registration_then_the_default():
    """Matched by bookie id first, then by the address it publishes (a key is a bookie id resolved to host:port)."""
    info = BookieServiceInfo.for_bookie("10.0.0.1", 3181, rack="/published")
    mapping = RackMapping().updated("default", "10.0.0.1:3181", "/mapped")
    by_address = mapping.rack_of("bookie-1", "10.0.0.1:3181")
    assert RegisteredBookie("bookie-1", WRITABLE, info, by_address).rack_and_source == ("/mapped", "mapping")
    assert RegisteredBookie("bookie-1", WRITABLE, info).rack_and_source == ("/published", "registration")
    assert RegisteredBookie("bookie-1", WRITABLE, None).rack_and_source == ("/default-rack", "default")
    none = RackMapping().updated("default", "bookie-1", "/").rack_of("bookie-1")
    assert RegisteredBookie("bookie-1", WRITABLE, info, none).rack == "/published"
