"""The autorecovery endpoints: ``/api/v1/autorecovery/{status, bookie, list_under_replicated_ledger,
who_is_auditor, trigger_audit, lost_bookie_recovery_delay, decommission}``.

They read and write the under-replication znodes as BookKeeper's do. The auditor is whatever `bkctl autorecovery
run` (or a Java AutoRecoveryMain) stands in the election; without one these endpoints answer as BookKeeper's do
then. Recover and decommission re-replicate from this bookie, in the background (bookie.client.rereplication; the
decommission's passes are bookie.client.decommission's, as `bkctl bookie decommission`'s): where BookKeeper's
decommission waits for the auditor and its replication workers, ours copies the data itself, so it needs no
autorecovery running. Like BookKeeper's, it leaves the cookie alone.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from aiohttp import web
from google.protobuf import text_format

from bookie.client.decommission import Decommission
from bookie.client.rereplication import BookieRecovery, delete_cookies, require_stopped
from bookie.errors import AutoRecoveryDisabled, BKError, NotFound
from bookie.meta.bookie_id import is_bookie_id
from bookie.meta.underreplication import UnderReplicationManager
from bookie.server.http.common import (
    Failed,
    Handler,
    body_field,
    jackson,
    java_int,
    java_map,
    params,
    request_body,
    started,
    text,
)

log = logging.getLogger(__name__)
PUT_ONLY = "Not found method. Should be PUT method"
GET_ONLY = "Not found method. Should be GET method"
STALL_AFTER = 60.0  # seconds without progress before a decommission logs what it waits for


class AutoRecoveryApi:
    def __init__(self, admin: Any) -> None:
        self.admin = admin
        self.bookie = admin.bookie

    def routes(self) -> dict[str, Handler]:
        base = "/api/v1/autorecovery"
        return {
            f"{base}/status": self.status,
            f"{base}/bookie": self.recover,
            f"{base}/list_under_replicated_ledger": self.list_under_replicated,
            f"{base}/who_is_auditor": self.who_is_auditor,
            f"{base}/trigger_audit": self.trigger_audit,
            f"{base}/lost_bookie_recovery_delay": self.lost_bookie_recovery_delay,
            f"{base}/decommission": self.decommission,
        }

    def _ur(self) -> UnderReplicationManager:
        return UnderReplicationManager(self.bookie.store)

    @started
    async def status(self, request: web.Request) -> web.Response:
        """AutoRecoveryStatusService: GET whether replication is enabled; PUT ``?enabled=true|false``."""
        ur = self._ur()
        if request.method == "PUT":
            asked = params(request)
            if "enabled" not in asked:
                return text(400, f"Param 'enabled' not found in {java_map(asked)}")
            await asyncio.to_thread(ur.set_enabled, asked["enabled"].lower() == "true")  # Boolean.parseBoolean
        elif request.method != "GET":
            return text(404, "Not found method. Should be GET or PUT method")
        return jackson({"enabled": await asyncio.to_thread(ur.is_enabled)})

    @started
    async def recover(self, request: web.Request) -> web.Response:
        """RecoveryBookieService: PUT ``{"bookie_src": [BOOKIE], "delete_cookie": false}`` re-replicates the first
        bookie named, in the background (then deletes its cookie if asked and every ledger was recovered)."""
        text_in = await request_body(request)
        if text_in is None:
            return text(404, "No request body provide.")
        try:
            asked = recovery_request(text_in)
        except ValueError:
            return text(404, "ERROR parameters: Failed to deserialize Object from Json string")
        if request.method != "PUT":
            return text(404, PUT_ONLY)
        sources, delete_cookie = asked or (None, False)
        if sources is None:
            raise Failed("no bookie_src")  # Java: a NullPointerException
        if not sources:
            return text(404, PUT_ONLY)
        await self.admin.start_background(f"recovery of bookie {sources[0]}", _recover, sources[0], delete_cookie)
        return text(200, "Success send recovery request command.")

    @started
    async def list_under_replicated(self, request: web.Request) -> web.Response:
        """ListUnderReplicatedLedgerService: the marked ledgers' ids (``missingreplica``, ``excludingmissingreplica``:
        only those whose missing replicas name / do not name a bookie); ``printmissingreplica``: id -> replicas.
        Ascending: BookKeeper walks ZooKeeper's children in the order they come."""
        if request.method != "GET":
            return text(404, GET_ONLY)
        asked = params(request)
        including = asked.get("missingreplica", "").strip() or None  # blank: no filter (StringUtils.isBlank)
        excluding = asked.get("excludingmissingreplica", "").strip() or None

        def wanted(replicas: Any) -> bool:
            return (including is None or including in replicas) and (excluding is None or excluding not in replicas)

        ur = self._ur()
        try:
            marked = await asyncio.to_thread(lambda: [m for m in ur.iter_marked() if wanted(m.replicas)])
        except BKError as exc:
            return text(404, f"Exception when get.{exc}")
        if not marked:
            return text(404, "No under replicated ledgers found")
        if "printmissingreplica" in asked:
            return jackson({str(m.ledger_id): list(m.replicas) for m in marked})
        return jackson([m.ledger_id for m in marked])

    @started
    async def who_is_auditor(self, request: web.Request) -> web.Response:
        if request.method != "GET":
            return text(404, GET_ONLY)
        try:
            auditor = await asyncio.to_thread(self._ur().auditor)
        # as WhoIsAuditorService: a failure to read the election (ZooKeeper, or a garbled vote) is a 404 that names it
        except (BKError, text_format.ParseError, UnicodeDecodeError) as exc:
            return text(404, f"Exception when get.{exc}")
        if auditor is None:
            return text(404, "No auditor elected")
        return text(200, f"Auditor: {auditor[1]}")

    @started
    async def trigger_audit(self, request: web.Request) -> web.Response:
        """TriggerAuditService: PUT makes the auditor audit now (BookKeeperAdmin.triggerAudit)."""
        if request.method != "PUT":
            return text(404, PUT_ONLY)
        try:
            await asyncio.to_thread(self._ur().trigger_audit)
        except AutoRecoveryDisabled:
            return text(404, "Exception when do operation.Autorecovery is disabled. So giving up!")
        except NotFound:
            return text(
                404, "Exception when do operation.No auditor elected, though Autorecovery is enabled. So giving up."
            )
        except BKError as exc:
            return text(404, f"Exception when do operation.{exc}")
        return text(200, "Success trigger audit.")

    @started
    async def lost_bookie_recovery_delay(self, request: web.Request) -> web.Response:
        """LostBookieRecoveryDelayService: GET the delay; PUT ``{"delay_seconds": N}``. Unset (no auditor ever ran,
        nobody set it), GET is a 404, as BookKeeper's ZooKeeper read of it fails."""
        ur = self._ur()
        if request.method == "PUT":
            asked = await body_field(
                request,
                "delay_seconds",
                "Null request body for lostBookieRecoveryDelay.",
                "Request body not contains lostBookieRecoveryDelay.",
            )
            delay = java_int(asked)
            await asyncio.to_thread(ur.set_lost_bookie_recovery_delay, delay)
            return text(200, f"Success set lostBookieRecoveryDelay to {delay}")
        if request.method == "GET":
            try:
                delay = await asyncio.to_thread(ur.lost_bookie_recovery_delay, None)
            except BKError:  # ZkLedgerUnderreplicationManager says so of every ZooKeeper failure, NoNode too
                return text(404, "Exception when get lostBookieRecoveryDelay.Error contacting zookeeper")
            return text(200, f"lostBookieRecoveryDelay value: {delay}")
        return text(404, PUT_ONLY)

    @started
    async def decommission(self, request: web.Request) -> web.Response:
        """DecommissionService: PUT ``{"bookie_src": BOOKIE}`` re-replicates a stopped bookie's ledgers in the
        background (a bookie still registered is refused there, in the log, as BookKeeper does)."""
        if request.method != "PUT":
            return text(404, PUT_ONLY)
        source = await body_field(
            request, "bookie_src", "Null request body for DecommissionService.", "Request body not contains bookie_src."
        )
        try:
            bookie_id = parse_bookie_id(source)
        except ValueError as exc:
            return text(404, f"Exception when send decommission command.{exc}")
        await self.admin.start_background(f"decommission of bookie {bookie_id}", _decommission, bookie_id)
        return text(200, f"Success send decommission Bookie command {bookie_id}")


