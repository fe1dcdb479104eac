"""The endpoints about the cluster's bookies: ``list_bookies``, ``list_bookie_info``, ``cluster_info``."""

from __future__ import annotations

import asyncio
import logging
from decimal import ROUND_DOWN, Decimal
from typing import Any

from aiohttp import web

from bookie.codec.jackson import hash_map
from bookie.errors import BKError
from bookie.meta.cookies import CookieStore
from bookie.meta.registration import BookieRegistry
from bookie.meta.underreplication import UnderReplicationManager
from bookie.server.http.common import Handler, jackson, params, started, text

log = logging.getLogger(__name__)
BOOKIE_INFO_TIMEOUT = 10.0  # seconds for every bookie's GET_BOOKIE_INFO
UNITS = ("", "KB", "MB", "GB", "TB")


class BookiesApi:
    def __init__(self, admin: Any) -> None:
        self.admin = admin
        self.bookie = admin.bookie

    def routes(self) -> dict[str, Handler]:
        return {
            "/api/v1/bookie/list_bookies": self.list_bookies,
            "/api/v1/bookie/list_bookie_info": self.list_bookie_info,
            "/api/v1/bookie/cluster_info": self.cluster_info,
        }

    @started
    async def list_bookies(self, request: web.Request) -> web.Response:
        """ListBookiesService: the writable bookies (``type=ro``: the read-only ones), each with null or, with
        ``print_hostnames=true``, the host it is reached at."""
        if request.method != "GET":
            return text(404, "Not found method. Should be GET method")
        asked = params(request)
        read_only, hostnames = asked.get("type") == "ro", asked.get("print_hostnames") == "true"
        registry = BookieRegistry(self.bookie.store)
        bookies = await asyncio.to_thread(registry.list, not read_only, read_only)
        return jackson(hash_map((b.bookie_id, b.address()[0] if hostnames else None) for b in bookies))

    @started
    async def list_bookie_info(self, request: web.Request) -> web.Response:
        """ListBookieInfoService: every registered bookie's disk space, as its GET_BOOKIE_INFO answers (those that
        do not answer are left out), then the sums."""
        if request.method != "GET":
            return text(404, "Not found method. Should be GET method")
        registry = BookieRegistry(self.bookie.store)
        bookies = await asyncio.to_thread(registry.list, True, True)
        infos = await self.admin.run(bookie_infos, bookies)
        if not infos:
            return text(404, "Not found any Bookie info.")
        output = {
            bookie_id: f": {{Free: {free}{readable(free)}, Total: {total}{readable(total)}}},"
            for bookie_id, (total, free) in hash_map(infos.items()).items()
        }  # a ConcurrentHashMap's order
        total, free = (sum(values) for values in zip(*infos.values(), strict=True))
        output["ClusterInfo: "] = f"{{Free: {free}{readable(free)}, Total: {total}{readable(total)}}}"
        return jackson(output)

    @started
    async def cluster_info(self, request: web.Request) -> web.Response:
        if request.method != "GET":
            return text(404, "Only GET is supported.")
        return jackson(await asyncio.to_thread(self._cluster_info))

    def _cluster_info(self) -> dict[str, Any]:
        """ClusterInfoService.ClusterInfo, its fields in Jackson's order. Every bookie with a cookie counts in the
        total (BookKeeper lists the cookies for it): one that has none registered is unavailable."""
        store = self.bookie.store
        ur = UnderReplicationManager(store)
        try:
            auditor = ur.auditor()
        except BKError as exc:
            log.warning("could not get the auditor: %s", exc)
            auditor = None
        registry = BookieRegistry(store)
        total = len(CookieStore(store).list())
        writable, read_only = len(registry.list(True, False)), len(registry.list(False, True))
        return {
            "auditorElected": auditor is not None,
            "auditorId": auditor[1] if auditor else "",
            "clusterUnderReplicated": next(ur.iter_ledger_ids(), None) is not None,
            "ledgerReplicationEnabled": ur.is_enabled(),
            "totalBookiesCount": total,
            "writableBookiesCount": writable,
            "readonlyBookiesCount": read_only,
            "unavailableBookiesCount": total - writable - read_only,
        }


async def bookie_infos(core: Any, bookies: list[Any]) -> dict[str, tuple[int, int]]:
    """On the client's loop: ``(total, free)`` bytes of each of ``bookies`` (registrations) that answers
    GET_BOOKIE_INFO."""
    infos = {}
    for bookie_id, answer in (await core.bookie_infos(bookies, BOOKIE_INFO_TIMEOUT)).items():
        if isinstance(answer, BKError):
            log.info("GET_BOOKIE_INFO on %s failed: %s", bookie_id, answer)
        else:
            infos[bookie_id] = (answer.total_disk_capacity, answer.free_disk_space)
    return infos


def readable(value: int) -> str:
    """ListBookieInfoService.getReadable: ``(1.234GB)`` in powers of 1000 with at most three decimals, cut (not
    rounded); nothing below 1000."""
    count, scaled = 0, float(value)
    while scaled >= 1000 and count < len(UNITS) - 1:
        scaled /= 1000
        count += 1
    if not count:
        return ""
    digits = Decimal(repr(scaled)).quantize(Decimal("0.001"), rounding=ROUND_DOWN).normalize()
    return f"({digits:f}{UNITS[count]})"
