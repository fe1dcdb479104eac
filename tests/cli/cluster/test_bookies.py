import json

from bkctl.terminal import iso_time
from bookie.meta.registration import READONLY, BookieRegistry, BookieServiceInfo


def register(cluster):
    registry = BookieRegistry(cluster)
    registry.register("127.0.0.1:3181", BookieServiceInfo.for_bookie("127.0.0.1", 3181, rack="/rack-1"))
    registry.register("127.0.0.1:3182", BookieServiceInfo.for_bookie("127.0.0.1", 3182), state=READONLY)


def test_list_writable_readonly_all(bkctl, service_uri, cluster):
    register(cluster)
    assert bkctl("-u", service_uri, "bookies", "list").stdout == (
        "BOOKIE           STATE      RACK\n127.0.0.1:3181   writable   /rack-1\n"
    )
    assert bkctl("-u", service_uri, "bookies", "list", "--readonly").stdout == (
        "BOOKIE           STATE      RACK\n127.0.0.1:3182   readonly   /default-rack\n"
    )
    wide = bkctl("-u", service_uri, "bookies", "list", "--all", "-o", "wide").stdout.splitlines()
    assert wide == [
        "BOOKIE           STATE      RACK            REASON    ENDPOINTS",
        "127.0.0.1:3181   writable   /rack-1         <none>    bookie-rpc://127.0.0.1:3181",
        "127.0.0.1:3182   readonly   /default-rack   unknown   bookie-rpc://127.0.0.1:3182",
    ]


def test_list_json(bkctl, service_uri, cluster):
    register(cluster)
    result = bkctl("-u", service_uri, "bookies", "list", "--all", "-o", "json")
    assert json.loads(result.stdout) == [
        {
            "bookieId": "127.0.0.1:3181",
            "state": "writable",
            "rack": "/rack-1",
            "readOnlyReasons": [],
            "endpoints": [
                {"id": "bookie", "host": "127.0.0.1", "port": 3181, "protocol": "bookie-rpc", "extensions": []}
            ],
        },
        {
            "bookieId": "127.0.0.1:3182",
            "state": "readonly",
            "rack": "/default-rack",
            "readOnlyReasons": None,
            "endpoints": [
                {"id": "bookie", "host": "127.0.0.1", "port": 3182, "protocol": "bookie-rpc", "extensions": []}
            ],
        },
    ]


def test_no_bookies(bkctl, service_uri, cluster):
    result = bkctl("-u", service_uri, "bookies", "list")
    assert (result.exit_code, result.stdout, result.stderr) == (0, "", "no bookies registered\n")
    assert bkctl("-u", service_uri, "bookies", "list", "-o", "json").stdout == "[]\n"


def test_all_adds_the_missing_bookies(bkctl, service_uri, cluster):
    """One with a cookie and one only a ledger names, neither registered: a row each, after the registered ones."""
    from bookie.meta.cookies import Cookie, CookieStore
    from bookie.meta.ledger_manager import LedgerManager
    from bookie.meta.ledger_metadata import LedgerMetadata, LedgerState, Segment

    register(cluster)
    CookieStore(cluster).write(Cookie("127.0.0.1:3183", ("/j",), ("/l",)))
    cookie_ctime = cluster.get(CookieStore(cluster).path("127.0.0.1:3183"))[1].ctime
    ensemble = ("127.0.0.1:3181", "127.0.0.1:3184")
    md = LedgerMetadata(2, 2, 2, (Segment(0, ensemble),), state=LedgerState.CLOSED, last_entry_id=-1, password=b"")
    LedgerManager(cluster).create(7, md.with_changes(ctime=1795608000000))
    listed = json.loads(bkctl("-u", service_uri, "bookies", "list", "--all", "-o", "json").stdout)
    assert [(d["bookieId"], d["state"]) for d in listed[:2]] == [
        ("127.0.0.1:3181", "writable"),
        ("127.0.0.1:3182", "readonly"),
    ]
    assert listed[2:] == [
        {
            "bookieId": "127.0.0.1:3183",
            "state": "missing",
            "rack": None,
            "readOnlyReasons": [],
            "endpoints": [],
            "cookieCreateTime": cookie_ctime,
            "cookieCreateTimeIso": iso_time(cookie_ctime),
            "ledgers": 0,
            "lastKnownAliveTime": cookie_ctime,
            "lastKnownAliveTimeIso": iso_time(cookie_ctime),
        },
        {
            "bookieId": "127.0.0.1:3184",
            "state": "missing",
            "rack": None,
            "readOnlyReasons": [],
            "endpoints": [],
            "cookieCreateTime": None,
            "cookieCreateTimeIso": None,
            "ledgers": 1,
            "lastKnownAliveTime": 1795608000000,
            "lastKnownAliveTimeIso": "2026-11-25T12:00:00.000Z",
        },
    ]
    assert bkctl("-u", service_uri, "bookies", "list", "--all").stdout.splitlines() == [
        "BOOKIE           STATE      RACK            MISSING AFTER",
        "127.0.0.1:3181   writable   /rack-1         <none>",
        "127.0.0.1:3182   readonly   /default-rack   <none>",
        f"127.0.0.1:3183   missing    <none>          {iso_time(cookie_ctime)}",
        "127.0.0.1:3184   missing    <none>          2026-11-25T12:00:00.000Z",
    ]
    assert "missing" not in bkctl("-u", service_uri, "bookies", "list").stdout
