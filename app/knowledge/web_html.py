"""An HTML page's main content as Markdown, with its title and canonical address: shared by web pages and HTML files.

``html_to_markdown(content, url=...)`` answers an ``HtmlContent`` or raises ``UnreadableHtml`` with a reason for
the import report. The main content (not the menus, footers and cookie banners) comes from trafilatura, which
writes its headings as ``#`` lines, so the chunker sees a page's structure as it sees a Markdown file's.

What the page's author wrote stays data: scripts, styles and event handlers never reach the Markdown (trafilatura
keeps text, not markup), and a link whose address is not http, https or mailto (``javascript:``, ``data:``) keeps
its text and loses its address before extraction.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

import trafilatura
from lxml import html as lxml_html

# Link schemes a reader may follow from an imported page; anything else is dropped with the link, its text kept.
SAFE_LINK_SCHEMES = frozenset({"http", "https", "mailto"})
# Past this share of NUL and other control bytes, "HTML" is binary data served under the wrong type.
BINARY_SAMPLE_BYTES = 8192
MAX_CONTROL_SHARE = 0.1


class UnreadableHtml(Exception):
    """An HTML document with no readable content; the message says why."""


@dataclass(frozen=True)
class HtmlContent:
    title: str  # og:title, else <title>, else the first heading; "" when the page names itself nowhere
    markdown: str
    canonical_url: str | None  # the page's <link rel="canonical">, made absolute against ``url``


def html_to_markdown(content: bytes | str, *, url: str | None = None) -> HtmlContent:
    """The main content of the HTML ``content`` as Markdown. Bytes are decoded by the page's own declaration
    (``<meta charset>``), else detected; ``url`` makes relative links and the canonical address absolute."""
    if isinstance(content, bytes) and looks_binary(content):
        raise UnreadableHtml("is binary data, not an HTML page")
    tree = trafilatura.load_html(content)
    if tree is None:
        raise UnreadableHtml("is not HTML that can be read")
    title = _title(tree)
    canonical = _canonical(tree, url)
    _drop_unsafe_links(tree)
    markdown = trafilatura.extract(
        tree,
        url=url,
        output_format="markdown",
        include_formatting=True,  # headings as "#" lines, lists, emphasis
        include_links=True,
        include_tables=True,
        include_comments=False,
        favor_recall=True,  # help articles are short; precision mode drops their one-line sections
        deduplicate=False,
    )
    if not markdown or not markdown.strip():
        raise UnreadableHtml("has no readable text (an empty page, or one built by JavaScript)")
    return HtmlContent(
        title=title or _first_heading(markdown), markdown=markdown.strip() + "\n", canonical_url=canonical
    )


def looks_binary(content: bytes) -> bool:
    sample = content[:BINARY_SAMPLE_BYTES]
    if not sample:
        return False
    if b"\x00" in sample:
        return True
    controls = sum(1 for byte in sample if byte < 32 and byte not in b"\t\n\r\f")
    return controls / len(sample) > MAX_CONTROL_SHARE


def _title(tree: lxml_html.HtmlElement) -> str:
    for candidate in (
        tree.xpath('string(//meta[@property="og:title"]/@content)'),
        tree.xpath("string(//head/title)") or tree.xpath("string(//title)"),
    ):
        text = " ".join(str(candidate).split())
        if text:
            return text
    return ""


def _canonical(tree: lxml_html.HtmlElement, url: str | None) -> str | None:
    href = " ".join(str(tree.xpath('string(//link[@rel="canonical"]/@href)')).split())
    if not href:
        return None
    absolute = urljoin(url, href) if url else href
    return absolute if urlsplit(absolute).scheme in ("http", "https") else None


def _drop_unsafe_links(tree: lxml_html.HtmlElement) -> None:
    for element in tree.xpath("//*[@href or @src]"):
        for attribute in ("href", "src"):
            value = element.get(attribute)
            if value is not None and not _safe_link(value):
                del element.attrib[attribute]


def _safe_link(value: str) -> bool:
    # Browsers ignore whitespace and control characters inside a scheme ("java\tscript:"), so they go first.
    cleaned = "".join(character for character in value if character > " ").lower()
    scheme, colon, _rest = cleaned.partition(":")
    if not colon or "/" in scheme or "?" in scheme or "#" in scheme:
        return True  # a relative address: it stays on the page's own site
    return scheme in SAFE_LINK_SCHEMES


def _first_heading(markdown: str) -> str:
    for line in markdown.splitlines():
        if line.startswith("#"):
            return line.lstrip("#").strip()
    return ""
