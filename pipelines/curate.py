"""The curate job: raw sources -> cleaned, deduplicated, decontaminated token shards + stats.

Four stages (``pipelines.stages``): read (read, normalize, language id, heuristics, quality),
dedup (exact + fuzzy, all sources jointly), decontaminate (13-grams), tokenize (+ shards).  Each
writes its documents as parts that the next one reads, so only small records are ever shuffled.
Every removal and dead letter is written and counted; ``run.json`` (accounting per source) is
written last.  The output layout is docs/run-layout.md.

Modes:
  (default)        one Beam job runs all four stages; its outputs are committed at the end.
  --staged         one Beam job per stage, each committed with a completion marker
                   (RUN/_curate/<stage>.done.json): for long runs.
  --resume RUN     continue a killed run: completed stages are kept, the rest run again
                   (staged); the result is the same as an uninterrupted run.
  --stage NAME     run one stage of an existing RUN again, alone (its input stage must be done).
  --dedup-against RUN_OLD   (repeatable) also remove the exact and near duplicates of documents
                   already in older curate runs (a new snapshot against what you have): reason
                   dedup_against/exact|fuzzy, the older document's id and source in the detail.
                   The older runs are only read; their dedup_index/ parameters must equal this
                   run's dedup.fuzzy settings (checked, with the parts' checksums, before any work).
Nothing carries a final name before its stage (or the whole job) has finished: outputs are
written under RUN/_curate/staging/ and renamed at commit.

--output: a new or empty folder, or one holding a curate run (which is replaced); anything else
is refused unless --overwrite, which replaces only the names a run writes (run.json, documents/,
shards/, removed/, dead_letter/, dedup/, stats/, stages/, _curate/).  --resume never deletes a
completed stage.

Local (FnApiRunner, one worker process per core unless told otherwise)::

    mtnlg curate --config demo --input-root /tmp/sample --output /tmp/run [--direct_num_workers=2]

On a cluster, any Beam runner and its usual options::

    mtnlg curate --config mtnlg --staged --output gs://BUCKET/runs/mtnlg --runner DataflowRunner --project P \\
        --region us-central1 --temp_location gs://BUCKET/tmp --setup_file ./setup.py
"""
from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import logging
import os
import sys
import time

if __name__ == "__main__":
    # `python -m pipelines.curate` gets the same terminal as `mtnlg curate`: short WARNING lines,
    # set up before Beam's import logs its optional extras' noise on the root logger (which would
    # otherwise install logging's default handler and print every line twice).
    from pipelines.config.options import console_logging

    console_logging()

import apache_beam as beam  # noqa: E402
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions

from infra.resources import ResourceError, config_path
from pipelines.config import options as cli_options
from pipelines.runfolder import report
from pipelines.runfolder.progress import ProgressLine
from pipelines.runfolder.commit import STAGES, RunDir, RunDirError, fingerprint, read_manifest
from infra.compat import CompatError
from infra.compat.beam import is_local_runner, safe_local_data_plane
from pipelines.transforms.timing import stage_seconds
from infra.config import ConfigError
from pipelines.config.job import CurateConfig, load_config
from pipelines.transforms.parts import part_dest
from pipelines.storage.files import is_remote
from pipelines.runfolder.counters import merge_counters, safe_counters, write_counters
from pipelines.stages import StageEnv, build_stage, enabled
from pipelines.storage.staging import StagingError, local_copy

log = logging.getLogger("mtnlg.curate")

# Counter (and stage-time) names -> the stage of the job that produced them (one job, 4 stages).
COUNTER_STAGE = {"read": "read", "normalize": "read", "pii": "read", "language": "read", "heuristics": "read",
                 "site_boilerplate": "read", "quality": "read", "exact_dedup": "dedup",
                 "fuzzy_dedup": "dedup",
                 "dedup": "dedup", "dedup_against": "dedup", "decontamination": "decontaminate",
                 "decontaminate": "decontaminate", "tokenize": "tokenize", "shards": "tokenize"}


