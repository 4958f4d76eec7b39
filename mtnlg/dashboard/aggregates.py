"""Aggregates computed from a run's stats tables: funnel, reasons, histograms, languages.

Everything here is a pure function of plain rows or a ``pyarrow.Table`` and returns JSON-able
dicts, so the page embeds a few kilobytes of aggregates instead of one row per document (a run
can have millions).  Histogram edges are fixed (not data-dependent) so two runs are binned
identically and can be drawn side by side without rebinning.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any, Iterable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from curation.document import STAGES

TOTAL = "(all sources)"
# Lengths span 0 .. millions of characters: powers of two keep every decade readable.
LENGTH_EDGES = [0.0] + [float(2**k) for k in range(0, 31)]
# Quality scores are classifier probabilities in [0, 1].
QUALITY_EDGES = [round(i / 20, 2) for i in range(21)]
TOP_LANGUAGES = 12
NOT_IDENTIFIED = "(not identified)"


def counts_from_documents(documents: pa.Table) -> list[dict[str, Any]]:
    """The counts table (source, stage, outcome, reason, documents) recomputed from per-doc rows."""
    keys = ["source", "stage", "outcome", "reason"]
    present = [k for k in keys if k in documents.column_names]
    grouped = documents.select(present).group_by(present).aggregate([([], "count_all")])
    rows = []
    for row in grouped.to_pylist():
        out = {k: row.get(k) for k in keys}
        out["documents"] = int(row["count_all"])
        rows.append(out)
    return rows


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


def _encode(column: pa.ChunkedArray) -> tuple[np.ndarray, list[str]]:
    """Dictionary-encode a string column: integer codes (nulls -> -1) and the labels."""
    enc = pc.dictionary_encode(column).combine_chunks()
    codes = enc.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
    return codes, [str(v) for v in enc.dictionary.to_pylist()]


def _values(table: pa.Table, name: str) -> np.ndarray:
    """A numeric column as float64 with nulls as NaN."""
    return table.column(name).to_numpy(zero_copy_only=False).astype(np.float64)


def _binned(values: np.ndarray, groups: np.ndarray, n_groups: int, edges: list[float]) -> np.ndarray:
    """Counts per (group, bin); values past the last edge land in the last bin, NaN is skipped."""
    nbins = len(edges) - 1
    ok = ~np.isnan(values) & (groups >= 0)
    bins = np.clip(np.searchsorted(edges, values[ok], side="right") - 1, 0, nbins - 1)
    flat = np.bincount(groups[ok] * nbins + bins, minlength=n_groups * nbins)
    return flat.reshape(n_groups, nbins)


def histograms(documents: pa.Table, column: str, edges: list[float]) -> dict[str, Any] | None:
    """Histogram of ``column`` per source and for all sources, split kept vs removed.

    Dead letters have no text, so they are left out.  Returns None when the column is absent or
    entirely null (e.g. quality scores in a run without the classifier).
    """
    if column not in documents.column_names or documents.column(column).null_count == len(documents):
        return None
    src_codes, src_names = _encode(documents.column("source"))
    values = _values(documents, column)
    series: dict[str, dict[str, list[int]]] = {}
    for label in ("kept", "removed"):
        mask = pc.equal(documents.column("outcome"), label).combine_chunks().fill_null(False)
        mask = mask.to_numpy(zero_copy_only=False)
        groups = np.where(mask, src_codes, -1)
        per_source = _binned(values, groups, len(src_names), edges)
        for i, name in enumerate(src_names):
            series.setdefault(name, {})[label] = per_source[i].tolist()
        series.setdefault(TOTAL, {})[label] = per_source.sum(axis=0).tolist()
    return {"column": column, "edges": list(edges), "series": series}


def languages(documents: pa.Table) -> dict[str, dict[str, int]] | None:
    """Documents per language per source (top languages overall, the rest as ``other``)."""
    if "lang" not in documents.column_names:
        return None
    grouped = documents.select(["source", "lang"]).group_by(["source", "lang"]).aggregate(
        [([], "count_all")]).to_pylist()
    overall: dict[str, int] = defaultdict(int)
    for row in grouped:
        overall[row["lang"] or NOT_IDENTIFIED] += row["count_all"]
    top = {lang for lang, _ in sorted(overall.items(), key=lambda kv: -kv[1])[:TOP_LANGUAGES]}
    out: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for row in grouped:
        lang = row["lang"] or NOT_IDENTIFIED
        lang = lang if lang in top else "other"
        out[row["source"]][lang] += row["count_all"]
        out[TOTAL][lang] += row["count_all"]
    return {src: dict(langs) for src, langs in out.items()}


def kept_tokens(documents: pa.Table) -> dict[str, int] | None:
    """Tokens of kept documents per source, from the per-document rows."""
    if "tokens" not in documents.column_names:
        return None
    kept = documents.filter(pc.equal(documents.column("outcome"), "kept"))
    grouped = kept.select(["source", "tokens"]).group_by("source").aggregate([("tokens", "sum")])
    return {row["source"]: int(row["tokens_sum"] or 0) for row in grouped.to_pylist()}


# stats/histograms.parquet kinds -> the report key they fill (used when documents.parquet is absent).
HISTOGRAM_KINDS = {"chars": "length_chars", "words": "length_words", "quality_score": "quality",
                   "quality": "quality"}


def histograms_from_table(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Histograms from the pipeline's precomputed rows (kind, source, outcome, bin_lo, bin_hi, count).

    The pipeline chose those bins, so two runs may differ; the page then draws each run's bins
    as given under the first run's edges only when they match (see charts.histogram_chart).
    """
    by_kind: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        key = HISTOGRAM_KINDS.get(str(row.get("kind")))
        if key and row.get("outcome") in ("kept", "removed"):
            by_kind[key].append(row)
    out = {}
    for key, kind_rows in by_kind.items():
        edges = sorted({float(r["bin_lo"]) for r in kind_rows} | {float(r["bin_hi"]) for r in kind_rows})
        index = {e: i for i, e in enumerate(edges)}
        series: dict[str, dict[str, list[int]]] = {}
        for r in kind_rows:
            for src in (r["source"], TOTAL):
                bins = series.setdefault(src, {}).setdefault(r["outcome"], [0] * (len(edges) - 1))
                bins[index[float(r["bin_lo"])]] += int(r["count"])
        for per_outcome in series.values():
            for outcome in ("kept", "removed"):
                per_outcome.setdefault(outcome, [0] * (len(edges) - 1))
        out[key] = {"column": key, "edges": edges, "series": series}
    return out
