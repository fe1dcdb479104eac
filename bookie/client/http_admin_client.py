"""The admin operations of :class:`bookie.client.admin_client.BookieAdminClient` over BookKeeper's HTTP admin API
(``httpServerEnabled=true``): what bkctl uses on an Apache BookKeeper bookie, and on ours when our gRPC admin port is
closed. Paths and bodies: BookKeeper 4.17.4's ``server/http/service/*.java`` (bookie/server/http/ serves
the same). What that API does not report (GC run ids and results, entry-log usage, whether a kind is enabled) is
None in the answers; what the bookie's disks hold it does not tell at all (:class:`NotInHttpAdminApi`).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

from bookie.client.bookie_admin import BookieState, CompactionPlan, GcStatus, GcTrigger
from bookie.client.http_request import Unreachable, read_body
from bookie.codec.storage_view import StorageView
from bookie.errors import BKError, NotInHttpAdminApi, OperationTimeout, ServiceUnavailable, Unauthorized
from bookie.tls import TlsSettings, read_material, ssl_context


class HttpBookieAdminClient:
    """One bookie's HTTP admin API (a context manager, like BookieAdminClient)."""

    def __init__(self, bookie_id: str, address: tuple[str, int], timeout: float = 10.0, tls: TlsSettings | None = None):
        self.bookie_id = bookie_id
        # BookKeeper publishes its HTTP endpoint as "http" with httpServerTlsEnable too: a client with TLS asks https
        self.base = f"{'https' if tls else 'http'}://{address[0]}:{address[1]}"
        self.timeout = timeout
        self.context = ssl_context(tls, read_material(tls, "client"), "client") if tls else None

    def __enter__(self) -> HttpBookieAdminClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        pass  # a connection per request

    def _call(self, method: str, path: str, what: str, body: dict[str, bool] | None = None) -> Any:  # parsed JSON
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.base + path, data=data, method=method)
        try:
            text = read_body(request, self.timeout, self.context).decode()
        except urllib.error.HTTPError as error:
            detail = error.read().decode(errors="replace").strip() or error.reason
            if error.code == 403:
                raise Unauthorized(f"{what} on bookie {self.bookie_id}: HTTP 403: {detail}") from None
            raise BKError(f"{what} on bookie {self.bookie_id}: HTTP {error.code}: {detail}") from None
        except TimeoutError:
            raise OperationTimeout(f"{what} on bookie {self.bookie_id} timed out ({self.base})") from None
        except Unreachable as exc:
            raise ServiceUnavailable(
                f"bookie {self.bookie_id}'s HTTP admin API is unreachable at {self.base} ({exc})"
            ) from None
        try:
            return json.loads(text)
        except ValueError:
            raise BKError(f"{what} on bookie {self.bookie_id}: not JSON: {text[:200]!r}") from None

    def state(self) -> BookieState:
        state = self._call("GET", "/api/v1/bookie/state", "bookie state")
        return BookieState(read_only=state["readOnly"], read_only_by_operator=None, shutting_down=state["shuttingDown"])

    def set_read_only(self, read_only: bool) -> BookieState:
        self._call("PUT", "/api/v1/bookie/state/readonly", "set read-only", {"readOnly": read_only})
        return self.state()

    def trigger_gc(self, major: bool = False, minor: bool = False) -> GcTrigger:
        # always both flags: an empty body means "compact each kind unless suspended" in BookKeeper
        self._call("PUT", "/api/v1/bookie/gc", "gc", {"forceMajor": major, "forceMinor": minor})
        return GcTrigger(started=None, run_id=None)

    def gc_status(self) -> GcStatus:
        """One status for the bookie: gc_details has one per collector (DbLedgerStorage: per ledger directory), merged
        as our gRPC service merges them (in force or compacting if any is, the latest times, counters summed)."""
        details = self._call("GET", "/api/v1/bookie/gc_details", "gc status")
        suspended = self._call("GET", "/api/v1/bookie/gc/suspend_compaction", "gc status")
        return GcStatus(
            is_in_force=any(d["forceCompacting"] for d in details),
            major_compacting=any(d["majorCompacting"] for d in details),
            minor_compacting=any(d["minorCompacting"] for d in details),
            last_major_compaction_time=max(d["lastMajorCompactionTime"] for d in details),
            last_minor_compaction_time=max(d["lastMinorCompactionTime"] for d in details),
            major_compaction_counter=sum(d["majorCompactionCounter"] for d in details),
            minor_compaction_counter=sum(d["minorCompactionCounter"] for d in details),
            major_suspended=suspended["isMajorGcSuspended"] == "true",
            minor_suspended=suspended["isMinorGcSuspended"] == "true",
            bytes_reclaimed=None,
            logs_compacted=None,
            running=None,
            runs=None,
            major_enabled=None,
            minor_enabled=None,
            last_run=None,
            entry_logs=None,
            ledger_dirs=None,
            stalled_logs=None,
        )

    def set_compaction_suspended(self, suspended: bool, major: bool = False, minor: bool = False) -> GcStatus:
        verb = "suspend" if suspended else "resume"
        both = not major and not minor
        self._call(
            "PUT",
            f"/api/v1/bookie/gc/{verb}_compaction",
            "compaction",
            {f"{verb}Major": major or both, f"{verb}Minor": minor or both},
        )
        return self.gc_status()

    def storage_usage(self, ledger_id: int | None = None) -> StorageView:
        raise NotInHttpAdminApi(
            self.bookie_id,
            "storage usage",
            "read its directories on its host instead (`bkctl bookie usage --offline -c bk_server.conf`)",
        )

    def compact_logs(
        self, log_ids: list[int], ledger_ids: list[int], dry_run: bool = False, ignore_suspension: bool = False
    ) -> CompactionPlan:
        raise NotInHttpAdminApi(
            self.bookie_id,
            "compaction of chosen entry logs",
            "its entry_location_compact compacts DbLedgerStorage's RocksDB index, not entry logs; `bkctl bookie gc "
            "--major` compacts the logs under majorCompactionThreshold",
        )
