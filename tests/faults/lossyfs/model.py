"""A disk behind a page cache, in memory: what the filesystem in this package serves, and what survives a power cut.

Every write lands in dirty pages held here; only a sync (fsync, fdatasync, a write through an O_SYNC/O_DSYNC
handle) copies a file's dirty pages to the *store*. Names work the same way: create, rename, unlink and mkdir change
the live namespace at once and the durable one only when their directory is fsynced. The store is a host directory:
``inodes/<n>`` holds each file's synced bytes and ``namespace.json`` the synced directory entries. A power cut is
the end of this process (nothing it holds survives); ``cut(tear=...)`` first lets the last unsynced write of each
file reach the store torn at a 512-byte or 4 KiB boundary, as a disk losing power in the middle of a write does.
A new process over the same store sees the disk as it comes back.

This is POSIX's worst case, harsher than ext4's ordered mode (there ``fsync`` of a new file usually persists its
name too); a bookie that survives it survives every Linux filesystem. Directories are inodes like files: a new
directory and everything in it is gone unless its own name was synced in its parent. Times and owners are not
kept durably (the store file's own mtime stands in); hard links and symlinks are refused (EPERM): bookies use
neither.
"""

from __future__ import annotations

import errno
import fnmatch
import json
import os
import random
import stat
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

PAGE = 4096
HIDDEN = ".fuse_hidden"
ROOT = 1


def _error(code: int) -> OSError:
    return OSError(code, os.strerror(code))


@dataclass
class Inode:
    ino: int
    mode: int  # with the S_IFDIR/S_IFREG bits
    entries: dict[str, int] = field(default_factory=dict)  # directories: the live names
    durable_entries: dict[str, int] = field(default_factory=dict)  # directories: the names as the store has them
    size: int = 0  # files: live size
    valid: int = 0  # files: bytes of the store file that still show through (a truncate since the sync hides more)
    pages: dict[int, bytearray] = field(default_factory=dict)  # files: dirty pages, by page number
    last_write: tuple[int, int, bytes, int] | None = None  # files: (offset, length, bytes it overwrote, size before)
    dirty_since: float | None = None
    links: int = 0  # live names
    opened: int = 0  # open handles
    mtime: float = field(default_factory=time.time)

    @property
    def is_dir(self) -> bool:
        return stat.S_ISDIR(self.mode)

    @property
    def dirty(self) -> bool:
        return bool(self.pages) or self.valid != self.size


@dataclass(frozen=True)
class Sync:
    """One sync that made something durable, in the order they completed."""

    number: int
    op: str  # fsync, fdatasync, fsyncdir, o_sync
    path: str
    at: float  # time.monotonic() when it completed: compare with when a client saw an acknowledgement


@dataclass
class Injection:
    """A failing or slow disk: operations ``op`` (read, write, sync, create) on paths matching ``pattern`` (fnmatch,
    on the live path) wait ``delay`` seconds, then fail with ``error`` (an errno; None: they succeed), ``count``
    times (None: until cleared), after letting the first ``skip`` through. ``short``: a write takes only the first
    half of its bytes and says so, as a write that fills the disk does (the caller must write the rest)."""

    op: str
    pattern: str = "*"
    error: int | None = errno.EIO
    delay: float = 0.0
    count: int | None = None
    short: bool = False
    skip: int = 0
    hits: int = 0


