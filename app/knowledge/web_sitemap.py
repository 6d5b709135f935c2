"""Sitemaps (sitemaps.org): a ``urlset`` lists pages, a ``sitemapindex`` lists more sitemaps; either may be gzipped.

``read_sitemap(body, cap)`` answers a ``Sitemap`` when the body is one (recognised by its root element, whatever
the server called its content type), None when it is some other document, and raises ``NotASitemap`` for a
sitemap that cannot be read. The XML parser loads no DTD, expands no entity and reaches no network, so a hostile
sitemap cannot make it read files or grow without bound; a gzipped one is unpacked only up to ``cap`` bytes.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from datetime import UTC, date, datetime, time

from lxml import etree

GZIP_MAGIC = b"\x1f\x8b"
SITEMAP_ROOTS = frozenset({"urlset", "sitemapindex"})
_PARSER = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False)


class NotASitemap(Exception):
    """A sitemap that cannot be read; the message says why."""


@dataclass(frozen=True)
class SitemapEntry:
    url: str
    lastmod: datetime | None


@dataclass(frozen=True)
class Sitemap:
    is_index: bool  # its entries are sitemaps, not pages
    entries: list[SitemapEntry]


def read_sitemap(body: bytes, *, cap: int) -> Sitemap | None:
    """The sitemap in ``body``, None when ``body`` is not a sitemap (a page, a text)."""
    if body.startswith(GZIP_MAGIC):
        body = _gunzip(body, cap)
    if not _looks_like_xml(body):
        return None
    try:
        root = etree.fromstring(body, parser=_PARSER)
    except etree.XMLSyntaxError as error:
        if _root_name_in_text(body) in SITEMAP_ROOTS:
            raise NotASitemap(f"the sitemap is not well-formed XML ({error})") from error
        return None
    name = etree.QName(root).localname
    if name not in SITEMAP_ROOTS:
        return None
    child = "sitemap" if name == "sitemapindex" else "url"
    entries = [entry for node in root if _local(node) == child and (entry := _entry(node)) is not None]
    return Sitemap(is_index=name == "sitemapindex", entries=entries)


def parse_lastmod(text: str) -> datetime | None:
    """A W3C datetime (``2026-11-20``, ``2026-11-20T09:30:00+01:00``) as an aware UTC datetime; None if unreadable."""
    text = text.strip()
    try:
        if len(text) == len("2026-11-20"):
            return datetime.combine(date.fromisoformat(text), time(), tzinfo=UTC)
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    return (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).astimezone(UTC)


def _entry(node: etree._Element) -> SitemapEntry | None:
    fields = {_local(part): (part.text or "").strip() for part in node}
    if not fields.get("loc"):
        return None
    lastmod = fields.get("lastmod")
    return SitemapEntry(url=fields["loc"], lastmod=parse_lastmod(lastmod) if lastmod else None)


def _local(node: etree._Element) -> str:
    tag = node.tag
    return etree.QName(tag).localname if isinstance(tag, str) else ""  # comments and processing instructions


def _gunzip(body: bytes, cap: int) -> bytes:
    unpacker = zlib.decompressobj(wbits=zlib.MAX_WBITS | 16)
    try:
        unpacked = unpacker.decompress(body, cap + 1)
    except zlib.error as error:
        raise NotASitemap(f"the gzipped sitemap is damaged ({error})") from error
    if len(unpacked) > cap:
        raise NotASitemap(f"the gzipped sitemap unpacks to more than the {cap:,}-byte limit")
    if not unpacker.eof:
        raise NotASitemap("the gzipped sitemap is damaged (it ends before its data does)")
    return unpacked


def _looks_like_xml(body: bytes) -> bool:
    head = body[:512].lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    return head.startswith(b"<?xml") or head.startswith(b"<urlset") or head.startswith(b"<sitemapindex")


def _root_name_in_text(body: bytes) -> str:
    head = body[:2048].decode("utf-8", errors="replace")
    return next((name for name in SITEMAP_ROOTS if f"<{name}" in head), "")
