"""Importing into a knowledge source from the console: pasted URLs, uploaded files, and a re-import.

Each needs the supervisor role (``Permission.MANAGE_KNOWLEDGE``) and the form's CSRF token. The import itself is
the knowledge package's (``app.knowledge.web.read_urls``, ``.readers.read_paths``, ``.importer.import_documents``)
and runs in a worker thread, within the settings' limits, while the request waits; the answer is the source's page,
which shows the import's report. A URL import records its URLs as the source's origins, which a re-import reads
again (pruning what is gone); files cannot be read again, so for them the page says to upload them once more.
Uploads are saved to a temporary folder under their own names, so documents keep those names as locators.
"""

from __future__ import annotations

import itertools
import tempfile
from collections.abc import Iterable
from pathlib import Path, PurePath
from typing import Annotated

import anyio
from fastapi import File, Form, Request, UploadFile, status
from fastapi.responses import Response
from sqlalchemy import Engine
from sqlmodel import Session

from app.console import knowledge
from app.knowledge.importer import SourceNameError, import_documents
from app.knowledge.readers import ARCHIVE_SUFFIX, ReadResult, read_paths
from app.knowledge.types import DocumentFailure
from app.knowledge.web import WebLimits, read_urls
from app.models.knowledge import SOURCE_NAME_LENGTH
from app.settings import Settings
from app.web.console.common import ConsoleError, after_action, console_router
from app.web.console.knowledge import KNOWLEDGE_PATH, MAX_UPLOAD_BYTES, SourceId, read_knowledge
from app.web.deps import DbDep, KnowledgeEditorDep, SettingsDep

router = console_router(KNOWLEDGE_PATH)
IMPORT_PATH = f"{KNOWLEDGE_PATH}/import"
# A pasted list longer than this is a crawl, not a form: a sitemap URL lists more pages in one line.
MAX_PASTED_URLS = 500
MAX_URLS_CHARS = 200_000
MAX_UPLOAD_FILES = 200
WEB_PREFIXES = ("http://", "https://")
READ_CHUNK_BYTES = 64 * 1024
SourceField = Annotated[str, Form(max_length=SOURCE_NAME_LENGTH * 2)]
UrlsField = Annotated[str, Form(max_length=MAX_URLS_CHARS)]
FilesField = Annotated[list[UploadFile], File()]


def pasted_urls(text: str) -> list[str]:
    """The URLs in the form, one a line, each once; a 400 page when there are none, too many or a non-web one."""
    urls = list(dict.fromkeys(line.strip() for line in text.splitlines() if line.strip()))
    if not urls:
        raise ConsoleError(status.HTTP_400_BAD_REQUEST, "Nothing was imported: paste at least one URL.")
    if len(urls) > MAX_PASTED_URLS:
        raise ConsoleError(
            status.HTTP_400_BAD_REQUEST,
            f"Nothing was imported: paste at most {MAX_PASTED_URLS} URLs, or the site's sitemap URL instead.",
        )
    wrong = [url for url in urls if not url.lower().startswith(WEB_PREFIXES)]
    if wrong:
        raise ConsoleError(
            status.HTTP_400_BAD_REQUEST,
            f"Nothing was imported: {wrong[0][:200]!r} is not an http:// or https:// address.",
        )
    return urls


async def run_import(
    db: Engine,
    source: str,
    documents: Iterable[ReadResult],
    *,
    actor: str,
    prune: bool = False,
    origins: list[str] | None = None,
) -> int:
    """Import ``documents`` in a worker thread, audited; the source's id. A name that cannot be stored is a 400."""

    def run() -> int:
        report = import_documents(db, source, documents, prune=prune)
        with Session(db) as session:
            return knowledge.record_console_import(
                session, report.source, report.counts(), actor=actor, origins=origins
            )

    try:
        return await anyio.to_thread.run_sync(run)
    except SourceNameError as error:
        raise ConsoleError(status.HTTP_400_BAD_REQUEST, f"Nothing was imported: {error}") from error


def _source_page(request: Request, source_id: int) -> Response:
    return after_action(request, f"{KNOWLEDGE_PATH}/sources/{source_id}")


@router.post("/import")
async def import_urls(
    request: Request,
    db: DbDep,
    settings: SettingsDep,
    staff: KnowledgeEditorDep,
    source: SourceField = "",
    urls: UrlsField = "",
) -> Response:
    found = pasted_urls(urls)
    documents = read_urls(found, limits=WebLimits.from_settings(settings))
    return _source_page(request, await run_import(db, source, documents, actor=staff.actor, origins=found))


