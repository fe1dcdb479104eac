"""The cookie check at start-up (BookKeeper: bookie/LegacyCookieValidation.java): a bookie serves only its own cluster's
data.

The check only reads. The cookie of every directory and the one in ZooKeeper must match what this configuration and
cluster expect, compared as BookKeeper's LegacyCookieValidation compares them (Cookie.verify); any difference refuses
the start, naming it. Two cases write:

- a new bookie (no cookie anywhere) gets its cookie written by :func:`write_cookies` at the end of a successful
  start — after replay, after binding its ports — so that a first start failing on a late problem (a port in use, a
  bad journal) leaves nothing that would refuse the directories to the next start, perhaps with another port and so
  another bookie id. (BookKeeper also requires a new bookie's directories to be empty; ours may hold what such a
  failed first start left, so it does not.)
- with ``allowStorageExpansion=true``, ledger or index directories added to the configuration: the new ones must
  be empty and unknown to the cookie, the configured ones a superset of the cookie's; the cookie then lists them
  all, in ZooKeeper (compare-and-set on its version) and in every directory (LegacyCookieValidation.stampNewCookie).
  `bkctl bookie expand-storage` runs the same check on a stopped bookie (:func:`plan_expansion`, :func:`expand`),
  as BookKeeper's ``updatecookie -e`` does.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from bookie.errors import BKError, MetadataVersionConflict, NotFound
from bookie.meta.cookies import Cookie, CookieStore, read_local_cookie, remove_local_cookie, write_local_cookie
from bookie.meta.layout import read_instance_id
from bookie.meta.store import MetadataStore
from bookie.server.claim import LOCK_FILE
from bookie.server.config import BookieConfig

log = logging.getLogger(__name__)


class CookieMismatch(BKError):
    """This bookie's directories or identity do not match its cookie."""


@dataclass(frozen=True)
class CookieCheck:
    cookie: Cookie  # what this bookie's cookie is
    dirs: tuple[Path, ...]
    new: bool  # no cookie anywhere yet: write_cookies must write it
    expand_from: int | None = None  # directories added: write_cookies replaces the cookie at this znode version


def expected_cookie(config: BookieConfig, bookie_id: str, instance_id: str | None) -> Cookie:
    """The cookie this configuration gives (Cookie.generateCookie): directories as written in it."""
    return Cookie(
        bookie_id=bookie_id,
        journal_dirs=tuple(config.dirs("journalDirectories")),
        ledger_dirs=tuple(config.dirs("ledgerDirectories")),
        instance_id=instance_id,
        index_dirs=tuple(config.dirs("indexDirectories")) or None,
    )


def check_cookies(
    store: MetadataStore, bookie_id: str, config: BookieConfig, expansion: bool | None = None
) -> CookieCheck:
    """``expansion``: whether directories may be added (None: the configuration's allowStorageExpansion)."""
    dirs = tuple(config.all_dirs)
    expected = expected_cookie(config, bookie_id, read_instance_id(store))
    if expansion is None:
        expansion = config.allowStorageExpansion
    cookies = CookieStore(store)
    try:
        remote, version = cookies.read(bookie_id)
    except NotFound:
        remote, version = None, None
    local = {d: read_local_cookie(d) for d in dirs}
    if remote is None and not any(local.values()):
        return CookieCheck(expected, dirs, new=True)
    if remote is None:
        where = next(str(d) for d, c in local.items() if c)
        raise CookieMismatch(
            f"bookie {bookie_id}: {where} has a cookie but ZooKeeper has none at {cookies.path(bookie_id)}: "
            "these directories belong to another bookie or cluster"
        )
    if diff := expected.differences(remote, expansion):
        hint = (
            "; directories are added with allowStorageExpansion=true"
            if not expansion and not expected.differences(remote, expansion=True)
            else ""
        )
        raise CookieMismatch(f"bookie {bookie_id}: cookie in ZooKeeper does not match: {'; '.join(diff)}{hint}")
    for d, cookie in local.items():
        if cookie is not None and (diff := expected.differences(cookie, expansion)):
            raise CookieMismatch(f"bookie {bookie_id}: cookie of {d} does not match: {'; '.join(diff)}")
    missing = [d for d, cookie in local.items() if cookie is None]
    if not missing:
        return CookieCheck(expected, dirs, new=False)
    known = {*remote.journal_dirs, *remote.ledger_dirs, *remote.effective_index_dirs}
    for cookie in local.values():
        if cookie is not None:
            known |= {*cookie.ledger_dirs, *cookie.effective_index_dirs}
    if wiped := [d for d in missing if not expansion or str(d) in known]:
        added = str(wiped[0]) not in known
        raise CookieMismatch(
            f"bookie {bookie_id}: {wiped[0]} has no cookie but ZooKeeper has one: the directory is new or was wiped; "
            + ("to add a ledger or index directory, set allowStorageExpansion=true; " if added else "")
            + (
                "a first start cut short between writing its cookie to ZooKeeper and to its directories leaves this "
                "too (BookKeeper refuses it alike); "
                if len(missing) == len(dirs)
                else ""
            )
            + f"if on purpose, delete {cookies.path(bookie_id)} and start again"
        )
    if busy := [d for d in missing if _holds_files(d)]:
        raise CookieMismatch(
            f"bookie {bookie_id}: {busy[0]} is added to the bookie's directories but is not empty: "
            "storage expansion takes empty directories only"
        )
    log.info("bookie %s: directories added: %s", bookie_id, ", ".join(map(str, missing)))
    return CookieCheck(expected, dirs, new=False, expand_from=version)


