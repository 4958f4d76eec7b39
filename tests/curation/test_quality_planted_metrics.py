"""Precision and recall of the quality stage on planted pages, computed from stats rows."""
from __future__ import annotations

from curation.quality_eval import format_planted_metrics, planted_removal_metrics


def _row(doc_id: str, stage: str | None, score: float | None) -> dict:
    return {"id": doc_id, "stage": stage, "quality_score": score}


PRIMARY = {"lq1": "low_quality", "lq2": "low_quality", "lq3": "low_quality", "lq4": "low_quality",
           "spam1": "spam", "c1": "clean", "c2": "clean", "c3": "clean", "dup": "exact_duplicates"}
KINDS = {"lq1": "link_farm", "lq2": "link_farm", "lq3": "product_page", "lq4": "product_page",
         "spam1": "gibberish"}


def test_precision_and_recall_follow_the_rows():
    rows = [_row("lq1", "quality", 0.05), _row("lq2", "quality", 0.1), _row("lq3", None, 0.7),
            _row("lq4", "heuristics", None),           # removed before the classifier: not scored
            _row("spam1", "heuristics", None),
            _row("c1", "quality", 0.15), _row("c2", None, 0.9), _row("c3", "exact_dedup", 0.8),
            _row("dup", None, None)]                   # a source the classifier does not score
    m = planted_removal_metrics(rows, PRIMARY, KINDS)
    assert (m["planted"], m["scored"], m["removed"], m["true_positives"]) == (5, 3, 3, 2)
    assert m["precision"] == 2 / 3 and m["recall"] == 2 / 3
    assert m["false_removals"] == {"clean": 1}
    assert m["by_kind"] == {"link_farm": {"scored": 2, "removed": 2},
                            "product_page": {"scored": 1, "removed": 0}}
    text = format_planted_metrics(m)
    assert "precision 0.667" in text and "recall    0.667" in text and "clean=1" in text

    # Another run of the same corpus: the figures move with the rows, nothing is fixed.
    rows[2] = _row("lq3", "quality", 0.2)
    rows[5] = _row("c1", None, 0.6)
    m = planted_removal_metrics(rows, PRIMARY, KINDS)
    assert m["precision"] == 1.0 and m["recall"] == 1.0 and m["false_removals"] == {}


def test_nothing_removed_or_nothing_planted_is_not_a_number():
    m = planted_removal_metrics([_row("c1", None, 0.9)], PRIMARY)
    assert m["precision"] is None and m["recall"] is None
    assert "precision n/a" in format_planted_metrics(m)
