"""``python -m mtnlg.sample_data OUT [--docs N] [--seed S]``: write the embedded sample corpus."""
from __future__ import annotations

import argparse
import time

from .generate import DEFAULT_DOCS, MIN_DOCS, write_sample_corpus


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="mtnlg sample-data", description=__doc__)
    p.add_argument("out", help="output directory (created if missing)")
    p.add_argument("--docs", type=int, default=DEFAULT_DOCS,
                   help=f"approximate number of documents, at least {MIN_DOCS} (default {DEFAULT_DOCS})")
    p.add_argument("--seed", type=int, default=0, help="the same seed gives the same bytes")
    args = p.parse_args(argv)
    if args.docs < MIN_DOCS:  # before any file is written; one line, not a traceback
        p.error(f"--docs must be at least {MIN_DOCS} (got {args.docs}): every planted category needs room")
    t0 = time.perf_counter()
    truth = write_sample_corpus(args.out, args.docs, args.seed)
    t = truth["totals"]
    print(f"wrote {t['records']} records ({t['documents']} documents, {t['malformed']} malformed) "
          f"to {args.out} in {time.perf_counter() - t0:.1f}s; ground truth: {args.out}/ground_truth.json")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
