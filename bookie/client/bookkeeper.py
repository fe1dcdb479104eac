"""The BookKeeper client: an asynchronous core on its own event loop thread, with a thin synchronous face.

    from bookie.client import BookKeeper

    with BookKeeper("zk+hierarchical://127.0.0.1:2181/ledgers") as bk:
        ledger = bk.create_ledger(ensemble_size=3, write_quorum_size=2, ack_quorum_size=2, password=b"secret")
        ledger.add_entry(b"hello")                  # blocks until acknowledged; returns the entry id
        futures = [ledger.add_entry_async(b"x%d" % i) for i in range(1000)]   # pipelined
        ledger.close()
        with bk.open_ledger(ledger.ledger_id, password=b"secret") as reader:
            for entry in reader.read(0, reader.last_add_confirmed):
                print(entry.entry_id, entry.payload)

Every blocking call is the coroutine of the async core (:class:`~bookie.client.core.ClientCore`) run on the
client's loop (``.result()``), so there is one implementation of each operation.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import queue
import threading
from collections.abc import AsyncIterator, Coroutine, Iterable, Iterator
from typing import Any, Generic, TypeVar

from bookie.client.config import ClientConfig
from bookie.client.core import ClientCore
from bookie.client.reader import LedgerReader
from bookie.client.writer import LedgerWriter
from bookie.codec.digest import DigestType
from bookie.codec.entry import Entry
from bookie.errors import InvalidArgument, error_for_status
from bookie.meta.ledger_metadata import LedgerMetadata
from bookie.meta.store import MetadataStore
from bookie.meta.uri import parse_service_uri

_T = TypeVar("_T")


def _put(handoff: queue.Queue[_T], item: _T, stopped: threading.Event) -> None:
    """Hand a batch to the consumer; give up once it stopped reading."""
    while not stopped.is_set():
        try:
            handoff.put(item, timeout=0.2)
            return
        except queue.Full:
            continue


class _Stop:
    """The last item of a :class:`_Feed`: the source ended, or failed with ``error``."""

    __slots__ = ("error",)

    def __init__(self, error: Exception | None = None) -> None:
        self.error = error


class _Feed(Generic[_T]):
    """An iterable read on a daemon thread, handed to the client's loop as an async iterator (``limit`` items
    read ahead at most). One wake-up of the loop per burst of items, not per item."""

    def __init__(self, items: Iterable[_T], loop: asyncio.AbstractEventLoop, limit: int) -> None:
        self._loop = loop
        self._items: collections.deque[_T | _Stop] = collections.deque()
        self._room = threading.Semaphore(limit)
        self._ready = asyncio.Event()
        self._stopped = False
        threading.Thread(target=self._read, args=(items,), name="bookkeeper-feed", daemon=True).start()

    def _read(self, items: Iterable[_T]) -> None:
        try:
            for item in items:
                self._room.acquire()
                if self._stopped:
                    return
                self._push(item)
            self._push(_Stop())
        except Exception as exc:  # noqa: BLE001 - the caller's iterable failed: raised on the loop, to the caller
            self._push(_Stop(exc))

    def stop(self) -> None:
        """The consumer is gone (done, failed or cancelled): the thread ends after its current read."""
        self._stopped = True
        self._room.release()

    def _push(self, item: _T | _Stop) -> None:
        self._items.append(item)  # before the check: the loop clears the event before it drains (no lost wake-up)
        if not self._ready.is_set():
            self._loop.call_soon_threadsafe(self._ready.set)

    async def __aiter__(self) -> AsyncIterator[_T]:
        items = self._items
        while True:
            self._ready.clear()
            while items:
                item = items.popleft()
                if isinstance(item, _Stop):
                    if item.error is not None:
                        raise item.error
                    return
                self._room.release()
                yield item
            await self._ready.wait()


def _new_event_loop() -> asyncio.AbstractEventLoop:
    try:
        import uvloop  # less CPU per add than asyncio's own loop (pyproject.toml has the figure)

        return uvloop.new_event_loop()
    except ImportError:
        return asyncio.new_event_loop()


def _password(password: bytes | str | None) -> bytes:
    return password.encode() if isinstance(password, str) else (password or b"")


class BookKeeper:
    """A client of one cluster, blocking. A context manager; ``close()`` ends its connections and its ZooKeeper
    session. ``core`` is the :class:`ClientCore` under it, for asynchronous callers (on ``loop``, via ``run``)."""

    def __init__(
        self, service_uri: str | None = None, config: ClientConfig | None = None, store: MetadataStore | None = None
    ) -> None:
        """Connect to the cluster of ``service_uri`` (or use an open ``store``, which stays the caller's)."""
        self.config = config or ClientConfig()
        self._owns_store = store is None
        if store is None:
            if service_uri is None:
                raise InvalidArgument("a BookKeeper client needs a service URI or an open metadata store")
            store = MetadataStore(parse_service_uri(service_uri))
        self._store = store
        self._loop = _new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="bookkeeper-client", daemon=True)
        self._thread.start()
        self.core = ClientCore(self._store, self.config)

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The client's event loop (its own thread): where the async core's coroutines run."""
        return self._loop

    def run(self, coroutine: Coroutine[Any, Any, _T]) -> _T:
        """Run a coroutine of the async core on the client's loop and wait for its result."""
        future = asyncio.run_coroutine_threadsafe(coroutine, self._loop)
        try:
            return future.result()
        except BaseException:  # interrupted (Ctrl-C, SIGTERM): stop the coroutine too, not only the wait for it
            future.cancel()
            raise

    def __enter__(self) -> BookKeeper:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def create_ledger(
        self,
        ensemble_size: int | None = None,
        write_quorum_size: int | None = None,
        ack_quorum_size: int | None = None,
        digest_type: DigestType | str | None = None,
        password: bytes | str | None = b"",
        custom_metadata: dict[str, bytes] | None = None,
    ) -> LedgerHandle:
        """A new OPEN ledger on an ensemble chosen by rack-aware placement."""
        config = self.config
        if isinstance(digest_type, str):
            digest_type = DigestType.parse(digest_type)
        writer = self.run(
            self.core.create(
                ensemble_size or config.ensemble_size,
                write_quorum_size or config.write_quorum_size,
                ack_quorum_size or config.ack_quorum_size,
                digest_type or config.digest_type,
                _password(password),
                custom_metadata,
            )
        )
        return LedgerHandle(self, writer)

    def open_ledger(self, ledger_id: int, password: bytes | str | None = b"", recovery: bool = True) -> ReadHandle:
        """Open for reading. With ``recovery`` an open ledger is fenced and closed first (its writer stops);
        without, nothing changes and reads go up to the LAC."""
        return ReadHandle(self, self.run(self.core.open(ledger_id, _password(password), recovery)))

    def delete_ledger(self, ledger_id: int) -> None:
        self.run(self.core.delete(ledger_id))

    def ledger_metadata(self, ledger_id: int) -> LedgerMetadata:
        return self.core.ledgers.read(ledger_id)[0]

    def bookie_info(self, bookie_id: str, timeout: float = 5.0) -> tuple[int, int]:
        """GET_BOOKIE_INFO of any bookie, ours or Java: ``(total disk capacity, free disk space)`` in bytes."""
        answer = self.run(self.core.bookie_info(bookie_id, timeout))
        if answer.status:
            raise error_for_status(answer.status, f"GET_BOOKIE_INFO on bookie {bookie_id}: status {answer.status}")
        return answer.total_disk_capacity, answer.free_disk_space

    async def _shutdown(self) -> None:
        """Close the connections, then end what still runs on the loop (an interrupted caller's operations), as
        ``asyncio.run`` does, so that nothing is left pending when the loop stops."""
        await self.core.close()
        others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in others:
            task.cancel()
        if others:
            await asyncio.wait(others, timeout=5)

    def close(self) -> None:
        if self._loop.is_running():
            self.run(self._shutdown())
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
        if not self._loop.is_running() and not self._loop.is_closed():
            self._loop.close()  # its selector and self-pipe: three descriptors per client otherwise
        if self._owns_store:
            self._store.close()


