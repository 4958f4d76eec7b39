"""The quality classifier core: metrics, keep rules, model checks, training determinism."""
from __future__ import annotations

import json
import os
import pickle
import random
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from quality_fixtures import BAD, GOOD, text, write_training_set  # noqa: E402

from mtnlg.commands import quality as quality_cli
from curation.quality import (QualityConfig, QualityModelError, QualityScorer, keep_quality, load_model, pareto_draw, pareto_keep_probability, preprocess)
from infra.hashing import file_sha256
from curation.quality_eval import binary_metrics, histogram, roc_auc
from curation.quality_train import load_train_config
from infra.config import ConfigError


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    root = tmp_path_factory.mktemp("quality")
    cfg = write_training_set(str(root))
    out = root / "model"
    assert quality_cli.main(["train", "--config", cfg, "--output", str(out)]) == 0
    return cfg, out


# -- metrics ----------------------------------------------------------------------------------
def test_roc_auc_equals_pairwise_definition():
    rnd = random.Random(1)
    for _ in range(20):
        labels = [rnd.random() < 0.5 for _ in range(40)] + [True, False]
        scores = [round(rnd.random(), 1) for _ in labels]  # coarse: many ties
        pos = [s for s, y in zip(scores, labels) if y]
        neg = [s for s, y in zip(scores, labels) if not y]
        pairwise = np.mean([1.0 if p > n else 0.5 if p == n else 0.0 for p in pos for n in neg])
        assert roc_auc(labels, scores) == pytest.approx(pairwise)


def test_roc_auc_needs_both_classes():
    with pytest.raises(ValueError, match="both classes"):
        roc_auc([1, 1], [0.2, 0.3])


def test_binary_metrics_worked_example():
    m = binary_metrics([1, 1, 1, 0, 0], [0.9, 0.6, 0.2, 0.7, 0.1], threshold=0.5)
    assert (m["precision"], m["recall"]) == (pytest.approx(2 / 3), pytest.approx(2 / 3))
    assert m["f1"] == pytest.approx(2 / 3)
    assert m["roc_auc"] == pytest.approx(4 / 6)
    assert m["histogram"]["hq"][18] == 1 and m["histogram"]["lq"][2] == 1
    assert histogram([0.0, 1.0, 0.05]) == [1, 1] + [0] * 17 + [1]


# -- keep rules -------------------------------------------------------------------------------
def test_pareto_draw_is_deterministic_and_lomax_distributed():
    ids = [f"cc_2020_50/f.warc.gz#{i}" for i in range(20_000)]
    draws = np.array([pareto_draw(i, 9.0) for i in ids])
    assert draws.tolist() == [pareto_draw(i, 9.0) for i in ids]  # reruns draw the same
    assert pareto_draw(ids[0], 9.0, seed=1) != draws[0]
    for x in (0.02, 0.1, 0.3):  # Lomax survival function (1 + x) ** -alpha
        assert np.mean(draws > x) == pytest.approx((1 + x) ** -9.0, abs=0.01)


@pytest.mark.parametrize("alpha", [3.0, 9.0])
def test_pareto_rule_keeps_the_expected_fraction(alpha):
    """Kept fraction = mean of (2 - s) ** -alpha, within 4 binomial standard deviations."""
    rnd = random.Random(7)
    cfg = QualityConfig(rule="pareto", alpha=alpha)
    docs = [(f"cc_2021_04/p.warc.gz#{i}", rnd.betavariate(5, 1.5)) for i in range(20_000)]
    kept = sum(keep_quality(i, s, cfg).keep for i, s in docs)
    probs = np.array([pareto_keep_probability(s, alpha) for _, s in docs])
    sd = np.sqrt((probs * (1 - probs)).sum())
    assert abs(kept - probs.sum()) < 4 * sd, (kept, probs.sum(), sd)
    assert keep_quality("x", 1.0, cfg).keep  # score 1 always kept: pareto draws are > 0


def test_threshold_rule():
    cfg = QualityConfig(rule="threshold", threshold=0.6)
    assert keep_quality("a", 0.6, cfg).keep
    assert keep_quality("a", 0.59, cfg).reason == "low_quality"


@pytest.mark.parametrize("kw, setting", [({"rule": "top"}, "rule"),
                                         ({"threshold": 1.5}, "threshold"),
                                         ({"alpha": 0}, "alpha"),
                                         ({"enabled": True}, "model_path")])
def test_config_errors_name_the_setting(kw, setting):
    with pytest.raises(ValueError, match=f"^{setting}: "):
        QualityConfig(**kw)


