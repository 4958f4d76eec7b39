"""Chart specifications built from one or two loaded runs.

The page's JavaScript only draws these specs (it computes nothing), so all the arithmetic is
here, in tested Python.  A spec is one of:

- ``{"type": "bars", "title", "categories": [...], "series": [{"name", "values"}], "unit"}``:
  grouped horizontal bars, one group per category, one bar per series;
- ``{"type": "hist", "title", "edges": [...], "series": [...], "log_x"}``: grouped vertical bars
  over bins ``[edges[i], edges[i+1])``;
- a series may carry a ``color``; otherwise the script uses its palette in order;
- a ``hist`` may carry ``markers: [{"value", "label"}]``: vertical lines (the quality threshold);
- ``{"type": "loglog", "title", "series": [{"name", "points": [[x, y], ...]}], "x_label", "y_label"}``:
  points and lines on log-log axes (the duplicate cluster-size distribution);
- ``{"type": "choice", "options": {label: spec}}``: a drop-down choosing one of several specs
  (per source), so the page shows one chart instead of one per source.
"""
from __future__ import annotations

from typing import Any

from curation.document import STAGES

from .aggregates import TOTAL


def _union(lists: list[list[str]]) -> list[str]:
    return list(dict.fromkeys(x for items in lists for x in items))


def stage_key(stage_reason: tuple[str, str]) -> tuple[int, str]:
    """Sort (stage, reason) in pipeline order, unknown stages last."""
    stage = stage_reason[0]
    return (STAGES.index(stage) if stage in STAGES else len(STAGES), stage)


def _sources(runs: list[dict[str, Any]]) -> list[str]:
    return _union([r["sources"] for r in runs])


def funnel_chart(runs: list[dict[str, Any]]) -> dict[str, Any] | None:
    if not any(r["funnel"] for r in runs):
        return None
    options = {}
    for src in [TOTAL] + _sources(runs):
        series = []
        for r in runs:
            rows = (r["funnel"] or {}).get(src)
            series.append({"name": r["label"], "values": [row["out"] for row in rows] if rows else [0] * len(STAGES)})
        options[src] = {"type": "bars", "title": f"Documents remaining after each stage: {src}",
                        "categories": [s if s != "tokenize" else "tokenize (kept)" for s in STAGES],
                        "series": series, "unit": "documents"}
    return {"type": "choice", "options": options}


def reasons_chart(runs: list[dict[str, Any]]) -> dict[str, Any] | None:
    if not any(r["reasons"] for r in runs):
        return None
    pairs = _union([[(x["stage"], x["reason"]) for x in r["reasons"] or []] for r in runs])
    keys = [f"{st}/{rs}" for st, rs in sorted(pairs, key=stage_key)]  # stable: keeps count order
    series = []
    for r in runs:
        by_key = {f"{x['stage']}/{x['reason']}": x["documents"] for x in r["reasons"] or []}
        series.append({"name": r["label"], "values": [by_key.get(k, 0) for k in keys]})
    return {"type": "bars", "title": "Documents removed, by stage/reason", "categories": keys,
            "series": series, "unit": "documents"}


def tokens_chart(runs: list[dict[str, Any]], manifest: dict[str, Any] | None) -> dict[str, Any] | None:
    if not any(r["tokens"] for r in runs):
        return None
    sources = _sources(runs)
    series = [{"name": r["label"], "values": [(r["tokens"] or {}).get(s) or 0 for s in sources]} for r in runs]
    if manifest:
        sources += [s for s in manifest["sources"] if s not in sources]
        for s in series:
            s["values"] += [0] * (len(sources) - len(s["values"]))
        for field in ("available_tokens", "target_tokens"):
            series.append({"name": f"manifest: {field.replace('_', ' ')}",
                           "values": [manifest["sources"].get(s, {}).get(field) or 0 for s in sources]})
    return {"type": "bars", "title": "Tokens per source (kept, incl. EOD)", "categories": sources,
            "series": series, "unit": "tokens"}


def share_chart(runs: list[dict[str, Any]], manifest: dict[str, Any] | None) -> dict[str, Any] | None:
    """Realized share of tokens per source against the blend's target weight, in percent."""
    if not manifest or not any(r["tokens"] for r in runs):
        return None
    sources = _union([_sources(runs), list(manifest["sources"])])
    weights = [manifest["sources"].get(s, {}).get("weight") or 0 for s in sources]
    wsum = sum(weights) or 1
    series = [{"name": "target weight", "values": [round(100 * w / wsum, 3) for w in weights]}]
    for r in runs:
        toks = r["tokens"] or {}
        total = sum(v or 0 for v in toks.values()) or 1
        series.append({"name": f"{r['label']}: share of run tokens",
                       "values": [round(100 * (toks.get(s) or 0) / total, 3) for s in sources]})
    return {"type": "bars", "title": "Share per source: blend target vs this run's tokens",
            "categories": sources, "series": series, "unit": "%"}


def _trim(edges: list[float], series: list[dict[str, Any]]) -> tuple[list[float], list[dict[str, Any]]]:
    """Drop leading and trailing bins that are empty in every series (fixed edges are wide)."""
    n = len(edges) - 1
    used = [i for i in range(n) if any(s["values"][i] for s in series)]
    if not used:
        return edges[:2], [{**s, "values": s["values"][:1]} for s in series]
    lo, hi = used[0], used[-1] + 1
    return edges[lo:hi + 1], [{**s, "values": s["values"][lo:hi]} for s in series]


# Histograms: the colour says kept (blue) or removed (orange); the shade says which run.
OUTCOME_COLORS = {("kept", 0): "#2b6cb0", ("removed", 0): "#dd6b20",
                  ("kept", 1): "#90cdf4", ("removed", 1): "#f6ad55"}


