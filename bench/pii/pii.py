"""Personal-data detection: precision and recall on a planted set, ours next to the peers'.

    .venv/bin/python -m bench.pii.pii --docs 2000 --datatrove-python /tmp/dtvenv/bin/python \\
        [--dolma-python /tmp/dolmavenv/bin/python] [--seed 0]

The set (``mtnlg.sample_data.pii_planted``): prose with planted e-mail addresses, IPv4/IPv6
addresses (half public-looking, half documentation/private blocks) and phone numbers in US and
international formats, mixed with look-alikes (version and section numbers, OIDs, browser builds,
dates, ISBN-10/13, coordinates, prices, clock times, MAC addresses, ``icon@2x.png``, ``@handles``,
``pkg@1.2.3``, ZIP+4, year ranges, long order numbers, ``std::vector``, and a phone-shaped score
line no pattern can tell from a number).  A found span counts when it overlaps a planted span of
its kind by half; false positives are attributed to the look-alike sentence they fall in.

Peers run in their own venvs (``bench/peers/pii_peer_side.py``), on the same texts: datatrove's
``PIIFormatter`` (e-mail and IPv4 only; by default only public IPs) and, where given, dolma's
regex PII taggers.  CPU seconds are each side's own process time over the same texts.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from bench.common import REPO

ROOT = str(REPO)
from curation.pii import find_pii  # noqa: E402
from mtnlg.sample_data.pii_planted import planted_documents, score  # noqa: E402

KINDS = ("email", "ip_address", "phone_number")


def _peer(python: str, peer: str, texts: list[str]) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = os.path.join(tmp, "texts.json"), os.path.join(tmp, "out.json")
        with open(src, "w") as f:
            json.dump(texts, f)
        subprocess.run([python, os.path.join(ROOT, "bench", "peers", "pii_peer_side.py"), peer, src, dst], check=True)
        with open(dst) as f:
            return json.load(f)


def _fmt(v) -> str:
    return "-" if v is None else f"{v:.3f}"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--docs", type=int, default=2000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--datatrove-python", help="python of a venv with datatrove installed")
    p.add_argument("--dolma-python", help="python of a venv with dolma installed")
    p.add_argument("--real-pages", help="also list what ours finds in real pages: a folder of "
                   "*.html.gz (e.g. shared/data/extract_eval/html), text by resiliparse; prints "
                   "counts and a random sample of matches in context to judge by eye")
    args = p.parse_args()

    docs = planted_documents(args.docs, args.seed)
    texts = [d["text"] for d in docs]
    mb = sum(len(t.encode()) for t in texts) / 1e6
    t0 = time.process_time()
    ours = [[(s.kind, s.start, s.end) for s in find_pii(t)] for t in texts]
    sides = {"ours (curation.pii)": {"spans": ours, "cpu_s": time.process_time() - t0}}
    if args.datatrove_python:
        sides.update(_peer(args.datatrove_python, "datatrove", texts))
    if args.dolma_python:
        sides.update(_peer(args.dolma_python, "dolma", texts))

    planted = {k: sum(1 for d in docs for x in d["pii"] if x[0] == k) for k in KINDS}
    print(f"planted set: {len(docs)} documents, {mb:.2f} MB, seed {args.seed}; planted "
          + ", ".join(f"{k} {n}" for k, n in planted.items())
          + f", look-alikes {sum(len(d['lookalikes']) for d in docs)}")
    print(f"\n{'tagger':<55}" + "".join(f"{k + ' P / R':>22}" for k in KINDS) + f"{'CPU s/MB':>10}")
    results = {}
    for name, side in sides.items():
        r = score(docs, [[tuple(x) for x in spans] for spans in side["spans"]])
        results[name] = r
        cells = "".join(f"{_fmt(r['kinds'][k]['precision']) + ' / ' + _fmt(r['kinds'][k]['recall']):>22}"
                        for k in KINDS)
        print(f"{name:<55}{cells}{side['cpu_s'] / mb:>10.3f}")
    print("\nfalse positives by look-alike:")
    for name, r in results.items():
        print(f"  {name:<55}{json.dumps(r['false_positives_by_lookalike'])}")
    if args.real_pages:
        _real_pages(args.real_pages)
    return 0


def _real_pages(folder: str, sample: int = 15) -> None:
    import collections
    import glob
    import gzip
    import random

    from resiliparse.extract.html2text import extract_plain_text

    hits, context, pages, chars = collections.Counter(), collections.defaultdict(list), 0, 0
    for path in sorted(glob.glob(os.path.join(folder, "*.html.gz"))):
        with open(path, "rb") as f:
            text = extract_plain_text(gzip.decompress(f.read()).decode("utf-8", "replace"))
        pages, chars = pages + 1, chars + len(text)
        for s in find_pii(text):
            hits[s.kind] += 1
            context[s.kind].append(text[max(0, s.start - 30):s.end + 15].replace("\n", " "))
    print(f"\nreal pages: {pages} pages, {chars / 1e6:.1f} M characters; found {dict(hits)}")
    r = random.Random(0)
    for kind in KINDS:
        for c in r.sample(context[kind], min(sample, len(context[kind]))):
            print(f"  {kind:<13}| {c}")


if __name__ == "__main__":
    sys.exit(main())
