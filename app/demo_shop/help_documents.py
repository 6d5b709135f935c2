"""The demo shop's help center: Markdown articles shipped in the package (``knowledge/*.md``), one per article.

Each file's first ``# `` line is its title. ``seed_demo`` imports them as the knowledge source ``DEMO_SOURCE``
like any other source, so the bot finds them through ``search_knowledge`` and the console lists them.
"""

from __future__ import annotations

from importlib.resources import files
from importlib.resources.abc import Traversable

from app.knowledge.types import SourceDocument

DEMO_SOURCE = "demo-help-center"
ARTICLES_FOLDER = "knowledge"
TITLE_PREFIX = "# "


def demo_help_documents() -> list[SourceDocument]:
    """Every demo article, in file-name order (the locator is the file name)."""
    folder = files("app.demo_shop") / ARTICLES_FOLDER
    paths = sorted((path for path in folder.iterdir() if path.name.endswith(".md")), key=lambda path: path.name)
    return [_document(path) for path in paths]


def _document(path: Traversable) -> SourceDocument:
    markdown = path.read_text(encoding="utf-8")
    first = markdown.lstrip().splitlines()[0] if markdown.strip() else ""
    if not first.startswith(TITLE_PREFIX):
        raise ValueError(f"The demo article {path.name} must start with its title as a '# ' heading.")
    return SourceDocument(locator=path.name, title=first.removeprefix(TITLE_PREFIX).strip(), markdown=markdown)
