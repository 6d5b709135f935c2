"""What a read-only lookup tool tells the turn's prefetch (``app.turns.preparation``), so the core needs no shop.

A tool that looks up one identifier a customer may write in a message (an order number) declares it with
``Tool.reference_patterns``: each ``ReferencePattern`` finds the identifiers in the text and names the argument they
fill. An order tool may also answer ``Tool.single_recent_order``: the number of the customer's only recent order,
which is what "where is my order?" means. Before the model is called, the turn finds the references in the
customer's latest message (``named_references``), runs those lookups through the registry like any tool call, and
keeps only the ones that succeeded: the tool, scoped to the customer, is the one that knows whose order a number is.

The demo shop's ``get_order`` declares its ``#W1234567`` numbers in code; a config-file HTTP tool declares a
``reference_pattern`` (``app.tools.http_tools``). The registry refuses the declaration on a write tool.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True)
class ReferencePattern:
    """Identifiers of one kind in a customer's message, for the tool argument ``argument``.

    A match's first non-empty group (the whole match when the pattern has no groups) is the identifier as written;
    ``template`` turns it into the tool's form, e.g. ``"#W{}"`` for the digits of a demo order number.
    """

    pattern: re.Pattern[str]
    argument: str
    template: str = "{}"

    def find(self, text: str) -> list[str]:
        """The identifiers in ``text``, in their order of appearance, without repeats."""
        found = []
        for match in self.pattern.finditer(text):
            written = next((group for group in match.groups() if group), match.group(0))
            if written:
                found.append(self.template.format(written))
        return list(dict.fromkeys(found))


@dataclass(frozen=True)
class Lookup:
    """A tool call the turn makes on its own, before the model: the tool's name and its arguments."""

    tool: str
    arguments: dict[str, Any]


class DeclaresReferences(Protocol):
    """What ``named_references`` reads of a tool (``app.tools.registry.Tool`` is one)."""

    @property
    def name(self) -> str: ...

    @property
    def reference_patterns(self) -> Sequence[ReferencePattern]: ...


def named_references(tools: Iterable[DeclaresReferences], text: str) -> list[Lookup]:
    """The lookups of every identifier named in ``text``, tool by tool in registration order, without repeats."""
    lookups: list[Lookup] = []
    for tool in tools:
        for reference in tool.reference_patterns:
            for identifier in reference.find(text):
                lookup = Lookup(tool.name, {reference.argument: identifier})
                if lookup not in lookups:
                    lookups.append(lookup)
    return lookups
