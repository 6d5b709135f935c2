"""The customer-service summary layout: section titles, and parsing a summary back into its sections."""

from __future__ import annotations

import re

from compression.tokens import estimate_text_tokens

CUSTOMER_GOAL = "Customer Goal"
VERIFIED_IDENTITY = "Verified Identity"
ORDERS_AND_IDENTIFIERS = "Orders & Identifiers"
ACTIONS_TAKEN = "Actions Taken"
KEY_DECISIONS = "Key Decisions"
PROMISES = "Promises & Commitments"
CUSTOMER_PREFERENCES = "Customer Preferences"
RESOLVED_QUESTIONS = "Resolved Questions"
PENDING_ASKS = "Pending Customer Asks"
HANDOFF_STATE = "Handoff State"
CRITICAL_CONTEXT = "Critical Context"

SUMMARY_SECTIONS: tuple[str, ...] = (
    CUSTOMER_GOAL,
    VERIFIED_IDENTITY,
    ORDERS_AND_IDENTIFIERS,
    ACTIONS_TAKEN,
    KEY_DECISIONS,
    PROMISES,
    CUSTOMER_PREFERENCES,
    RESOLVED_QUESTIONS,
    PENDING_ASKS,
    HANDOFF_STATE,
    CRITICAL_CONTEXT,
)

EMPTY_ITEM_WORDS = frozenset({"none", "n/a", "na", "-", "—", "nothing", "none yet", "not yet", "unknown", "none."})

_HEADING_DECORATION = re.compile(r"^[#*_\s]+|[#*_:\s]+$")
_ITEM_START = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+")


_NOT_A_LETTER = re.compile(r"[^a-z]")


def _section_key(title: str) -> str:
    return _NOT_A_LETTER.sub("", title.lower().replace("&", "and"))


_SECTION_KEYS = {_section_key(title): title for title in SUMMARY_SECTIONS}


def heading_title(line: str) -> str | None:
    """The section a line opens (``## Key Decisions``, ``**Key Decisions:**``, ``KEY DECISIONS``), or None."""
    stripped = line.strip()
    if not stripped or len(stripped) > 60 or _ITEM_START.match(stripped):
        return None
    return _SECTION_KEYS.get(_section_key(_HEADING_DECORATION.sub("", stripped)))


def parse_sections(text: str) -> dict[str, list[str]]:
    """Section title -> the items (bullets, with their continuation lines) under it, in summary order.

    A section that appears twice collects the items of both. Placeholder items such as "None" are dropped.
    """
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        title = heading_title(line)
        if title is not None:
            current = sections.setdefault(title, [])
            continue
        if line.startswith("#"):  # a heading we do not know: its items belong to no section
            current = None
            continue
        if current is None or not line.strip():
            continue
        if _ITEM_START.match(line) or not current:
            current.append(_ITEM_START.sub("", line).strip())
        else:
            current[-1] = f"{current[-1]} {line.strip()}"
    return {
        title: [item for item in items if item.lower().strip(" .") not in EMPTY_ITEM_WORDS]
        for title, items in sections.items()
    }


def render_sections(sections: dict[str, list[str]]) -> str:
    """A summary in the standard layout; empty sections read "None"."""
    blocks = []
    for title in SUMMARY_SECTIONS:
        items = sections.get(title) or ["None"]
        blocks.append(f"## {title}\n" + "\n".join(f"- {item}" for item in items))
    return "\n\n".join(blocks)


def append_to_section(text: str, title: str, lines: str) -> str:
    """Insert ``lines`` at the end of section ``title`` in ``text`` (adding the section when absent)."""
    source = text.splitlines()
    span = _section_span(source, title)
    if span is None:
        return f"{text.rstrip()}\n\n## {title}\n{lines}"
    start, end = span
    while end > start + 1 and not source[end - 1].strip():
        end -= 1
    kept = [line for line in source[start + 1 : end] if line.strip().lstrip("-*• ").lower() not in EMPTY_ITEM_WORDS]
    return "\n".join([*source[: start + 1], *kept, lines, *source[end:]]).rstrip()


def _section_span(source: list[str], title: str) -> tuple[int, int] | None:
    """(heading line, end) of section ``title`` in ``source`` lines; None when it is absent."""
    start = next((index for index, line in enumerate(source) if heading_title(line) == title), None)
    if start is None:
        return None
    end = next(
        (
            index
            for index in range(start + 1, len(source))
            if heading_title(source[index]) is not None or source[index].startswith("#")
        ),
        len(source),
    )
    return start, end


def replace_section_items(text: str, title: str, items: list[str]) -> str:
    """``text`` with the body of section ``title`` replaced by ``items`` as bullets ("None" when empty)."""
    source = text.splitlines()
    body = [f"- {item}" for item in items] or ["- None"]
    span = _section_span(source, title)
    if span is None:
        return f"{text.rstrip()}\n\n## {title}\n" + "\n".join(body)
    start, end = span
    return "\n".join([*source[: start + 1], *body, *([""] if end < len(source) else []), *source[end:]]).rstrip()


# When notes are over budget, items go in this order (oldest item of a section first); decisions go last.
TRIM_ORDER: tuple[str, ...] = (
    RESOLVED_QUESTIONS,
    ACTIONS_TAKEN,
    CRITICAL_CONTEXT,
    ORDERS_AND_IDENTIFIERS,
    PENDING_ASKS,
    HANDOFF_STATE,
    CUSTOMER_GOAL,
    VERIFIED_IDENTITY,
    CUSTOMER_PREFERENCES,
    KEY_DECISIONS,
    PROMISES,
)


def trim_to_budget(text: str, budget_tokens: int) -> tuple[str, int]:
    """``text`` within ``budget_tokens`` (estimated), dropping the least useful items first; (text, items dropped).

    Over budget, the notes are re-rendered in the standard layout (text outside the known sections goes first),
    then items are removed in ``TRIM_ORDER``; a single item still too large is cut as a last resort.
    """
    if estimate_text_tokens(text) <= budget_tokens:
        return text, 0
    sections = parse_sections(text)
    dropped = 0
    rendered = render_sections(sections)
    for title in TRIM_ORDER:
        items = sections.get(title) or []
        while items and estimate_text_tokens(rendered) > budget_tokens:
            items.pop(0)
            dropped += 1
            rendered = render_sections(sections)
    if estimate_text_tokens(rendered) > budget_tokens:
        rendered = rendered[: max(0, budget_tokens - 1)].rstrip() + "…"  # one char can cost a token (CJK)
    return rendered, dropped
