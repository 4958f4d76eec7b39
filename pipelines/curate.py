"""The curate job: raw sources -> cleaned, deduplicated, decontaminated token shards + stats.

read -> normalize -> language id -> heuristics -> exact dedup -> fuzzy dedup (all sources
jointly) -> decontaminate -> tokenize -> shards, with every removal and dead letter written and
counted, and ``run.json`` (accounting per source) written after the pipeline finishes.
The output layout is docs/run-layout.md.

Local (FnApiRunner, one worker process per core unless told otherwise)::

    mtnlg curate --config demo --input-root /tmp/sample --output /tmp/run [--direct_num_workers=2]

On a cluster, any Beam runner and its usual options::

    mtnlg curate --config mtnlg --output gs://BUCKET/runs/mtnlg --runner DataflowRunner --project P \\
        --region us-central1 --temp_location gs://BUCKET/tmp --setup_file ./setup.py
"""
from __future__ import annotations

import argparse
import datetime as dt
import os
import shutil
import sys
import time

import apache_beam as beam
import pyarrow as pa
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions

from pipelines.common import DEAD_LETTER, stage_seconds
from pipelines.config import ConfigError, CurateConfig, load_config
from pipelines.decontaminate import Decontaminate, WriteCuts
from pipelines.dedup_documents import DedupDocuments
from pipelines.dedup_stats import WriteDedupOutputs
from pipelines.filters import HeuristicsFn, LanguageFn, Normalize
from pipelines.common import ApplyFilter
from pipelines.quality import QualityFn
from pipelines.read import ReadInputs
from pipelines import report
from pipelines.sinks import (WriteDeadLetters, WriteRemoved, WriteShards, counters_rows,
                             is_remote, join, write_counters)
from pipelines import cli_options
from pipelines.staging import StagingError, local_copy, sha256_of
from mtnlg.resources import ResourceError, config_path
from pipelines.stats import ReadCounts, StatsRows, WriteContaminationStats, WriteStats
from pipelines.tokenize import Tokenize

SHARD_SCHEMA = pa.schema([
    ("source", pa.string()), ("shard", pa.int64()), ("prefix", pa.string()),
    ("documents", pa.int64()), ("tokens", pa.int64()), ("bin_sha256", pa.string()),
    ("idx_sha256", pa.string()),
])
RUN_OUTPUTS = ("run.json", "documents", "shards", "removed", "dead_letter", "dedup", "stats", "logs")


