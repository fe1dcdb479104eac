"""ledger list / ledger metadata over metadata written as raw bytes, in all three formats, at hand-computed paths."""

import json

import pytest

V1 = b"BookieMetadataFormatVersion\t1\n2\n3\n0\n0\t192.0.2.1:1234\t192.0.2.2:1234\t192.0.2.3:1234\n-102\tCLOSED"
V2 = (
    b"BookieMetadataFormatVersion\t2\nquorumSize: 2\nensembleSize: 3\nlength: 1500\nlastEntryId: 14\n"
    b'state: CLOSED\nsegment {\n  ensembleMember: "192.0.2.1:1234"\n  ensembleMember: "192.0.2.2:1234"\n'
    b'  ensembleMember: "192.0.2.3:1234"\n  firstEntryId: 0\n}\nsegment {\n  ensembleMember: "192.0.2.1:1234"\n'
    b'  ensembleMember: "192.0.2.4:1234"\n  ensembleMember: "192.0.2.3:1234"\n  firstEntryId: 10\n}\n'
    b'digestType: CRC32\npassword: "passwd"\nackQuorumSize: 2\nctime: 1700000000000\n'
)
ENSEMBLE = [b"192.0.2.1:3181", b"192.0.2.2:3181", b"192.0.2.3:3181"]
V3 = (  # test_ledger_metadata.py's v3 example, plus one custom metadata entry (field 11) before cToken
    b"BookieMetadataFormatVersion\t3\n"
    + bytes([0x60 + 12])
    + bytes.fromhex("0802 1003 1800 20ffffffffffffffffff01 2801 3232")
    + b"".join(b"\x0a\x0e" + b for b in ENSEMBLE)
    + bytes.fromhex("1000 3803 4206")
    + b"foobar"
    + bytes.fromhex("4801 50ffffffffffffffffff01")
    + bytes.fromhex("5a0a 0a03")
    + b"app"
    + bytes.fromhex("1203")
    + b"etl"
    + bytes.fromhex("6000")
)
LONG_ID = 4294967301  # long form: 000/0000/0042/9496/L7301
PLACED = {1: ("00/0000/L0001", V1), 123456789: ("01/2345/L6789", V2), LONG_ID: ("000/0000/0042/9496/L7301", V3)}


@pytest.fixture
def placed(cluster):
    for path, data in PLACED.values():
        cluster.zk.create(f"{cluster.root}/{path}", data, makepath=True)
    return cluster


def test_list_ids(bkctl, service_uri, placed):
    result = bkctl("-u", service_uri, "ledger", "list")
    assert result.exit_code == 0
    assert result.stdout == "LEDGER\n1\n123456789\n4294967301\n"
    assert json.loads(bkctl("-u", service_uri, "ledger", "list", "-o", "json").stdout) == [
        {"ledgerId": 1},
        {"ledgerId": 123456789},
        {"ledgerId": LONG_ID},
    ]


def test_list_with_metadata(bkctl, service_uri, placed):
    result = bkctl("-u", service_uri, "ledger", "list", "--meta")
    assert result.stdout.splitlines() == [
        "LEDGER       STATE         E/WQ/AQ   LAST-ENTRY   LENGTH   DIGEST   SEGMENTS",
        "1            IN_RECOVERY   3/2/2     <none>       <none>   <none>   1",
        "123456789    CLOSED        3/2/2     14           1500     CRC32    2",
        "4294967301   OPEN          3/2/1     <none>       <none>   CRC32C   1",
    ]
    docs = json.loads(bkctl("-u", service_uri, "ledger", "list", "--meta", "-o", "json").stdout)
    assert [(d["ledgerId"], d["formatVersion"], d["state"]) for d in docs] == [
        (1, 1, "IN_RECOVERY"),
        (123456789, 2, "CLOSED"),
        (LONG_ID, 3, "OPEN"),
    ]


