"""Helpers of the pipeline tests: documents and a tiny raw corpus in the real formats."""
from __future__ import annotations

import glob
import gzip
import json
import os
import random

import apache_beam as beam
import pandas as pd
import zstandard
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.testing.test_pipeline import TestPipeline

from curation.document import Document
from pipelines.driver.beam_options import BUILD_OPTIONS

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GPT2 = os.path.join(REPO, "data_manifests", "tokenizers", "gpt2")


def read_inputs(p, specs, input_root: str | None = None) -> dict:
    """The read stage's reading on its own: ``{"docs", "removed", "dead_letter", "read"}`` of
    ``InputSpec`` s (``pipelines.read``: work items planned, then read where they land)."""
    from pipelines.read.plan import PlanWork
    from pipelines.read.readers import OUTPUT_TAGS, ReadWorkFn

    out = (p | PlanWork(specs)
           | beam.ParDo(ReadWorkFn(specs, input_root)).with_outputs(*OUTPUT_TAGS, main="docs"))
    return {"docs": out.docs, **{tag: out[tag] for tag in OUTPUT_TAGS}}


def filtered(docs, fn, label: str = "Filter") -> dict:
    """``{"kept", "removed"}`` of one filter step (a ``FilterDoFn``, configured by its
    constructor) applied to ``docs``."""
    from pipelines.plumbing.outputs import REMOVED

    out = docs | label >> beam.ParDo(fn).with_outputs(REMOVED, main="kept")
    return {"kept": out.kept, "removed": out[REMOVED]}


def local_pipeline(test: bool = True) -> beam.Pipeline:
    """A (Test)Pipeline on the local FnApiRunner, in process (never Prism: it downloads a
    binary), built and run as `mtnlg curate` runs its job
    (``pipelines.driver.beam_options.BUILD_OPTIONS``;
    no extra round trip of the whole pipeline through its protos, which TestPipeline makes by
    default: ~5 s of the suite's CPU)."""
    options = PipelineOptions(["--runner=FnApiRunner", *BUILD_OPTIONS])
    if not test:
        return beam.Pipeline(options=options)
    p = TestPipeline(options=options)
    p.not_use_test_runner_api = True
    return p


WORDS = ("the river town kept a small library where people of every age came to read and talk "
         "about history science music and the weather that changed with each season of the year "
         "while children played near the old bridge and farmers sold bread cheese apples").split()


def english(seed: int, words: int = 220) -> str:
    """Deterministic English-like prose (passes language id and the heuristics)."""
    rnd = random.Random(seed)
    sentences, n = [], 0
    while n < words:
        k = rnd.randint(8, 16)
        sentences.append(" ".join(rnd.choice(WORDS) for _ in range(k)).capitalize() + ".")
        n += k
    paragraphs = [" ".join(sentences[i:i + 5]) for i in range(0, len(sentences), 5)]
    return "\n\n".join(paragraphs)


def doc(id_: str, text: str, source: str = "wikipedia", **kw) -> Document:
    return Document(id=id_, source=source, text=text, **kw)