def build(p: beam.Pipeline, cfg: CurateConfig, run_dir: str, vocab_size: int) -> None:
    """Add every stage of the curate job to pipeline ``p``."""
    from blending.indexed_dataset import dtype_for_vocab

    reads = [p | f"Read[{i}:{spec.reader}:{spec.source or 'pile'}]" >> ReadInputs(
                 spec, input_root=cfg.input_root) for i, spec in enumerate(cfg.inputs)]
    read = {k: [r[k] for r in reads] | f"All_{k}" >> beam.Flatten()
            for k in ("docs", "removed", DEAD_LETTER)}
    _ = read | "ReadCounts" >> ReadCounts(run_dir)
    removed, groups = [read["removed"]], []
    dedup_extra = {"inputs": [], "buckets": [], "rounds": []}  # dedup stats inputs (dedup_stats.py)

    docs = read["docs"] | "Normalize" >> Normalize()
    out = docs | "Language" >> ApplyFilter(LanguageFn(cfg.language), cfg.skip_sources.get("language", ()))
    removed.append(out["removed"])
    out = out["kept"] | "Heuristics" >> ApplyFilter(HeuristicsFn(cfg.heuristics), cfg.skip_sources.get("heuristics", ()))
    removed.append(out["removed"])
    docs = out["kept"]
    if cfg.quality.enabled:  # score once, decide in config; the model's sha256 pins every worker
        out = docs | "Quality" >> ApplyFilter(QualityFn(cfg.quality, sha256_of(cfg.quality.model_path)))
        removed.append(out["removed"])
        docs = out["kept"]
    if cfg.dedup.exact or cfg.dedup.fuzzy.enabled:  # exact, then fuzzy on exact's survivors
        out = docs | "Dedup" >> DedupDocuments(cfg.dedup.exact, cfg.dedup.fuzzy, cfg.priority)
        removed.append(out["removed"])
        groups.append(out["groups"])
        for k in dedup_extra:
            if k in out:
                dedup_extra[k].append(out[k])
        docs = out["kept"]
    if cfg.decontamination.enabled and cfg.decontamination.tasks:
        out = docs | "Decontaminate" >> Decontaminate(cfg.decontamination.tasks,
                                                      cfg.decontamination.rule)
        removed.append(out["removed"])
        _ = out["cuts"] | "WriteCuts" >> WriteCuts(run_dir)
        _ = out | "ContaminationStats" >> WriteContaminationStats(run_dir)
        docs = out["kept"]
    tok = cfg.tokenizer
    out = docs | "Tokenize" >> Tokenize(tok.path, tok.min_tokens, tok.batch_size)
    removed.append(out["removed"])
    tokenized = out["kept"]

    dtype = dtype_for_vocab(vocab_size).name
    shards = tokenized | "Shards" >> WriteShards(run_dir, cfg.shards.max_tokens_per_shard, dtype)
    _ = shards | "ShardTable" >> beam.io.WriteToParquet(
        join(run_dir, "stats", "shards.parquet"), SHARD_SCHEMA, num_shards=1, shard_name_template="")
    all_removed = removed | "AllRemoved" >> beam.Flatten()
    _ = all_removed | "WriteRemoved" >> WriteRemoved(run_dir, cfg.removed_sample)
    _ = read[DEAD_LETTER] | "WriteDeadLetters" >> WriteDeadLetters(run_dir)
    if groups:
        dedup_in = {k: v | f"AllDedup_{k}" >> beam.Flatten() for k, v in dedup_extra.items() if v}
        dedup_in["groups"] = groups | "AllGroups" >> beam.Flatten()
        _ = dedup_in | "WriteDedup" >> WriteDedupOutputs(run_dir)
    rows = ({"kept": tokenized, "removed": all_removed, "dead_letter": read[DEAD_LETTER]}
            | "StatsRows" >> StatsRows())
    _ = rows | "Stats" >> WriteStats(run_dir)


def _parse(argv: list[str] | None) -> tuple[argparse.Namespace, list[str]]:
    p = argparse.ArgumentParser(prog="mtnlg curate", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", required=True,
                   help="source config: a shipped name (demo, mtnlg) or a local YAML path")
    p.add_argument("--output", required=True, help="RUN directory (local path, s3://, gs://...)")
    p.add_argument("--input-root", default=None,
                   help="root of relative input paths (default: the config's input_root, else its folder)")
    p.add_argument("--quality-model", default=None,
                   help="fastText quality model (mtnlg quality train); sets quality.model_path "
                        "and turns the quality stage on")
    cli_options.add_log_level(p)
    return p.parse_known_args(argv)


def _quality_model(cfg: CurateConfig, override: str | None) -> dict | None:
    """Apply ``--quality-model`` and check the model loads: ``{path, sha256, card}`` for run.json,
    or ``ConfigError`` for a missing or corrupt model (so the run fails before reading input)."""
    from curation.quality import QualityModelError, model_info

    if override:
        cfg.quality.model_path = override if is_remote(override) else os.path.abspath(override)
        cfg.quality.enabled = True
    if not cfg.quality.enabled:
        return None
    try:
        info = {**model_info(local_copy(cfg.quality.model_path)), "path": cfg.quality.model_path}
    except (QualityModelError, StagingError) as e:
        raise ConfigError(str(e)) from None
    card = os.path.join(os.path.dirname(local_copy(info["path"])), "model_card.json")
    if os.path.exists(card):  # the held-out metrics travel with the run
        import json

        with open(card, encoding="utf-8") as f:
            c = json.load(f)
        if c.get("model", {}).get("sha256") == info["sha256"]:
            info["card"] = {"path": card, "metrics": c.get("metrics", {})}
    return info


