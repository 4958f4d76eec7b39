"""The quality classifier as a filter: planted low-quality pages removed, real articles kept.

For each training seed S the demo's classifier is trained as `mtnlg demo` trains it
(`mtnlg quality train --config demo` on the sample corpus of seed S) and then judged, side by
side in one run, on:

  planted   the sample's Common Crawl pages that reach the quality stage (read with the demo
            config's extractor, then language id and heuristics, as the curate job does):
            precision/recall of removal on the planted low-quality pages, on the sample the
            model was trained on (as in the demo) and on the sample of seed S+1 (never seen)
  real      the English pages of trafilatura's evaluation set (real news and blog articles,
            ../shared/data/extract_eval), text extracted with trafilatura `extract()` defaults
            and with the demo config's extractor, kept by language id: the share the filter
            would remove (goal <= 2%)

at several thresholds and with GPT-3's Pareto rule (alpha 9, and NeMo Curator's 3; expected
removal = 1 - mean keep probability).  `--ablation` also trains and scores with the previous
feature view (symbol-only tokens kept) in the same run.

    .venv/bin/python -m bench.quality.quality_filter \
        --eval-dir ../shared/data/extract_eval [--seeds 0 1 2] [--ablation] [--list-removed]
"""
from __future__ import annotations

import argparse
import contextlib
import glob
import gzip
import io
import json
import os
import sys
import tempfile
from bench.common import REPO

THRESHOLDS = (0.5, 0.3, 0.2, 0.1)
PARETO_ALPHAS = (9.0, 3.0)


def reaching_quality(root: str) -> list[tuple[str, str]]:
    """(id, normalized text) of the sample's Common Crawl documents that reach the quality stage."""
    from curation.document import Document
    from curation.heuristics import HeuristicsConfig, apply_heuristics
    from curation.language import keep_language, make_identifier
    from curation.normalize import normalize_text
    from curation.readers import read_warc
    from infra.resources import config_path
    from pipelines.config.job import load_config

    cfg = load_config(config_path("sources", "demo"), input_root=root)
    ident, heur = make_identifier(cfg.language), HeuristicsConfig(**cfg.heuristics)
    out = []
    for spec in cfg.inputs:
        if spec.reader != "warc" or spec.source not in cfg.quality.sources:
            continue
        for path in sorted(f for p in spec.paths for f in glob.glob(p)):
            with open(path, "rb") as f:
                for rec in read_warc(f, path, spec.source, extractor=spec.extractor,
                                     id_path=os.path.relpath(path, root)):
                    if isinstance(rec, Document):
                        text = normalize_text(rec.text)
                        if keep_language(*ident.predict(text), cfg.language).keep and \
                                apply_heuristics(text, heur).keep:
                            out.append((rec.id, text))
    return out


def real_articles(eval_dir: str, extractor: str) -> list[tuple[str, str]]:
    """(url, normalized text) of the English evaluation pages that language id keeps."""
    from curation.language import LanguageConfig, keep_language, make_identifier
    from curation.normalize import normalize_text
    from curation.readers.warc import decode_html, extract_text

    meta = json.load(open(os.path.join(eval_dir, "evaldata.json"), encoding="utf-8"))["pages"]
    lang_cfg = LanguageConfig()
    ident = make_identifier(lang_cfg)
    out = []
    for name, page in sorted(meta.items()):
        if page["lang"] != "English":
            continue
        with gzip.open(os.path.join(eval_dir, "html", name), "rb") as f:
            html = decode_html(f.read(), "")
        if extractor == "trafilatura":
            import trafilatura

            text = trafilatura.extract(html) or ""
        else:
            text = extract_text(html, extractor)
        text = normalize_text(text)
        if text.strip() and keep_language(*ident.predict(text), lang_cfg).keep:
            out.append((page["url"], text))
    return out


def train(sample: str, out: str) -> str:
    from mtnlg.commands import quality as quality_cli

    with contextlib.redirect_stdout(io.StringIO()):
        assert quality_cli.main(["train", "--config", "demo", "--input-root", sample, "--output", out]) == 0
    return os.path.join(out, "model.bin")


def planted_figures(scores: list[float], ids: list[str], truth: dict, removed_by) -> dict:
    from curation.quality_eval import planted_removal_metrics

    rows = [{"id": i, "quality_score": s, "stage": "quality" if removed_by(i, s) else None}
            for i, s in zip(ids, scores)]
    return planted_removal_metrics(rows, truth["primary"], {d["id"]: d["kind"] for d in truth["low_quality"]})


