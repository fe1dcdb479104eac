"""Read-only views of any ZooKeeper subtree (another application's metadata, e.g. Pulsar's), read with many
requests in flight, and a delete that happens only while other znodes are unchanged.

ZooKeeper answers one session's requests in order, so a pipeline drained in order is as fast as one drained by
callbacks: :meth:`ZooKeeperTree.read_many` keeps ``PIPELINE`` reads in flight and yields the answers as they come.
Each request costs kazoo a wake-up of its connection thread, which shares the interpreter with the caller: for
100,000 reads :meth:`ZooKeeperTree.read_batched` puts ``READS_PER_REQUEST`` of them in one request instead, a
multiRead (ZooKeeper 3.6+; on an older server it reads as read_many does).
"""

from __future__ import annotations

import struct
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import Any

from kazoo.exceptions import EXCEPTIONS, NodeExistsError, NoNodeError, NotEmptyError, UnimplementedError
from kazoo.protocol.paths import _prefix_root
from kazoo.protocol.serialization import GetData, MultiHeader, int_struct, multiheader_struct, read_buffer, stat_struct
from kazoo.protocol.states import ZnodeStat
from kazoo.retry import KazooRetry, RetryFailedError

from bookie.errors import CorruptData, InvalidArgument, NotFound, ServiceUnavailable
from bookie.meta.store import CONNECT_TIMEOUT, SESSION_TIMEOUT, MetadataStore, zk_errors
from bookie.meta.uri import ServiceUri, _host

PIPELINE = 1024  # requests in flight; ZooKeeper's default limit per connection is far above (globalOutstandingLimit)
EXPECTED = "expected HOST:PORT[,HOST:PORT...][/CHROOT]"
READS_PER_REQUEST = 200  # of a multiRead: ledger metadata of ~300 bytes each, well under jute.maxbuffer (1 MiB)
BATCHES_IN_FLIGHT = 8


class _MultiRead:
    """ZooKeeper's multiRead of getData operations (ZooDefs.OpCode.multiRead, MultiOperationRecord), as a request
    kazoo's connection sends and answers like its own: each operation a MultiHeader and a GetDataRequest, a done
    header last; the answer, per operation, ``(data, stat)`` or the error code of an ErrorResult."""

    type = 22

    def __init__(self, paths: list[str]):
        self.paths = paths

    def serialize(self) -> bytes:
        out = bytearray()
        for path in self.paths:
            out += MultiHeader(GetData.type, False, -1).serialize() + GetData(path, None).serialize()
        return bytes(out + multiheader_struct.pack(-1, True, -1))

    def deserialize(self, data: bytes, offset: int) -> list[tuple[bytes, ZnodeStat] | int] | _Malformed:
        """The answers, or what is wrong with a reply that cannot be parsed: returned, not raised, since kazoo logs
        an exception raised here with its traceback."""
        results: list[tuple[bytes, ZnodeStat] | int] = []
        try:
            header, offset = MultiHeader.deserialize(data, offset)
            while not header.done:
                if header.type == GetData.type:
                    value, offset = read_buffer(data, offset)
                    results.append((value or b"", ZnodeStat._make(stat_struct.unpack_from(data, offset))))
                    offset += stat_struct.size
                elif header.type == -1:  # an ErrorResult
                    results.append(int_struct.unpack_from(data, offset)[0])
                    offset += int_struct.size
                else:
                    return _Malformed(f"an operation of type {header.type} in the answer")
                header, offset = MultiHeader.deserialize(data, offset)
        except (struct.error, IndexError, ValueError) as exc:
            return _Malformed(f"{len(results)} answers, then {exc}")
        if len(results) != len(self.paths):
            return _Malformed(f"{len(results)} answers to {len(self.paths)} reads")
        return results


@dataclass(frozen=True)
class _Malformed:
    """A multiRead reply that cannot be parsed, and why."""

    reason: str


@dataclass(frozen=True)
class ZooKeeperAddress:
    """Where some metadata lives: ZooKeeper hosts and a root path under which it is laid out ("" for /)."""

    hosts: tuple[tuple[str, int], ...]
    root: str

    def __str__(self) -> str:
        hosts = ",".join(f"[{h}]:{p}" if ":" in h else f"{h}:{p}" for h, p in self.hosts)
        return hosts + (self.root or "")


