"""The whole curate job against datatrove's FineWeb recipe, side by side on real pages.

    .venv/bin/python -m bench.job.vs_fineweb [--records 50000] [--pages all|crawl|english]
        [--lang-mix] [--workers 2] [--repeats 2] [--files 64] [--variant NAME ...] [--no-dedup]
        [--workdir /tmp/bench_vs_fineweb] [--dt-venv /tmp/dtvenv] [--eval-dir ../shared/data/extract_eval]
        [--json OUT]

Input: ``--records`` WARC response records (each with its request and metadata record, gzip per
record, in ``--files`` files) made from the pages of ``../shared/data/extract_eval`` (trafilatura's
990 real annotated pages, all languages, ~70% German).  Record i is page i mod P, copy i div P;
copy 0 has the page's own URL, copy k the same URL under the host ``c<k>.<host>``: every record
a distinct URL.  The records are shuffled with a fixed seed, so the set is the same bytes on every
run.  Three sets (``--pages``):

- ``all``: every page in turn (169 English pages of 990: 17% of the records are English);
- ``crawl``: a crawl's language mix, ``--english-share`` of the records (default 0.44) English
  pages in turn and the rest the other pages in turn.  The share is Common Crawl's own: the pages
  whose primary language CLD2 calls English were 44.05% of CC-MAIN-2020-50 and 44.21% of
  CC-MAIN-2021-04, the two snapshots MT-NLG used (commoncrawl/cc-crawl-statistics,
  ``plots/languages.csv``);
- ``english``: the English pages only.

Sides, each on the same WARC files with ``--workers`` worker processes, alternating which goes
first (A B B A for two repeats); min / median / max per side and the ratio of the medians:

- ours: ``mtnlg curate`` with the shipped production config (``data_manifests/sources/mtnlg.yaml``)
  as it ships, with only its inputs replaced by the set and decontamination off (the recipe has
  none), on the default local runner with ``--direct_num_workers``;
- FineWeb: ``bench/peers/fineweb_side.py`` in datatrove's own venv (created if missing,
  ``bench.peers.environment.ensure_datatrove``): the recipe of datatrove's ``examples/fineweb.py``
  with every datatrove default kept (URL filter, ``Trafilatura(favour_precision=True)`` with its
  1 s timeout and per-process paragraph cache, fastText language id, Gopher repetition + quality,
  C4 + FineWeb quality, MinHash dedup in four steps, PII formatter) then ``DocumentTokenizer`` to
  token files.  Tasks the size a crawl gives them: the recipe runs 8,000 tasks over a crawl's
  ~72,000-90,000 WARC files of ~40,000 records each, hundreds of thousands of records per task, so
  here each executor runs one task per worker (thousands of records each) and a task's set-up
  (the URL filter's block lists, the models) is paid once per worker, as in production, not once
  per few hundred pages.

``--variant`` runs a named variant instead, reported as such and never as the headline:
``per-file-tasks`` (datatrove one task per WARC file, the set-up paid per file: how the previous
harness ran it), ``no-caches`` (trafilatura without its paragraph cache and a 30 s timeout,
ours with ``language.cached_blocks: 0``: the caches off on both sides).

Measured per side: wall, CPU seconds of every process of its tree (``bench/tree_meter.py`` runs
the side as the tree's child subreaper, so processes a forkserver starts, which outlive their
parent, are reaped by it and their CPU lands in its RUSAGE_CHILDREN; the tree is also sampled from
/proc every 0.25 s, which gives each process's peak RSS, VmHWM), CPU per page (per input record),
seconds per stage (ours: run.json ``stage_seconds``, worker seconds in each stage's DoFns;
datatrove: each step's time from its executors' stats.json, and each executor's wall), documents
and tokens kept, and on the English pages of the set (evaldata ``lang``): pages with a copy kept,
the "with" snippets found (removed pages count as empty text) and the "without" snippets absent
from the kept text (the precision side), both sides' text and the snippets put through the same
normalisation (ours: ftfy, ``curation.normalize``).  Then CPU-hours per TB of compressed WARC as
``bench.job.cost_per_tb`` projects them (pages per TB x CPU per page), from these figures.

Settings that differ, and why (printed with the results too): see ``DIFFERENCES``.
"""
from __future__ import annotations

import argparse
import contextlib
import glob
import gzip
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
import uuid

