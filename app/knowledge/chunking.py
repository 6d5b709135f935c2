"""Chunking: a document's Markdown cut into pieces that follow its headings, each within a token budget.

A section is the text under one heading, up to the next heading of any level. Its heading path is the document's
title followed by the headings above it ("Returns › Refund timing"); a first-level heading that repeats the title
is the title itself, not a level below it. Headings are found by markdown-it (ATX and setext headings alike, never
a ``#`` line inside a code block).

Within the budget (tokens counted as the rest of the app counts them, ``compression.tokens``):

- a section that fits is one chunk;
- a longer one is split at paragraph boundaries, a paragraph still too long at sentence boundaries, and a sentence
  still too long (a table row, a wall of text without punctuation) at the budget's worth of characters;
- a section shorter than an eighth of the budget is merged with the sections after it while the merged text fits,
  so that an introduction of one line is not a chunk of its own (a heading with nothing under it is no section). A
  merged chunk's path is what its sections' paths share, and the headings below that stay in its text as Markdown
  headings.

Chunking is deterministic: the same Markdown and budget give the same chunks, so a re-import that finds a document
unchanged by its hash has nothing to recompute.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from markdown_it import MarkdownIt

from app.settings import KNOWLEDGE_CHUNK_TOKENS
from compression.tokens import ASCII_CHARS_PER_TOKEN, estimate_text_tokens

MIN_CHUNK_TOKENS = 16
MERGE_FRACTION = 8  # sections under budget / MERGE_FRACTION tokens merge with the next ones
HEADING_SEPARATOR = " › "
MAX_HEADING_PATH_CHARS = 1000  # knowledge_chunks.heading_path
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")
# After a sentence's closing punctuation (Latin or CJK), possibly followed by a closing quote or bracket.
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])[\"'”’)\]]*\s+|(?<=[。！？])")


@dataclass(frozen=True)
class Chunk:
    position: int
    heading_path: str
    text: str
    token_count: int


@dataclass(frozen=True)
class ChunkedDocument:
    headings: list[str]  # every heading of the document, in order, as a reader sees them
    chunks: list[Chunk]


@dataclass
class _Section:
    path: tuple[str, ...]
    heading_line: str  # the heading as Markdown, kept when the section is merged under a shorter path
    body: str

    @property
    def tokens(self) -> int:
        return estimate_text_tokens(self.body)


_parser = MarkdownIt("commonmark")


def chunk_document(title: str, markdown: str, *, budget_tokens: int = KNOWLEDGE_CHUNK_TOKENS) -> ChunkedDocument:
    """The chunks of a document titled ``title`` whose text is ``markdown``, in reading order."""
    budget = max(budget_tokens, MIN_CHUNK_TOKENS)
    sections, headings = _sections(title.strip(), markdown)
    pieces: list[tuple[tuple[str, ...], str]] = []
    for group in _merged(sections, budget):
        path = _common_prefix([section.path for section in group])
        text = _group_text(group, len(path))
        pieces.extend((path, piece) for piece in _split(text, budget))
    chunks = [
        Chunk(position, _path_text(path), piece, estimate_text_tokens(piece))
        for position, (path, piece) in enumerate(pieces)
    ]
    return ChunkedDocument(headings, chunks)


def _sections(title: str, markdown: str) -> tuple[list[_Section], list[str]]:
    lines = markdown.splitlines()
    tokens = _parser.parse(markdown)
    sections: list[_Section] = []
    headings: list[str] = []
    stack: list[tuple[int, str]] = []  # (level, text) of the headings above the current line
    path: tuple[str, ...] = (title,) if title else ()
    heading_line, body_start = "", 0
    title_seen = False
    for index, token in enumerate(tokens):
        if token.type != "heading_open" or token.map is None:
            continue
        start, end = token.map
        sections.append(_Section(path, heading_line, "\n".join(lines[body_start:start]).strip()))
        text = " ".join(tokens[index + 1].content.split())
        level = int(token.tag[1])
        headings.append(text)
        heading_line, body_start = f"{'#' * level} {text}", end
        if level == 1 and not title_seen and text.casefold() == title.casefold():
            title_seen = True  # the title's own heading: the path stays at the title
            continue
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, text))
        path = (*((title,) if title else ()), *(heading for _, heading in stack))
    sections.append(_Section(path, heading_line, "\n".join(lines[body_start:]).strip()))
    # A heading with nothing under it (a title straight above its first subheading) is already in the paths of the
    # sections below it; as a section of its own it would only drag their merged path up to its parent's.
    return [section for section in sections if section.body], headings


def _merged(sections: list[_Section], budget: int) -> Iterator[list[_Section]]:
    """Sections grouped: a short section takes the following ones while the group fits the budget."""
    small = budget // MERGE_FRACTION
    group: list[_Section] = []
    group_tokens = 0
    for section in sections:
        tokens = section.tokens + estimate_text_tokens(section.heading_line)
        if group and (group_tokens >= small or group_tokens + tokens > budget):
            yield group
            group, group_tokens = [], 0
        group.append(section)
        group_tokens += tokens
    if group:
        yield group


def _group_text(group: list[_Section], shared_depth: int) -> str:
    parts = []
    for section in group:
        if len(section.path) > shared_depth and section.heading_line:
            parts.append(section.heading_line)
        if section.body:
            parts.append(section.body)
    return "\n\n".join(parts)


def _common_prefix(paths: list[tuple[str, ...]]) -> tuple[str, ...]:
    prefix = paths[0]
    for path in paths[1:]:
        length = 0
        while length < min(len(prefix), len(path)) and prefix[length] == path[length]:
            length += 1
        prefix = prefix[:length]
    return prefix


def _path_text(path: tuple[str, ...]) -> str:
    text = HEADING_SEPARATOR.join(path)
    return text if len(text) <= MAX_HEADING_PATH_CHARS else text[: MAX_HEADING_PATH_CHARS - 1] + "…"


def _split(text: str, budget: int) -> list[str]:
    """``text`` in pieces within ``budget`` tokens, cut at the coarsest boundary that works; no empty piece."""
    if not text.strip():
        return []
    if estimate_text_tokens(text) <= budget:
        return [text.strip()]
    units: list[tuple[str, str]] = []  # (text, what joins it to the unit before)
    for paragraph in _PARAGRAPH_BREAK.split(text):
        if estimate_text_tokens(paragraph) <= budget:
            units.append((paragraph.strip(), "\n\n"))
            continue
        joiner = "\n\n"
        for sentence in _SENTENCE_END.split(paragraph):
            for piece in _hard_split(sentence.strip(), budget):
                units.append((piece, joiner))
                joiner = " "
    return _packed([unit for unit in units if unit[0]], budget)


def _hard_split(text: str, budget: int) -> list[str]:
    if estimate_text_tokens(text) <= budget:
        return [text]
    # Estimates count at most ASCII_CHARS_PER_TOKEN characters per token, so a slice of budget tokens' worth of
    # ASCII characters may still be over budget for CJK text: halve until it fits.
    size = budget * ASCII_CHARS_PER_TOKEN
    while size > 1 and estimate_text_tokens(text[:size]) > budget:
        size //= 2
    return [text[:size], *_hard_split(text[size:], budget)] if text[size:] else [text[:size]]


def _packed(units: list[tuple[str, str]], budget: int) -> list[str]:
    """Consecutive units joined while they fit: paragraphs by a blank line, sentences of one paragraph by a space."""
    pieces: list[str] = []
    current = ""
    for unit, joiner in units:
        candidate = f"{current}{joiner}{unit}" if current else unit
        if current and estimate_text_tokens(candidate) > budget:
            pieces.append(current)
            candidate = unit
        current = candidate
    if current:
        pieces.append(current)
    return pieces