class LedgerHandle:
    """A ledger open for writing."""

    def __init__(self, bk: BookKeeper, writer: LedgerWriter):
        self._bk, self._writer = bk, writer
        self.ledger_id = writer.ledger_id

    def __enter__(self) -> LedgerHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        if not self._writer.closed:
            self.close()

    @property
    def last_add_confirmed(self) -> int:
        return self._writer.lac

    @property
    def length(self) -> int:
        return self._writer.lac_length

    @property
    def ensemble(self) -> list[str]:
        """The bookies the next entries go to (the last segment's, after any ensemble change)."""
        return list(self._writer.ensemble)

    def add_entry_async(self, data: bytes) -> concurrent.futures.Future[int]:
        """Pipelined add: a future of the entry id. Entries complete in entry-id order."""

        async def append() -> int:
            return await self._writer.append(data)

        return asyncio.run_coroutine_threadsafe(append(), self._bk._loop)

    def add_entry(self, data: bytes) -> int:
        return self.add_entry_async(data).result()

    def add_entries(self, entries: Iterable[bytes], max_outstanding: int = 1000) -> int:
        """Add many entries, pipelined, ``max_outstanding`` at most in flight; return the last entry id.

        ``entries`` is iterated on a thread of its own: a source that blocks (a quiet pipe) never blocks the
        client's loop, so an interrupted caller can still close the ledger."""
        feed = _Feed(entries, self._bk.loop, max_outstanding)

        async def add_all() -> int:
            window = asyncio.Semaphore(max_outstanding)
            last = -1
            futures: list[asyncio.Future[int]] = []

            def settled(future: asyncio.Future[int]) -> None:
                window.release()
                if not future.cancelled():
                    future.exception()  # seen: the writer's error is raised by append or gather, once

            async for data in feed:
                await window.acquire()
                future = self._writer.append(data)
                future.add_done_callback(settled)
                futures.append(future)
                if len(futures) >= max_outstanding * 4:
                    last = max(await asyncio.gather(*futures))
                    futures = []
            if futures:
                last = max(await asyncio.gather(*futures))
            return last

        try:
            return self._bk.run(add_all())
        finally:
            feed.stop()

    def close(self) -> LedgerMetadata:
        """Wait for pending adds, then close the ledger at its LAC."""
        return self._bk.run(self._writer.close())

    def close_acknowledged(self) -> LedgerMetadata:
        """After a failed write or an interrupt: wait for the adds in flight, then close at the last acknowledged
        entry even though the writer failed. What was acknowledged stays readable."""
        return self._bk.run(self._writer.close(despite_failure=True))


