"""The Beam options of every curate job: strict, with the local runner's defaults."""
from __future__ import annotations

import os

from apache_beam.options.pipeline_options import PipelineOptions

from infra.compat.beam import is_local_runner, safe_local_data_plane
from pipelines.config import options as cli_options

BUILD_OPTIONS = ("--no_pipeline_type_check",)
"""Options of every curate job.  No construction-time type inference and checks: the job
declares no type hints and has no batched DoFns, so they only re-derived element types from each
DoFn's bytecode, on every runner, before any work starts (same bytes without them)."""


def pipeline_options(beam_args: list[str]) -> PipelineOptions:
    """Beam options; without ``--runner``: FnApiRunner, one worker process per core
    (multi-processing), or the job in this process where that is one worker (in-memory: the
    same pickled DoFns without a process and a gRPC hop per element; bench/RESULTS.md, "One
    local worker"); ``BUILD_OPTIONS`` always.  For the local runner (only), Beam's lossy data
    plane is fixed first (``infra.compat.beam.safe_local_data_plane``; ``CompatError`` on an
    unverified Beam).  An argument that is no Beam option raises ``cli_options.OptionError``
    naming it."""
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


def _option(args: list[str], name: str) -> str | None:
    """The value of option ``name`` in Beam arguments (the last one wins, as in argparse)."""
    value = None
    for i, a in enumerate(args):
        if a == name and i + 1 < len(args):
            value = args[i + 1]
        elif a.startswith(name + "="):
            value = a.split("=", 1)[1]
    return value
