"""Reading a team's web pages for the knowledge import: page URLs and sitemaps in, ``SourceDocument``s out.

``read_urls(urls, limits=...)`` yields one ``SourceDocument`` or ``DocumentFailure`` per page, in the order the
pages arrive (several are fetched at once). Each URL given is a page or a sitemap, told apart by what comes back,
not by its name; a sitemap's pages (and a sitemap index's sitemaps) are fetched in turn, each page's ``lastmod``
becoming its ``updated_at``. A URL is read once per import, however many sitemaps list it.

The parts: ``web_fetch`` (HTTP within limits, robots.txt, same-site redirects), ``web_address`` (internal addresses
refused, connections pinned to the checked address), ``web_sitemap`` (urlset and sitemapindex, gzipped or not),
``web_html`` (the main content as Markdown, shared with the HTML file reader).

What becomes of each content type: HTML and XHTML go through ``web_html``; Markdown and plain text are taken as
they are (UTF-8 or their declared charset); PDF is not read from the web yet and is reported so; anything else is
a failure naming the type.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from datetime import datetime

import httpx

from app.knowledge.types import DocumentFailure, SourceDocument
from app.knowledge.web_address import Resolver, resolve_host
from app.knowledge.web_fetch import FetchedResponse, FetchFailed, SiteFetcher, WebLimits, same_site
from app.knowledge.web_html import UnreadableHtml, html_to_markdown, looks_binary
from app.knowledge.web_sitemap import NotASitemap, Sitemap, read_sitemap

__all__ = ["WebLimits", "read_urls"]

# Threads waiting on sites at once, all hosts together; each host also has its own, lower limit (WebLimits).
MAX_FETCH_THREADS = 8
# A sitemap index may list other indexes; sitemaps.org allows none, so two levels only allow for a site's slips.
MAX_SITEMAP_DEPTH = 2
HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
MARKDOWN_TYPES = frozenset({"text/markdown", "text/x-markdown"})
XML_TYPES = frozenset({"application/xml", "text/xml", "application/gzip", "application/x-gzip"})

# Called after each URL is read: (URLs read so far, URLs known so far). Sitemaps make the total grow as they are read.
WebProgress = Callable[[int, int], None]
WebResult = SourceDocument | DocumentFailure


@dataclass(frozen=True)
class _Outcome:
    result: WebResult | None = None
    sitemap: Sitemap | None = None
    sitemap_url: str = ""


@dataclass(frozen=True)
class _Task:
    url: str
    lastmod: datetime | None = None
    sitemap_depth: int = 0  # how many sitemaps led here
    listed_by: str | None = None  # the sitemap that listed this URL


def read_urls(
    urls: Sequence[str],
    *,
    limits: WebLimits | None = None,
    progress: WebProgress | None = None,
    resolve: Resolver = resolve_host,
    verify_tls: bool = True,
) -> Iterator[WebResult]:
    """The documents at ``urls`` (pages or sitemaps), each a ``SourceDocument`` or a ``DocumentFailure``."""
    limits = limits or WebLimits()
    with SiteFetcher(limits, resolve=resolve, verify=verify_tls) as fetcher:
        yield from _Crawl(fetcher, limits, progress).run([_Task(url) for url in urls])


class _Crawl:
    """One import's walk over its URLs: fetches in parallel, expands sitemaps, remembers what it has seen."""

    def __init__(self, fetcher: SiteFetcher, limits: WebLimits, progress: WebProgress | None) -> None:
        self._fetcher = fetcher
        self._limits = limits
        self._progress = progress
        self._seen: set[str] = set()  # URLs queued, as given or listed
        self._locators: set[str] = set()  # documents yielded, by their final (or canonical) address
        self._pages_listed = 0
        self._done = 0

    def run(self, tasks: list[_Task]) -> Iterator[WebResult]:
        waiting: deque[_Task] = deque(self._unseen(tasks))
        running: dict[Future[_Outcome], _Task] = {}
        with ThreadPoolExecutor(max_workers=MAX_FETCH_THREADS, thread_name_prefix="knowledge-web") as pool:
            try:
                while waiting or running:
                    while waiting and len(running) < MAX_FETCH_THREADS:
                        task = waiting.popleft()
                        running[pool.submit(self._read, task)] = task
                    finished, _ = wait(running, return_when=FIRST_COMPLETED)
                    for future in finished:
                        task = running.pop(future)
                        results, listed = self._settle(task, future.result())
                        waiting.extend(self._unseen(listed))
                        self._report_progress(len(waiting) + len(running))
                        yield from results
            finally:
                for future in running:  # the caller stopped early: nothing new starts
                    future.cancel()

    def _read(self, task: _Task) -> _Outcome:
        """What one URL gives (in a worker thread): its document, its failure, or the sitemap it is."""
        try:
            response = self._fetcher.fetch(task.url)
            sitemap = _sitemap_in(response, self._limits.max_document_bytes)
            if sitemap is not None:
                return _Outcome(sitemap=sitemap, sitemap_url=response.url)
            return _Outcome(result=_document(task, response))
        except (FetchFailed, NotASitemap, UnreadableHtml) as error:
            return _Outcome(result=DocumentFailure(locator=task.url, reason=_with_origin(str(error), task)))

    def _settle(self, task: _Task, outcome: _Outcome) -> tuple[list[WebResult], list[_Task]]:
        """The results to yield and the URLs to read next (in the calling thread, which alone keeps the counts)."""
        if outcome.sitemap is not None:
            return self._expand(task, outcome.sitemap_url, outcome.sitemap)
        result = outcome.result
        if isinstance(result, SourceDocument):
            # Two addresses of one page (its canonical link names the same address): it is read once.
            if result.locator in self._locators:
                return [], []
            self._locators.add(result.locator)
        return ([result] if result is not None else []), []

    def _expand(self, task: _Task, sitemap_url: str, sitemap: Sitemap) -> tuple[list[WebResult], list[_Task]]:
        if task.sitemap_depth >= MAX_SITEMAP_DEPTH:
            return [DocumentFailure(task.url, f"sitemaps nested more than {MAX_SITEMAP_DEPTH} deep are not read")], []
        failures: list[WebResult] = []
        tasks: list[_Task] = []
        base = httpx.URL(sitemap_url)
        for entry in sitemap.entries:
            if not _listable(base, entry.url):
                failures.append(DocumentFailure(entry.url, f"listed by the sitemap {sitemap_url} but on another site"))
                continue
            if not sitemap.is_index:
                if self._pages_listed >= self._limits.max_pages:
                    failures.append(_too_many_pages(sitemap_url, self._limits.max_pages))
                    break
                self._pages_listed += 1
            tasks.append(_Task(entry.url, entry.lastmod, task.sitemap_depth + 1, sitemap_url))
        return failures, tasks

    def _unseen(self, tasks: list[_Task]) -> Iterator[_Task]:
        for task in tasks:
            key = _identity(task.url)
            if key not in self._seen:
                self._seen.add(key)
                yield task

    def _report_progress(self, left: int) -> None:
        self._done += 1
        if self._progress is not None:
            self._progress(self._done, self._done + left)