def pipeline_options(beam_args: list[str]) -> PipelineOptions:
    """Beam options; without ``--runner``: FnApiRunner, multi-processing, one worker per core.
    An argument that is no Beam option raises ``cli_options.OptionError`` naming it."""
    cli_options.check_beam_args(beam_args)
    args = list(beam_args)
    if not any(a == "--runner" or a.startswith("--runner=") for a in args):
        args.append("--runner=FnApiRunner")
        if not any(a.startswith("--direct_running_mode") for a in args):
            args.append("--direct_running_mode=multi_processing")
        if not any(a.startswith("--direct_num_workers") for a in args):
            args.append(f"--direct_num_workers={os.cpu_count() or 1}")
    return PipelineOptions(args)


def prepare_output(run_dir: str) -> None:
    """Make RUN ready: create it, or clear a previous run's outputs (only a previous run's)."""
    if is_remote(run_dir):
        return
    if os.path.isdir(run_dir) and os.listdir(run_dir):
        if not os.path.exists(os.path.join(run_dir, "run.json")) and not os.path.isdir(
                os.path.join(run_dir, "stats")):
            raise ConfigError(f"--output: {run_dir!r} is not empty and holds no previous run")
        for name in RUN_OUTPUTS:
            path = os.path.join(run_dir, name)
            if os.path.isdir(path):
                shutil.rmtree(path)
            elif os.path.exists(path):
                os.remove(path)
    os.makedirs(run_dir, exist_ok=True)


def run(argv: list[str] | None = None) -> int:
    args, beam_args = _parse(argv)
    run_dir = args.output if is_remote(args.output) else os.path.abspath(args.output)
    try:
        options = pipeline_options(beam_args)  # unknown options fail here, before any work
        cli_options.use_filesystem_options(options)  # e.g. --s3_endpoint_url for the checks below
        cfg = load_config(config_path("sources", args.config), input_root=args.input_root)
        quality = _quality_model(cfg, args.quality_model)  # before any input is read
        from curation.tokenizer import load_tokenizer

        tokenizer = load_tokenizer(local_copy(cfg.tokenizer.path))
        prepare_output(run_dir)
    except cli_options.OptionError as e:
        print(f"mtnlg curate: {e}", file=sys.stderr)
        return 2
    except (ConfigError, ResourceError, StagingError) as e:
        print(f"mtnlg curate: config error: {e}", file=sys.stderr)
        return 2
    started, t0 = dt.datetime.now(dt.timezone.utc), time.perf_counter()
    with cli_options.job_logging(run_dir, "curate", args.log_level) as log_path:
        p = beam.Pipeline(options=options)
        build(p, cfg, run_dir, tokenizer.vocab_size)
        result = p.run()
        result.wait_until_finish()
    write_counters(result, run_dir)  # Beam counters per stage/source/reason -> stats/counters.json
    wall = time.perf_counter() - t0
    stats = join(run_dir, "stats")
    acc = report.accounting(report.read_parquet_rows(join(stats, "counts.parquet")),
                            report.read_parquet_rows(join(stats, "read_counts.parquet")),
                            report.read_parquet_rows(join(stats, "shards.parquet")))
    info = {
        "format_version": report.FORMAT_VERSION,
        "config": cfg.to_dict(), "config_path": cfg.config_path,
        "input_root": cfg.input_root,  # document ids hold paths relative to it (contract 1)
        "runner": options.view_as(StandardOptions).runner,
        "pipeline_options": options.get_all_options(drop_default=True),
        "started_at": started.isoformat(),
        "finished_at": dt.datetime.now(dt.timezone.utc).isoformat(),
        "wall_seconds": round(wall, 3),
        "stage_seconds": stage_seconds(result),
        "tokenizer": {**tokenizer.info(), "path": cfg.tokenizer.path},  # as given: pkg://, URL
        "quality_model": quality,
        **acc,
        "accounting_ok": True,
    }
    path = report.write_run_json(run_dir, info)
    print("\n".join(cli_options.stage_lines(_counter_rows(result), info["stage_seconds"])))
    print(report.table(acc["sources"]))
    print(f"wrote {path} ({wall:.1f}s); Beam's log: {log_path}")
    return 0


def _counter_rows(result) -> list[dict]:
    try:
        return counters_rows(result)
    except Exception:  # noqa: BLE001 - runners without metrics: no stage lines
        return []


if __name__ == "__main__":
    cli_options.console_logging()
    sys.exit(run())
