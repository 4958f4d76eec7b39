"""Quality scoring throughput: documents/s per core, pipeline vs fastText's own predict.

Same texts, same model, same process, one core each:
  fasttext batch  model.predict(list of preprocessed lines, k=2): fastText alone (the peer)
  fasttext line   model.predict(line, k=2) one document at a time
  QualityFn       the quality stage's DoFn (preprocess, predict, copy, keep rule, counters),
                  called directly: the per-document overhead of our code
  Beam identity   Create(docs) | Map(identity) on the FnApiRunner, one in-process worker:
                  what Beam costs with no stage at all
  Beam 1 worker   Create(docs) | ParDo(QualityFn), same runner: the step inside Beam

    .venv/bin/python -m bench.quality.quality [--docs 3000] [--repeat 3]

The model is trained on the embedded sample (data_manifests/quality/demo.yaml); the texts are
the sample's documents (all sources, as the readers produce them), cycled to --docs.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

def _best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--docs", type=int, default=3000)
    p.add_argument("--repeat", type=int, default=5)
    args = p.parse_args(argv)

    import apache_beam as beam

    from mtnlg.commands import quality as quality_cli
    from curation.document import Document
    from curation.normalize import normalize_text
    from curation.quality import QualityConfig, QualityScorer, preprocess
    from infra.hashing import file_sha256
    from curation.quality_train import TrainInput, read_inputs
    from infra.resources import config_path
    from mtnlg.sample_data import write_sample_corpus
    from pipelines.filters.quality import QualityFn
    from pipelines.plumbing.outputs import REMOVED

    tmp = tempfile.mkdtemp(prefix="bench_quality_")
    sample, out = os.path.join(tmp, "sample"), os.path.join(tmp, "model")
    write_sample_corpus(sample, seed=0)
    with open(os.devnull, "w") as devnull:
        stdout, sys.stdout = sys.stdout, devnull
        try:
            quality_cli.main(["train", "--config", config_path("quality", "demo"),
                              "--input-root", sample, "--output", out])
        finally:
            sys.stdout = stdout
    model_path = os.path.join(out, "model.bin")
    specs = [TrainInput("pile", [os.path.join(sample, "pile", "*.jsonl.zst")]),
             TrainInput("warc", [os.path.join(sample, "common_crawl", "*", "*.warc.gz")],
                        source="cc_2020_50", extractor="justext")]
    base = [normalize_text(t) for _, _, t in read_inputs(specs) if t.strip()]
    texts = [base[i % len(base)] for i in range(args.docs)]
    docs = [Document(f"cc_2020_50/bench#{i}", "cc_2020_50", t) for i, t in enumerate(texts)]
    cfg = QualityConfig(enabled=True, model_path=model_path, rule="pareto")
    lines = [preprocess(t, cfg.max_chars) for t in texts]
    model = QualityScorer(model_path).load()
    chars = sum(len(t) for t in texts)

    fn = QualityFn(cfg, file_sha256(model_path))
    fn.setup()

    def run_fn():
        for d in docs:
            for _ in fn.process(d):
                pass

    def run_beam():
        with beam.Pipeline(runner="FnApiRunner") as bp:
            _ = bp | beam.Create(docs, reshuffle=False) | beam.ParDo(QualityFn(cfg)).with_outputs(REMOVED, main="kept")

    def run_beam_identity():
        with beam.Pipeline(runner="FnApiRunner") as bp:
            _ = bp | beam.Create(docs, reshuffle=False) | beam.Map(lambda d: d)

    results = {
        "fasttext batch": _best(lambda: model.predict(lines, k=2), args.repeat),
        "fasttext line": _best(lambda: [model.predict(x, k=2) for x in lines], args.repeat),
        "QualityFn": _best(run_fn, args.repeat),
        "Beam identity": _best(run_beam_identity, args.repeat),
        "Beam 1 worker": _best(run_beam, args.repeat),
    }
    peer = results["fasttext batch"]
    print(f"{args.docs} documents, {chars / args.docs:.0f} chars/doc on average, best of {args.repeat}, "
          f"one core each (os.cpu_count()={os.cpu_count()})")
    print(f"{'path':<16}{'seconds':>9}{'docs/s/core':>13}{'vs fastText batch':>19}")
    for name, sec in results.items():
        print(f"{name:<16}{sec:>9.3f}{args.docs / sec:>13.0f}{sec / peer:>18.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
