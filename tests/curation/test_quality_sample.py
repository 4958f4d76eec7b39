"""Acceptance: the classifier trained on the embedded sample separates planted spam from
curated text, measured on a sample generated with ANOTHER seed (no document of it was trained on).

Floor 0.95: chance is 0.5; the demo config measures 1.00 here, and the same config with the
spam-carrying OpenWebText2 subset added to the positives measured 0.89, so 0.95 fails on that
kind of label-noise regression while leaving room for platform float differences.
"""
from __future__ import annotations

import json

import pytest

from mtnlg.commands import quality as quality_cli
from curation.normalize import normalize_text
from curation.quality import QualityScorer
from curation.quality_eval import roc_auc
from curation.quality_train import TrainInput, read_inputs
from infra.resources import config_path
from mtnlg.sample_data import write_sample_corpus

pytestmark = pytest.mark.slow
AUC_FLOOR = 0.95
CURATED = {"wikipedia", "books3", "gutenberg_pg19", "bookcorpus2", "pubmed_abstracts",
           "nih_exporter", "openwebtext2", "arxiv", "realnews", "cc_stories"}


def test_trained_classifier_separates_planted_spam_from_curated_text(tmp_path):
    train_root, eval_root = tmp_path / "s0", tmp_path / "s1"
    write_sample_corpus(str(train_root), seed=0)
    write_sample_corpus(str(eval_root), seed=1)
    out = tmp_path / "model"
    assert quality_cli.main(["train", "--config", config_path("quality", "demo"),
                             "--input-root", str(train_root), "--output", str(out)]) == 0
    card = json.loads((out / "model_card.json").read_text())
    assert card["metrics"]["heldout"]["roc_auc"] >= AUC_FLOOR

    # quality_train reads each file on its own: ids carry the base name, not the sample path
    truth = {f"{i.split('/', 1)[0]}/{i.rsplit('/', 1)[1]}": c for i, c in
             json.loads((eval_root / "ground_truth.json").read_text())["primary"].items()}
    specs = [TrainInput("pile", [str(eval_root / "pile" / "*.jsonl.zst")]),
             TrainInput("realnews", [str(eval_root / "realnews" / "*.jsonl")], source="realnews"),
             # CC spam pages are all boilerplate: only the raw page text holds them
             *[TrainInput("warc", [str(eval_root / "common_crawl" / snap / "*.warc.gz")],
                          source=slug, extractor="raw")
               for snap, slug in (("CC-2020-50", "cc_2020_50"), ("CC-2021-04", "cc_2021_04"))]]
    scorer = QualityScorer(str(out / "model.bin"))
    labels, texts = [], []
    for doc_id, source, text in read_inputs(specs):
        category = truth.get(doc_id)
        if category == "spam" or (category == "clean" and source in CURATED):
            labels.append(int(category == "clean"))
            texts.append(normalize_text(text))
    assert labels.count(0) >= 20, "every planted spam kind should be present"
    auc = roc_auc(labels, scorer.score_batch(texts))
    print(f"spam vs curated: ROC-AUC {auc:.4f} ({labels.count(0)} spam, {labels.count(1)} curated)")
    assert auc >= AUC_FLOOR
