"""One request to a bookie's HTTP server (its admin API, its /metrics), with urllib's failures sorted into the three
that callers tell apart: an error status, no answer in time, no connection at all. The order of the ``except``
clauses is the point: HTTPError is a URLError, and TimeoutError an OSError."""

from __future__ import annotations

import ssl
import urllib.error
import urllib.request


class Unreachable(Exception):
    """No connection (refused, no route, a failed TLS handshake, a connect that timed out); the message is the
    reason in words (``Connection refused``)."""


def read_body(request: urllib.request.Request | str, timeout: float, context: ssl.SSLContext | None = None) -> bytes:
    """The body of the answer to ``request``.

    Raises:
        urllib.error.HTTPError: the server answered with an error status.
        TimeoutError: connected, but no answer within ``timeout`` seconds.
        Unreachable: no connection.
    """
    try:
        with urllib.request.urlopen(request, timeout=timeout, context=context) as response:
            body: bytes = response.read()
            return body
    except (urllib.error.HTTPError, TimeoutError):
        raise
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise Unreachable(str(getattr(reason, "strerror", None) or reason)) from None