def parse_zk_address(text: str, what: str = "ZooKeeper address") -> ZooKeeperAddress:
    """``HOST:PORT[,HOST:PORT...][/CHROOT]`` (``;`` also separates hosts; a host without a port gets 2181)."""
    hosts_text, _, path = text.strip().partition("/")
    hosts = tuple(_host(h.strip(), text) for h in hosts_text.replace(";", ",").split(",") if h.strip())
    if not hosts:
        raise InvalidArgument(f"malformed {what} {text!r}: no ZooKeeper host; {EXPECTED}")
    root = "/" + path.strip("/") if path.strip("/") else ""
    if "//" in "/" + path.rstrip("/"):
        raise InvalidArgument(f"malformed {what} {text!r}: empty path component; {EXPECTED}")
    return ZooKeeperAddress(hosts, root)


class ZooKeeperTree:
    """The subtree under ``root`` of a ZooKeeper session, read-only (except :meth:`delete_if_unchanged`)."""

    def __init__(self, store: MetadataStore, root: str, owns_store: bool = False):
        self.store = store
        self.root = root.rstrip("/")
        self._owns_store = owns_store

    @classmethod
    def connect(
        cls,
        address: ZooKeeperAddress,
        connect_timeout: float = CONNECT_TIMEOUT,
        session_timeout: float = SESSION_TIMEOUT,
    ) -> ZooKeeperTree:
        """A session of its own on ``address``, closed by :meth:`close`."""
        store = MetadataStore(ServiceUri(None, address.hosts, address.root or "/"), connect_timeout, session_timeout)
        return cls(store, address.root, owns_store=True)

    def close(self) -> None:
        if self._owns_store:
            self.store.close()

    def __enter__(self) -> ZooKeeperTree:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def path(self, *parts: str) -> str:
        """The absolute path of ``parts`` (relative to the root)."""
        return "/".join((self.root, *parts))

    def exists(self, path: str) -> bool:
        return self.store.exists(path) is not None

    def get(self, path: str) -> tuple[bytes, ZnodeStat] | None:
        """Data and stat of ``path``, or None when it does not exist."""
        try:
            data, stat = self.store.get(path)
        except NotFound:
            return None
        return data, stat

    def read_many(self, paths: Iterable[str]) -> Iterator[tuple[str, bytes | None, ZnodeStat | None]]:
        """``(path, data, stat)`` for each path, in order; ``(path, None, None)`` for one that does not exist."""
        zk = self._zk()
        return self._pipeline(paths, zk.get_async)

    def read_batched(self, paths: Iterable[str]) -> Iterator[tuple[str, bytes | None, ZnodeStat | None]]:
        """What :meth:`read_many` yields, read ``READS_PER_REQUEST`` znodes per multiRead request. A server that
        refuses the first one as unimplemented (older than ZooKeeper 3.6) is read as read_many reads, once the
        session has its connection back: such a server closes the connection after that answer."""
        zk = self._zk()
        pending: deque[tuple[list[str], Any]] = deque()
        batches = _chunks(paths, READS_PER_REQUEST)

        def send(batch: list[str]) -> None:
            answer = zk.handler.async_result()
            zk._call(_MultiRead([_prefix_root(zk.chroot, p) for p in batch]), answer)
            pending.append((batch, answer))

        def drain_one() -> Iterator[tuple[str, bytes | None, ZnodeStat | None]]:
            batch, answer = pending.popleft()
            with zk_errors(_what(batch)):
                results = answer.get()
            yield from _answers(batch, results)

        first = next(batches, None)
        if first is None:
            return
        send(first)
        _, answer = pending.popleft()
        with zk_errors(_what(first)):
            try:
                results = answer.get()
            except UnimplementedError:  # a server older than 3.6
                results = None
        if results is None:  # one read each, on the connection that replaces the one the server closes
            self._reconnected(zk)
            yield from self.read_many(chain(first, chain.from_iterable(batches)))
            return
        yield from _answers(first, results)
        for batch in batches:
            send(batch)
            if len(pending) >= BATCHES_IN_FLIGHT:
                yield from drain_one()
        while pending:
            yield from drain_one()

    def _reconnected(self, zk: Any) -> None:
        """Return once ``zk`` answers a request on a new connection. A server answers an unknown request with
        UNIMPLEMENTED and then closes the connection: ZooKeeper sends nothing after that close, so an answer
        proves kazoo has reconnected, and a request on the closing connection fails with ConnectionLoss (retried)."""
        retry = KazooRetry(max_tries=-1, delay=0.05, max_delay=1.0, ignore_expire=False, deadline=CONNECT_TIMEOUT)
        with zk_errors(f"read {self.root or '/'}"):
            try:
                retry(zk.exists, "/")
            except RetryFailedError:
                raise ServiceUnavailable(
                    f"read {self.root or '/'}: no ZooKeeper connection within {CONNECT_TIMEOUT:g} s"
                ) from None

    def children_many(self, paths: Iterable[str]) -> Iterator[tuple[str, list[str] | None]]:
        """``(path, children)`` for each path, in order; children None for a path that does not exist."""
        zk = self._zk()
        for path, answer in self._pipeline_raw(paths, zk.get_children_async):
            yield path, None if answer is None else list(answer)

    def _pipeline(self, paths: Iterable[str], call: Any) -> Iterator[tuple[str, bytes | None, ZnodeStat | None]]:
        for path, answer in self._pipeline_raw(paths, call):
            if answer is None:
                yield path, None, None
            else:
                yield path, answer[0], answer[1]

    def _pipeline_raw(self, paths: Iterable[str], call: Any) -> Iterator[tuple[str, Any]]:
        pending: deque[tuple[str, Any]] = deque()

        def drain_one() -> tuple[str, Any]:
            path, result = pending.popleft()
            try:
                with zk_errors(f"read {path}"):
                    return path, result.get()
            except (NotFound, NoNodeError):
                return path, None

        for path in paths:
            pending.append((path, call(path)))
            if len(pending) >= PIPELINE:
                yield drain_one()
        while pending:
            yield drain_one()

    def _zk(self) -> Any:
        if self.store.zk is None:
            raise InvalidArgument("the ZooKeeper session is closed")
        return self.store.zk

    def delete_if_unchanged(self, path: str, version: int, unchanged: Sequence[tuple[str, int]] = ()) -> bool:
        """Delete ``path`` at ``version`` in one transaction with a check that each ``(path, version)`` of
        ``unchanged`` is still at that version; False (nothing deleted) when any of them moved, is gone, or ``path``
        itself changed. The other znodes must be in this session's ZooKeeper."""
        transaction = self._zk().transaction()
        for other, other_version in unchanged:
            transaction.check(other, other_version)
        transaction.delete(path, version)
        with zk_errors(f"delete {path}"):
            results = transaction.commit()
        return not any(isinstance(r, Exception) for r in results)  # a failed transaction answers with exceptions

    def create_together(self, creates: Sequence[tuple[str, bytes]]) -> str | None:
        """Create every ``(path, data)`` in one transaction: None when it committed, else why not (all or nothing):
        "exists" (one of them is there), "no parent", or ZooKeeper's error."""
        transaction = self._zk().transaction()
        for path, data in creates:
            transaction.create(path, data)
        with zk_errors(f"create {creates[0][0]}"):
            results = transaction.commit()
        failed = [r for r in results if isinstance(r, Exception)]
        if not failed:
            return None
        cause = next((r for r in failed if isinstance(r, NodeExistsError | NoNodeError)), failed[0])
        return {NodeExistsError: "exists", NoNodeError: "no parent"}.get(type(cause), type(cause).__name__)

    def delete_childless(self, path: str) -> bool:
        """Delete ``path`` unless it has children (or is gone already); whether it deleted it."""
        try:
            with zk_errors(f"delete {path}"):
                self._zk().delete(path)
        except (NoNodeError, NotEmptyError):
            return False
        return True


def stat(ctime: int, mtime: int, version: int, data_length: int) -> ZnodeStat:
    """A znode's stat with these fields, the others 0 (for a tree read from somewhere else than ZooKeeper)."""
    return ZnodeStat(0, 0, ctime, mtime, version, 0, 0, 0, data_length, 0, 0)


def _answers(batch: list[str], results: list[Any]) -> Iterator[tuple[str, bytes | None, ZnodeStat | None]]:
    """A multiRead's answers as read_many yields them: an error other than "no such znode" raises."""
    if isinstance(results, _Malformed):
        raise CorruptData(f"{_what(batch)}: malformed multiRead answer from ZooKeeper ({results.reason})")
    for path, result in zip(batch, results, strict=True):
        if isinstance(result, int):
            if result != NoNodeError.code:
                with zk_errors(f"read {path}"):
                    raise EXCEPTIONS[result]()
            yield path, None, None
        else:
            yield path, result[0], result[1]


def _what(batch: list[str]) -> str:
    return f"read {batch[0]}" + (f" and {len(batch) - 1} more" if len(batch) > 1 else "")


def _chunks(items: Iterable[str], size: int) -> Iterator[list[str]]:
    chunk: list[str] = []
    for item in items:
        chunk.append(item)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk
