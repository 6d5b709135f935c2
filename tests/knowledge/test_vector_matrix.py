"""SQLite's in-process vector matrix: exact search on a small store, the sign-bit prefilter on a large one."""

from __future__ import annotations

import numpy as np
import pytest

from app.knowledge.vector_matrix import EMBEDDING_DIMS, EXACT_UP_TO, VectorMatrix


def unit_rows(rng: np.random.Generator, count: int) -> np.ndarray:
    rows = rng.standard_normal((count, EMBEDDING_DIMS)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def near(rng: np.random.Generator, centre: np.ndarray, count: int, spread: float) -> np.ndarray:
    """Unit vectors around ``centre``: similar topics, as embeddings of related help articles are."""
    rows = centre + spread * rng.standard_normal((count, EMBEDDING_DIMS)).astype(np.float32)
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def exact_top(matrix: VectorMatrix, query: np.ndarray, limit: int) -> list[int]:
    scores = matrix.matrix @ query
    return [int(matrix.ids[index]) for index in np.argsort(-scores)[:limit]]


def large_store(rng: np.random.Generator, topics: int = 400, per_topic: int = 100) -> VectorMatrix:
    centres = unit_rows(rng, topics)
    rows = np.concatenate([near(rng, centre, per_topic, 0.08) for centre in centres])
    ids = np.arange(1, len(rows) + 1, dtype=np.int64) * 3  # ids with gaps, as after deletions
    return VectorMatrix.empty().appended(ids, rows)


def test_a_small_store_is_searched_exactly() -> None:
    rng = np.random.default_rng(1)
    rows = unit_rows(rng, 500)
    matrix = VectorMatrix.empty().appended(np.arange(1, 501, dtype=np.int64), rows)
    query = rows[42]
    found = matrix.nearest(query, 10)
    assert [match.chunk_id for match in found] == exact_top(matrix, query, 10)
    assert found[0].chunk_id == 43 and found[0].similarity == pytest.approx(1.0, abs=1e-5)


def test_a_large_store_finds_what_exact_search_finds_with_exact_similarities() -> None:
    rng = np.random.default_rng(2)
    matrix = large_store(rng)
    assert len(matrix) > EXACT_UP_TO
    found_share = []
    for row in rng.choice(len(matrix), 50, replace=False):
        query = near(rng, matrix.matrix[row], 1, 0.05)[0]
        found = matrix.nearest(query, 20)
        expected = exact_top(matrix, query, 20)
        found_share.append(len({match.chunk_id for match in found} & set(expected)) / 20)
        for match in found:
            position = int(np.searchsorted(matrix.ids, match.chunk_id))
            assert match.similarity == pytest.approx(float(matrix.matrix[position] @ query), abs=1e-5)
        assert [m.similarity for m in found] == sorted((m.similarity for m in found), reverse=True)
    assert np.mean(found_share) >= 0.95


def test_similarities_are_given_for_the_chunks_that_have_rows_only() -> None:
    rng = np.random.default_rng(3)
    rows = unit_rows(rng, 4)
    matrix = VectorMatrix.empty().appended(np.array([2, 5, 9, 11], dtype=np.int64), rows)
    scores = matrix.similarities(rows[1], [5, 7, 11, 10**12])
    assert set(scores) == {5, 11}
    assert scores[5] == pytest.approx(1.0, abs=1e-5)
    assert scores[11] == pytest.approx(float(rows[3] @ rows[1]), abs=1e-6)


def test_kept_rows_keep_their_signs_so_a_large_store_still_finds_its_neighbours_after_deletions() -> None:
    rng = np.random.default_rng(4)
    matrix = large_store(rng)
    query = matrix.matrix[1234]
    dropped = exact_top(matrix, query, 5)[1:3]
    kept = matrix.kept(np.setdiff1d(matrix.ids, np.array(dropped)))
    assert len(kept) == len(matrix) - 2
    found = [match.chunk_id for match in kept.nearest(query, 10)]
    assert not set(dropped) & set(found)
    assert found[0] == int(matrix.ids[1234])
    assert len(set(found) & set(exact_top(kept, query, 10))) >= 9
