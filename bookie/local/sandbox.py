"""The sandbox: an embedded ZooKeeper and N bookie processes under one state directory.

State lives in ``<dir>/sandbox.json``; ZooKeeper's data in ``<dir>/zookeeper/``, bookie ``i``'s in
``<dir>/bookie-<i>/``. Stopping keeps the data, so a later ``start`` of the same directory brings back the same
cluster, on the same ports.

The state file says what we started; the processes say what still runs. Every command reconciles the two under
an exclusive lock on the directory (``<dir>/sandbox.lock``, so concurrent commands take turns): a process is ours
only if it is alive and its command line names its configuration under this directory (a reused pid or a zombie
is not), and a live process of ours that the file lost is found by that name and adopted. So ``start`` starts
only what does not run, never a second process for anything, and records every pid it starts at once.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import sys
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

from bookie.errors import BKError, ClusterAlreadyInitialised, NotFound
from bookie.files import open_private, private_dirs, write_private
from bookie.local import process
from bookie.local.bookies import LOOPBACK_ONLY, LocalBookie, wait_registered
from bookie.local.process import free_port, spawn, stop_process_group
from bookie.local.zookeeper import EmbeddedZooKeeper

STATE_FILE = "sandbox.json"
LOCK_FILE = "sandbox.lock"
LEDGERS_ROOT = "/ledgers"
# BookKeeper's settings for low add latency, on new sandbox bookies (``--set`` overrides them): commit the journal as
# soon as its queue is empty, and write entry logs back every 512 KB. p99 add latency at 10k entries/s went from
# 9.5-15.2 ms with the defaults to 5.0-7.2 ms with both, in alternating runs (benchmarks/add_latency.py).
BOOKIE_SETTINGS = {"journalFlushWhenQueueEmpty": "true", "flushEntrylogBytes": str(512 << 10)}
# The keys LocalBookie.write_conf sets itself; the others of a bk_server.conf are its settings.
CONF_KEYS = {
    "metadataServiceUri",
    "bookiePort",
    "journalDirectories",
    "ledgerDirectories",
    "prometheusStatsHttpPort",
    "zkTimeout",
    *LOOPBACK_ONLY,
}


def default_state_dir() -> Path:
    """``$BKCTL_SANDBOX_DIR``, else ``$XDG_STATE_HOME/bkctl/sandbox`` (``~/.local/state/bkctl/sandbox``)."""
    if os.environ.get("BKCTL_SANDBOX_DIR"):
        return Path(os.environ["BKCTL_SANDBOX_DIR"])
    base = os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state"
    return Path(base) / "bkctl" / "sandbox"


class SandboxRunning(BKError):
    """A sandbox is already running in this directory."""


@dataclass
class SandboxState:
    state_dir: str
    zk_port: int
    zk_pid: int | None = None
    bookies: list[dict] = field(default_factory=list)  # LocalBookie fields
    autorecovery_pid: int | None = None
    secure: bool = False  # started with --secure: TLS and roles (its material in <dir>/tls)

    @property
    def service_uri(self) -> str:
        return f"zk+hierarchical://127.0.0.1:{self.zk_port}{LEDGERS_ROOT}"

    @property
    def zookeeper(self) -> EmbeddedZooKeeper:
        return EmbeddedZooKeeper(Path(self.state_dir) / "zookeeper", self.zk_port)

    @property
    def autorecovery_marker(self) -> tuple[str, ...]:
        """The arguments of the sandbox's autorecovery (after ``python -m``), which name it in its command line."""
        return ("bookie.autorecovery", "--service-uri", self.service_uri)

    def zk_running(self) -> bool:
        return process.running(self.zk_pid, self.zookeeper.marker)

    def local_bookies(self) -> list[LocalBookie]:
        return [LocalBookie(**b) for b in self.bookies]

    def to_status(self, registered: dict[str, str] | None = None, zookeeper_down: bool = False) -> dict:
        """The ``sandbox status -o json`` document; ``registered`` maps bookie ids to writable/readonly. With
        ``zookeeper_down`` a live bookie is ``running``: registered or not, nobody can tell."""
        registered = registered or {}
        bookies = []
        for bookie in self.local_bookies():
            if not bookie.running():
                state = "stopped"
            else:
                state = "running" if zookeeper_down else registered.get(bookie.bookie_id, "starting")
            bookies.append(
                {
                    "bookieId": bookie.bookie_id,
                    "pid": bookie.pid if bookie.running() else None,
                    "port": bookie.port,
                    "state": state,
                    "journalDir": bookie.journal_dir,
                    "ledgerDir": bookie.ledger_dir,
                    "metricsPort": bookie.metrics_port,
                    "adminPort": bookie.admin_port,
                    "httpPort": bookie.http_port or None,
                }
            )
        return {
            "serviceUri": self.service_uri,
            "secure": self.secure,
            "stateDir": self.state_dir,
            "zookeeper": {"address": f"127.0.0.1:{self.zk_port}", "pid": self.zk_pid},
            "bookies": bookies,
            "autorecovery": (
                {"pid": self.autorecovery_pid}
                if process.running(self.autorecovery_pid, self.autorecovery_marker)
                else None
            ),
        }


