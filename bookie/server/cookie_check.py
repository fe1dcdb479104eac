"""The cookie check at start-up (BookKeeper: bookie/LegacyCookieValidation.java): a bookie serves only its own cluster's
data.

The check only reads. The cookie of every directory and the one in ZooKeeper must equal what this configuration
and cluster expect; any difference refuses the start, naming it. A new bookie (no cookie anywhere) gets its cookie
written by :func:`write_cookies` at the end of a successful start — after replay, after binding its ports — so
that a first start failing on a late problem (a port in use, a bad journal) leaves nothing that would refuse the
directories to the next start, perhaps with another port and so another bookie id.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from bookie.errors import BKError, MetadataVersionConflict, NotFound
from bookie.meta.cookies import Cookie, CookieStore, read_local_cookie, remove_local_cookie, write_local_cookie
from bookie.meta.layout import read_instance_id
from bookie.meta.store import MetadataStore

log = logging.getLogger(__name__)


class CookieMismatch(BKError):
    """This bookie's directories or identity do not match its cookie."""


@dataclass(frozen=True)
class CookieCheck:
    cookie: Cookie  # what this bookie's cookie is
    dirs: tuple[Path, ...]
    new: bool  # no cookie anywhere yet: write_cookies must write it


def check_cookies(store: MetadataStore, bookie_id: str, journal: Path, ledger: Path, index: Path) -> CookieCheck:
    dirs = tuple(dict.fromkeys([journal, ledger, index]))
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
        return CookieCheck(expected, dirs, new=True)
    if remote is None:
        where = next(str(d) for d, c in local.items() if c)
        raise CookieMismatch(
            f"bookie {bookie_id}: {where} has a cookie but ZooKeeper has none at {cookies.path(bookie_id)}: "
            "these directories belong to another bookie or cluster"
        )
    present: dict[Path, Cookie] = {}
    for d, cookie in local.items():
        if cookie is None:
            raise CookieMismatch(
                f"bookie {bookie_id}: {d} has no cookie but ZooKeeper has one: the directory is new or was wiped; "
                f"if on purpose, delete {cookies.path(bookie_id)} and start again"
            )
        present[d] = cookie
    for d, cookie in present.items():
        if diff := cookie.differences(expected):
            raise CookieMismatch(f"bookie {bookie_id}: cookie of {d} does not match: {'; '.join(diff)}")
    if diff := remote.differences(expected):
        raise CookieMismatch(f"bookie {bookie_id}: cookie in ZooKeeper does not match: {'; '.join(diff)}")
    return CookieCheck(expected, dirs, new=False)


def write_cookies(store: MetadataStore, check: CookieCheck) -> None:
    """Write a new bookie's cookie: to ZooKeeper first (which fails if another bookie took this id since the
    check), then to each directory. All or nothing: what was written is removed again when a step fails."""
    if not check.new:
        return
    cookies = CookieStore(store)
    try:
        cookies.write(check.cookie)
    except MetadataVersionConflict:
        raise CookieMismatch(
            f"bookie {check.cookie.bookie_id}: another bookie wrote a cookie for this id at "
            f"{cookies.path(check.cookie.bookie_id)} while this one started"
        ) from None
    written: list[Path] = []
    try:
        for d in check.dirs:
            write_local_cookie(d, check.cookie)
            written.append(d)
    except BaseException:
        for d in written:
            remove_local_cookie(d)
        try:
            cookies.delete(check.cookie.bookie_id)
        except BKError:
            log.exception("could not remove the cookie of %s again", check.cookie.bookie_id)
        raise
