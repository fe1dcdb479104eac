import pytest

from bookie.errors import InvalidArgument
from bookie.meta.uri import parse_service_uri


def test_parses_hosts_manager_and_root():
    uri = parse_service_uri("zk+hierarchical://zk1:2181;zk2:2182,zk3/ledgers")
    assert uri.manager == "hierarchical"
    assert uri.hosts == (("zk1", 2181), ("zk2", 2182), ("zk3", 2181))
    assert uri.root == "/ledgers"
    assert uri.zk_hosts == "zk1:2181,zk2:2182,zk3:2181"
    assert str(uri) == "zk+hierarchical://zk1:2181;zk2:2182;zk3:2181/ledgers"


def test_plain_zk_scheme_leaves_the_manager_to_the_layout():
    uri = parse_service_uri("zk://127.0.0.1:2181/a/b/ledgers")
    assert (uri.manager, uri.root) == (None, "/a/b/ledgers")


def test_ipv6_with_and_without_port():
    assert parse_service_uri("zk://[::1]:2181/ledgers").hosts == (("::1", 2181),)
    assert parse_service_uri("zk://[fe80::1];[::1]:2182/ledgers").hosts == (("fe80::1", 2181), ("::1", 2182))
    assert parse_service_uri("zk://[::1]:2181;h2/ledgers").zk_hosts == "[::1]:2181,h2:2181"


def test_long_hierarchical_and_ipv6():
    uri = parse_service_uri("zk+longhierarchical://[::1]:2181/ledgers")
    assert uri.manager == "longhierarchical"
    assert uri.hosts == (("::1", 2181),)


@pytest.mark.parametrize(
    "text,message",
    [
        ("127.0.0.1:2181/ledgers", "no scheme"),
        ("etcd://h:1/ledgers", "only ZooKeeper"),
        ("zk+flat://h:1/ledgers", "unknown ledger manager 'flat'"),
        ("zk+hierarchical:///ledgers", "no ZooKeeper hosts"),
        ("zk+hierarchical://h:99999/ledgers", "bad port '99999'"),
        ("zk+hierarchical://h:2181", "a ledgers root path is needed"),
        ("zk+hierarchical://h:2181/", "a ledgers root path is needed"),
        ("zk://[::1:2181/ledgers", r"no '\]' after IPv6 address '::1:2181'"),
        ("zk://[::1]:x/ledgers", "bad port 'x'"),
        ("zk://[::1]:/ledgers", "empty port after"),
        ("zk://[::1]2181/ledgers", r"'2181' after \[::1\]"),
        ("zk://::1:2181/ledgers", "needs brackets"),
        ("zk://[zk1]:2181/ledgers", "not an IPv6 address"),
        ("zk://h:\u00b2/ledgers", "bad port"),  # a superscript two is a digit to str.isdigit, not to int()
    ],
)
def test_malformed_uris_say_what_is_wrong(text, message):
    with pytest.raises(InvalidArgument, match=message):
        parse_service_uri(text)
