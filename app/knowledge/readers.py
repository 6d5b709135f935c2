"""Reading files for the knowledge import: paths in (files, folders, ZIP archives), ``SourceDocument``s out.

``read_paths(paths, max_bytes=...)`` yields one ``SourceDocument`` or ``DocumentFailure`` per file, one at a time,
so a large folder is never held in memory:

- a file is read by its extension (``app.knowledge.formats``); its locator is its name;
- a folder is read recursively in sorted order, each file's locator its path relative to the folder (posix form,
  so a re-import from another machine finds the same documents); hidden files and folders are skipped;
- a ``.zip`` is read in place, each member's locator ``archive.zip/inner/path.md``. A member is refused when its
  name is absolute or climbs out (``..``), and when it declares or, read, turns out to be over ``max_bytes``:
  a small archive can expand to gigabytes.

Every file over ``max_bytes``, unreadable or of an unsupported type is a ``DocumentFailure`` and the reading goes
on. A document's ``updated_at`` is the file's modification time (a member's date in a ZIP archive).
"""

from __future__ import annotations

import zipfile
import zlib
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath

from app.knowledge.formats import FORMATS, UnreadableFile, convert
from app.knowledge.types import DocumentFailure, SourceDocument
from app.settings import KNOWLEDGE_MAX_DOCUMENT_BYTES

ARCHIVE_SUFFIX = ".zip"
# An archive with more members than this is not a help center export; reading stops there and says so.
MAX_ARCHIVE_MEMBERS = 50_000

ReadResult = SourceDocument | DocumentFailure


def read_paths(paths: Sequence[Path], *, max_bytes: int = KNOWLEDGE_MAX_DOCUMENT_BYTES) -> Iterator[ReadResult]:
    """The documents in ``paths`` (files, folders, ZIP archives); see the module docstring."""
    for path in paths:
        if path.is_dir():
            yield from _folder(path, max_bytes)
        elif path.is_file():
            yield from _file(path, path.name, max_bytes)
        else:
            yield DocumentFailure(str(path), "does not exist (or is not a file or folder); check the path")


def _folder(root: Path, max_bytes: int) -> Iterator[ReadResult]:
    try:
        files = sorted(
            (path.relative_to(root).as_posix(), path)
            for path in root.rglob("*")
            if path.is_file() and not _hidden(path.relative_to(root))
        )
    except OSError as error:
        yield DocumentFailure(str(root), f"could not be listed ({error.strerror}); check its permissions")
        return
    for locator, path in files:
        yield from _file(path, locator, max_bytes)


def _hidden(relative: Path) -> bool:
    # .git, .DS_Store and editors' swap files are no one's help articles.
    return any(part.startswith(".") for part in relative.parts)


def _file(path: Path, locator: str, max_bytes: int) -> Iterator[ReadResult]:
    suffix = path.suffix.lower()
    if suffix == ARCHIVE_SUFFIX:
        yield from _archive(path, locator, max_bytes)
        return
    if suffix not in FORMATS:
        yield _unsupported(locator, suffix)
        return
    try:
        size = path.stat().st_size
        if size > max_bytes:
            yield _too_large(locator, max_bytes)
            return
        with path.open("rb") as file:
            data = file.read(max_bytes + 1)  # the file may have grown since it was measured
        modified = datetime.fromtimestamp(path.stat().st_mtime, tz=UTC)
    except OSError as error:
        yield DocumentFailure(locator, f"could not be read ({error.strerror}); check its permissions")
        return
    if len(data) > max_bytes:
        yield _too_large(locator, max_bytes)
        return
    yield _document(locator, data, modified)


def _archive(path: Path, locator: str, max_bytes: int) -> Iterator[ReadResult]:
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as error:
        yield DocumentFailure(locator, f"is not a ZIP archive that can be read ({error}); pack it again")
        return
    with archive:
        members = sorted((info for info in archive.infolist() if not info.is_dir()), key=lambda info: info.filename)
        for count, info in enumerate(members):
            if count == MAX_ARCHIVE_MEMBERS:
                yield DocumentFailure(
                    locator,
                    f"has more than {MAX_ARCHIVE_MEMBERS:,} files; the first were read, split the archive",
                    hides_documents=True,
                )
                return
            yield _member(archive, info, locator, max_bytes)


def _member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, archive_locator: str, max_bytes: int) -> ReadResult:
    name = info.filename.replace("\\", "/")
    inner = PurePosixPath(name)
    locator = f"{archive_locator}/{name.lstrip('/')}"
    if inner.is_absolute() or ".." in inner.parts or (inner.parts and inner.parts[0].endswith(":")):
        return DocumentFailure(locator, "was refused: its name points outside the archive (absolute, or with ..)")
    suffix = inner.suffix.lower()
    if suffix == ARCHIVE_SUFFIX:
        return DocumentFailure(locator, "is an archive inside the archive; unpack it and import it on its own")
    if suffix not in FORMATS:
        return _unsupported(locator, suffix)
    if info.file_size > max_bytes:
        return _too_large(locator, max_bytes)
    try:
        with archive.open(info) as member:
            # The declared size is the archive's word; only the bytes read prove what it expands to.
            data = member.read(max_bytes + 1)
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError) as error:
        return DocumentFailure(locator, f"could not be unpacked ({error}); pack the archive again")
    except NotImplementedError:
        return DocumentFailure(locator, "is compressed in a way Python cannot unpack; pack it again with deflate")
    except RuntimeError:  # zipfile's word for a member that needs a password
        return DocumentFailure(locator, "is encrypted in the archive; pack it again without a password")
    if len(data) > max_bytes:
        return _too_large(locator, max_bytes)
    return _document(locator, data, _member_date(info))


def _member_date(info: zipfile.ZipInfo) -> datetime | None:
    # A ZIP date has no time zone; it is taken as UTC, as every stored time is.
    try:
        return datetime(*info.date_time, tzinfo=UTC)
    except ValueError:
        return None


def _document(locator: str, data: bytes, updated_at: datetime | None) -> ReadResult:
    try:
        converted = convert(locator, data)
    except UnreadableFile as error:
        return DocumentFailure(locator, str(error))
    if not converted.markdown.strip():
        return DocumentFailure(locator, "is empty: it has no text to import")
    title = converted.title or PurePosixPath(locator).stem
    return SourceDocument(
        locator=locator, title=title, markdown=converted.markdown, url=converted.url, updated_at=updated_at
    )


def _unsupported(locator: str, suffix: str) -> DocumentFailure:
    kind = f"the type {suffix}" if suffix else "no extension"
    supported = ", ".join([*FORMATS, ARCHIVE_SUFFIX])
    return DocumentFailure(locator, f"has {kind}, which memdesk does not import; it imports {supported}")


def _too_large(locator: str, max_bytes: int) -> DocumentFailure:
    return DocumentFailure(
        locator,
        f"is larger than {max_bytes:,} bytes; split it, or raise MEMDESK_KNOWLEDGE_MAX_DOCUMENT_BYTES",
    )
