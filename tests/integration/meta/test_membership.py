"""Missing bookies: known to the cluster (a cookie, or a ledger's ensemble), and not registered."""

from bookie.meta.cookies import Cookie, CookieStore
from bookie.meta.ledger_manager import LedgerManager
from bookie.meta.ledger_metadata import LedgerMetadata, LedgerState, Segment
from bookie.meta.membership import EnsembleNames, MissingBookie, missing_bookies
from bookie.meta.registration import READONLY, BookieRegistry, BookieServiceInfo


def ledger(ctime: int, *segments: tuple[str, ...]) -> LedgerMetadata:
    return LedgerMetadata(
        2,
        2,
        2,
        tuple(Segment(10 * i, bookies) for i, bookies in enumerate(segments)),
        state=LedgerState.CLOSED,
        last_entry_id=-1,
        password=b"",
        ctime=ctime,
    )


def test_cookie_holders_and_ensemble_members_that_are_not_registered_are_missing(cluster):
    cookies, registry = CookieStore(cluster), BookieRegistry(cluster)
    for bookie_id in ("up:1", "ro:1", "dead:1"):
        cookies.write(Cookie(bookie_id, ("/j",), ("/l",)))
    registry.register("up:1", BookieServiceInfo.for_bookie("up", 1))
    registry.register("ro:1", BookieServiceInfo.for_bookie("ro", 1), state=READONLY)
    ledgers = LedgerManager(cluster)
    ledgers.create(1, ledger(1000, ("up:1", "dead:1")))
    ledgers.create(2, ledger(2000, ("up:1", "ro:1"), ("up:1", "nocookie:1")))  # placed on nocookie:1 later
    ledgers.create(3, ledger(3000, ("dead:1", "ro:1")))
    dead_cookie = cluster.get(cookies.path("dead:1"))[1].ctime

    assert missing_bookies(cluster, EnsembleNames.of_all_ledgers(cluster)) == [
        MissingBookie("dead:1", dead_cookie, 2, 3000),
        MissingBookie("nocookie:1", None, 1, None),  # never in a first ensemble: nothing says when it was alive
    ]
    assert [m.last_known_alive for m in missing_bookies(cluster, EnsembleNames.of_all_ledgers(cluster))] == [
        max(dead_cookie, 3000),
        None,
    ]
    assert missing_bookies(cluster) == [MissingBookie("dead:1", dead_cookie, None, None)]  # cookies only
