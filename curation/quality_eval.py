"""Metrics of a binary quality classifier: precision, recall, F1, ROC-AUC, score histograms.

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
