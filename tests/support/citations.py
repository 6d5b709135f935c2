"""Scripted summaries that cite their source, as a real summary model's do: the decision ledger accepts a promise
only from the support turn it cites (``from: #N``)."""

from __future__ import annotations

import re

from tests.support.scripted_llm import RecordedRequest

_SUPPORT_TURN = re.compile(r"^\[#(\d+) support[^\]]*\]\n(.*?)(?=^\[#|\Z)", re.MULTILINE | re.DOTALL)


def cite_latest_support_turn(summary: str, request: RecordedRequest, *, item_prefix: str, saying: str = "") -> str:
    """``summary`` with each item line starting ``item_prefix`` citing the latest support turn of the request (that
    says ``saying``, when given)."""
    turns = str(request.messages[-1]["content"]).split("<turns>", 1)[-1]
    found = [number for number, text in _SUPPORT_TURN.findall(turns) if saying in text]
    if not found:
        return summary
    citation = f"from: #{found[-1]}"
    return "\n".join(_cite(line, citation) if line.startswith(item_prefix) else line for line in summary.split("\n"))


def _cite(line: str, citation: str) -> str:
    """The item with ``citation`` among its fields (``{due: … | from: #N}``), or as its only field."""
    return f"{line[:-1]} | {citation}}}" if line.endswith("}") else f"{line} {{{citation}}}"
