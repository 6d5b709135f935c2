"""One file's bytes as Markdown, by its format: Markdown, HTML, PDF and plain text, for the file reader.

``convert(name, data)`` answers a ``Converted`` (title, Markdown, address) or raises ``UnreadableFile`` with the
reason the import report shows. The format comes from the name's extension (``FORMATS``); the bytes must then be
what the extension says: a ``.md`` that is a PNG image is refused, not imported as noise.

- Markdown: taken as it is, less its front matter (a ``---`` block of ``key: value`` lines), whose ``title`` and
  http(s) ``url`` are used.
- HTML: its main content through ``web_html``, as web pages are.
- PDF: the text layer of each page, through pypdf; a scanned PDF without one, an encrypted or a broken file fail.
- Plain text: taken as it is.

Text must be UTF-8 (a byte-order mark allowed); other encodings fail with a sentence saying to convert the file.
"""

from __future__ import annotations

import io
import logging
from dataclasses import dataclass
from pathlib import PurePosixPath
from urllib.parse import urlsplit

from pypdf import PdfReader
from pypdf.errors import DependencyError

from app.knowledge.web_html import UnreadableHtml, html_to_markdown, looks_binary

logger = logging.getLogger(__name__)

MARKDOWN, HTML, PDF, TEXT = "markdown", "html", "pdf", "text"
FORMATS = {".md": MARKDOWN, ".markdown": MARKDOWN, ".html": HTML, ".htm": HTML, ".pdf": PDF, ".txt": TEXT}
# What the first bytes of common binary files are, to say what a misnamed file really is.
BINARY_SIGNATURES = {
    b"\x89PNG": "a PNG image",
    b"\xff\xd8\xff": "a JPEG image",
    b"GIF8": "a GIF image",
    b"%PDF": "a PDF",
    b"PK\x03\x04": "a ZIP archive (or an Office document)",
    b"\x1f\x8b": "a gzip archive",
}
PDF_SIGNATURE = b"%PDF-"
FRONT_MATTER_FENCE = "---"
ENCRYPTED_PDF = "is an encrypted PDF; save a copy without a password and import that"


class UnreadableFile(Exception):
    """A file whose content cannot be imported; the message completes "<path> ..." for the report."""


@dataclass(frozen=True)
class Converted:
    title: str  # "" when the file names itself nowhere: the reader uses the file's name
    markdown: str
    url: str | None = None


def supported_extensions() -> str:
    return ", ".join(FORMATS)


def convert(name: str, data: bytes) -> Converted:
    """``data``, the content of the file called ``name``, as Markdown; ``UnreadableFile`` when it cannot be."""
    kind = FORMATS.get(PurePosixPath(name).suffix.lower())
    if kind is None:
        raise UnreadableFile(f"is not a format memdesk imports; it imports {supported_extensions()} and .zip")
    if kind == PDF:
        return _pdf(data)
    if kind == HTML:
        return _html(data)
    text = _text(data, kind)
    return _markdown(text) if kind == MARKDOWN else Converted(title="", markdown=text)


def _binary_kind(data: bytes) -> str | None:
    for signature, kind in BINARY_SIGNATURES.items():
        if data.startswith(signature):
            return kind
    return "binary data" if looks_binary(data) else None


def _text(data: bytes, kind: str) -> str:
    found = _binary_kind(data)
    if found is not None:
        raise UnreadableFile(f"is {found}, not {kind} text; check that the file is what its name says")
    try:
        return data.decode("utf-8-sig")  # plain UTF-8 too: without a byte-order mark the two read the same
    except UnicodeDecodeError as error:
        raise UnreadableFile(
            f"is not UTF-8 text (byte {error.start} cannot be read); save it as UTF-8 and import it again"
        ) from error


def _markdown(text: str) -> Converted:
    fields, body = _front_matter(text)
    title = _first_heading(body) or fields.get("title", "")
    url = fields.get("url")
    return Converted(title=title, markdown=body, url=url if url and _followable(url) else None)


def _front_matter(text: str) -> tuple[dict[str, str], str]:
    """The front matter's ``key: value`` fields and the text after it.

    Read by hand: front matter in help-center exports is flat ``key: value`` lines, and PyYAML is not one of our
    dependencies; a value's surrounding quotes are dropped, anything nested is ignored."""
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != FRONT_MATTER_FENCE:
        return {}, text
    closing = next((index for index, line in enumerate(lines[1:], 1) if line.strip() == FRONT_MATTER_FENCE), None)
    if closing is None:
        return {}, text  # no closing fence: a horizontal rule, not front matter
    fields: dict[str, str] = {}
    for line in lines[1:closing]:
        key, colon, value = line.partition(":")
        if colon and key.strip() and not key.startswith((" ", "\t")):
            fields.setdefault(key.strip().lower(), value.strip().strip("\"'").strip())
    return fields, "".join(lines[closing + 1 :]).lstrip("\n")


def _first_heading(markdown: str) -> str:
    for line in markdown.splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return ""


def _followable(url: str) -> bool:
    parts = urlsplit(url)
    return parts.scheme in ("http", "https") and bool(parts.netloc)


def _html(data: bytes) -> Converted:
    try:
        page = html_to_markdown(data)
    except UnreadableHtml as error:
        raise UnreadableFile(str(error)) from error
    return Converted(title=page.title, markdown=page.markdown)


def _pdf(data: bytes) -> Converted:
    if not data.startswith(PDF_SIGNATURE):
        found = _binary_kind(data) or "text"
        raise UnreadableFile(f"is named .pdf but is {found}, not a PDF; check that the file is what its name says")
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not _opened(reader):
            raise UnreadableFile(ENCRYPTED_PDF)
        pages = [(page.extract_text() or "").strip() for page in reader.pages]
        title = _pdf_title(reader)
    except UnreadableFile:
        raise
    except Exception as error:
        # pypdf meets a damaged file with whatever its parser tripped on (KeyError, IndexError, zlib.error...), not
        # only its own PyPdfError; one bad file must not end the import.
        logger.info("knowledge import: a PDF could not be read", exc_info=True)
        raise UnreadableFile(
            f"is a damaged PDF that cannot be read ({type(error).__name__}); export it again"
        ) from error
    text = "\n\n".join(page for page in pages if page)
    if not text:
        raise UnreadableFile("is a PDF without a text layer (a scan?); run it through OCR and import the result")
    return Converted(title=title, markdown=text + "\n")


def _opened(reader: PdfReader) -> bool:
    """Whether an encrypted PDF opens without a password (many are encrypted only to restrict printing)."""
    try:
        return bool(reader.decrypt(""))
    except DependencyError:  # AES needs the cryptography package; either way it cannot be read here
        return False


def _pdf_title(reader: PdfReader) -> str:
    metadata = reader.metadata
    title = metadata.title if metadata is not None else None
    return " ".join(str(title).split()) if title else ""
