"""The early language decision against the full one, page by page, on annotated sets (issue 52).

    PYTHONPATH=$PWD .venv/bin/python -m bench.extraction.early_language \
        --set extract_eval=../shared/data/extract_eval --set scrapinghub=/tmp/evalsets/scrapinghub \
        --set readability=/tmp/evalsets/readability [--json OUT]

Sets as ``bench.extraction.extract_sets.load_set`` reads them.  For every page: the full decision as the
job makes it (``decode_html``, ``main_text``, ftfy, language id from the composition,
``keep_language`` with the shipped language settings) and the early decision's score
(``LanguageIdentifier.early`` on ``page_text``, the shipped ``early_chars`` and
``early_block_chars``).  Reported per set and per threshold: pages the early decision removes,
and of those the pages the full decision keeps ("lost", must be 0) and the pages it calls
English at any score; then the lowest early score of any page the full decision keeps, and
of any page it calls English (the margin the shipped ``early_score`` has).
"""
from __future__ import annotations

import argparse
import json
import os
import sys


THRESHOLDS = (0.02, 0.05, 0.1, 0.2, 0.3, 0.5)


def decisions(kind: str, path: str, cfg) -> list[dict]:
    from bench.extraction.extract_sets import load_set

    from curation.extraction.page import page_text, parse_html
    from curation.language import keep_language, make_identifier
    from curation.normalize import normalize_text
    from curation.readers.warc import decode_html, extract_text

    ident = make_identifier(cfg)
    rows = []
    for page in load_set(kind, path):
        html = decode_html(page["bytes"])
        text = extract_text(html, "main_text").strip()
        lang, kept = None, False
        if text:
            c = ident.identify(normalize_text(text))
            lang, kept = c.lang, keep_language(c.lang, c.score, cfg).keep
        early = ident.early(page_text(parse_html(html), cfg.early_chars), cfg)
        rows.append({"set": kind, "id": page["id"], "full_lang": lang, "full_kept": kept,
                     "early_lang": early.lang, "early_score": early.score})
    return rows


def removed(row: dict, t: float, allowed: list[str]) -> bool:
    """As ``LanguageIdentifier.early`` decides with ``early_score = t``."""
    return row["early_score"] < t and row["early_lang"] not in allowed


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--set", action="append", required=True, help="KIND=PATH")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    from curation.language import LanguageConfig

    cfg = LanguageConfig(cached_blocks=0)
    rows = []
    for spec in args.set:
        kind, _, path = spec.partition("=")
        rows += decisions(kind, path, cfg)
    sets = list(dict.fromkeys(r["set"] for r in rows))
    print(f"early_chars {cfg.early_chars}, early_block_chars {cfg.early_block_chars}, shipped early_score "
          f"{cfg.early_score}; removed early / of them kept by the full decision / called English by it")
    print("| early_score | " + " | ".join(f"{s} ({sum(r['set'] == s for r in rows)})" for s in sets) + " |")
    print("|---|" + "---|" * len(sets))
    for t in THRESHOLDS:
        cells = []
        for s in sets:
            gone = [r for r in rows if r["set"] == s and removed(r, t, cfg.allowed)]
            cells.append(f"{len(gone)} / {sum(r['full_kept'] for r in gone)} / "
                         f"{sum(r['full_lang'] in cfg.allowed for r in gone)}")
        print(f"| {t} | " + " | ".join(cells) + " |")
    for what, pick in (("kept by the full decision", lambda r: r["full_kept"]),
                       ("called English by it (any score)", lambda r: r["full_lang"] in cfg.allowed)):
        low = sorted((r["early_score"], r["set"], r["id"]) for r in rows if pick(r))
        print(f"lowest early scores of the {len(low)} pages {what}: "
              + ", ".join(f"{v:.3f} ({s} {i[:24]})" for v, s, i in low[:4]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
