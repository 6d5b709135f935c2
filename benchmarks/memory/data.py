"""The memories the memory benchmarks store and the questions they recall with: support conclusions (promises with
order numbers, amounts and due dates, decisions, preferences, facts) drawn from a seeded RNG, so every run and every
process stores the same texts (dates are relative to the day of the run, so promises never expire mid-benchmark);
and the bulk load straight into Mem0's vector store with Mem0's own payload layout."""

from __future__ import annotations

import hashlib
import random
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any

from memory.conclusions import Conclusion, ConclusionKind, ConclusionSource
from memory.store import CustomerMemory

SEED = "memdesk-memory-benchmark-v1"
LOAD_BATCH = 1_000


@dataclass(frozen=True)
class BenchmarkSettings:
    customers: int = 1_000
    recall_queries: int = 200
    recall_warmup: int = 10
    remember_count: int = 300
    phase_budget_s: float = 45.0  # per measuring phase (recall, remember) and store and size
    sanity_customers: int = 10
    seed: str = SEED
    today: str = field(default_factory=lambda: date.today().isoformat())


# -- the conclusions ------------------------------------------------------------------------------------------------
TEMPLATES: dict[ConclusionKind, tuple[str, ...]] = {
    ConclusionKind.PROMISE: (
        "Refund of {amount} for order {order} to the original card by {due}",
        "Replacement {item} for order {order} ships by {due}",
        "A supervisor calls back about order {order} on {due}",
        "Store credit of {amount} added to the account by {due} for the late order {order}",
        "Prepaid return label for the {item} from order {order} emailed by {due}",
    ),
    ConclusionKind.DECISION: (
        "Approved the return of the {item} from order {order} without a restocking fee",
        "Cancelled order {order} at the customer's request on {day}",
        "Waived the {amount} shipping charge on order {order}",
        "Delivery address for order {order} changed to the customer's office in {city}",
        "Customer accepted a partial refund of {amount} on order {order} instead of a replacement {item}",
    ),
    ConclusionKind.PREFERENCE: (
        "Prefers {channel} over {other_channel} for delivery updates",
        "Wants deliveries after {hour} pm on weekdays and never left at the back door",
        "Prefers refunds to the original card rather than store credit (said on {day})",
        "Writes in {language} and prefers replies in {language}",
        "No marketing by {channel}; order updates only, since {day}",
    ),
    ConclusionKind.FACT: (
        "Bought a {item} on {day} (order {order}), under warranty until {warranty}",
        "Business account in {city}; invoices need VAT number {vat}",
        "{courier} deliveries to {city} failed twice; ship order {order} with another courier",
        "Allergic to latex: no latex gloves as a free gift with order {order}",
        "Has a {amount} gift card balance left from order {order}",
    ),
}
QUERY_TEMPLATES: dict[ConclusionKind, tuple[str, ...]] = {
    ConclusionKind.PROMISE: (
        "Any news on order {order}? I was told it would be sorted by {due}.",
        "When will I get the {amount} back for order {order}?",
        "Nobody has contacted me about order {order} yet, what is going on?",
    ),
    ConclusionKind.DECISION: (
        "What did you decide about order {order}?",
        "Can you confirm the change you made to order {order}?",
        "Do I still have to pay anything for order {order}?",
    ),
    ConclusionKind.PREFERENCE: (
        "How are you going to keep me updated about my delivery?",
        "When can the courier come? I'm at work during the day.",
        "I'd like my money back, how will you refund me?",
    ),
    ConclusionKind.FACT: (
        "Is my {item} still under warranty?",
        "Please send me the invoice for order {order} for my company.",
        "Which courier will bring my next order to {city}?",
    ),
}
KIND_WEIGHTS = {
    ConclusionKind.PROMISE: 35,
    ConclusionKind.DECISION: 25,
    ConclusionKind.PREFERENCE: 20,
    ConclusionKind.FACT: 20,
}
IDENTIFIER_SLOTS = ("order", "amount")
ITEMS = ("blender", "pair of running shoes", "laptop stand", "winter jacket", "coffee grinder", "desk lamp",
         "air fryer", "yoga mat", "pair of headphones", "kettle", "stand mixer", "rain jacket")  # fmt: skip
CHANNELS = ("SMS", "email", "phone calls", "WhatsApp")
CITIES = ("Lyon", "Leeds", "Porto", "Graz", "Utrecht", "Malmo", "Bilbao", "Turin", "Cork", "Gdansk")
COURIERS = ("DHL", "UPS", "DPD", "FedEx", "GLS")
LANGUAGES = ("Spanish", "German", "French", "Portuguese", "Italian", "Dutch")
VAT_PREFIXES = ("FR", "DE", "NL", "ES", "IT", "IE")
PROMISE_DUE_DAYS = (1, 60)
PAST_DAYS = (1, 400)
WARRANTY_DAYS = 730


@dataclass(frozen=True)
class Draw:
    """One generated conclusion and the slot values it was written from (questions about it reuse them)."""

    conclusion: Conclusion
    slots: dict[str, str]


def customer_id(number: int) -> str:
    return f"cust-{number:05d}"


