"""``LossyMount``: a lossy disk mounted for a test, in its own process; power cuts and the sync log from outside."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from faults.lossyfs.model import Sync

TESTS = Path(__file__).resolve().parents[2]


def fuse_missing() -> str | None:
    """Why a lossy disk cannot be mounted here, or None."""
    if not os.path.exists("/dev/fuse"):
        return "no /dev/fuse"
    if not shutil.which("fusermount3"):
        return "no fusermount3 (the fuse3 OS package)"
    try:
        import mfusepy  # noqa: F401
    except (ImportError, OSError) as exc:
        return f"mfusepy does not load: {exc}"
    return None


@dataclass
class LossyMount:
    """The files under ``mountpoint`` live on a disk whose synced state is ``store``. ``mount`` starts the process
    serving it; ``cut`` loses power (then ``mount`` again brings the disk back as the cut left it); ``unmount`` is a
    clean shutdown (everything synced)."""

    store: Path
    mountpoint: Path
    snapshots: Path | None = None
    process: subprocess.Popen | None = None

    def __post_init__(self):
        self.store, self.mountpoint = Path(self.store), Path(self.mountpoint)
        self.control = self.store.parent / f".{self.store.name}.control"
        self.log = self.store.parent / f".{self.store.name}.log"

    def mount(self, timeout: float = 15.0) -> None:
        self.store.mkdir(parents=True, exist_ok=True)
        self.mountpoint.mkdir(parents=True, exist_ok=True)
        if self.control.exists():
            self.control.unlink()
        command = [sys.executable, "-m", "faults.lossyfs", "--store", str(self.store), "--control", str(self.control)]
        if self.snapshots is not None:
            command += ["--snapshots", str(self.snapshots)]
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]))
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(
                [*command, str(self.mountpoint)],
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
            )
        deadline = time.monotonic() + timeout
        while not (os.path.ismount(self.mountpoint) and self.control.exists()):
            if self.process.poll() is not None or time.monotonic() > deadline:
                self._reap()
                raise RuntimeError(f"lossyfs did not mount {self.mountpoint}: {self.log.read_text()[-2000:]}")
            time.sleep(0.02)

    def _request(self, request: dict):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(30)
            conn.connect(str(self.control))
            conn.sendall(json.dumps(request).encode() + b"\n")
            with conn.makefile("rb") as stream:
                return json.loads(stream.readline())

    def syncs(self, since: int = 0) -> list[Sync]:
        return [Sync(*s) for s in self._request({"cmd": "syncs", "since": since})]

    def sync_count(self) -> int:
        return self._request({"cmd": "state"})["syncs"]

    def frozen(self) -> bool:
        return self._request({"cmd": "state"})["frozen"]

    def unsynced(self) -> dict[str, int]:
        return self._request({"cmd": "unsynced"})

    def arm(self, after: int, killpg: list[int] = ()) -> None:
        """Lose power as soon as the ``after``-th sync (counted since mount) is durable, killing ``killpg``."""
        self._request({"cmd": "arm", "after": after, "killpg": list(killpg)})

    def cut(self, tear: int | None = None, seed: int = 0, killpg: list[int] = ()) -> list[tuple[str, int, int]]:
        """Lose power now (``tear``: see ``Disk.cut``); the process groups ``killpg`` die first."""
        answer = self._request({"cmd": "cut", "tear": tear, "seed": seed, "killpg": list(killpg)})
        self._reap()
        return [tuple(t) for t in answer["tears"]]

    def inject(
        self,
        op: str,
        pattern: str = "*",
        error: str | None = "EIO",
        delay: float = 0.0,
        count: int | None = None,
        short: bool = False,
        skip: int = 0,
    ) -> None:
        """A failing, slow or filling disk from now on: see ``model.Injection`` (``error`` by errno name, None: no
        error)."""
        request = {"op": op, "pattern": pattern, "error": error, "delay": delay, "count": count, "short": short}
        request["skip"] = skip
        self._request({"cmd": "inject", **request})

    def clear(self) -> list[dict]:
        """The injected faults end; returns each one's ``hits``."""
        return self._request({"cmd": "clear"})

    def set_usable(self, usable: int | None) -> None:
        """The free space the disk reports (None: the real free space of the store's disk)."""
        self._request({"cmd": "space", "usable": usable})

    def unmount(self) -> None:
        """A clean shutdown: every write synced, then unmounted."""
        if self.process is None:
            return
        try:
            if self.process.poll() is None:
                self._request({"cmd": "sync-all"})
        finally:  # a disk that failed to sync is still unmounted, its process ended
            self._reap()

    def _reap(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
        if self.process is not None:
            self.process.wait()
        subprocess.run(["fusermount3", "-u", "-z", str(self.mountpoint)], capture_output=True)
        self.process = None