def test_metadata_v2_closed_two_segments(bkctl, service_uri, placed):
    result = bkctl("-u", service_uri, "ledger", "metadata", "123456789", "-o", "json")
    assert result.exit_code == 0
    assert json.loads(result.stdout) == {
        "ledgerId": 123456789,
        "formatVersion": 2,
        "state": "CLOSED",
        "ensembleSize": 3,
        "writeQuorumSize": 2,
        "ackQuorumSize": 2,
        "lastEntryId": 14,
        "length": 1500,
        "digestType": "CRC32",
        "passwordSet": True,
        "ctime": 1700000000000,
        "ctimeIso": "2023-11-14T22:13:20.000Z",
        "segments": [
            {"firstEntryId": 0, "ensemble": ["192.0.2.1:1234", "192.0.2.2:1234", "192.0.2.3:1234"]},
            {"firstEntryId": 10, "ensemble": ["192.0.2.1:1234", "192.0.2.4:1234", "192.0.2.3:1234"]},
        ],
        "customMetadata": {},
    }
    assert "passwd" not in bkctl("-u", service_uri, "ledger", "metadata", "123456789").stdout


def test_metadata_v1_uses_the_znode_ctime(bkctl, service_uri, placed):
    doc = json.loads(bkctl("-u", service_uri, "ledger", "metadata", "1", "-o", "json").stdout)
    assert doc["ctime"] == placed.zk.exists(f"{placed.root}/00/0000/L0001").ctime
    assert (doc["formatVersion"], doc["state"], doc["digestType"], doc["passwordSet"]) == (
        1,
        "IN_RECOVERY",
        None,
        False,
    )
    assert doc["segments"] == [{"firstEntryId": 0, "ensemble": ["192.0.2.1:1234", "192.0.2.2:1234", "192.0.2.3:1234"]}]
    table = bkctl("-u", service_uri, "ledger", "metadata", "1").stdout.splitlines()
    assert f"Created:        {doc['ctimeIso']}" in table and doc["ctimeIso"].endswith("Z")  # ISO-8601 for people


def test_metadata_v3_long_id_table(bkctl, service_uri, placed):
    result = bkctl("-u", service_uri, "ledger", "metadata", str(LONG_ID))
    assert result.exit_code == 0
    assert result.stdout.splitlines() == [
        "Ledger:         4294967301",
        "State:          OPEN",
        "Ensemble size:  3",
        "Write quorum:   2",
        "Ack quorum:     1",
        "Last entry:     <none>",
        "Length:         <none>",
        "Digest:         CRC32C",
        "Password set:   yes",
        "Created:        <none>",
        "Format version: 3",
        "Segments:",
        "FIRST-ENTRY   ENSEMBLE",
        "0             192.0.2.1:3181,192.0.2.2:3181,192.0.2.3:3181",
        "Custom metadata:",
        "KEY   VALUE",
        "app   etl",
    ]


def test_unknown_ledger_exits_5_with_one_line(bkctl, service_uri, placed):
    result = bkctl("-u", service_uri, "ledger", "metadata", "42")
    assert (result.exit_code, result.stdout, result.stderr) == (5, "", "error: ledger 42 does not exist\n")


def test_bad_ledger_id_exits_2(bkctl, service_uri, placed):
    result = bkctl("-u", service_uri, "ledger", "metadata", "-3")
    assert result.exit_code == 2


def test_corrupt_metadata_is_reported_and_the_rest_listed(bkctl, service_uri, placed):
    placed.zk.create(f"{placed.root}/00/0000/L0002", b"BookieMetadataFormatVersion\t9\n")
    result = bkctl("-u", service_uri, "ledger", "list", "--meta", "-o", "json")
    assert result.exit_code == 1
    assert [d["ledgerId"] for d in json.loads(result.stdout)] == [1, 123456789, LONG_ID]
    assert result.stderr == (
        f"warning: {placed.root}/00/0000/L0002: unknown metadata format version 9 (this tool reads 1, 2 and 3)\n"
    )
    shown = bkctl("-u", service_uri, "ledger", "metadata", "2")
    assert shown.exit_code == 1 and "unknown metadata format version 9" in shown.stderr


def test_empty_cluster(bkctl, service_uri, cluster):
    result = bkctl("-u", service_uri, "ledger", "list")
    assert (result.exit_code, result.stdout, result.stderr) == (0, "", "no ledgers\n")
    assert bkctl("-u", service_uri, "ledger", "list", "-o", "json").stdout == "[]\n"
