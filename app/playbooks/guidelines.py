"""Response guidelines and guardrails: the desk's tone, sign-off, topics to refuse and the amount above which a
person decides, kept as data a supervisor edits in the console (versioned with the playbooks, ``_guidelines``).

The agent's system prompt includes them; playbooks read the amount as ``limits.person_above_amount``, so a refund
or return above it is handed to a person whatever the playbook's file says.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from app.playbooks.schema import validated

GUIDELINES_NAME = "_guidelines"  # not a playbook name (those start with a letter): the versions' key
DEFAULT_SOURCE = """\
# How the desk writes, and what it leaves to a person. Read by the agent's prompt and by the playbooks.
tone = "Warm, brief and concrete. Use the customer's name when you know it."
sign_off = ""
refuse_topics = ["medical or legal advice", "other customers' orders", "prices or stock of other shops"]
# A refund or return above this amount (in the order's currency) is decided by a person.
person_above_amount = 200
"""
_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["tone", "person_above_amount"],
    "properties": {
        "tone": {"type": "string", "minLength": 1, "maxLength": 1000},
        "sign_off": {"type": "string", "maxLength": 200},
        "refuse_topics": {"type": "array", "items": {"type": "string", "minLength": 1, "maxLength": 200}},
        "person_above_amount": {"type": "number", "minimum": 0},
    },
}


@dataclass(frozen=True)
class Guidelines:
    tone: str
    person_above_amount: float
    sign_off: str = ""
    refuse_topics: tuple[str, ...] = field(default_factory=tuple)
    source: str = DEFAULT_SOURCE

    def limits(self) -> dict[str, float]:
        return {"person_above_amount": self.person_above_amount}


def parse_guidelines(source: str, *, source_name: str = "guidelines") -> Guidelines:
    """The guidelines in ``source``, or ``PlaybookError`` with the line and the reason."""
    data = validated(source, _SCHEMA, source_name)
    return Guidelines(
        tone=data["tone"],
        person_above_amount=float(data["person_above_amount"]),
        sign_off=data.get("sign_off", ""),
        refuse_topics=tuple(data.get("refuse_topics", ())),
        source=source,
    )


DEFAULT_GUIDELINES = parse_guidelines(DEFAULT_SOURCE)