class ReadHandle:
    """A ledger open for reading (closed, or open and read up to its LAC)."""

    def __init__(self, bk: BookKeeper, reader: LedgerReader):
        self._bk, self._reader = bk, reader
        self.ledger_id = reader.ledger_id
        self.metadata = reader.metadata

    def __enter__(self) -> ReadHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    @property
    def last_add_confirmed(self) -> int:
        return self._reader.lac

    @property
    def corruptions(self) -> list[str]:
        """Every corrupt replica met while reading: ledger, entry, bookie."""
        return list(self._reader.corruptions)

    def read(self, first: int, last: int) -> list[Entry]:
        return self._bk.run(self._reader.read(first, last))

    def iter_entries(self, first: int, last: int) -> Iterator[Entry]:
        """Entries ``first..last`` in order, streamed: the client reads ahead while the caller consumes."""
        handoff: queue.Queue[list[Entry] | BaseException | None] = queue.Queue(maxsize=4)
        stopped = threading.Event()

        async def pump() -> None:
            try:
                async for window in self._reader.iter_windows(first, last):
                    await asyncio.to_thread(_put, handoff, window, stopped)
                await asyncio.to_thread(_put, handoff, None, stopped)
            except BaseException as exc:  # noqa: BLE001 - whatever ended the reads is raised in the consumer's thread
                await asyncio.to_thread(_put, handoff, exc, stopped)

        asyncio.run_coroutine_threadsafe(pump(), self._bk._loop)
        try:
            while (item := handoff.get()) is not None:
                if isinstance(item, BaseException):
                    raise item
                yield from item
        finally:
            stopped.set()

    def read_lac(self) -> int:
        return self._bk.run(self._reader.read_lac())

    def wait_for_lac(self, previous: int, timeout: float = 10.0) -> int:
        """Long poll: the LAC, once it is above ``previous`` or ``timeout`` seconds passed."""
        return self._bk.run(self._reader.wait_for_lac(previous, timeout))