def parse_bookie_id(value: Any) -> str:
    """``BookieId.parse``: ValueError with Java's message for what it refuses."""
    if value is None:
        raise ValueError("BookieId cannot be null")
    if not isinstance(value, str):
        raise ValueError(f"{type(value).__name__} cannot be cast to String")
    if not is_bookie_id(value):
        raise ValueError(f"BookieId {value} is not valid")
    return value


def recovery_request(text_in: str) -> tuple[list[str] | None, bool] | None:
    """``RecoveryRequestJsonBody`` as Jackson binds it — ``(bookie_src, delete_cookie)``, None for ``null`` —
    or ValueError where it would not: unknown fields, a bookie_src that is no array of scalars, a delete_cookie
    that is no boolean (true/false, a number, or their text)."""
    asked = json.loads(text_in)
    if asked is None:
        return None
    if not isinstance(asked, dict) or set(asked) - {"bookie_src", "delete_cookie"}:
        raise ValueError("not a RecoveryRequestJsonBody")
    sources, delete_cookie = asked.get("bookie_src"), asked.get("delete_cookie")
    if sources is not None:
        if not isinstance(sources, list) or any(isinstance(s, (list, dict)) for s in sources):
            raise ValueError("bookie_src is not an array of strings")
        sources = [s if s is None or isinstance(s, str) else json.dumps(s) for s in sources]  # Jackson: the token
    if isinstance(delete_cookie, str):
        if delete_cookie not in ("true", "True", "TRUE", "false", "False", "FALSE", ""):
            raise ValueError("delete_cookie is not a boolean")
        delete_cookie = delete_cookie.lower() == "true"
    elif delete_cookie is not None and not isinstance(delete_cookie, (bool, int)):
        raise ValueError("delete_cookie is not a boolean")
    return sources, bool(delete_cookie)


