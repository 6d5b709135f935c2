"""Promises about many orders of one customer: each stays its own, and a promise moved in words is a change.

    python -m benchmarks.promise_subjects --json

A scripted session from Monday 2026-11-02 09:00 UTC, one exchange every 90 minutes (nine days, so moves fall before
different Mondays), through the real ``ContextCompressor`` at a 16k window (so it compacts several times). The
customer has one phone number and one email, and every order's promise mentions both. Support promises a replacement
for a new order every third exchange ("by Wednesday", "tomorrow", "in 3 days", "by Friday"); a third of those are
later moved ("We moved the replacement for #W… to Monday."). The scripted summary model is careless: it drops old
bullets, rewords the ones it keeps, drops their tags and due fields now and then, writes every promise in the same
words, and writes a move as an untagged item ``{due: by monday | … | from: #N}``.

Measured: ``cross_subject_takeovers`` (deliveries where a promise about one order came under a key first used for
another; target 0), ``dropped_moves`` (moves not delivered as a change with the Monday after the turn that said it;
target 0), and the counts of promises, moves, deliveries, compactions and rejected items.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any

from benchmarks.harness.report import print_report
from benchmarks.harness.summarizer import promise_items, request_material
from compression import ContextCompressor
from compression.messages import ChatMessage
from compression.types import Completion, KeyDecision, Usage

START = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)
MINUTES_PER_EXCHANGE = 90
ORDERS = 30
PROMISE_EVERY = 3
MOVE_EVERY = 3
MOVE_AFTER = 45
TRAILING = 12
CONTEXT_LENGTH = 16_000
KEEP_BULLETS = 6
PHONE = "+1 555 010 7788"
EMAIL = "pat.lee@example.com"
PHRASES = ("by Wednesday", "tomorrow", "in 3 days", "by Friday")
FILLER = "We went through the delivery of the order together and checked each step with the carrier. " * 3
_BLOCK = re.compile(r"^\[#(?P<index>\d+) support[^\]]*\]\n(?P<text>.*?)(?=\n\n\[#|\Z)", re.M | re.S)
_PROMISE = re.compile(r"I promise to ship the replacement for (?P<order>#W\d+) (?P<phrase>" + "|".join(PHRASES) + ")")
_MOVE = re.compile(r"We moved the replacement for (?P<order>#W\d+) to Monday")
_ORDER = re.compile(r"#W\d{7}")


@dataclass
class Session:
    messages: list[ChatMessage] = field(default_factory=list)
    promised: list[str] = field(default_factory=list)
    moves: dict[str, date] = field(default_factory=dict)


def next_monday(said_on: date) -> date:
    """The Monday a person means by "Monday", computed here without memdesk's resolver."""
    return said_on + timedelta(days=(0 - said_on.weekday()) % 7 or 7)


