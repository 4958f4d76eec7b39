"""The whole curate job on real article pages: how many survive, how much of their text
reaches the shards, and why every other page was removed.

    python -m bench.extraction.real_articles [--pages english|other] [--extractor NAME]
        [--workdir DIR] [--eval-dir DIR] [-- BEAM OPTIONS]

Pages: the evaluation set of bench/extraction/extract.py (trafilatura's 990 real pages with "with" /
"without" snippets; Apache-2.0).  ``--pages english``: the 169 English pages (news, blogs,
tutorials); ``--pages other``: the 821 others, which an English-only run must remove with a
``language/...`` reason.

The pages are written as ONE Common Crawl-style WARC (gzip per record; for each page a
``request``, a ``response`` with the page bytes and an HTTP header block, and a ``metadata``
record), then ``mtnlg curate`` runs on it as a subprocess with the shipped production settings
(``data_manifests/sources/mtnlg.yaml``: its extractor, language, heuristic, dedup, tokenizer
and shard settings) with only the inputs replaced and decontamination off.  ``--extractor``
replaces the extractor (e.g. ``justext``, the MT-NLG reproduction setting).

``--add-set KIND=PATH`` (repeatable; ``scrapinghub`` or ``readability`` as
``bench.extraction.extract_sets.load_set`` reads them, e.g. ``scrapinghub=/tmp/evalsets/scrapinghub``)
measures English articles of several sets in ONE run: the pages of ``extract_eval``'s English
group (all 169: lid.176 on the "with" snippets would leave out the English pages whose
annotators picked their quoted foreign passages, the pages in two languages that issue 47 is
about), and the pages of each added set whose article text is English (lid.176 on its whole
article text), all in one WARC.  An added set's page is scored with
that set's own measure (its ``evaluate.py``'s 4-token shingles): yield = shingle recall,
precision = shingle precision of the kept text; the figures are given per set and over all
pages (yield: mean per page, removed pages 0; precision: the sets' precisions weighted by their
kept pages).

Reported: every removal by stage/reason (with the page's URL and, for heuristic removals, the
score of the rule that fired), the share of pages kept, and the text that reached the shards
(decoded from the .bin/.idx shards with the run's tokenizer), scored two ways against each
page's annotations, over ALL pages (a removed page contributes empty text):

- upstream's snippet scoring (tests/eval_common.py of trafilatura): precision, recall, F1;
- word 4-gram recall: the share of the word 4-grams of the page's "with" snippets found in its
  shard text, averaged over pages (the measure of the issue's "69% of the article text"; the
  snippets' first and last tokens, often cut words, are left out).

Both compare the snippets normalised as the pipeline normalises documents (ftfy, which e.g.
straightens curly quotes), so a snippet matches the shard text it annotates.
"""
from __future__ import annotations

import argparse
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from bench.common import REPO

ROOT = str(REPO)
from bench.extraction.pages import DEFAULT_EVAL, count_item, load_pages, norm

SOURCE = "cc_2020_50"
WARC_NAME = "cc/CC-MAIN-eval-00000.warc.gz"
RECORDS_PER_PAGE = 3  # request, response, metadata; record 0 is the warcinfo


def page_url(item: dict, name: str) -> str:
    """The page's URL as a crawler records it: ASCII (IDNA host, percent-encoded path)."""
    from urllib.parse import quote, urlsplit, urlunsplit

    url = item["url"]
    if not url.startswith(("http://", "https://")):
        return f"https://eval.example/{name}"
    parts = urlsplit(url)
    host = parts.hostname.encode("idna").decode("ascii") if parts.hostname else ""
    netloc = host + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, quote(parts.path, safe="/%:@!$&'()*+,;=~"),
                       quote(parts.query, safe="=&%/:?+;,@!$'()*~"), ""))


def write_warc(pages, path: str) -> None:
    """One WARC, gzip per record, as Common Crawl writes them."""
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        w = WARCWriter(f, gzip=True)
        w.write_record(w.create_warcinfo_record(os.path.basename(path), {
            "software": "bench_real_articles.py", "format": "WARC File Format 1.1",
            "description": "trafilatura evaluation pages (Apache-2.0)"}))
        for name, item, data in pages:
            url = page_url(item, name)
            host = re.sub(r"^https?://([^/]+).*$", r"\1", url)
            req = StatusAndHeaders(f"GET {url} HTTP/1.1", [("Host", host), ("User-Agent", "CCBot/2.0"),
                                                          ("Accept", "text/html")], is_http_request=True)
            w.write_record(w.create_warc_record(url, "request", payload=io.BytesIO(b""), http_headers=req))
            resp = StatusAndHeaders("200 OK", [("Content-Type", "text/html"), ("Content-Length", str(len(data))),
                                               ("Server", "nginx")], protocol="HTTP/1.1")
            w.write_record(w.create_warc_record(url, "response", payload=io.BytesIO(data), http_headers=resp))
            meta = "fetchTimeMs: 120\ncharset-detected: unknown\n".encode()
            w.write_record(w.create_warc_record(url, "metadata", payload=io.BytesIO(meta),
                                                warc_content_type="application/warc-fields"))


