"""A connected ZooKeeper session, with kazoo's errors translated into the core's.

Nothing outside ``bookie.meta`` sees kazoo exceptions: every call that reaches ZooKeeper goes through
:func:`zk_errors`, which maps them onto :mod:`bookie.errors`.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator
from typing import Protocol, TypeVar

from kazoo.client import KazooClient
from kazoo.exceptions import (
    AuthFailedError,
    BadVersionError,
    ConnectionLoss,
    KazooException,
    NoAuthError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    OperationTimeoutError,
    SessionExpiredError,
)
from kazoo.handlers.threading import AsyncResult, KazooTimeoutError, SequentialThreadingHandler
from kazoo.protocol.states import KazooState
from kazoo.retry import KazooRetry

from bookie.errors import BKError, MetadataVersionConflict, NotFound, ServiceUnavailable, Unauthorized
from bookie.meta.security import ZkSecurity
from bookie.meta.uri import ServiceUri

log = logging.getLogger(__name__)

CONNECT_TIMEOUT = 8.0  # seconds: an unreachable ZooKeeper fails a command in well under 10 s
SESSION_TIMEOUT = 10.0

_T_co = TypeVar("_T_co", covariant=True)


# ---- kazoo, typed: it ships no type information, so these say what the calls we make take and return ----
class ZnodeStat(Protocol):
    """kazoo's ``ZnodeStat``: the fields of a znode's ``Stat`` that we read."""

    @property
    def version(self) -> int: ...
    @property
    def ctime(self) -> int: ...  # ms
    @property
    def mtime(self) -> int: ...  # ms: the last change of its data
    @property
    def ephemeralOwner(self) -> int: ...  # the owning session's id; 0 for a persistent znode


class ZkResult(Protocol[_T_co]):
    """kazoo's ``IAsyncResult`` of an ``*_async`` call."""

    def get(self, block: bool = True, timeout: float | None = None) -> _T_co: ...


class ZkTransaction(Protocol):
    """kazoo's ``TransactionRequest``: operations applied all or none by one ``multi``."""

    def create(self, path: str, value: bytes = b"", *, ephemeral: bool = False) -> None: ...
    def delete(self, path: str, version: int = -1) -> None: ...
    def commit(self) -> list[object]: ...  # per operation: its result, or the exception that failed it
    def commit_async(self) -> ZkResult[list[object]]: ...


class ZooKeeperClient(Protocol):
    """The part of kazoo's ``KazooClient`` the metadata store uses."""

    @property
    def client_id(self) -> tuple[int, bytes] | None: ...  # (session id, password) while connected, else None
    @property
    def connected(self) -> bool: ...
    def start(self, timeout: float = 15) -> None: ...
    def stop(self) -> None: ...
    def close(self) -> None: ...
    def add_listener(self, listener: Callable[[str], object]) -> None: ...  # called with a KazooState
    def remove_listener(self, listener: Callable[[str], object]) -> None: ...
    def create(
        self, path: str, value: bytes = b"", *, ephemeral: bool = False, sequence: bool = False, makepath: bool = False
    ) -> str: ...  # the path created (with its sequence number)
    def ensure_path(self, path: str) -> object: ...
    def exists(self, path: str, watch: Callable[[object], object] | None = None) -> ZnodeStat | None: ...
    def get(self, path: str) -> tuple[bytes, ZnodeStat]: ...
    def get_async(self, path: str) -> ZkResult[tuple[bytes, ZnodeStat]]: ...
    def get_children(self, path: str) -> list[str]: ...
    def set(self, path: str, value: bytes, version: int = -1) -> ZnodeStat: ...
    def delete(self, path: str, version: int = -1, recursive: bool = False) -> object: ...
    def transaction(self) -> ZkTransaction: ...


_SASL_REFUSED = "{what}: ZooKeeper refused the SASL login (wrong username or password?)"