from bench.common import REPO
from bench.extraction.pages import DEFAULT_EVAL, count_item, load_pages
from bench.extraction.real_articles import SOURCE, page_url, shard_texts, write_config, write_warc
from bench.job.cost_per_tb import TB
from bench.job.vs_fineweb_report import print_report, score
from bench.peers.environment import LID, ensure_datatrove

ROOT = str(REPO)

GPT2_JSON = os.path.join(ROOT, "data_manifests", "tokenizers", "gpt2", "tokenizer.json")
DIFFERENCES = [
    "ours: the shipped mtnlg config as it ships (its caches on), with its inputs replaced by the set "
    "and decontamination off (the recipe has none, and it needs eval task files)",
    "extraction: ours `main_text`, FineWeb Trafilatura(favour_precision=True) with datatrove's "
    "defaults (1 s timeout, trafilatura's per-process paragraph cache on: later copies of a page lose "
    "the paragraphs an earlier copy had); each side's own extractor, compared on the annotations",
    "language id: both lid.176 from the same file (data_manifests/models/lid.176.ftz, put in "
    "datatrove's asset cache offline in place of the lid.176.bin it downloads), English >= 0.65 on "
    "both; LanguageFilter(languages=['en']) (the example predates its default of all languages; "
    "FineWeb is English)",
    "normalisation: ours ftfy on every document; the recipe has none",
    "filters: ours the Gopher rules (defaults) and lines repeated across a host's pages; FineWeb URL "
    "block lists (datatrove's bundled lists; tldextract's bundled suffix snapshot, no fetch) + Gopher "
    "repetition + Gopher quality + C4 (filter_no_terminal_punct=False) + FineWeb quality",
    "dedup: ours exact (normalised text) + MinHash 100 perms, 10x10 bands, word 5-grams, verified at "
    "J >= 0.8; FineWeb MinHash 14x8 (sha1, 64 bit), 5-grams, no verification, four executors",
    "PII: FineWeb PIIFormatter after dedup (the recipe); ours pii off (the mtnlg config: MT-NLG did not)",
    "tokenization: both GPT-2 (the project's tokenizer.json, by path on both); ours .bin/.idx shards, "
    "documents under 128 tokens dropped (min_tokens); FineWeb DocumentTokenizer (shuffled .ds files) "
    "plus the recipe's TokensCounter pass before dedup",
    "outputs: ours stats rows per document, a removed sample, the dedup index; FineWeb every removed "
    "document through its exclusion writers (the recipe)",
    "parallelism: ours Beam FnApiRunner multi_processing; FineWeb LocalPipelineExecutor (forkserver "
    "pool) in place of Slurm, one task per worker in each executor but the buckets (14 tasks, the "
    "recipe's) and the clusters (one), executors one after another (the recipe's dependency chain)",
]
VARIANTS = {
    "per-file-tasks": "FineWeb one task per WARC file in every executor (its set-up, the URL block "
                      "lists above all, paid once per file)",
    "no-caches": "FineWeb's trafilatura without its paragraph cache (deduplicate=False) and with a 30 s "
                 "timeout; ours with language.cached_blocks 0",
}
ENGLISH_SHARE = 0.44
"""Common Crawl's English share (see the module docstring): the ``crawl`` set's default."""
GROUPS = ("read+extract", "filters", "dedup", "tokenize")
OUR_GROUP = {"read": "read+extract", "normalize": "filters", "pii": "filters", "language": "filters",
             "heuristics": "filters", "quality": "filters", "exact_dedup": "dedup", "fuzzy_dedup": "dedup",
             "dedup": "dedup", "dedup_against": "dedup", "tokenize": "tokenize", "shards": "tokenize"}


# --- the input set -------------------------------------------------------------------------------

def copy_url(item: dict, name: str, k: int) -> str:
    """Copy k's URL: the page's own for k = 0, else the same URL under the host ``c<k>.<host>``."""
    url = page_url(item, name)
    if k == 0:
        return url
    scheme, rest = url.split("://", 1)
    return f"{scheme}://c{k}.{rest}"


