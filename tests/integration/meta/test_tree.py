"""ZooKeeperTree's batched reads against a real ZooKeeper: a multiRead answers what one read each answers."""

import pytest

from bookie.errors import Unauthorized
from bookie.meta.tree import ZooKeeperTree


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
