"""Character n-gram vectors: how alike two short messages are in their letters, whatever the language.

MiniLM reads English; for German compounds ("Lieferadresse", "Rücksendeetikett") and for Chinese, whose words it
barely knows, the characters a message shares with an example say more. Each text becomes a TF-IDF weighted
vector of its character 3-grams (Latin script, within words padded by spaces) and its 1- and 2-grams (Chinese),
hashed into ``DIMENSIONS`` buckets and normalised, so a similarity is one dot product. Only the buckets some
example fills are kept as columns (``columns``): a bucket no example has gets no weight in the classifier anyway, and
dropping them lets the hash space be wide (fewer collisions between unrelated grams) while training stays quick.

Written here rather than taken from scikit-learn's ``TfidfVectorizer``: the matcher needs a few hundred short
examples and one message at a time, and scikit-learn with SciPy would add some 60 MB to the install for it.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterable, Sequence

import numpy as np
import numpy.typing as npt

DIMENSIONS = 1 << 14  # 5-fold CV on the examples: fewer collisions than 1 << 12 read better
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
_WORD = re.compile(r"[^\W\d_]+")

Vectors = npt.NDArray[np.float32]


def grams(text: str) -> list[str]:
    lowered = text.lower()
    found: list[str] = []
    for run in _CJK.findall(lowered):
        found += list(run)
        found += [run[i : i + 2] for i in range(len(run) - 1)]
    for word in _WORD.findall(_CJK.sub(" ", lowered)):
        padded = f" {word} "
        found += [padded[i : i + 3] for i in range(len(padded) - 2)]
    return found


def _bucket(gram: str) -> int:
    return zlib.crc32(gram.encode("utf-8")) % DIMENSIONS


class CharGrams:
    """Fitted on the examples (their document frequencies); turns texts into unit vectors."""

    def __init__(self, examples: Sequence[str]) -> None:
        frequency = np.zeros(DIMENSIONS, dtype=np.float32)
        for text in examples:
            for bucket in {_bucket(gram) for gram in grams(text)}:
                frequency[bucket] += 1
        self.idf = np.log((1 + len(examples)) / (1 + frequency)).astype(np.float32) + 1
        self.columns = np.flatnonzero(frequency)

    def vectors(self, texts: Iterable[str]) -> Vectors:
        """One row per text, over ``columns`` only (normalised over all its grams, seen by an example or not)."""
        rows = [self.vector(text)[self.columns] for text in texts]
        return np.vstack(rows) if rows else np.zeros((0, len(self.columns)), dtype=np.float32)

    def vector(self, text: str) -> Vectors:
        vector = np.zeros(DIMENSIONS, dtype=np.float32)
        for gram in grams(text):
            vector[_bucket(gram)] += 1
        vector *= self.idf
        norm = float(np.linalg.norm(vector))
        return vector / norm if norm else vector
