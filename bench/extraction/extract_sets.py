"""HTML -> main text on several annotated sets of real pages, each split into a tuning half and
a held-out half: the project's `main_text` against trafilatura without comments, side by side.

    python -m bench.extraction.extract_sets [--set extract_eval=../shared/data/extract_eval]
        [--set scrapinghub=/tmp/evalsets/scrapinghub] [--set readability=/tmp/evalsets/readability]
        [--half tuning|held-out|both] [--baseline DIR] [--ablate] [--pages-json out.json] [--json out.json]

``--baseline DIR``: DIR holds an older copy of the extractor as a package
``curation_before.extraction`` (``git archive <commit> curation/extraction``, moved and its
imports renamed), timed and scored as another row.

Sets (the kind is the part of the name before any ``:``; the path is a checkout or a copy):

- ``extract_eval``: trafilatura's evaluation pages (``../shared/data/extract_eval``, Apache-2.0),
  "with"/"without" snippets scored as upstream's tests/eval_common.py (``bench.extraction.extract``);
  English and other languages reported apart.  Halves as ``bench.extraction.extract``: file names
  starting 0-9 tuning, a-f held-out.
- ``scrapinghub``: github.com/scrapinghub/article-extraction-benchmark (MIT): 181 article pages
  (``html/*.html.gz``) and their article body (``ground-truth.json``), scored as its
  ``evaluate.py``: 4-token shingles, per page precision and recall, each averaged over pages.
- ``readability``: github.com/mozilla/readability's ``test/test-pages`` (Apache-2.0): each
  ``source.html`` with the article a reader mode shows (``expected.html``), scored with the same
  shingles.
- For both: tuning half = the first hex digit of sha1(page id) is 0-7, held-out = 8-f.

Speed: pages per CPU-second of this process (``time.process_time``), both extractors on every
page in turn, the order alternating from page to page; `main_text` includes decoding the bytes
as the WARC reader does, trafilatura gets the bytes.  Ratios only: absolute figures on a shared
machine are noise.
"""
from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import re
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

from bench.extraction.pages import DEFAULT_EVAL, count_item, load_pages

_TOKEN_RE = re.compile(r"\w+", re.UNICODE)


def shingle_tp_fp_fn(true: str, pred: str, n: int = 4) -> tuple[float, float, float]:
    """scrapinghub's ``string_shingle_matching``: shingle counts, normalised per page."""
    def shingles(text):
        toks = _TOKEN_RE.findall(text or "")
        return Counter(tuple(toks[i:i + n]) for i in range(max(1, len(toks) - n + 1)) if toks[i:i + n])

    t, p = shingles(true), shingles(pred)
    tp = fp = fn = 0.0
    for key in set(t) | set(p):
        a, b = t.get(key, 0), p.get(key, 0)
        tp += min(a, b)
        fp += max(0, b - a)
        fn += max(0, a - b)
    s = tp + fp + fn
    return (tp / s, fp / s, fn / s) if s else (0.0, 0.0, 0.0)


def shingle_scores(rows: list[tuple[float, float, float]]) -> dict[str, float]:
    """scrapinghub's ``metrics_from_tp_fp_fns``: mean precision and mean recall over pages."""
    def prec(tp, fp, fn):
        return 1.0 if fp == fn == 0 else 0.0 if tp == fp == 0 else tp / (tp + fp)

    def rec(tp, fp, fn):
        return 1.0 if fp == fn == 0 else 0.0 if tp == fn == 0 else tp / (tp + fn)

    p = statistics.mean([prec(*r) for r in rows if r[0] + r[1] > 0] or [0.0])
    r = statistics.mean([rec(*r) for r in rows if r[0] + r[2] > 0] or [0.0])
    return {"precision": p, "recall": r, "f1": 2 * p * r / (p + r) if p + r else 0.0}


def snippet_scores(rows: list[tuple[int, int, int, int]]) -> dict[str, float]:
    tp, fp, fn, _ = (sum(c) for c in zip(*rows)) if rows else (0, 0, 0, 0)
    return {"precision": tp / (tp + fp) if tp + fp else 0.0, "recall": tp / (tp + fn) if tp + fn else 0.0,
            "f1": 2 * tp / (2 * tp + fp + fn) if tp else 0.0}


def _half(page_id: str) -> str:
    return "tuning" if hashlib.sha1(page_id.encode()).hexdigest()[0] in "01234567" else "held-out"


def load_set(kind: str, path: str) -> list[dict]:
    """Pages as {id, group, half, bytes, truth}: ``truth`` is the item (snippets) or the text."""
    out = []
    if kind == "extract_eval":
        for name, item, data in load_pages(path):
            lang = "English" if item["lang"] == "English" else "other"
            out.append({"id": name, "group": lang, "bytes": data, "truth": item,
                        "half": "tuning" if name[0] in "0123456789" else "held-out"})
    elif kind == "scrapinghub":
        truth = json.loads((Path(path) / "ground-truth.json").read_text(encoding="utf-8"))
        for key in sorted(truth):
            data = gzip.decompress((Path(path) / "html" / f"{key}.html.gz").read_bytes())
            out.append({"id": key, "group": "", "bytes": data, "half": _half(key),
                        "truth": truth[key].get("articleBody", "")})
    elif kind == "readability":
        from selectolax.lexbor import LexborHTMLParser

        root = Path(path) / "test" / "test-pages"
        for d in sorted(p for p in root.iterdir() if (p / "expected.html").is_file()):
            expected = LexborHTMLParser((d / "expected.html").read_text(encoding="utf-8"))
            node = expected.body or expected.root
            out.append({"id": d.name, "group": "", "bytes": (d / "source.html").read_bytes(),
                        "half": _half(d.name), "truth": node.text(separator="\n") if node else ""})
    else:
        raise SystemExit(f"--set: unknown kind {kind!r} (extract_eval, scrapinghub, readability)")
    return out


