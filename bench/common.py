"""What the benchmarks share: the repository they measure, and how CPU time is measured."""
from __future__ import annotations

import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
"""The repository the benchmarks measure (this checkout)."""


def test_helpers(folder: str) -> None:
    """Put ``tests/<folder>`` on the import path: test tooling a benchmark shares (the dashboard
    tests' Chromium driver, the training tests' rank spawner)."""
    path = str(REPO / "tests" / folder)
    if path not in sys.path:
        sys.path.insert(0, path)


def busy_seconds() -> float:
    """Busy CPU seconds of the whole machine since boot (/proc/stat: user, nice, system, irq,
    softirq, steal); the difference over a run is its CPU cost when nothing else runs."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    ticks = sum(fields[:3]) + sum(fields[5:8])
    return ticks / os.sysconf("SC_CLK_TCK")
