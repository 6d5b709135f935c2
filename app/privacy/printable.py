"""The customer's export as a printable HTML page (``templates/export/customer.html``): the same document as the
JSON, for a person to read in a browser, print or send. Autoescaped, self-contained (its style is inline, it loads
nothing), and served with ``PRINTABLE_CSP``, which allows no script at all."""

from __future__ import annotations

from datetime import UTC, datetime
from functools import lru_cache

from jinja2 import Environment, FileSystemLoader, StrictUndefined

from app.infra.templates import packaged_templates
from app.privacy.document import CustomerExport

TEMPLATE = "customer.html"
# The page has its style inline and nothing else: no script, no image, no request anywhere.
PRINTABLE_CSP = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"


def when(moment: datetime | str | None) -> str:
    """A time as a person reads it (``2026-12-02 14:05 UTC``); Mem0 keeps its times as ISO text."""
    if moment is None or moment == "":
        return "–"
    if isinstance(moment, str):
        try:
            parsed = datetime.fromisoformat(moment)
        except ValueError:
            return moment
        return when(parsed)
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%d %H:%M UTC")


def capitalize_first(text: str) -> str:
    return text[:1].upper() + text[1:]


@lru_cache(maxsize=1)
def _environment() -> Environment:
    environment = Environment(
        loader=FileSystemLoader(str(packaged_templates("export"))),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    environment.filters.update(when=when, capitalize_first=capitalize_first)
    return environment


def printable_export(export: CustomerExport) -> str:
    """The export as a complete HTML page."""
    return _environment().get_template(TEMPLATE).render(export=export)