# -- model checks and scoring -----------------------------------------------------------------
def test_missing_corrupt_and_foreign_models_fail_clearly(tmp_path):
    with pytest.raises(QualityModelError, match="does not exist"):
        load_model(str(tmp_path / "nope.bin"))
    bad = tmp_path / "bad.bin"
    bad.write_bytes(b"\x00not a fasttext model" * 10)
    with pytest.raises(QualityModelError, match="not a readable fastText model"):
        load_model(str(bad))
    from curation.language import bundled_model_path

    with pytest.raises(QualityModelError, match="labels"):
        load_model(bundled_model_path())  # lid.176: a fastText model, but not a quality model


def test_trained_model_scores_and_pickles(trained):
    _, out = trained
    scorer = QualityScorer(str(out / "model.bin"))
    good, bad = scorer.score_batch([text(GOOD, 999), text(BAD, 998)])
    assert 0.0 <= bad < 0.5 < good <= 1.0
    assert scorer.score("") == 0.0
    clone = pickle.loads(pickle.dumps(scorer))
    assert clone._model is None and clone.score(text(GOOD, 999)) == good
    with pytest.raises(QualityModelError, match="changed"):
        QualityScorer(str(out / "model.bin"), expected_sha256="0" * 64).load()


def test_preprocess_is_one_lowercase_line():
    assert preprocess("Hello\r\n\nWorld A\n", 100) == "hello   world a"
    assert preprocess("abcdef", 3) == "abc"


def test_preprocess_drops_tokens_made_only_of_symbols():
    """Table pipes, bullets and dashes are an extractor's layout, not words: an article laid out
    by another extractor gets the same features."""
    table = "| Team | Wins |\n| --- | --- |\n| Leeds | 4 |"
    assert preprocess(table).split() == ["team", "wins", "leeds", "4"]
    assert preprocess("• One\t- two –  three © 2020 :)").split() == ["one", "two", "three", "2020"]
    # words that carry symbols keep them: only whole symbol tokens go
    assert preprocess("e-mail, (yes) C++ $5 -x").split() == ["e-mail,", "(yes)", "c++", "$5", "-x"]


# -- training ---------------------------------------------------------------------------------
def test_training_is_deterministic_and_writes_a_card(trained, tmp_path):
    cfg, out = trained
    assert quality_cli.main(["train", "--config", cfg, "--output", str(tmp_path)]) == 0
    assert file_sha256(str(tmp_path / "model.bin")) == file_sha256(str(out / "model.bin"))
    card = json.loads((out / "model_card.json").read_text())
    assert card["model"]["sha256"] == file_sha256(str(out / "model.bin"))
    assert card["data"]["sizes"] == {"train": {"hq": 45, "lq": 45}, "heldout": {"hq": 15, "lq": 15}}
    m = card["metrics"]["heldout"]
    assert m["roc_auc"] == 1.0 and m["f1"] == 1.0
    assert sum(m["histogram"]["hq"]) == 15 and sum(m["histogram"]["lq"]) == 15
    assert "ROC-AUC" in (out / "MODEL_CARD.md").read_text()


def test_eval_command_writes_run_stats(trained, tmp_path, capsys):
    _, out = trained
    run = tmp_path / "run"
    assert quality_cli.main(["eval", "--model", str(out / "model.bin"), "--run", str(run)]) == 0
    assert "roc_auc=1.000" in capsys.readouterr().out
    stats = json.loads((run / "stats" / "quality_eval.json").read_text())
    assert stats["examples"] == 30 and stats["sha256"] == file_sha256(str(out / "model.bin"))
    import pandas as pd

    hist = pd.read_parquet(run / "stats" / "quality_eval_histograms.parquet")
    assert hist.groupby("label")["count"].sum().to_dict() == {"hq": 15, "lq": 15}


def test_train_config_errors(tmp_path):
    p = tmp_path / "q.yaml"
    p.write_text("positives: [{reader: parquet, paths: [x]}]\nnegatives: []\n")
    with pytest.raises(ConfigError, match="negatives"):
        load_train_config(str(p))
    p.write_text("positives: [{reader: pdf, paths: [x]}]\nnegatives: [{reader: parquet, paths: [y]}]\n")
    with pytest.raises(ConfigError, match=r"positives\[0\].reader"):
        load_train_config(str(p))
    assert quality_cli.main(["eval", "--model", str(tmp_path / "none.bin")]) == 2
