"""A team's website for the web-import tests: an ASGI app served by uvicorn (``app_in_thread``) on 127.0.0.1.

``running_site()`` yields a ``LocalSite`` whose routes a test sets before it imports: ``page`` (HTML), ``text``,
``redirect``, ``sitemap`` (a ``urlset`` or ``sitemapindex``, gzipped on request), ``robots``, and any ``Route``
with a delay before its head (``delay_s``, a server that does not answer in time), a delay between body pieces
(``drip_s``, one that answers too slowly) or a body repeated ``repeat`` times without a length (a huge response).
An unknown path answers 404. The site records what it was asked: ``requests`` (paths, in order), ``user_agents``,
``hosts`` (Host headers), ``bytes_sent`` per path (what a huge response sent before the client hung up) and
``most_in_flight`` (the most requests it was serving at once).

Off-site addresses: the site answers on 127.0.0.1, so ``url(path, host="localhost")`` names the same server under
another host: a different site for the importer's same-site rule.
"""

from __future__ import annotations

import asyncio
import gzip
import threading
from collections import defaultdict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from xml.sax.saxutils import escape

from tests.support.servers import app_in_thread

HTML = "text/html; charset=utf-8"
SITEMAP_NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
PIECE_BYTES = 64 * 1024


@dataclass
class Route:
    body: bytes = b""
    content_type: str = HTML
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0  # before the response head
    drip_s: float = 0.0  # between pieces of the body
    repeat: int = 1  # the body sent this many times, without Content-Length


class LocalSite:
    """Routes by path, and what the site saw; ``base_url`` is set once the server runs."""

    def __init__(self) -> None:
        self.routes: dict[str, Route] = {}
        self.base_url = ""
        self.requests: list[str] = []
        self.user_agents: set[str] = set()
        self.hosts: set[str] = set()  # Host headers received
        self.bytes_sent: dict[str, int] = defaultdict(int)
        self.most_in_flight = 0
        self._in_flight = 0
        self._lock = threading.Lock()

    def url(self, path: str, *, host: str = "127.0.0.1") -> str:
        return self.base_url.replace("127.0.0.1", host) + path

    def page(self, path: str, title: str, body_html: str, *, head: str = "", **route: Any) -> str:
        document = (
            f"<!doctype html><html><head><title>{title}</title>{head}</head><body>"
            '<nav><a href="/">Home</a> <a href="/shop">Shop</a> <a href="/contact">Contact</a></nav>'
            f"<main><article>{body_html}</article></main>"
            "<footer>© 2026 Acme Kitchen · Privacy · Terms</footer></body></html>"
        )
        self.routes[path] = Route(body=document.encode(), **route)
        return self.url(path)

    def text(self, path: str, body: bytes, content_type: str, **route: Any) -> str:
        self.routes[path] = Route(body=body, content_type=content_type, **route)
        return self.url(path)

    def redirect(self, path: str, location: str, status: int = 302) -> str:
        self.routes[path] = Route(status=status, headers={"Location": location})
        return self.url(path)

    def robots(self, text: str) -> None:
        self.routes["/robots.txt"] = Route(body=text.encode(), content_type="text/plain")

    def sitemap(
        self,
        path: str,
        urls: Sequence[str | tuple[str, str]],
        *,
        index: bool = False,
        gzipped: bool = False,
        content_type: str = "application/xml",
    ) -> str:
        """A sitemap listing ``urls`` (each a URL, or a URL and its lastmod)."""
        root, child = ("sitemapindex", "sitemap") if index else ("urlset", "url")
        entries = []
        for entry in urls:
            loc, lastmod = (entry, None) if isinstance(entry, str) else entry
            modified = f"<lastmod>{lastmod}</lastmod>" if lastmod else ""
            entries.append(f"<{child}><loc>{escape(loc)}</loc>{modified}</{child}>")
        xml = f'<?xml version="1.0" encoding="UTF-8"?><{root} xmlns="{SITEMAP_NS}">{"".join(entries)}</{root}>'
        body = gzip.compress(xml.encode()) if gzipped else xml.encode()
        self.routes[path] = Route(body=body, content_type="application/gzip" if gzipped else content_type)
        return self.url(path)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        path = scope["path"]
        headers = dict(scope["headers"])
        with self._lock:
            self.requests.append(path)
            self.user_agents.add(headers.get(b"user-agent", b"").decode())
            self.hosts.add(headers.get(b"host", b"").decode())
            self._in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self._in_flight)
        try:
            await self._answer(path, self.routes.get(path) or Route(b"not here", "text/plain", 404), receive, send)
        finally:
            with self._lock:
                self._in_flight -= 1

    async def _answer(self, path: str, route: Route, receive: Any, send: Any) -> None:
        await asyncio.sleep(route.delay_s)
        headers = [(b"content-type", route.content_type.encode())]
        headers += [(name.lower().encode(), value.encode()) for name, value in route.headers.items()]
        if route.repeat == 1 and not route.drip_s:
            headers.append((b"content-length", str(len(route.body)).encode()))
        await send({"type": "http.response.start", "status": route.status, "headers": headers})
        hung_up = asyncio.Event()
        listener = asyncio.create_task(_wait_for_disconnect(receive, hung_up))
        try:
            await self._send_body(path, route, send, hung_up)
        finally:
            listener.cancel()

    async def _send_body(self, path: str, route: Route, send: Any, hung_up: asyncio.Event) -> None:
        pieces = [route.body[start : start + PIECE_BYTES] for start in range(0, len(route.body), PIECE_BYTES)]
        if route.drip_s:
            pieces = [route.body[start : start + 1] for start in range(len(route.body))]
        for _ in range(route.repeat):
            for piece in pieces:
                if hung_up.is_set():
                    return
                await send({"type": "http.response.body", "body": piece, "more_body": True})
                self.bytes_sent[path] += len(piece)
                await asyncio.sleep(route.drip_s)
        await send({"type": "http.response.body", "body": b"", "more_body": False})


async def _wait_for_disconnect(receive: Any, hung_up: asyncio.Event) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
    hung_up.set()


@contextmanager
def running_site() -> Iterator[LocalSite]:
    site = LocalSite()
    with app_in_thread(site, lifespan="off", timeout_graceful_shutdown=2) as url:
        site.base_url = url
        yield site
