"""What the benchmarks measure, computed one way so that their figures compare: the nearest-rank percentile of
latencies, and the CPU time of processes (one live process from /proc, a process with all its descendants through
psutil, and this process, the load generator)."""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path


def percentile(values: Sequence[float], share: float) -> float:
    """Nearest-rank percentile: the smallest value with at least ``share`` of the values at or below it (0 for no
    values). ``share`` is a fraction: 0.95 for p95."""
    if not values:
        return 0.0
    if not 0 < share <= 1:
        raise ValueError(f"share must be in (0, 1], got {share}")
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a live process (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_seconds_of_tree(pid: int) -> float:
    """User + system CPU of a process and all its descendants alive now."""
    import psutil

    root = psutil.Process(pid)
    total = 0.0
    for process in [root, *root.children(recursive=True)]:
        try:
            times = process.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += times.user + times.system
    return total


def own_cpu_seconds() -> float:
    """User + system CPU time of this process."""
    mine = os.times()
    return mine.user + mine.system
