"""The cookie check at start-up (spec/zookeeper-layout.md): a bookie serves only its own cluster's data.

A new bookie (no cookie anywhere) writes its cookie to ZooKeeper, then to each directory. Otherwise the cookie of
every directory and the one in ZooKeeper must equal what this configuration and cluster expect; any difference
refuses the start, naming it.
"""

from __future__ import annotations

from pathlib import Path

from bookie.errors import BKError, NotFound
from bookie.meta.cookies import Cookie, CookieStore, read_local_cookie, write_local_cookie
from bookie.meta.layout import read_instance_id
from bookie.meta.store import MetadataStore


class CookieMismatch(BKError):
    """This bookie's directories or identity do not match its cookie."""


def check_cookies(store: MetadataStore, bookie_id: str, journal: Path, ledger: Path, index: Path) -> Cookie:
    dirs = list(dict.fromkeys([journal, ledger, index]))
    expected = Cookie(
        bookie_id=bookie_id,
        journal_dirs=(str(journal),),
        ledger_dirs=(str(ledger),),
        instance_id=read_instance_id(store),
        index_dirs=(str(index),) if index != ledger else None,
    )
    cookies = CookieStore(store)
    try:
        remote, _ = cookies.read(bookie_id)
    except NotFound:
        remote = None
    local = {d: read_local_cookie(d) for d in dirs}
    if remote is None and not any(local.values()):
        cookies.write(expected)
        for d in dirs:
            write_local_cookie(d, expected)
        return expected
    if remote is None:
        where = next(str(d) for d, c in local.items() if c)
        raise CookieMismatch(
            f"bookie {bookie_id}: {where} has a cookie but ZooKeeper has none at {cookies.path(bookie_id)}: "
            "these directories belong to another bookie or cluster"
        )
    for d, cookie in local.items():
        if cookie is None:
            raise CookieMismatch(
                f"bookie {bookie_id}: {d} has no cookie but ZooKeeper has one: the directory is new or was wiped; "
                f"if on purpose, delete {cookies.path(bookie_id)} and start again"
            )
    for d, cookie in local.items():
        if diff := cookie.differences(expected):
            raise CookieMismatch(f"bookie {bookie_id}: cookie of {d} does not match: {'; '.join(diff)}")
    if diff := remote.differences(expected):
        raise CookieMismatch(f"bookie {bookie_id}: cookie in ZooKeeper does not match: {'; '.join(diff)}")
    return expected
