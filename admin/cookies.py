"""Cookie administration, as BookKeeper's ``cookie_*`` shell commands (tools/cli/commands/cookie/): read, create,
replace and delete a bookie's cookie in the metadata store, and generate a cookie file.

Where BookKeeper takes a file's bytes as they are, we parse it first (a cookie a bookie could not read would refuse
its every start) and require it to name the bookie it is written for; a replacement is a compare-and-set on the
version read, and a running bookie's cookie is not deleted (its next start would be refused, or worse, a bookie
with fresh disks would take its id).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from bookie.errors import InvalidArgument, MetadataVersionConflict
from bookie.meta.cookies import COOKIE_VERSION, Cookie, CookieStore
from bookie.meta.registration import require_not_registered
from bookie.meta.store import MetadataStore


@dataclass(frozen=True)
class StoredCookie:
    cookie: Cookie
    version: int  # the znode's version

    def doc(self) -> dict[str, object]:
        return {**cookie_doc(self.cookie), "znodeVersion": self.version}


def cookie_doc(cookie: Cookie) -> dict[str, object]:
    return {
        "bookieId": cookie.bookie_id,
        "layoutVersion": COOKIE_VERSION,
        "instanceId": cookie.instance_id,
        "journalDirs": list(cookie.journal_dirs),
        "ledgerDirs": list(cookie.ledger_dirs),
        "indexDirs": list(cookie.index_dirs) if cookie.index_dirs is not None else None,
    }


def read_cookie(store: MetadataStore, bookie_id: str) -> StoredCookie:
    cookie, version = CookieStore(store).read(bookie_id)
    return StoredCookie(cookie, version)


def load_cookie_file(path: str | Path, bookie_id: str) -> Cookie:
    """A cookie file (``cookie generate``'s, or a ``current/VERSION``), for ``bookie_id``: InvalidArgument otherwise."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise InvalidArgument(f"cookie file {path} cannot be read: {exc.strerror or exc}") from None
    try:
        cookie = Cookie.decode(data, str(path))
    except Exception as exc:  # noqa: BLE001  (CorruptData, or text_format's own errors on binary input)
        raise InvalidArgument(f"{path} is not a cookie: {exc}") from None
    if cookie.bookie_id != bookie_id:
        raise InvalidArgument(f"cookie file {path} is bookie {cookie.bookie_id}'s, not {bookie_id}'s")
    return cookie


def create_cookie(store: MetadataStore, cookie: Cookie) -> StoredCookie:
    try:
        version = CookieStore(store).write(cookie)
    except MetadataVersionConflict:
        raise InvalidArgument(f"bookie {cookie.bookie_id} already has a cookie: `cookie update` replaces it") from None
    return StoredCookie(cookie, version)


def update_cookie(store: MetadataStore, cookie: Cookie, expected: StoredCookie) -> StoredCookie:
    """Replace the cookie ``expected`` was read as; MetadataVersionConflict when it changed since."""
    version = CookieStore(store).write(cookie, version=expected.version)
    return StoredCookie(cookie, version)


def delete_cookie(store: MetadataStore, expected: StoredCookie) -> None:
    """Delete the cookie ``expected`` was read as (compare-and-set on its version), if its bookie is not running."""
    require_not_registered(store, expected.cookie.bookie_id, "delete its cookie")
    CookieStore(store).delete(expected.cookie.bookie_id, version=expected.version)


def generate_cookie(
    bookie_id: str,
    journal_dirs: list[str],
    ledger_dirs: list[str],
    index_dirs: list[str] | None,
    instance_id: str | None,
) -> Cookie:
    """GenerateCookieCommand: the cookie a bookie with these directories writes (Cookie.generateCookie)."""
    if not journal_dirs or not ledger_dirs:
        raise InvalidArgument("a cookie needs journal and ledger directories")
    return Cookie(
        bookie_id=bookie_id,
        journal_dirs=tuple(journal_dirs),
        ledger_dirs=tuple(ledger_dirs),
        instance_id=instance_id or None,
        index_dirs=tuple(index_dirs) if index_dirs else None,
    )
