"""`mtnlg quality train|eval`: train the quality classifier and measure it.

    mtnlg quality train --config demo --input-root SAMPLE --output OUT
    mtnlg quality eval --model OUT/model.bin [--heldout OUT/heldout.jsonl.gz] [--run RUN]

``train`` writes OUT/model.bin, OUT/heldout.jsonl.gz, OUT/model_card.json and OUT/MODEL_CARD.md
(data used, sizes, hyper-parameters, held-out metrics, sha256). ``eval`` scores a held-out set
(default: the one next to the model), prints precision, recall, F1, ROC-AUC and the score
histogram per class, updates the model card, and with ``--run RUN`` writes the same figures to
``RUN/stats/quality_eval.json`` and ``RUN/stats/quality_eval_histograms.parquet``.
Also ``python -m mtnlg.commands.quality ...``.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

from curation.quality import QualityModelError, QualityScorer
from infra.hashing import file_sha256
from curation.quality_eval import binary_metrics, histogram_rows
from infra.resources import ResourceError, config_path
from curation.quality_train import (build_examples, load_train_config, model_card, read_heldout,
                                    train_model, write_heldout)
from infra.config import ConfigError

MODEL, HELDOUT, CARD, CARD_MD = "model.bin", "heldout.jsonl.gz", "model_card.json", "MODEL_CARD.md"


def evaluate(model_path: str, examples, threshold: float = 0.5) -> dict:
    scores = QualityScorer(model_path).score_batch([e.text for e in examples])
    return binary_metrics([e.label for e in examples], scores, threshold)


def train(config: str, output: str, input_root: str | None = None) -> dict:
    """Build the labelled set, train, evaluate on the held-out split, write the outputs."""
    try:
        config = config_path("quality", config)  # a shipped name (demo) or a path
    except ResourceError as e:
        raise ConfigError(str(e)) from None
    cfg = load_train_config(config, input_root)
    split, data = build_examples(cfg)
    os.makedirs(output, exist_ok=True)
    model_path = os.path.join(output, MODEL)
    train_model(split["train"], cfg.fasttext, model_path)
    write_heldout(os.path.join(output, HELDOUT), split["heldout"])
    card = model_card(cfg, data, evaluate(model_path, split["heldout"]), model_path)
    write_card(output, card)
    return card


def write_card(folder: str, card: dict) -> None:
    with open(os.path.join(folder, CARD), "w", encoding="utf-8") as f:
        json.dump(card, f, indent=2)
        f.write("\n")
    with open(os.path.join(folder, CARD_MD), "w", encoding="utf-8") as f:
        f.write(card_markdown(card))


def card_markdown(card: dict) -> str:
    m, d = card["metrics"]["heldout"], card["data"]
    lines = [f"# Quality classifier: {card['name']}", "",
             f"- model: `{card['model']['path']}` ({card['model']['bytes']} bytes), "
             f"sha256 `{card['model']['sha256']}`",
             f"- score: {card['model']['score']}; fastText {card['fasttext']}",
             f"- positives (hq): {[s['sources'] or s['source'] or s['reader'] for s in d['positives']]}",
             f"- negatives (lq): {[s['source'] or s['sources'] or s['reader'] for s in d['negatives']]}",
             f"- read: {d['read']}; too short: {d['too_short']}; duplicates: {d['duplicates']}; "
             f"in both classes (dropped): {d['conflicting']}",
             f"- sizes after balancing: {d['sizes']}", "",
             f"## Held-out metrics (hq predicted at score >= {m['threshold']})", "",
             "| examples | precision | recall | F1 | accuracy | ROC-AUC |", "|---|---|---|---|---|---|",
             f"| {m['examples']} | {m['precision']:.3f} | {m['recall']:.3f} | {m['f1']:.3f} "
             f"| {m['accuracy']:.3f} | {m['roc_auc']:.3f} |", "",
             "## Score histogram (0.05-wide bins over [0, 1])", "", "```",
             *histogram_text(m), "```", ""]
    return "\n".join(lines)


def histogram_text(m: dict) -> list[str]:
    lines = [f"{'bin':<11}{'hq':>5}{'lq':>5}"]
    for i, (a, b) in enumerate(zip(m["histogram"]["hq"], m["histogram"]["lq"])):
        lines.append(f"{i * 0.05:.2f}-{(i + 1) * 0.05:.2f}{a:>6}{b:>5}")
    return lines


def eval_command(model: str, heldout: str | None, run: str | None, threshold: float) -> dict:
    folder = os.path.dirname(os.path.abspath(model))
    heldout = heldout or os.path.join(folder, HELDOUT)
    if not os.path.exists(heldout):
        raise ConfigError(f"--heldout: {heldout!r} does not exist")
    metrics = evaluate(model, read_heldout(heldout), threshold)
    card_path = os.path.join(folder, CARD)
    if os.path.exists(card_path):  # keep the card's metrics in step with the latest evaluation
        with open(card_path, encoding="utf-8") as f:
            card = json.load(f)
        if card.get("model", {}).get("sha256") == file_sha256(model):
            card["metrics"]["heldout"] = metrics
            write_card(folder, card)
    if run:
        write_run_eval(run, model, heldout, metrics)
    return metrics


def write_run_eval(run: str, model: str, heldout: str, metrics: dict) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    stats = os.path.join(run, "stats")
    os.makedirs(stats, exist_ok=True)
    with open(os.path.join(stats, "quality_eval.json"), "w", encoding="utf-8") as f:
        json.dump({"model": os.path.abspath(model), "sha256": file_sha256(model),
                   "heldout": os.path.abspath(heldout), **metrics}, f, indent=2)
    pq.write_table(pa.Table.from_pylist(histogram_rows(metrics)),
                   os.path.join(stats, "quality_eval_histograms.parquet"))


def _parse(argv):
    p = argparse.ArgumentParser(prog="mtnlg quality", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    t = sub.add_parser("train", help="build the labelled set, train fastText, write model + card")
    t.add_argument("--config", required=True,
                   help="training config: a shipped name (demo) or a YAML path")
    t.add_argument("--output", required=True, help="folder for model.bin, heldout, model card")
    t.add_argument("--input-root", default=None, help="root of relative input globs")
    e = sub.add_parser("eval", help="precision/recall/F1/ROC-AUC + histograms on the held-out split")
    e.add_argument("--model", required=True, help="model.bin written by `mtnlg quality train`")
    e.add_argument("--heldout", default=None, help="held-out JSONL (default: next to the model)")
    e.add_argument("--run", default=None, help="also write RUN/stats/quality_eval*.{json,parquet}")
    e.add_argument("--threshold", type=float, default=0.5, help="score at which hq is predicted")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    try:
        if args.command == "train":
            card = train(args.config, args.output, args.input_root)
            print(card_markdown(card))
            print(f"wrote {os.path.join(args.output, MODEL)} and {os.path.join(args.output, CARD)}")
        else:
            m = eval_command(args.model, args.heldout, args.run, args.threshold)
            print(f"examples={m['examples']} precision={m['precision']:.3f} recall={m['recall']:.3f} "
                  f"f1={m['f1']:.3f} roc_auc={m['roc_auc']:.3f}")
            print("\n".join(histogram_text(m)))
    except (ConfigError, QualityModelError) as e:
        print(f"mtnlg quality {args.command}: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