class Disk:
    """The live filesystem over a store directory. Thread-safe: every operation holds one lock."""

    def __init__(self, store: str | os.PathLike, on_sync=None):
        self.store = Path(store)
        (self.store / "inodes").mkdir(parents=True, exist_ok=True)
        self.lock = threading.RLock()
        self.inodes: dict[int, Inode] = {}
        self.handles: dict[int, tuple[int, bool]] = {}  # fh -> (ino, synchronous)
        # libfuse renames a file unlinked while open to .fuse_hidden*, to keep a path for the calls made through its
        # descriptor; here that rename is the unlink, and the name lives only in this table, outside every directory
        # (else the directory could not be removed, and a cut would bring the file back under that name)
        self.hidden: dict[str, int] = {}
        self.next_fh = 1
        self.syncs: list[Sync] = []
        self.on_sync = on_sync  # called with the Sync (and the lock held) after each one is durable
        self.injections: list[Injection] = []
        self.usable: int | None = None  # free bytes statfs reports (None: the store's disk's own)
        self._load()

    # ---- the store ----
    def _load(self) -> None:
        path = self.store / "namespace.json"
        saved = json.loads(path.read_text()) if path.exists() else {"next": ROOT + 1, "inodes": {}}
        self.next_ino = saved["next"]
        kinds = {int(k): v for k, v in saved["inodes"].items()}
        kinds.setdefault(ROOT, {"mode": stat.S_IFDIR | 0o755, "entries": {}})
        reachable, todo = set(), [ROOT]
        while todo:  # a directory whose own name never became durable is gone, with all it held
            ino = todo.pop()
            if ino in reachable or ino not in kinds:
                continue
            reachable.add(ino)
            todo.extend(kinds[ino].get("entries", {}).values())
        for ino in reachable:
            saved_inode = kinds[ino]
            inode = Inode(ino, saved_inode["mode"])
            if inode.is_dir:
                entries = {n: i for n, i in saved_inode["entries"].items() if i in reachable}
                inode.entries, inode.durable_entries = dict(entries), dict(entries)
            else:
                content = self._content_path(ino)
                inode.size = inode.valid = content.stat().st_size if content.exists() else 0
                inode.mtime = content.stat().st_mtime if content.exists() else time.time()
            self.inodes[ino] = inode
        for inode in self.inodes.values():
            for child in inode.entries.values():
                self.inodes[child].links += 1
        self.inodes[ROOT].links = 1
        for content in (self.store / "inodes").iterdir():  # synced files that never got a durable name
            if int(content.name) not in reachable:
                content.unlink()

    def _content_path(self, ino: int) -> Path:
        return self.store / "inodes" / str(ino)

    def _save_namespace(self) -> None:
        saved = {
            "next": self.next_ino,
            "inodes": {
                ino: {"mode": inode.mode, "entries": inode.durable_entries} if inode.is_dir else {"mode": inode.mode}
                for ino, inode in self.inodes.items()
                if inode.is_dir or self._content_path(ino).exists()
            },
        }
        tmp = self.store / "namespace.json.tmp"
        tmp.write_text(json.dumps(saved))
        os.replace(tmp, self.store / "namespace.json")

    def _write_back(self, inode: Inode) -> None:
        """The file's dirty pages and size to the store."""
        fd = os.open(self._content_path(inode.ino), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            os.ftruncate(fd, inode.valid)
            for number, page in sorted(inode.pages.items()):
                start = number * PAGE
                if start < inode.size:
                    os.pwrite(fd, page[: inode.size - start], start)
            os.ftruncate(fd, inode.size)
        finally:
            os.close(fd)
        inode.pages.clear()
        inode.valid = inode.size
        inode.last_write = None
        inode.dirty_since = None

    # ---- faults ----
    def inject(self, injection: Injection) -> None:
        with self.lock:
            self.injections.append(injection)

    def clear(self) -> list[Injection]:
        """No more injected faults; returns those there were (with how often each hit)."""
        with self.lock:
            cleared, self.injections = self.injections, []
            return cleared

    def _fault(self, op: str, path: str | None = None, ino: int | None = None) -> Injection | None:
        """Wait and fail as an injected fault says. Called before taking the lock: a slow operation holds up only its
        caller (as a disk's queue would, other requests keep their place)."""
        if not self.injections:
            return None
        with self.lock:
            if path is None:
                path = self.path_of(ino) if ino is not None else "/"
            hit = next((i for i in self.injections if i.op == op and fnmatch.fnmatch(path, i.pattern)), None)
            if hit is None:
                return None
            if hit.skip > 0:
                hit.skip -= 1
                return None
            hit.hits += 1
            if hit.count is not None:
                hit.count -= 1
                if hit.count <= 0:
                    self.injections.remove(hit)
        if hit.delay:
            time.sleep(hit.delay)
        if hit.error is not None:
            raise _error(hit.error)
        return hit

    def _synced(self, op: str, path: str) -> Sync:
        sync = Sync(len(self.syncs) + 1, op, path, time.monotonic())
        self.syncs.append(sync)
        if self.on_sync:
            self.on_sync(sync)
        return sync

    # ---- names ----
    def lookup(self, path: str) -> Inode:
        if path in self.hidden:
            return self.inodes[self.hidden[path]]
        inode = self.inodes[ROOT]
        for part in path.strip("/").split("/"):
            if not part:
                continue
            if not inode.is_dir:
                raise _error(errno.ENOTDIR)
            child = inode.entries.get(part)
            if child is None:
                raise _error(errno.ENOENT)
            inode = self.inodes[child]
        return inode

    def _parent(self, path: str) -> tuple[Inode, str]:
        head, _, name = path.rstrip("/").rpartition("/")
        parent = self.lookup(head or "/")
        if not parent.is_dir:
            raise _error(errno.ENOTDIR)
        if not name or name in (".", ".."):
            raise _error(errno.EINVAL)
        return parent, name

    def _new(self, parent: Inode, name: str, mode: int) -> Inode:
        if name in parent.entries:
            raise _error(errno.EEXIST)
        inode = Inode(self.next_ino, mode, links=1)
        self.next_ino += 1
        self.inodes[inode.ino] = inode
        parent.entries[name] = inode.ino
        parent.mtime = time.time()
        return inode

    def mkdir(self, path: str, mode: int) -> None:
        self._fault("create", path)
        with self.lock:
            parent, name = self._parent(path)
            self._new(parent, name, stat.S_IFDIR | (mode & 0o7777))

    def create(self, path: str, mode: int, flags: int) -> int:
        self._fault("create", path)
        with self.lock:
            parent, name = self._parent(path)
            if name in parent.entries:
                if flags & os.O_EXCL:
                    raise _error(errno.EEXIST)
                return self.open(path, flags)
            inode = self._new(parent, name, stat.S_IFREG | (mode & 0o7777))
            return self._handle(inode, flags)

    def _drop_link(self, inode: Inode) -> None:
        inode.links -= 1
        self._forget_if_unused(inode)

    def _forget_if_unused(self, inode: Inode) -> None:
        if inode.links <= 0 and inode.opened <= 0 and not inode.is_dir:
            inode.pages.clear()  # nothing can reach its unsynced bytes any more
            inode.last_write = None

    def unlink(self, path: str) -> None:
        with self.lock:
            if path in self.hidden:  # libfuse, on the last close of a file unlinked while open
                self._forget_if_unused(self.inodes[self.hidden.pop(path)])
                return
            parent, name = self._parent(path)
            inode = self.lookup(path)
            if inode.is_dir:
                raise _error(errno.EISDIR)
            del parent.entries[name]
            parent.mtime = time.time()
            self._drop_link(inode)

    def rmdir(self, path: str) -> None:
        with self.lock:
            parent, name = self._parent(path)
            inode = self.lookup(path)
            if not inode.is_dir:
                raise _error(errno.ENOTDIR)
            if inode.entries:
                raise _error(errno.ENOTEMPTY)
            del parent.entries[name]
            parent.mtime = time.time()
            inode.links = 0

    def rename(self, old: str, new: str) -> None:
        with self.lock:
            old_parent, old_name = self._parent(old)
            new_parent, new_name = self._parent(new)
            inode = self.lookup(old)
            if new_name.startswith(HIDDEN):
                del old_parent.entries[old_name]
                old_parent.mtime = time.time()
                self.hidden[new] = inode.ino
                self._drop_link(inode)
                return
            replaced = new_parent.entries.get(new_name)
            if replaced == inode.ino:
                return
            if replaced is not None:
                target = self.inodes[replaced]
                if target.is_dir != inode.is_dir:
                    raise _error(errno.EISDIR if target.is_dir else errno.ENOTDIR)
                if target.is_dir and target.entries:
                    raise _error(errno.ENOTEMPTY)
            del old_parent.entries[old_name]
            new_parent.entries[new_name] = inode.ino
            old_parent.mtime = new_parent.mtime = time.time()
            if replaced is not None:
                self._drop_link(self.inodes[replaced])

    def chmod(self, path: str, mode: int) -> None:
        with self.lock:
            inode = self.lookup(path)
            inode.mode = (inode.mode & ~0o7777) | (mode & 0o7777)

    def listdir(self, path: str) -> list[str]:
        with self.lock:
            inode = self.lookup(path)
            if not inode.is_dir:
                raise _error(errno.ENOTDIR)
            return list(inode.entries)

    def attributes(self, inode: Inode) -> dict:
        size = 4096 if inode.is_dir else inode.size
        return {
            "st_ino": inode.ino,
            "st_mode": inode.mode,
            "st_nlink": 2 + sum(self.inodes[i].is_dir for i in inode.entries.values()) if inode.is_dir else inode.links,
            "st_size": size,
            "st_blocks": (size + 511) // 512,
            "st_blksize": PAGE,
            "st_uid": os.getuid(),
            "st_gid": os.getgid(),
            "st_atime": inode.mtime,
            "st_mtime": inode.mtime,
            "st_ctime": inode.mtime,
        }

    # ---- handles and bytes ----
    def open(self, path: str, flags: int) -> int:
        with self.lock:
            inode = self.lookup(path)
            if inode.is_dir:
                raise _error(errno.EISDIR)
            if flags & os.O_TRUNC:
                self._truncate(inode, 0)
            return self._handle(inode, flags)

    def _handle(self, inode: Inode, flags: int) -> int:
        fh = self.next_fh
        self.next_fh += 1
        self.handles[fh] = (inode.ino, bool(flags & (os.O_SYNC | os.O_DSYNC)))
        inode.opened += 1
        return fh

    def release(self, fh: int) -> None:
        with self.lock:
            ino, _ = self.handles.pop(fh)
            inode = self.inodes[ino]
            inode.opened -= 1
            self._forget_if_unused(inode)

    def _stored(self, inode: Inode, offset: int, length: int) -> bytes:
        """What the store shows of [offset, offset+length), zeros where it shows nothing."""
        end = min(offset + length, inode.valid)
        data = b""
        if end > offset:
            with open(self._content_path(inode.ino), "rb") as f:
                f.seek(offset)
                data = f.read(end - offset)
        return data + bytes(length - len(data))

    def _view(self, inode: Inode, offset: int, length: int) -> bytearray:
        out = bytearray(self._stored(inode, offset, length))
        for number in range(offset // PAGE, (offset + length + PAGE - 1) // PAGE):
            page = inode.pages.get(number)
            if page is None:
                continue
            start = number * PAGE
            lo, hi = max(start, offset), min(start + PAGE, offset + length)
            out[lo - offset : hi - offset] = page[lo - start : hi - start]
        return out

    def read(self, fh: int, size: int, offset: int) -> bytes:
        self._fault("read", ino=self.handles[fh][0])
        with self.lock:
            inode = self.inodes[self.handles[fh][0]]
            size = max(0, min(size, inode.size - offset))
            return bytes(self._view(inode, offset, size)) if size else b""

    def read_path(self, path: str) -> bytes:
        with self.lock:
            inode = self.lookup(path)
            return bytes(self._view(inode, 0, inode.size))

    def _put(self, inode: Inode, data: bytes, offset: int) -> None:
        end = offset + len(data)
        for number in range(offset // PAGE, (end + PAGE - 1) // PAGE):
            start = number * PAGE
            page = inode.pages.get(number)
            if page is None:
                page = inode.pages[number] = bytearray(self._stored(inode, start, PAGE))
                if start + PAGE > inode.size:  # beyond the live end the page reads as zeros
                    keep = max(0, inode.size - start)
                    page[keep:] = bytes(PAGE - keep)
            lo, hi = max(start, offset), min(start + PAGE, end)
            page[lo - start : hi - start] = data[lo - offset : hi - offset]

    def write(self, fh: int, data: bytes, offset: int) -> int:
        hit = self._fault("write", ino=self.handles[fh][0])
        if hit is not None and hit.short and len(data) > 1:
            data = data[: len(data) // 2]
        with self.lock:
            ino, synchronous = self.handles[fh]
            inode = self.inodes[ino]
            before = bytes(self._view(inode, offset, max(0, min(len(data), inode.size - offset))))
            inode.last_write = (offset, len(data), before, inode.size)
            self._put(inode, data, offset)
            inode.size = max(inode.size, offset + len(data))
            inode.mtime = time.time()
            inode.dirty_since = inode.dirty_since or time.monotonic()
            if synchronous:
                self._write_back(inode)
                self._synced("o_sync", self.path_of(ino))
            return len(data)

    def _truncate(self, inode: Inode, length: int) -> None:
        if inode.is_dir:
            raise _error(errno.EISDIR)
        for number in [n for n in inode.pages if n * PAGE >= length]:
            del inode.pages[number]
        tail = inode.pages.get(length // PAGE)
        if tail is not None:
            tail[length % PAGE :] = bytes(PAGE - length % PAGE)
        inode.valid = min(inode.valid, length)
        inode.size = length
        inode.last_write = None  # a tear applies to writes, not to a size change
        inode.mtime = time.time()

    def truncate(self, path: str | None, length: int, fh: int | None = None) -> None:
        with self.lock:
            inode = self.inodes[self.handles[fh][0]] if fh is not None else self.lookup(path or "/")
            self._truncate(inode, length)

    def fsync(self, fh: int, datasync: bool) -> None:
        self._fault("sync", ino=self.handles[fh][0])
        with self.lock:
            ino = self.handles[fh][0]
            self._write_back(self.inodes[ino])
            self._synced("fdatasync" if datasync else "fsync", self.path_of(ino))

    def fsync_dir(self, path: str) -> None:
        self._fault("sync", path)
        with self.lock:
            inode = self.lookup(path)
            for child in inode.entries.values():  # a durable name for a never-synced file: the file, empty
                content = self._content_path(child)
                if not self.inodes[child].is_dir and not content.exists():
                    content.touch(0o600)
            inode.durable_entries = dict(inode.entries)
            self._save_namespace()
            self._synced("fsyncdir", path)

    def path_of(self, ino: int) -> str:
        """A live path of the inode (for the sync log), or ``<unlinked N>``."""
        parents = {c: (p.ino, n) for p in self.inodes.values() if p.is_dir for n, c in p.entries.items()}
        parts = []
        while ino != ROOT:
            if ino not in parents:
                return f"<unlinked {ino}>"
            ino, name = parents[ino]
            parts.append(name)
        return "/" + "/".join(reversed(parts))

    # ---- the end ----
    def unsynced(self) -> dict[str, int]:
        """Paths of the files with unsynced bytes, and how many bytes they hold (dirty pages)."""
        with self.lock:
            return {self.path_of(i.ino): len(i.pages) * PAGE for i in self.inodes.values() if i.dirty and not i.is_dir}

    def cut(self, tear: int | None = None, seed: int = 0) -> list[tuple[str, int, int]]:
        """Lose power. Without ``tear`` nothing unsynced reaches the store. With ``tear`` (512 or 4096) each file's
        unsynced writes reach it in order and the last one is torn at a ``tear``-aligned offset inside it (all of it
        lost when it crosses no such boundary). Returns the tears made: (path, write offset, bytes kept).
        The Disk must not be used afterwards: the process ends, and a new one reads the store."""
        torn = []
        with self.lock:
            rng = random.Random(seed)
            if tear:
                for inode in list(self.inodes.values()):
                    if inode.is_dir or inode.last_write is None:
                        continue
                    offset, length, before, size_before = inode.last_write
                    boundaries = range((offset // tear + 1) * tear, offset + length, tear)
                    keep_to = rng.choice(boundaries) if boundaries else offset
                    if keep_to - offset < len(before):  # what the lost part overwrote comes back
                        self._put(inode, before[keep_to - offset :], keep_to)
                    inode.size = size_before if keep_to == offset else max(size_before, keep_to)
                    self._write_back(inode)
                    torn.append((self.path_of(inode.ino), offset, keep_to - offset))
            self.inodes.clear()
        return torn


def materialize(store: str | os.PathLike, target: str | os.PathLike) -> None:
    """Lay the disk a store (or a snapshot of one) holds out as a plain directory tree under ``target``: what a
    machine finds after the power comes back. The store is only read."""
    store, target = Path(store), Path(target)
    path = store / "namespace.json"
    inodes = {int(k): v for k, v in json.loads(path.read_text())["inodes"].items()} if path.exists() else {}
    inodes.setdefault(ROOT, {"mode": stat.S_IFDIR | 0o755, "entries": {}})
    todo = [(ROOT, target)]
    while todo:
        ino, where = todo.pop()
        where.mkdir(exist_ok=True)
        for name, child in inodes[ino]["entries"].items():
            if child not in inodes:
                continue
            mode = inodes[child]["mode"]
            if stat.S_ISDIR(mode):
                todo.append((child, where / name))
            else:
                content = store / "inodes" / str(child)
                (where / name).write_bytes(content.read_bytes() if content.exists() else b"")
                os.chmod(where / name, stat.S_IMODE(mode))
        os.chmod(where, stat.S_IMODE(inodes[ino]["mode"]))
