"""HTML -> main text on real pages: the project's extractor settings against trafilatura,
resiliparse and jusText, side by side in one run.

    python -m bench.extraction.extract [--eval-dir ../shared/data/extract_eval] [--only main_text,...]
        [--json out.json] [--depth]

Pages: trafilatura's public evaluation set (990 real pages with "must keep" / "must drop"
snippets; Apache-2.0, see the folder's README).  Scoring as upstream's tests/eval_common.py:
whitespace normalised, a "with" snippet found in the output is a true positive, a missing one a
false negative, a "without" snippet found a false positive, an absent one a true negative;
precision, recall, accuracy and F1 over all snippets of the pages scored.  Rows: English pages
(the `lang` of evaldata.json) and the others, each split into a development half and a held-out
half by the first hex digit of the page's file name (a hash: 0-9 dev, a-f held-out); the main
text extractor was tuned on the development half only.

Speed: pages per CPU second of this process (``time.process_time``, one core), every
extractor timed on every page in turn, the order rotating from page to page so that load from
other jobs falls on all of them alike.  The project's settings include decoding the bytes
(``curation.readers.decode_html``, as the WARC reader does); the peers get the bytes and decode
themselves.  ``--depth`` also prints the markup depth of the pages (``markup_depth``) next to
the depth of the tree Lexbor builds.
"""
from __future__ import annotations

import argparse
import json
import time
from dataclasses import dataclass, field

from bench.extraction.pages import DEFAULT_EVAL, count_item, load_pages

@dataclass
class Tally:
    counts: list[int] = field(default_factory=lambda: [0, 0, 0, 0])
    pages: int = 0
    cpu: float = 0.0
    errors: int = 0

    def add(self, c: tuple[int, int, int, int], cpu: float) -> None:
        self.counts = [a + b for a, b in zip(self.counts, c)]
        self.pages += 1
        self.cpu += cpu

    def scores(self) -> dict[str, float]:
        tp, fp, fn, tn = self.counts
        return {"precision": tp / (tp + fp) if tp + fp else 0.0,
                "recall": tp / (tp + fn) if tp + fn else 0.0,
                "f1": 2 * tp / (2 * tp + fp + fn) if tp else 0.0,
                "accuracy": (tp + tn) / max(1, tp + fp + fn + tn),
                "pages_per_cpu_s": self.pages / self.cpu if self.cpu else 0.0}


def extractors() -> dict:
    """name -> function(page bytes) -> text."""
    from curation.readers import decode_html, extract_text

    out = {
        "project main_text": lambda b: extract_text(decode_html(b), "main_text"),
        "project justext": lambda b: extract_text(decode_html(b), "justext"),
        "project resiliparse": lambda b: extract_text(decode_html(b), "resiliparse"),
    }
    import trafilatura

    out["trafilatura extract() defaults"] = lambda b: trafilatura.extract(b)
    out["trafilatura include_comments=False"] = lambda b: trafilatura.extract(b, include_comments=False)
    out["trafilatura fast=True"] = lambda b: trafilatura.extract(b, fast=True)
    from resiliparse.extract.html2text import extract_plain_text
    from resiliparse.parse.encoding import detect_encoding
    from resiliparse.parse.html import HTMLTree

    out["resiliparse main_content=True"] = lambda b: extract_plain_text(
        HTMLTree.parse_from_bytes(b, detect_encoding(b)), main_content=True)
    import justext

    stop = frozenset(justext.get_stoplist("English"))
    out["jusText English stop list"] = lambda b: "\n\n".join(
        p.text for p in justext.justext(b, stop) if not p.is_boilerplate)
    return out


def groups_of(name: str, item: dict) -> list[str]:
    lang = "English" if item["lang"] == "English" else "other languages"
    half = "dev" if name[0] in "0123456789" else "held-out"
    return [lang, f"{lang} {half}"]


def run(pages, fns: dict) -> dict[str, dict[str, Tally]]:
    names = list(fns)
    tallies: dict[str, dict[str, Tally]] = {}
    for k, (name, item, data) in enumerate(pages):
        order = names[k % len(names):] + names[:k % len(names)]
        for ex in order:
            t0 = time.process_time()
            try:
                result = fns[ex](data)
                failed = False
            except Exception:  # noqa: BLE001 - a crash counts as a full miss, as upstream
                result, failed = None, True
            cpu = time.process_time() - t0
            for g in groups_of(name, item):
                t = tallies.setdefault(g, {}).setdefault(ex, Tally())
                t.add(count_item(item, result), cpu)
                t.errors += failed
    return tallies


def print_tables(tallies, peer: str, order: list[str]) -> None:
    for group in ("English", "English dev", "English held-out", "other languages",
                  "other languages dev", "other languages held-out"):
        if group not in tallies:
            continue
        rows = tallies[group]
        n = next(iter(rows.values())).pages
        base = rows[peer].scores()["pages_per_cpu_s"] if peer in rows else 0
        print(f"\n{group} ({n} pages)\n")
        print("| extractor | precision | recall | F1 | accuracy | pages/CPU-s | vs trafilatura |")
        print("|---|---|---|---|---|---|---|")
        for ex in order:  # the extractors' order, not the rotation's
            t = rows[ex]
            s = t.scores()
            ratio = f"{s['pages_per_cpu_s'] / base:.2f}x" if base else "-"
            err = f" ({t.errors} errors)" if t.errors else ""
            print(f"| {ex}{err} | {s['precision']:.3f} | {s['recall']:.3f} | {s['f1']:.3f} | "
                  f"{s['accuracy']:.3f} | {s['pages_per_cpu_s']:.1f} | {ratio} |")


def print_depth(pages) -> None:
    from curation.extraction import markup_depth, parsed_depth
    from curation.readers import decode_html

    rows = [(markup_depth(data), parsed_depth(decode_html(data)), item["url"]) for _, item, data in pages]
    over = [r[0] - r[1] for r in rows if r[0] > r[1]]
    print(f"\nmarkup depth over {len(rows)} pages: scan max {max(r[0] for r in rows)}, "
          f"Lexbor tree max {max(r[1] for r in rows)}; the scan counts more than the tree on "
          f"{len(over)} pages, by at most {max(over, default=0)} levels")
    for d, dom, url in sorted(rows, reverse=True)[:3]:
        print(f"  {d:4d} (tree {dom}) {url}")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--eval-dir", default=DEFAULT_EVAL)
    ap.add_argument("--only", default="", help="comma-separated substrings of extractor names")
    ap.add_argument("--json", help="also write the figures here")
    ap.add_argument("--depth", action="store_true", help="print markup depth statistics")
    args = ap.parse_args(argv)
    pages = load_pages(args.eval_dir)
    fns = extractors()
    peer = "trafilatura extract() defaults"
    if args.only:
        keep = [s.strip() for s in args.only.split(",")]
        fns = {k: v for k, v in fns.items() if k == peer or any(s in k for s in keep)}
    print(f"{len(pages)} pages from {args.eval_dir}; {len(fns)} extractors, rotating per page")
    tallies = run(pages, fns)
    print_tables(tallies, peer, list(fns))
    if args.depth:
        print_depth(pages)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({g: {ex: t.scores() | {"pages": t.pages, "errors": t.errors} for ex, t in rows.items()}
                       for g, rows in tallies.items()}, f, indent=1)


if __name__ == "__main__":
    main()