def write_config(workdir: str, extractor: str | None) -> tuple[str, str]:
    """The shipped mtnlg config with this WARC as its only input, decontamination off."""
    import yaml

    with open(os.path.join(ROOT, "data_manifests", "sources", "mtnlg.yaml")) as f:
        cfg = yaml.safe_load(f)
    shipped = next(i for i in cfg["inputs"] if i["reader"] == "warc")
    chosen = extractor or shipped.get("extractor")
    cfg.update(name="real_articles", input_root=os.path.join(workdir, "input"),
               inputs=[{"reader": "warc", "source": SOURCE, "extractor": chosen, "paths": ["cc/*.warc.gz"]}],
               decontamination={"enabled": False})
    path = os.path.join(workdir, "config.yaml")
    with open(path, "w") as f:
        yaml.safe_dump(cfg, f, sort_keys=False)
    return path, chosen


def shard_texts(run: str) -> dict[str, str]:
    """Document id -> text decoded from the shards (documents/ gives the ids in shard order)."""
    import pyarrow.parquet as pq
    from tokenizers import Tokenizer

    from blending.indexed_dataset import IndexedDataset

    with open(os.path.join(run, "run.json")) as f:
        tok_path = json.load(f)["tokenizer"]["path"]
    if tok_path.startswith("pkg://"):
        tok_path = os.path.join(ROOT, tok_path[len("pkg://"):])
    tok = Tokenizer.from_file(os.path.join(tok_path, "tokenizer.json") if os.path.isdir(tok_path) else tok_path)
    eod = tok.token_to_id("<|endoftext|>")
    out = {}
    docs_dir = os.path.join(run, "documents", SOURCE)
    for part in sorted(os.listdir(docs_dir)) if os.path.isdir(docs_dir) else []:
        shard = part.replace("part-", f"{SOURCE}_").replace(".parquet", "")
        ids = pq.read_table(os.path.join(docs_dir, part), columns=["id"]).column("id").to_pylist()
        ds = IndexedDataset(os.path.join(run, "shards", SOURCE, shard))
        assert len(ds) == len(ids), f"{shard}: {len(ds)} sequences for {len(ids)} documents"
        for i, doc_id in enumerate(ids):
            tokens = [t for t in ds[i].tolist() if t != eod]
            out[doc_id] = tok.decode(tokens)
    return out


def word_4grams(text: str) -> set[tuple[str, ...]]:
    w = norm(text).split()
    return {tuple(w[i:i + 4]) for i in range(len(w) - 3)}


def snippet_4grams(snippet: str) -> set[tuple[str, ...]]:
    """The 4-grams of a snippet's whole words: upstream's snippets often start or end inside a
    word, so the first and last token are left out."""
    w = norm(snippet).split()[1:-1]
    return {tuple(w[i:i + 4]) for i in range(len(w) - 3)}


def four_gram_recall(item: dict, text: str) -> float:
    """Share of the "with" snippets' 4-grams found in ``text``; a snippet too short to have
    one counts as one unit, found or not (substring)."""
    have = word_4grams(text)
    found = total = 0
    out = norm(text)
    for s in item["with"]:
        grams = snippet_4grams(s)
        if grams:
            found, total = found + len(grams & have), total + len(grams)
        else:
            found, total = found + (norm(s) in out), total + 1
    return found / total if total else 1.0


def as_normalized(item: dict) -> dict:
    """The annotations normalised as the pipeline normalises documents (ftfy: curly quotes
    become straight ones, ...), so that a snippet matches the text it annotates."""
    from curation.normalize import normalize_text

    return dict(item, **{k: [normalize_text(s) for s in item[k]] for k in ("with", "without")})


def fired_rule(row: dict) -> str:
    """The score that decided a heuristic removal and its threshold (``curation.heuristics.RULES``)."""
    from curation.heuristics import RULES, HeuristicsConfig

    cfg = HeuristicsConfig()
    for rule in RULES:
        value = row.get(rule.score)
        if rule.reason == row.get("reason") and value is not None and rule.threshold(cfg) is not None:
            if rule.fails(value, rule.threshold(cfg)):
                return f"{rule.score[5:]}={value:.3f} ({rule.bound} {rule.threshold(cfg)})"
    return ""