def support_reply(exchange: int, session: Session, said_on: date) -> str:
    if exchange % PROMISE_EVERY == 0 and len(session.promised) < ORDERS:
        order = f"#W{5_000_000 + len(session.promised)}"
        phrase = PHRASES[len(session.promised) % len(PHRASES)]
        session.promised.append(order)
        return f"I promise to ship the replacement for {order} {phrase}; we will text {PHONE} or email {EMAIL}."
    made = exchange - MOVE_AFTER - 1  # one exchange after a promise's turn, so the two never fall together
    if 0 <= made < ORDERS * PROMISE_EVERY and made % PROMISE_EVERY == 0 and (made // PROMISE_EVERY) % MOVE_EVERY == 1:
        order = f"#W{5_000_000 + made // PROMISE_EVERY}"
        session.moves[order] = next_monday(said_on)
        return f"We moved the replacement for {order} to Monday; we will text {PHONE}."
    return f"Answer {exchange}: {FILLER}"


def build_session() -> Session:
    session = Session(messages=[{"role": "system", "content": "You are the support assistant of Acme Kitchen."}])
    for exchange in range(ORDERS * PROMISE_EVERY + MOVE_AFTER + TRAILING):
        at = START + timedelta(minutes=MINUTES_PER_EXCHANGE * exchange)
        question = f"Question {exchange} (phone {PHONE}, email {EMAIL}): {FILLER}"
        session.messages.append({"role": "user", "content": question, "created_at": at.isoformat()})
        reply = support_reply(exchange, session, at.date())
        session.messages.append({"role": "assistant", "content": reply, "created_at": at.isoformat()})
    return session


class CarelessSummarizer:
    """A ``SummaryLLM`` that keeps few old bullets, rewords and untags them, and words every promise alike."""

    def __init__(self) -> None:
        self.calls = 0

    def _carried(self, notes: str) -> list[str]:
        carried = promise_items(notes)
        if self.calls % 2 == 0:
            carried = carried[-KEEP_BULLETS:]
        if self.calls % 3 == 1:
            carried = ["As promised, " + re.sub(r"^\[P\d+\]\s*", "", line) for line in carried]
        if self.calls % 4 == 3:
            carried = [re.sub(r"due: [^|}]*\|\s*", "", line) for line in carried]
        return carried

    def complete(self, messages: list[ChatMessage], *, model: str, max_tokens: int) -> Completion:
        self.calls += 1
        prompt = str(messages[-1]["content"])
        notes, turns = request_material(prompt)
        promises = self._carried(notes)
        for block in _BLOCK.finditer(turns):
            text, source = block.group("text"), block.group("index")
            if found := _PROMISE.search(text):
                due = found.group("phrase")
            elif found := _MOVE.search(text):
                due = "by monday"
                promises = [line for line in promises if found.group("order") not in line]
            else:
                continue
            order = found.group("order")
            promises.append(
                f"Ship the replacement and text the customer at {PHONE} {{due: {due} | ids: {order}, "
                f"{PHONE}, {EMAIL} | from: #{source}}}"
            )
        body = "\n".join(f"- {line}" for line in promises) or "- None"
        text = f"## Customer Goal\n- Replacements.\n## Promises & Commitments\n{body}\n## Critical Context\n- None"
        return Completion(text=text, model=model, usage=Usage(len(prompt) // 4, len(text) // 4))


def run_session(session: Session) -> tuple[list[KeyDecision], int, int]:
    """Every promise delivered, the number of compactions, and the items the ledger rejected."""
    engine = ContextCompressor(model="main", context_length=CONTEXT_LENGTH, summary_llm=CarelessSummarizer())
    delivered: list[KeyDecision] = []
    rejected = 0
    context: list[ChatMessage] = []
    results = []
    for message in session.messages:
        context.append(message)
        if message["role"] == "user" and engine.should_compress_preflight(context):
            results.append(engine.compress(context))
            context = results[-1].messages
    results.append(engine.compress(context))  # what a final sync would deliver: everything but the last turns
    for result in results:
        delivered += [d for d in result.key_decisions if d.new and d.kind == "promise"]
        rejected += sum(event.get("decisions", {}).get("rejected", 0) for event in result.events)
    return delivered, engine.compression_count, rejected


def order_of(decision: KeyDecision) -> str | None:
    found = [value for value in decision.identifiers if _ORDER.fullmatch(value)]
    return found[0] if len(found) == 1 else None


def measure_promise_subjects() -> dict[str, Any]:
    session = build_session()
    delivered, compactions, rejected = run_session(session)
    owner: dict[str, str | None] = {}
    takeovers = 0
    for decision in delivered:
        order = order_of(decision)
        takeovers += owner.setdefault(decision.key, order) != order
    moved_right = {
        order
        for order, due in session.moves.items()
        if any(d.changed and order_of(d) == order and d.due_date == due for d in delivered)
    }
    return {
        "promises": len(session.promised),
        "moves": len(session.moves),
        "deliveries": len(delivered),
        "changes": sum(d.changed for d in delivered),
        "compactions": compactions,
        "rejected": rejected,
        "cross_subject_takeovers": takeovers,
        "dropped_moves": len(session.moves) - len(moved_right),
        "promises_delivered": len({order_of(d) for d in delivered if not d.changed} & set(session.promised)),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    print_report(measure_promise_subjects(), one_line=args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
