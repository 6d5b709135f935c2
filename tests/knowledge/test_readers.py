"""Reading files: each format as Markdown, folders and ZIP archives, and a clear failure for each bad file."""

from __future__ import annotations

import io
import os
import zipfile
from datetime import UTC, datetime
from pathlib import Path

import pytest
from pypdf import PdfWriter
from sqlalchemy import Engine
from sqlmodel import Session, select

from app.knowledge.importer import import_documents
from app.knowledge.readers import ReadResult, read_paths
from app.knowledge.types import DocumentFailure, SourceDocument
from app.models.knowledge import KnowledgeDocument

PNG_BYTES = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(64)


def text_pdf(text: str) -> bytes:
    """A one-page PDF whose page draws ``text``: a text layer, as an exported help article has."""
    stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R"
        b" /Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def blank_pdf(*, password: str | None = None) -> bytes:
    writer = PdfWriter()
    writer.add_blank_page(width=612, height=792)
    if password is not None:
        writer.encrypt(user_password=password, algorithm="RC4-128")
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


def read_one(path: Path, **options: int) -> ReadResult:
    results = list(read_paths([path], **options))
    assert len(results) == 1, results
    return results[0]


def document(path: Path) -> SourceDocument:
    result = read_one(path)
    assert isinstance(result, SourceDocument), result
    return result


def failure(path: Path, **options: int) -> DocumentFailure:
    result = read_one(path, **options)
    assert isinstance(result, DocumentFailure), result
    return result


def write(path: Path, content: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, str):
        path.write_text(content, encoding="utf-8")
    else:
        path.write_bytes(content)
    return path


def test_markdown_keeps_its_text_and_takes_the_first_heading_as_title(tmp_path: Path) -> None:
    path = write(tmp_path / "returns.md", "Intro line\n\n# Returns policy\n\n## Refunds\n\nFive business days.\n")
    os.utime(path, (1_700_000_000, 1_700_000_000))
    found = document(path)
    assert found.locator == "returns.md"
    assert found.title == "Returns policy"
    assert "## Refunds" in found.markdown
    assert found.url is None
    assert found.updated_at == datetime.fromtimestamp(1_700_000_000, tz=UTC)


def test_markdown_front_matter_gives_title_and_url_and_is_not_imported(tmp_path: Path) -> None:
    path = write(
        tmp_path / "shipping.markdown",
        '---\ntitle: "Shipping times"\nurl: https://help.example.com/shipping\n---\nParcels arrive in 3 days.\n',
    )
    found = document(path)
    assert (found.title, found.url) == ("Shipping times", "https://help.example.com/shipping")
    assert found.markdown == "Parcels arrive in 3 days.\n"


def test_front_matter_url_that_is_not_http_is_dropped_and_title_falls_back_to_the_stem(tmp_path: Path) -> None:
    found = document(write(tmp_path / "gift-cards.md", "---\nurl: javascript:alert(1)\n---\nNo heading here.\n"))
    assert (found.title, found.url) == ("gift-cards", None)


def test_markdown_with_a_byte_order_mark_reads_as_utf8(tmp_path: Path) -> None:
    found = document(write(tmp_path / "bom.md", "\ufeff# Café hours\n\nOpen daily.\n".encode()))
    assert found.title == "Café hours"


def test_plain_text_is_taken_as_it_is_titled_by_its_name(tmp_path: Path) -> None:
    found = document(write(tmp_path / "warranty.txt", "Two years on every kettle.\n"))
    assert (found.title, found.markdown) == ("warranty", "Two years on every kettle.\n")


def test_html_file_becomes_its_main_content_as_markdown(tmp_path: Path) -> None:
    page = (
        "<html><head><title>Password reset</title></head><body><nav>Home | Shop</nav><article>"
        "<h1>Password reset</h1><h2>From the app</h2><p>Tap Forgot password on the sign-in screen.</p>"
        "</article></body></html>"
    )
    found = document(write(tmp_path / "reset.htm", page))
    assert found.title == "Password reset"
    assert "Forgot password" in found.markdown
    assert found.url is None


