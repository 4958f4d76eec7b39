"""Heuristic rules and ftfy normalisation: this tree against a baseline commit, side by side.

    python -m bench.ingest.heuristics [--docs 5000] [--repeats 5] [--baseline 775b1de] \\
        [--workdir /tmp/bench_heuristics]

The baseline's ``curation/heuristics.py`` and ``curation/normalize.py`` are loaded from git
(``git show <baseline>:<path>``) into temporary modules, so both implementations run in the
same process on the same documents: the sample corpus (``mtnlg sample-data --docs N``) read
with the real readers, every parsed document.  Rounds alternate the order (old first, then new
first, ...); each side's figure is the median over rounds of documents / CPU second of this
process (one core: docs/s/core).  Before timing, the script asserts that both sides give the
same keep/drop decision and reason for every document, and the same normalised text.
"""
from __future__ import annotations

import argparse
import statistics
import time
from bench.common import REPO, load_module_at

ROOT = str(REPO)
def cpu_rate(fn, items) -> float:
    """Items per CPU second of this process."""
    t0 = time.process_time()
    for item in items:
        fn(item)
    return len(items) / (time.process_time() - t0)


def alternate(sides: dict, items, repeats: int) -> dict[str, list[float]]:
    names = list(sides)
    rates: dict[str, list[float]] = {n: [] for n in names}
    for r in range(repeats):
        for n in (names if r % 2 == 0 else names[::-1]):
            rates[n].append(cpu_rate(sides[n], items))
    return rates


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=5000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--baseline", default="775b1de")
    ap.add_argument("--workdir", default="/tmp/bench_heuristics")
    args = ap.parse_args(argv)

    from bench.ingest.ingest import _read_all, corpus
    from curation.document import Document
    from curation.heuristics import HeuristicsConfig, decide, score_document
    from curation.normalize import normalize_text

    old_heur = load_module_at(args.baseline, "curation/heuristics.py", "baseline_heuristics")
    old_norm = load_module_at(args.baseline, "curation/normalize.py", "baseline_normalize")
    records, _ = _read_all(corpus(args.workdir, args.docs))
    raw = [r.text for recs in records.values() for r in recs if isinstance(r, Document)]
    texts = [normalize_text(t) for t in raw]
    mb = sum(len(t.encode()) for t in texts) / 1e6
    print(f"{len(texts)} documents ({mb:.1f} MB of normalised text), baseline {args.baseline}", flush=True)

    # Same work, same answers: checked on every document before anything is timed.
    assert [old_norm.normalize_text(t) for t in raw] == texts, "normalised text differs from the baseline"
    old_cfg, new_cfg = old_heur.HeuristicsConfig(), HeuristicsConfig()
    old_verdicts = [old_heur.apply_heuristics(t, old_cfg) for t in texts]
    new_verdicts = [decide(score_document(t), new_cfg) for t in texts]
    differ = [i for i, (a, b) in enumerate(zip(old_verdicts, new_verdicts))
              if (a.keep, a.reason) != (b.keep, b.reason)]
    assert not differ, f"{len(differ)} decisions differ, e.g. document {differ[0]}"
    kept = sum(v.keep for v in new_verdicts)
    print(f"identical decisions on all {len(texts)} documents ({kept} kept, {len(texts) - kept} dropped) "
          "and identical normalised text", flush=True)

    heur = alternate({"baseline": lambda t: old_heur.apply_heuristics(t, old_cfg),
                      "this tree": lambda t: decide(score_document(t), new_cfg)}, texts, args.repeats)
    norm = alternate({"baseline": old_norm.normalize_text, "this tree": normalize_text}, raw, args.repeats)

    print(f"\ndocs/s per core (median of {args.repeats} alternating rounds; per-round figures after)")
    print(f"{'stage':<12}{'baseline':>10}{'this tree':>11}{'ratio':>8}   rounds (baseline | this tree)")
    for stage, rates in (("heuristics", heur), ("normalize", norm)):
        old, new = statistics.median(rates["baseline"]), statistics.median(rates["this tree"])
        rounds = " ".join(f"{x:.0f}" for x in rates["baseline"]) + " | " + " ".join(
            f"{x:.0f}" for x in rates["this tree"])
        print(f"{stage:<12}{old:>10.0f}{new:>11.0f}{new / old:>7.2f}x   {rounds}")
    both_old = 1 / (1 / statistics.median(heur["baseline"]) + 1 / statistics.median(norm["baseline"]))
    both_new = 1 / (1 / statistics.median(heur["this tree"]) + 1 / statistics.median(norm["this tree"]))
    print(f"{'both':<12}{both_old:>10.0f}{both_new:>11.0f}{both_new / both_old:>7.2f}x")
    print("(the baseline heuristics stop at the first failing rule; this tree scores every rule "
          "of every document, as the stats now record)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
