"""The JSON of the HTTP admin API's ledger, bookie and autorecovery endpoints, against BookKeeper's own: the
expected bodies were printed by ``JsonUtil.toJson`` over BookKeeper's ``LedgerMetadataImpl`` and
``LedgerMetadataSerDe`` (the oracle's classpath, Java 17), after a round trip through the serializer as a ledger
read from ZooKeeper makes."""

import pytest

from bookie.codec.digest import DigestType
from bookie.codec.jackson import pretty
from bookie.meta.ledger_metadata import LedgerMetadata, LedgerState, Segment
from bookie.server.http.autorecovery import parse_bookie_id, recovery_request
from bookie.server.http.bookies import readable
from bookie.server.http.common import Failed, java_int, java_map, java_number
from bookie.server.http.ledger import metadata_json, serialized

CLOSED = LedgerMetadata(
    ensemble_size=2,
    write_quorum_size=2,
    ack_quorum_size=1,
    segments=(Segment(0, ("127.0.0.1:3181", "127.0.0.1:3182")), Segment(10, ("127.0.0.1:3181", "127.0.0.1:3183"))),
    state=LedgerState.CLOSED,
    last_entry_id=19,
    length=2000,
    digest_type=DigestType.CRC32C,
    password=b"",
    ctime=1700000000000,
    custom_metadata={"application": b"pulsar", "k2": b"\xff\x00"},
    c_token=123,
)
OPEN = LedgerMetadata(
    ensemble_size=1,
    write_quorum_size=1,
    ack_quorum_size=1,
    segments=(Segment(0, ("127.0.0.1:3181",)),),
    digest_type=DigestType.HMAC,
    password=b"pw",
    ctime=1700000000000,
)

JAVA_CLOSED = (
    "{\n"
    '  "ledgerId" : 7,\n'
    '  "metadataFormatVersion" : 3,\n'
    '  "ensembleSize" : 2,\n'
    '  "writeQuorumSize" : 2,\n'
    '  "ackQuorumSize" : 1,\n'
    '  "state" : "CLOSED",\n'
    '  "length" : 2000,\n'
    '  "lastEntryId" : 19,\n'
    '  "ctime" : 1700000000000,\n'
    '  "digestType" : "CRC32C",\n'
    '  "password" : "",\n'
    '  "customMetadata" : {\n'
    '    "application" : "cHVsc2Fy",\n'
    '    "k2" : "/wA="\n'
    "  },\n"
    '  "closed" : true,\n'
    '  "ctoken" : 123,\n'
    '  "allEnsembles" : {\n'
    '    "0" : [ {\n'
    '      "id" : "127.0.0.1:3181"\n'
    "    }, {\n"
    '      "id" : "127.0.0.1:3182"\n'
    "    } ],\n"
    '    "10" : [ {\n'
    '      "id" : "127.0.0.1:3181"\n'
    "    }, {\n"
    '      "id" : "127.0.0.1:3183"\n'
    "    } ]\n"
    "  }\n"
    "}"
)

JAVA_LISTED = (
    "{\n"
    '  "7" : "BookieMetadataFormatVersion\\t3\\n\ufffd\\u0001\\b\\u0002\\u0010\\u0002\\u0018\ufffd\\u000F \\u0013('
    '\\u00032\\"\\n\\u000E127.0.0.1:3181\\n\\u000E127.0.0.1:3182\\u0010\\u00002\\"\\n\\u000E127.0.0.1:3181'
    "\\n\\u000E127.0.0.1:3183\\u0010\\n8\\u0003B\\u0000H\\u0001P\ufffd\u0415\ufffd\ufffd1Z\\u0015\\n\\u000B"
    "application\\u0012"
    '\\u0006pulsarZ\\b\\n\\u0002k2\\u0012\\u0002\ufffd\\u0000`{"\n'
    "}"
)