def test_broken_html_gives_what_can_be_read(tmp_path: Path) -> None:
    found = document(write(tmp_path / "broken.html", "<html><body><h1>Opening hours<p>We open at nine every day.<div"))
    assert "We open at nine" in found.markdown


def test_html_with_no_text_fails_with_the_reason(tmp_path: Path) -> None:
    found = failure(write(tmp_path / "app.html", "<html><body><div id='root'></div><script>x()</script></body></html>"))
    assert "no readable text" in found.reason


def test_pdf_text_layer_is_read(tmp_path: Path) -> None:
    found = document(write(tmp_path / "manual.pdf", text_pdf("Descale the kettle every month.")))
    assert "Descale the kettle every month." in found.markdown
    assert found.title == "manual"


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (blank_pdf(), "without a text layer"),
        (blank_pdf(password="secret"), "encrypted PDF"),
        (b"%PDF-1.4\n1 0 obj <<\ngarbage", "damaged PDF"),
        (b"# Not a PDF at all\n", "not a PDF"),
    ],
    ids=["scanned", "encrypted", "damaged", "misnamed"],
)
def test_unreadable_pdf_fails_with_what_to_do(tmp_path: Path, content: bytes, expected: str) -> None:
    assert expected in failure(write(tmp_path / "guide.pdf", content)).reason


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        ("logo.md", PNG_BYTES, "is a PNG image, not markdown text"),
        ("notes.txt", b"plain\x00text\x00with\x00nuls", "is binary data"),
        ("latin.md", "# Caf\xe9\n".encode("latin-1"), "is not UTF-8 text"),
        ("report.docx", b"PK\x03\x04", "has the type .docx, which memdesk does not import; it imports .md,"),
        ("LICENSE", b"MIT", "has no extension"),
        ("blank.md", b"---\ntitle: Draft\n---\n\n", "is empty"),
    ],
    ids=["lying-about-type", "nul-bytes", "not-utf8", "unsupported", "no-extension", "empty"],
)
def test_bad_file_fails_with_a_sentence_and_the_rest_is_read(
    tmp_path: Path, name: str, content: bytes, expected: str
) -> None:
    write(tmp_path / "docs" / name, content)
    write(tmp_path / "docs" / "zz-good.md", "# Good\n\nText.\n")
    results = list(read_paths([tmp_path / "docs"]))
    assert [type(result) for result in results] == [DocumentFailure, SourceDocument]
    assert results[0].locator == name
    assert expected in results[0].reason  # type: ignore[union-attr]


def test_file_over_the_size_cap_fails_naming_the_setting(tmp_path: Path) -> None:
    found = failure(write(tmp_path / "big.md", "x" * 2048), max_bytes=1024)
    assert "MEMDESK_KNOWLEDGE_MAX_DOCUMENT_BYTES" in found.reason


def test_missing_path_fails_and_names_it(tmp_path: Path) -> None:
    found = failure(tmp_path / "nowhere")
    assert found.locator == str(tmp_path / "nowhere")
    assert "does not exist" in found.reason


def test_folder_is_read_recursively_in_order_with_relative_posix_locators(tmp_path: Path) -> None:
    root = tmp_path / "help"
    for name in ("b.md", "a/z.txt", "a/b/c.md", ".git/config.md", "a/.hidden.md"):
        write(root / name, f"# {name}\n")
    assert [result.locator for result in read_paths([root])] == ["a/b/c.md", "a/z.txt", "b.md"]


