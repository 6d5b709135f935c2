"""Request size limits and ``OPTIONS``, answered before a request reaches any route (an ASGI middleware).

- A request line longer than ``MAX_URL_BYTES`` is a 414; headers over ``MAX_HEADER_BYTES`` in all, or more than
  ``MAX_HEADER_COUNT`` of them, a 431; a body over ``MAX_BODY_BYTES`` a 413. Bodies are read up to that limit before
  the route runs, whether the client sent a ``Content-Length`` or chunks. A path given its own limit
  (``body_limits``: the console's knowledge upload) is held to that one instead.
- Before the 413, the rest of the body is read and thrown away, up to ``OVERSIZE_DRAIN_BYTES`` more: clients send
  their whole body before they read the answer, and a connection closed on unread bytes is reset, which destroys
  the answer. A body that ends within that gets its 413 on a connection that stays usable; a longer one (or one
  announced longer by its ``Content-Length``, or waiting for ``100 Continue``) gets it with ``Connection: close``,
  and a client still sending then may see the reset instead: that is where the server stops listening.
- ``OPTIONS`` on a known path (that is not a CORS preflight, which ``CORSMiddleware`` answers) is a 204 whose
  ``Allow`` lists every method of the path; a 405 gets the same complete ``Allow`` header.

uvicorn parses requests before this runs; its h11 buffer for a request head is larger than these limits, and a head
past even that is refused, as readably, by ``app.web.http_protocol``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from starlette.datastructures import Headers, MutableHeaders
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

MAX_URL_BYTES = 8 * 1024
MAX_HEADER_BYTES = 16 * 1024
MAX_HEADER_COUNT = 100
MAX_BODY_BYTES = 256 * 1024
# How much more of a refused request is read and thrown away so that its client reads the refusal (see above):
# reading costs the server only bandwidth, and the bound keeps anyone from streaming into it for ever.
OVERSIZE_DRAIN_BYTES = 16 * 1024 * 1024
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE")


def _error(status_code: int, detail: str) -> Response:
    return JSONResponse({"detail": detail}, status_code=status_code)


class RequestLimits:
    """See the module docstring. ``routes`` are the application's, to know which methods a path allows;
    ``body_limits`` maps an exact path to the body size it accepts instead of ``MAX_BODY_BYTES``."""

    def __init__(self, app: ASGIApp, *, routes: list[BaseRoute], body_limits: Mapping[str, int] | None = None) -> None:
        self.app = app
        self.routes = routes
        self.body_limits = dict(body_limits or {})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal = self._refusal(scope)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        headers = Headers(scope=scope)
        if scope["method"] == "OPTIONS" and "access-control-request-method" not in headers:
            await self._options(scope, receive, send)
            return
        if scope["method"] in _BODY_METHODS:
            limit = self.body_limits.get(scope["path"], MAX_BODY_BYTES)
            body = await _read_body(receive, headers, limit)
            if isinstance(body, _Oversize):
                too_large = _error(413, f"The request body is larger than {limit} bytes.")
                if not (body.ended or await _drained(receive, headers, limit)):
                    too_large.headers["Connection"] = "close"
                await too_large(scope, receive, send)
                return
            receive = _replay(body, receive)
        await self.app(scope, receive, self._complete_allow(scope, send))

    @staticmethod
    def _refusal(scope: Scope) -> Response | None:
        url_bytes = len(scope.get("raw_path") or scope["path"].encode()) + len(scope.get("query_string", b""))
        if url_bytes > MAX_URL_BYTES:
            return _error(414, f"The URL is longer than {MAX_URL_BYTES} bytes.")
        raw_headers = scope.get("headers", [])
        size = sum(len(name) + len(value) + 4 for name, value in raw_headers)
        if size > MAX_HEADER_BYTES or len(raw_headers) > MAX_HEADER_COUNT:
            return _error(
                431,
                f"The request headers are too large (at most {MAX_HEADER_COUNT} headers, {MAX_HEADER_BYTES} bytes).",
            )
        return None

    def allowed_methods(self, scope: Scope) -> set[str]:
        """The methods some route answers on this path: each is tried against the routes, which also works for
        routers nested in routers."""
        allowed = set()
        for method in _METHODS:
            probe = {**scope, "method": method}
            if any(route.matches(probe)[0] is Match.FULL for route in self.routes):
                allowed.add(method)
        return allowed

    async def _options(self, scope: Scope, receive: Receive, send: Send) -> None:
        methods = self.allowed_methods(scope)
        if not methods:
            await _error(404, "Not Found")(scope, receive, send)
            return
        allow = ", ".join(sorted(methods | {"OPTIONS"}))
        await Response(status_code=204, headers={"Allow": allow})(scope, receive, send)

    def _complete_allow(self, scope: Scope, send: Send) -> Send:
        async def send_with_allow(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] == 405:
                methods = self.allowed_methods(scope)
                if methods:
                    MutableHeaders(scope=message)["Allow"] = ", ".join(sorted(methods | {"OPTIONS"}))
            await send(message)

        return send_with_allow


def _declared_length(headers: Headers) -> int | None:
    declared = headers.get("content-length", "")
    return int(declared) if declared.isascii() and declared.isdigit() and len(declared) < 20 else None


@dataclass(frozen=True)
class _Oversize:
    """A body over the limit, and whether its end has been read already."""

    ended: bool


async def _read_body(receive: Receive, headers: Headers, limit: int) -> bytes | _Oversize:
    """The whole body, or ``_Oversize`` as soon as it is known to be over ``limit``."""
    declared = _declared_length(headers)
    if declared is not None and declared > limit:
        return _Oversize(ended=False)
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return _Oversize(ended=not message.get("more_body", False))
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


async def _drained(receive: Receive, headers: Headers, limit: int) -> bool:
    """Read and throw away the rest of an oversize body; True when it ended within ``OVERSIZE_DRAIN_BYTES``."""
    declared = _declared_length(headers)
    if declared is not None and declared > limit + OVERSIZE_DRAIN_BYTES:
        return False
    if declared is not None and declared > limit and headers.get("expect", "").lower() == "100-continue":
        return False  # the client waits to be asked for its body, and is not asked: it never sends it
    discarded = 0
    while discarded <= OVERSIZE_DRAIN_BYTES:
        message = await receive()
        if message["type"] != "http.request":
            return False  # the client went away
        discarded += len(message.get("body", b""))
        if not message.get("more_body", False):
            return discarded <= OVERSIZE_DRAIN_BYTES
    return False


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()  # after the body: the client's disconnect, when it comes

    return replay
