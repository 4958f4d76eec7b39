"""CPU-hours per TB of compressed WARC through the whole curate job, from real-size pages.

    .venv/bin/python -m bench.job.cost_per_tb --extractor justext
    .venv/bin/python -m bench.job.cost_per_tb --extractor resiliparse
    # with the job's own per-document overhead (bench.job.scale on the sample, this tree):
    .venv/bin/python -m bench.job.cost_per_tb --extractor justext \\
        --sample /tmp/s25k --job-cpu-ms-per-doc 3.1

1. The 990 real pages of ``../shared/data/extract_eval`` (trafilatura's evaluation set, real
   sizes: the median page is ~100 KB of HTML) become one Common-Crawl-style WARC (a request and
   a response record per page, one gzip member per record, as ``mtnlg sample-data`` writes
   them): its compressed size gives pages per TB.
2. Each stage of the curate job runs in this process on one core, on every page that reaches
   it, with the demo config's settings and the job's own code: read (WARC parsing + HTML
   extraction with ``--extractor``, any name ``curation.readers.read_warc`` accepts), normalize,
   personal-data replacement (when the demo config enables it), language id, heuristics, dedup records (MinHash, exact-Jaccard shingle sets), the
   decontamination scan (the sample's eval tasks, as the demo), tokenization (GPT-2).  CPU
   seconds per page and stage (``time.process_time``; best of ``--repeats``) are the per-core
   rates.  Two projections: every page through every stage (a multilingual config: nothing
   filtered before dedup), and with the demo config's filters on these pages (English only:
   most of this set is German, so most pages stop after language id).
3. What the Beam job adds per document (shuffles, part files, stats rows, counters) is not in
   (2): with ``--sample DIR`` the same in-process stages run on the sample corpus, and
   ``--job-cpu-ms-per-doc`` (the whole job's CPU per document on that sample, from
   ``bench.job.scale``) minus that in-process cost is added per page (a per-document cost: on
   pages 25x longer than the sample's documents it is conservative only as far as it does not
   grow with text size; the part files do, so the figure is a lower bound on that share).

CPU-hours per TB = pages per TB x (sum over stages of CPU per page x share of pages reaching
the stage + job overhead per page) / 3600.
"""
from __future__ import annotations

import argparse
import glob
import gzip
import json
import random
import statistics
import sys
import time
from datetime import datetime
from pathlib import Path
from bench.common import REPO


EVAL = next((d / "shared" / "data" / "extract_eval" for d in REPO.parents
             if (d / "shared" / "data" / "extract_eval").is_dir()), REPO.parent / "shared" / "data" / "extract_eval")
"""``../shared/data/extract_eval`` beside the checkout (or beside a folder above it)."""
TB = 1e12


def build_warc(pages_dir: Path, out: Path) -> tuple[int, int]:
    """The pages as one gzipped WARC (request + response per page); (pages, bytes)."""
    from mtnlg.sample_data.writers import WarcBuilder

    import hashlib

    meta = json.loads((pages_dir / "evaldata.json").read_text())["pages"]
    urls = {hashlib.sha1(name.encode()).hexdigest()[:16]: info.get("url") or "" for name, info in meta.items()}
    builder = WarcBuilder(out.name, "CC-2026-01", datetime(2026, 1, 1), random.Random(0))
    files = sorted(glob.glob(str(pages_dir / "html" / "*.html.gz")))
    for path in files:
        key = Path(path).name.split(".")[0]
        url = urls.get(key) or ""
        url = url if url.startswith("http") and url.count("/") >= 3 else f"https://example.org/{key}/"
        builder.add_page(url, gzip.decompress(Path(path).read_bytes()), "text/html")
    data = builder.getvalue()
    out.write_bytes(data)
    return len(files), len(data)


