"""The one percentile every benchmark reports."""

from __future__ import annotations

import pytest

from benchmarks.harness.measure import percentile


def test_percentile_is_the_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]  # 1..100
    assert percentile(values, 0.95) == 95.0
    assert percentile(values, 0.50) == 50.0
    assert percentile(values, 1.0) == 100.0
    assert percentile([3.0, 1.0, 2.0], 0.5) == 2.0
    assert percentile([7.0], 0.95) == 7.0
    assert percentile([], 0.95) == 0.0


def test_percentile_refuses_a_share_outside_zero_to_one() -> None:
    with pytest.raises(ValueError, match="share"):
        percentile([1.0], 95)
