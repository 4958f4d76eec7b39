"""The curate job's Beam counters as rows, merged across a staged run's jobs, in ``stats/``."""
from __future__ import annotations

import json
from typing import Iterable

from infra.storage.files import join, write_bytes


def counters_rows(result) -> list[dict]:
    """The job's ``curate`` counters as rows ``{stage, source, outcome, reason, value}``
    (committed values where the runner reports them, else attempted)."""
    from apache_beam.metrics.metric import MetricsFilter

    from pipelines.plumbing.outputs import NAMESPACE

    rows = []
    for c in result.metrics().query(MetricsFilter().with_namespace(NAMESPACE))["counters"]:
        parts = c.key.metric.name.split("/", 3) + [None] * 3
        value = c.committed if c.committed is not None else c.attempted
        rows.append({"stage": parts[0], "source": parts[1], "outcome": parts[2], "reason": parts[3],
                     "value": int(value or 0)})
    return merge_counters(rows)


def merge_counters(rows: Iterable[dict]) -> list[dict]:
    """Sum counter rows with the same name (several jobs of a staged run)."""
    total: dict[tuple, int] = {}
    for r in rows:
        key = (r["stage"], r["source"], r["outcome"], r["reason"])
        total[key] = total.get(key, 0) + int(r["value"])
    return [{"stage": k[0], "source": k[1], "outcome": k[2], "reason": k[3], "value": v}
            for k, v in sorted(total.items(), key=lambda kv: tuple(x or "" for x in kv[0]))]


def safe_counters(result) -> list[dict]:
    """Counter rows, or [] for runners that report no metrics (never a reason to fail a run)."""
    try:
        return counters_rows(result)
    except Exception:  # noqa: BLE001
        return []


def write_counters(rows: list[dict], run_dir: str) -> str:
    """``stats/counters.json``: the Beam counters {namespace, counters: [...]}."""
    path = join(run_dir, "stats", "counters.json")
    write_bytes(path, json.dumps({"namespace": "curate", "counters": rows}, indent=1).encode() + b"\n")
    return path
