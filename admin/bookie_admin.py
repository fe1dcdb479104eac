"""Admin operations over a set of bookies (``bkctl bookie gc|gc-status|compaction|readonly``): each bookie's result
or its error, so that one dead bookie (or a Java one without our admin service) never hides the others' results; and
one bookie's storage usage."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from bookie.client.admin_client import BookieAdmin, GcRun, admin_client
from bookie.codec.storage_view import StorageView
from bookie.errors import BKError, OperationTimeout, ServiceUnavailable
from bookie.meta.registration import RegisteredBookie
from bookie.tls import TlsSettings

GC_POLL_INTERVAL = 0.3
# A run that finished on a bookie reached over BookKeeper's HTTP API, which does not say what a run did.
UNREPORTED_RUN = GcRun(
    run_id=None,
    forced=True,
    kind=None,
    ledgers_deleted=None,
    logs_deleted=None,
    logs_compacted=None,
    entries_copied=None,
    bytes_copied=None,
    bytes_reclaimed=None,
    start_time=None,
    duration_ms=None,
    error="",
)


@dataclass
class Outcome:
    bookie: RegisteredBookie
    result: Any = None
    error: BKError | None = None

    @property
    def bookie_id(self) -> str:
        return self.bookie.bookie_id


def fan_out(
    bookies: Iterable[RegisteredBookie],
    operation: str,
    call: Callable[[BookieAdmin], Any],
    timeout: float = 10.0,
    tls: TlsSettings | None = None,
) -> list[Outcome]:
    """``call`` on each bookie's admin client, one after the other (over TLS with a client's ``tls``)."""
    outcomes = []
    for bookie in bookies:
        try:
            with admin_client(bookie, operation, timeout, tls) as admin:
                outcomes.append(Outcome(bookie, call(admin)))
        except BKError as exc:
            outcomes.append(Outcome(bookie, error=exc))
    return outcomes


def wait_for_gc(
    triggered: list[Outcome], timeout: float, done: Callable[[], None] = lambda: None, tls: TlsSettings | None = None
) -> list[Outcome]:
    """Wait until each triggered run (an Outcome with a GcTrigger) is over: an Outcome per bookie with its GcRun, or
    the error (ServiceUnavailable when it stopped answering, OperationTimeout after ``timeout`` seconds)."""
    waiting = {o.bookie_id: o for o in triggered if o.error is None}
    finished: dict[str, Outcome] = {}
    deadline = time.monotonic() + timeout
    while waiting and time.monotonic() < deadline:
        for bookie_id, outcome in list(waiting.items()):
            (status,) = fan_out([outcome.bookie], "gc status", lambda admin: admin.gc_status(), tls=tls)
            if status.error is not None:
                finished[bookie_id] = Outcome(outcome.bookie, error=ServiceUnavailable("bookie stopped answering"))
            elif outcome.result.run_id is None:  # BookKeeper's HTTP API: no run ids, only "a forced run is on"
                if status.result.is_in_force:
                    continue
                finished[bookie_id] = Outcome(outcome.bookie, UNREPORTED_RUN)
            elif status.result.last_run is not None and status.result.last_run.run_id >= outcome.result.run_id:
                finished[bookie_id] = Outcome(outcome.bookie, status.result.last_run)
            else:
                continue
            del waiting[bookie_id]
            done()
        if waiting:
            time.sleep(GC_POLL_INTERVAL)
    for bookie_id, outcome in waiting.items():
        finished[bookie_id] = Outcome(outcome.bookie, error=OperationTimeout(f"not finished after {timeout:g} s"))
    return [finished[o.bookie_id] for o in triggered if o.bookie_id in finished]


STORAGE_USAGE_TIMEOUT = 30.0  # seconds: a bookie reads its ledgers maps and indexes to answer


def storage_usage(
    bookie: RegisteredBookie,
    ledger_id: int | None = None,
    timeout: float = STORAGE_USAGE_TIMEOUT,
    tls: TlsSettings | None = None,
) -> StorageView:
    """What a running bookie of ours says its disks hold, through its admin service (with ``ledger_id``, also where
    that ledger's entries are). A Java bookie, or ours without bkctlAdminPort, cannot say: NotInHttpAdminApi (its
    directories are read on its host, bookie/storage/usage.py's ``view_of_dirs``)."""
    with admin_client(bookie, "storage usage", timeout, tls) as admin:
        return admin.storage_usage(ledger_id)


__all__ = ["GcRun", "Outcome", "StorageView", "fan_out", "storage_usage", "wait_for_gc"]
