"""Which knowledge a reply cites: its ``[n]`` markers, kept only where they point at a chunk the model was given.

The ``search_knowledge`` tool numbers every chunk it returns with a ``ref`` unique within the turn, and the system
prompt asks the model to cite them as ``[n]``. When the turn's final reply is stored:

1. ``offered_sources`` reads the chunks this turn's ``search_knowledge`` results gave the model (after the newest
   customer message, prefetched lookups included);
2. ``cite`` drops every marker that points at no offered chunk (a model that invents ``[7]`` cites nothing), and
   returns the cited chunks in the order the reply first names them.

``store_cited_reply`` does both and stores the reply with its sources in one transaction; the model's final reply
and the embedded demo model's reply from prefetched lookups are both stored through it.

A Markdown link or reference definition (``[1](…)``, ``[1]: …``) is not a marker and is left alone.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlmodel import Session

from app.knowledge.citations import public_sources, record_citations
from app.knowledge.types import CitedChunk
from app.live.broker import EventBroker
from app.live.messages import store_message
from app.models import Conversation, Message
from app.tools.knowledge import knowledge_payloads

# A marker is one to three digits in brackets, not followed by "(" or ":" (a link or a reference definition); the
# space before a dropped one goes with it.
_MARKER = re.compile(r" ?\[(\d{1,3})\](?![(:])")


@dataclass(frozen=True)
class Citation:
    text: str
    sources: tuple[CitedChunk, ...]


def offered_sources(context: Sequence[Mapping[str, Any]]) -> dict[int, CitedChunk]:
    """The chunks this turn's knowledge results offered, by ref."""
    offered: dict[int, CitedChunk] = {}
    for payload in knowledge_payloads(_this_turn(context)):
        results = payload.get("results")
        for item in results if isinstance(results, list) else ():
            source = _offered(item)
            if source is not None:
                offered.setdefault(source.ref, source)
    return offered


def cite(reply: str, offered: Mapping[int, CitedChunk]) -> Citation:
    """``reply`` without the markers that point nowhere, and the offered chunks it cites, first-named first."""
    cited: dict[int, CitedChunk] = {}

    def keep_or_drop(match: re.Match[str]) -> str:
        source = offered.get(int(match.group(1)))
        if source is None:
            return ""
        cited.setdefault(source.ref, source)
        return match.group(0)

    text = _MARKER.sub(keep_or_drop, reply)
    return Citation(text=text, sources=tuple(cited.values()))


def store_cited_reply(
    session: Session,
    broker: EventBroker,
    conversation: Conversation,
    reply: Message,
    context: Sequence[Mapping[str, Any]],
) -> Message:
    """Store ``reply`` (a bot reply, not yet added) with only its markers that point at an offered chunk, and the
    sources it cites committed with it."""
    if not reply.content:
        return store_message(session, broker, conversation, reply)
    citation = cite(reply.content, offered_sources(context))
    reply.content = citation.text
    if not citation.sources:
        return store_message(session, broker, conversation, reply)
    cited = citation.sources
    return store_message(
        session,
        broker,
        conversation,
        reply,
        alongside=lambda stored: record_citations(session, stored.id or 0, cited),
        sources=public_sources(cited),
    )


def _this_turn(context: Sequence[Mapping[str, Any]]) -> Sequence[Mapping[str, Any]]:
    for index in range(len(context) - 1, -1, -1):
        if context[index].get("role") == "user":
            return context[index + 1 :]
    return context


def _offered(item: object) -> CitedChunk | None:
    if not isinstance(item, dict):
        return None
    ref, chunk_id, title = item.get("ref"), item.get("chunk_id"), item.get("title")
    if not isinstance(ref, int) or not isinstance(chunk_id, int) or isinstance(ref, bool) or not isinstance(title, str):
        return None
    url = item.get("url")
    heading_path = item.get("heading_path")
    return CitedChunk(
        ref=ref,
        chunk_id=chunk_id,
        title=title,
        heading_path=heading_path if isinstance(heading_path, str) else "",
        url=url if isinstance(url, str) and url.startswith(("https://", "http://")) else None,
    )
