"""MinHash signature throughput: ours vs datasketch, side by side in one process.

    .venv/bin/python -m bench.dedup.minhash [--docs 2000] [--num-perm 128] [--words 500]

Single core.  Documents are ~3 KB of Zipf-distributed words; every contender includes the
shingling of the text (word 5-grams) in its time.  Contenders:
  datasketch-sha1   MinHash(num_perm).update_batch(encoded shingles)      (its default hash)
  datasketch-xxh32  MinHash(num_perm, hashfunc=xxh32).update_batch(...)
  ours              curation.minhash.text_signature, one text per call
  ours-batch        curation.minhash.text_signatures, 128 texts per call (the pipeline's path:
                    SignatureFn gets batches from beam.BatchElements(max_batch_size=128))
"""
from __future__ import annotations

import argparse
import time

import datasketch
import numpy as np
import xxhash

from curation.minhash import shingles, text_signature, text_signatures


def make_docs(n: int, words: int, seed: int = 0) -> list[str]:
    rng = np.random.default_rng(seed)
    vocab = np.array([f"w{i}" + "abcdefg"[: i % 5] for i in range(30_000)])
    ranks = np.minimum(rng.zipf(1.2, size=(n, words)), len(vocab)) - 1
    return [" ".join(vocab[r]) for r in ranks]


def xxh32(b: bytes) -> int:
    return xxhash.xxh32_intdigest(b)


def run_datasketch(docs, num_perm, hashfunc):
    kw = {"hashfunc": hashfunc} if hashfunc else {}
    for text in docs:
        m = datasketch.MinHash(num_perm=num_perm, **kw)
        m.update_batch([s.encode("utf-8") for s in shingles(text)])


def run_ours(docs, num_perm):
    for text in docs:
        text_signature(text, 5, "word", num_perm)


def run_ours_batch(docs, num_perm, batch=128):
    for k in range(0, len(docs), batch):
        text_signatures(docs[k : k + batch], 5, "word", num_perm)


def timed(fn, *args) -> float:
    t0 = time.perf_counter()
    fn(*args)
    return time.perf_counter() - t0


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=2000)
    ap.add_argument("--num-perm", type=int, default=128)
    ap.add_argument("--words", type=int, default=500)
    args = ap.parse_args(argv)
    docs = make_docs(args.docs, args.words)
    kb = np.mean([len(d) for d in docs]) / 1024
    run_ours(docs[:50], args.num_perm)  # warm caches (permutations)
    rows = [
        ("datasketch-sha1", timed(run_datasketch, docs[: max(200, args.docs // 8)], args.num_perm, None),
         max(200, args.docs // 8)),
        ("datasketch-xxh32", timed(run_datasketch, docs, args.num_perm, xxh32), args.docs),
        ("ours", timed(run_ours, docs, args.num_perm), args.docs),
        ("ours-batch", timed(run_ours_batch, docs, args.num_perm), args.docs),
    ]
    rate = {name: n / t for name, t, n in rows}
    print(f"{args.docs} docs of {kb:.2f} KB, num_perm={args.num_perm}, 1 core")
    print(f"{'contender':18s} {'docs/s':>9s} {'ours x':>7s} {'batch x':>8s}")
    for name, _, _ in rows:
        print(f"{name:18s} {rate[name]:9.0f} {rate['ours'] / rate[name]:7.2f} {rate['ours-batch'] / rate[name]:8.2f}")


if __name__ == "__main__":
    main()