class Stages:
    """The job's per-document stages, in process, with the demo config's settings."""

    def __init__(self, root: str, tasks_glob: str | None) -> None:
        from curation.decontamination import build_task_ngrams
        from curation.eval_tasks import read_task_texts, task_source
        from curation.heuristics import HeuristicsConfig
        from curation.language import LanguageIdentifier
        from curation.tokenizer import GPT2, load_tokenizer
        from infra.resources import config_path
        from pipelines.config.job import load_config

        self.cfg = load_config(config_path("sources", "demo"), input_root=root)
        self.lang = LanguageIdentifier(None, self.cfg.language.max_chars)
        self.heur = HeuristicsConfig(**self.cfg.heuristics)
        self.fuzzy = self.cfg.dedup.fuzzy
        self.fuzzy.band_layout()
        self.tok = load_tokenizer(GPT2)
        self.index = None
        if tasks_glob:
            rule = self.cfg.decontamination.rule
            texts = [pair for path in sorted(glob.glob(tasks_glob))
                     for pair in read_task_texts(task_source(path))]
            self.index = build_task_ngrams(texts, rule.ngram_words, rule.min_task_words)

    def run(self, docs: list, filtered: bool) -> dict[str, tuple[int, float]]:
        """{stage: (documents in, CPU seconds)}; ``filtered``: the demo filters drop documents."""
        from curation.dedup_records import dedup_records
        from curation.decontamination import find_matches
        from curation.heuristics import decide, score_document
        from curation.language import keep_language
        from curation.normalize import normalize_text

        out: dict[str, tuple[int, float]] = {}

        def timed(name, fn, items):
            t = time.process_time()
            result = fn(items)
            out[name] = (len(items), time.process_time() - t)
            return result

        texts = timed("normalize", lambda ds: [normalize_text(d.text) for d in ds], docs)
        docs = [d.__class__(d.id, d.source, t, d.url, d.meta) for d, t in zip(docs, texts)]
        if self.cfg.pii.enabled:  # as the read stage: after normalize, before any filter
            from curation.pii import redact_pii

            texts = timed("pii", lambda ds: [redact_pii(d.text, self.cfg.pii)[0] for d in ds], docs)
            docs = [d.__class__(d.id, d.source, t, d.url, d.meta) for d, t in zip(docs, texts)]
        langs = timed("language", lambda ds: [self.lang.predict(d.text) for d in ds], docs)
        if filtered:
            docs = [d for d, (lang, score) in zip(docs, langs)
                    if keep_language(lang, score, self.cfg.language).keep]
        verdicts = timed("heuristics", lambda ds: [decide(score_document(d.text), self.heur) for d in ds], docs)
        if filtered:
            docs = [d for d, v in zip(docs, verdicts) if v.keep]
        timed("dedup", lambda ds: [r for i in range(0, len(ds), 128)
                                   for r in dedup_records(ds[i:i + 128], self.fuzzy)], docs)
        if self.index is not None:
            timed("decontaminate", lambda ds: [find_matches(d.text, self.index) for d in ds], docs)
        timed("tokenize", lambda ds: [a for i in range(0, len(ds), 64)
                                      for a in self.tok.encode_batch([d.text for d in ds[i:i + 64]],
                                                                     append_eod=True)], docs)
        return out


def read_warc_docs(path: Path, extractor: str) -> tuple[list, float]:
    from curation.document import Document
    from curation.readers import read_warc

    t = time.process_time()
    with open(path, "rb") as f:
        docs = [r for r in read_warc(f, str(path), "cc", extractor) if isinstance(r, Document)]
    return docs, time.process_time() - t


def read_sample(root: str, limit: int) -> tuple[list, float]:
    """The sample corpus's documents (every reader), as the read stage gives them."""
    from curation.document import Document
    from infra.resources import config_path
    from pipelines.config.job import load_config
    from pipelines.read.readers import _records

    cfg = load_config(config_path("sources", "demo"), input_root=root)
    docs, t = [], time.process_time()
    for spec in cfg.inputs:
        for pattern in spec.paths:
            for path in sorted(glob.glob(pattern)):
                with open(path, "rb") as f:
                    docs += [r for r in _records(spec, f, path, path) if isinstance(r, Document)]
    elapsed = time.process_time() - t
    random.Random(0).shuffle(docs)
    return docs[:limit], elapsed * min(1.0, limit / max(1, len(docs)))