JAVA_OPEN = (
    "{\n"
    '  "ledgerId" : 8,\n'
    '  "metadataFormatVersion" : 3,\n'
    '  "ensembleSize" : 1,\n'
    '  "writeQuorumSize" : 1,\n'
    '  "ackQuorumSize" : 1,\n'
    '  "state" : "OPEN",\n'
    '  "length" : 0,\n'
    '  "lastEntryId" : -1,\n'
    '  "ctime" : 1700000000000,\n'
    '  "digestType" : "MAC",\n'
    '  "password" : "cHc=",\n'
    '  "customMetadata" : { },\n'
    '  "closed" : false,\n'
    '  "ctoken" : 0,\n'
    '  "allEnsembles" : {\n'
    '    "0" : [ {\n'
    '      "id" : "127.0.0.1:3181"\n'
    "    } ]\n"
    "  }\n"
    "}"
)


def test_ledger_metadata_is_jacksons_ledger_metadata_impl():
    assert pretty(metadata_json(7, CLOSED)) == JAVA_CLOSED


def test_a_set_password_is_masked_where_bookkeeper_prints_it():
    assert pretty(metadata_json(8, OPEN)) == JAVA_OPEN.replace('"cHc="', '"KioqKioq"')  # base64 of ******
    assert b"pw" not in serialized(OPEN).encode() and "******" in serialized(OPEN)


def test_listed_metadata_is_the_serialized_form_read_as_utf8():
    assert pretty({"7": serialized(CLOSED)}) == JAVA_LISTED


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (0, ""),
        (999, ""),
        (1000, "(1KB)"),
        (1234, "(1.234KB)"),
        (1999999, "(1.999MB)"),
        (123456789, "(123.456MB)"),
        (98765432109, "(98.765GB)"),
        (5368709120, "(5.368GB)"),
        (1099511627776, "(1.099TB)"),
        (2000000000000000, "(2000TB)"),
        (10737418240, "(10.737GB)"),
    ],
)
def test_disk_sizes_as_list_bookie_info_prints_them(value, shown):
    assert readable(value) == shown  # DecimalFormat("#.###"), RoundingMode.DOWN, printed by Java


def test_java_number_parsing():
    assert java_number("+12") == 12 and java_number("-3") == -3 and java_number("007") == 7
    for bad in (None, "", "1.5", " 1", "1_000", "9223372036854775808", "\u0661"):
        with pytest.raises(Failed):
            java_number(bad)
    with pytest.raises(Failed):
        java_number("2147483648", 32)
    assert java_int(5) == 5
    for bad in (True, 5.0, "5", None, 2**31):
        with pytest.raises(Failed):
            java_int(bad)


def test_params_print_as_a_java_hash_map():
    assert java_map({}) == "{}"
    assert java_map({"enable": "x", "foo": "bar"}) == "{enable=x, foo=bar}"  # printed by Java


def test_bookie_ids_as_bookie_id_parse_takes_them():
    assert parse_bookie_id("127.0.0.1:3181") == "127.0.0.1:3181"
    assert parse_bookie_id("host_name.example-1:3181") == "host_name.example-1:3181"
    for bad, message in (
        ("not valid!", "BookieId not valid! is not valid"),
        ("ReadOnly", "BookieId ReadOnly is not valid"),
        (None, "BookieId cannot be null"),
    ):
        with pytest.raises(ValueError, match=message):
            parse_bookie_id(bad)


def test_recovery_requests_bind_as_jackson_binds_them():
    assert recovery_request('{"bookie_src": ["a:1", "b:2"], "delete_cookie": true}') == (["a:1", "b:2"], True)
    assert recovery_request('{"bookie_src": ["a:1"]}') == (["a:1"], False)
    assert recovery_request('{"delete_cookie": "true"}') == (None, True)
    assert recovery_request("null") is None
    for bad in (
        "",
        "[]",
        '{"bookie_src": "a:1"}',
        '{"other": 1}',
        '{"delete_cookie": "yes"}',
        '{"bookie_src": [["a:1"]]}',
    ):
        with pytest.raises(ValueError):
            recovery_request(bad)