@dataclass(frozen=True)
class Expansion:
    """What ``bookie expand-storage`` writes (BookKeeper's ``updatecookie -e``)."""

    cookie: Cookie  # the one the configuration gives, listing every directory
    version: int  # the znode version of the cookie in ZooKeeper, as read
    added: tuple[Path, ...]  # directories that had no cookie
    stamp: tuple[Path, ...]  # directories whose current/VERSION is not ``cookie``: written
    replace_stored: bool  # the cookie in ZooKeeper is not ``cookie``: replaced at ``version``

    @property
    def changes(self) -> bool:
        return bool(self.stamp) or self.replace_stored


def plan_expansion(store: MetadataStore, bookie_id: str, config: BookieConfig) -> Expansion:
    """The start-up check of a bookie with allowStorageExpansion=true, as AdminCommand.expandStorage runs it for a
    stopped bookie: CookieMismatch when a directory's cookie or the stored one is not a subset of what the
    configuration gives (another bookie id or instance, other journal directories, a ledger or index directory
    dropped), when a directory the cookie knows lost its cookie, or when a new one is not empty; NotFound when
    ZooKeeper has no cookie for the bookie (its first start writes one). Nothing to write when every cookie already
    is the configuration's. Where BookKeeper writes nothing unless a directory lacks its cookie, this also finishes
    an expansion cut short between stamping the directories and replacing the stored cookie."""
    cookies = CookieStore(store)
    try:
        stored, version = cookies.read(bookie_id)  # before the check: the replacement is a CAS on what was checked
    except NotFound:
        raise NotFound(
            f"bookie {bookie_id} has no cookie at {cookies.path(bookie_id)}: nothing to expand "
            "(a bookie's first start writes its cookie with every configured directory)"
        ) from None
    check = check_cookies(store, bookie_id, config, expansion=True)
    local = {d: read_local_cookie(d) for d in check.dirs}
    return Expansion(
        cookie=check.cookie,
        version=version,
        added=tuple(d for d, c in local.items() if c is None),
        stamp=tuple(d for d, c in local.items() if c != check.cookie),
        replace_stored=stored != check.cookie,
    )


def expand(store: MetadataStore, expansion: Expansion) -> int:
    """Write the cookie to the directories that lack it, then to ZooKeeper at the version checked (as
    LegacyCookieValidation.stampNewCookie); the stored cookie's znode version afterwards."""
    for d in expansion.stamp:
        write_local_cookie(d, expansion.cookie)
    return _replace(store, expansion.cookie, expansion.version) if expansion.replace_stored else expansion.version


def _replace(store: MetadataStore, cookie: Cookie, version: int) -> int:
    """Replace the stored cookie at ``version`` (MetadataVersionConflict when it changed since); its new version."""
    cookies = CookieStore(store)
    try:
        return cookies.write(cookie, version=version)
    except MetadataVersionConflict:
        raise MetadataVersionConflict(
            f"bookie {cookie.bookie_id}: its cookie at {cookies.path(cookie.bookie_id)} changed since it was checked"
        ) from None


def _holds_files(directory: Path) -> bool:
    """Whether ``<directory>/current`` holds anything but this bookie's own lock."""
    current = directory / "current"
    return current.is_dir() and any(p.name != LOCK_FILE for p in current.iterdir())


def write_cookies(store: MetadataStore, check: CookieCheck) -> None:
    """Write a new bookie's cookie: to ZooKeeper first (which fails if another bookie took this id since the check),
    then to each directory; or an expanded one, to each directory, then to ZooKeeper at the version checked. All or
    nothing for a new bookie: what was written is removed again when a step fails."""
    cookies = CookieStore(store)
    if check.expand_from is not None:
        for d in check.dirs:
            write_local_cookie(d, check.cookie)
        try:
            _replace(store, check.cookie, check.expand_from)
        except MetadataVersionConflict as exc:
            raise CookieMismatch(str(exc)) from None
        return
    if not check.new:
        return
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
