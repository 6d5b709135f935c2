"""Facts a reply states that nothing gave it: order numbers, tracking numbers, amounts and dates.

``invented_facts(reply, sources)`` lists each such fact of ``reply`` that appears in none of ``sources`` (the day's
tool results, the customer's own lines, the knowledge the turn cited, the customer's memories). A fact counts as
given when its normal form is found in the normal form of the sources:

- an order number (``#W1234567``) or tracking number (ten or more capitals and digits, at least four digits): the
  characters themselves, without ``#``;
- an amount (``€42.10``, ``42,10 EUR``, ``$5``): its value with two decimals, found as ``42.10`` or as cents
  (``4210``, how the shop's records keep money);
- a date: ISO (``2026-12-05``) or written out (``December 5``, ``5 December``, ``5. Dezember``), found as its
  month and day in an ISO date of the sources (``-12-05``), or written out the same way.

These patterns are English- and German-leaning on purpose: they are what the demo shop's tools and help center
produce. A fact in another form is not seen, so the check errs toward passing, never toward a false alarm.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_ORDER = re.compile(r"#?\b(W\d{7})\b")
_TRACKING = re.compile(r"\b(?=[A-Z0-9]*\d[A-Z0-9]*\d[A-Z0-9]*\d[A-Z0-9]*\d)(?=[A-Z0-9]*[A-Z])[A-Z0-9]{10,30}\b")
_AMOUNT = re.compile(
    r"(?:[$€£]\s?(\d{1,7}(?:[.,]\d{2})?)\b)|(?:\b(\d{1,7}(?:[.,]\d{2})?)\s?(?:€|EUR|USD|GBP|euros?|dollars?)\b)",
    re.IGNORECASE,
)
_ISO_DATE = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_MONTHS = {
    name: number
    for number, names in enumerate(
        (
            ("january", "januar"),
            ("february", "februar"),
            ("march", "märz"),
            ("april",),
            ("may", "mai"),
            ("june", "juni"),
            ("july", "juli"),
            ("august",),
            ("september",),
            ("october", "oktober"),
            ("november",),
            ("december", "dezember"),
        ),
        start=1,
    )
    for name in names
}
_MONTH = "|".join(sorted(_MONTHS, key=len, reverse=True))
_WRITTEN_DATE = re.compile(
    rf"\b(?:({_MONTH})\s+(\d{{1,2}})(?:st|nd|rd|th)?|(\d{{1,2}})(?:st|nd|rd|th|\.)?\s+({_MONTH}))\b", re.IGNORECASE
)


def _amount(raw: str) -> str:
    value = raw.replace(",", ".")
    return value if "." in value else f"{value}.00"


def stated_facts(reply: str) -> list[tuple[str, str]]:
    """Each fact of ``reply`` as (what the reply says, the form looked for in the sources)."""
    facts: list[tuple[str, str]] = []
    facts += [(match.group(0), match.group(1)) for match in _ORDER.finditer(reply)]
    facts += [
        (match.group(0), match.group(0)) for match in _TRACKING.finditer(reply) if not _ORDER.fullmatch(match.group(0))
    ]
    for match in _AMOUNT.finditer(reply):
        facts.append((match.group(0).strip(), "amount:" + _amount(match.group(1) or match.group(2))))
    facts += [(match.group(0), f"-{match.group(2)}-{match.group(3)}") for match in _ISO_DATE.finditer(reply)]
    for match in _WRITTEN_DATE.finditer(reply):
        month = _MONTHS[(match.group(1) or match.group(4)).lower()]
        day = int(match.group(2) or match.group(3))
        if 1 <= day <= 31:
            facts.append((match.group(0), f"-{month:02d}-{day:02d}"))
    return facts


def _normal_sources(sources: Iterable[str]) -> str:
    """The sources with every amount and written date also given in the forms facts are looked for in."""
    text = "\n".join(sources)
    extra = ["amount:" + _amount(m.group(1) or m.group(2)) for m in _AMOUNT.finditer(text)]
    extra += [f"amount:{m.group(1)}" for m in re.finditer(r"\b(\d{1,7}\.\d{2})\b", text)]
    extra += [
        f"amount:{int(m.group(1)) // 100}.{int(m.group(1)) % 100:02d}" for m in re.finditer(r"_cents\W+(\d{1,9})", text)
    ]
    for match in _WRITTEN_DATE.finditer(text):
        month = _MONTHS[(match.group(1) or match.group(4)).lower()]
        extra.append(f"-{month:02d}-{int(match.group(2) or match.group(3)):02d}")
    return text + "\n" + "\n".join(extra)


def invented_facts(reply: str, sources: Iterable[str]) -> list[str]:
    """The facts ``reply`` states that none of ``sources`` gave, as the reply writes them."""
    given = _normal_sources(sources)
    return [said for said, form in stated_facts(reply) if form not in given]
