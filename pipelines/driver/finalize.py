"""After the last stage: merge the stages' aggregates, check the accounting, write ``run.json``
(last: it is the marker of the whole run; docs/run-layout.md lists its fields)."""
from __future__ import annotations

from pipelines.config.job import CurateConfig
from pipelines.runfolder import report
from pipelines.runfolder.commit import RunDir, RunDirError
from pipelines.runfolder.counters import merge_counters, write_counters
from pipelines.stages import STAGES


def finalize(rd: RunDir, fp: str, base: dict, cfg: CurateConfig | None = None) -> dict:
    """Merge the stages' aggregates, check the accounting and write run.json (last); returns
    run.json's contents with the merged counters under ``_counters``."""
    from pipelines.plumbing.stats import grid_spec_of

    markers = {s: rd.done(s, fp) for s in STAGES}
    missing = [s for s, m in markers.items() if m is None]
    if missing:
        raise RunDirError(f"stages {missing} have not completed; run with --resume {rd.root}")
    tables = report.merge_stage_aggregates(rd.root, list(STAGES),
                                           grid_spec_of(cfg) if cfg is not None else None)
    shards = report.read_parquet_rows(rd.path("stats", "shards.parquet"))
    counters = merge_counters(r for m in markers.values() for r in m.get("counters", []))
    write_counters(counters, rd.root)
    seconds: dict[str, float] = {}
    for m in markers.values():
        for k, v in (m.get("stage_seconds") or {}).items():
            seconds[k] = round(seconds.get(k, 0.0) + v, 6)  # microseconds, as counted
    acc = report.accounting(tables["counts"], tables["read"], shards)
    walls = {s: m.get("wall_seconds") for s, m in markers.items() if m.get("wall_seconds") is not None}
    info = {**base, "stage_seconds": seconds, "stage_wall_seconds": walls,
            "stages": {s: {"committed_at": m.get("committed_at"), "mode": m.get("mode"),
                           "parts": len(m.get("parts", []))} for s, m in markers.items()},
            **acc, "accounting_ok": True}
    report.write_run_json(rd.root, info)
    return {**info, "_counters": counters}