async def _recover(core: Any, source: str, delete_cookie: bool) -> None:
    """BookKeeperAdmin.recoverBookieData on the client's loop, then the cookie."""
    bookie_id = parse_bookie_id(source)
    recovery = BookieRecovery(core, {bookie_id})
    log.info("recovering bookie %s", bookie_id)
    report = await recovery.run(await asyncio.to_thread(recovery.affected))
    if delete_cookie and report.complete:
        await asyncio.to_thread(delete_cookies, core.store, [bookie_id])
    log.info(
        "recovery of bookie %s: %d of %d ledgers re-replicated%s",
        bookie_id,
        len(report.recovered),
        len(report.ledgers),
        f", failed: {report.failed}" if report.failed else "",
    )


async def _decommission(core: Any, bookie_id: str) -> None:
    """BookKeeperAdmin.decommissionBookie: refused while the bookie is registered; then re-replicated until no
    ledger names it, failed ledgers tried again, with no end (as BookKeeper waits), what blocks it logged after a
    minute without progress. Stopped if the bookie registers again."""
    await asyncio.to_thread(require_stopped, core.store, bookie_id)
    log.info("decommissioning bookie %s", bookie_id)
    job = Decommission(core, bookie_id, STALL_AFTER, on_stall=lambda report: _stalled(job))
    report = await job.run(await asyncio.to_thread(job.affected), timeout=None)
    log.info("bookie %s decommissioned: no ledger names it (%d ledgers re-replicated)", bookie_id, report.ledgers)


def _stalled(job: Decommission) -> None:
    errors = job.report.errors
    log.warning(
        "decommission of bookie %s: nothing moved for %g s, %d ledgers left: %s%s",
        job.bookie_id,
        job.stall_after,
        len(job.pending()),
        job.pending()[:20],
        f", last errors: {errors}" if errors else "",
    )