@contextlib.contextmanager
def zk_errors(what: str) -> Iterator[None]:
    """Translate kazoo exceptions raised inside the block; ``what`` names the operation for the message."""
    try:
        yield
    except (NodeExistsError, NotEmptyError):
        raise  # callers decide what an existing or non-empty node means
    except BadVersionError:
        raise MetadataVersionConflict(f"{what}: changed concurrently (version conflict)") from None
    except NoNodeError:
        raise NotFound(f"{what}: no such znode") from None
    except AuthFailedError:
        raise Unauthorized(_SASL_REFUSED.format(what=what)) from None
    except NoAuthError:
        raise Unauthorized(
            f"{what}: ZooKeeper denied access (a secure cluster's znodes are its creator's: authenticate as that "
            "user with zkDigestAuthFile or java.security.auth.login.config)"
        ) from None
    except (ConnectionLoss, SessionExpiredError, OperationTimeoutError, KazooTimeoutError) as exc:
        raise ServiceUnavailable(f"{what}: lost the ZooKeeper connection ({type(exc).__name__})") from None
    except KazooException as exc:
        raise BKError(f"{what}: ZooKeeper error {type(exc).__name__}") from None


# Fields of kazoo's requests that hold a secret: a digest login's user:password (Auth), the session's password
# (Connect), SASL tokens.
_SECRET_FIELDS = frozenset({"auth", "passwd", "challenge"})


def _redacted(value: object) -> object:
    """``value`` as a log record may show it: bytes by their length only (znode data: ledger metadata holds the
    ledger's password), a request's secret fields hidden, stats and strings (paths, hosts) as they are."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return f"<{len(value)} bytes>"
    fields: tuple[str, ...] | None = getattr(value, "_fields", None)
    if isinstance(value, tuple) and fields is not None:  # kazoo's requests and responses are named tuples
        if type(value).__name__ == "ZnodeStat":
            return value
        shown = (f"{f}=<hidden>" if f in _SECRET_FIELDS else f"{f}={_redacted(getattr(value, f))!r}" for f in fields)
        return f"{type(value).__name__}({', '.join(shown)})"
    if isinstance(value, (tuple, list)):
        return [_redacted(item) for item in value]
    return value


class _RedactSecrets(logging.Filter):
    """kazoo logs each request and response whole at debug level (bkctl -vv): this keeps what each is and its path,
    and no secret (see :func:`_redacted`)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(_redacted(arg) for arg in record.args)
        return True


KAZOO_LOG = logging.getLogger("kazoo.client")  # every session's (MetadataStore passes it to kazoo)
KAZOO_LOG.addFilter(_RedactSecrets())


class _BoundedResult(AsyncResult):  # type: ignore[misc]  # kazoo's classes are untyped (Any)
    def get(self, block: bool = True, timeout: float | None = None) -> object:
        return super().get(block, self._handler.operation_timeout if timeout is None else timeout)


class _BoundedHandler(SequentialThreadingHandler):  # type: ignore[misc]  # kazoo's classes are untyped (Any)
    """kazoo's threading handler, with a limit on every blocking call. While the connection is down kazoo queues a
    request until it reconnects, and its synchronous calls wait for the answer without a timeout: with reconnection
    unbounded, a command, a GC run or a bookie's shutdown would wait for as long as ZooKeeper is away. A call past
    the limit raises KazooTimeoutError (ServiceUnavailable, through zk_errors)."""

    def __init__(self, operation_timeout: float):
        super().__init__()
        self.operation_timeout = operation_timeout

    def async_result(self) -> _BoundedResult:
        return _BoundedResult(self)


