"""Panels for duplicates (groups, cluster sizes, the cross-source matrix) and contamination.

Same conventions as ``panels``: one or two runs in, an escaped HTML fragment out; with two runs
every number is shown for both and the difference.
"""
from __future__ import annotations

from typing import Any

from .htmlkit import (delta, esc, fmt, metric_cells, metric_headers, not_available, table, td, td_num,
                      td_stacked, th)
from .panels import Runs, _labels, chart


def _union(lists: list[list[str]]) -> list[str]:
    return list(dict.fromkeys(x for items in lists for x in items))


def _heat_cell(values: list[int], peak: int) -> str:
    """A matrix cell shaded by its (first run's, else second's) count; A, B and Δ with two runs."""
    shade = (values[0] or values[-1]) / peak if peak else 0
    style = f' style="background: rgba(221, 107, 32, {0.08 + 0.6 * shade:.2f})"' if shade else ""
    if len(values) == 1:
        return f'<td class="num heat"{style}>{esc(fmt(values[0]) if values[0] else "")}</td>'
    d = delta(values)
    parts = "".join(f"<span>{esc(fmt(v))}</span>" for v in values)
    return (f'<td class="num cmp heat"{style}>{parts}'
            f'<span class="d">Δ {esc(("+" if d > 0 else "") + fmt(d))}</span></td>')


def matrix_table(matrices: list[dict[str, dict[str, int]]]) -> str:
    """Rows: the source whose copy was kept; columns: the source of the removed duplicate."""
    kept = sorted(_union([list(m) for m in matrices]))
    removed = sorted(_union([list(row) for m in matrices for row in m.values()]))
    peak = max([v for m in matrices for row in m.values() for v in row.values()] or [0])
    rows = []
    for k in kept:
        cells = [_heat_cell([(m.get(k) or {}).get(r, 0) for m in matrices], peak) for r in removed]
        total = [td_num(sum((matrices[0].get(k) or {}).values()))] if len(matrices) == 1 else []
        rows.append([td(k)] + cells + total)
    headers = [th("kept copy in \\ removed from")] + [th(r) for r in removed]
    headers += [th("removed, total")] if len(matrices) == 1 else []
    return table(headers, rows)


def dedup(runs: Runs, charts: dict[str, Any]) -> str:
    parts = []
    if any(r.get("dedup") for r in runs):
        kinds = _union([list(r.get("dedup") or {}) for r in runs])
        rows = []
        for kind in kinds:
            per = [(r.get("dedup") or {}).get(kind) or {} for r in runs]
            rows.append([td(kind)] + metric_cells([p.get("members") for p in per])
                        + metric_cells([p.get("groups") for p in per]) + metric_cells([p.get("kept") for p in per])
                        + [td("; ".join(", ".join(str(n) for n in p.get("largest_groups", [])) for p in per))])
        labels = _labels(runs)
        headers = ([th("kind")] + metric_headers("members", labels) + metric_headers("groups", labels)
                   + metric_headers("kept", labels) + [th("largest groups")])
        parts.append("<h3>Duplicate groups</h3>" + table(headers, rows))
    else:
        parts.append(not_available("Duplicate groups (RUN/dedup)"))

    parts.append("<h3>Cluster-size distribution</h3>")
    parts.append(chart("dedup_clusters", charts) if charts.get("dedup_clusters")
                 else not_available("Cluster sizes (stats/dedup_clusters.parquet or RUN/dedup)"))

    parts.append("<h3>Cross-source duplicates</h3>")
    if any(r.get("dedup_matrix") for r in runs):
        kinds = _union([list(r.get("dedup_matrix") or {}) for r in runs])
        kinds = ["all"] + [k for k in kinds if k != "all"]
        parts.append("<p>Documents removed as duplicates, by the source of the removed copy (columns) and "
                     "of the copy that was kept (rows)." + (" Each cell: first run, second run, Δ." if len(runs) == 2
                                                           else "") + "</p>")
        for i, kind in enumerate(kinds):
            inner = matrix_table([(r.get("dedup_matrix") or {}).get(kind) or {} for r in runs])
            open_ = " open" if i == 0 else ""
            parts.append(f'<details class="matrix"{open_}><summary>{esc(kind)}</summary>{inner}</details>')
    else:
        parts.append(not_available("Cross-source duplicate matrix (stats/dedup_matrix.parquet or RUN/dedup)"))
    parts.append(older_runs(runs))
    return "".join(parts)