def extractors(baseline: str | None, ablate: bool = False) -> dict:
    import trafilatura

    from curation.readers import decode_html, extract_text

    from curation.extraction import MainTextParams, extract_main_text

    fns = {"main_text": lambda b: extract_text(decode_html(b), "main_text")}
    variants = {"keep_headline=False": MainTextParams(keep_headline=False)}
    if ablate:  # each rule of issue 47 left out alone
        variants |= {"extend_after_body=True": MainTextParams(extend_after_body=True),
                     "teaser_lists=True": MainTextParams(teaser_lists=True),
                     "no trailing calls": MainTextParams(call_max_paragraphs=0)}
    for name, params in variants.items():
        fns[f"main_text {name}"] = lambda b, p=params: extract_main_text(decode_html(b), p)
    if baseline:  # an older copy of curation/extraction, e.g. `git archive HEAD~3 curation`
        sys.path.insert(0, baseline)
        import importlib

        old = importlib.import_module("curation_before.extraction")
        fns["main_text before"] = lambda b: old.extract_main_text(decode_html(b))
    fns["trafilatura no comments"] = lambda b: trafilatura.extract(b, include_comments=False)
    return fns


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--set", action="append", default=[], metavar="KIND[:LABEL]=PATH")
    ap.add_argument("--half", choices=("tuning", "held-out", "both"), default="both")
    ap.add_argument("--only", default="", help="comma-separated extractor names")
    ap.add_argument("--baseline", help="folder holding a package curation_before.extraction")
    ap.add_argument("--ablate", action="store_true", help="also main_text with each edge rule left out")
    ap.add_argument("--json", help="write the figures here")
    ap.add_argument("--pages-json", help="write per-page outputs and scores here")
    args = ap.parse_args(argv)
    sets = args.set or [f"extract_eval={DEFAULT_EVAL}"]
    fns = extractors(args.baseline, args.ablate)
    if args.only:
        fns = {k: v for k, v in fns.items() if k in args.only.split(",")}
    names = list(fns)
    figures, per_page = {}, {}
    cpu = dict.fromkeys(names, 0.0)
    npages = 0
    for spec in sets:
        label, path = spec.split("=", 1)
        kind = label.split(":")[0]
        pages = [p for p in load_set(kind, path) if args.half in ("both", p["half"])]
        rows: dict[tuple, list] = {}
        for k, page in enumerate(pages):
            npages += 1
            for ex in names[k % len(names):] + names[:k % len(names)]:
                t0 = time.process_time()
                try:
                    text = fns[ex](page["bytes"]) or ""
                except Exception:  # noqa: BLE001 - a crash is an empty output
                    text = ""
                cpu[ex] += time.process_time() - t0
                score = (count_item(page["truth"], text) if kind == "extract_eval"
                         else shingle_tp_fp_fn(page["truth"], text))
                for half in (page["half"], "all"):
                    rows.setdefault((page["group"], half, ex), []).append(score)
                if args.pages_json:
                    per_page.setdefault(f"{label}/{page['id']}", {"half": page["half"]})[ex] = {
                        "score": score, "text": text}
        score_of = snippet_scores if kind == "extract_eval" else shingle_scores
        print(f"\n{label} ({path})\n")
        print("| pages | half | " + " | ".join(f"{ex} P / R / F1" for ex in names) + " |")
        print("|---|---|" + "---|" * len(names))
        for (group, half, ex), r in sorted(rows.items()):
            cell = figures.setdefault(label, {}).setdefault(f"{group} {half}".strip(), {})
            cell[ex] = score_of(r) | {"pages": len(r)}
        for key, by_ex in figures[label].items():
            n = next(iter(by_ex.values()))["pages"]
            cells = " | ".join("{precision:.3f} / {recall:.3f} / **{f1:.3f}**".format(**by_ex[ex])
                               for ex in names)
            print(f"| {n} | {key} | {cells} |")
    peer = "trafilatura no comments"
    print(f"\npages per CPU-second over all {npages} pages: " + ", ".join(
        f"{ex} {npages / cpu[ex]:.1f}" + (f" ({cpu[peer] / cpu[ex]:.2f}x trafilatura)" if peer in cpu else "")
        for ex in names if cpu[ex]))
    if args.json:
        Path(args.json).write_text(json.dumps({"figures": figures, "cpu_s": cpu, "pages": npages}, indent=1))
    if args.pages_json:
        Path(args.pages_json).write_text(json.dumps(per_page))


if __name__ == "__main__":
    main()
