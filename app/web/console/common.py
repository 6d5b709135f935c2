"""What every console route shares: HTML responses, the console's error pages, its security headers and its streams.

Console routes are server-rendered pages and htmx fragments. A request from htmx (``HX-Request``) gets a fragment;
a plain browser request (a form posted without JavaScript) gets a redirect back to the page (303) or a whole page.
Errors are ``ConsoleError``: rendered as a short message that htmx shows in the page's notice area, or as an
error page. A path, query or form value that fails validation is one too (400, the problem in a sentence), not the
API's 422 list: routers are made by ``console_router``, whose routes are ``ConsoleRoute``. None of these routes is
part of the public API document.

``ConsoleSecurityHeaders`` adds to every ``/console`` response a strict Content-Security-Policy (scripts, styles
and connections from this origin only, no framing, forms posting only here), ``nosniff``, no referrer outside the
origin, and ``no-store`` so that a signed-out browser's back button shows no staff page.

``console_stream`` is the body of a page's live stream (``app.web.event_streams``): the broker's events as that page
names them, until the staff member's session ends.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Mapping
from typing import Any

from fastapi import APIRouter, FastAPI, HTTPException, Request, status
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.routing import APIRoute
from fastapi.sse import ServerSentEvent
from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.console.rendering import render
from app.live.broker import Event, Subscription, SubscriptionClosed
from app.web.event_streams import reconnect_delay
from app.web.input import describe_validation_error

CONSOLE_PREFIX = "/console"
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
        "object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"
    ),
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
    "Cross-Origin-Opener-Policy": "same-origin",
}
NO_STORE = "no-store"


class ConsoleError(HTTPException):
    """An error a staff member sees as a sentence (htmx shows it in the notice area)."""

    def __init__(self, status_code: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(status_code=status_code, detail=message, headers=headers)


def is_htmx(request: Request) -> bool:
    return request.headers.get("HX-Request") == "true"


def page(request: Request, template: str, status_code: int = status.HTTP_200_OK, **context: Any) -> HTMLResponse:
    return HTMLResponse(render(template, request=request, **context), status_code=status_code)


def after_action(request: Request, url: str, template: str | None = None, **context: Any) -> Response:
    """The answer to a form: the refreshed fragment for htmx, else a redirect to ``url``."""
    if is_htmx(request) and template is not None:
        return page(request, template, **context)
    if is_htmx(request):
        return Response(status_code=status.HTTP_204_NO_CONTENT)
    return RedirectResponse(url, status_code=status.HTTP_303_SEE_OTHER)


def error_page(request: Request, status_code: int, message: str, headers: Mapping[str, str] | None = None) -> Response:
    """A console error as htmx's notice fragment, or as a whole error page for a plain browser request."""
    template = "_flash.html" if is_htmx(request) else "error.html"
    response = page(request, template, status_code=status_code, message=message, kind="error")
    for name, value in (headers or {}).items():
        response.headers[name] = value
    return response


class ConsoleRoute(APIRoute):
    """A console route: a request whose path, query or form fails validation is a ``ConsoleError`` (400), shown to
    staff as a sentence like any other refusal (FastAPI's custom-route pattern)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def console_handler(request: Request) -> Response:
            try:
                return await handler(request)
            except RequestValidationError as error:
                raise ConsoleError(status.HTTP_400_BAD_REQUEST, describe_validation_error(error)) from error

        return console_handler


def console_router(prefix: str = CONSOLE_PREFIX) -> APIRouter:
    """A router for console pages: ``ConsoleRoute`` routes, none in the API document."""
    return APIRouter(prefix=prefix, include_in_schema=False, route_class=ConsoleRoute)


async def _console_error(request: Request, error: Exception) -> Response:
    assert isinstance(error, ConsoleError)
    return error_page(request, error.status_code, error.detail, error.headers)


class ConsoleSecurityHeaders:
    """ASGI middleware: the headers above on every response under ``/console``."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not str(scope.get("path", "")).startswith(CONSOLE_PREFIX):
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in SECURITY_HEADERS.items():
                    headers[name] = value
                if "cache-control" not in headers:
                    headers["Cache-Control"] = NO_STORE
            await send(message)

        await self.app(scope, receive, send_with_headers)


def install(app: FastAPI) -> None:
    """The console's error pages and security headers (the routers are included by the application factory)."""
    app.add_exception_handler(ConsoleError, _console_error)
    app.add_middleware(ConsoleSecurityHeaders)


# A console stream's session is checked after this much silence (a signed-out staff member's stream ends).
SESSION_CHECK_S = 15.0


def console_event(event: Event, name: str, data: str = "{}") -> ServerSentEvent:
    """``event`` as the page's ``name`` event; htmx swaps ``data`` in (an HTML fragment), or only reloads a part."""
    return ServerSentEvent(id=event.id, event=name, raw_data=data)


async def console_stream(
    subscription: Subscription,
    frame: Callable[[Event], Awaitable[ServerSentEvent | None]],
    still_signed_in: Callable[[], Awaitable[bool]],
) -> AsyncIterator[ServerSentEvent]:
    """The server-sent events of a console page (``app.web.event_streams``): each broker event as ``frame`` makes
    it (None: not for this page), until the broker ends the subscription or the staff member is signed out."""
    yield reconnect_delay()
    while True:
        try:
            event = await subscription.next(SESSION_CHECK_S)
        except SubscriptionClosed:
            return
        if event is None:
            if not await still_signed_in():
                return
            continue
        sent = await frame(event)
        if sent is not None:
            yield sent