@router.post("/sources/{source_id}/reimport")
async def reimport_source(
    request: Request, source_id: SourceId, db: DbDep, settings: SettingsDep, staff: KnowledgeEditorDep
) -> Response:
    summary = await read_knowledge(db, lambda session: knowledge.find_source(session, source_id))
    if not summary.origins:
        raise ConsoleError(
            status.HTTP_400_BAD_REQUEST,
            "This source was not imported from URLs, so it cannot be read again: upload its files again instead.",
        )
    documents = read_urls(summary.origins, limits=WebLimits.from_settings(settings))
    return _source_page(
        request, await run_import(db, summary.name, documents, actor=staff.actor, prune=True, origins=summary.origins)
    )


MAX_NAME_BYTES = 255  # what file systems allow in one name


def _storable(name: str) -> bool:
    """Whether ``name`` can name a file on disk: valid UTF-8 (no lone surrogate), no NUL or control character."""
    try:
        encoded = name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return len(encoded) <= MAX_NAME_BYTES and not any(ord(character) < 32 or character == "\x7f" for character in name)


def upload_name(upload: UploadFile) -> str:
    """The file's own name, without any folder a browser sent; a 400 page when there is none."""
    name = PurePath((upload.filename or "").replace("\\", "/")).name
    if not name or name.startswith("."):
        raise ConsoleError(status.HTTP_400_BAD_REQUEST, "Nothing was imported: every file needs a name.")
    if not _storable(name):
        raise ConsoleError(
            status.HTTP_400_BAD_REQUEST, f"Nothing was imported: rename the file {name!r}, its name cannot be stored."
        )
    return name


async def save_upload(upload: UploadFile, folder: Path, max_bytes: int) -> tuple[Path | None, int]:
    """``upload`` saved in ``folder`` under its name, and its size; no path when it is over ``max_bytes`` (an
    archive is not, since its members are measured one by one when it is read)."""
    name = upload_name(upload)
    target = folder / name
    limit = MAX_UPLOAD_BYTES if name.lower().endswith(ARCHIVE_SUFFIX) else max_bytes
    size = 0
    with target.open("wb") as file:
        while chunk := await upload.read(READ_CHUNK_BYTES):
            size += len(chunk)
            if size > limit:
                break
            file.write(chunk)
    if size > limit:
        target.unlink()
        return None, size
    return target, size


def _too_large(name: str, max_bytes: int) -> DocumentFailure:
    return DocumentFailure(
        name, f"is larger than {max_bytes:,} bytes; split it, or raise MEMDESK_KNOWLEDGE_MAX_DOCUMENT_BYTES"
    )


async def _saved_documents(uploads: list[UploadFile], folder: Path, settings: Settings) -> Iterable[ReadResult]:
    max_bytes = settings.knowledge_max_document_bytes
    names = [upload_name(upload) for upload in uploads]
    if len(set(names)) != len(names):
        raise ConsoleError(status.HTTP_400_BAD_REQUEST, "Nothing was imported: two files have the same name.")
    saved: list[Path] = []
    refused: list[ReadResult] = []
    total = 0
    for upload in uploads:
        path, size = await save_upload(upload, folder, max_bytes)
        total += size
        if total > MAX_UPLOAD_BYTES:
            raise ConsoleError(
                status.HTTP_413_CONTENT_TOO_LARGE,
                f"Nothing was imported: the files add up to more than {MAX_UPLOAD_BYTES // (1024 * 1024)} MB; "
                "upload them in smaller groups.",
            )
        if path is None:
            refused.append(_too_large(upload_name(upload), max_bytes))
        else:
            saved.append(path)
    # Read lazily by the import's worker thread, while the folder still exists.
    return itertools.chain(refused, read_paths(saved, max_bytes=max_bytes))


@router.post("/upload")
async def upload_files(
    request: Request,
    db: DbDep,
    settings: SettingsDep,
    staff: KnowledgeEditorDep,
    source: SourceField,
    files: FilesField,
) -> Response:
    uploads = [upload for upload in files if upload.filename]
    if not uploads:
        raise ConsoleError(status.HTTP_400_BAD_REQUEST, "Nothing was imported: choose at least one file.")
    if len(uploads) > MAX_UPLOAD_FILES:
        raise ConsoleError(
            status.HTTP_400_BAD_REQUEST, f"Nothing was imported: upload at most {MAX_UPLOAD_FILES} files at once."
        )
    with tempfile.TemporaryDirectory(prefix="memdesk-upload-") as folder:
        documents = await _saved_documents(uploads, Path(folder), settings)
        source_id = await run_import(db, source, documents, actor=staff.actor)
    return _source_page(request, source_id)