def _parse(argv: list[str] | None) -> tuple[argparse.Namespace, list[str]]:
    p = argparse.ArgumentParser(prog="mtnlg curate", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", required=True,
                   help="source config: a shipped name (demo, mtnlg) or a local YAML path")
    p.add_argument("--output", default=None, help="RUN directory (local path, gs://... or s3://...)")
    p.add_argument("--input-root", default=None,
                   help="root of relative input paths (default: the config's input_root, else its folder)")
    p.add_argument("--quality-model", default=None,
                   help="fastText quality model (mtnlg quality train); sets quality.model_path "
                        "and turns the quality stage on")
    p.add_argument("--staged", action="store_true",
                   help="run each stage as its own Beam job with a completion marker (resumable)")
    p.add_argument("--resume", default=None, metavar="RUN",
                   help="resume the run in RUN: skip its completed stages, run the rest")
    p.add_argument("--stage", action="append", choices=STAGES, default=None,
                   help="run this stage of an existing RUN again, alone (repeatable)")
    p.add_argument("--dedup-against", action="append", default=[], metavar="RUN_OLD",
                   help="an older curate run (local path or URL) whose documents this run must not "
                        "repeat: exact and near duplicates of them are removed (reason "
                        "dedup_against/exact or dedup_against/fuzzy); repeatable; the older run is "
                        "only read, and its dedup index must have been made with the same dedup "
                        "parameters (checked before any work)")
    p.add_argument("--overwrite", action="store_true",
                   help="allow --output to be a non-empty folder that holds no curate run "
                        "(only the names a run writes are replaced)")
    p.add_argument("--progress-every", type=float, default=None, metavar="SECONDS",
                   help="while a stage runs, show documents done, documents/s and an ETA every "
                        "SECONDS (default: 1, one line rewritten in place, on a terminal; 30 "
                        "otherwise; 0: off)")
    cli_options.add_log_level(p)
    args, rest = p.parse_known_args(argv)
    if args.resume and args.output and os.path.abspath(args.output) != os.path.abspath(args.resume) \
            and args.output.rstrip("/") != args.resume.rstrip("/"):
        p.error("--resume RUN and --output must name the same folder")
    args.output = args.output or args.resume
    if not args.output:
        p.error("--output (or --resume) is required")
    if args.resume and args.overwrite:
        p.error("--resume never deletes a run's results; drop --overwrite")
    return args, rest


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
    """Beam options; without ``--runner``: FnApiRunner, one worker process per core
    (multi-processing), or the job in this process where that is one worker (in-memory: the
    same pickled DoFns without a process and a gRPC hop per element: on the sample, 1.27x less
    CPU than one worker process, bench/bench_local_running_mode.py); without Beam's
    construction-time type inference (``--no_pipeline_type_check``).  For the local runner (only),
    Beam's lossy data plane is fixed first (``infra.compat.beam.safe_local_data_plane``;
    ``CompatError`` on an unverified Beam).  An argument that is no Beam option raises
    ``cli_options.OptionError`` naming it."""
    cli_options.check_beam_args(beam_args)
    args = list(beam_args)
    runner = _option(args, "--runner")
    if is_local_runner(runner):
        safe_local_data_plane()
    if runner is None:
        args.append("--runner=FnApiRunner")
        workers = _option(args, "--direct_num_workers")
        if workers is None:
            workers = str(os.cpu_count() or 1)
            args.append(f"--direct_num_workers={workers}")
        if _option(args, "--direct_running_mode") is None:
            mode = "in_memory" if workers.strip() == "1" else "multi_processing"
            args.append(f"--direct_running_mode={mode}")
    args += [a for a in BUILD_OPTIONS if a not in args]
    return PipelineOptions(args)


# Beam options of every curate job. No construction-time type inference and checks: the job
# declares no type hints and has no batched DoFns, so they only re-derived element types from
# each DoFn's bytecode, a fifth of a small job's CPU (5.3 -> 4.3 s in process for 132
# documents; the same bytes), on every runner, before any work starts.
BUILD_OPTIONS = ("--no_pipeline_type_check",)


