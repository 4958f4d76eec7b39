"""Tokenization throughput of the shard path against raw ``tokenizers`` on the same text.

    .venv/bin/python -m bench.shards.tokenizer [--mb 8] [--batch 64] [--repeat 3]

The text is real (the Wikipedia, Shakespeare and Python code assets of the embedded sample
corpus), repeated to ``--mb`` MB of UTF-8 and cut into documents, in batches of ``--batch``
(the Beam stage's ``BatchElements`` maximum). Two paths on one core each
(``TOKENIZERS_PARALLELISM=false``, ``RAYON_NUM_THREADS=1``: a Beam worker is one core):

* raw: ``tokenizers.Tokenizer.encode_batch`` on the GPT-2 tokenizer.json, ids not even read;
* stage: what the Beam tokenize stage and shard sink call per batch:
  ``TextTokenizer.encode_batch(append_eod=True)`` then ``IndexedDatasetWriter.add_document``
  for each document, and ``finalize`` (index, fsync, rename) of one shard at the end.

Runs alternate (raw, stage) ``--repeat`` times after a warm-up; medians are reported with
the stage's time over the raw time (the overhead ratio; target at most 1.25x).
"""
from __future__ import annotations

import os
from bench.common import REPO

os.environ["TOKENIZERS_PARALLELISM"] = "false"  # before tokenizers is imported
os.environ["RAYON_NUM_THREADS"] = "1"

import argparse  # noqa: E402
import gzip  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

ROOT = REPO
from blending.indexed_dataset import IndexedDatasetWriter, dtype_for_vocab  # noqa: E402
from curation.tokenizer import GPT2_DIR, TextTokenizer  # noqa: E402

ASSETS = ROOT / "mtnlg" / "sample_data" / "assets"


def real_documents(target_bytes: int) -> list[str]:
    docs = []
    rows = [json.loads(line) for line in gzip.open(ASSETS / "enwiki.jsonl.gz", "rt")]
    docs += ["\n\n".join([r["title"]] + r["paragraphs"]) for r in rows]
    for r in (json.loads(line) for line in gzip.open(ASSETS / "shakespeare.jsonl.gz", "rt")):
        speeches = [s if isinstance(s, str) else json.dumps(s) for s in r["speeches"]]
        docs += ["\n".join(speeches[i:i + 40]) for i in range(0, len(speeches), 40)]
    docs += [json.loads(line)["code"] for line in gzip.open(ASSETS / "python_code.jsonl.gz", "rt")]
    out, size, k = [], 0, 0
    while size < target_bytes:  # repeat with a marker so documents are not byte-identical
        d = f"[{k // len(docs)}] " + docs[k % len(docs)]
        out.append(d)
        size += len(d.encode("utf-8"))
        k += 1
    return out


def run_raw(tok, batches) -> None:
    for b in batches:
        tok.encode_batch(b, add_special_tokens=False)


def run_stage(tt: TextTokenizer, batches, prefix: str) -> int:
    with IndexedDatasetWriter(prefix, dtype_for_vocab(tt.vocab_size)) as w:
        for b in batches:
            for ids in tt.encode_batch(b, append_eod=True):
                w.add_document(ids)
    return w.tokens


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--mb", type=float, default=8.0)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args(argv)
    from tokenizers import Tokenizer

    docs = real_documents(int(args.mb * 1e6))
    nbytes = sum(len(d.encode("utf-8")) for d in docs)
    batches = [docs[i:i + args.batch] for i in range(0, len(docs), args.batch)]
    raw = Tokenizer.from_file(os.path.join(GPT2_DIR, "tokenizer.json"))
    raw.encode_special_tokens = True  # as TextTokenizer: literal <|endoftext|> is text
    tt = TextTokenizer(GPT2_DIR)
    times: dict[str, list[float]] = {"raw": [], "stage": []}
    with tempfile.TemporaryDirectory() as tmp:
        run_raw(raw, batches[:4])  # warm-up: caches, page faults
        tokens = run_stage(tt, batches[:4], os.path.join(tmp, "warm"))
        for r in range(args.repeat):
            t0 = time.perf_counter()
            run_raw(raw, batches)
            times["raw"].append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            tokens = run_stage(tt, batches, os.path.join(tmp, f"shard{r}"))
            times["stage"].append(time.perf_counter() - t0)
    raw_s, stage_s = statistics.median(times["raw"]), statistics.median(times["stage"])
    print(f"{len(docs):,} documents, {nbytes / 1e6:.1f} MB UTF-8, {tokens:,} tokens "
          f"(EOD included), batches of {args.batch}, 1 core, median of {args.repeat}")
    print(f"raw tokenizers encode_batch : {raw_s:6.2f} s  {nbytes / 1e6 / raw_s:6.2f} MB/s/core")
    print(f"stage (encode+EOD+shard)    : {stage_s:6.2f} s  {nbytes / 1e6 / stage_s:6.2f} MB/s/core")
    print(f"stage / raw time            : {stage_s / raw_s:.3f}x (target <= 1.25x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
