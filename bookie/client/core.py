"""The asynchronous client, :class:`ClientCore`: the state every handle shares (metadata, bookie connections,
configuration), and the ledger operations that make handles (create, open, delete). It runs on the client's event
loop; :class:`~bookie.client.bookkeeper.BookKeeper` is its blocking face."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Mapping

from bookie.client.bookie_client import BookieClient, BookieInfo
from bookie.client.config import ClientConfig
from bookie.client.placement import choose_ensemble
from bookie.client.reader import LedgerReader
from bookie.client.recovery import recover
from bookie.client.wire_client import WireBookieClient
from bookie.client.writer import LedgerWriter
from bookie.codec.digest import DigestType, master_key
from bookie.errors import (
    BKError,
    InvalidArgument,
    LedgerExists,
    NotFound,
    ServiceUnavailable,
    Unauthorized,
    error_for_status,
)
from bookie.meta.idgen import generate_ledger_id
from bookie.meta.ledger_manager import LedgerManager
from bookie.meta.ledger_metadata import LedgerMetadata, LedgerState, Segment
from bookie.meta.registration import BookieRegistry, RegisteredBookie
from bookie.meta.store import MetadataStore
from bookie.tls import Tls


class ClientCore:
    """The asynchronous client: state shared by all handles (metadata, bookie connections, configuration), used on
    the client's event loop. Recovery, re-replication, the checker, the export and the bookies' HTTP admin API
    build on it; what they may use from outside ``bookie.client`` is this:

    - ``store`` (:class:`MetadataStore`), ``ledgers`` (:class:`LedgerManager`), ``registry``
      (:class:`BookieRegistry`): the cluster's metadata. Their calls block: from the loop, run them in a thread.
    - ``config``: the :class:`ClientConfig`.
    - ``bookie(bookie_id)``: the :class:`~bookie.client.bookie_client.BookieClient` of one bookie's data operations,
      in BookKeeper's protocol (reused; closed with the client).
    - ``await writable_bookies()``: the writable bookies, as registered.
    - ``await bookie_info(bookie_id, timeout)``: GET_BOOKIE_INFO of any bookie.
    - ``check_password(ledger_id, metadata, password)``: raise Unauthorized unless it is the ledger's.
    - ``await create(...)`` (a :class:`LedgerWriter`), ``await open(...)`` (a :class:`LedgerReader`), ``await
      delete(ledger_id)``; and ``LedgerReader(core, ...)`` reads a ledger whose metadata the caller already has.

    Everything else (addresses, connections) is the client's own.
    """

    def __init__(self, store: MetadataStore, config: ClientConfig) -> None:
        self.store = store
        self.config = config
        self.ledgers = LedgerManager(store)
        self.registry = BookieRegistry(store)
        self._bookies: dict[str, BookieClient] = {}
        self._addresses: dict[str, tuple[str, int]] = {}
        self.tls = Tls(config.tls, "client") if config.tls is not None else None  # read once, shared by bookies

    def _address(self, bookie_id: str) -> tuple[str, int]:
        """Where a bookie serves BookKeeper's protocol: its registration's address, or its id for a bookie that is
        not registered (down, or replaced)."""
        address = self._addresses.get(bookie_id)
        if address is None:
            try:
                address = self.registry.get(bookie_id).address()
            except NotFound:
                host, _, port = bookie_id.rpartition(":")
                if not port.isdigit():
                    raise ServiceUnavailable(f"bookie {bookie_id} is not registered and its id is no address") from None
                address = (host, int(port))
            self._addresses[bookie_id] = address
        return address

    def bookie(self, bookie_id: str) -> BookieClient:
        """The client of one bookie's data operations."""
        client = self._bookies.get(bookie_id)
        if client is None:
            address = self._address(bookie_id)
            client = WireBookieClient(bookie_id, address, self.config.use_v2_wire_protocol, self.tls)
            self._bookies[bookie_id] = client
        return client

    async def bookie_info(self, bookie_id: str, timeout: float, address: tuple[str, int] | None = None) -> BookieInfo:
        """GET_BOOKIE_INFO of a registered bookie (in v3, on a connection of its own), at ``address`` when the
        caller read its registration already."""
        if address is None:
            address = (await asyncio.to_thread(self.registry.get, bookie_id)).address()
        client = WireBookieClient(bookie_id, address, tls=self.tls)
        try:
            return await client.bookie_info(timeout)
        finally:
            await client.close()

    async def bookie_infos(self, bookies: list[RegisteredBookie], timeout: float) -> dict[str, BookieInfo | BKError]:
        """GET_BOOKIE_INFO of every one of ``bookies`` at once: each one's answer, or the error that stands for it
        (unreachable, timed out, a status other than EOK)."""

        async def ask(bookie: RegisteredBookie) -> BookieInfo | BKError:
            try:
                answer = await self.bookie_info(bookie.bookie_id, timeout, bookie.address())
            except BKError as exc:
                return exc
            except (TimeoutError, OSError) as exc:
                return ServiceUnavailable(f"bookie {bookie.bookie_id}: {exc or type(exc).__name__}")
            if answer.status != 0:
                return error_for_status(answer.status, f"GET_BOOKIE_INFO on bookie {bookie.bookie_id}")
            return answer

        answers = await asyncio.gather(*(ask(b) for b in bookies))
        return {b.bookie_id: answer for b, answer in zip(bookies, answers, strict=True)}

    async def writable_bookies(self) -> list[RegisteredBookie]:
        bookies = await asyncio.to_thread(self.registry.list)
        for bookie in bookies:
            self._addresses[bookie.bookie_id] = bookie.address()
        return bookies

    def check_password(self, ledger_id: int, md: LedgerMetadata, password: bytes) -> None:
        if md.password is not None and md.password != password:
            raise Unauthorized(f"wrong password for ledger {ledger_id}")

    async def create(
        self,
        ensemble_size: int,
        write_quorum_size: int,
        ack_quorum_size: int,
        digest_type: DigestType,
        password: bytes,
        custom_metadata: Mapping[str, bytes] | None,
        ensemble: list[str] | None = None,
    ) -> LedgerWriter:
        """A new ledger on ``ensemble``, or on one chosen by the placement policy."""
        if not ensemble_size >= write_quorum_size >= ack_quorum_size >= 1:
            raise InvalidArgument(
                f"need ensemble >= write quorum >= ack quorum >= 1, got {ensemble_size}/{write_quorum_size}/"
                f"{ack_quorum_size}"
            )
        if ensemble is None:
            ensemble = choose_ensemble(await self.writable_bookies(), ensemble_size)
        elif len(ensemble) != ensemble_size:
            raise InvalidArgument(f"ensemble {ensemble} is not of size {ensemble_size}")
        md = LedgerMetadata(
            ensemble_size=ensemble_size,
            write_quorum_size=write_quorum_size,
            ack_quorum_size=ack_quorum_size,
            segments=(Segment(0, tuple(ensemble)),),
            digest_type=DigestType(digest_type),
            password=password,
            ctime=int(time.time() * 1000),
            custom_metadata=dict(custom_metadata or {}),
            c_token=int.from_bytes(os.urandom(7), "big"),
        )
        while True:
            ledger_id = await asyncio.to_thread(generate_ledger_id, self.store)
            try:
                version = await asyncio.to_thread(self.ledgers.create, ledger_id, md)
                break
            except LedgerExists:
                continue
        return LedgerWriter(self, ledger_id, md, version, password, master_key(password))

    async def open(self, ledger_id: int, password: bytes | None, recovery: bool) -> LedgerReader:
        """``password`` None: as an administrator, with the password in the metadata (BookKeeperAdmin's opens)."""
        md, _ = await asyncio.to_thread(self.ledgers.read, ledger_id)
        if password is None:
            password = md.password or b""
        self.check_password(ledger_id, md, password)
        if recovery and md.state != LedgerState.CLOSED:
            md = await recover(self, ledger_id, password, master_key(password))
        reader = LedgerReader(self, ledger_id, md, password, md.last_entry_id if md.is_closed else -1)
        if not md.is_closed:
            await reader.read_lac()
        return reader

    async def delete(self, ledger_id: int) -> None:
        await asyncio.to_thread(self.ledgers.delete, ledger_id)

    async def close(self) -> None:
        for client in self._bookies.values():
            await client.close()
