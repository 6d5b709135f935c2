"""When two preferences are about the same topic, measured: `python -m benchmarks.preference_topics --json`.

A labelled set of preference pairs (``PAIRS``: same topic, or not) is embedded with memdesk's local MiniLM embedder,
and two rules are scored at each candidate threshold, with precision, recall and F1 for "same topic":

- ``topics``: each preference gets the topic of ``memory.subjects.PREFERENCE_TOPICS`` with the phrase it is most
  similar to, if that similarity reaches the threshold; a pair is the same topic when both get the same one;
- ``pairs``: a pair is the same topic when the two preferences' own similarity reaches the threshold.

The report names the best threshold (highest F1, the higher threshold on a tie) of each rule; the one to choose for
``memory.subjects.TOPIC_MIN_SIMILARITY`` is the best of the ``topics`` thresholds that merge no different-topic pair
(a wrong merge hides a preference the customer still holds, a missed one leaves two active), shown next to the
constant's value. It also scores the rule memdesk applies (``memory.conclusions.same_decision``: the topics decide
when either preference has one, else their similarity must reach ``SAME_MEANING_MIN_SIMILARITY``), with the pairs it
gets wrong and the different-topic pairs it merges, and the similarity rule alone (``SAME_MEANING_MIN_SIMILARITY``
on every pair) the same way.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Sequence
from typing import Any

from benchmarks.harness.report import print_report

# One thread, as everywhere memdesk embeds locally; set before onnxruntime loads.
os.environ.setdefault("OMP_NUM_THREADS", "1")

TOPIC_THRESHOLDS = tuple(round(0.20 + 0.05 * step, 2) for step in range(11))
PAIR_THRESHOLDS = tuple(round(0.30 + 0.05 * step, 2) for step in range(11))
SAME, DIFFERENT = True, False

# (first, second, whether they are about the same topic): restatements, contradictions, negations, a little French,
# German and Spanish, and near-misses that share words but not the topic.
PAIRS: tuple[tuple[str, str, bool], ...] = (
    # contact channel
    ("Prefers text messages (SMS) to email for updates", "Email only, never phone", SAME),
    ("Please text me rather than call", "Customer wants phone calls, not texts", SAME),
    ("Contact me by email", "Never phone me, I don't answer unknown numbers", SAME),
    ("Prefers WhatsApp messages for order updates", "Wants updates by email", SAME),
    ("Préfère être contacté par e-mail", "Prefers SMS over email", SAME),
    ("Bitte nur per E-Mail kontaktieren", "Call me on my mobile instead of emailing", SAME),
    ("Customer prefers SMS over email for delivery updates", "Wants delivery updates by text instead of email", SAME),
    ("No calls please", "Do not phone", SAME),
    ("Never phone, email only", "Phone calls are fine", SAME),
    ("Don't text me", "Prefers SMS", SAME),
    # language
    ("Prefers to be addressed in Spanish", "Wants all replies in English", SAME),
    ("Parle français, préfère les réponses en français", "Customer prefers German", SAME),
    ("Please write to me in German", "Prefers English over Spanish", SAME),
    # delivery days and times
    ("Prefers weekday deliveries (works from home on weekdays)", "Deliver on Saturdays only", SAME),
    ("Deliveries after 6 pm please", "Wants parcels delivered in the morning", SAME),
    ("Entrega preferiblemente por la mañana", "Prefers evening deliveries", SAME),
    # where to leave parcels
    ("If out, parcels may be left with the neighbour at number 12", "Never leave parcels with neighbours", SAME),
    ("Leave packages at the back door", "Prefers pickup at the parcel locker", SAME),
    ("Bitte Pakete beim Nachbarn abgeben", "Leave parcels at the front door", SAME),
    # invoices
    ("Email me the invoices", "Send paper invoices by post", SAME),
    ("Never put the invoice in the box", "Include a printed receipt in the parcel", SAME),
    ("Invoices should show the company VAT number", "Invoices in the name of the company", SAME),
    # payment and refunds
    ("Prefers refunds as store credit", "Refunds to the original card only", SAME),
    ("Pays by PayPal", "Prefers to pay by bank transfer", SAME),
    # times to contact
    ("Only call after 6 pm", "Mornings are the best time to reach them", SAME),
    ("Never contact on Sundays", "Prefers to be called during the lunch break", SAME),
    # marketing and privacy
    ("No marketing emails", "Happy to receive the newsletter", SAME),
    ("Ne veut pas recevoir de publicité", "Unsubscribe from promotional texts", SAME),
    # shipping and packaging
    ("Prefers express shipping", "Standard shipping is fine, no rush", SAME),
    ("Plastic-free packaging please", "Minimal packaging, no plastic fillers", SAME),
    # near-misses and unrelated pairs
    ("Email me the invoices", "Contact me by email", DIFFERENT),
    ("Prefers text messages (SMS) to email", "Never put the invoice in the box", DIFFERENT),
    ("Only call after 6 pm", "Prefers phone calls to emails", DIFFERENT),
    ("Deliveries after 6 pm please", "Only call after 6 pm", DIFFERENT),
    ("Prefers weekday deliveries", "If out, leave parcels with the neighbour", DIFFERENT),
    ("Prefers to be addressed in Spanish", "Ships to Spain, prefers express shipping", DIFFERENT),
    ("No marketing emails", "Email only, never phone", DIFFERENT),
    ("Prefers refunds as store credit", "Email me the invoices", DIFFERENT),
    ("Préfère être contacté par e-mail", "Préfère les livraisons le samedi", DIFFERENT),
    ("Bitte nur per E-Mail kontaktieren", "Rechnungen bitte per E-Mail", DIFFERENT),
    ("Prefers express shipping", "Prefers weekday deliveries", DIFFERENT),
    ("Customer is vegetarian and dislikes leather products", "Prefers SMS over email", DIFFERENT),
    ("Never leave parcels at the door", "Never phone me", DIFFERENT),
    ("Wants all replies in English", "Email only", DIFFERENT),
    ("Plastic-free packaging please", "Never put the invoice in the box", DIFFERENT),
    ("Pays by PayPal", "Happy to receive the newsletter", DIFFERENT),
    ("Prefiere que le llamen por teléfono", "Prefiere recibir las facturas por correo", DIFFERENT),
    ("Text me when the parcel is out for delivery", "Leave the parcel with the neighbour", DIFFERENT),
    ("Unsubscribe from newsletters", "Send receipts by email", DIFFERENT),
    ("Call me in the mornings", "Deliver in the mornings", DIFFERENT),
    ("Do not share my data with third parties", "Prefers PayPal", DIFFERENT),
    ("Prefers German-speaking agents", "Delivery to the office on weekdays", DIFFERENT),
    ("Gift orders: no prices on the packing slip", "Prefers email over phone", DIFFERENT),
    ("Likes the blue colour variants", "Prefers weekday deliveries", DIFFERENT),
)

Vector = Sequence[float]
Rule = Callable[[str, str], bool]


def scores(rule: Rule) -> dict[str, Any]:
    """Precision, recall and F1 of ``rule`` for "same topic" over ``PAIRS``, with the pairs it gets wrong."""
    wrong = [(first, second, same) for first, second, same in PAIRS if rule(first, second) != same]
    true_positive = sum(same and rule(first, second) for first, second, same in PAIRS)
    predicted = sum(rule(first, second) for first, second, _ in PAIRS)
    actual = sum(same for _, _, same in PAIRS)
    precision = true_positive / predicted if predicted else 0.0
    recall = true_positive / actual if actual else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {
        "precision": round(precision, 3),
        "recall": round(recall, 3),
        "f1": round(f1, 3),
        "wrong": [f"{'same' if same else 'different'}: {first!r} / {second!r}" for first, second, same in wrong],
    }


def merged(rule: Rule) -> int:
    return sum(not same and rule(first, second) for first, second, same in PAIRS)


def measure() -> dict[str, Any]:
    from memory.conclusions import SAME_MEANING_MIN_SIMILARITY
    from memory.embedders import local_embedder
    from memory.subjects import TOPIC_MIN_SIMILARITY, TopicIndex, cosine

    embedder = local_embedder()
    texts = sorted({text for first, second, _ in PAIRS for text in (first, second)})
    vectors = dict(zip(texts, embedder.embed_batch(texts), strict=True))
    index = TopicIndex(embedder.embed)

    def topic(text: str, threshold: float) -> str | None:
        topic_scores = index.scores(vectors[text])
        best = max(topic_scores, key=topic_scores.__getitem__)
        return best if topic_scores[best] >= threshold else None

    def by_topic(threshold: float) -> Rule:
        def rule(first: str, second: str) -> bool:
            mine = topic(first, threshold)
            return mine is not None and mine == topic(second, threshold)

        return rule

    def by_similarity(threshold: float) -> Rule:
        return lambda first, second: cosine(vectors[first], vectors[second]) >= threshold

    def applied(first: str, second: str) -> bool:
        mine, theirs = topic(first, TOPIC_MIN_SIMILARITY), topic(second, TOPIC_MIN_SIMILARITY)
        if mine is not None or theirs is not None:
            return mine == theirs
        return cosine(vectors[first], vectors[second]) >= SAME_MEANING_MIN_SIMILARITY

    topics = {str(threshold): scores(by_topic(threshold)) for threshold in TOPIC_THRESHOLDS}
    pairs = {str(threshold): scores(by_similarity(threshold)) for threshold in PAIR_THRESHOLDS}
    similarity_rule = scores(by_similarity(SAME_MEANING_MIN_SIMILARITY))
    return {
        "pairs": {"same_topic": sum(same for *_, same in PAIRS), "different_topic": sum(not s for *_, s in PAIRS)},
        "embedder": "local MiniLM (memory.embedders.local_embedder)",
        "topics": _without_wrong(topics),
        "pairs_by_similarity": _without_wrong(pairs),
        "best_topics_threshold": _best(topics),
        "best_pairs_threshold": _best(pairs),
        "chosen": {
            "rule": "topics",
            "measured_threshold": _best({t: row for t, row in topics.items() if row["precision"] == 1.0}),
            "memory.subjects.TOPIC_MIN_SIMILARITY": TOPIC_MIN_SIMILARITY,
        },
        "applied_rule": {"different_topic_pairs_merged": merged(applied), **scores(applied)},
        "same_meaning_rule_alone": {
            "threshold": SAME_MEANING_MIN_SIMILARITY,
            "different_topic_pairs_merged": merged(by_similarity(SAME_MEANING_MIN_SIMILARITY)),
            **similarity_rule,
        },
        "topic_of_each_preference": {text: topic(text, TOPIC_MIN_SIMILARITY) for text in texts},
    }


def _best(by_threshold: dict[str, dict[str, Any]]) -> str:
    return max(by_threshold, key=lambda threshold: (by_threshold[threshold]["f1"], float(threshold)))


def _without_wrong(by_threshold: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {threshold: {k: v for k, v in row.items() if k != "wrong"} for threshold, row in by_threshold.items()}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--json", action="store_true", help="print the report on one line")
    args = parser.parse_args(argv)
    print_report(measure(), one_line=args.json)


if __name__ == "__main__":
    main()
