"""What the handlers of the HTTP admin API share: BookKeeper's ways of answering (Jackson bodies, the 500 with no
body of a handler that threw, the 503 of a bookie not started yet) and of reading a request (Vert.x's parameters
and body, Java's number parsing)."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from aiohttp import web

from bookie.codec.jackson import hash_map, pretty

NOT_STARTED = "Bookie is not fully started yet"
_Api = TypeVar("_Api")
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
INT_BITS, LONG_BITS = 32, 64


def text(status: int, body: str, content_type: str = "text/plain") -> web.Response:
    """BookKeeper's Vert.x server sends its bodies without a content type (but /metrics'); aiohttp always sends
    one (RFC 9110), so ours say what they are."""
    return web.Response(status=status, text=body, content_type=content_type)


def jackson(value: Any, status: int = 200) -> web.Response:
    """A body as ``JsonUtil.toJson`` writes it."""
    return text(status, pretty(value), "application/json")


class Failed(Exception):
    """A handler's exception: BookKeeper's Vert.x handler answers it with ErrorHttpService, 500 and no body."""


def started(
    handler: Callable[[_Api, web.Request], Awaitable[web.Response]],
) -> Callable[[_Api, web.Request], Awaitable[web.Response]]:
    """For a handler that needs the bookie started (its storage, its ZooKeeper session): 503 until then."""

    @functools.wraps(handler)
    async def guarded(self: Any, request: web.Request) -> web.Response:
        if not self.bookie.running:
            return text(503, NOT_STARTED)  # replaying, or waiting for ZooKeeper
        return await handler(self, request)

    return guarded


def params(request: web.Request) -> dict[str, str]:
    """The query parameters as VertxAbstractHandler.convertParams gives them: of a repeated name, the last."""
    return dict(request.query.items())


def java_map(values: dict[str, str]) -> str:
    """``HashMap.toString()``: ``{k=v, k2=v2}`` in the map's order."""
    return "{" + ", ".join(f"{k}={v}" for k, v in hash_map(values.items()).items()) + "}"


async def request_body(request: web.Request) -> str | None:
    """The body as Vert.x's BodyHandler hands it over: None for a request without one (neither Content-Length nor
    Transfer-Encoding), else its text, perhaps empty."""
    if "Content-Length" not in request.headers and "Transfer-Encoding" not in request.headers:
        return None
    return await request.text()


def parse_json(text: str | None) -> Any:
    """``JsonUtil.fromJson``; what it cannot read fails the handler."""
    try:
        return json.loads(text or "")
    except ValueError:
        raise Failed(f"not JSON: {(text or '')[:100]!r}") from None


def parse_json_map(text: str | None) -> dict[str, Any] | None:
    """``JsonUtil.fromJson(text, HashMap.class)``: an object, or None for ``null``; anything else fails."""
    value = parse_json(text)
    if not isinstance(value, (dict, type(None))):
        raise Failed(f"not a JSON object: {(text or '')[:100]!r}")
    return value


async def body_field(request: web.Request, field: str, no_body: str, no_field: str) -> Any:
    """``field`` of the JSON object in the body (``JsonUtil.fromJson(body, HashMap.class)``): 404 with ``no_body``
    without a body, with ``no_field`` without the field; a body that is no JSON object fails."""
    asked = await request_body(request)
    if asked is None:
        raise web.HTTPNotFound(text=no_body)
    fields = parse_json_map(asked)
    if fields is None or field not in fields:
        raise web.HTTPNotFound(text=no_field)
    return fields[field]


async def json_body(request: web.Request) -> Any:
    return parse_json(await request.text())


def java_number(text: str | None, bits: int = LONG_BITS) -> int:
    """``Long.parseLong`` (``Integer.parseInt`` with 32 bits): a sign and digits, in range; anything else fails the
    handler, as its NumberFormatException does."""
    if text is None or not re.fullmatch(r"[+-]?[0-9]+", text):
        raise Failed(f"not a number: {text!r}")
    value = int(text)
    if not -(1 << (bits - 1)) <= value < 1 << (bits - 1):
        raise Failed(f"out of range: {text}")
    return value


def java_int(value: Any) -> int:
    """A JSON value that Jackson reads into a ``HashMap`` as an ``Integer``; anything else (a Long, a Double, a
    String, null) fails the handler, as its cast to int does."""
    if isinstance(value, bool) or not isinstance(value, int) or not -(1 << 31) <= value < 1 << 31:
        raise Failed(f"not an int: {value!r}")
    return value
