"""datatrove's side of bench/job/vs_fineweb.py: the FineWeb recipe (run in datatrove's own venv).

    /tmp/dtvenv/bin/python bench/peers/fineweb_side.py WARC_DIR OUT --lid MODEL --tokenizer TOKENIZER_JSON
        [--workers 2] [--tasks-per-file] [--extract-timeout S] [--no-trafilatura-deduplicate] [--no-dedup]

The steps and parameters of datatrove's ``examples/fineweb.py`` (the recipe as its authors
publish it), on a local executor instead of Slurm, every datatrove default kept:

1. base processing: ``WarcReader`` -> ``URLFilter`` -> ``Trafilatura(favour_precision=True)`` ->
   ``LanguageFilter(languages=["en"])`` -> ``GopherRepetitionFilter`` -> ``GopherQualityFilter``
   -> ``C4QualityFilter(filter_no_terminal_punct=False)`` -> ``FineWebQualityFilter`` ->
   ``JsonlWriter``; every filter with its exclusion writer, as in the recipe;
2. MinHash dedup in its four steps (5-grams, 14 buckets x 8 hashes, sha1 at 64 bits):
   signatures, buckets (one task per bucket), clusters (one task), filter (``TokensCounter``,
   ``MinhashDedupFilter``, ``PIIFormatter``, ``JsonlWriter``);
3. tokenization: ``DocumentTokenizer`` (GPT-2, ``<|endoftext|>`` after each document) to its
   token files (the recipe ends at JSONL; datatrove's tokenization examples do this next).

What differs from the published file, and why (the harness prints it too):
- ``LanguageFilter(languages=["en"])``: the example predates the change of its default to all
  languages; English only is the recipe's intent (FineWeb is English) and ours' setting.
- the lid.176 model and the URL block lists come from datatrove's asset cache, filled offline
  (no network at run time): the model with ``--lid`` (the project's ``lid.176.ftz``, the
  quantised lid.176, in place of the ``lid.176.bin`` it downloads); the block lists are
  datatrove's own bundled tarball (its normal path); ``tldextract`` uses its bundled public
  suffix snapshot instead of fetching the list.
- ``TokensCounter``/``DocumentTokenizer`` get the project's GPT-2 ``tokenizer.json`` (the same
  vocabulary as ours) by path instead of ``"gpt2"`` from the Hub.
- tasks: the recipe's 8,000 (base processing) and 1,000 (MinHash) are a crawl's Slurm sizes, each
  task reading many WARC files; here every executor runs one task per worker (each reading its
  share of the files), the buckets one task per bucket and the clusters one, as in the recipe.
  ``--tasks-per-file``: one task per WARC file instead (a task's set-up paid per file).
- variants (not the recipe): ``--no-trafilatura-deduplicate`` (trafilatura's per-process
  paragraph cache off), ``--extract-timeout`` (datatrove's default is 1 s).

Prints one JSON line: per executor its wall seconds, per step its stats (time, documents in and
out), documents and tokens kept.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import time

LID_URL = "https://dl.fbaipublicfiles.com/fasttext/supervised-models/lid.176.bin"


def fill_asset_cache(lid: str) -> str:
    """Put ``lid`` where ``FT176LID`` looks for its download (HF_ASSETS_CACHE/datatrove/lid/ft176,
    the URL's path with '/' -> '_'), marked complete so datatrove never fetches it."""
    from fsspec.core import strip_protocol
    from huggingface_hub import cached_assets_path

    folder = cached_assets_path(library_name="datatrove", namespace="lid", subfolder="ft176")
    dest = os.path.join(folder, strip_protocol(LID_URL).replace("/", "_"))
    if not os.path.exists(dest + ".completed"):
        shutil.copyfile(lid, dest)
        open(dest + ".completed", "w").close()
    return dest


def trafilatura_variant(args) -> dict:
    """Trafilatura's arguments beyond the recipe's ``favour_precision=True``: none by default."""
    kw: dict = {}
    if args.extract_timeout is not None:
        kw["timeout"] = args.extract_timeout
    if args.no_trafilatura_deduplicate:
        kw["deduplicate"] = False
    return kw


def executor(pipeline, tasks: int, workers: int, logs: str):
    from datatrove.executor import LocalPipelineExecutor

    return LocalPipelineExecutor(pipeline=pipeline, tasks=max(1, tasks), workers=min(workers, max(1, tasks)),
                                 logging_dir=logs)


def step_stats(logs: str) -> list[dict]:
    """The executor's merged per-step stats (stats.json): name, seconds in the step, counters."""
    with open(os.path.join(logs, "stats.json")) as f:
        steps = json.load(f)
    return [{"name": s["name"], "seconds": (s.get("time_stats") or {}).get("total", 0.0)  # 0 when never timed
             if isinstance(s.get("time_stats"), dict) else 0.0,
             "stats": {k: (v["total"] if isinstance(v, dict) else v) for k, v in s.get("stats", {}).items()}}
            for s in steps]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("input", help="folder of .warc.gz files")
    ap.add_argument("out")
    ap.add_argument("--lid", required=True, help="lid.176 fastText model file (the project's)")
    ap.add_argument("--tokenizer", required=True, help="GPT-2 tokenizer.json (the project's)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--tasks-per-file", action="store_true",
                    help="one task per WARC file (default: one per worker, each reading its share)")
    ap.add_argument("--extract-timeout", type=float, default=None,
                    help="Trafilatura's per-page timeout (default: datatrove's)")
    ap.add_argument("--no-trafilatura-deduplicate", action="store_true",
                    help="trafilatura's per-process paragraph cache off (datatrove's default: on)")
    ap.add_argument("--no-dedup", action="store_true", help="skip the MinHash steps (tokenize the filtered output)")
    args = ap.parse_args()
    fill_asset_cache(os.path.abspath(args.lid))

    from datatrove.pipeline.dedup import MinhashDedupCluster, MinhashDedupFilter, MinhashDedupSignature
    from datatrove.pipeline.dedup.minhash import MinhashConfig, MinhashDedupBuckets
    from datatrove.pipeline.extractors import Trafilatura
    from datatrove.pipeline.filters import (C4QualityFilter, FineWebQualityFilter, GopherQualityFilter,
                                            GopherRepetitionFilter, LanguageFilter, URLFilter)
    from datatrove.pipeline.formatters import PIIFormatter
    from datatrove.pipeline.readers import JsonlReader, WarcReader
    from datatrove.pipeline.tokens import DocumentTokenizer, TokensCounter
    from datatrove.pipeline.writers.jsonl import JsonlWriter
    from datatrove.utils.hashing import HashConfig
    from tldextract import TLDExtract

    out, dump = os.path.abspath(args.out), "CC-MAIN-bench"
    files = len(glob.glob(os.path.join(args.input, "*.warc.gz")))
    tasks = files if args.tasks_per_file else min(files, args.workers)
    removed = f"{out}/base_processing/removed"
    url_filter = URLFilter(exclusion_writer=JsonlWriter(f"{removed}/1_url"))
    url_filter.tldextractor = TLDExtract(suffix_list_urls=())  # the bundled snapshot: no network
    runs: list[tuple[str, list, int]] = [("base_processing", [
        WarcReader(args.input, glob_pattern="*.warc.gz", default_metadata={"dump": dump}),
        url_filter,
        Trafilatura(favour_precision=True, **trafilatura_variant(args)),
        LanguageFilter(languages=["en"], exclusion_writer=JsonlWriter(
            f"{out}/base_processing/2_non_english/", output_filename="${language}/" + dump + "/${rank}.jsonl.gz")),
        GopherRepetitionFilter(exclusion_writer=JsonlWriter(f"{removed}/3_gopher_rep")),
        GopherQualityFilter(exclusion_writer=JsonlWriter(f"{removed}/4_gopher_qual")),
        C4QualityFilter(filter_no_terminal_punct=False, exclusion_writer=JsonlWriter(f"{removed}/5_c4")),
        FineWebQualityFilter(exclusion_writer=JsonlWriter(f"{removed}/6_fineweb_qual")),
        JsonlWriter(f"{out}/base_processing/output"),
    ], tasks)]
    filtered = f"{out}/base_processing/output"
    final = filtered
    if not args.no_dedup:
        cfg = MinhashConfig(hash_config=HashConfig(hash_fc="sha1", precision=64), num_buckets=14,
                            hashes_per_bucket=8, n_grams=5)
        mh = f"{out}/minhash"
        final = f"{mh}/deduped_output"
        runs += [
            ("minhash_1_signatures", [JsonlReader(filtered), MinhashDedupSignature(f"{mh}/signatures", config=cfg)],
             tasks),
            ("minhash_2_buckets", [MinhashDedupBuckets(f"{mh}/signatures", f"{mh}/buckets", config=cfg)],
             cfg.num_buckets),
            ("minhash_3_cluster", [MinhashDedupCluster(f"{mh}/buckets", f"{mh}/remove_ids", config=cfg)], 1),
            ("minhash_4_filter", [JsonlReader(filtered), TokensCounter(tokenizer_name_or_path=args.tokenizer),
                                  MinhashDedupFilter(f"{mh}/remove_ids"), PIIFormatter(), JsonlWriter(final)],
             tasks),
        ]
    runs.append(("tokenize", [JsonlReader(final), DocumentTokenizer(
        f"{out}/tokens", tokenizer_name_or_path=args.tokenizer, eos_token="<|endoftext|>",
        local_working_dir=f"{out}/tokens_tmp")], tasks))
    report: dict = {"side": "fineweb", "executors": []}
    for name, pipeline, tasks in runs:
        logs = f"{out}/logs/{name}"
        t0 = time.perf_counter()
        executor(pipeline, tasks, args.workers, logs).run()
        report["executors"].append({"name": name, "tasks": tasks, "wall": time.perf_counter() - t0,
                                    "steps": step_stats(logs)})
    report["kept_docs_path"] = final
    report["tokens"] = sum(os.path.getsize(p) for p in glob.glob(f"{out}/tokens/*.ds")) // 2  # uint16 (GPT-2)
    print(json.dumps(report))


if __name__ == "__main__":  # datatrove's executor starts processes (forkserver)
    main()