def record_order(pages: list, records: int, kind: str, english_share: float) -> list[tuple[int, int]]:
    """(page index, copy) of every record, before the shuffle: each group of pages in turn.  The
    ``crawl`` set takes ``english_share`` of its records from the English pages and the rest from
    the others; the other sets take every page of ``pages`` in turn."""
    if kind != "crawl":
        return [(i % len(pages), i // len(pages)) for i in range(records)]
    english = [i for i, p in enumerate(pages) if p[1]["lang"] == "English"]
    other = [i for i, p in enumerate(pages) if p[1]["lang"] != "English"]
    n_en = round(records * english_share)
    return ([(english[i % len(english)], i // len(english)) for i in range(n_en)]
            + [(other[i % len(other)], i // len(other)) for i in range(records - n_en)])


@contextlib.contextmanager
def identified_payload_type():
    """``write_warc`` writing the same bytes every time (fixed WARC-Date, record ids from the URL), with ``WARC-Identified-Payload-Type: text/html`` on its response records, as
    Common Crawl writes them (its detected MIME type).  datatrove's WarcReader trusts that header
    and, without it, guesses from the bytes with libmagic, which calls ~9% of these real HTML
    pages application/javascript and drops them before extraction; ours reads the HTTP
    Content-Type either way."""
    from warcio.warcwriter import WARCWriter

    own = WARCWriter.__dict__.get("create_warc_record")  # None: inherited from BaseWARCWriter
    create = WARCWriter.create_warc_record

    def with_payload_type(self, uri, record_type, *args, **kwargs):
        record = create(self, uri, record_type, *args, **kwargs)
        # fixed date and a record id from the URL: the same bytes on every build
        record.rec_headers.replace_header("WARC-Date", "2026-01-01T00:00:00Z")
        rid = uuid.uuid5(uuid.NAMESPACE_URL, f"{record_type} {uri}")
        record.rec_headers.replace_header("WARC-Record-ID", f"<urn:uuid:{rid}>")
        if record_type == "response":
            record.rec_headers.add_header("WARC-Identified-Payload-Type", "text/html")
        return record

    WARCWriter.create_warc_record = with_payload_type
    try:
        yield
    finally:
        if own is None:
            del WARCWriter.create_warc_record
        else:
            WARCWriter.create_warc_record = own


def build_set(pages: list, records: int, dest: str, files: int, kind: str = "all",
              english_share: float = ENGLISH_SHARE, seed: int = 0) -> dict:
    """``records`` pages (copies as in the docstring) as ``files`` WARC files in ``dest/input/cc``;
    the set's facts (url -> page name, compressed bytes), cached in ``dest/set.json``."""
    meta = os.path.join(dest, "set.json")
    if os.path.exists(meta):
        return json.load(open(meta))
    shutil.rmtree(dest, ignore_errors=True)
    order = record_order(pages, records, kind, english_share)
    random.Random(seed).shuffle(order)
    urls = {}
    per_file = -(-records // files)
    for f, start in enumerate(range(0, records, per_file)):
        chunk = []
        for p, k in order[start:start + per_file]:
            name, item, data = pages[p]
            url = copy_url(item, name, k)
            urls[page_url(dict(item, url=url), name)] = name  # as write_warc records it
            chunk.append((name, dict(item, url=url), data))
        with identified_payload_type():
            write_warc(chunk, os.path.join(dest, "input", "cc", f"CC-MAIN-bench-{f:05d}.warc.gz"))
    nbytes = sum(os.path.getsize(p) for p in glob.glob(os.path.join(dest, "input", "cc", "*.warc.gz")))
    english = sum(1 for p, _ in order if pages[p][1]["lang"] == "English")
    facts = {"records": records, "pages": len(set(urls.values())), "english_records": english, "bytes": nbytes,
             "files": len(glob.glob(os.path.join(dest, "input", "cc", "*.warc.gz"))), "urls": urls}
    json.dump(facts, open(meta, "w"))
    return facts


# --- one side's process tree (bench/tree_meter.py) ----------------------------------------------

def metered(cmd: list[str], work: str, tag: str, env: dict | None = None, cwd: str = ROOT) -> dict:
    js, log = os.path.join(work, f"{tag}.meter.json"), os.path.join(work, f"{tag}.log")
    subprocess.run([sys.executable, os.path.join(ROOT, "bench", "tree_meter.py"), js, log, cwd, "--", *cmd],
                   env=env, check=False)
    m = json.load(open(js))
    if m["rc"]:
        raise SystemExit(f"{tag} failed ({m['rc']}); see {log}")
    m["stdout"] = open(log + ".stdout").read()
    return m


# --- the sides -----------------------------------------------------------------------------------

def our_tree(rev: str | None, work: str) -> tuple[str, str]:
    """(folder whose code runs as ours, what it is): this checkout, or ``rev`` exported with
    ``git archive`` (others' uncommitted changes in a shared checkout stay out of the figures)."""
    if rev is None:
        return ROOT, _our_version()
    sha = subprocess.run(["git", "rev-parse", "--short", rev], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout.strip()
    tree = os.path.join(work, f"tree-{sha}")
    if not os.path.exists(os.path.join(tree, ".exported")):
        shutil.rmtree(tree, ignore_errors=True)
        os.makedirs(tree)
        archive = subprocess.run(["git", "archive", sha], cwd=ROOT, capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", tree], input=archive, check=True)
        open(os.path.join(tree, ".exported"), "w").close()
    return tree, f"commit {sha} (git archive, clean)"


def run_ours(set_dir: str, work: str, workers: int, no_dedup: bool, tag: str, tree: str,
             variants: tuple = ()) -> dict:
    import pyarrow.parquet as pq
    import yaml

    from bench.extraction import real_articles as bench_real_articles
    saved, bench_real_articles.ROOT = bench_real_articles.ROOT, tree  # that tree's mtnlg.yaml
    try:
        cfg_path, _ = write_config(set_dir, None)  # input_root = set_dir/input, paths cc/*.warc.gz
    finally:
        bench_real_articles.ROOT = saved
    cfg = yaml.safe_load(open(cfg_path))
    if "no-caches" in variants:  # each page repeats records/pages times: the caches see that
        cfg.setdefault("language", {})["cached_blocks"] = 0
    if no_dedup:
        cfg["dedup"] = {"exact": False, "fuzzy": dict(cfg["dedup"]["fuzzy"], enabled=False)}
    cfg_path = os.path.join(work, f"{tag}.yaml")
    yaml.safe_dump(cfg, open(cfg_path, "w"), sort_keys=False)
    run = os.path.join(work, tag)
    shutil.rmtree(run, ignore_errors=True)
    env = dict(os.environ, PYTHONPATH=tree + os.pathsep + os.environ.get("PYTHONPATH", ""))
    m = metered([sys.executable, "-m", "mtnlg.cli", "curate", "--config", cfg_path, "--output", run,
                 f"--direct_num_workers={workers}"], work, tag, env, cwd=tree)
    info = json.load(open(os.path.join(run, "run.json")))
    groups = dict.fromkeys(GROUPS, 0.0)
    for name, s in info["stage_seconds"].items():
        groups[OUR_GROUP.get(name, name)] = groups.get(OUR_GROUP.get(name, name), 0.0) + s
    texts = shard_texts(run)  # what the shards hold, decoded
    url = {}
    for part in glob.glob(os.path.join(run, "documents", SOURCE, "*.parquet")):
        t = pq.read_table(part, columns=["id", "url"]).to_pydict()
        url.update(zip(t["id"], t["url"]))
    return {**m, "stages": groups, "walls": {"job": info["wall_seconds"]}, "tokens": info["totals"]["tokens"],
            "kept": [(url[i], t) for i, t in texts.items()]}


def run_fineweb(set_dir: str, work: str, workers: int, no_dedup: bool, dt_python: str, tag: str,
                variants: tuple = ()) -> dict:
    out = os.path.join(work, tag)
    shutil.rmtree(out, ignore_errors=True)
    env = dict(os.environ, HF_ASSETS_CACHE=os.path.join(work, "dt-assets"), HF_HUB_OFFLINE="1",
               TLDEXTRACT_CACHE=os.path.join(work, "tldextract"))
    env.pop("PYTHONPATH", None)
    m = metered([dt_python, os.path.join(ROOT, "bench", "peers", "fineweb_side.py"), os.path.join(set_dir, "input", "cc"),
                 out, "--lid", LID, "--tokenizer", GPT2_JSON, "--workers", str(workers)]
                + (["--tasks-per-file"] if "per-file-tasks" in variants else [])
                + (["--extract-timeout", "30", "--no-trafilatura-deduplicate"] if "no-caches" in variants else [])
                + (["--no-dedup"] if no_dedup else []), work, tag, env)
    rep = json.loads(m["stdout"].strip().splitlines()[-1])
    groups, walls = dict.fromkeys(GROUPS, 0.0), {}
    for ex in rep["executors"]:
        walls[ex["name"]] = ex["wall"]
        for step in ex["steps"]:
            groups[_dt_group(ex["name"], step["name"])] += step["seconds"]
    kept = []
    for path in sorted(glob.glob(os.path.join(rep["kept_docs_path"], "*.jsonl.gz"))):
        for line in gzip.open(path, "rt"):
            d = json.loads(line)
            kept.append((d["metadata"]["url"], d["text"]))
    return {**m, "stages": groups, "walls": walls, "tokens": rep["tokens"], "kept": kept,
            "version": _dt_version(dt_python)}


def ensure_fineweb_extras(dt_python: str) -> None:
    """What the recipe needs beyond ``ensure_datatrove``'s venv: aiohttp (fsspec's HTTP file system,
    which datatrove's asset cache imports to name the lid.176 file even when it is cached)."""
    if subprocess.run([dt_python, "-c", "import aiohttp, lxml_html_clean"], capture_output=True).returncode:
        subprocess.run([dt_python, "-m", "pip", "install", "-q", "aiohttp==3.14.5", "lxml_html_clean"], check=True)


def _dt_group(executor: str, step: str) -> str:
    if executor == "base_processing":
        return "read+extract" if any(k in step for k in ("READER", "Url", "EXTRAC")) else "filters"
    if executor == "tokenize" or "TOKENIZER" in step:
        return "tokenize"
    return "filters" if "PII" in step else "dedup"


def _dt_version(dt_python: str) -> str:
    r = subprocess.run([dt_python, "-m", "pip", "list", "--format=json"], capture_output=True, text=True)
    try:
        have = {p["name"].lower(): p["version"] for p in json.loads(r.stdout)}
    except ValueError:
        return ""
    return ", ".join(f"{k} {have[k]}" for k in ("datatrove", "trafilatura", "fasttext-numpy2-wheel", "tokenizers")
                     if k in have)


def _our_version() -> str:
    sha = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout
    dirty = subprocess.run(["git", "status", "--porcelain", "--", "curation", "pipelines", "mtnlg"], cwd=ROOT,
                           capture_output=True, text=True).stdout
    return f"tree {sha.strip()}{' + uncommitted changes' if dirty.strip() else ''}"


# --- one set, both sides ------------------------------------------------------------------------

def one_set(args, pages_kind: str, pages_all: list, dt_python: str, tree: str) -> dict:
    pages = [p for p in pages_all if pages_kind != "english" or p[1]["lang"] == "English"]
    share = f"-{args.english_share:g}" if pages_kind == "crawl" else ""
    set_dir = os.path.join(args.workdir, f"set-{pages_kind}{share}-{args.records}-{args.files}files")
    facts = build_set(pages, args.records, set_dir, args.files, pages_kind, args.english_share)
    print(f"\n== {pages_kind} pages: {facts['records']} records of {facts['pages']} pages "
          f"({facts['english_records']} English records) in {facts['files']} files, "
          f"{facts['bytes'] / 1e6:.1f} MB of compressed WARC ({set_dir}/input/cc)", flush=True)
    by_name = {name: item for name, item, _ in pages}
    runs: dict[str, list] = {"ours": [], "fineweb": []}
    sides = ("fineweb",) if args.fineweb_only else ("ours", "fineweb") if args.fineweb_from is None else ("ours",)
    if args.fineweb_from:  # the FineWeb side's runs of an earlier invocation on the same set
        earlier = {r["pages"]: r for r in json.load(open(args.fineweb_from))}[pages_kind]
        same = json.loads(json.dumps({k: v for k, v in facts.items() if k != "urls"}, default=str))
        if earlier["facts"] != same:
            raise SystemExit(f"--fineweb-from: its {pages_kind} set differs ({earlier['facts']} vs {same})")
        if earlier.get("variants", []) != list(args.variant):
            raise SystemExit(f"--fineweb-from: its runs are of variants {earlier.get('variants')}, not {args.variant}")
        runs["fineweb"] = earlier["runs"]["fineweb"]
        for res in runs["fineweb"]:
            res["reused"] = args.fineweb_from
    variants = tuple(args.variant)
    for r in range(args.repeats):  # A B, then B A: each side first as often as second
        for side in (sides if r % 2 == 0 else sides[::-1]):
            tag = f"{side}-{pages_kind}-{r}"
            res = (run_ours(set_dir, args.workdir, args.workers, args.no_dedup, tag, tree, variants)
                   if side == "ours" else
                   run_fineweb(set_dir, args.workdir, args.workers, args.no_dedup, dt_python, tag, variants))
            res["score"] = score(res.pop("kept"), facts["urls"], by_name)
            res.pop("stdout", None)
            res.update(load1=os.getloadavg()[0], finished=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()))
            runs[side].append(res)
            print(f"run {r} {side:<8} wall {res['wall']:7.1f} s  CPU {res['cpu']:7.1f} s (sampled "
                  f"{res['cpu_sampled']:.1f})  load1 {os.getloadavg()[0]:.1f}", flush=True)
    out = {"pages": pages_kind, "facts": {k: v for k, v in facts.items() if k != "urls"}, "runs": runs,
           "variants": list(args.variant)}
    if args.fineweb_only:
        return out
    # the median run by CPU (the lower middle one for an even count: a run that happened)
    out["median"] = {s: sorted(v, key=lambda x: x["cpu"])[(len(v) - 1) // 2] for s, v in runs.items()}
    out["cpu_median"] = {s: statistics.median(x["cpu"] for x in v) for s, v in runs.items()}
    return out


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=50_000, help="WARC response records in the set")
    ap.add_argument("--pages", choices=["all", "crawl", "english"], default="all",
                    help="which set: every page in turn, a crawl's language mix, or the English pages only")
    ap.add_argument("--lang-mix", action="store_true",
                    help="run the three sets (all, crawl, english) and show how the ratio moves")
    ap.add_argument("--english-share", type=float, default=ENGLISH_SHARE,
                    help="English share of the crawl set's records (Common Crawl's: see the docstring)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=2,
                    help="runs per side, alternating which goes first (A B B A for 2)")
    ap.add_argument("--files", type=int, default=64, help="WARC files the records are written to")
    ap.add_argument("--variant", action="append", default=[], choices=sorted(VARIANTS),
                    help="run a variant instead of the published defaults (reported as a variant): "
                         + "; ".join(f"{k}: {v}" for k, v in VARIANTS.items()))
    ap.add_argument("--no-dedup", action="store_true", help="dedup off on both sides")
    ap.add_argument("--workdir", default="/tmp/bench_vs_fineweb")
    ap.add_argument("--dt-venv", default="/tmp/dtvenv")
    ap.add_argument("--eval-dir", default=DEFAULT_EVAL)
    ap.add_argument("--ours-rev", default=None,
                    help="run ours from this commit (git archive into the workdir) instead of this checkout")
    ap.add_argument("--json", help="also write the figures here")
    ap.add_argument("--fineweb-from", metavar="JSON",
                    help="take the FineWeb side's runs from an earlier --json of the same set (its CPU "
                         "time, not wall, is what compares across runs) and run ours only")
    ap.add_argument("--fineweb-only", action="store_true",
                    help="run the FineWeb side only and write its runs to --json (for --fineweb-from)")
    args = ap.parse_args(argv)
    if args.fineweb_only and (not args.json or args.fineweb_from):
        ap.error("--fineweb-only needs --json and excludes --fineweb-from")
    dt_python = ensure_datatrove(args.dt_venv)
    ensure_fineweb_extras(dt_python)
    os.makedirs(args.workdir, exist_ok=True)
    pages = load_pages(args.eval_dir)
    kinds = ["all", "crawl", "english"] if args.lang_mix else [args.pages]
    tree, ours_version = our_tree(args.ours_rev, args.workdir)
    results = [one_set(args, kind, pages, dt_python, tree) for kind in kinds]
    if args.fineweb_only:
        json.dump(results, open(args.json, "w"), indent=1, default=str)
        print(f"FineWeb side only: its runs are in {args.json}; run ours with --fineweb-from {args.json}")
        return 0
    for res in results:
        res["median"]["ours"]["version"] = ours_version
    print_report(results, args, DIFFERENCES, TB)
    if args.json:
        json.dump(results, open(args.json, "w"), indent=1, default=str)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