def best(runs: list[dict]) -> dict[str, tuple[int, float]]:
    return {k: (runs[0][k][0], min(r[k][1] for r in runs)) for k in runs[0]}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--extractor", default="justext", help="HTML extractor (curation.readers.read_warc)")
    p.add_argument("--pages", type=Path, default=EVAL, help="extract_eval folder (html/ + evaldata.json)")
    p.add_argument("--workdir", type=Path, default=Path("/tmp/mtnlg-cost-per-tb"))
    p.add_argument("--tasks", default=None, help="eval task files (default: the sample's, generated)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--sample", default=None, help="a sample corpus, for the job's per-document overhead")
    p.add_argument("--sample-docs", type=int, default=5000)
    p.add_argument("--job-cpu-ms-per-doc", type=float, default=None,
                   help="the whole job's CPU per document on --sample (bench.job.scale)")
    args = p.parse_args(argv)
    args.workdir.mkdir(parents=True, exist_ok=True)
    from mtnlg.sample_data import write_sample_corpus

    root = args.workdir / "small-sample"  # the demo config's inputs must exist to load it
    if not (root / "ground_truth.json").exists():
        write_sample_corpus(str(root), 100)
    tasks = args.tasks or str(root / "eval_tasks" / "*.jsonl")
    warc = args.workdir / "extract_eval.warc.gz"
    pages, nbytes = build_warc(args.pages, warc)
    stages = Stages(str(root), tasks)
    reads = [read_warc_docs(warc, args.extractor) for _ in range(args.repeats)]
    docs, read_cpu = reads[0][0], min(r[1] for r in reads)
    every = best([stages.run(docs, filtered=False) for _ in range(args.repeats)])
    demo = best([stages.run(docs, filtered=True) for _ in range(args.repeats)])
    per_tb = TB / nbytes * pages
    print(f"{pages} pages -> WARC {nbytes / 1e6:.1f} MB compressed ({nbytes / pages / 1e3:.1f} KB per page, "
          f"{per_tb / 1e6:.1f}M pages per TB); {len(docs)} documents extracted with {args.extractor}; "
          f"mean text {statistics.mean(len(d.text) for d in docs) / 1e3:.1f} KB")
    print("\n| stage | pages in (all / demo filters) | CPU ms per page, one core | pages/s/core |")
    print("|---|---|---:|---:|")
    rows = [("read (WARC + extraction)", pages, pages, read_cpu)]
    rows += [(k, n, demo.get(k, (0, 0))[0], cpu) for k, (n, cpu) in every.items()]
    for name, n_all, n_demo, cpu in rows:
        per = cpu / max(1, n_all)
        print(f"| {name} | {n_all} / {n_demo} | {1e3 * per:.2f} | {1 / per if per else 0:,.0f} |")
    all_pages = read_cpu / pages + sum(cpu / max(1, n) for n, cpu in every.values())
    demo_pages = read_cpu / pages + sum((n_demo / pages) * (cpu / max(1, n)) for (n, cpu), (n_demo, _)
                                        in ((every[k], demo.get(k, (0, 0))) for k in every))
    overhead = 0.0
    if args.sample and args.job_cpu_ms_per_doc:
        sdocs, sread = read_sample(args.sample, args.sample_docs)
        sample = best([stages.run(sdocs, filtered=True) for _ in range(args.repeats)])
        inproc = (sread + sum(cpu for _, cpu in sample.values())) / len(sdocs)
        overhead = max(0.0, args.job_cpu_ms_per_doc / 1e3 - inproc)
        print(f"\nsample ({len(sdocs)} documents): in-process stages {1e3 * inproc:.2f} ms/doc; whole job "
              f"{args.job_cpu_ms_per_doc:.2f} ms/doc -> job overhead {1e3 * overhead:.2f} ms per document")
    for label, per_page in (("every page through every stage", all_pages),
                            ("demo filters on these pages", demo_pages)):
        hours = per_tb * (per_page + overhead) / 3600
        print(f"{label}: {1e3 * per_page:.1f} ms/page in the stages + {1e3 * overhead:.2f} job overhead "
              f"-> {hours:,.0f} CPU-hours per TB of compressed WARC ({args.extractor})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