def _option(args: list[str], name: str) -> str | None:
    """The value of option ``name`` in Beam arguments (the last one wins, as in argparse)."""
    value = None
    for i, a in enumerate(args):
        if a == name and i + 1 < len(args):
            value = args[i + 1]
        elif a.startswith(name + "="):
            value = a.split("=", 1)[1]
    return value


def input_bytes(cfg: CurateConfig) -> int:
    """Size of every input file (the read stage's progress is a share of it); 0 if unknown."""
    from apache_beam.io.filesystems import FileSystems

    if any(spec.listing is not None for spec in cfg.inputs):  # wiring: issue 54 (the driver
        return 0  # asks nothing of a listing's files, so the total is unknown: no percentage)
    try:
        return sum(m.size_in_bytes or 0 for spec in cfg.inputs for pattern in spec.paths
                   for m in FileSystems.match([pattern])[0].metadata_list)
    except Exception:  # noqa: BLE001 - a display only
        return 0


def _run_fingerprint(cfg: CurateConfig, tokenizer_sha: str, quality: dict | None,
                     against: list | None = None) -> str:
    config = {k: v for k, v in cfg.to_dict().items() if k != "config_path"}
    extra = {"tokenizer": tokenizer_sha, "quality_model": (quality or {}).get("sha256")}
    if against:  # the older indices decide the dedup stage's results too
        extra["dedup_against"] = [[ix.run, ix.params_sha256] for ix in against]
    return fingerprint(config, extra)


def _split_by_stage(rows: list[dict], seconds: dict[str, float], stages) -> dict[str, dict]:
    """One job's counters and stage times, attributed to the stages that produced them."""
    out = {s: {"counters": [], "stage_seconds": {}} for s in stages}
    last = list(stages)[-1]
    for r in rows:
        out[COUNTER_STAGE.get(r["stage"], last) if len(out) > 1 else last]["counters"].append(r)
    for name, v in seconds.items():
        out[COUNTER_STAGE.get(name, last) if len(out) > 1 else last]["stage_seconds"][name] = v
    return out


def _own_parts(attempt, stage: str) -> list[str]:
    """Final relative paths of the parts a finished attempt wrote."""
    dest = part_dest(stage)
    return sorted(d["path"][len("_w/"):] for d in read_manifest(attempt.staging) if d["dest"] == dest)


