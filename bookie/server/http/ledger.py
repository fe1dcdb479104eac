"""The ledger endpoints: ``/api/v1/ledger/{delete,list,metadata,read}``.

Where we differ from BookKeeper: a ledger's password is never shown (Jackson prints ``LedgerMetadata.getPassword()``
in base64, and ``list`` the serialized metadata with the password in it): a set password is replaced by ``******``
(``KioqKioq`` in base64), an empty one stays empty; ``list``'s serialized metadata is format 3 whatever format the
ledger was written in.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
from typing import Any

from aiohttp import web

from bookie.codec.digest import DigestType
from bookie.codec.jackson import hash_map
from bookie.errors import InvalidArgument, NoSuchLedger
from bookie.meta import ledger_metadata
from bookie.meta.ledger_metadata import LedgerMetadata
from bookie.server.http.common import INT_BITS, Failed, Handler, jackson, java_number, params, started, text

LEDGERS_PER_PAGE = 100  # ListLedgerService.LIST_LEDGER_BATCH_SIZE
ENTRIES_PER_PAGE = 1000  # ReadLedgerEntryService.ENTRIES_PER_PAE
MASKED_PASSWORD = b"******"


class LedgerApi:
    def __init__(self, admin: Any) -> None:
        self.admin = admin
        self.bookie = admin.bookie

    def routes(self) -> dict[str, Handler]:
        return {
            "/api/v1/ledger/delete": self.delete,
            "/api/v1/ledger/list": self.list_ledgers,
            "/api/v1/ledger/metadata": self.metadata,
            "/api/v1/ledger/read": self.read,
        }

    async def _ledgers(self) -> Any:
        """The ledger manager of the bookie's client."""
        return (await self.admin.client()).core.ledgers

    @started
    async def delete(self, request: web.Request) -> web.Response:
        """DeleteLedgerService: DELETE ``?ledger_id=``. Bookies reclaim the space by garbage collection."""
        if request.method != "DELETE":
            return text(404, "Not found method. Should be DELETE method")
        asked = params(request)
        if "ledger_id" not in asked:
            return text(404, "Not ledger found. Should provide ledger_id=<id>")
        ledger_id = java_number(asked["ledger_id"])
        ledgers = await self._ledgers()
        try:
            await asyncio.to_thread(ledgers.delete, ledger_id)
        except (NoSuchLedger, InvalidArgument):
            pass  # as BookKeeper's ledger manager: a ledger that is not there (no id names it) counts as deleted
        return jackson(f"Deleted ledger: {ledger_id}")

    @started
    async def list_ledgers(self, request: web.Request) -> web.Response:
        """ListLedgerService: every ledger id, ascending, to null; with ``print_metadata=true`` to its metadata —
        serialized, or as JSON with ``decode_meta=true`` — and a ``page`` of them with ``page=N``."""
        if request.method != "GET":
            return text(404, "Not found method. Should be GET method")
        asked = params(request)
        if asked.get("print_metadata") != "true":
            ledgers = await self._ledgers()
            ids = await asyncio.to_thread(lambda: list(ledgers.iter_ledger_ids()))
            return jackson({str(ledger_id): None for ledger_id in ids})
        page = java_number(asked["page"], INT_BITS) if "page" in asked else -1
        decode = asked.get("decode_meta") == "true"
        found = await asyncio.to_thread(self._page, await self._ledgers(), page)
        return jackson({str(lid): metadata_json(lid, md) if decode else serialized(md) for lid, md in found})

    @staticmethod
    def _page(ledgers: Any, page: int) -> list[tuple[int, LedgerMetadata]]:
        """The ledgers of a page. ListLedgerService numbers ledgers from 1 and pages' bounds from 0: page 1 holds
        ledgers 1-99, page N > 1 ledgers (N-1)*100 to (N-1)*100+99 — kept, so that scripts paging a Java bookie
        page ours alike. A page of 0 or less: every ledger."""
        ids = ledgers.iter_ledger_ids()
        if page > 0:
            first = (page - 1) * LEDGERS_PER_PAGE
            last = first + LEDGERS_PER_PAGE - 1
            ids = (lid for index, lid in enumerate(itertools.islice(ids, last), 1) if index >= first)
        return list(ledgers.iter_ledgers(ids))

    @started
    async def metadata(self, request: web.Request) -> web.Response:
        """GetLedgerMetaService: GET ``?ledger_id=``; a ledger that does not exist is a 500, as there."""
        asked = params(request)
        if request.method != "GET" or "ledger_id" not in asked:
            return text(404, "Not found method. Should be GET method")
        ledger_id = java_number(asked["ledger_id"])
        md, _ = await asyncio.to_thread((await self._ledgers()).read, ledger_id)
        return jackson({str(ledger_id): metadata_json(ledger_id, md)})

    @started
    async def read(self, request: web.Request) -> web.Response:
        """ReadLedgerEntryService: entries ``start_entry_id`` (0) to ``end_entry_id`` (-1: up to the LAC), or those
        of ``page`` N (1000 an entry), read without fencing; each printed as US-ASCII text."""
        asked = params(request)
        if request.method != "GET" or "ledger_id" not in asked:
            return text(404, "Not found method. Should be GET method, with ledger_id provided")
        ledger_id = java_number(asked["ledger_id"])
        first = java_number(asked["start_entry_id"]) if "start_entry_id" in asked else 0
        last = java_number(asked["end_entry_id"]) if "end_entry_id" in asked else -1
        page = java_number(asked["page"], INT_BITS) if "page" in asked else -1
        output = []
        if page > 0:
            page_first = (page - 1) * ENTRIES_PER_PAGE
            page_last = page_first + ENTRIES_PER_PAGE - 1
            first = page_first if first == 0 or first < page_first else first
            last = page_last if last == -1 or last > page_last else last
            output.append(("Entries for page: ", str(page)))
        if last != -1 and first > last:
            return text(
                500, f"parameter for start_entry_id: {first} and end_entry_id: {last} conflict with page={page}"
            )
        if ledger_id < 0 or first < 0:
            raise Failed(f"ledger {ledger_id}, first entry {first}")  # BookKeeperAdmin.readEntries' checkArgument
        entries = await self.admin.run(read_entries, ledger_id, first, last)
        output += [(str(e.entry_id), e.payload.decode("ascii", "replace")) for e in entries]
        return jackson(hash_map(output))


