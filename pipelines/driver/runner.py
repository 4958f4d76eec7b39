"""The curate job's Beam jobs: all stages in one job, or one job per stage, each committed into
the RUN folder (``pipelines.runfolder.commit``) with its counters and worker time attributed to
the stage whose step produced them (``pipelines.stages``)."""
from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
import time

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions

from pipelines.build import StageEnv, build_stage, enabled
from pipelines.config import options as cli_options
from pipelines.config.job import CurateConfig
from pipelines.driver.job_failure import WorkerWatch, explain, is_no_space, is_worker_lost
from pipelines.plumbing.parts import part_dest
from pipelines.plumbing.timing import stage_seconds
from pipelines.runfolder.commit import RunDir, RunDirError, read_manifest
from pipelines.runfolder.counters import safe_counters
from pipelines.runfolder.progress import ProgressLine
from pipelines.stages import STAGES, UnknownStepError, stage_of

log = logging.getLogger("mtnlg.curate")


def input_bytes(cfg: CurateConfig) -> int:
    """Size of every input file (the read stage's progress is a share of it); 0 if unknown."""
    from apache_beam.io.filesystems import FileSystems

    if any(spec.listing is not None for spec in cfg.inputs):
        return 0  # the driver asks nothing of a listing's files: their total is unknown
    try:
        return sum(m.size_in_bytes or 0 for spec in cfg.inputs for pattern in spec.paths
                   for m in FileSystems.match([pattern])[0].metadata_list)
    except Exception:  # noqa: BLE001 - a display only
        return 0


def attribute(rows: list[dict], seconds: dict[str, float], stages) -> dict[str, dict]:
    """One job's counter rows and worker seconds, by the stage whose step produced them.  A name
    no stage declares is logged as an error and kept under the job's last stage (a report is
    never a reason to lose a finished run; the tests make it an error)."""
    out = {s: {"counters": [], "stage_seconds": {}} for s in stages}
    last = list(stages)[-1]

    def stage(step: str) -> str:
        try:
            found = stage_of(step)
        except UnknownStepError as e:
            log.error("%s; counted under stage %s", e, last)
            return last
        return found if found in out else last

    for r in rows:
        out[stage(r["stage"])]["counters"].append(r)
    for name, v in seconds.items():
        out[stage(name)]["stage_seconds"][name] = v
    return out


def _own_parts(attempt, stage: str) -> list[str]:
    """Final relative paths of the parts a finished attempt wrote."""
    dest = part_dest(stage)
    return sorted(d["path"][len("_w/"):] for d in read_manifest(attempt.staging) if d["dest"] == dest)


class Runner:
    """Runs the stages of one curate run into a ``RunDir`` and commits them."""

    def __init__(self, cfg: CurateConfig, rd: RunDir, fp: str, options: PipelineOptions,
                 vocab_size: int, quality: dict | None, against: tuple = (),
                 progress_every: float | None = None) -> None:
        self.cfg, self.rd, self.fp, self.options = cfg, rd, fp, options
        self.vocab_size = vocab_size
        self.quality_sha = (quality or {}).get("sha256")
        self.against, self.progress_every = tuple(against), progress_every
        self.passed_on: dict[str, int] = {}  # documents each stage passed on (progress totals)
        # What a failed job leaves (``discard_unfinished``): attempts not committed yet, whether
        # their commit had begun, and what was running.
        self.open_attempts: list = []
        self.committing = False
        self.running = ""
        self._line: ProgressLine | None = None

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
        self._line = line
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
        self.open_attempts, self.running = list(attempts.values()), "the job (every stage in one Beam job)"
        p = beam.Pipeline(options=self.options)
        urls = None
        for s in STAGES:
            urls = build_stage(s, p, self._env(attempts[s]), urls)
        t0 = time.perf_counter()
        with self._progress([(s, attempts[s].staging) for s in STAGES if enabled(s, self.cfg)]):
            result = p.run()
            result.wait_until_finish()
        wall = time.perf_counter() - t0
        split = attribute(safe_counters(result), stage_seconds(result), STAGES)
        infos, previous = {}, []
        for s in STAGES:
            parts = self._parts_info(s, attempts[s], previous)
            infos[s] = {"parts": parts, "job_wall_seconds": round(wall, 3), "mode": "single", **split[s]}
            previous = parts
        self._commit([attempts[s] for s in STAGES], infos)

    def _commit(self, attempts: list, infos: dict) -> None:
        self.committing, self.running = True, f"the commit of {', '.join(a.stage for a in attempts)}"
        self.rd.commit(attempts, self.fp, infos)
        self.committing, self.open_attempts = False, []

    def current_stage(self) -> str:
        """What the job was running: its progress line's stage when it showed one."""
        current = getattr(self._line, "_current", None) if self._line is not None else None
        if current and not self.committing and self.running.startswith("the job"):
            return f"the job (the last stage to report progress: {current})"
        return self.running

    def discard_unfinished(self) -> int:
        """Delete the staging folders of the attempts a failed job left (their parts and spill
        files; a stage always runs again whole), unless their commit had begun: ``--resume``
        finishes such a commit.  Returns the bytes removed."""
        from infra.storage.files import delete_tree, list_files

        if self.committing:
            return 0
        removed = 0
        for attempt in self.open_attempts:
            if "://" not in attempt.staging:
                removed += sum(os.path.getsize(f) for f in list_files(attempt.staging) if os.path.isfile(f))
            delete_tree(attempt.staging)
        self.open_attempts = []
        return removed

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
        self.open_attempts, self.running, self._line = [attempt], f"stage {stage}", None
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
                "mode": "staged", **attribute(rows, seconds, [stage])[stage]}
        self._commit([attempt], {stage: info})
        log.warning("stage %s committed (%.1fs)", stage, wall)


def run_stages(args: argparse.Namespace, rd: RunDir, fp: str, runner: Runner, resume: str = "") -> int:
    """The Beam job(s) the mode asks for; 2 (with a message) if the run directory refuses; 1 with
    one line (``job_failure``) if a worker was lost or the disk filled up part-way."""
    with WorkerWatch() as watch:
        try:
            _run_stages(args, rd, fp, runner)
        except RunDirError as e:
            print(f"mtnlg curate: {e}", file=sys.stderr)
            return 2
        except Exception as e:  # noqa: BLE001 - explained below, or raised again
            if not (is_no_space(e) or is_worker_lost(e, watch.exits)):
                raise
            if not is_no_space(e):
                watch.settle()  # the runner's thread may report the worker's exit a moment later
            stage, staged = runner.current_stage(), runner.discard_unfinished()
            line = explain(e, watch.exits, stage, rd.root, resume or "mtnlg curate ... --resume", staged)
            log.info("the job failed: %s", line, exc_info=e)  # the traceback: the log file only
            print(f"mtnlg curate: {line}", file=cli_options.terminal())
            return 1
    return 0


def _run_stages(args: argparse.Namespace, rd: RunDir, fp: str, runner: Runner) -> None:
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
