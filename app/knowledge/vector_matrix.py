"""The in-process matrix that answers knowledge vector search on SQLite: every chunk's unit vector, by chunk id.

``VectorMatrix`` is immutable: a refresh builds a new one (``appended``, ``kept``), so a search that holds one reads
a consistent set while another thread refreshes.

- Up to ``EXACT_UP_TO`` chunks, ``nearest`` scores every vector: one matrix-vector product.
- Above that, exact search is memory-bound: at 100k chunks the float32 matrix is about 150 MB, read whole for every
  question. The matrix therefore keeps a copy of each vector's signs, one bit a dimension (48 bytes a chunk, a
  thirty-second of the float32 row). The signs of two unit vectors differ in a share of dimensions that grows with
  the angle between them (binary quantisation, as in Charikar's sign random projections). ``nearest`` ranks all
  chunks by that Hamming distance, then scores the closest ``RESCORED`` (or ``RESCORE_FACTOR`` times the limit,
  whichever is more) exactly and returns the best of those by cosine. The similarities returned are exact; only
  which chunks are looked at is approximate, and the benchmark measures how often the exact top results are missed
  (``benchmarks.knowledge_scale``, ``vector_recall``).

Why not an approximate-nearest-neighbour library: an HNSW graph (usearch, faiss, hnswlib) over 100k vectors took
over three minutes to build on one core here, and must be extended or rebuilt as imports and erasures change the
chunks. The sign copy is derived from the rows it filters in a few milliseconds and follows every refresh for free.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

EMBEDDING_DIMS = 384  # knowledge_vectors.embedding on PostgreSQL is vector(384)
EXACT_UP_TO = 20_000
RESCORED = 5_000
RESCORE_FACTOR = 20

FloatMatrix = npt.NDArray[np.float32]
IdArray = npt.NDArray[np.int64]
SignMatrix = npt.NDArray[np.uint64]


@dataclass(frozen=True)
class VectorMatch:
    chunk_id: int
    similarity: float  # cosine similarity, in [-1, 1]


def sign_bits(matrix: FloatMatrix) -> SignMatrix:
    """One bit per dimension (set where the value is positive), packed into 64-bit words, one row per word:
    ``(6, rows)``. Word-major, because the distance to a query is then six passes over contiguous memory, several
    times faster than summing six words per row."""
    packed = np.ascontiguousarray(np.packbits(matrix > 0, axis=1))
    return np.ascontiguousarray(packed.view(np.uint64).T)


@dataclass(frozen=True)
class VectorMatrix:
    ids: IdArray  # ascending
    matrix: FloatMatrix
    signs: SignMatrix

    @classmethod
    def empty(cls) -> VectorMatrix:
        matrix = np.zeros((0, EMBEDDING_DIMS), dtype=np.float32)
        return cls(np.zeros(0, dtype=np.int64), matrix, sign_bits(matrix))

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def highest_id(self) -> int:
        return int(self.ids[-1]) if len(self.ids) else 0

    def appended(self, ids: IdArray, matrix: FloatMatrix) -> VectorMatrix:
        """This matrix with rows for chunks newer than any it holds."""
        if not len(ids):
            return self
        return VectorMatrix(
            np.concatenate([self.ids, ids]),
            np.ascontiguousarray(np.concatenate([self.matrix, matrix])),
            np.concatenate([self.signs, sign_bits(matrix)], axis=1),
        )

    def kept(self, chunk_ids: IdArray) -> VectorMatrix:
        """Only the rows of ``chunk_ids``."""
        keep = np.isin(self.ids, chunk_ids)
        if keep.all():
            return self
        return VectorMatrix(
            self.ids[keep], np.ascontiguousarray(self.matrix[keep]), np.ascontiguousarray(self.signs[:, keep])
        )

    def nearest(self, query: FloatMatrix, limit: int) -> list[VectorMatch]:
        """The ``limit`` chunks most similar to ``query`` (a unit vector), most similar first: exactly up to
        ``EXACT_UP_TO`` rows, among the rows closest by sign bits above (see the module docstring)."""
        rescored = max(RESCORED, limit * RESCORE_FACTOR)
        if limit <= 0 or len(self.ids) <= max(EXACT_UP_TO, rescored):
            return self.exact_nearest(query, limit)
        rows = _smallest(self._hamming(query), rescored)
        scores = self.matrix[rows] @ query
        return [VectorMatch(int(self.ids[rows[index]]), float(scores[index])) for index in _largest(scores, limit)]

    def exact_nearest(self, query: FloatMatrix, limit: int) -> list[VectorMatch]:
        """The ``limit`` most similar chunks, every row scored."""
        if limit <= 0 or not len(self.ids):
            return []
        scores = self.matrix @ query
        return [VectorMatch(int(self.ids[index]), float(scores[index])) for index in _largest(scores, limit)]

    def similarities(self, query: FloatMatrix, chunk_ids: Sequence[int]) -> dict[int, float]:
        """The cosine similarity of ``query`` to each of ``chunk_ids`` that has a row."""
        wanted = np.asarray(chunk_ids, dtype=np.int64)
        positions = np.searchsorted(self.ids, wanted)
        inside = positions < len(self.ids)
        found = np.zeros(len(wanted), dtype=bool)
        found[inside] = self.ids[positions[inside]] == wanted[inside]
        scores = self.matrix[positions[found]] @ query
        return dict(zip(wanted[found].tolist(), scores.tolist(), strict=True))

    def _hamming(self, query: FloatMatrix) -> npt.NDArray[np.uint16]:
        words = sign_bits(query[np.newaxis, :])[:, 0]
        distances: npt.NDArray[np.uint16] = np.bitwise_count(self.signs[0] ^ words[0]).astype(np.uint16)
        for index in range(1, len(words)):
            distances += np.bitwise_count(self.signs[index] ^ words[index])
        return distances


def _smallest(values: npt.NDArray[np.uint16], count: int) -> npt.NDArray[np.intp]:
    """The positions of the ``count`` smallest values, ascending by position (so the rescored rows are read in
    memory order)."""
    chosen: npt.NDArray[np.intp] = np.sort(np.argpartition(values, count - 1)[:count])
    return chosen


def _largest(scores: FloatMatrix, limit: int) -> npt.NDArray[np.intp]:
    """The positions of the ``limit`` largest scores, largest first (ties by position)."""
    top = np.argpartition(-scores, limit - 1)[:limit] if limit < len(scores) else np.arange(len(scores))
    ordered: npt.NDArray[np.intp] = top[np.argsort(-scores[top], kind="stable")]
    return ordered