class Runner:
    """Runs the stages of one curate run into a ``RunDir`` and commits them."""

    def __init__(self, cfg: CurateConfig, rd: RunDir, fp: str, options: PipelineOptions,
                 vocab_size: int, quality: dict | None) -> None:
        self.cfg, self.rd, self.fp, self.options = cfg, rd, fp, options
        self.vocab_size = vocab_size
        self.quality_sha = (quality or {}).get("sha256")
        self.against: tuple = ()
        self.progress_every: float | None = None
        self.passed_on: dict[str, int] = {}  # documents each stage passed on (progress totals)

    @contextlib.contextmanager
    def _progress(self, stages: list[tuple[str, str]]):
        """The live progress line of one Beam job (``pipelines.runfolder.progress``)."""
        stream = cli_options.terminal()
        tty = bool(getattr(stream, "isatty", lambda: False)())
        names = [s for s, _ in stages]
        earlier = [s for s in STAGES[:STAGES.index(names[0])] if s in self.passed_on] if names else []
        totals = {names[0]: self.passed_on[earlier[-1]]} if earlier else {}
        line = ProgressLine(stages, stream, tty, self.progress_every,
                            input_bytes(self.cfg) if "read" in names else 0, totals)
        line.start()
        try:
            yield
        finally:
            line.stop()
            self.passed_on.update(line.passed_on)

    def _env(self, attempt) -> StageEnv:
        return StageEnv(self.cfg, attempt.staging, self.vocab_size, self.quality_sha, self.against)

    def _parts_info(self, stage: str, attempt, previous: list[str]) -> list[str]:
        return _own_parts(attempt, stage) if enabled(stage, self.cfg) and stage != "tokenize" else (
            [] if stage == "tokenize" else previous)

    def single_job(self) -> None:
        """All stages in one Beam job, committed together at the end."""
        attempts = {s: self.rd.new_attempt(s) for s in STAGES}
        p = beam.Pipeline(options=self.options)
        urls = None
        for s in STAGES:
            urls = build_stage(s, p, self._env(attempts[s]), urls)
        t0 = time.perf_counter()
        with self._progress([(s, attempts[s].staging) for s in STAGES if enabled(s, self.cfg)]):
            result = p.run()
            result.wait_until_finish()
        wall = time.perf_counter() - t0
        split = _split_by_stage(safe_counters(result), stage_seconds(result), STAGES)
        infos, previous = {}, []
        for s in STAGES:
            parts = self._parts_info(s, attempts[s], previous)
            infos[s] = {"parts": parts, "job_wall_seconds": round(wall, 3), "mode": "single", **split[s]}
            previous = parts
        self.rd.commit([attempts[s] for s in STAGES], self.fp, infos)

    def stage_job(self, stage: str) -> None:
        """One stage as its own Beam job over the previous stage's committed parts."""
        i = STAGES.index(stage)
        previous: list[str] = []
        if i:
            m = self.rd.done(STAGES[i - 1], self.fp)
            if m is None:
                raise RunDirError(f"stage {stage!r} needs stage {STAGES[i - 1]!r}, which has not "
                                  f"completed in {self.rd.root!r}")
            previous = list(m.get("parts", []))
        attempt = self.rd.new_attempt(stage)
        t0 = time.perf_counter()
        rows, seconds = [], {}
        if enabled(stage, self.cfg):
            p = beam.Pipeline(options=self.options)
            urls = None if stage == "read" else p | "InputParts" >> beam.Create(
                [self.rd.path(*rel.split("/")) for rel in previous], reshuffle=False)  # ReadParts spreads them
            build_stage(stage, p, self._env(attempt), urls)
            with self._progress([(stage, attempt.staging)]):
                result = p.run()
                result.wait_until_finish()
            rows, seconds = safe_counters(result), stage_seconds(result)
        wall = time.perf_counter() - t0
        info = {"parts": self._parts_info(stage, attempt, previous), "wall_seconds": round(wall, 3),
                "mode": "staged", **_split_by_stage(rows, seconds, [stage])[stage]}
        self.rd.commit([attempt], self.fp, {stage: info})
        log.warning("stage %s committed (%.1fs)", stage, wall)


def finalize(rd: RunDir, fp: str, base: dict, cfg: CurateConfig | None = None) -> dict:
    """Merge the stages' aggregates, check the accounting and write run.json (last)."""
    from pipelines.transforms.stats import grid_spec_of

    markers = {s: rd.done(s, fp) for s in STAGES}
    missing = [s for s, m in markers.items() if m is None]
    if missing:
        raise RunDirError(f"stages {missing} have not completed; run with --resume {rd.root}")
    tables = report.merge_stage_aggregates(rd.root, list(STAGES),
                                           grid_spec_of(cfg) if cfg is not None else None)
    shards = report.read_parquet_rows(rd.path("stats", "shards.parquet"))
    counters = merge_counters(r for m in markers.values() for r in m.get("counters", []))
    write_counters(counters, rd.root)
    seconds: dict[str, float] = {}
    for m in markers.values():
        for k, v in (m.get("stage_seconds") or {}).items():
            seconds[k] = round(seconds.get(k, 0.0) + v, 3)
    acc = report.accounting(tables["counts"], tables["read"], shards)
    walls = {s: m.get("wall_seconds") for s, m in markers.items() if m.get("wall_seconds") is not None}
    info = {**base, "stage_seconds": seconds, "stage_wall_seconds": walls,
            "stages": {s: {"committed_at": m.get("committed_at"), "mode": m.get("mode"),
                           "parts": len(m.get("parts", []))} for s, m in markers.items()},
            **acc, "accounting_ok": True}
    report.write_run_json(rd.root, info)
    return {**info, "_counters": counters}