AGAINST = {"dedup_against/exact": "exact", "dedup_against/fuzzy": "fuzzy"}


def already_present(run: dict[str, Any]) -> list[dict[str, Any]]:
    """Per source of a ``curate --dedup-against`` run: documents that reached dedup, and those
    removed as exact / near copies of older runs' documents (from the removal-reason counts)."""
    found: dict[str, dict[str, int]] = {}
    for r in run.get("reasons") or []:
        kind = AGAINST.get(r["reason"])
        if kind:
            for src, n in r["by_source"].items():
                found.setdefault(src, {"exact": 0, "fuzzy": 0})[kind] += n
    rows = []
    for src in sorted(found):
        stages = {row["stage"]: row for row in (run.get("funnel") or {}).get(src, [])}
        reached = (stages.get("exact_dedup") or {}).get("in")
        total = found[src]["exact"] + found[src]["fuzzy"]
        rows.append({"source": src, "reached_dedup": reached, **found[src], "present": total,
                     "share": total / reached if reached else None})
    return rows


def older_runs(runs: Runs) -> str:
    """'Already present in older runs': only for runs made with ``--dedup-against``."""
    blocks = []
    for r in runs:
        older = (r.get("meta") or {}).get("dedup_against") or []
        rows = already_present(r)
        if not older and not rows:
            continue
        label = f" ({esc(r.get('label'))})" if len(runs) > 1 else ""
        names = ", ".join(f"{o.get('run')} ({fmt(o.get('documents'))} indexed documents)" for o in older)
        body = table([th("source"), th("reached dedup"), th("exact copies"), th("near copies"),
                      th("already present"), th("share")],
                     [[td(x["source"]), td_num(x["reached_dedup"]), td_num(x["exact"]), td_num(x["fuzzy"]),
                       td_num(x["present"]), td("–" if x["share"] is None else f"{100 * x['share']:.1f}%")]
                      for x in rows]) if rows else "<p>No document was already present.</p>"
        blocks.append(f"<h3>Already present in older runs{label}</h3><p>Deduplicated against: "
                      f"{esc(names) or 'unknown runs'}. Documents removed because an exact or near copy "
                      "is in an older run (reasons <code>dedup_against/exact</code>, "
                      "<code>dedup_against/fuzzy</code>), per source; share = of the documents that "
                      "reached dedup.</p>" + body)
    return "".join(blocks)


def contamination(runs: Runs, charts: dict[str, Any]) -> str:
    if not any(r.get("contamination") for r in runs):
        return not_available("Contamination per task (stats/contamination.parquet)")
    keyed = []
    for r in runs:
        d: dict[tuple[str, str], int] = {}
        for row in r.get("contamination") or []:
            key = (row["task"], row["action"])
            d[key] = d.get(key, 0) + row["documents"]
        keyed.append(d)
    keys = sorted(_union([list(k) for k in keyed]))
    sources = sorted(_union([[row["source"] for row in r.get("contamination") or []] for r in runs]))

    def by_source(r: dict[str, Any], key: tuple[str, str], src: str) -> int:
        return sum(x["documents"] for x in r.get("contamination") or []
                   if (x["task"], x["action"]) == key and x["source"] == src)

    rows = [[td(task), td(action)] + metric_cells([k.get((task, action), 0) for k in keyed])
            + [td_stacked([by_source(r, (task, action), s) for r in runs]) for s in sources]
            for task, action in keys]
    headers = [th("task"), th("action")] + metric_headers("documents", _labels(runs)) + [th(s) for s in sources]
    return chart("contamination", charts) + table(headers, rows)
