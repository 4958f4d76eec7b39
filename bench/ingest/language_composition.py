"""Language from a page's composition vs one call on the whole page, on real pages.

    python -m bench.ingest.language_composition [--eval-dir DIR] [--block-chars N]

Pages: trafilatura's 990 real pages (``../shared/data/extract_eval``, Apache-2.0; its ``lang``
is a guess from the snippets' stop words).  Each page goes through the project's extractor and
normalisation (what the language stage sees), then through both deciders with the shipped
``language:`` thresholds, interleaved page by page (the CPU ratio compares the same work):

- ``whole``: one lid.176 call on the first ``max_chars`` characters (the stage before issue 47);
- ``composition``: ``LanguageIdentifier.identify`` (lines merged into blocks, each block
  identified in one batched call, the language holding most characters, its own blocks scored
  together).

Reported: per group of pages, how many an English-only run removes with each, every page whose
decision differs (with the share of its text in the language found), and the pages of the
English group still removed, with their composition.  Whether a page is English-majority is
judged by reading it: lid.176 on the annotated snippets is no judge (a snippet is often a name
or a few words, and a page's snippets mix its languages).
"""
from __future__ import annotations

import argparse
import time
from bench.common import REPO

ROOT = str(REPO)
from bench.extraction.pages import DEFAULT_EVAL, load_pages


def main(argv=None) -> None:
    from curation.language import LanguageConfig, LanguageIdentifier, keep_language
    from curation.normalize import normalize_text
    from curation.readers import decode_html, extract_text

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--eval-dir", default=DEFAULT_EVAL)
    ap.add_argument("--block-chars", type=int, default=LanguageConfig().block_chars)
    args = ap.parse_args(argv)
    cfg = LanguageConfig(block_chars=args.block_chars)
    ident = LanguageIdentifier(None, cfg.max_chars, cfg.block_chars)
    model = ident._load()

    def whole(text: str) -> tuple[str, float]:
        snippet = " ".join(text[: cfg.max_chars].split())
        if not snippet:
            return "unknown", 0.0
        labels, probs = model.predict(snippet, k=1)
        return labels[0].removeprefix("__label__"), min(float(probs[0]), 1.0)

    pages = load_pages(args.eval_dir)
    texts = [normalize_text(extract_text(decode_html(data), "main_text") or "") for _, _, data in pages]
    cpu = {"whole": 0.0, "composition": 0.0}
    rows = []
    for k, ((name, item, _), text) in enumerate(zip(pages, texts)):
        order = ("whole", "composition") if k % 2 else ("composition", "whole")
        got = {}
        for how in order:
            t0 = time.process_time()
            got[how] = whole(text) if how == "whole" else ident.identify(text)
            cpu[how] += time.process_time() - t0
        c = got["composition"]
        rows.append({"url": item["url"], "group": "English" if item["lang"] == "English" else "other",
                     "whole": got["whole"], "comp": (c.lang, c.score, c.share),
                     "whole_keep": keep_language(*got["whole"], cfg).keep,
                     "comp_keep": keep_language(c.lang, c.score, cfg).keep, "item": item})
    print(f"{len(rows)} pages; block_chars {cfg.block_chars}, max_chars {cfg.max_chars}, "
          f"min_score {cfg.min_score}; CPU of the language step: composition / whole = "
          f"{cpu['composition'] / cpu['whole']:.2f}x "
          f"({1000 * cpu['whole'] / len(rows):.2f} vs {1000 * cpu['composition'] / len(rows):.2f} ms per page)")
    print("\n| pages (set's guess) | pages | removed: whole | removed: composition |")
    print("|---|---|---|---|")
    for group in ("English", "other"):
        g = [r for r in rows if r["group"] == group]
        print(f"| {group} | {len(g)} | {sum(not r['whole_keep'] for r in g)} | "
              f"{sum(not r['comp_keep'] for r in g)} |")
    print("\nDecisions that differ (lang, score[, share]):")
    for r in rows:
        if r["whole_keep"] != r["comp_keep"]:
            w, c = r["whole"], r["comp"]
            print(f"  {r['group']:7s} whole {'kept' if r['whole_keep'] else 'REMOVED'} {w[0]} {w[1]:.2f} | "
                  f"composition {'kept' if r['comp_keep'] else 'REMOVED'} {c[0]} {c[1]:.2f} "
                  f"share {c[2]:.2f}  {r['url'][:80]}")
    print("\nPages of the English group an English-only run removes by language, composition "
          "(lang, score, share of the text), to be judged by reading them:")
    for r in rows:
        if r["group"] == "English" and not r["comp_keep"]:
            c = r["comp"]
            print(f"  {c[0]} {c[1]:.2f} share {c[2]:.2f}  {r['url'][:90]}")


if __name__ == "__main__":
    main()