def by_set(rows: list[dict]) -> dict:
    """Yield and precision per set and over all pages of a run with ``--add-set``."""
    from bench.extraction.extract_sets import shingle_tp_fp_fn

    sets: dict[str, dict] = {}
    per_page = []
    for r in rows:
        s = sets.setdefault(r["item"].get("set", "extract_eval"), {"pages": 0, "kept": 0, "recall": [],
                                                                     "tp": 0, "fp": 0, "prec": []})
        kept = r["outcome"] == "kept"
        s["pages"] += 1
        s["kept"] += kept
        if "truth" in r["item"]:
            tp, fp, fn = shingle_tp_fp_fn(r["item"]["truth"], r["text"])
            s["recall"].append(tp / (tp + fn) if tp + fn else 0.0)
            page = {"precision": tp / (tp + fp) if tp + fp else 0.0}
            if kept:
                s["prec"].append(page["precision"])
        else:
            s["recall"].append(four_gram_recall(r["item"], r["text"]))
            c = count_item(r["item"], r["text"])
            page = {"tp": c[0], "fp": c[1]}
            if kept:
                s["tp"], s["fp"] = s["tp"] + c[0], s["fp"] + c[1]
        per_page.append(dict(page, name=r["name"], url=r["url"], outcome=r["outcome"], rule=r["rule"],
                             lang=r["lang"], lang_score=r["lang_score"], yield_=s["recall"][-1]))
    out = {}
    print("\n| set | pages | kept | kept share | yield (mean per page, removed = 0) | precision of the kept text |")
    print("|---|---|---|---|---|---|")
    for name, s in sets.items():
        prec = (sum(s["prec"]) / len(s["prec"]) if s["prec"] else 0.0) if name != "extract_eval" \
            else s["tp"] / max(1, s["tp"] + s["fp"])
        out[name] = {"pages": s["pages"], "kept": s["kept"], "yield": sum(s["recall"]) / s["pages"],
                     "precision": prec}
        print(f"| {name} | {s['pages']} | {s['kept']} | {100 * s['kept'] / s['pages']:.1f}% | "
              f"{out[name]['yield']:.3f} | {prec:.3f} |")
    n, kept = sum(s["pages"] for s in sets.values()), sum(s["kept"] for s in sets.values())
    total = {"pages": n, "kept": kept,
             "yield": sum(sum(s["recall"]) for s in sets.values()) / n,
             "precision": sum(o["precision"] * o["kept"] for o in out.values()) / max(1, kept)}
    print(f"| all | {n} | {kept} | {100 * kept / n:.1f}% | {total['yield']:.3f} | {total['precision']:.3f} |")
    print(f"\nGoals: kept >= 97%: {'met' if kept / n >= 0.97 else 'NOT met'}; yield >= 0.93: "
          f"{'met' if total['yield'] >= 0.93 else 'NOT met'}; precision >= 0.93: "
          f"{'met' if total['precision'] >= 0.93 else 'NOT met'}")
    return {"sets": out, "all": total, "per_page": per_page}


def english_pages(eval_dir: str, added: list[str]) -> list:
    """``--add-set``: extract_eval's English pages, and each
    added set's pages whose article text is English (lid.176), as (name, item, bytes)."""
    from bench.extraction.extract_sets import load_set
    from curation.language import LanguageIdentifier

    ident = LanguageIdentifier()
    pages = [p for p in load_pages(eval_dir) if p[1]["lang"] == "English"]
    for spec in added:
        kind, _, path = spec.partition("=")
        if kind not in ("scrapinghub", "readability") or not path:
            raise SystemExit(f"--add-set: expected scrapinghub=PATH or readability=PATH, got {spec!r}")
        urls = {}
        if kind == "scrapinghub":
            with open(os.path.join(path, "ground-truth.json"), encoding="utf-8") as f:
                urls = {k: v.get("url", "") for k, v in json.load(f).items()}
        for p in load_set(kind, path):
            if p["truth"].strip() and ident.predict(p["truth"])[0] == "en":
                name = f"{kind}/{p['id']}"
                pages.append((name, {"url": urls.get(p["id"]) or name, "truth": p["truth"], "set": kind},
                              p["bytes"]))
    return pages


