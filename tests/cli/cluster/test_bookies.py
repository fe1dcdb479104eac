import json

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
        "BOOKIE           STATE      RACK            ENDPOINTS",
        "127.0.0.1:3181   writable   /rack-1         bookie-rpc://127.0.0.1:3181",
        "127.0.0.1:3182   readonly   /default-rack   bookie-rpc://127.0.0.1:3182",
    ]


def test_list_json(bkctl, service_uri, cluster):
    register(cluster)
    result = bkctl("-u", service_uri, "bookies", "list", "--all", "-o", "json")
    assert json.loads(result.stdout) == [
        {
            "bookieId": "127.0.0.1:3181",
            "state": "writable",
            "rack": "/rack-1",
            "endpoints": [
                {"id": "bookie", "host": "127.0.0.1", "port": 3181, "protocol": "bookie-rpc", "extensions": []}
            ],
        },
        {
            "bookieId": "127.0.0.1:3182",
            "state": "readonly",
            "rack": "/default-rack",
            "endpoints": [
                {"id": "bookie", "host": "127.0.0.1", "port": 3182, "protocol": "bookie-rpc", "extensions": []}
            ],
        },
    ]


def test_no_bookies(bkctl, service_uri, cluster):
    result = bkctl("-u", service_uri, "bookies", "list")
    assert (result.exit_code, result.stdout, result.stderr) == (0, "", "no bookies registered\n")
    assert bkctl("-u", service_uri, "bookies", "list", "-o", "json").stdout == "[]\n"