def _adopt(recorded: int | None, *markers: tuple[str, ...]) -> int | None:
    """The live process of ours named by one of ``markers``: the recorded pid if it still is that process, else one
    found by its command line (its pid was lost). Duplicates are stopped: two processes never serve the same data."""
    found = process.find(*markers)
    keep = recorded if recorded in found else (found[0] if found else None)
    for pid in found:
        if pid != keep:
            stop_process_group(pid)
    return keep


def _private_if_secure(state: SandboxState, bookie: LocalBookie) -> None:
    """A secure sandbox's bookie configuration holds its HTTPS key stores' password (httpServerKeyStorePassword)."""
    if state.secure:
        os.chmod(bookie.conf_path, 0o600)


class Sandbox:
    def __init__(self, state_dir: Path | str | None = None):
        self.dir = Path(state_dir) if state_dir else default_state_dir()
        self.dir = self.dir.absolute()
        self.state_file = self.dir / STATE_FILE
        self.notes: list[str] = []  # what a command did beyond the obvious, for its user (stderr)

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the directory's lock, so that one command at a time changes its processes and state file (a second
        ``start`` waits, then finds the sandbox running). The kernel releases it when the holder dies; processes we
        start do not inherit it (spawn closes their file descriptors)."""
        private_dirs(self.dir)
        with os.fdopen(open_private(self.dir / LOCK_FILE, os.O_WRONLY | os.O_APPEND), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield

    def load(self) -> SandboxState | None:
        try:
            return SandboxState(**json.loads(self.state_file.read_text()))
        except FileNotFoundError:
            return self._rebuild() if (self.dir / "zookeeper" / "zoo.cfg").exists() else None
        except (ValueError, TypeError):  # unreadable (written by hand, or by a version before atomic saves)
            return self._rebuild()

    def _rebuild(self) -> SandboxState:
        """The state of a directory without a readable state file, from the configuration files of its servers
        (pids are found by their command lines): a start that died before saving leaves nothing unaccounted."""
        from bookie.conf import load_properties

        zoo_cfg = self.dir / "zookeeper" / "zoo.cfg"
        try:
            zk_port = int(load_properties(zoo_cfg)["clientPort"])
        except (OSError, KeyError, ValueError, BKError):
            raise BKError(
                f"{self.state_file} is unreadable and {zoo_cfg} names no port: move the directory aside to start afresh"
            ) from None
        bookies = []
        confs = [c for c in self.dir.glob("bookie-*/bk_server.conf") if c.parent.name[7:].isdigit()]
        for conf in sorted(confs, key=lambda c: int(c.parent.name[7:])):
            try:
                props = load_properties(conf)
                ports = int(props["bookiePort"]), int(props["prometheusStatsHttpPort"])
            except (OSError, KeyError, ValueError, BKError):
                raise BKError(f"{self.state_file} is unreadable and {conf} names no ports: fix or remove it") from None
            settings = {k: v for k, v in props.items() if k not in CONF_KEYS}
            bookie = LocalBookie(int(conf.parent.name[7:]), str(conf.parent), *ports, settings=settings)
            bookies.append(bookie.to_dict())
        return SandboxState(str(self.dir), zk_port, bookies=bookies)

    def save(self, state: SandboxState) -> None:
        """Write the state file atomically: a reader (or a crash) sees the old file or the new one, never half."""
        write_private(self.state_file, json.dumps(asdict(state), indent=2).encode(), sync=True)

    def running(self) -> SandboxState | None:
        """The state of the running sandbox, or None when its ZooKeeper is not running."""
        state = self._loaded_with_zookeeper()
        return state if state is not None and state.zk_pid else None

    def _loaded_with_zookeeper(self) -> SandboxState | None:
        """The state, ``zk_pid`` set to its live ZooKeeper or None."""
        state = self.load()
        if state is not None and not state.zk_running():  # perhaps running with its pid lost: found by its command line
            found = process.find(state.zookeeper.marker)
            state.zk_pid = found[0] if found else None
        return state

    def require_running(self) -> SandboxState:
        state = self.running()
        if state is None:
            raise NotFound(f"no sandbox is running in {self.dir}")
        return state

    def _reconcile(self, state: SandboxState) -> list[LocalBookie]:
        """Set every pid of ``state`` to the live process of ours (None when none runs), save, return the bookies."""
        state.zk_pid = _adopt(state.zk_pid, state.zookeeper.marker)
        bookies = state.local_bookies()
        for bookie in bookies:
            bookie.pid = _adopt(bookie.pid, *bookie.markers)
        state.bookies = [b.to_dict() for b in bookies]
        state.autorecovery_pid = _adopt(state.autorecovery_pid, state.autorecovery_marker)
        self.save(state)
        return bookies

    def start(
        self,
        bookies: int = 3,
        zk_port: int | None = None,
        init: bool = True,
        settings: dict[str, str] | None = None,
        autorecovery: bool = False,
        secure: bool = False,
    ) -> SandboxState:
        """Start what does not run of ZooKeeper (on the directory's earlier port unless ``zk_port`` is given), the
        cluster unless ``init`` is False, and the bookies (those of an earlier run, plus new ones up to
        ``bookies``); adopt what still runs. :class:`SandboxRunning` when everything runs already. ``secure``:
        TLS and roles from now on (bookie/local/secure.py); a sandbox once secure stays so."""
        with self.locked():
            state = self.load()
            local = self._reconcile(state) if state else []
            if state is None:
                state = SandboxState(str(self.dir), zk_port or free_port())
            elif state.zk_pid and zk_port and zk_port != state.zk_port:
                raise SandboxRunning(f"the sandbox in {self.dir} runs ZooKeeper on port {state.zk_port}: stop it first")
            elif zk_port:
                state.zk_port = zk_port
            # Everything it had runs: "already running" (a running sandbox is not grown to the default --bookies).
            complete = all(b.pid for b in local) and (state.autorecovery_pid or not autorecovery)
            if state.zk_pid and (not init or complete):
                raise SandboxRunning(f"a sandbox is already running in {self.dir} (ZooKeeper pid {state.zk_pid})")
            fresh = not (state.zk_pid or state.autorecovery_pid or any(b.pid for b in local))
            if secure and not state.secure:
                if any(b.pid for b in local):
                    raise SandboxRunning(
                        f"the sandbox in {self.dir} runs bookies without TLS: `bkctl sandbox stop`, then start it "
                        "with --secure"
                    )
                state.secure = True
            if state.secure:
                from bookie.local.secure import bookie_settings

                settings = {**bookie_settings(self.dir), **(settings or {})}
            try:
                self._start(state, local, bookies, init, settings or {}, autorecovery)
            except BaseException:
                if fresh:  # a failed start from nothing leaves nothing running; otherwise what ran keeps running
                    self._stop(state)
                raise
            return state

    def _start(
        self,
        state: SandboxState,
        local: list[LocalBookie],
        count: int,
        init: bool,
        settings: dict[str, str],
        autorecovery: bool,
    ) -> None:

        if not state.zk_pid:
            # Bookies and autorecovery that outlived ZooKeeper are adopted: they reconnect by themselves
            # (bookie/meta/store.py) and register again once their old session has expired.
            state.zk_pid = state.zookeeper.start()
            self.save(state)
        if not init:
            return
        self._init_cluster(state)
        with self._store(state) as store:
            self._start_bookies(store, state, local, count, settings)
        if autorecovery and not process.running(state.autorecovery_pid, state.autorecovery_marker):
            # with a bookie's configuration, as BookKeeper's autorecovery runs in or beside a bookie: named after it
            conf = ["--conf", str(local[0].conf_path)] if local else []
            state.autorecovery_pid = spawn(
                [sys.executable, "-m", *state.autorecovery_marker, *conf],
                self.dir / "autorecovery.log",
            )
            self.save(state)

    def _start_bookies(
        self, store, state: SandboxState, local: list[LocalBookie], count: int, settings: dict[str, str]
    ) -> None:
        taken = {state.zk_port} | {p for b in local for p in (b.port, b.metrics_port, b.admin_port, b.http_port)}
        for index in range(len(local), count):
            bookie = LocalBookie.create(
                index + 1,
                self.dir / f"bookie-{index + 1}",
                state.service_uri,
                {**BOOKIE_SETTINGS, **settings},
                taken=taken,
                http=True,
            )
            taken |= {bookie.port, bookie.metrics_port, bookie.admin_port, bookie.http_port}
            local.append(bookie)
        kept = {}  # running bookies whose configuration changes: they read it at their next start only
        for bookie in local:
            changed = sorted(k for k, v in settings.items() if bookie.settings.get(k) != v)
            if bookie.pid and changed:
                kept[bookie.bookie_id] = changed
            if settings:
                bookie.settings.update(settings)
            bookie.write_conf(state.service_uri)  # a running one reads it at its next start
            _private_if_secure(state, bookie)
        if kept:
            keys = ", ".join(sorted({k for changed in kept.values() for k in changed}))
            self.notes.append(
                f"bookies {', '.join(kept)} run on with their earlier {keys}: the new values apply when each "
                "restarts (`bkctl sandbox stop-bookie N`, then `start-bookie N`)"
            )
        state.bookies = [b.to_dict() for b in local]
        self.save(state)
        for bookie in local:
            if not bookie.pid:
                self._format_if_decommissioned(store, bookie)
                bookie.start()
                state.bookies = [b.to_dict() for b in local]
                self.save(state)  # at once: no process of ours without its pid on disk
        wait_registered(store, local)

    def _format_if_decommissioned(self, store, bookie: LocalBookie) -> None:
        """Bring a decommissioned bookie back as a new, empty one. ``bookie decommission`` re-replicated all it held
        and removed its cookie from ZooKeeper, so its directories, cookie and all, are refused at start-up ever
        after. As BookKeeper's ``bookieformat`` would, its directories are formatted, and it starts as a new bookie
        (writing a new cookie). Only when nothing is lost by it: its cookie names this cluster and no ledger names
        the bookie; otherwise the bookie's own start-up error says what is wrong."""
        from bookie.meta.cookies import CookieStore, read_local_cookie
        from bookie.meta.layout import read_instance_id
        from bookie.meta.ledger_manager import LedgerManager

        cookie = read_local_cookie(bookie.journal_dir)
        if cookie is None or cookie.instance_id != read_instance_id(store):
            return
        try:
            CookieStore(store).read(bookie.bookie_id)
            return
        except NotFound:
            pass
        for ledger_id, metadata in LedgerManager(store).iter_ledgers():
            if any(bookie.bookie_id in segment.bookies for segment in metadata.segments):
                raise BKError(
                    f"bookie {bookie.bookie_id} has no cookie in ZooKeeper but ledger {ledger_id} names it: "
                    f"run `bkctl bookie decommission {bookie.bookie_id}` to re-replicate its ledgers, then start again"
                )
        for directory in bookie.data_dirs:
            shutil.rmtree(directory, ignore_errors=True)
        self.notes.append(
            f"bookie {bookie.bookie_id} was decommissioned (no cookie, no ledger names it): "
            f"its directories were formatted and it starts as a new bookie"
        )

    def _store(self, state: SandboxState):
        """A session on the sandbox's cluster, logged in as its one ZooKeeper user when it is secure."""
        from bookie.meta.store import MetadataStore
        from bookie.meta.uri import parse_service_uri

        return MetadataStore(parse_service_uri(state.service_uri), security=self._zk_security(state))

    def _zk_security(self, state: SandboxState | None):
        if state is None or not state.secure:
            return None
        from bookie.local.secure import zk_security

        return zk_security(self.dir)

    def zk_security(self):
        """The ZooKeeper login of bkctl on this sandbox, or None when it is not secure."""
        return self._zk_security(self.load())

    def _init_cluster(self, state: SandboxState) -> None:
        from bookie.meta.layout import init_cluster

        with self._store(state) as store:
            try:
                init_cluster(store)
            except ClusterAlreadyInitialised:
                pass

    def client_tls(self):
        """The client TLS of bkctl on this sandbox (its admin certificate), or None when it is not secure."""
        state = self.load()
        if state is None or not state.secure:
            return None
        from bookie.local.secure import client_settings

        return client_settings(self.dir)

    def status(self) -> dict:
        """The ``sandbox status`` document. :class:`NotFound` when nothing of the sandbox runs; with its ZooKeeper
        down and bookies (or autorecovery) up, the document has ``zookeeper.pid`` null and the bookies' states
        ``running`` (whether they are registered is not known without ZooKeeper)."""
        from bookie.meta.registration import BookieRegistry

        state = self._loaded_with_zookeeper()
        if state is None:
            raise NotFound(f"no sandbox is running in {self.dir}")
        if state.zk_pid is None:
            doc = state.to_status(zookeeper_down=True)
            if not any(b["pid"] for b in doc["bookies"]) and doc["autorecovery"] is None:
                raise NotFound(f"no sandbox is running in {self.dir}")
            return doc
        with self._store(state) as store:
            registered = {b.bookie_id: b.state for b in BookieRegistry(store).list(writable=True, readonly=True)}
        return state.to_status(registered)

    def _find(self, state: SandboxState, name: str) -> LocalBookie:
        for bookie in state.local_bookies():
            if name in (bookie.bookie_id, str(bookie.index)):
                return bookie
        known = ", ".join(f"{b.index} ({b.bookie_id})" for b in state.local_bookies()) or "none"
        raise NotFound(f"no sandbox bookie {name!r}: the sandbox has {known}")

    def _update(self, state: SandboxState, bookie: LocalBookie) -> None:
        state.bookies = [bookie.to_dict() if b["index"] == bookie.index else b for b in state.bookies]
        self.save(state)

    def _reconciled(self, zookeeper: bool) -> SandboxState:
        """The state, its pids reconciled; :class:`NotFound` without one, or when ``zookeeper`` is needed and does
        not run."""
        state = self.load()
        if state is None:
            raise NotFound(f"no sandbox is running in {self.dir}")
        self._reconcile(state)
        if zookeeper and not state.zk_pid:
            raise NotFound(
                f"the ZooKeeper of the sandbox in {self.dir} is not running: `bkctl sandbox start` starts it "
                "(and the bookies that do not run)"
            )
        return state

    def stop_bookie(self, name: str, kill: bool = False) -> LocalBookie:
        """Stop one bookie: SIGTERM and a clean shutdown, or SIGKILL with ``kill`` (a crash)."""
        with self.locked():
            state = self._reconciled(zookeeper=False)  # a bookie stops without ZooKeeper too
            bookie = self._find(state, name)
            if not bookie.pid:
                raise NotFound(f"sandbox bookie {bookie.bookie_id} is not running")
            if bookie.stop(kill=kill):
                self.notes.append(
                    f"bookie {bookie.bookie_id} did not shut down within {bookie.STOP_TIMEOUT:.0f} s of SIGTERM: "
                    "killed (its log says where it was; its registration stays until its ZooKeeper session expires)"
                )
            self._update(state, bookie)
            return bookie

    def start_bookie(self, name: str) -> LocalBookie:
        """Start one stopped bookie again, on its disks, and wait until it is registered."""

        with self.locked():
            state = self._reconciled(zookeeper=True)
            bookie = self._find(state, name)
            if bookie.pid:
                raise SandboxRunning(f"sandbox bookie {bookie.bookie_id} is already running (pid {bookie.pid})")
            with self._store(state) as store:
                self._format_if_decommissioned(store, bookie)
                bookie.write_conf(state.service_uri)  # in this bkctl's keys (listeningInterface was an address)
                _private_if_secure(state, bookie)
                bookie.start()
                self._update(state, bookie)
                wait_registered(store, [bookie])
            return bookie

    def stop(self) -> SandboxState | None:
        """Stop everything the sandbox runs (what its state file records, and what runs of it without a record);
        keep the data. None when nothing was running: nothing to do."""
        if not self.dir.is_dir():
            return None
        with self.locked():
            state = self.load()
            if state is None:
                return None
            bookies = self._reconcile(state)
            if not (state.zk_pid or state.autorecovery_pid or any(b.pid for b in bookies)):
                return None
            self._stop(state)
            return state

    def _stop(self, state: SandboxState) -> None:
        self._reconcile(state)  # also what was started but not recorded yet (an interrupted ZooKeeper start)
        if state.autorecovery_pid:
            stop_process_group(state.autorecovery_pid)
        state.autorecovery_pid = None
        bookies = state.local_bookies()
        for bookie in bookies:  # before ZooKeeper: a bookie unregisters as it stops
            bookie.stop()
        state.bookies = [b.to_dict() for b in bookies]
        if state.zk_pid:
            stop_process_group(state.zk_pid)
        state.zk_pid = None
        self.save(state)
