"""Explicit requests for a person are recognised without the model; person words about someone else are not."""

from __future__ import annotations

import pytest

from app.turns.handoff_request import asks_for_person


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("human", "en"),
        ("Agent please", "en"),
        ("a real person!", "en"),
        ("I'd like to talk to a human please", "en"),
        ("Can I speak to someone?", "en"),
        ("talk to someone", "en"),
        ("please connect me with a live agent", "en"),
        ("I want a real person, not a bot", "en"),
        ("Let me talk to a person", "en"),
        ("Mensch bitte", "de"),
        ("Ich möchte bitte mit einer Person sprechen.", "de"),
        ("I'd like to talk to a person, please.", "en"),
        ("Ich möchte mit einem Mitarbeiter sprechen", "de"),
        ("Kann ich mit jemandem reden?", "de"),
        ("Ich will einen echten Menschen", "de"),
        ("人工", "zh"),
        ("转人工", "zh"),
        ("我要人工客服", "zh"),
    ],
)
def test_explicit_request_for_a_person_is_recognised(text: str, language: str) -> None:
    assert asks_for_person(text) == language


@pytest.mark.parametrize(
    "text",
    [
        "Where is my order #W2378156?",
        "My agent said the parcel was delayed",
        "The shipping agent told me it would arrive on Monday",
        "Is this a human error on your side?",
        "Can I pick it up in person?",
        "I don't need a human, just tell me the tracking number",
        "no need to transfer me, thanks",
        "Does the blender work with 人工智能 recipes?",
        "Ich brauche keinen Mitarbeiter, nur die Sendungsnummer",
        "What is your refund policy?",
        "",
    ],
)
def test_person_words_that_are_not_a_request_go_to_the_model(text: str) -> None:
    assert asks_for_person(text) is None
