"""What a playbook is, once its file is read (``app.playbooks.schema``): examples, slots, steps and replies.

- ``Slot``: a value the steps need. ``order`` is an order number (from the message, the conversation's focus, the
  customer's one recent order, or by asking); ``address`` a shipping address written on one line; ``text`` the
  customer's own words (the message that started the playbook).
- ``Step``: one action, run when its ``when`` condition (a sandboxed Jinja expression over the slots and results)
  holds. ``tool`` calls a tool through the registry (a ``confirm`` reply first asks the customer's yes for a write
  tool); ``reply`` answers and ends the run; ``handoff`` passes the conversation to a person and ends it;
  ``remember`` queues a conclusion for long-term memory; ``ask`` fills a slot only when it is reached (or asks the
  customer for it and waits).
- ``mode``: ``always`` (the playbook answers the intents it matches, whatever the model), ``guide`` (a capable
  model follows its steps as instructions, with its tools only; the embedded demo model runs it as ``always``),
  ``off``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

Mode = Literal["always", "guide", "off"]
MODES: tuple[Mode, ...] = ("always", "guide", "off")
SLOT_KINDS = ("order", "tracking", "address", "text")
SLOT_SOURCES = ("message", "focus", "recent", "ask")
CONFIRM = "confirm"  # what a run waits for while a write step awaits the customer's yes


@dataclass(frozen=True)
class Slot:
    name: str
    kind: str
    sources: tuple[str, ...] = ("message",)
    ask: str | None = None


@dataclass(frozen=True)
class Step:
    index: int
    when: str | None = None
    tool: str | None = None
    arguments: dict[str, Any] = field(default_factory=dict)
    save: str | None = None
    confirm: str | None = None
    on_error: dict[str, str] = field(default_factory=dict)
    reply: str | None = None
    handoff: dict[str, str] | None = None
    remember: dict[str, str] | None = None
    ask: str | None = None  # a slot filled (or asked for) when this step is reached

    def reply_names(self) -> Iterator[str]:
        """Every reply this step may send."""
        for name in (self.reply, self.confirm, *self.on_error.values()):
            if name:
                yield name
        if self.handoff:
            yield self.handoff["reply"]


@dataclass
class Playbook:
    name: str
    title: str
    steps: list[Step]
    replies: dict[str, dict[str, str]]
    examples: dict[str, list[str]]
    description: str = ""
    mode: Mode = "always"
    patterns: dict[str, list[re.Pattern[str]]] = field(default_factory=dict)
    limits: dict[str, float] = field(default_factory=dict)
    slots: list[Slot] = field(default_factory=list)
    source: str = ""

    def all_examples(self) -> list[str]:
        return [text for texts in self.examples.values() for text in texts]

    def pattern_matches(self, text: str) -> bool:
        return any(pattern.search(text) for patterns in self.patterns.values() for pattern in patterns)

    def tools(self) -> list[str]:
        return list(dict.fromkeys(step.tool for step in self.steps if step.tool))

    def template_texts(self) -> Iterator[str]:
        """Every text the runner renders: the replies, and the strings among tool arguments and memory notes."""
        for texts in self.replies.values():
            yield from texts.values()
        for step in self.steps:
            yield from (value for value in step.arguments.values() if isinstance(value, str))
            for part in (step.handoff, step.remember):
                if part:
                    yield from (value for key, value in part.items() if key not in ("reply", "kind", "category"))
