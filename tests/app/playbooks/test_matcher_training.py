"""The intent matcher trains once per process for the same playbooks and embedder: a second desk (each test's, or a
reload of unchanged playbooks) reuses the model, and a change of examples, patterns or embedder trains a new one."""

from __future__ import annotations

import dataclasses

from app.playbooks.library import demo_playbooks, demo_unmatched
from app.playbooks.matching import IntentMatcher
from memory.embedders import EMBEDDING_DIMS, HashingEmbedder


def _trained(matcher: IntentMatcher) -> object:
    matcher.warm()
    return matcher._model


def test_the_same_playbooks_and_embedder_reuse_the_training_and_any_change_retrains() -> None:
    playbooks, unmatched = demo_playbooks(), demo_unmatched()
    first = _trained(IntentMatcher(playbooks, HashingEmbedder(), unmatched=unmatched))
    assert _trained(IntentMatcher(demo_playbooks(), HashingEmbedder(), unmatched=demo_unmatched())) is first
    assert _trained(IntentMatcher(playbooks[:-1], HashingEmbedder(), unmatched=unmatched)) is not first
    fewer = {key: texts[1:] for key, texts in unmatched.items()}
    assert _trained(IntentMatcher(playbooks, HashingEmbedder(), unmatched=fewer)) is not first
    unpatterned = [dataclasses.replace(playbooks[0], patterns={}), *playbooks[1:]]
    assert _trained(IntentMatcher(unpatterned, HashingEmbedder(), unmatched=unmatched)) is not first
    other_vectors = HashingEmbedder(dims=EMBEDDING_DIMS // 2)
    assert _trained(IntentMatcher(playbooks, other_vectors, unmatched=unmatched)) is not first
    matcher = IntentMatcher(demo_playbooks(), HashingEmbedder(), unmatched=demo_unmatched())
    assert matcher.match("Where is my order #W1234567?") is not None  # a reused model still matches
