"""After the stages: merge the small aggregates, check the accounting, write run.json (last).

Only aggregated tables are read on the driver (the stages' partial counts, the shard table),
never documents.  ``AccountingError`` is raised when ``read != kept + removed + dead_lettered``
for any source, or when the shards do not hold exactly the kept documents, before ``run.json``
is written: a RUN without ``run.json`` is not a result.
"""
from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems

from curation.sources import display_name
from infra.storage.files import file_exists, join, read_bytes, write_bytes, write_table

FORMAT_VERSION = 3
"""2: per-document stats sharded under stats/documents/; stats/languages.parquet; _curate/.
3: the path in document ids percent-escapes ``%``, ``:``, ``#``, controls, line breaks and bytes
that are not UTF-8 (``curation.readers.files.escape_id_path``); dedup removals name the final
survivor (``detail.via``)."""


class AccountingError(RuntimeError):
    """Documents went missing (or were duplicated) between reading and the final outcomes."""


def read_parquet_rows(path: str) -> list[dict]:
    with FileSystems.open(path) as f:
        return pq.read_table(f).to_pylist()


def accounting(counts: list[dict], read_counts: list[dict], shards: list[dict]) -> dict[str, Any]:
    """Per-source accounting from the stats tables; raises ``AccountingError`` on a mismatch."""
    sources: dict[str, dict] = defaultdict(lambda: {"read": 0, "kept": 0, "dead_lettered": 0,
                                                    "removed": {}, "tokens": 0, "shards": []})
    for row in read_counts:
        sources[row["source"]]["read"] += row["read"]
    for row in counts:
        s = sources[row["source"]]
        if row["outcome"] == "kept":
            s["kept"] += row["documents"]
        elif row["outcome"] == "dead_letter":
            s["dead_lettered"] += row["documents"]
        else:
            key = f"{row['stage']}/{row['reason']}"
            s["removed"][key] = s["removed"].get(key, 0) + row["documents"]
    for sh in sorted(shards, key=lambda r: r["prefix"]):
        s = sources[sh["source"]]
        s["tokens"] += sh["tokens"]
        s["shards"].append(sh["prefix"])
    problems = []
    for name, s in sorted(sources.items()):
        s["removed"] = dict(sorted(s["removed"].items()))
        s["display_name"] = display_name(name)
        total = s["kept"] + sum(s["removed"].values()) + s["dead_lettered"]
        if total != s["read"]:
            problems.append(f"{name}: read {s['read']} != kept {s['kept']} + removed "
                            f"{sum(s['removed'].values())} + dead-lettered {s['dead_lettered']}")
        in_shards = sum(sh["documents"] for sh in shards if sh["source"] == name)
        if in_shards != s["kept"]:
            problems.append(f"{name}: {s['kept']} kept documents but {in_shards} in shards")
    if problems:
        raise AccountingError("accounting identity violated:\n  " + "\n  ".join(problems))
    totals = {k: sum(s[k] for s in sources.values())
              for k in ("read", "kept", "dead_lettered", "tokens")}
    totals["removed"] = sum(sum(s["removed"].values()) for s in sources.values())
    return {"sources": dict(sorted(sources.items())), "totals": totals}


def merge_stage_aggregates(run_dir: str, stages: list[str], grid_spec=None) -> dict[str, list[dict]]:
    """Sum the stages' ``stages/<stage>/aggregates.json`` and write the aggregate tables
    (``stats/counts|histograms|languages|read_counts|pii.parquet`` and, given the run's
    ``GridSpec``, ``stats/filter_grid.parquet``); returns their rows."""
    from curation.stats import merge_partials
    from pipelines.plumbing.stats import AGGREGATE_TABLES, GRID_FILE, grid_table_bytes

    partials = []
    for stage in stages:
        path = join(run_dir, "stages", stage, "aggregates.json")
        if file_exists(path):  # a disabled stage decides nothing and writes none
            partials.append(json.loads(read_bytes(path)))
    tables = merge_partials(partials)
    for name, (file_name, schema) in AGGREGATE_TABLES.items():
        write_table(join(run_dir, "stats", file_name), tables[name], schema)
    if grid_spec is not None:
        write_bytes(join(run_dir, "stats", GRID_FILE), grid_table_bytes(tables["grid"], grid_spec))
    return tables


def write_run_json(run_dir: str, info: dict[str, Any]) -> str:
    path = join(run_dir, "run.json")
    write_bytes(path, (json.dumps(info, indent=2, sort_keys=False, default=str) + "\n").encode())
    return path


def table(sources: dict[str, dict]) -> str:
    """A short per-source table: read / kept / removed by reason / dead / tokens."""
    lines = [f"{'source':<18}{'read':>7}{'kept':>7}{'dead':>6}{'tokens':>11}  removed"]
    for name, s in sources.items():
        removed = ", ".join(f"{k}={v}" for k, v in s["removed"].items()) or "-"
        lines.append(f"{name:<18}{s['read']:>7}{s['kept']:>7}{s['dead_lettered']:>6}"
                     f"{s['tokens']:>11}  {removed}")
    return "\n".join(lines)
