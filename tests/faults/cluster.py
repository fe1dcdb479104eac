"""The cluster under the nemesis: one real ZooKeeper that can itself be killed -9 and restarted (same data
directory, same port), and real bookie processes that can be killed, restarted, paused and resumed.

Everything started here is stopped here, by pid (``close``).
"""

from __future__ import annotations

import os
import signal
import threading
import uuid
from pathlib import Path

from bookie.local.bookies import LocalBookie, wait_registered
from bookie.local.process import free_port, pid_alive, stop_process_group
from bookie.local.zookeeper import EmbeddedZooKeeper
from bookie.meta.layout import init_cluster
from bookie.meta.store import MetadataStore
from bookie.meta.uri import parse_service_uri

# Faster failure detection than BookKeeper's defaults, so a short schedule sees several ensemble changes.
BOOKIE_SETTINGS = {"zkTimeout": "6000"}


class FaultCluster:
    def __init__(self, directory: Path, bookies: int = 5):
        self.directory = Path(directory)
        self.zk = EmbeddedZooKeeper(self.directory / "zookeeper", free_port())
        self.zk_pid: int | None = None
        self.service_uri = f"zk+hierarchical://{self.zk.address}/faults-{uuid.uuid4().hex[:6]}/ledgers"
        self.size = bookies
        self.bookies: list[LocalBookie] = []
        self.paused: set[int] = set()  # indexes of SIGSTOPped bookies
        self.lock = threading.Lock()  # one nemesis action on a process at a time

    # ---- lifecycle ----
    def start(self) -> None:
        self.zk_pid = self.zk.start()
        with MetadataStore(parse_service_uri(self.service_uri)) as store:
            init_cluster(store)
            for index in range(self.size):
                bookie = LocalBookie.create(
                    index + 1, self.directory / f"bookie-{index + 1}", self.service_uri, BOOKIE_SETTINGS
                )
                bookie.start()
                self.bookies.append(bookie)
            wait_registered(store, self.bookies)

    def close(self) -> None:
        for index in list(self.paused):
            self.resume(index)
        for bookie in self.bookies:
            bookie.stop(kill=True)
        if self.zk_pid:
            stop_process_group(self.zk_pid, kill=True)
            self.zk_pid = None

    # ---- ZooKeeper ----
    def zk_running(self) -> bool:
        return pid_alive(self.zk_pid)

    def kill_zookeeper(self) -> None:
        with self.lock:
            if self.zk_pid:
                stop_process_group(self.zk_pid, kill=True)
            self.zk_pid = None

    def start_zookeeper(self) -> None:
        with self.lock:
            if not self.zk_running():
                self.zk_pid = self.zk.start()

    # ---- bookies ----
    def kill_bookie(self, index: int) -> None:
        with self.lock:
            bookie = self.bookies[index]
            if index in self.paused:  # a stopped process dies of SIGKILL too; forget it was paused
                self.paused.discard(index)
            bookie.stop(kill=True)

    def start_bookie(self, index: int) -> None:
        """Start it again on the same disks; registration is not awaited (ZooKeeper may be down)."""
        with self.lock:
            bookie = self.bookies[index]
            if not bookie.running():
                bookie.start()

    def pause(self, index: int) -> None:
        with self.lock:
            bookie = self.bookies[index]
            if bookie.running() and index not in self.paused:
                os.killpg(bookie.pid, signal.SIGSTOP)
                self.paused.add(index)

    def resume(self, index: int) -> None:
        with self.lock:
            bookie = self.bookies[index]
            if index in self.paused:
                self.paused.discard(index)
                if bookie.running():
                    os.killpg(bookie.pid, signal.SIGCONT)

    def unregistered(self, store) -> list[int]:
        """Indexes of the bookies whose current process is not registered (writable or read-only)."""
        from bookie.meta.registration import BookieRegistry

        pids = {
            b.bookie_id: b.info.properties.get("pid")
            for b in BookieRegistry(store).list(writable=True, readonly=True)
            if b.info
        }
        return [i for i, b in enumerate(self.bookies) if pids.get(b.bookie_id) != str(b.pid)]

    def heal(self, timeout: float = 30.0) -> tuple[list[str], list[str]]:
        """Everything up again: ZooKeeper, every bookie resumed or restarted and registered.

        Returns notes (bookies that had exited on their own since the nemesis started them: a bookie started while
        ZooKeeper is down gives up, as it should) and liveness violations (a running bookie that does not register
        again within ``timeout`` s of ZooKeeper being back). Such a bookie is then killed and started again, so the
        data checks still run."""
        from bookie.errors import BKError
        from bookie.local.process import tail

        self.start_zookeeper()
        notes, violations = [], []
        for index in range(self.size):
            self.resume(index)
            bookie = self.bookies[index]
            if bookie.pid and not bookie.running():
                notes.append(f"bookie {index} ({bookie.bookie_id}) had exited on its own: {tail(bookie.log_path, 1)}")
            self.start_bookie(index)
        with MetadataStore(parse_service_uri(self.service_uri)) as store:
            try:
                wait_registered(store, self.bookies, timeout)
                return notes, violations
            except BKError as exc:
                stuck = self.unregistered(store)
                violations.append(
                    f"bookies {stuck} not registered {timeout:g} s after the cluster was healed "
                    f"({str(exc).splitlines()[0]}); their log tails:\n"
                    + "\n".join(tail(self.bookies[i].log_path, 3) for i in stuck)
                )
            for index in stuck:
                self.kill_bookie(index)
                self.start_bookie(index)
            wait_registered(store, self.bookies, 60)
        return notes, violations