def draw(namespace: str, index: int, customer: int, *, today: date) -> Draw:
    """Conclusion number ``index`` of ``namespace``: the same for the same arguments in every process."""
    rng = random.Random(f"{namespace}:{index}")
    kind = rng.choices(list(KIND_WEIGHTS), weights=list(KIND_WEIGHTS.values()))[0]
    template = rng.choice(TEMPLATES[kind])
    due = today + timedelta(days=rng.randint(*PROMISE_DUE_DAYS))
    day = today - timedelta(days=rng.randint(*PAST_DAYS))
    channel, other_channel = rng.sample(CHANNELS, 2)
    slots = {
        "order": f"#W{rng.randrange(10**6, 10**7)}",
        "amount": f"${rng.randint(5, 900)}.{rng.randrange(100):02d}",
        "item": rng.choice(ITEMS),
        "due": due.isoformat(),
        "day": day.isoformat(),
        "warranty": (day + timedelta(days=WARRANTY_DAYS)).isoformat(),
        "channel": channel,
        "other_channel": other_channel,
        "hour": str(rng.randint(5, 8)),
        "language": rng.choice(LANGUAGES),
        "city": rng.choice(CITIES),
        "courier": rng.choice(COURIERS),
        "vat": f"{rng.choice(VAT_PREFIXES)}{rng.randrange(10**8, 10**9)}",
    }
    first_message = rng.randrange(1, 10**6)
    conclusion = Conclusion(
        customer_id=customer_id(customer),
        kind=kind,
        text=template.format(**slots),
        source=rng.choice(list(ConclusionSource)),
        due_date=due if kind is ConclusionKind.PROMISE else None,
        identifiers=tuple(slots[name] for name in IDENTIFIER_SLOTS if f"{{{name}}}" in template),
        conversation_id=rng.randrange(1, 10**6),
        message_range=(first_message, first_message + rng.randint(2, 40)),
    )
    return Draw(conclusion, slots)


def bulk_draw(index: int, settings: BenchmarkSettings) -> Draw:
    """Bulk memory ``index``: memories go round the customers, so every customer has size / customers of them."""
    return draw(f"{settings.seed}:bulk", index, index % settings.customers, today=date.fromisoformat(settings.today))


def customer_bulk_indices(customer: int, loaded: int, settings: BenchmarkSettings) -> range:
    return range(customer, loaded, settings.customers)


def recall_pairs(count: int, loaded: int, settings: BenchmarkSettings) -> list[tuple[str, str]]:
    """(customer, question) pairs: a random customer asking about one of their own loaded memories."""
    rng = random.Random(f"{settings.seed}:queries:{loaded}")
    pairs = []
    for _ in range(count):
        customer = rng.randrange(min(settings.customers, loaded))
        drawn = bulk_draw(rng.choice(customer_bulk_indices(customer, loaded, settings)), settings)
        question = rng.choice(QUERY_TEMPLATES[drawn.conclusion.kind]).format(**drawn.slots)
        pairs.append((drawn.conclusion.customer_id, question))
    return pairs


def fresh_conclusions(count: int, namespace: str, settings: BenchmarkSettings) -> list[Conclusion]:
    """New conclusions for random customers, none of them among the bulk (their own seed namespace)."""
    rng = random.Random(f"{settings.seed}:{namespace}:customers")
    today = date.fromisoformat(settings.today)
    return [
        draw(f"{settings.seed}:{namespace}", index, rng.randrange(settings.customers), today=today).conclusion
        for index in range(count)
    ]


# -- loading straight into Mem0's vector store ----------------------------------------------------------------------
def mem0_payload(conclusion: Conclusion, *, created_at: str) -> dict[str, Any]:
    """The payload Mem0 2.2 stores for ``CustomerMemory.remember(conclusion)``: ``add(infer=False)`` builds the
    metadata with ``user_id`` (``_build_filters_and_metadata``), adds ``expiration_date`` and the message role, then
    ``_create_memory`` adds data, hash, created_at, updated_at and text_lemmatized."""
    from mem0.utils.lemmatization import lemmatize_for_bm25

    payload = conclusion.metadata()
    payload["user_id"] = conclusion.customer_id
    expiration = conclusion.expiration_date
    if expiration is not None:
        payload["expiration_date"] = expiration.isoformat()
    payload["role"] = "user"
    payload["data"] = conclusion.text
    payload["hash"] = hashlib.md5(conclusion.text.encode(), usedforsecurity=False).hexdigest()
    payload["created_at"] = created_at
    payload["updated_at"] = created_at
    payload["text_lemmatized"] = lemmatize_for_bm25(conclusion.text)
    return payload


def bulk_memory_id(index: int, settings: BenchmarkSettings) -> str:
    digest = hashlib.sha256(f"{settings.seed}:id:{index}".encode()).digest()[:16]
    return str(uuid.UUID(bytes=digest, version=4))


def bulk_load(store: CustomerMemory, indices: range, settings: BenchmarkSettings) -> float:
    """Write bulk memories ``indices`` through Mem0's vector store in batches; returns the seconds it took."""
    vector_store = store._mem0.vector_store  # the benchmark loads beneath the facade on purpose (module docstring)
    embedder = store._mem0.embedding_model
    started = time.perf_counter()
    for first in range(indices.start, indices.stop, LOAD_BATCH):
        batch = range(first, min(first + LOAD_BATCH, indices.stop))
        conclusions = [bulk_draw(index, settings).conclusion for index in batch]
        created_at = datetime.now(UTC).isoformat()
        vector_store.insert(
            vectors=[embedder.embed(conclusion.text, "add") for conclusion in conclusions],
            payloads=[mem0_payload(conclusion, created_at=created_at) for conclusion in conclusions],
            ids=[bulk_memory_id(index, settings) for index in batch],
        )
    return time.perf_counter() - started
