"""Fetching one web document politely and within limits: the HTTP half of a web import.

``SiteFetcher.fetch(url)`` answers a ``FetchedResponse`` (the final URL, content type, body) or raises
``FetchFailed`` with a sentence for the import report. On the way it:

1. refuses anything but http and https;
2. asks the site's robots.txt (``web_robots``) whether memdesk may read the URL, for every hop;
3. waits for one of the host's ``concurrency_per_host`` places, so a big sitemap never floods one site;
4. sends the request through ``PinnedTransport`` (internal addresses refused on every hop, ``web_address``);
5. follows up to ``MAX_REDIRECTS`` redirects, each only within the same site (a redirect elsewhere fails, naming
   where it went);
6. reads the body as a stream and stops past ``max_document_bytes`` or past the document's ``deadline_s`` (a server
   that drips a byte a second never trips a per-read timeout, so the deadline covers the whole document).

Exceptions: ``FetchFailed`` (the document could not be had; the import goes on with the next one).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from importlib.metadata import PackageNotFoundError, version

import httpx

from app.knowledge.web_address import PinnedTransport, RefusedAddress, Resolver, resolve_host
from app.knowledge.web_robots import RobotsAnswer, RobotsRules
from app.settings import (
    KNOWLEDGE_FETCH_CONCURRENCY_PER_HOST,
    KNOWLEDGE_FETCH_DEADLINE_S,
    KNOWLEDGE_FETCH_TIMEOUT_S,
    KNOWLEDGE_MAX_DOCUMENT_BYTES,
    KNOWLEDGE_MAX_PAGES,
    Settings,
)

# RFC 9110 leaves the limit to the client; browsers stop near 20, and a help centre needs two or three at most.
MAX_REDIRECTS = 5
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
READ_CHUNK_BYTES = 64 * 1024
ROBOTS_TOKEN = "memdesk"  # the name a site's robots.txt addresses memdesk by


def user_agent() -> str:
    try:
        release = version("memdesk")
    except PackageNotFoundError:  # a checkout run without installing
        release = "dev"
    return f"{ROBOTS_TOKEN}/{release} (knowledge import; self-hosted support desk)"


@dataclass(frozen=True)
class WebLimits:
    """How a web import behaves towards the sites it reads (the ``MEMDESK_KNOWLEDGE_*`` settings)."""

    timeout_s: float = KNOWLEDGE_FETCH_TIMEOUT_S  # connect, and each read of a response
    deadline_s: float = KNOWLEDGE_FETCH_DEADLINE_S  # one document, redirects and the whole body included
    max_document_bytes: int = KNOWLEDGE_MAX_DOCUMENT_BYTES
    concurrency_per_host: int = KNOWLEDGE_FETCH_CONCURRENCY_PER_HOST
    max_pages: int = KNOWLEDGE_MAX_PAGES  # pages one import takes from sitemaps
    allow_private: bool = False

    @classmethod
    def from_settings(cls, settings: Settings) -> WebLimits:
        return cls(
            timeout_s=settings.knowledge_fetch_timeout_s,
            deadline_s=settings.knowledge_fetch_deadline_s,
            max_document_bytes=settings.knowledge_max_document_bytes,
            concurrency_per_host=settings.knowledge_fetch_concurrency_per_host,
            max_pages=settings.knowledge_max_pages,
            allow_private=settings.knowledge_allow_private_urls,
        )


@dataclass(frozen=True)
class FetchedResponse:
    url: str  # after redirects
    content_type: str  # lower case, without parameters ("text/html")
    charset: str | None
    body: bytes
    last_modified: datetime | None = None


class FetchFailed(Exception):
    """A document could not be fetched; the message is the reason the import report shows."""

    def __init__(self, reason: str, *, status: int | None = None, refused: bool = False) -> None:
        super().__init__(reason)
        self.status = status  # the HTTP status when the server answered with an error
        self.refused = refused  # the address is one the import may not reach


def same_site(first: httpx.URL, second: httpx.URL) -> bool:
    """Both URLs are on one site: the same host, ``www.`` or not, over http or https."""
    return second.scheme in ("http", "https") and _site_host(first) == _site_host(second)


def checked_url(text: str) -> httpx.URL:
    """``text`` as an absolute http(s) URL, or ``FetchFailed`` saying what is wrong with it."""
    try:
        url = httpx.URL(text.strip())
    except httpx.InvalidURL as error:
        raise FetchFailed(f"not a valid URL ({error})") from error
    if url.scheme not in ("http", "https"):
        raise FetchFailed(f"only http and https URLs can be imported, not {url.scheme or 'a relative address'}")
    if not url.host:
        raise FetchFailed("the URL has no host")
    return url.copy_with(fragment=None)


class SiteFetcher:
    """Fetches documents for one web import; safe to share between threads. Close it (or use ``with``) at the end."""

    def __init__(self, limits: WebLimits, *, resolve: Resolver = resolve_host, verify: bool = True) -> None:
        self.limits = limits
        self._client = httpx.Client(
            transport=PinnedTransport(allow_private=limits.allow_private, resolve=resolve, verify=verify),
            timeout=httpx.Timeout(limits.timeout_s),
            headers={"User-Agent": user_agent()},
            follow_redirects=False,  # followed by hand, each hop checked for the site and robots.txt
            trust_env=False,  # a proxy from the environment would connect to addresses nobody checked
        )
        self._robots = RobotsRules(self._fetch_robots, agent=user_agent())
        self._host_places: dict[str, threading.BoundedSemaphore] = {}
        self._lock = threading.Lock()

    def __enter__(self) -> SiteFetcher:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        self._client.close()

    def fetch(self, text: str) -> FetchedResponse:
        return self._follow(checked_url(text), obey_robots=True)

    def _follow(self, url: httpx.URL, *, obey_robots: bool) -> FetchedResponse:
        deadline = time.monotonic() + self.limits.deadline_s
        for _hop in range(MAX_REDIRECTS + 1):
            if time.monotonic() > deadline:
                raise FetchFailed(f"took longer than {self.limits.deadline_s:g} s through its redirects")
            refused = self._robots.refusal(url) if obey_robots else None
            if refused is not None:
                raise FetchFailed(refused)
            with self._place(url.host):
                outcome = self._get(url, deadline)
            if isinstance(outcome, FetchedResponse):
                return outcome
            if not same_site(url, outcome):
                raise FetchFailed(f"redirects off-site to {outcome}; only redirects within {url.host} are followed")
            url = outcome
        raise FetchFailed(f"more than {MAX_REDIRECTS} redirects")

    def _get(self, url: httpx.URL, deadline: float) -> FetchedResponse | httpx.URL:
        """The response at ``url``, or where it redirects to."""
        try:
            with self._client.stream("GET", url) as response:
                if response.status_code in REDIRECT_STATUSES and "location" in response.headers:
                    return _redirect_target(response)
                if response.status_code != 200:
                    raise FetchFailed(
                        f"the server answered {response.status_code} {response.reason_phrase}".strip(),
                        status=response.status_code,
                    )
                body = self._read_capped(response, deadline)
                return FetchedResponse(
                    url=str(response.url),
                    content_type=response.headers.get("content-type", "").split(";")[0].strip().lower(),
                    charset=response.charset_encoding,
                    body=body,
                    last_modified=_http_date(response.headers.get("last-modified")),
                )
        except RefusedAddress as error:
            raise FetchFailed(f"refused: {error}", refused=True) from error
        except httpx.TimeoutException as error:
            raise FetchFailed(f"timed out after {self.limits.timeout_s:g} s waiting for the server") from error
        except httpx.HTTPError as error:
            raise FetchFailed(f"could not be fetched ({error or type(error).__name__})") from error

    def _read_capped(self, response: httpx.Response, deadline: float) -> bytes:
        cap = self.limits.max_document_bytes
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > cap:
            raise FetchFailed(f"is {int(declared):,} bytes, over the {cap:,}-byte limit")
        body = bytearray()
        # Counted after the content encoding is undone: a small gzip body may unpack to gigabytes. httpx unpacks one
        # network read at a time, so no more than one read's expansion is held past the cap.
        for piece in response.iter_bytes(READ_CHUNK_BYTES):
            body += piece
            if len(body) > cap:
                raise FetchFailed(f"is over the {cap:,}-byte limit (stopped reading)")
            if time.monotonic() > deadline:
                raise FetchFailed(f"took longer than {self.limits.deadline_s:g} s to download (stopped reading)")
        return bytes(body)

    def _fetch_robots(self, url: httpx.URL) -> RobotsAnswer:
        try:
            response = self._follow(url, obey_robots=False)
        except FetchFailed as error:
            return RobotsAnswer(status=error.status, problem=str(error), refused=error.refused)
        return RobotsAnswer(status=200, body=response.body)

    @contextmanager
    def _place(self, host: str) -> Iterator[None]:
        with self._lock:
            places = self._host_places.setdefault(host, threading.BoundedSemaphore(self.limits.concurrency_per_host))
        with places:
            yield


def _redirect_target(response: httpx.Response) -> httpx.URL:
    try:
        return response.url.join(response.headers["location"]).copy_with(fragment=None)
    except httpx.InvalidURL as error:
        raise FetchFailed(f"redirects to an invalid address ({error})") from error


def _site_host(url: httpx.URL) -> str:
    host = url.host.lower().rstrip(".")
    return host.removeprefix("www.")


def _http_date(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        parsed = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