def rules():
    from curation.quality import QualityConfig, keep_quality, pareto_keep_probability

    out = [(f"threshold {t}", lambda i, s, t=t: s < t, lambda s, t=t: float(s < t)) for t in THRESHOLDS]
    for a in PARETO_ALPHAS:
        cfg = QualityConfig(rule="pareto", alpha=a)
        out.append((f"pareto alpha {a:g}", lambda i, s, cfg=cfg: not keep_quality(i, s, cfg).keep,
                    lambda s, a=a: 1.0 - pareto_keep_probability(s, a)))
    return out


def run_seed(seed: int, tmp: str, real: dict, view: str, list_removed: bool, threshold: float) -> list[dict]:
    from curation.quality import QualityScorer
    from mtnlg.sample_data import write_sample_corpus

    samples = {}
    for s in (seed, seed + 1):
        root = os.path.join(tmp, f"sample{s}")
        if not os.path.exists(root):
            write_sample_corpus(root, seed=s)
        samples[s] = (json.load(open(os.path.join(root, "ground_truth.json"))), reaching_quality(root))
    scorer = QualityScorer(train(os.path.join(tmp, f"sample{seed}"), os.path.join(tmp, f"model{seed}-{view}")))
    planted = {s: (truth, [i for i, _ in docs], scorer.score_batch([t for _, t in docs]))
               for s, (truth, docs) in samples.items()}
    real_scores = {ex: scorer.score_batch([t for _, t in docs]) for ex, docs in real.items()}
    rows = []
    for name, removed_by, p_removed in rules():
        row = {"view": view, "seed": seed, "rule": name}
        for s, tag in ((seed, "in"), (seed + 1, "out")):
            truth, ids, scores = planted[s]
            m = planted_figures(scores, ids, truth, removed_by)
            row[f"{tag}_p"], row[f"{tag}_r"] = m["precision"], m["recall"]
        for ex, scores in real_scores.items():
            row[f"real_{ex}"] = sum(map(p_removed, scores)) / len(scores)
        rows.append(row)
    if list_removed:
        for ex, docs in real.items():
            for (url, text), s in zip(docs, real_scores[ex]):
                if s < threshold:
                    print(f"  removed [{view} seed {seed} {ex}] {s:.3f} {url[:70]} | {' '.join(text.split()[:12])}")
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    here = str(REPO)
    p.add_argument("--eval-dir", default=os.environ.get("EXTRACT_EVAL",
                                                        os.path.join(here, "..", "shared", "data", "extract_eval")))
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--ablation", action="store_true", help="also the previous view (symbol tokens kept)")
    p.add_argument("--list-removed", action="store_true", help="print the real pages removed at the config's threshold")
    args = p.parse_args(argv)

    import numpy as np

    import curation.quality as quality
    import curation.quality_train as quality_train
    from infra.resources import config_path
    from pipelines.config.job import load_config

    demo = load_config(config_path("sources", "demo"), check_paths=False)
    cc_extractor = next(s.extractor for s in demo.inputs if s.reader == "warc")
    real = {ex: real_articles(args.eval_dir, ex) for ex in ("trafilatura", cc_extractor)}
    print("real English articles kept by language id: " + ", ".join(f"{k} {len(v)}" for k, v in real.items()))
    views = {"symbol tokens dropped": quality.preprocess}
    if args.ablation:
        views["symbol tokens kept (before)"] = lambda text, max_chars=20_000: \
            text[:max_chars].lower().replace("\r", " ").replace("\n", " ").strip()
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench_quality_filter_") as tmp:
        for view, fn in views.items():
            quality.preprocess = quality_train.preprocess = fn  # training and scoring see the same view
            for seed in args.seeds:
                rows += run_seed(seed, tmp, real, view, args.list_removed, demo.quality.threshold)
        quality.preprocess = quality_train.preprocess = views["symbol tokens dropped"]

    fmt = lambda v: "  n/a" if v is None or np.isnan(v) else f"{v:.3f}"  # noqa: E731
    print(f"\nmeans over training seeds {args.seeds}; planted = low-quality pages reaching the classifier "
          f"(in: the training sample, as in the demo; out: the next seed's sample)")
    print(f"| features | rule | planted P in | R in | P out | R out | real removed: trafilatura | {cc_extractor} |")
    print("|---|---|---|---|---|---|---|---|")
    for view in views:
        for name, _, _ in rules():
            sel = [r for r in rows if r["view"] == view and r["rule"] == name]
            mean = lambda k: float(np.mean([np.nan if r[k] is None else r[k] for r in sel]))  # noqa: E731
            print(f"| {view} | {name} | {fmt(mean('in_p'))} | {fmt(mean('in_r'))} | {fmt(mean('out_p'))} "
                  f"| {fmt(mean('out_r'))} | {mean('real_trafilatura'):.1%} | {mean('real_' + cc_extractor):.1%} |")
    print(f"\nthe demo config's rule: {demo.quality.rule}, threshold {demo.quality.threshold}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
