"""The command line of ``mtnlg curate`` (its help text is ``pipelines.curate``'s docstring)."""
from __future__ import annotations

import argparse
import os

from pipelines.config import options as cli_options
from pipelines.stages import STAGES


def parse(argv: list[str] | None, description: str) -> tuple[argparse.Namespace, list[str]]:
    """The job's own arguments, and the rest (Beam's options, checked by ``beam_options``)."""
    p = argparse.ArgumentParser(prog="mtnlg curate", description=description,
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


def mode(args: argparse.Namespace) -> str:
    """The run's mode as ``run.json`` records it."""
    return "stage" if args.stage else "resume" if args.resume else "staged" if args.staged else "single"
