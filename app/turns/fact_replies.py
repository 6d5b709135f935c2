"""Replies written from looked-up facts, for a chat model too small to copy them (the embedded demo model).

SmolLM2-135M, given an order's JSON, answers with made-up timestamps as tracking numbers. When the chat model is the
embedded one and the turn's prefetched lookups (``app.turns.preparation``) all succeeded, the reply is composed here
from the tool results instead: the order's status and every shipment's carrier, tracking number, status and date, or the
confident knowledge chunk's opening, cited by its ref. Real models phrase the same tool results themselves.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from app.playbooks.language import detect_language

HELP_EXCERPT_SENTENCES = 3
SHIPMENT_STATES = {
    "label_created": "label created, not picked up yet",
    "in_transit": "in transit",
    "out_for_delivery": "out for delivery today",
    "delivered": "delivered",
    "exception": "held up by the carrier",
}
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def _shipment_line(shipment: Mapping[str, Any]) -> str:
    state = SHIPMENT_STATES.get(str(shipment.get("status")), str(shipment.get("status")))
    eta = shipment.get("eta")
    when = ""
    if eta:
        when = f", delivered on {eta}" if shipment.get("status") == "delivered" else f", expected {eta}"
    return f"- {shipment.get('carrier')} tracking number **{shipment.get('tracking_number')}** ({state}{when})"


def order_reply(order: Mapping[str, Any]) -> str:
    """What ``get_order``'s payload says about the order's progress, in a few lines of Markdown."""
    lines = [f"Your order {order.get('order_number')} is **{order.get('status')}**."]
    shipments = [s for s in order.get("shipments") or () if isinstance(s, Mapping)]
    if shipments:
        lines += [_shipment_line(shipment) for shipment in shipments]
    elif order.get("status") in ("pending", "processing"):
        lines.append("It has not shipped yet, so there is no tracking number yet.")
    refundable = order.get("refundable_amount")
    if refundable:
        lines.append(f"Amount that can still be refunded: {refundable}.")
    return "\n".join(lines)


def help_reply(search: Mapping[str, Any]) -> str | None:
    """The best knowledge chunk's first sentences, cited by its ref; None unless the search was confident.

    Every word of the policy comes from the chunk: the reply adds only where it is from and the citation."""
    results = [r for r in search.get("results") or () if isinstance(r, Mapping)]
    if not results or search.get("confident") is not True:
        return None
    best = results[0]
    sentences = _SENTENCE_END.split(" ".join(str(best.get("text", "")).split()))
    excerpt = " ".join(sentences[:HELP_EXCERPT_SENTENCES])
    heading = str(best.get("heading_path") or best.get("title") or "")
    return f"From our help centre, **{heading}**: {excerpt} [{best.get('ref')}]"


def reply_from_lookups(lookups: Sequence[tuple[str, Mapping[str, Any]]]) -> str | None:
    """A reply from (tool name, payload) pairs of ``get_order`` and ``search_knowledge``; None when any lookup
    failed or is of another tool (the model then answers)."""
    parts: list[str] = []
    for tool, payload in lookups:
        if "error" in payload:
            return None
        if tool == "get_order":
            parts.append(order_reply(payload))
        elif tool == "search_knowledge" and (text := help_reply(payload)) is not None:
            parts.append(text)
        else:
            return None
    return "\n\n".join(parts) or None


CAPABILITIES_REPLIES = {
    "en": "I can help with your orders here: where an order is, tracking and delivery dates, listing your orders, "
    "cancelling, returns and damaged items, refunds, changing a shipping address, and how we contact you. I can also "
    "answer questions from our help centre. For anything else, write \u201cperson\u201d and someone from our team "
    "will reply here.",
    "de": "Ich helfe Ihnen hier bei Ihren Bestellungen: wo eine Bestellung ist, Sendungsverfolgung und Liefertermine, "
    "Ihre Bestellungen auflisten, Stornierungen, Rücksendungen und beschädigte Artikel, Erstattungen, eine neue "
    "Lieferadresse und wie wir Sie kontaktieren. Ich beantworte auch Fragen aus unserem Hilfecenter. Für alles "
    "andere schreiben Sie \u201eMitarbeiter\u201c, dann antwortet Ihnen hier jemand aus unserem Team.",
    "zh": "我可以在这里帮您处理订单：查询订单状态、物流和送达日期、列出您的订单、取消订单、退货和商品损坏、退款、"
    "修改收货地址，以及我们联系您的方式。我也可以回答帮助中心里的问题。其他问题请输入\u201c人工\u201d，我们的团队会在这里回复您。",
}


def capabilities_reply(text: str) -> str:
    """What the desk can help with, in the language of ``text``: the embedded model's answer to anything no playbook,
    lookup or help article answers, instead of a guess."""
    return CAPABILITIES_REPLIES[detect_language(text) or "en"]
