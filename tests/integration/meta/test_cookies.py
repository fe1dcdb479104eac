import pytest

from bookie.errors import MetadataVersionConflict, NotFound
from bookie.meta.cookies import Cookie, CookieStore, read_local_cookie, write_local_cookie


def cookie(**changes) -> Cookie:
    base = Cookie("127.0.0.1:3181", ("/data/journal",), ("/data/ledgers",), "instance-1", ("/data/ledgers",))
    return Cookie(**{**base.__dict__, **changes})


def test_zookeeper_cookie_create_read_cas_delete(cluster):
    cookies = CookieStore(cluster)
    assert cookies.write(cookie()) == 0
    data, _ = cluster.zk.get(f"{cluster.root}/cookies/127.0.0.1:3181")
    assert data.startswith(b'5\nbookieHost: "127.0.0.1:3181"\n')
    assert cookies.read("127.0.0.1:3181") == (cookie(), 0)
    with pytest.raises(MetadataVersionConflict, match="already has a cookie"):
        cookies.write(cookie())
    assert cookies.write(cookie(ledger_dirs=("/a", "/b")), version=0) == 1
    with pytest.raises(MetadataVersionConflict):
        cookies.write(cookie(), version=0)
    assert cookies.list() == ["127.0.0.1:3181"]
    cookies.delete("127.0.0.1:3181")
    with pytest.raises(NotFound, match="has no cookie"):
        cookies.read("127.0.0.1:3181")


def test_local_cookie_file(tmp_path):
    assert read_local_cookie(tmp_path) is None
    write_local_cookie(tmp_path, cookie())
    assert (tmp_path / "current" / "VERSION").read_bytes() == cookie().encode()
    assert read_local_cookie(tmp_path) == cookie()


def test_a_new_bookies_cookie_is_written_all_or_nothing(cluster, tmp_path):
    from bookie.server.cookie_check import check_cookies, write_cookies

    journal, ledgers = tmp_path / "journal", tmp_path / "ledgers"
    check = check_cookies(cluster, "127.0.0.1:3181", journal, ledgers, ledgers)
    assert check.new and CookieStore(cluster).list() == []  # the check itself writes nothing
    (ledgers / "current" / "VERSION.tmp").mkdir(parents=True)  # the ledger directory's cookie cannot be written
    with pytest.raises(IsADirectoryError):
        write_cookies(cluster, check)
    assert CookieStore(cluster).list() == [] and read_local_cookie(journal) is None  # what it wrote is gone
    (ledgers / "current" / "VERSION.tmp").rmdir()
    write_cookies(cluster, check)
    assert check_cookies(cluster, "127.0.0.1:3181", journal, ledgers, ledgers).new is False