def zip_with(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("guides/", b"")
        for name, content in members.items():
            archive.writestr(zipfile.ZipInfo(name, date_time=(2026, 3, 4, 5, 6, 8)), content, zipfile.ZIP_DEFLATED)
    return path


def test_zip_members_are_read_in_place_with_their_dates(tmp_path: Path) -> None:
    archive = zip_with(tmp_path / "export.zip", {"guides/returns.md": b"# Returns\n\nFive days.\n", "faq.txt": b"Hi"})
    results = list(read_paths([archive]))
    assert [result.locator for result in results] == ["export.zip/faq.txt", "export.zip/guides/returns.md"]
    returns = results[1]
    assert isinstance(returns, SourceDocument)
    assert returns.title == "Returns"
    assert returns.updated_at == datetime(2026, 3, 4, 5, 6, 8, tzinfo=UTC)


def test_zip_member_names_that_leave_the_archive_are_refused(tmp_path: Path) -> None:
    archive = zip_with(tmp_path / "evil.zip", {"../escape.md": b"# Out\n", "/etc/passwd.md": b"# Abs\n"})
    results = list(read_paths([archive]))
    assert [type(result) for result in results] == [DocumentFailure, DocumentFailure]
    assert all("points outside the archive" in result.reason for result in results)  # type: ignore[union-attr]


def test_zip_bomb_member_is_refused_by_declared_size(tmp_path: Path) -> None:
    archive = zip_with(tmp_path / "bomb.zip", {"huge.md": b"a" * 50_000, "ok.md": b"# Fine\n"})
    results = list(read_paths([archive], max_bytes=10_000))
    assert isinstance(results[0], DocumentFailure) and "larger than 10,000 bytes" in results[0].reason
    assert isinstance(results[1], SourceDocument)


def test_zip_member_that_expands_past_its_declared_size_is_refused(tmp_path: Path) -> None:
    archive = tmp_path / "liar.zip"
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as writer:
        writer.writestr("huge.md", b"a" * 50_000)
    raw = bytearray(archive.read_bytes())
    # Both headers are made to declare the member small; only the bytes it inflates to show what it is.
    for header, size_offset in ((b"PK\x03\x04", 22), (b"PK\x01\x02", 24)):
        at = raw.index(header) + size_offset
        raw[at : at + 4] = (100).to_bytes(4, "little")
    archive.write_bytes(bytes(raw))
    found = failure(archive, max_bytes=10_000)
    assert found.locator == "liar.zip/huge.md"
    assert "larger than 10,000 bytes" in found.reason or "could not be unpacked" in found.reason


def test_a_file_named_zip_that_is_not_one_fails(tmp_path: Path) -> None:
    assert "not a ZIP archive" in failure(write(tmp_path / "fake.zip", b"hello")).reason


def stored_locators(engine: Engine) -> list[str]:
    with Session(engine) as session:
        return sorted(session.exec(select(KnowledgeDocument.locator)).all())


def test_reimporting_the_same_folder_changes_nothing(sqlite_engine: Engine, tmp_path: Path) -> None:
    write(tmp_path / "help" / "returns.md", "# Returns\n\nFive days.\n")
    write(tmp_path / "help" / "guide.pdf", text_pdf("Descale monthly."))
    first = import_documents(sqlite_engine, "help", read_paths([tmp_path / "help"]))
    again = import_documents(sqlite_engine, "help", read_paths([tmp_path / "help"]))
    assert (first.counts()["added"], first.failed) == (2, [])
    assert again.counts() == {"added": 0, "updated": 0, "unchanged": 2, "removed": 0, "failed": 0}


def test_prune_removes_the_document_of_a_deleted_file(sqlite_engine: Engine, tmp_path: Path) -> None:
    write(tmp_path / "help" / "returns.md", "# Returns\n")
    gone = write(tmp_path / "help" / "old" / "promo.md", "# Promo\n")
    import_documents(sqlite_engine, "help", read_paths([tmp_path / "help"]))
    gone.unlink()
    report = import_documents(sqlite_engine, "help", read_paths([tmp_path / "help"]), prune=True)
    assert report.removed == ["old/promo.md"]
    assert stored_locators(sqlite_engine) == ["returns.md"]
