"""The cluster under the nemesis: one real ZooKeeper that can itself be killed -9 and restarted (same data
directory, same port), and real bookie processes that can be killed, restarted, paused and resumed. With
``power=True`` each bookie is a machine with one lossy disk (tests/faults/lossyfs) holding its journal and ledger
directories, and a power cut kills the bookie with its disk.

Everything started here is stopped here, by pid (``close``).
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import threading
import uuid
from pathlib import Path

from faults.lossyfs.mount import LossyMount

from bookie.local.bookies import LocalBookie, wait_registered
from bookie.local.process import free_port, pid_alive, stop_process_group
from bookie.local.zookeeper import EmbeddedZooKeeper
from bookie.meta.layout import init_cluster
from bookie.meta.store import MetadataStore
from bookie.meta.uri import parse_service_uri

# Faster failure detection than BookKeeper's defaults, so a short schedule sees several ensemble changes.
# openFileLimit: far under the ledgers a run makes, so index files are closed and opened again all along (and a soak's
# descriptors reach their bound within minutes)
BOOKIE_SETTINGS = {"zkTimeout": "6000", "openFileLimit": "16"}
# The power profile: a checkpoint every 2 s, an entry-log rotation every few seconds (128 KiB logs), a GC run every
# 5 s and a new journal file every 4 MiB, so a cut at a random moment often lands inside one of them.
POWER_SETTINGS = {
    **BOOKIE_SETTINGS,
    "flushInterval": "2000",
    "logSizeLimit": "131072",
    "gcWaitTime": "5000",
    "journalMaxSizeMB": "4",
    "journalPreAllocSizeMB": "1",
    "dbStorage_writeCacheMaxSizeMb": "16",
    "dbStorage_readAheadCacheMaxSizeMb": "16",
}
SORTED = "org.apache.bookkeeper.bookie.SortedLedgerStorage"
INTERLEAVED = "org.apache.bookkeeper.bookie.InterleavedLedgerStorage"
DB = "org.apache.bookkeeper.bookie.storage.ldb.DbLedgerStorage"
# Bookie by bookie (cycled): its ledger storage and how many ledger directories it has on its disk.
POWER_STORAGES = ((SORTED, 1), (INTERLEAVED, 2), (DB, 1), (DB, 2), (INTERLEAVED, 1))


def storage_name(settings: dict[str, str]) -> str:
    """``interleaved``, ``sorted`` or ``db``, with the number of ledger directories when more than one."""
    name = settings.get("ledgerStorageClass", SORTED).rsplit(".", 1)[-1].removesuffix("LedgerStorage").lower()
    dirs = len(settings.get("ledgerDirectories", "").split(","))
    return name if dirs == 1 else f"{name}, {dirs} ledger dirs"


class FaultCluster:
    def __init__(self, directory: Path, bookies: int = 5, power: bool = False, settings: dict[str, str] | None = None):
        self.directory = Path(directory)
        self.power = power
        self.settings = {**BOOKIE_SETTINGS, **(settings or {})}  # the bookies' (on top of power's, with power=True)
        self.disks: list[LossyMount] = []  # power: bookie i's disk
        self._log_read: dict[int, int] = {}  # bookie index -> how far logged_errors read its log
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
                home = self.directory / f"bookie-{index + 1}"
                settings = {**self._power_settings(index, home), **self.settings} if self.power else self.settings
                bookie = LocalBookie.create(index + 1, home, self.service_uri, settings)
                self.bookies.append(bookie)
                if self.power:
                    self.disks[index].mount()
                bookie.start()
            wait_registered(store, self.bookies)

    def _power_settings(self, index: int, home: Path) -> dict[str, str]:
        """Bookie ``index``'s settings, and its disk (in ``disks``): journal and ledger directories on one lossy
        disk."""
        disk = LossyMount(home / "disk-store", home / "disk")
        self.disks.append(disk)
        storage, dirs = POWER_STORAGES[index % len(POWER_STORAGES)]
        return {
            **POWER_SETTINGS,
            "ledgerStorageClass": storage,
            "journalDirectories": str(disk.mountpoint / "journal"),
            "ledgerDirectories": ",".join(str(disk.mountpoint / f"ledgers-{n}") for n in range(dirs)),
        }

    def logged_errors(self) -> dict[int, list[str]]:
        """The ERROR lines each bookie logged since the last call (a bookie that finds its own files damaged says
        so there, even when a reader got the entry from another replica), by bookie index."""
        found = {}
        for index, bookie in enumerate(self.bookies):
            try:
                with open(bookie.log_path, "rb") as log:
                    log.seek(self._log_read.get(index, 0))
                    text = log.read()
                    self._log_read[index] = log.tell()
            except FileNotFoundError:
                continue
            errors = [line for line in text.decode(errors="replace").splitlines() if " ERROR " in line]
            if errors:
                found[index] = errors
        return found

    def storages(self) -> list[str]:
        return [storage_name(b.settings) for b in self.bookies]

    def close(self) -> None:
        for index in list(self.paused):
            self.resume(index)
        for bookie in self.bookies:
            bookie.stop(kill=True)
        for disk in self.disks:  # a clean shutdown: everything on the disks synced
            disk.unmount()
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

    def start_bookie(self, index: int, arm: int | None = None) -> None:
        """Start it again on the same disks (mounted first, after a power cut; armed to lose power again at its
        ``arm``-th sync, power=True); registration is not awaited (ZooKeeper may be down)."""
        with self.lock:
            bookie = self.bookies[index]
            if not bookie.running():
                if self.power and self.disks[index].process is None:
                    self.disks[index].mount()
                if arm is not None:  # no process to kill yet: the cut that follows the freeze kills it
                    self.disks[index].arm(arm)
                bookie.start()

    # ---- power (power=True) ----
    def power_cut(self, index: int, tear: int | None = None, seed: int = 0) -> list[tuple[str, int, int]]:
        """The machine of bookie ``index`` loses power: the bookie dies with its disk, which loses every write not
        synced (the last one of each file torn at a ``tear``-byte boundary). Returns the tears made. The disk stays
        unmounted until ``start_bookie``."""
        with self.lock:
            bookie, disk = self.bookies[index], self.disks[index]
            self.paused.discard(index)  # SIGKILL ends a stopped process too
            tears = []
            if disk.process is not None:
                # pid_alive, not running(): a bookie an armed cut killed reads an empty command line until the cut
                # ends its disk, and running() waits 2 s for one
                tears = disk.cut(tear=tear, seed=seed, killpg=[bookie.pid] if pid_alive(bookie.pid) else [])
            bookie.stop(kill=True)  # reaped: dead once the cut ended its disk
            return tears

    def arm_power_cut(self, index: int, after: int) -> bool:
        """Arm bookie ``index``'s disk to lose power when its ``after``-th sync is durable (killing the bookie);
        False when the bookie or its disk is not up. ``power_cut`` then finishes the cut once ``frozen``."""
        with self.lock:
            bookie, disk = self.bookies[index], self.disks[index]
            if disk.process is None or not bookie.running() or index in self.paused:
                return False
            disk.arm(after, killpg=[bookie.pid])
            return True

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
                if self.power:  # no ZooKeeper outage here: a bookie that ends after a power cut refused to start
                    violations.append(
                        f"bookie {index} ({bookie.bookie_id}) exited on its own; its log ends:\n"
                        + tail(bookie.log_path, 8)
                    )
                else:
                    notes.append(
                        f"bookie {index} ({bookie.bookie_id}) had exited on its own: {tail(bookie.log_path, 1)}"
                    )
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
            try:
                wait_registered(store, self.bookies, 60)
            except BKError as exc:  # the checks go on without it
                violations.append(f"started again, a bookie still does not register: {exc}")
        return notes, violations


def kept_cluster(request, prefix: str, power: bool = False):
    """A fault cluster in a directory of its own, removed when every test of the module passed and kept, with its logs
    (and disks), when one failed."""
    directory = tempfile.mkdtemp(prefix=prefix)
    failed_before = request.session.testsfailed
    cluster = FaultCluster(directory, power=power)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.close()
        if request.session.testsfailed == failed_before:
            shutil.rmtree(directory, ignore_errors=True)
        else:
            print(f"\nthe fault cluster's files, disks and logs are kept in {directory}")
