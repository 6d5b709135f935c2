"""The statistics every benchmark reports, computed one way so that their figures compare."""

from __future__ import annotations

import math
from collections.abc import Sequence


def percentile(values: Sequence[float], share: float) -> float:
    """Nearest-rank percentile: the smallest value with at least ``share`` of the values at or below it (0 for no
    values). ``share`` is a fraction: 0.95 for p95."""
    if not values:
        return 0.0
    if not 0 < share <= 1:
        raise ValueError(f"share must be in (0, 1], got {share}")
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]