class MetadataStore:
    """One ZooKeeper session for one service URI. A context manager; :meth:`close` ends the session.

    ``security``: how the session authenticates and whether what it creates is private to it (see
    :mod:`bookie.meta.security`); by default from the environment's ``BKCTL_ZK_*`` variables."""

    def __init__(
        self,
        uri: ServiceUri,
        connect_timeout: float = CONNECT_TIMEOUT,
        session_timeout: float = SESSION_TIMEOUT,
        security: ZkSecurity | None = None,
    ):
        self.uri = uri
        self.root = uri.root
        self.security = security if security is not None else ZkSecurity.from_settings()
        login = f"log in to ZooKeeper at {uri.zk_hosts} as {self.security.identity}"
        # Reconnect for as long as the session lives: kazoo ends its connection thread for good when this policy
        # gives up, which left a bookie (or the auditor) running but cut off after a short ZooKeeper outage.
        # The first connection is bounded by start(timeout) below, every later call by the handler (_BoundedHandler).
        retry = KazooRetry(max_tries=-1, delay=0.2, max_delay=2.0)
        self.zk: ZooKeeperClient = KazooClient(
            hosts=uri.zk_hosts,
            timeout=session_timeout,
            connection_retry=retry,
            handler=_BoundedHandler(max(connect_timeout, session_timeout)),
            command_retry=KazooRetry(max_tries=5, delay=0.1, max_delay=1.0),
            logger=KAZOO_LOG,
            **self.security.kazoo_options(),
        )
        # kazoo calls the session connected, then logs in, then start() checks that it is still connected: a refusal
        # answered in between (the session closed, LOST) reaches here as a time-out, and is told apart by this
        states: list[str] = []
        self.zk.add_listener(states.append)
        try:
            self.zk.start(timeout=connect_timeout)
        except KazooTimeoutError:
            self.zk.stop()
            self.zk.close()
            if self.security.sasl is not None and states[:2] == [KazooState.CONNECTED, KazooState.LOST]:
                raise Unauthorized(_SASL_REFUSED.format(what=login)) from None
            raise ServiceUnavailable(
                f"cannot reach ZooKeeper at {uri.zk_hosts} (gave up after {connect_timeout:g} s)"
            ) from None
        self.zk.remove_listener(states.append)
        self._closed = False
        if self.security.sasl is not None:
            # kazoo reports the session connected before its SASL login is answered: a refused login would surface
            # as the first request's failure, perhaps deep in a command; one round trip makes it this one's
            try:
                with zk_errors(login):
                    self.zk.exists("/")
            except BKError:
                self.close()
                raise

    def __enter__(self) -> MetadataStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """End the session (its ephemeral znodes go with it); a second call does nothing."""
        if not self._closed:
            self._closed = True
            self.zk.stop()
            self.zk.close()

    @property
    def session_id(self) -> int | None:
        """This session's id (the ``ephemeralOwner`` of the znodes it creates); None while disconnected."""
        client_id = self.zk.client_id
        return client_id[0] if client_id is not None else None

    def owns(self, path: str) -> bool:
        """Whether ``path`` is an ephemeral znode of this session."""
        with zk_errors(f"check {path}"):
            stat = self.zk.exists(path)
        return stat is not None and stat.ephemeralOwner == self.session_id

    def delete_own(self, path: str) -> None:
        """Delete the ephemeral ``path`` only if this session created it: another session's (a second process with
        the same bookie id, a lock taken after ours expired) stays. Between the check and the delete it could only
        change hands if ours went away first: ephemeral znodes are never taken over."""
        if not self.owns(path):
            return
        try:
            with zk_errors(f"delete {path}"):
                self.zk.delete(path)
        except NotFound:
            pass

    @property
    def connected(self) -> bool:
        """Whether the session is connected now (while it is not, its ephemeral znodes may be gone with it)."""
        return self.zk.connected

    def on_session(self, lost: Callable[[], object], connected: Callable[[], object]) -> None:
        """Call ``lost`` when the session expires (its ephemeral znodes are gone), and ``connected`` each time the
        connection is up again — after an expiry, on the new session kazoo opened. Both run on kazoo's thread, which
        they must not block: no ZooKeeper call in them."""

        def listener(state: str) -> None:
            if state == KazooState.LOST:
                lost()
            elif state == KazooState.CONNECTED:
                connected()

        self.zk.add_listener(listener)

    def path(self, *parts: str) -> str:
        return "/".join((self.root, *parts))

    def get(self, path: str) -> tuple[bytes, ZnodeStat]:
        """Data and ZnodeStat of ``path``; :class:`NotFound` when absent."""
        with zk_errors(f"read {path}"):
            return self.zk.get(path)

    def exists(self, path: str) -> ZnodeStat | None:
        with zk_errors(f"check {path}"):
            return self.zk.exists(path)

    def children(self, path: str) -> list[str]:
        """Children of ``path``; an empty list when it does not exist."""
        try:
            with zk_errors(f"list {path}"):
                return self.zk.get_children(path)
        except NotFound:
            return []

    def delete_empty_parents(self, path: str, stop: str) -> None:
        """Remove the parents of ``path`` up to (not including) ``stop`` while they are empty."""
        parent = path.rsplit("/", 1)[0]
        while parent.startswith(stop + "/"):
            try:
                with zk_errors(f"delete {parent}"):
                    self.zk.delete(parent)
            except (NotEmptyError, NotFound):
                return
            parent = parent.rsplit("/", 1)[0]
