"""Worker time per stage: DoFns add their own time to a counter; the driver reads it back."""
from __future__ import annotations

import functools
import time

from apache_beam.metrics import Metrics

TIME_NAMESPACE = "curate_time"
"""Counters of worker microseconds spent in each stage's DoFns (``run.json`` stage_seconds)."""


@functools.lru_cache(maxsize=None)
def _counter(stage: str):
    """One counter object per stage name (``outputs.count`` says why that is safe)."""
    return Metrics.counter(TIME_NAMESPACE, stage)


def timed(stage: str | None = None):
    """Decorate a DoFn's generator ``process`` (or any generator function, with ``stage`` given)
    to add its own time (not the time downstream steps spend on what it yields: fused consumers
    run inside ``yield``) to the step's ``curate_time`` counter.  ``stage=None`` uses
    ``self.stage``."""

    def decorate(process):
        @functools.wraps(process)
        def wrapper(self, *args, **kwargs):
            spent, t = 0.0, time.perf_counter()
            for item in process(self, *args, **kwargs) or ():
                spent += time.perf_counter() - t
                yield item
                t = time.perf_counter()
            spent += time.perf_counter() - t
            _counter(stage or self.stage).inc(int(spent * 1e6))

        return wrapper

    return decorate


def stage_seconds(result) -> dict[str, float]:
    """Seconds of worker time per step from a finished pipeline's ``curate_time`` counters, to the
    microsecond they are counted in (a step's few documents may take under a millisecond)."""
    from apache_beam.metrics.metric import MetricsFilter

    micros: dict[str, int] = {}
    try:
        counters = result.metrics().query(MetricsFilter().with_namespace(TIME_NAMESPACE))["counters"]
    except Exception:  # noqa: BLE001 - runners without metrics: timings are a report only
        return {}
    for c in counters:
        value = c.committed if c.committed is not None else c.attempted
        name = c.key.metric.name
        micros[name] = micros.get(name, 0) + int(value or 0)
    return {name: us / 1e6 for name, us in micros.items()}