def report(pages, run: str, english: bool) -> dict:
    import pandas as pd

    stats = pd.read_parquet(os.path.join(run, "stats", "documents"))
    by_id = {r["id"]: r for r in stats.to_dict("records")}
    texts = shard_texts(run)
    rows, reasons = [], Counter()
    for k, (name, item, data) in enumerate(pages):
        doc_id = f"{SOURCE}/{WARC_NAME}#{1 + RECORDS_PER_PAGE * k + 1}"
        r = by_id.get(doc_id)
        if r is None:
            raise SystemExit(f"{doc_id} ({item['url']}) is missing from stats/documents")
        outcome = r["outcome"] if r["outcome"] != "removed" else f"{r['stage']}/{r['reason']}"
        reasons[outcome] += 1
        text = texts.get(doc_id, "")
        if r["outcome"] == "kept" and doc_id not in texts:
            raise SystemExit(f"{doc_id} is kept but not in the shards")
        if "truth" in item:  # an added set: its article text, normalised as the pipeline does
            from curation.normalize import normalize_text

            item = dict(item, truth=normalize_text(item["truth"]))
        else:
            item = as_normalized(item)
        rows.append({"name": name, "url": item["url"], "outcome": outcome, "text": text, "item": item,
                     "rule": fired_rule(r) if r["stage"] == "heuristics" else "", "lang": r.get("lang"),
                     "lang_score": r.get("lang_score")})
    n = len(rows)
    kept = reasons["kept"]
    print(f"\n{n} pages: {kept} kept ({100 * kept / n:.1f}%)\n")
    print("| outcome (stage/reason) | pages | share |")
    print("|---|---|---|")
    for reason, c in reasons.most_common():
        print(f"| {reason} | {c} | {100 * c / n:.1f}% |")
    removed = [r for r in rows if r["outcome"] != "kept"]
    if removed and (english or len(removed) <= 40):
        print("\nRemoved pages:")
        for r in removed:
            extra = r["rule"] or (f"lang={r['lang']} ({r['lang_score']:.2f})" if r["lang"] else "")
            print(f"  {r['outcome']:40s} {extra:34s} {r['url'][:90]}")
    result = {"pages": n, "kept": kept, "kept_share": kept / n, "outcomes": dict(reasons)}
    if any("truth" in r["item"] for r in rows):
        result.update(by_set(rows))
        return result
    tp = fp = fn = 0
    recalls = []
    for r in rows:
        c = count_item(r["item"], r["text"])
        tp, fp, fn = tp + c[0], fp + c[1], fn + c[2]
        recalls.append(four_gram_recall(r["item"], r["text"]))
    kept_rows = [r for r in rows if r["outcome"] == "kept"]
    ktp = kfp = 0
    for r in kept_rows:
        c = count_item(r["item"], r["text"])
        ktp, kfp = ktp + c[0], kfp + c[1]
    result.update(snippet_precision=tp / (tp + fp) if tp + fp else 0.0, snippet_recall=tp / (tp + fn),
                  snippet_f1=2 * tp / (2 * tp + fp + fn), mean_4gram_recall=sum(recalls) / n,
                  kept_snippet_precision=ktp / (ktp + kfp) if ktp + kfp else 0.0,
                  kept_mean_4gram_recall=sum(r for r, row in zip(recalls, rows) if row["outcome"] == "kept")
                  / max(1, kept))
    if english:
        print(f"\nText in the shards, over all {n} pages (removed pages count as empty):")
        print(f"  snippet scoring (upstream): precision {result['snippet_precision']:.3f}  "
              f"recall {result['snippet_recall']:.3f}  F1 {result['snippet_f1']:.3f}")
        print(f"  mean word-4-gram recall of the 'with' snippets: {result['mean_4gram_recall']:.3f} "
              f"(kept pages only: {result['kept_mean_4gram_recall']:.3f})")
        print(f"  precision of the kept text (snippets, kept pages only): {result['kept_snippet_precision']:.3f}")
        # The set's `lang` is a guess from the snippets' stop words; lid.176 on the annotated main
        # text itself ("with" snippets) tells which pages are English in fact.
        from curation.language import LanguageIdentifier

        ident = LanguageIdentifier()
        sub = [(r, rec) for r, rec in zip(rows, recalls)
               if ident.predict(" ".join(r["item"]["with"]))[0] == "en"]
        sk = sum(1 for r, _ in sub if r["outcome"] == "kept")
        result.update(annotated_english_pages=len(sub), annotated_english_kept=sk,
                      annotated_english_mean_4gram_recall=sum(rec for _, rec in sub) / max(1, len(sub)))
        print(f"\nPages whose annotated main text is English (lid.176 on the 'with' snippets): {len(sub)}; "
              f"kept {sk} ({100 * sk / max(1, len(sub)):.1f}%), mean 4-gram recall "
              f"{result['annotated_english_mean_4gram_recall']:.3f}")
        for r, _ in sub:
            if r["outcome"] != "kept":
                print(f"  removed: {r['outcome']:36s} {r['url'][:90]}")
        print(f"\nGoals (all {n} pages): kept >= 97%: {'met' if kept / n >= 0.97 else 'NOT met'}; "
              f"recall >= 0.93: {'met' if result['mean_4gram_recall'] >= 0.93 else 'NOT met'} (4-gram), "
              f"{'met' if result['snippet_recall'] >= 0.93 else 'NOT met'} (snippets); "
              f"precision >= 0.90: {'met' if result['kept_snippet_precision'] >= 0.90 else 'NOT met'}")
    else:
        from curation.language import LanguageIdentifier

        ident = LanguageIdentifier()
        empty = sum(1 for r in rows if r["outcome"] == "read/empty_after_extraction")
        wrong = [r for r in rows if not r["outcome"].startswith("language/")]
        print(f"\nread/empty_after_extraction: {empty}")
        print(f"Pages not removed with a language/... reason: {len(wrong)} (language of their annotated "
              f"main text, lid.176 on the 'with' snippets):")
        for k, r in enumerate(wrong):
            lang, score = ident.predict(" ".join(r["item"]["with"]))
            r["snippet_lang"] = lang
            if k < 30:  # jusText's English stop list empties hundreds: the counts say the rest
                print(f"  {r['outcome']:36s} snippets {lang} ({score:.2f})  {r['url'][:80]}")
        if len(wrong) > 30:
            print(f"  ... and {len(wrong) - 30} more: {dict(Counter(r['outcome'] for r in wrong[30:]))}")
        non_en = [r for r in wrong if r["snippet_lang"] != "en"]
        print(f"Of these, pages whose annotated main text is not English: {len(non_en)}")
        result.update(empty_after_extraction=empty,
                      not_language_removed=[(r["url"], r["outcome"], r["snippet_lang"]) for r in wrong])
    return result


