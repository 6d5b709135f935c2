"""Which playbook a customer's message asks for, without an LLM: a classifier trained on the playbooks' examples.

Each playbook's example utterances (in every language it lists) and the *unmatched* examples (messages no playbook
takes: greetings, product questions, "how do I cancel my account?") train a softmax regression
(``app.playbooks.classifier``) over three kinds of features: the local MiniLM embedding (what the message means,
in English best), character n-grams (``app.playbooks.char_grams``: German compounds, Chinese) and one flag per
playbook for its own regular expressions. The most probable class is the match when it is a playbook and its
probability reaches ``threshold``; else nothing matches and the turn goes on without a playbook.

The hyperparameters (the n-gram hash width, L2) and the threshold were chosen by 5-fold stratified
cross-validation on the examples alone (each fold's playbooks and unmatched examples train, the rest are matched):
a wider hash and a lighter L2 raised its accuracy by about a point for half a point more false matches, and 0.5 stayed
the threshold (higher ones cost more accuracy than the false matches they saved). The figures are measured on a
held-out labelled set (``python -m benchmarks.intents --json``) that no example is taken from.

Identifiers (order and tracking numbers) are replaced by placeholders first: "#W4877327" says nothing about what
the customer wants.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from app.knowledge.vectors import TextEmbedder
from app.playbooks.char_grams import CharGrams
from app.playbooks.classifier import SoftmaxRegression
from app.playbooks.model import Playbook

DEFAULT_THRESHOLD = 0.5
MAX_MATCH_CHARS = 500
_ORDER_NUMBER = re.compile(r"#?\s?\bW?\d{6,8}\b|#W\d+", re.IGNORECASE)
_TRACKING_NUMBER = re.compile(r"\b1Z[0-9A-Z]{8,}\b|\b[A-Z]{2}\d{9}[A-Z]{2}\b", re.IGNORECASE)

Vectors = npt.NDArray[np.float32]


@dataclass(frozen=True)
class IntentMatch:
    playbook: str
    probability: float


@dataclass(frozen=True)
class _Model:
    grams: CharGrams
    classifier: SoftmaxRegression


def normalized_for_matching(text: str) -> str:
    text = _TRACKING_NUMBER.sub(" tracking number ", text[:MAX_MATCH_CHARS])
    return " ".join(_ORDER_NUMBER.sub(" order ", text).split()).lower()


class IntentMatcher:
    """See the module docstring. The classifier is trained on the first match (thread-safe), or by ``warm``."""

    def __init__(
        self,
        playbooks: Sequence[Playbook],
        embedder: TextEmbedder,
        *,
        unmatched: Mapping[str, Sequence[str]] | None = None,
        threshold: float = DEFAULT_THRESHOLD,
    ) -> None:
        self.playbooks = list(playbooks)
        self.unmatched = [text for texts in (unmatched or {}).values() for text in texts]
        self.embedder = embedder
        self.threshold = threshold
        self._lock = threading.Lock()
        self._model: _Model | None = None

    def warm(self) -> None:
        """Embed the examples and train now (the benchmark and the server's start call it)."""
        self._trained()

    def probabilities(self, text: str) -> Vectors:
        """The probability of each playbook, in order, then of unmatched, for ``text``."""
        model = self._trained()
        probabilities: Vectors = model.classifier.probabilities(self._features([text], model.grams))[0]
        return probabilities

    def match(self, text: str) -> IntentMatch | None:
        if not self.playbooks:
            return None
        probabilities = self.probabilities(text)
        best = int(probabilities.argmax())
        if best == len(self.playbooks) or probabilities[best] < self.threshold:
            return None
        return IntentMatch(self.playbooks[best].name, float(probabilities[best]))

    def _features(self, texts: Sequence[str], grams: CharGrams) -> Vectors:
        normalized = [normalized_for_matching(text) for text in texts]
        raw = np.asarray(self.embedder.embed_batch(normalized), dtype=np.float32).reshape(len(texts), -1)
        norms = np.linalg.norm(raw, axis=1, keepdims=True)
        embedded = (raw / np.where(norms == 0, 1.0, norms)).astype(np.float32)
        flags = np.asarray([[p.pattern_matches(t) for p in self.playbooks] for t in texts], dtype=np.float32)
        parts = [embedded, grams.vectors(normalized), flags.reshape(len(texts), len(self.playbooks))]
        return np.hstack(parts).astype(np.float32)

    def _trained(self) -> _Model:
        with self._lock:
            if self._model is None:
                texts: list[str] = []
                labels: list[int] = []
                for position, playbook in enumerate(self.playbooks):
                    examples = playbook.all_examples()
                    texts += examples
                    labels += [position] * len(examples)
                texts += self.unmatched
                labels += [len(self.playbooks)] * len(self.unmatched)
                key = self._training_key(texts, labels)
                self._model = _TRAINED.get(key) if key else None
                if self._model is None:
                    self._model = self._train(texts, labels)
                    if key:
                        _TRAINED.put(key, self._model)
            return self._model

    def _train(self, texts: list[str], labels: list[int]) -> _Model:
        grams = CharGrams([normalized_for_matching(text) for text in texts])
        features = self._features(texts, grams) if texts else np.zeros((0, 1), dtype=np.float32)
        classes = len(self.playbooks) + 1
        return _Model(grams, SoftmaxRegression(features, np.asarray(labels, dtype=np.int64), classes))

    def _training_key(self, texts: list[str], labels: list[int]) -> str | None:
        """What determines the trained model: the embedder's vectors, the examples and the patterns. None (no
        reuse) for an embedder that does not say which vectors it makes."""
        identity = getattr(self.embedder, "vector_identity", None)
        if not isinstance(identity, str):
            return None
        patterns = [
            [p.name, {lang: [r.pattern for r in rs] for lang, rs in p.patterns.items()}] for p in self.playbooks
        ]
        material = json.dumps([identity, texts, labels, patterns], ensure_ascii=False, sort_keys=True)
        return hashlib.sha256(material.encode("utf-8", "surrogatepass")).hexdigest()


class _TrainedModels:
    """The models trained in this process, by what they were trained on: every desk of a process (the server's
    workers share none, but each test does) and every reload of unchanged playbooks reuses the training of seconds.
    Bounded: a supervisor editing playbooks all day makes a new one per save."""

    def __init__(self, size: int = 8) -> None:
        self.size = size
        self._models: OrderedDict[str, _Model] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> _Model | None:
        with self._lock:
            model = self._models.get(key)
            if model is not None:
                self._models.move_to_end(key)
            return model

    def put(self, key: str, model: _Model) -> None:
        with self._lock:
            self._models[key] = model
            while len(self._models) > self.size:
                self._models.popitem(last=False)


_TRAINED = _TrainedModels()
