"""The FUSE side: mfusepy's path-based callbacks onto a ``Disk``, the freeze of a power cut, and the control socket
through which a test reads the sync log and cuts the power."""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import socket
import threading
from pathlib import Path

import mfusepy
from faults.lossyfs.model import Disk, Injection, Sync

STATFS_FIELDS = ("f_bsize", "f_frsize", "f_blocks", "f_bfree", "f_bavail", "f_files", "f_ffree", "f_favail")


def _dead_disk() -> None:
    """What an operation does once the power is gone: nothing, ever (the process ends soon)."""
    threading.Event().wait()


class LossyOperations(mfusepy.Operations):
    use_ns = False

    def __init__(self, disk: Disk):
        self.disk = disk
        self.frozen = threading.Event()

    def _live(self) -> None:
        if self.frozen.is_set():
            _dead_disk()

    # every callback first checks the power is on, and after a sync checks it did not go with that sync
    def getattr(self, path, fh=None):
        self._live()
        with self.disk.lock:
            inode = self.disk.inodes[self.disk.handles[fh][0]] if fh is not None else self.disk.lookup(path)
            return self.disk.attributes(inode)

    def readdir(self, path, fh):
        self._live()
        return [".", "..", *self.disk.listdir(path)]

    def mkdir(self, path, mode):
        self._live()
        self.disk.mkdir(path, mode)

    def rmdir(self, path):
        self._live()
        self.disk.rmdir(path)

    def unlink(self, path):
        self._live()
        self.disk.unlink(path)

    def rename(self, old, new):
        self._live()
        self.disk.rename(old, new)

    def create(self, path, mode, flags=os.O_WRONLY):
        self._live()
        return self.disk.create(path, mode, flags)

    def open(self, path, flags):
        self._live()
        return self.disk.open(path, flags)

    def read(self, path, size, offset, fh):
        self._live()
        return self.disk.read(fh, size, offset)

    def write(self, path, data, offset, fh):
        self._live()
        written = self.disk.write(fh, data, offset)
        self._live()
        return written

    def truncate(self, path, length, fh=None):
        self._live()
        self.disk.truncate(path, length, fh)

    def fsync(self, path, datasync, fh):
        self._live()
        self.disk.fsync(fh, bool(datasync))
        self._live()

    def fsyncdir(self, path, datasync, fh):
        self._live()
        self.disk.fsync_dir(path)
        self._live()

    def release(self, path, fh):
        self.disk.release(fh)

    def flush(self, path, fh):
        return 0

    def chmod(self, path, mode):
        self._live()
        self.disk.chmod(path, mode)

    def chown(self, path, uid, gid):
        return 0

    def utimens(self, path, times=None):
        self._live()
        with self.disk.lock:
            inode = self.disk.lookup(path)
            inode.mtime = times[1] if times else inode.mtime
        return 0

    def access(self, path, amode):
        self._live()
        self.disk.lookup(path)
        return 0

    def statfs(self, path):
        st = os.statvfs(self.disk.store)
        answer = {k: getattr(st, k) for k in STATFS_FIELDS}
        if self.disk.usable is not None:  # a disk filling up: its free space as the test set it
            answer["f_bavail"] = answer["f_bfree"] = min(st.f_blocks, self.disk.usable // st.f_frsize)
        return answer

    def symlink(self, target, source):
        raise OSError(errno.EPERM, "lossyfs keeps no symlinks")

    def link(self, target, source):
        raise OSError(errno.EPERM, "lossyfs keeps no hard links")


class Control:
    """One JSON request per line on a Unix socket, one JSON answer per line:

    - ``{"cmd": "syncs", "since": N}``: the syncs after the N-th, as ``[number, op, path, at]``
    - ``{"cmd": "unsynced"}``: ``{path: dirty bytes}`` of the files holding unsynced writes
    - ``{"cmd": "arm", "after": N, "killpg": [pgid, ...]}``: when the N-th sync is durable the power goes: every
      operation blocks from then on and the process groups get SIGKILL. A process waiting on this disk dies only
      when the cut ends the connection (the kernel lets no one out of an answered-never FUSE request), so the
      caller waits for ``frozen`` and then cuts.
    - ``{"cmd": "state"}``: ``{"syncs": N, "frozen": bool}``
    - ``{"cmd": "cut", "tear": null|512|4096, "seed": S, "killpg": [...]}``: the power goes now; answers the
      tears made, then the process ends without unmounting (the caller unmounts lazily)
    - ``{"cmd": "sync-all"}``: every file and directory synced, as a clean shutdown does
    - ``{"cmd": "inject", "op": "read|write|sync|create", "pattern": GLOB, "error": "EIO"|"ENOSPC"|null,
      "delay": SECONDS, "count": N|null, "short": bool, "skip": N}``: a failing, slow or filling disk
      (``model.Injection``)
    - ``{"cmd": "clear"}``: the injections end; answers each one's hits
    - ``{"cmd": "space", "usable": BYTES|null}``: the free space statfs reports (null: the real one)
    """

    def __init__(self, ops: LossyOperations, path: Path, snapshots: Path | None):
        self.ops, self.disk, self.path = ops, ops.disk, path
        self.arm_after: int | None = None
        self.killpg: list[int] = []
        self.snapshots = snapshots
        if snapshots is not None:
            _snapshot(self.disk.store, snapshots, 0)
        self.disk.on_sync = self._on_sync

    def _on_sync(self, sync: Sync) -> None:
        if self.snapshots is not None:
            _snapshot(self.disk.store, self.snapshots, sync.number)
        if self.arm_after is not None and sync.number >= self.arm_after:
            self._power_off(self.killpg)

    def _power_off(self, killpg) -> None:
        self.ops.frozen.set()
        for pgid in killpg:
            try:
                os.killpg(pgid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def serve(self) -> None:
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        if self.path.exists():
            self.path.unlink()
        server.bind(str(self.path))
        server.listen()
        threading.Thread(target=self._accept, args=(server,), daemon=True, name="control").start()

    def _accept(self, server: socket.socket) -> None:
        while True:
            conn, _ = server.accept()
            threading.Thread(target=self._session, args=(conn,), daemon=True).start()

    def _session(self, conn: socket.socket) -> None:
        with conn, conn.makefile("rwb") as stream:
            for line in stream:
                request = json.loads(line)
                answer, end = self._answer(request)
                stream.write(json.dumps(answer).encode() + b"\n")
                stream.flush()
                if end:
                    os._exit(0)

    def _answer(self, request: dict):
        cmd = request["cmd"]
        if cmd == "syncs":
            with self.disk.lock:
                since = request.get("since", 0)
                return [[s.number, s.op, s.path, s.at] for s in self.disk.syncs[since:]], False
        if cmd == "unsynced":
            return self.disk.unsynced(), False
        if cmd == "state":
            return {"syncs": len(self.disk.syncs), "frozen": self.ops.frozen.is_set()}, False
        if cmd == "arm":
            with self.disk.lock:
                self.arm_after, self.killpg = request["after"], request.get("killpg", [])
                if len(self.disk.syncs) >= self.arm_after:
                    self._power_off(self.killpg)
            return {"armed": self.arm_after}, False
        if cmd == "sync-all":
            with self.disk.lock:
                for inode in list(self.disk.inodes.values()):
                    if inode.is_dir:
                        path = self.disk.path_of(inode.ino)
                        if not path.startswith("<unlinked"):  # a removed directory has no names to sync
                            self.disk.fsync_dir(path)
                    elif inode.links and inode.dirty:
                        self.disk._write_back(inode)
            return {"syncs": len(self.disk.syncs)}, False
        if cmd == "inject":
            error = request.get("error", "EIO")
            self.disk.inject(
                Injection(
                    request["op"],
                    request.get("pattern", "*"),
                    getattr(errno, error) if error else None,
                    request.get("delay", 0.0),
                    request.get("count"),
                    request.get("short", False),
                    request.get("skip", 0),
                )
            )
            return {"injected": len(self.disk.injections)}, False
        if cmd == "clear":
            return [{"op": i.op, "pattern": i.pattern, "hits": i.hits} for i in self.disk.clear()], False
        if cmd == "space":
            self.disk.usable = request.get("usable")
            return {"usable": self.disk.usable}, False
        if cmd == "cut":
            with self.disk.lock:
                self._power_off(request.get("killpg", []))
                tears = self.disk.cut(request.get("tear"), request.get("seed", 0))
            return {"tears": tears}, True
        return {"error": f"unknown command {cmd!r}"}, False


def _snapshot(store: Path, snapshots: Path, number: int) -> None:
    """The store as it is after sync ``number``, in ``snapshots/<number>``: hard links to the previous snapshot's
    files that did not change, copies of those that did."""
    target = snapshots / str(number)
    previous = snapshots / str(number - 1)
    target.mkdir(parents=True)
    for source in [store / "namespace.json", *sorted((store / "inodes").iterdir())]:
        if not source.exists():
            continue
        relative = source.relative_to(store)
        destination = target / relative
        destination.parent.mkdir(parents=True, exist_ok=True)
        old = previous / relative
        st = source.stat()
        if old.exists() and (old.stat().st_size, old.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns):
            os.link(old, destination)
        else:
            shutil.copy2(source, destination)
