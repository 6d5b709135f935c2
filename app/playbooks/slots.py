"""Filling a playbook's slots from what the customer wrote, the conversation's focus, or their one recent order.

- ``order``: an order number the shop's lookup tools recognise in the message (their ``reference_patterns``), else
  the conversation's focus, else the verified customer's one recent order. Which order a number is, and whether it
  is this customer's, is the tools' business: the slot only carries the number.
- ``tracking``: a tracking number written in the message.
- ``address``: a shipping address written on one line, "12 Elm Street, Springfield, IL 62704" or
  "Hauptstraße 5, 10115 Berlin, DE"; anything else is not an address and the customer is asked again.
- ``text``: the customer's message itself (a reason, in their words).
"""

from __future__ import annotations

import re
from typing import Any

from app.tools.references import DeclaresReferences

_TRACKING = re.compile(r"\b(1Z[0-9A-Z]{8,24}|[A-Z]{2}\d{9}[A-Z]{2}|\d{12,22})\b", re.IGNORECASE)
_US_ADDRESS = re.compile(
    r"^(?P<line1>[^,\n]{3,200}),\s*(?:(?P<line2>(?:apt|apartment|suite|unit|#)[^,\n]{0,50}),\s*)?"
    r"(?P<city>[^,\n\d]{1,100}),\s*(?P<region>[A-Za-z]{2})\s+(?P<postal_code>\d{5}(?:-\d{4})?)"
    r"(?:,\s*(?P<country>[A-Za-z]{2}))?\s*[.!]?$",
    re.IGNORECASE,
)
_POSTCODE_FIRST = re.compile(
    r"^(?P<line1>[^,\n]{3,200}),\s*(?P<postal_code>[A-Za-z0-9]{3,8})\s+(?P<city>[^,\n\d]{1,100})"
    r"(?:,\s*(?P<country>[A-Za-z]{2}))?\s*[.!]?$"
)
_ADDRESS_INTRO = re.compile(
    r"^(?:(?:the\s+)?new\s+address\s+is|it'?s|please\s+use|send\s+it\s+to|ship\s+(?:it\s+)?to|"
    r"neue\s+adresse(?:\s+ist)?|an|新地址(?:是)?)[:：]?\s*",
    re.IGNORECASE,
)


def order_in(text: str, tools: list[DeclaresReferences]) -> str | None:
    """The first order number the lookup tools recognise in ``text``."""
    for tool in tools:
        for reference in tool.reference_patterns:
            if reference.argument == "order_number":
                found = reference.find(text)
                if found:
                    return found[0]
    return None


def tracking_in(text: str) -> str | None:
    match = _TRACKING.search(text)
    return match.group(1).upper() if match else None


def address_in(text: str) -> dict[str, Any] | None:
    """The address written in ``text`` as the shop's fields, or None when it is not one address on one line."""
    line = _ADDRESS_INTRO.sub("", " ".join(text.split())).strip()
    for pattern in (_US_ADDRESS, _POSTCODE_FIRST):
        match = pattern.match(line)
        if match:
            fields = {key: value.strip() for key, value in match.groupdict().items() if value}
            fields["country"] = fields.get("country", "US" if pattern is _US_ADDRESS else "DE").upper()
            return fields
    return None
