"""Metrics of a binary quality classifier: precision, recall, F1, ROC-AUC, score histograms,
and precision/recall of a run's quality stage on the sample corpus's planted low-quality pages.

Plain numpy (no scikit-learn dependency). Labels are 1 for high quality (positive class) and 0
for low quality; scores are P(high quality).
"""
from __future__ import annotations

import numpy as np

BIN_WIDTH = 0.05  # docs/stats-schema.md: quality scores in 0.05-wide bins over [0, 1]
N_BINS = 20


def roc_auc(labels, scores) -> float:
    """Area under the ROC curve = P(score of a random positive > score of a random negative),
    ties counting one half (the Mann-Whitney U statistic with average ranks)."""
    y = np.asarray(labels, dtype=bool)
    s = np.asarray(scores, dtype=np.float64)
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    if n_pos == 0 or n_neg == 0:
        raise ValueError(f"roc_auc needs both classes, got {n_pos} positives and {n_neg} negatives")
    order = np.argsort(s, kind="mergesort")
    ranks = np.empty(len(s), dtype=np.float64)
    sorted_s = s[order]
    # average ranks (1-based) over runs of equal scores
    starts = np.r_[0, np.flatnonzero(np.diff(sorted_s)) + 1]
    ends = np.r_[starts[1:], len(s)]
    for a, b in zip(starts, ends):
        ranks[order[a:b]] = (a + 1 + b) / 2.0
    u = ranks[y].sum() - n_pos * (n_pos + 1) / 2.0
    return float(u / (n_pos * n_neg))


def score_bin(score: float) -> int:
    """Index of the 0.05-wide bin of a score in [0, 1] (1.0 falls in the last bin)."""
    return min(int(np.floor(score * N_BINS)), N_BINS - 1)


def histogram(scores) -> list[int]:
    """Counts per 0.05-wide bin over [0, 1]."""
    counts = [0] * N_BINS
    for s in scores:
        counts[score_bin(float(s))] += 1
    return counts


def binary_metrics(labels, scores, threshold: float = 0.5) -> dict:
    """Precision, recall, F1 (high quality as the positive class, predicted when
    ``score >= threshold``), accuracy, ROC-AUC and the score histogram of each class."""
    y = np.asarray(labels, dtype=bool)
    s = np.asarray(scores, dtype=np.float64)
    pred = s >= threshold
    tp = int((pred & y).sum())
    fp = int((pred & ~y).sum())
    fn = int((~pred & y).sum())
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {
        "examples": int(len(y)), "positives": int(y.sum()), "negatives": int((~y).sum()),
        "threshold": threshold,
        "precision": round(precision, 6), "recall": round(recall, 6), "f1": round(f1, 6),
        "accuracy": round(float((pred == y).mean()) if len(y) else 0.0, 6),
        "roc_auc": round(roc_auc(y, s), 6),
        "histogram": {
            "bin_width": BIN_WIDTH,
            "hq": histogram(s[y]),
            "lq": histogram(s[~y]),
        },
    }


def histogram_rows(metrics: dict, split: str = "heldout") -> list[dict]:
    """The per-class histogram as rows (``kind, split, label, bin_lo, bin_hi, count``)."""
    rows = []
    for label in ("hq", "lq"):
        for i, n in enumerate(metrics["histogram"][label]):
            rows.append({"kind": "quality_score", "split": split, "label": label,
                         "bin_lo": round(i * BIN_WIDTH, 2), "bin_hi": round((i + 1) * BIN_WIDTH, 2),
                         "count": n})
    return rows


PLANTED_LOW_QUALITY = ("low_quality", "spam")
"""Ground-truth categories of the sample corpus (``ground_truth.json``'s ``primary``) that are
low quality by construction: the pages the quality classifier should remove."""


def planted_removal_metrics(rows, primary: dict[str, str], kinds: dict[str, str] | None = None,
                            stage: str = "quality") -> dict:
    """Precision and recall of the quality stage on planted low-quality documents, from a run's
    per-document stats rows (``id``, ``stage``, ``quality_score``: ``RUN/stats/documents``) and
    the sample's ground truth (``primary``: id -> category; ``kinds``: id -> kind of planted page).

    Only documents the classifier scored count (a non-null ``quality_score``): documents removed
    earlier (language, heuristics) never reached it.  Positives are scored documents whose
    category is in ``PLANTED_LOW_QUALITY``; a removal is a row whose ``stage`` is ``stage``.
    ``precision`` is None when nothing was removed, ``recall`` None when no positive was scored."""
    kinds = kinds or {}
    scored = [r for r in rows if r.get("quality_score") is not None]
    removed = [r for r in scored if r.get("stage") == stage]
    positive = {r["id"] for r in scored if primary.get(r["id"]) in PLANTED_LOW_QUALITY}
    tp = sum(r["id"] in positive for r in removed)
    planted = [i for i, c in primary.items() if c in PLANTED_LOW_QUALITY]
    false_removals: dict[str, int] = {}
    for r in removed:
        if r["id"] not in positive:
            cat = primary.get(r["id"], "unknown")
            false_removals[cat] = false_removals.get(cat, 0) + 1
    by_kind: dict[str, dict[str, int]] = {}
    removed_ids = {r["id"] for r in removed}
    for i in sorted(positive):
        k = by_kind.setdefault(kinds.get(i, primary[i]), {"scored": 0, "removed": 0})
        k["scored"] += 1
        k["removed"] += i in removed_ids
    return {
        "planted": len(planted), "scored": len(positive), "removed": len(removed), "true_positives": tp,
        "precision": tp / len(removed) if removed else None,
        "recall": tp / len(positive) if positive else None,
        "false_removals": dict(sorted(false_removals.items())),
        "by_kind": dict(sorted(by_kind.items())),
    }


def format_planted_metrics(m: dict) -> str:
    """One paragraph for people: the figures of ``planted_removal_metrics``."""
    fmt = lambda v: "n/a" if v is None else f"{v:.3f}"  # noqa: E731
    kinds = ", ".join(f"{k} {v['removed']}/{v['scored']}" for k, v in m["by_kind"].items()) or "-"
    wrong = ", ".join(f"{k}={v}" for k, v in m["false_removals"].items()) or "none"
    return (f"precision {fmt(m['precision'])} ({m['true_positives']} of {m['removed']} removals are planted "
            f"low-quality pages; other removals: {wrong})\n"
            f"  recall    {fmt(m['recall'])} ({m['true_positives']} of {m['scored']} planted low-quality pages "
            f"the classifier scored; {m['planted'] - m['scored']} other planted pages were removed by earlier stages)\n"
            f"  removed by kind: {kinds}")
