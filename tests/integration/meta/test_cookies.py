import pytest

from bookie.errors import MetadataVersionConflict, NotFound
from bookie.meta.cookies import Cookie, CookieStore, read_local_cookie, write_local_cookie
from bookie.server.cookie_check import CookieMismatch, check_cookies, write_cookies


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


def config(journals, ledgers, **settings):
    from bookie.server.config import BookieConfig

    dirs = {"journalDirectories": ",".join(map(str, journals)), "ledgerDirectories": ",".join(map(str, ledgers))}
    return BookieConfig.load(None, {**dirs, **settings})


def test_a_new_bookies_cookie_is_written_all_or_nothing(cluster, tmp_path):
    journal, ledgers = tmp_path / "journal", tmp_path / "ledgers"
    conf = config([journal], [ledgers])
    check = check_cookies(cluster, "127.0.0.1:3181", conf)
    assert check.new and CookieStore(cluster).list() == []  # the check itself writes nothing
    (ledgers / "current" / "VERSION").mkdir(parents=True)  # the ledger directory's cookie cannot be written
    with pytest.raises(IsADirectoryError):
        write_cookies(cluster, check)
    assert CookieStore(cluster).list() == [] and read_local_cookie(journal) is None  # what it wrote is gone
    assert [p.name for p in (ledgers / "current").iterdir()] == ["VERSION"]  # no temporary file left beside it
    (ledgers / "current" / "VERSION").rmdir()
    write_cookies(cluster, check)
    assert check_cookies(cluster, "127.0.0.1:3181", conf).new is False


def test_several_directories_are_listed_as_bookkeeper_lists_them(cluster, tmp_path):
    journals, ledgers = [tmp_path / "j1", tmp_path / "j2"], [tmp_path / f"l{i}" for i in range(3)]
    check = check_cookies(cluster, "127.0.0.1:3181", config(journals, ledgers))
    write_cookies(cluster, check)
    text = (tmp_path / "l2" / "current" / "VERSION").read_text()
    assert f'journalDir: "{journals[0]},{journals[1]}"' in text  # Cookie.generateCookie: joined by commas
    assert f'ledgerDirs: "3\\t{ledgers[0]}\\t{ledgers[1]}\\t{ledgers[2]}"' in text  # encodeDirPaths
    assert "indexDirs" not in text  # none configured
    assert all(read_local_cookie(d) == check.cookie for d in journals + ledgers)
    assert CookieStore(cluster).read("127.0.0.1:3181")[0] == check.cookie


def test_a_ledger_directory_is_added_only_with_storage_expansion_and_empty(cluster, tmp_path):
    journal, ledgers = tmp_path / "journal", [tmp_path / "l0", tmp_path / "l1"]
    write_cookies(cluster, check_cookies(cluster, "b:1", config([journal], ledgers)))
    wider = [*ledgers, tmp_path / "l2"]
    with pytest.raises(CookieMismatch, match="directories are added with allowStorageExpansion=true"):
        check_cookies(cluster, "b:1", config([journal], wider))
    (tmp_path / "l2" / "current").mkdir(parents=True)
    (tmp_path / "l2" / "current" / "0.log").write_bytes(b"x")
    with pytest.raises(CookieMismatch, match="is added to the bookie's directories but is not empty"):
        check_cookies(cluster, "b:1", config([journal], wider, allowStorageExpansion="true"))
    (tmp_path / "l2" / "current" / "0.log").unlink()
    (tmp_path / "l2" / "current" / "bookie.lock").write_text("1\n")  # the starting bookie's own lock
    check = check_cookies(cluster, "b:1", config([journal], wider, allowStorageExpansion="true"))
    assert check.expand_from == 0 and not check.new
    write_cookies(cluster, check)
    assert CookieStore(cluster).read("b:1") == (check.cookie, 1) and check.cookie.ledger_dirs == tuple(map(str, wider))
    assert read_local_cookie(tmp_path / "l0") == read_local_cookie(tmp_path / "l2") == check.cookie
    # a directory dropped from the list, or one of the bookie's own wiped, stays refused
    with pytest.raises(CookieMismatch, match="ledger directories"):
        check_cookies(cluster, "b:1", config([journal], ledgers, allowStorageExpansion="true"))
    (tmp_path / "l1" / "current" / "VERSION").unlink()
    with pytest.raises(
        CookieMismatch, match="l1 has no cookie but ZooKeeper has one: the directory is new or was wiped"
    ):
        check_cookies(cluster, "b:1", config([journal], wider, allowStorageExpansion="true"))