def main(argv=None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    beam_args = argv[argv.index("--") + 1:] if "--" in argv else []
    argv = argv[:argv.index("--")] if "--" in argv else argv
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pages", choices=["english", "other"], default="english")
    ap.add_argument("--extractor", default=None, help="replace the shipped extractor setting")
    ap.add_argument("--workdir", default=None, help="kept after the run (default: a temporary folder)")
    ap.add_argument("--eval-dir", default=DEFAULT_EVAL)
    ap.add_argument("--json", help="also write the figures here")
    ap.add_argument("--add-set", action="append", default=[], metavar="KIND=PATH",
                    help="English articles of several sets in one run (see the docstring)")
    args = ap.parse_args(argv)
    english = args.pages == "english"
    if args.add_set and not english:
        raise SystemExit("--add-set: only with --pages english")
    pages = english_pages(args.eval_dir, args.add_set) if args.add_set else \
        [p for p in load_pages(args.eval_dir) if (p[1]["lang"] == "English") == english]
    workdir = args.workdir or tempfile.mkdtemp(prefix="bench_real_articles_")
    try:
        result = run_and_report(pages, workdir, args.extractor, english, beam_args,
                                kept=args.workdir is not None)
    finally:
        if args.workdir is None:  # a temporary folder: gone with the run (--workdir keeps one)
            shutil.rmtree(workdir, ignore_errors=True)
    result.update(pages_kind=args.pages)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)


def run_and_report(pages, workdir: str, extractor: str | None, english: bool,
                   beam_args: list[str], kept: bool) -> dict:
    """Curate ``pages`` as one WARC in ``workdir`` with the shipped config and report."""
    os.makedirs(workdir, exist_ok=True)
    write_warc(pages, os.path.join(workdir, "input", WARC_NAME))
    cfg, extractor = write_config(workdir, extractor)
    run = os.path.join(workdir, "run")
    cmd = [sys.executable, "-m", "mtnlg.cli", "curate", "--config", cfg, "--output", run, *beam_args]
    print(f"{len(pages)} {'english' if english else 'other'} pages -> one WARC; extractor "
          f"{extractor}\n$ {' '.join(cmd)}")
    t0 = time.time()
    subprocess.run(cmd, check=True, cwd=ROOT,
                   env=dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")))
    where = (f"run folder {run}" if kept
             else "its temporary folder is removed at the end (--workdir keeps one)")
    print(f"curate finished in {time.time() - t0:.0f} s; {where}")
    result = report(pages, run, english)
    result.update(extractor=extractor)
    return result


if __name__ == "__main__":
    main()