def _sitemap_in(response: FetchedResponse, cap: int) -> Sitemap | None:
    if response.content_type in HTML_TYPES or response.content_type in MARKDOWN_TYPES:
        return None
    return read_sitemap(response.body, cap=cap)


def _document(task: _Task, response: FetchedResponse) -> SourceDocument:
    updated_at = task.lastmod or response.last_modified
    kind = response.content_type
    if kind in HTML_TYPES:
        page = html_to_markdown(_declared_text(response) or response.body, url=response.url)
        address = _on_site(response.url, page.canonical_url)
        title = page.title or _name_in(address)
        return SourceDocument(locator=address, title=title, markdown=page.markdown, url=address, updated_at=updated_at)
    if kind in MARKDOWN_TYPES or kind == "text/plain":
        text = _text(response)
        title = (_markdown_title(text) if kind in MARKDOWN_TYPES else "") or _name_in(response.url)
        return SourceDocument(locator=response.url, title=title, markdown=text, url=response.url, updated_at=updated_at)
    if kind == "application/pdf":
        raise FetchFailed("is a PDF; PDF pages cannot be imported from the web yet (download it and import the file)")
    if kind in XML_TYPES:
        raise FetchFailed(f"is {kind} but not a sitemap (a urlset or sitemapindex)")
    shown = kind or "no content type"
    raise FetchFailed(f"is {shown}, which is not a page memdesk can import (HTML, Markdown, plain text or a sitemap)")


def _declared_text(response: FetchedResponse) -> str | None:
    """The page decoded by the charset its Content-Type declares; None leaves the page's own <meta> to decide."""
    if response.charset is None:
        return None
    try:
        return response.body.decode(response.charset, errors="replace")
    except LookupError:  # a charset name Python does not know
        return None


def _text(response: FetchedResponse) -> str:
    if looks_binary(response.body):
        raise FetchFailed(f"is binary data, not {response.content_type}")
    charset = response.charset or "utf-8"
    try:
        return response.body.decode(charset)
    except LookupError as error:
        raise FetchFailed(f"declares the unknown charset {charset}") from error
    except UnicodeDecodeError as error:
        raise FetchFailed(f"is not valid {charset} text (byte {error.start}); declare its charset") from error


def _on_site(url: str, canonical: str | None) -> str:
    if canonical and same_site(httpx.URL(url), httpx.URL(canonical)):
        return str(httpx.URL(canonical).copy_with(fragment=None))
    return url


def _listable(sitemap_url: httpx.URL, entry: str) -> bool:
    # sitemaps.org: a sitemap lists the URLs of its own site; others are another site's to publish.
    try:
        return same_site(sitemap_url, httpx.URL(entry))
    except httpx.InvalidURL:
        return True  # fetched, and failed there with the reason


def _too_many_pages(sitemap_url: str, limit: int) -> DocumentFailure:
    return DocumentFailure(
        sitemap_url,
        f"lists more pages than one import reads; the first {limit:,} were read (MEMDESK_KNOWLEDGE_MAX_PAGES)",
    )


def _with_origin(reason: str, task: _Task) -> str:
    return f"{reason} (listed by {task.listed_by})" if task.listed_by else reason


def _identity(url: str) -> str:
    try:
        return str(httpx.URL(url.strip()).copy_with(fragment=None))
    except httpx.InvalidURL:
        return url


def _name_in(url: str) -> str:
    parsed = httpx.URL(url)
    last = parsed.path.rstrip("/").rpartition("/")[2]
    return last or parsed.host


def _markdown_title(text: str) -> str:
    for line in text.splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return ""