async def read_entries(core: Any, ledger_id: int, first: int, last: int) -> list[Any]:
    """BookKeeperAdmin.readEntries, on the client's loop: opened as an administrator without recovery, entries
    ``first`` to ``last`` (-1: the LAC), never past the LAC."""
    reader = await core.open(ledger_id, None, recovery=False)
    end = reader.lac if last == -1 else min(last, reader.lac)
    return await reader.read(first, end) if first <= end else []


def _masked(md: LedgerMetadata) -> bytes:
    return MASKED_PASSWORD if md.password else b""


def metadata_json(ledger_id: int, md: LedgerMetadata) -> dict[str, Any]:
    """A ledger's metadata as Jackson writes BookKeeper's LedgerMetadataImpl: the properties of its fields in their
    order, then those of its other getters in the order the oracle's JVM lists them (closed, ctoken, allEnsembles);
    bytes in base64, bookie ids as BookieId objects."""
    closed, has_password = md.is_closed, md.password is not None
    digest = md.digest_type or DigestType.CRC32  # a password without a digest type: proto2's default, as Java reads
    return {
        "ledgerId": ledger_id,
        "metadataFormatVersion": md.format_version,
        "ensembleSize": md.ensemble_size,
        "writeQuorumSize": md.write_quorum_size,
        "ackQuorumSize": md.ack_quorum_size,
        "state": md.state.name,
        "length": md.length if closed else 0,
        "lastEntryId": md.last_entry_id if closed else -1,
        "ctime": md.ctime or 0,
        "digestType": ("MAC" if digest == DigestType.HMAC else digest.name) if has_password else None,
        "password": base64.b64encode(_masked(md)).decode(),
        "customMetadata": hash_map((k, base64.b64encode(v).decode()) for k, v in md.custom_metadata.items()),
        "closed": closed,
        "ctoken": md.c_token,
        "allEnsembles": {str(s.first_entry_id): [{"id": b} for b in s.bookies] for s in md.segments},
    }


def serialized(md: LedgerMetadata) -> str:
    """``new String(LedgerMetadataSerDe.serialize(md), UTF_8)``: binary, read as UTF-8 (U+FFFD where it is not)."""
    return ledger_metadata.serialize(md.with_changes(password=_masked(md))).decode("utf-8", "replace")