def _markers(runs: list[dict[str, Any]], key: str) -> list[dict[str, Any]]:
    """The quality threshold of each run (one line when both runs use the same)."""
    if key != "quality":
        return []
    values = [(r["label"], r.get("quality_threshold")) for r in runs if r.get("quality_threshold") is not None]
    if len({v for _, v in values}) == 1:
        return [{"value": values[0][1], "label": f"threshold {values[0][1]}"}]
    return [{"value": v, "label": f"threshold {v} [{label}]"} for label, v in values]


def histogram_chart(runs: list[dict[str, Any]], key: str, title: str, log_x: bool) -> dict[str, Any] | None:
    hists = [r[key] for r in runs]
    if not any(hists):
        return None
    edge_sets = {tuple(h["edges"]) for h in hists if h}
    if len(edge_sets) > 1:
        # Bins chosen by two different pipelines (histograms.parquet) cannot share one axis:
        # draw each run on its own edges, one drop-down entry per (source, run).
        options = {}
        for r in runs:
            sub = histogram_chart([r], key, f"{title} [{r['label']}]", log_x)
            options.update({f"{name} [{r['label']}]": spec for name, spec in (sub or {"options": {}})["options"].items()})
        return {"type": "choice", "options": options}
    edges = list(edge_sets.pop())
    markers = _markers(runs, key)
    options = {}
    for src in [TOTAL] + _sources(runs):
        series = []
        for i, (r, h) in enumerate(zip(runs, hists)):
            for outcome in ("kept", "removed"):
                values = ((h or {}).get("series", {}).get(src) or {}).get(outcome) or [0] * (len(edges) - 1)
                name = outcome if len(runs) == 1 else f"{r['label']}: {outcome}"
                series.append({"name": name, "values": values, "color": OUTCOME_COLORS[outcome, i]})
        if src != TOTAL and not any(any(s["values"]) for s in series):
            continue  # a source with nothing in this histogram would draw an empty chart
        e, s = _trim(edges, series) if not markers else (edges, series)  # keep the threshold in view
        options[src] = {"type": "hist", "title": f"{title}: {src}", "edges": e, "series": s,
                        "log_x": log_x, "unit": "documents", "markers": markers}
    return {"type": "choice", "options": options}


def languages_chart(runs: list[dict[str, Any]]) -> dict[str, Any] | None:
    if not any(r["languages"] for r in runs):
        return None
    options = {}
    for src in [TOTAL] + _sources(runs):
        per_run = [(r["languages"] or {}).get(src) or {} for r in runs]
        langs = sorted(_union([list(p) for p in per_run]), key=lambda l: -sum(p.get(l, 0) for p in per_run))
        options[src] = {"type": "bars", "title": f"Documents per identified language: {src}",
                        "categories": langs, "unit": "documents",
                        "series": [{"name": r["label"], "values": [p.get(l, 0) for l in langs]}
                                   for r, p in zip(runs, per_run)]}
    return {"type": "choice", "options": options}


def stage_seconds_chart(runs: list[dict[str, Any]]) -> dict[str, Any] | None:
    if not any(r.get("stage_seconds") for r in runs):
        return None
    stages = _union([[s for s in STAGES if s in (r.get("stage_seconds") or {})] for r in runs]
                    + [list(r.get("stage_seconds") or {}) for r in runs])
    return {"type": "bars", "title": "Worker seconds per stage (summed over workers)", "categories": stages, "unit": "s",
            "series": [{"name": r["label"], "values": [(r.get("stage_seconds") or {}).get(s, 0) for s in stages]}
                       for r in runs]}


def dedup_clusters_chart(runs: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Clusters per size, log-log, one series per (run, kind)."""
    if not any(r.get("dedup_clusters") for r in runs):
        return None
    series = []
    for r in runs:
        for kind, points in (r.get("dedup_clusters") or {}).items():
            name = kind if len(runs) == 1 else f"{r['label']}: {kind}"
            series.append({"name": name, "points": [p for p in points if p[0] > 0 and p[1] > 0]})
    return {"type": "loglog", "title": "Duplicate clusters by size (log-log)", "series": series,
            "x_label": "cluster size (documents)", "y_label": "clusters"}


def contamination_chart(runs: list[dict[str, Any]]) -> dict[str, Any] | None:
    if not any(r.get("contamination") for r in runs):
        return None
    per_run = []
    for r in runs:
        by_task: dict[str, int] = {}
        for row in r.get("contamination") or []:
            by_task[row["task"]] = by_task.get(row["task"], 0) + row["documents"]
        per_run.append(by_task)
    tasks = sorted(_union([list(t) for t in per_run]), key=lambda t: -sum(p.get(t, 0) for p in per_run))
    return {"type": "bars", "title": "Documents affected (removed or split), by eval task", "categories": tasks,
            "unit": "documents", "series": [{"name": r["label"], "values": [p.get(t, 0) for t in tasks]}
                                            for r, p in zip(runs, per_run)]}


def build_charts(runs: list[dict[str, Any]], manifest: dict[str, Any] | None) -> dict[str, Any]:
    """Every chart of the page by id; a chart whose data no run has is None."""
    return {
        "funnel": funnel_chart(runs),
        "reasons": reasons_chart(runs),
        "tokens": tokens_chart(runs, manifest),
        "share": share_chart(runs, manifest),
        "quality": histogram_chart(runs, "quality", "Quality score", log_x=False),
        "length_chars": histogram_chart(runs, "length_chars", "Characters per document", log_x=True),
        "length_words": histogram_chart(runs, "length_words", "Words per document", log_x=True),
        "languages": languages_chart(runs),
        "stage_seconds": stage_seconds_chart(runs),
        "dedup_clusters": dedup_clusters_chart(runs),
        "contamination": contamination_chart(runs),
    }
