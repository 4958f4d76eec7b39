"""Small, consistent measures for stats rows and the fixed histogram bins (docs/run-layout.md).

The pipeline bins every document's sizes and scores into these fixed edges and writes only the
counts (``stats/histograms.parquet``); the dashboard draws those counts on the same edges, so two
runs line up bin for bin and nobody re-reads per-document rows to draw a chart.
"""
from __future__ import annotations

import bisect
import json
import math
from collections import defaultdict
from typing import Iterable

from curation.document import Document

LENGTH_EDGES = [0.0] + [float(2 ** k) for k in range(0, 31)]
"""Sizes (characters, words, tokens): [0, 1), [1, 2), [2, 4), ... [2^29, 2^30]; larger values
land in the last bin."""
SCORE_EDGES = [round(i / 20, 2) for i in range(21)]
"""Scores in [0, 1] (language id confidence, quality probability): 0.05-wide bins."""
HISTOGRAM_KINDS = ("chars", "words", "tokens", "lang_score", "quality_score")


def count_words(text: str) -> int:
    """Whitespace-separated words, the ``words`` column of the per-document stats."""
    return len(text.split())


def count_chars(text: str) -> int:
    """Unicode code points, the ``chars`` column."""
    return len(text)


def length_stats(doc: Document) -> dict[str, int]:
    """``{"chars": ..., "words": ...}`` of a document's current text."""
    return {"chars": count_chars(doc.text), "words": count_words(doc.text)}


def edges_for(kind: str) -> list[float]:
    return SCORE_EDGES if kind.endswith("score") else LENGTH_EDGES


def histogram_bin(kind: str, value: float | None) -> tuple[float, float] | None:
    """The ``(lo, hi)`` bin of ``value`` on ``kind``'s edges; None for a missing value.
    Values below the first edge land in the first bin, above the last in the last."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    edges = edges_for(kind)
    i = min(max(bisect.bisect_right(edges, value) - 1, 0), len(edges) - 2)
    return edges[i], edges[i + 1]


# -- aggregates of per-document stats rows (the pipeline combines them; the dashboard reads them)
def aggregate_keys(row: dict, grid=None) -> Iterable[tuple[tuple, int]]:
    """What one per-document stats row adds to the aggregates: its count key
    ``(source, stage, outcome, reason)``, its language, its histogram bins (dead letters have
    no text, so no bins), its personal-data matches per kind and, given a
    ``curation.threshold_grid.GridSpec``, its cell of the filter-score grid."""
    yield ("count", row["source"], row["stage"], row["outcome"], row["reason"]), 1
    yield ("lang", row["source"], row["outcome"], row["lang"]), 1
    if row["outcome"] == "dead_letter":
        return
    for kind in HISTOGRAM_KINDS:
        b = histogram_bin(kind, row.get(kind))
        if b is not None:
            yield ("hist", kind, row["source"], row["outcome"], b[0], b[1]), 1
    for sp_kind, n in _pii_counts(row.get("pii_spans")).items():
        yield ("pii", row["source"], row["outcome"], sp_kind, "documents"), 1
        yield ("pii", row["source"], row["outcome"], sp_kind, "matches"), n
    if grid is not None:
        yield from grid.aggregate_keys(row)


def _pii_counts(spans) -> dict[str, int]:
    out: dict[str, int] = {}
    for sp in spans or ():
        out[sp["kind"]] = out.get(sp["kind"], 0) + 1
    return out


def _key_order(kv) -> str:
    return json.dumps(kv[0], default=str)


def merge_partials(partials: Iterable[Iterable]) -> dict[str, list[dict]]:
    """Partial aggregates (``[key, n]`` pairs, from any number of workers or stages) -> the rows
    of the aggregate tables: ``counts``, ``histograms``, ``languages`` and ``read``."""
    total: dict[tuple, int] = defaultdict(int)
    for items in partials:
        for key, n in items:
            total[tuple(key)] += int(n)
    out: dict[str, list[dict]] = {"counts": [], "histograms": [], "languages": [], "read": [],
                                  "pii": [], "grid": []}
    pii: dict[tuple, dict] = {}
    grid: dict[tuple, dict] = {}
    for key, n in sorted(total.items(), key=_key_order):
        if key[0] == "count":
            out["counts"].append(dict(zip(("source", "stage", "outcome", "reason"), key[1:]), documents=n))
        elif key[0] == "hist":
            out["histograms"].append(dict(zip(("kind", "source", "outcome", "bin_lo", "bin_hi"), key[1:]),
                                          count=n))
        elif key[0] == "lang":
            out["languages"].append(dict(zip(("source", "outcome", "lang"), key[1:]), documents=n))
        elif key[0] == "read":
            out["read"].append({"source": key[1], "read": n})
        elif key[0] == "pii":
            row = pii.setdefault(key[1:4], dict(zip(("source", "outcome", "kind"), key[1:4]),
                                                documents=0, matches=0))
            row[key[4]] = n
        elif key[0] == "grid":
            row = grid.setdefault(key[2:], {"source": key[2], "fate": key[3], "cell": key[4],
                                            "documents": 0, "tokens": 0, "chars": 0})
            row[key[1]] = n
    out["pii"] = [pii[k] for k in sorted(pii)]
    out["grid"] = [grid[k] for k in sorted(grid)]
    return out


def table_partials(name: str, row: dict) -> Iterable[tuple[tuple, int]]:
    """The partial-aggregate keys a row of aggregate table ``name`` stands for (the inverse of
    ``merge_partials``), so a tool can update a finished run's tables as a stage would."""
    if name == "counts":
        yield ("count", row["source"], row["stage"], row["outcome"], row["reason"]), int(row["documents"])
    elif name == "histograms":
        yield ("hist", row["kind"], row["source"], row["outcome"], row["bin_lo"], row["bin_hi"]), int(row["count"])
    elif name == "languages":
        yield ("lang", row["source"], row["outcome"], row["lang"]), int(row["documents"])
    elif name == "read":
        yield ("read", row["source"]), int(row["read"])
    elif name == "pii":
        for measure in ("documents", "matches"):
            yield ("pii", row["source"], row["outcome"], row["kind"], measure), int(row[measure])
    elif name == "grid":
        for measure in ("documents", "tokens", "chars"):
            yield ("grid", measure, row["source"], row["fate"], row["cell"]), int(row[measure])
    else:
        raise ValueError(f"unknown aggregate table {name!r}")


def aggregate_rows(rows: Iterable[dict], grid=None) -> dict[str, list[dict]]:
    """The aggregate tables of a list of per-document rows (tests and small tools)."""
    total: dict[tuple, int] = defaultdict(int)
    for row in rows:
        for key, n in aggregate_keys(row, grid):
            total[key] += n
    return merge_partials([list(total.items())])
