"""The machine's busy CPU time, for benchmarks whose work spreads over several processes."""
from __future__ import annotations

import os


def busy_seconds() -> float:
    """Busy CPU seconds of the whole machine since boot (/proc/stat: user, nice, system, irq,
    softirq, steal); the difference over a run is its CPU cost when nothing else runs."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    ticks = sum(fields[:3]) + sum(fields[5:8])
    return ticks / os.sysconf("SC_CLK_TCK")
