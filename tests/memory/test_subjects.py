"""What a memory is about: customer-level identifiers, values and object subjects, and measured preference topics."""

from __future__ import annotations

import pytest

from memory.subjects import (
    TOPIC_MIN_SIMILARITY,
    IdentifierClass,
    TopicIndex,
    classify,
    matching_identifiers,
    object_subjects,
)

CUSTOMER, VALUE, OBJECT = IdentifierClass.CUSTOMER, IdentifierClass.VALUE, IdentifierClass.OBJECT


@pytest.mark.parametrize(
    ("identifier", "expected"),
    [
        ("+1 415 555 0100", CUSTOMER),
        ("(415) 555-0100", CUSTOMER),
        ("jane@example.com", CUSTOMER),
        ("cus_8f2k1", CUSTOMER),
        ("customer 123", CUSTOMER),
        ("$42.10", VALUE),
        ("42.10 EUR", VALUE),
        ("€19,99", VALUE),
        ("#W2378156", OBJECT),
        ("#1234567", OBJECT),
        ("RMA-1234", OBJECT),
        ("1Z999AA10123456784", OBJECT),
        ("T-88412", OBJECT),
    ],
)
def test_identifiers_are_told_apart_as_customer_level_values_or_objects(
    identifier: str, expected: IdentifierClass
) -> None:
    assert classify(identifier) is expected


def test_only_orders_and_other_objects_are_subjects_and_the_customers_contacts_never_count() -> None:
    identifiers = ["#W2378156", "$42.10", "+1 415 555 0100", "jane@example.com"]
    assert object_subjects(identifiers) == {"#w2378156"}
    assert matching_identifiers(identifiers) == {"#w2378156", "$42.10"}


def test_the_topic_threshold_is_the_one_the_labelled_preferences_measure() -> None:
    pytest.importorskip("onnxruntime", reason="the local embedder's runtime is not installed")
    from benchmarks.preference_topics import measure

    report = measure()
    assert float(report["chosen"]["measured_threshold"]) == TOPIC_MIN_SIMILARITY
    assert report["applied_rule"]["different_topic_pairs_merged"] == 0


def test_a_preference_far_from_every_topic_has_none() -> None:
    pytest.importorskip("onnxruntime", reason="the local embedder's runtime is not installed")
    from memory.embedders import local_embedder

    embedder = local_embedder()
    index = TopicIndex(embedder.embed)
    assert index.topic_of(embedder.embed("Likes the blue colour variants")) is None
    assert index.topic_of(embedder.embed("Email only, never phone")) == "contact channel"
