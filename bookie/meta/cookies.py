"""Cookies: which cluster and directories a bookie's disks belong to (BookKeeper: bookie/Cookie.java).

Stored in ``<root>/cookies/<bookieId>`` and ``current/VERSION`` of every journal, ledger and index directory as
``5\\n`` followed by the protobuf TextFormat of ``CookieFormat``: ``journalDir`` the journal directories joined by
commas, ``ledgerDirs`` and ``indexDirs`` a count then the directories, tab-separated (``3\\t/a\\t/b\\t/c``), each as
written in the configuration (Cookie.generateCookie); ``indexDirs`` only when ``indexDirectories`` is configured.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from google.protobuf import text_format
from kazoo.exceptions import NodeExistsError

from bookie._proto.data_formats_pb2 import CookieFormat
from bookie.errors import CorruptData, MetadataVersionConflict, NotFound
from bookie.files import private_dirs, write_private
from bookie.meta.store import MetadataStore, zk_errors

COOKIE_VERSION = 5
VERSION_FILE = "VERSION"


def _dirs(dirs: tuple[str, ...]) -> str:
    return "\t".join([str(len(dirs)), *dirs])


def _undirs(text: str) -> tuple[str, ...]:
    parts = text.split("\t")
    return tuple(parts[1:]) if parts and parts[0].isdigit() else tuple(parts)


@dataclass(frozen=True)
class Cookie:
    bookie_id: str
    journal_dirs: tuple[str, ...]
    ledger_dirs: tuple[str, ...]
    instance_id: str | None = None
    index_dirs: tuple[str, ...] | None = None

    def encode(self) -> bytes:
        msg = CookieFormat(
            bookieHost=self.bookie_id, journalDir=",".join(self.journal_dirs), ledgerDirs=_dirs(self.ledger_dirs)
        )
        if self.instance_id is not None:
            msg.instanceId = self.instance_id
        if self.index_dirs is not None:
            msg.indexDirs = _dirs(self.index_dirs)
        return f"{COOKIE_VERSION}\n{text_format.MessageToString(msg)}".encode()

    @classmethod
    def decode(cls, data: bytes, where: str = "cookie") -> Cookie:
        text = data.decode("utf-8", "replace")
        version, _, body = text.partition("\n")
        if version.strip() != str(COOKIE_VERSION):
            raise CorruptData(f"{where}: cookie layout version {version.strip()!r} is not supported (expected 5)")
        msg = CookieFormat()
        try:
            text_format.Parse(body, msg)
        except text_format.ParseError as exc:
            raise CorruptData(f"{where}: malformed cookie ({exc})") from None
        return cls(
            bookie_id=msg.bookieHost,
            journal_dirs=tuple(d for d in msg.journalDir.split(",") if d),
            ledger_dirs=_undirs(msg.ledgerDirs),
            instance_id=msg.instanceId or None,  # Java's parse reads an empty one as none
            index_dirs=_undirs(msg.indexDirs) if msg.indexDirs else None,
        )

    @property
    def effective_index_dirs(self) -> tuple[str, ...]:
        """The index directories: the ledger directories when the cookie names none (BookKeeper's verifyIndexDirs)."""
        return self.index_dirs or self.ledger_dirs

    def differences(self, other: Cookie, expansion: bool = False) -> list[str]:
        """What differs from ``other``, in words, empty when they match — as BookKeeper's Cookie.verify compares
        them (``self`` from the configuration, ``other`` as stored). With ``expansion`` (allowStorageExpansion),
        ledger and index directories may be a superset of the stored ones (Cookie.verifyIsSuperSet)."""

        def dirs_differ(mine: tuple[str, ...], theirs: tuple[str, ...]) -> bool:
            return not set(mine) >= set(theirs) if expansion else mine != theirs

        found = []
        if self.bookie_id != other.bookie_id:
            found.append(f"bookie id {self.bookie_id!r} != {other.bookie_id!r}")
        if ",".join(self.journal_dirs) != ",".join(other.journal_dirs):
            found.append(f"journal directories {self.journal_dirs!r} != {other.journal_dirs!r}")
        if dirs_differ(self.ledger_dirs, other.ledger_dirs):
            found.append(f"ledger directories {self.ledger_dirs!r} != {other.ledger_dirs!r}")
        if (self.index_dirs or other.index_dirs) and dirs_differ(self.effective_index_dirs, other.effective_index_dirs):
            found.append(f"index directories {self.effective_index_dirs!r} != {other.effective_index_dirs!r}")
        if self.instance_id != other.instance_id:
            found.append(f"cluster instance id {self.instance_id!r} != {other.instance_id!r}")
        return found


class CookieStore:
    """The cookies in ZooKeeper, with their znode versions for compare-and-set."""

    def __init__(self, store: MetadataStore):
        self.store = store

    def path(self, bookie_id: str) -> str:
        return self.store.path("cookies", bookie_id)

    def read(self, bookie_id: str) -> tuple[Cookie, int]:
        path = self.path(bookie_id)
        try:
            data, stat = self.store.get(path)
        except NotFound:
            raise NotFound(f"bookie {bookie_id} has no cookie") from None
        return Cookie.decode(data, path), stat.version

    def write(self, cookie: Cookie, version: int | None = None) -> int:
        """Create the cookie (``version=None``) or replace it at ``version``; return the new version."""
        path = self.path(cookie.bookie_id)
        with zk_errors(f"write cookie of {cookie.bookie_id}"):
            if version is None:
                try:
                    self.store.zk.create(path, cookie.encode(), makepath=True)
                except NodeExistsError:
                    raise MetadataVersionConflict(f"bookie {cookie.bookie_id} already has a cookie") from None
                return 0
            return self.store.zk.set(path, cookie.encode(), version=version).version

    def delete(self, bookie_id: str, version: int = -1) -> None:
        with zk_errors(f"delete cookie of {bookie_id}"):
            self.store.zk.delete(self.path(bookie_id), version=version)

    def list(self) -> list[str]:
        return sorted(self.store.children(self.store.path("cookies")))


def read_local_cookie(directory: str | os.PathLike[str]) -> Cookie | None:
    """The cookie in ``<directory>/current/VERSION``, or None when the directory has none."""
    path = Path(directory) / "current" / VERSION_FILE
    try:
        return Cookie.decode(path.read_bytes(), str(path))
    except FileNotFoundError:
        return None


def write_local_cookie(directory: str | os.PathLike[str], cookie: Cookie) -> None:
    """Write ``<directory>/current/VERSION`` atomically (temp file, fsync, rename)."""
    current = private_dirs(Path(directory) / "current")
    write_private(current / VERSION_FILE, cookie.encode(), sync=True)


def remove_local_cookie(directory: str | os.PathLike[str]) -> None:
    """Remove ``<directory>/current/VERSION`` (a start that failed while writing its cookies)."""
    (Path(directory) / "current" / VERSION_FILE).unlink(missing_ok=True)
