"""The page's data from a run's aggregate tables: funnel, reasons, histograms, languages.

Everything here is a pure function of plain rows and returns JSON-able dicts.  The pipeline
writes the aggregates (``stats/counts.parquet``, ``stats/histograms.parquet`` on the fixed edges
of ``curation.stats``, ``stats/languages.parquet``); the page only lays them out, so it never
reads a per-document row (a run can have billions) and two runs line up bin for bin.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any, Iterable

from curation.document import STAGES
from curation.stats import LENGTH_EDGES, SCORE_EDGES, edges_for  # noqa: F401 (re-exported)

TOTAL = "(all sources)"
QUALITY_EDGES = SCORE_EDGES  # the pipeline's bins (curation.stats): the page never re-bins
TOP_LANGUAGES = 12
NOT_IDENTIFIED = "(not identified)"


def counts_from_run_json(run: dict[str, Any]) -> list[dict[str, Any]]:
    """Coarse counts from run.json alone (used when the stats Parquet files are missing)."""
    rows = []
    for source, info in (run.get("sources") or {}).items():
        rows.append({"source": source, "stage": "tokenize", "outcome": "kept", "reason": None,
                     "documents": int(info.get("kept", 0))})
        if info.get("dead_lettered"):
            rows.append({"source": source, "stage": "read", "outcome": "dead_letter",
                         "reason": None, "documents": int(info["dead_lettered"])})
        for key, n in (info.get("removed") or {}).items():
            stage, _, reason = key.partition("/")
            rows.append({"source": source, "stage": stage, "outcome": "removed",
                         "reason": reason or None, "documents": int(n)})
    return rows


def _stage_of(row: dict[str, Any]) -> str:
    # Dead letters never became documents, so they leave at the first stage whatever is recorded.
    if row.get("outcome") == "dead_letter" or not row.get("stage"):
        return "read"
    return row["stage"]


def funnel(counts: Iterable[dict[str, Any]], sources: list[str]) -> dict[str, list[dict[str, Any]]]:
    """Per source (and ``TOTAL``): one row per stage with documents in, removed, dead-lettered, out.

    ``in`` of ``read`` is every document read; ``out`` of ``tokenize`` is what was kept.  A stage
    name outside ``STAGES`` is counted at ``tokenize`` so that in - removed always reaches kept.
    """
    removed: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    dead: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    read: dict[str, int] = defaultdict(int)
    for row in counts:
        src, n = row["source"], int(row["documents"])
        read[src] += n
        read[TOTAL] += n
        if row.get("outcome") == "kept":
            continue
        stage = _stage_of(row)
        stage = stage if stage in STAGES else "tokenize"
        bucket = dead if row.get("outcome") == "dead_letter" else removed
        bucket[src][stage] += n
        bucket[TOTAL][stage] += n
    result = {}
    for src in list(sources) + [TOTAL]:
        remaining, rows = read.get(src, 0), []
        for stage in STAGES:
            r, d = removed[src][stage], dead[src][stage]
            rows.append({"stage": stage, "in": remaining, "removed": r, "dead_lettered": d,
                         "out": remaining - r - d})
            remaining -= r + d
        result[src] = rows
    return result


def reasons(counts: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Removal reasons (removed outcome only) with per-source counts, in stage order."""
    table: dict[tuple[str, str], dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for row in counts:
        if row.get("outcome") != "removed":
            continue
        key = (_stage_of(row), row.get("reason") or "(no reason)")
        table[key][row["source"]] += int(row["documents"])
    order = {s: i for i, s in enumerate(STAGES)}
    out = [{"stage": st, "reason": rs, "by_source": dict(by), "documents": sum(by.values())}
           for (st, rs), by in table.items()]
    out.sort(key=lambda r: (order.get(r["stage"], len(STAGES)), -r["documents"], r["reason"]))
    return out


def histograms_from_rows(rows: Iterable[dict[str, Any]], kind: str,
                         sources: Iterable[str] = ()) -> dict[str, Any] | None:
    """One histogram (``kind``: chars, words, quality_score, ...) from the pipeline's
    ``stats/histograms.parquet`` rows, per source and for all sources, kept vs removed, on the
    pipeline's fixed edges (``curation.stats``).  None when the run has no value of ``kind``
    (e.g. quality scores in a run without the classifier)."""
    edges = edges_for(kind)
    index = {float(e): i for i, e in enumerate(edges[:-1])}
    nbins = len(edges) - 1
    series: dict[str, dict[str, list[int]]] = {}
    found = False
    for src in list(sources) + [TOTAL]:
        series[src] = {"kept": [0] * nbins, "removed": [0] * nbins}
    for r in rows:
        if r.get("kind") != kind or r.get("outcome") not in ("kept", "removed"):
            continue
        i = index.get(float(r["bin_lo"]))
        if i is None:  # a bin the page does not know (another pipeline's edges): last bin
            i = nbins - 1 if float(r["bin_lo"]) >= edges[-1] else 0
        found = True
        for src in (r.get("source"), TOTAL):
            if src is None:
                continue
            bins = series.setdefault(src, {"kept": [0] * nbins, "removed": [0] * nbins})
            bins[r["outcome"]][i] += int(r["count"])
    return {"column": kind, "edges": list(edges), "series": series} if found else None


def languages_from_rows(rows: Iterable[dict[str, Any]]) -> dict[str, dict[str, int]] | None:
    """Documents per language per source from ``stats/languages.parquet`` (all outcomes; the top
    languages overall, the rest as ``other``)."""
    rows = list(rows)
    if not rows:
        return None
    per: dict[tuple[str, str], int] = defaultdict(int)
    overall: dict[str, int] = defaultdict(int)
    for r in rows:
        lang = r.get("lang") or NOT_IDENTIFIED
        per[(r["source"], lang)] += int(r["documents"])
        overall[lang] += int(r["documents"])
    top = {lang for lang, _ in sorted(overall.items(), key=lambda kv: -kv[1])[:TOP_LANGUAGES]}
    out: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for (src, lang), n in per.items():
        lang = lang if lang in top else "other"
        out[src][lang] += n
        out[TOTAL][lang] += n
    return {src: dict(langs) for src, langs in out.items()}
