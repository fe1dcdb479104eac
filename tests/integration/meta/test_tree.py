"""ZooKeeperTree's batched reads against a real ZooKeeper: a multiRead answers what one read each answers."""

import pytest
from kazoo.exceptions import ConnectionLoss

from bookie.errors import CorruptData, ServiceUnavailable, Unauthorized
from bookie.meta import tree as tree_module
from bookie.meta.tree import ZooKeeperTree


def _tree_of(store, count):
    """A tree over ``count`` znodes under the store's parent, and their paths."""
    root = store.root.rsplit("/", 1)[0]
    store.zk.create(f"{root}/many", makepath=True)
    for i in range(count):
        store.zk.create_async(f"{root}/many/n{i}", b"%d" % i)
    store.zk.sync(f"{root}/many")
    return ZooKeeperTree(store, root), [f"{root}/many/n{i}" for i in range(count)]


def test_read_batched_answers_as_read_many_in_multireads(store, monkeypatch):
    zk = store.zk
    root = store.root.rsplit("/", 1)[0]
    for i in range(450):
        zk.create(f"{root}/batch/n{i}", b"%d" % i if i % 7 else b"", makepath=True)
    tree = ZooKeeperTree(store, root)
    paths = [f"{root}/batch/n{i}" for i in range(500)]  # the last 50 do not exist
    expected = [(p, d, s.version if s else None) for p, d, s in tree.read_many(paths)]

    def one_read_each(paths):  # the fallback must not be what answered
        raise AssertionError("read_batched fell back to one read each")

    monkeypatch.setattr(tree, "read_many", one_read_each)
    sent: list[int] = []
    call = zk._call
    monkeypatch.setattr(zk, "_call", lambda request, answer: (sent.append(request.type), call(request, answer))[1])
    got = [(p, d, s.version if s else None) for p, d, s in tree.read_batched(paths)]
    assert got == expected and got[7][1] == b"" and got[449][1] == b"449" and got[450] == (paths[450], None, None)
    assert sent == [22] * 3  # 200 + 200 + 100 reads, three multiRead requests
    assert list(tree.read_batched([])) == []


def test_read_batched_raises_on_a_znode_it_may_not_read(store):
    from kazoo.security import make_digest_acl

    root = store.root.rsplit("/", 1)[0]
    store.zk.create(f"{root}/open", b"y", makepath=True)
    store.zk.create(f"{root}/secret", b"x", acl=[make_digest_acl("someone", "else", all=True)])
    tree = ZooKeeperTree(store, root)
    with pytest.raises(Unauthorized, match="secret"):
        list(tree.read_batched([f"{root}/open", f"{root}/secret"]))


def test_read_batched_on_a_server_without_multiread_reads_one_each_after_reconnecting(store, monkeypatch):
    # ZooKeeper answers a request type it does not know (multiRead, before 3.6) with UNIMPLEMENTED and then closes
    # the connection: an unknown type makes this server do what an old one does with multiRead
    tree, paths = _tree_of(store, 1500)
    monkeypatch.setattr(tree_module._MultiRead, "type", 999)
    got = [(p, d) for p, d, _ in tree.read_batched(paths)]
    assert got == [(p, b"%d" % i) for i, p in enumerate(paths)]


def test_read_batched_does_not_fall_back_on_a_lost_connection(store, monkeypatch):
    tree, paths = _tree_of(store, 3)
    monkeypatch.setattr(tree, "read_many", lambda paths: pytest.fail("fell back to one read each"))
    call = store.zk._call

    def lose_multiread(request, answer):
        if isinstance(request, tree_module._MultiRead):
            return answer.set_exception(ConnectionLoss())
        return call(request, answer)

    monkeypatch.setattr(store.zk, "_call", lose_multiread)
    with pytest.raises(ServiceUnavailable, match=r"n0 and 2 more: lost the ZooKeeper connection \(ConnectionLoss\)"):
        list(tree.read_batched(paths))


def test_read_batched_reports_a_malformed_answer_in_one_line(store, monkeypatch):
    tree, paths = _tree_of(store, 3)
    parse = tree_module._MultiRead.deserialize
    monkeypatch.setattr(
        tree_module._MultiRead, "deserialize", lambda self, data, offset: parse(self, data[:-20], offset)
    )
    with pytest.raises(CorruptData, match="n0 and 2 more: malformed multiRead answer") as raised:
        list(tree.read_batched(paths))
    assert "\n" not in str(raised.value)
