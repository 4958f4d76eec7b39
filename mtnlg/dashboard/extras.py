"""Optional stats (docs/stats-schema.md): dedup clusters, the cross-source matrix, contamination
per task, time per stage and the quality threshold.

Each reader returns None when its input is absent, so the page prints "not available in this
run".  Dedup statistics come from ``stats/dedup_clusters.parquet`` / ``stats/dedup_matrix.parquet``
when the pipeline wrote them, else they are computed (with pyarrow, no Python loop over rows)
from the member rows in ``RUN/dedup/``.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Callable

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

Notes = list[str]

# Column names the dedup stage may use for the group a member belongs to.
GROUP_COLUMNS = ("group", "group_id", "cluster", "cluster_id", "component", "component_id")
KEEP_COLUMNS = ("kept", "keep", "is_kept", "is_representative")


def _table_kind(path: Path, root: Path) -> str:
    """exact/part-00000-of-00002.parquet -> exact; groups-00001-of-00002.parquet -> groups."""
    if path.parent != root:
        return path.parent.relative_to(root).as_posix()
    return re.sub(r"(-\d+)?(-of-\d+)?$", "", path.name.split(".")[0]) or "dedup"



def read_table(path: Path, columns: tuple[str, ...], notes: Notes) -> pa.Table | None:
    """The table with exactly ``columns`` (all required), or None with a note saying why."""
    if not path.exists():
        return None
    try:
        table = pq.read_table(path)
    except (OSError, ValueError, pa.ArrowException) as err:
        notes.append(f"could not read stats/{path.name}: {type(err).__name__}: {err}")
        return None
    missing = [c for c in columns if c not in table.column_names]
    if missing:
        notes.append(f"stats/{path.name} lacks column(s) {', '.join(missing)}; ignored")
        return None
    return table.select(list(columns))


def _sum_by(table: pa.Table, keys: list[str], value: str) -> list[dict[str, Any]]:
    out = table.group_by(keys).aggregate([(value, "sum")]).to_pylist()
    for row in out:
        row[value] = int(row.pop(f"{value}_sum") or 0)
    return sorted(out, key=lambda r: tuple(str(r[k]) for k in keys))


def dedup_members(run_dir: Path, notes: Notes) -> pa.Table | None:
    """RUN/dedup member rows as one table: kind, group, source, kept (group/keep names normalized)."""
    root = run_dir / "dedup"
    if not root.is_dir():
        return None
    parts = []
    for path in sorted(root.rglob("*.parquet")):
        try:
            names = pq.read_schema(path).names
            group = next((c for c in GROUP_COLUMNS if c in names), None)
            keep = next((c for c in KEEP_COLUMNS if c in names), None)
            if group is None or keep is None or "source" not in names:
                notes.append(f"dedup/{path.relative_to(root)} lacks a group, keep or source column; ignored")
                continue
            cols = [group, keep, "source"] + [c for c in ("kind", "id") if c in names]
            t = pq.read_table(path, columns=cols)
        except (OSError, ValueError, pa.ArrowException) as err:
            notes.append(f"could not read dedup/{path.relative_to(root)}: {type(err).__name__}: {err}")
            continue
        kind = t.column("kind").cast(pa.string()) if "kind" in cols else \
            pa.array([_table_kind(path, root)] * len(t), pa.string())
        source = t.column("source").cast(pa.string())
        if "id" in cols:  # a member row without a source: ids start with "<source>/"
            prefix = pc.replace_substring_regex(t.column("id").cast(pa.string()), r"/.*$", "")
            source = pc.coalesce(source, prefix)
        parts.append(pa.table({"kind": kind, "group": t.column(group).cast(pa.string()),
                               "source": source,
                               "kept": t.column(keep).cast(pa.bool_())}))
    return pa.concat_tables(parts) if parts else None


def _size_distribution(members: pa.Table) -> pa.Table:
    """(kind, size, clusters): how many groups have each number of members."""
    sizes = members.group_by(["kind", "group"]).aggregate([([], "count_all")])
    sizes = pa.table({"kind": sizes.column("kind"), "size": sizes.column("count_all")})
    dist = sizes.group_by(["kind", "size"]).aggregate([([], "count_all")])
    return pa.table({"kind": dist.column("kind"), "size": dist.column("size"),
                     "clusters": dist.column("count_all")})


def matrix_from_members(members: pa.Table) -> pa.Table:
    """(kind, kept_source, removed_source, documents): whose copy was kept, whose removed."""
    kept = members.filter(pc.field("kept")).select(["kind", "group", "source"]).rename_columns(
        ["kind", "group", "kept_source"])
    removed = members.filter(~pc.field("kept")).select(["kind", "group", "source"]).rename_columns(
        ["kind", "group", "removed_source"])
    joined = removed.join(kept, keys=["kind", "group"], join_type="left outer")
    joined = joined.set_column(joined.column_names.index("kept_source"), "kept_source",
                               pc.fill_null(joined.column("kept_source"), "(no kept member)"))
    out = joined.group_by(["kind", "kept_source", "removed_source"]).aggregate([([], "count_all")])
    return pa.table({k: out.column(k) for k in ("kind", "kept_source", "removed_source")}
                    | {"documents": out.column("count_all")})


def dedup_clusters(run_dir: Path, members: pa.Table | None, notes: Notes) -> dict[str, list[list[int]]] | None:
    """{kind: [[cluster size, number of clusters], ...]} ascending by size."""
    t = read_table(run_dir / "stats" / "dedup_clusters.parquet", ("kind", "size", "clusters"), notes)
    if t is None and members is not None and len(members):
        t = _size_distribution(members)
    if t is None:
        return None
    out: dict[str, list[list[int]]] = {}
    for row in _sum_by(t, ["kind", "size"], "clusters"):
        out.setdefault(str(row["kind"]), []).append([int(row["size"]), row["clusters"]])
    return {k: sorted(v) for k, v in sorted(out.items())}


def dedup_matrix(run_dir: Path, members: pa.Table | None, notes: Notes) -> dict[str, Any] | None:
    """{kind: {kept_source: {removed_source: documents}}} (all kinds also summed as ``all``)."""
    t = read_table(run_dir / "stats" / "dedup_matrix.parquet",
                   ("kind", "kept_source", "removed_source", "documents"), notes)
    if t is None and members is not None and len(members):
        t = matrix_from_members(members)
    if t is None:
        return None
    out: dict[str, dict[str, dict[str, int]]] = {}
    for row in _sum_by(t, ["kind", "kept_source", "removed_source"], "documents"):
        for kind in (str(row["kind"]), "all"):
            cell = out.setdefault(kind, {}).setdefault(str(row["kept_source"]), {})
            cell[str(row["removed_source"])] = cell.get(str(row["removed_source"]), 0) + row["documents"]
    return out


def contamination(run_dir: Path, notes: Notes) -> list[dict[str, Any]] | None:
    """Rows (task, source, action, documents) from stats/contamination.parquet."""
    t = read_table(run_dir / "stats" / "contamination.parquet", ("task", "source", "action", "documents"), notes)
    return None if t is None else _sum_by(t, ["task", "source", "action"], "documents")


def stage_seconds(run: dict[str, Any], run_dir: Path, notes: Notes) -> dict[str, float] | None:
    """Seconds per stage: run.json ``stage_seconds``, else stats/stage_times.parquet (stage, seconds)."""
    raw = run.get("stage_seconds")
    if isinstance(raw, dict) and raw:
        return {str(k): float(v) for k, v in raw.items() if isinstance(v, (int, float))}
    t = read_table(run_dir / "stats" / "stage_times.parquet", ("stage", "seconds"), notes)
    if t is None:
        return None
    return {str(r["stage"]): float(r["seconds"] or 0) for r in t.to_pylist()}


def quality_threshold(run: dict[str, Any]) -> float | None:
    """``config.quality.threshold`` of the run (the score at or above which a document is kept)."""
    value = ((run.get("config") or {}).get("quality") or {}).get("threshold")
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def dedup_summary(members: pa.Table | None) -> dict[str, Any] | None:
    """Per kind: member rows, groups, kept members, the ten largest groups, members by source."""
    if members is None or not len(members):
        return None
    out = {}
    for kind in sorted(set(members.column("kind").to_pylist())):
        m = members.filter(pc.equal(members.column("kind"), kind))
        sizes = m.group_by("group").aggregate([([], "count_all")]).column("count_all").to_pylist()
        by_source = m.group_by("source").aggregate([([], "count_all")]).to_pylist()
        out[str(kind)] = {"members": len(m), "groups": len(sizes), "kept": int(pc.sum(m.column("kept")).as_py() or 0),
                          "largest_groups": sorted(sizes, reverse=True)[:10],
                          "by_source": {str(r["source"]): r["count_all"] for r in
                                        sorted(by_source, key=lambda r: str(r["source"]))}}
    return out


def load_extras(run: dict[str, Any], run_dir: Path, notes: Notes) -> dict[str, Any]:
    members = dedup_members(run_dir, notes)
    readers: dict[str, Callable[[], Any]] = {
        "dedup": lambda: dedup_summary(members),
        "dedup_clusters": lambda: dedup_clusters(run_dir, members, notes),
        "dedup_matrix": lambda: dedup_matrix(run_dir, members, notes),
        "contamination": lambda: contamination(run_dir, notes),
        "stage_seconds": lambda: stage_seconds(run, run_dir, notes),
        "quality_threshold": lambda: quality_threshold(run),
    }
    return {key: read() for key, read in readers.items()}