def write_corpus(root: str) -> dict:
    """A tiny raw corpus: Pile (zst), RealNews (JSONL), CC-Stories (txt) and one task file.

    Planted: an exact duplicate across sources, a near duplicate, a German document, a
    malformed JSON line, a Pile subset outside the blend, a short document and a contaminated
    document.  Returns the expected ids of each.
    """
    os.makedirs(os.path.join(root, "pile"))
    os.makedirs(os.path.join(root, "realnews"))
    os.makedirs(os.path.join(root, "cc_stories"))
    os.makedirs(os.path.join(root, "tasks"))
    base = [english(i) for i in range(6)]
    task_text = ("the quick brown fox jumps over the lazy dog near the riverbank while the "
                 "farmer watches the sunset quietly")
    near = base[1].replace("library", "museum", 2)
    german = ("Der Fluss fließt durch die kleine Stadt und die Menschen lesen jeden Tag Bücher "
              "in der alten Bibliothek neben der Brücke. ") * 20
    pile_rows = [
        {"text": base[0], "meta": {"pile_set_name": "Wikipedia (en)"}},
        {"text": base[1], "meta": {"pile_set_name": "Books3"}},
        {"text": near, "meta": {"pile_set_name": "OpenWebText2"}},
        {"text": german, "meta": {"pile_set_name": "Pile-CC"}},
        {"text": base[2], "meta": {"pile_set_name": "FreeLaw"}},
        {"text": base[3][:900] + " " + task_text + " " + base[3][900:],
         "meta": {"pile_set_name": "Wikipedia (en)"}},
    ]
    lines = [json.dumps(r) for r in pile_rows]
    lines.insert(3, '{"text": "broken json')
    with open(os.path.join(root, "pile", "00.jsonl.zst"), "wb") as f:
        f.write(zstandard.ZstdCompressor().compress(("\n".join(lines) + "\n").encode()))
    news = [{"title": "News", "text": base[0], "url_used": "http://x/1"},  # exact dup of Wikipedia
            {"title": "Today", "text": base[4], "url_used": "http://x/2"}]
    with open(os.path.join(root, "realnews", "rn.jsonl"), "w") as f:
        f.write("\n".join(json.dumps(r) for r in news) + "\n")
    with open(os.path.join(root, "cc_stories", "s1.txt"), "w") as f:
        f.write(base[5])
    with open(os.path.join(root, "cc_stories", "s2.txt"), "w") as f:
        f.write("A short story about a dog that ran home quickly after the rain stopped. " * 6)
    with open(os.path.join(root, "tasks", "lambada.jsonl"), "w") as f:
        f.write(json.dumps({"text": task_text}) + "\n")
    return {"read": 11}


def write_config(path: str, root: str, **overrides) -> str:
    import yaml

    cfg = {
        "name": "tiny", "input_root": root,
        "inputs": [
            {"reader": "pile", "paths": ["pile/*.jsonl.zst"]},
            {"reader": "realnews", "source": "realnews", "paths": ["realnews/*.jsonl"]},
            {"reader": "cc_stories", "source": "cc_stories", "paths": ["cc_stories/*.txt"]},
        ],
        "language": {"allowed": ["en"], "min_score": 0.5},
        "dedup": {"fuzzy": {"num_perm": 64, "bands": 16, "rows": 4, "threshold": 0.7,
                            "max_rounds": 3}},
        "decontamination": {"tasks": ["tasks/*.jsonl"]},
        "tokenizer": {"path": GPT2, "min_tokens": 128},
        "shards": {"max_tokens_per_shard": 100000},
    }
    cfg.update(overrides)
    with open(path, "w") as f:
        yaml.safe_dump(cfg, f)
    return path


def run_result(run: str) -> dict:
    """What a finished RUN decided, for comparing two runs: accounting, kept ids, shard
    checksums, stats rows and removed records."""
    info = json.load(open(os.path.join(run, "run.json")))
    kept = sorted(i for f in glob.glob(os.path.join(run, "documents", "*", "*.parquet"))
                  for i in pd.read_parquet(f, columns=["id"]).id)
    shards = pd.read_parquet(os.path.join(run, "stats", "shards.parquet")).sort_values("prefix")
    rows = pd.read_parquet(os.path.join(run, "stats", "documents"))
    removed = sorted(json.dumps(json.loads(line), sort_keys=True)
                     for f in glob.glob(os.path.join(run, "removed", "**", "*.jsonl.gz"), recursive=True)
                     for line in gzip.open(f, "rt"))
    return {"sources": info["sources"], "totals": info["totals"], "kept": kept,
            "shards": shards[["prefix", "documents", "tokens", "bin_sha256", "idx_sha256"]].values.tolist(),
            "rows": sorted(map(str, rows.sort_values("id").values.tolist())),
            "duplicated_rows": int(rows.id.duplicated().sum()), "removed": removed}
