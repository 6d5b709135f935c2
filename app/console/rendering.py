"""HTML for the console: the Jinja2 environment of ``templates/console`` and sanitised Markdown.

Everything is autoescaped: customer text, names and model output reach the page as text. Bot and staff messages
are Markdown: rendered by markdown-it with raw HTML off (HTML in a message shows as text) and then passed through
nh3 (the ammonia sanitizer) with a short list of allowed tags, so even a renderer bug cannot produce a script,
an event handler or a ``javascript:`` link. Links open in a new tab without access to the console page.

Most chat messages hold no Markdown at all; those skip both passes (``plain_paragraphs``), with the very HTML the
two passes would give them (a property test compares the two on generated text).
"""

from __future__ import annotations

import html
import json
import re
from datetime import datetime, timedelta
from functools import lru_cache
from typing import Any

import nh3
from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markdown_it import MarkdownIt
from markupsafe import Markup

from app.infra.templates import packaged_templates
from app.models import utc_now
from app.tools.conversation_search import CLOSE_MARK, OPEN_MARK

TEMPLATES_DIR = packaged_templates("console")
MARKDOWN_TAGS = frozenset(
    {"p", "br", "strong", "em", "code", "pre", "ul", "ol", "li", "a", "blockquote", "hr", "h3", "h4", "h5", "h6"}
)
LINK_SCHEMES = frozenset({"http", "https", "mailto"})
LINK_REL = "noopener noreferrer nofollow"
MAX_JSON_CHARS = 20_000

_markdown = MarkdownIt("commonmark", {"html": False, "linkify": False}).disable("image")
# A line Markdown reads as nothing but paragraph text: it starts with a letter or digit (no list, heading, quote,
# code block or rule starts so) and not with an ordered-list number, holds letters, digits, spaces and punctuation
# that is never Markdown syntax in the middle of a line (no * _ ` [ ] < > & \\ ~ |), and ends without a space (two
# trailing spaces are a line break). Anything else takes the full renderer.
_PLAIN_LINE = re.compile(r"(?!\d{1,9}[.)](?:\s|$))[^\W_](?:[^\W_]|[ ,.;:?!'\"’“”()/%$@#+=-])*(?<! )")


def plain_paragraphs(text: str) -> str | None:
    """The HTML of text without Markdown syntax (paragraphs split at blank lines), or None when it may have some."""
    lines = text.split("\n")
    if not all(line == "" or _PLAIN_LINE.fullmatch(line) for line in lines):
        return None
    paragraphs: list[list[str]] = [[]]
    for line in lines:
        if line:
            paragraphs[-1].append(html.escape(line, quote=False))
        elif paragraphs[-1]:
            paragraphs.append([])
    return "".join("<p>" + "\n".join(paragraph) + "</p>\n" for paragraph in paragraphs if paragraph)


def render_markdown(text: str | None) -> Markup:
    """Markdown to safe HTML (see the module docstring)."""
    plain = plain_paragraphs(text or "")
    return Markup(plain if plain is not None else markdown_to_safe_html(text or ""))


def markdown_to_safe_html(text: str) -> str:
    """The full path: markdown-it, then nh3."""
    rendered = _markdown.render(text)
    # Headings of a chat message are demoted: an h1 in a reply must not outrank the page's own headings.
    for level in (1, 2):
        rendered = rendered.replace(f"<h{level}>", "<h3>").replace(f"</h{level}>", "</h3>")
    return nh3.clean(
        rendered,
        tags=set(MARKDOWN_TAGS),
        attributes={"a": {"href"}},
        url_schemes=set(LINK_SCHEMES),
        link_rel=LINK_REL,
        set_tag_attribute_values={"a": {"target": "_blank"}},
    )


def pretty_json(value: Any) -> str:
    """JSON (or a JSON string) indented for reading; anything else as it is. Escaped by the template."""
    if isinstance(value, str):
        text = value
        try:
            value = json.loads(text)
        except ValueError:
            return text[:MAX_JSON_CHARS]
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)[:MAX_JSON_CHARS]


def duration(seconds: float) -> str:
    """A short human duration: ``45 s``, ``12 min``, ``3 h 5 min``, ``2 d 4 h``."""
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds} s"
    minutes = seconds // 60
    if minutes < 60:
        return f"{minutes} min"
    hours = minutes // 60
    if hours < 48:
        return f"{hours} h {minutes % 60} min"
    return f"{hours // 24} d {hours % 24} h"


def since(moment: datetime | None, now: datetime | None = None) -> str:
    if moment is None:
        return ""
    return duration(((now or utc_now()) - moment).total_seconds())


def marked(snippet: str) -> Markup:
    """A search snippet with its matches (between the search's private-use marks) in ``<mark>``, everything else
    escaped."""
    escaped = html.escape(snippet, quote=False)
    return Markup(escaped.replace(OPEN_MARK, "<mark>").replace(CLOSE_MARK, "</mark>"))


def timestamp(moment: datetime | None) -> str:
    return moment.strftime("%Y-%m-%d %H:%M UTC") if moment else ""


def seconds(value: timedelta | float | None) -> str:
    if value is None:
        return "–"
    return duration(value.total_seconds() if isinstance(value, timedelta) else value)


@lru_cache(maxsize=1)
def console_templates() -> Environment:
    environment = Environment(
        loader=FileSystemLoader(str(TEMPLATES_DIR)),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    environment.globals["active"] = ""  # the navigation tab a page marks as current
    environment.filters.update(
        markdown=render_markdown,
        pretty_json=pretty_json,
        since=since,
        timestamp=timestamp,
        duration=seconds,
        marked=marked,
    )
    return environment


def render(template: str, **context: Any) -> str:
    return console_templates().get_template(template).render(**context)
