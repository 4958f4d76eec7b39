"""FuzzyDedupConfig: its checks (__post_init__) naming the field, and the derived band layout."""
from __future__ import annotations

import pytest

from curation.fuzzy_config import FuzzyDedupConfig, record_parameters
from curation.lsh import candidate_probability, lsh_params


@pytest.mark.parametrize("changes, field", [
    ({"num_perm": 0}, "num_perm"),
    ({"num_perm": True}, "num_perm"),
    ({"threshold": 1.5}, "threshold"),
    ({"threshold": 0.0}, "threshold"),
    ({"shingle": "byte"}, "shingle"),
    ({"verify": True}, "verify"),
    ({"verify": "approx"}, "verify"),
    ({"scheme": "sha1"}, "scheme"),
    ({"bands": 10}, "bands/rows"),
    ({"num_perm": 64, "bands": 20, "rows": 4}, "bands"),
    ({"rows": 0, "bands": 4}, "rows"),
    ({"false_negative_weight": 1.0}, "false_negative_weight"),
    ({"max_rounds": 0}, "max_rounds"),
    ({"max_bucket": -1}, "max_bucket"),
    ({"bucket_shards": 0}, "bucket_shards"),
    ({"min_shingles": 0}, "min_shingles"),
    ({"ngram": 0}, "ngram"),
    ({"seed": -1}, "seed"),
])
def test_checks_name_the_field(changes, field):
    with pytest.raises(ValueError, match=rf"^{field}: "):
        FuzzyDedupConfig(**changes)


def test_defaults_are_valid_and_reexported():
    from pipelines.config.job import FuzzyDedupConfig as Reexported

    assert Reexported is FuzzyDedupConfig
    cfg = FuzzyDedupConfig()
    assert cfg.verify == "exact" and cfg.bands is None


def test_band_layout_derived_unless_set():
    cfg = FuzzyDedupConfig()
    assert cfg.lsh_weights() == pytest.approx((0.05, 0.95))
    b, r = cfg.band_layout()
    assert (b, r) == lsh_params(0.8, 100, (0.05, 0.95)) == (13, 7)
    assert candidate_probability(0.8, b, r) >= 0.95  # the threshold itself is found
    # unverified candidates are edges: datasketch's balanced weights (its MinHashLSH layout)
    assert FuzzyDedupConfig(verify="none").band_layout() == lsh_params(0.8, 100) == (8, 12)
    assert FuzzyDedupConfig(false_negative_weight=0.5).band_layout() == (8, 12)
    assert FuzzyDedupConfig(bands=10, rows=10).band_layout() == (10, 10)
    for t in (0.6, 0.7, 0.85, 0.9):  # the default weighting keeps recall at other thresholds
        layout = FuzzyDedupConfig(threshold=t).band_layout()
        assert candidate_probability(t, *layout) >= 0.92
        above = [candidate_probability(t + (1 - t) * i / 100, *layout) for i in range(101)]
        assert sum(above) / len(above) >= 0.98  # pairs spread evenly over [t, 1]


def test_record_parameters_change_with_what_changes_the_records():
    base = record_parameters(FuzzyDedupConfig())
    assert base["bands"] == 13 and base["rows"] == 7 and base["num_perm"] == 100
    assert record_parameters(FuzzyDedupConfig(max_rounds=3, verify="estimated", false_negative_weight=0.95)) == base
    for changed in ({"seed": 2}, {"ngram": 4}, {"shingle": "char"}, {"bands": 10, "rows": 10}, {"scheme": "legacy"},
                    {"min_shingles": 5}):
        assert record_parameters(FuzzyDedupConfig(**changed)) != base
