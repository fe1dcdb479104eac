"""bkctl cookie get|create|update|delete|generate on a real ZooKeeper (BookKeeper's cookie_* commands)."""

import json

from bookie.meta.cookies import Cookie, CookieStore
from bookie.meta.layout import read_instance_id
from bookie.meta.registration import BookieRegistry, BookieServiceInfo

BOOKIE = "127.0.0.1:3181"


def generate(bkctl, uri, path, *dirs):
    result = bkctl("-u", uri, "cookie", "generate", BOOKIE, *dirs, "--output-file", str(path))
    assert result.exit_code == 0, result.stderr
    return result


def test_generate_create_get_update_delete(bkctl, cluster, service_uri, tmp_path):
    uri, instance_id = service_uri, read_instance_id(cluster)
    first = tmp_path / "first.cookie"
    out = generate(bkctl, uri, first, "--journal-dirs", "/j1,/j2", "--ledger-dirs", "/l1,/l2,/l3")
    assert out.stdout == f"cookie of {BOOKIE} written to {first}\n"
    assert first.read_text() == (
        f'5\nbookieHost: "{BOOKIE}"\njournalDir: "/j1,/j2"\nledgerDirs: "3\\t/l1\\t/l2\\t/l3"\n'
        f'instanceId: "{instance_id}"\n'
    )
    assert bkctl("-u", uri, "cookie", "create", BOOKIE, "--cookie-file", str(first), "--dry-run").exit_code == 0
    assert CookieStore(cluster).list() == []
    created = bkctl("-u", uri, "cookie", "create", BOOKIE, "--cookie-file", str(first))
    assert (created.exit_code, created.stdout) == (0, f"cookie/{BOOKIE} created\n")
    again = bkctl("-u", uri, "cookie", "create", BOOKIE, "--cookie-file", str(first))
    assert again.exit_code == 2 and "already has a cookie: `cookie update` replaces it" in again.stderr

    shown = bkctl("-u", uri, "cookie", "get", BOOKIE)
    assert shown.stdout.splitlines() == [
        f"Bookie:        {BOOKIE}",
        f"Instance id:   {instance_id}",
        "Journal dirs:  /j1,/j2",
        "Ledger dirs:   /l1,/l2,/l3",
        "Index dirs:    <none>",
        "Znode version: 0",
    ]
    doc = json.loads(bkctl("-u", uri, "cookie", "get", BOOKIE, "-o", "json").stdout)
    assert doc == {
        "bookieId": BOOKIE,
        "layoutVersion": 5,
        "instanceId": instance_id,
        "journalDirs": ["/j1", "/j2"],
        "ledgerDirs": ["/l1", "/l2", "/l3"],
        "indexDirs": None,
        "znodeVersion": 0,
    }

    wider = tmp_path / "wider.cookie"
    generate(bkctl, uri, wider, "--journal-dirs", "/j1,/j2", "--ledger-dirs", "/l1,/l2,/l3,/l4")
    dry = bkctl("-u", uri, "cookie", "update", BOOKIE, "--cookie-file", str(wider), "--dry-run", "-o", "json")
    assert json.loads(dry.stdout)["changes"] == [
        "ledger directories ('/l1', '/l2', '/l3', '/l4') != ('/l1', '/l2', '/l3')"
    ]
    assert CookieStore(cluster).read(BOOKIE)[1] == 0
    updated = bkctl("-u", uri, "cookie", "update", BOOKIE, "--cookie-file", str(wider), "--yes")
    assert (updated.exit_code, updated.stdout) == (0, f"cookie/{BOOKIE} replaced\n")
    assert CookieStore(cluster).read(BOOKIE) == (Cookie.decode(wider.read_bytes()), 1)
    same = bkctl("-u", uri, "cookie", "update", BOOKIE, "--cookie-file", str(wider), "--yes")
    assert same.stdout == f"cookie/{BOOKIE} unchanged\n"

    BookieRegistry(cluster).register(BOOKIE, BookieServiceInfo.for_bookie("127.0.0.1", 3181))
    running = bkctl("-u", uri, "cookie", "delete", BOOKIE, "--yes")
    assert running.exit_code == 3
    assert running.stderr == (
        f"error: bookie {BOOKIE} is running (registered writable): stop it before you delete its cookie\n"
    )
    BookieRegistry(cluster).unregister(BOOKIE)
    assert bkctl("-u", uri, "cookie", "delete", BOOKIE, "--dry-run").stdout == (
        f"cookie/{BOOKIE} would be deleted (dry run)\n"
    )
    unasked = bkctl("-u", uri, "cookie", "delete", BOOKIE)
    assert unasked.exit_code == 2 and "refusing to delete a cookie without --yes" in unasked.stderr
    deleted = bkctl("-u", uri, "cookie", "delete", BOOKIE, "--yes")
    assert (deleted.exit_code, deleted.stdout) == (0, f"cookie/{BOOKIE} deleted\n")
    missing = bkctl("-u", uri, "cookie", "get", BOOKIE)
    assert missing.exit_code == 5 and missing.stderr == f"error: bookie {BOOKIE} has no cookie\n"


def test_a_file_that_is_no_cookie_or_another_bookies_is_refused(bkctl, cluster, service_uri, tmp_path):
    garbage = tmp_path / "garbage"
    garbage.write_bytes(bytes(range(256)))
    bad = bkctl("-u", service_uri, "cookie", "create", BOOKIE, "--cookie-file", str(garbage))
    assert bad.exit_code == 2 and bad.stderr.startswith(f"error: {garbage} is not a cookie:")
    other = tmp_path / "other.cookie"
    other.write_bytes(Cookie("10.0.0.1:3181", ("/j",), ("/l",)).encode())
    wrong = bkctl("-u", service_uri, "cookie", "create", BOOKIE, "--cookie-file", str(other))
    assert wrong.exit_code == 2 and wrong.stderr == (
        f"error: cookie file {other} is bookie 10.0.0.1:3181's, not {BOOKIE}'s\n"
    )
    assert CookieStore(cluster).list() == []


def test_generate_takes_the_directories_of_a_bookie_configuration(bkctl, cluster, service_uri, tmp_path):
    conf = tmp_path / "bk_server.conf"
    conf.write_text(
        f"metadataServiceUri={service_uri}\njournalDirectories=/a/journal\nledgerDirectories=/b/l,/c/l\n"
        "indexDirectories=/d/i,/e/i\n"
    )
    path = tmp_path / "c"
    result = bkctl("-c", str(conf), "cookie", "generate", BOOKIE, "--output-file", str(path), "-o", "json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["indexDirs"] == ["/d/i", "/e/i"]
    assert Cookie.decode(path.read_bytes()) == Cookie(
        BOOKIE, ("/a/journal",), ("/b/l", "/c/l"), read_instance_id(cluster), ("/d/i", "/e/i")
    )