def _tokenizer(cfg: CurateConfig):
    """The run's tokenizer, loaded (so a folder without one, or a ``tokenizer.json`` that does
    not parse, is a ``ConfigError`` naming the setting, before any work) and its facts."""
    from curation.tokenizer import TokenizerError, load_tokenizer

    try:
        tokenizer = load_tokenizer(local_copy(cfg.tokenizer.path))
        return tokenizer, tokenizer.info()
    except TokenizerError as e:
        raise ConfigError(f"tokenizer.path: {e}") from None


def run(argv: list[str] | None = None) -> int:
    args, beam_args = _parse(argv)
    rd = RunDir(args.output if is_remote(args.output) else os.path.abspath(args.output))
    try:
        options = pipeline_options(beam_args)  # unknown options fail here, before any work
        cli_options.use_filesystem_options(options)  # e.g. --s3_endpoint_url for the checks below
        cfg = load_config(config_path("sources", args.config), input_root=args.input_root)
        quality = _quality_model(cfg, args.quality_model)  # before any input is read
        tokenizer, tokenizer_info = _tokenizer(cfg)
        from pipelines.transforms.dedup_index import preflight

        against = preflight(cfg, args.dedup_against, rd.root)  # before RUN is touched
        fp = _run_fingerprint(cfg, tokenizer_info["sha256"], quality, against)
        existing = bool(args.resume or args.stage)
        rd.prepare(fp, resume=existing, overwrite=args.overwrite)
    except (cli_options.OptionError, CompatError) as e:
        print(f"mtnlg curate: {e}", file=sys.stderr)
        return 2
    except (ConfigError, RunDirError, ResourceError, StagingError) as e:
        print(f"mtnlg curate: config error: {e}", file=sys.stderr)
        return 2
    runner = Runner(cfg, rd, fp, options, tokenizer.vocab_size, quality)
    runner.against = tuple(against)
    runner.progress_every = args.progress_every
    started, t0 = dt.datetime.now(dt.timezone.utc), time.perf_counter()
    with cli_options.job_logging(rd.root, "curate", args.log_level) as log_path:
        code = _run_stages(args, rd, fp, runner)
    if code:
        return code
    wall = time.perf_counter() - t0
    base = {
        "format_version": report.FORMAT_VERSION,
        "config": cfg.to_dict(), "config_path": cfg.config_path,
        "input_root": cfg.input_root,  # document ids hold paths relative to it (contract 1)
        "runner": options.view_as(StandardOptions).runner,
        "pipeline_options": options.get_all_options(drop_default=True),
        "mode": "stage" if args.stage else "resume" if args.resume else
        "staged" if args.staged else "single",
        "started_at": started.isoformat(),
        "finished_at": dt.datetime.now(dt.timezone.utc).isoformat(),
        "wall_seconds": round(wall, 3),
        "tokenizer": {**tokenizer_info, "path": cfg.tokenizer.path},  # as given: pkg://, URL
        "quality_model": quality,
        "fingerprint": fp,
        "dedup_against": [{"run": ix.run, "documents": ix.documents, "params_sha256": ix.params_sha256}
                          for ix in against],
    }
    try:
        info = finalize(rd, fp, base, cfg)
    except RunDirError as e:  # e.g. --stage on a run whose other stages never completed
        print(f"mtnlg curate: {e}", file=sys.stderr)
        return 0 if args.stage else 2
    print("\n".join(cli_options.stage_lines(info.pop("_counters"), info["stage_seconds"])))
    print(report.table(info["sources"]))
    print(f"wrote {rd.path('run.json')} ({wall:.1f}s); Beam's log: {log_path}")
    return 0


def _run_stages(args: argparse.Namespace, rd: RunDir, fp: str, runner: Runner) -> int:
    """The Beam job(s) the mode asks for; 2 (with a message) if the run directory refuses."""
    try:
        if args.stage:
            for s in STAGES:
                if s in args.stage:
                    rd.uncommit(s)
                    runner.stage_job(s)
        elif args.resume or args.staged:
            for s in STAGES:
                if rd.done(s, fp) is None:
                    runner.stage_job(s)
                else:
                    log.warning("stage %s already completed; skipped", s)
        else:
            runner.single_job()
    except RunDirError as e:
        print(f"mtnlg curate: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    from infra.compat.beam import exit_after_job

    exit_after_job(run())

