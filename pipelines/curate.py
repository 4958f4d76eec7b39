"""The curate job: raw sources -> cleaned, deduplicated, decontaminated token shards + stats.

Four stages (``pipelines.stages``): read (read, normalize, language id, heuristics, quality),
dedup (exact + fuzzy, all sources jointly), decontaminate (13-grams), tokenize (+ shards).  Each
writes its documents as parts that the next one reads, so only small records are ever shuffled
(docs/architecture.md walks one document through them).
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

import datetime as dt
import os
import sys
import time

if __name__ == "__main__":
    # `python -m pipelines.curate` gets the same terminal as `mtnlg curate`: short WARNING lines,
    # set up before Beam's import logs its optional extras' noise on the root logger (which would
    # otherwise install logging's default handler and print every line twice).
    from pipelines.config.options import console_logging

    console_logging()

from apache_beam.options.pipeline_options import StandardOptions  # noqa: E402

from infra.compat import CompatError
from infra.config import ConfigError
from infra.resources import ResourceError, config_path
from pipelines.config import options as cli_options
from pipelines.config.job import load_config
from pipelines.driver import cli
from pipelines.driver.beam_options import pipeline_options
from pipelines.driver.finalize import finalize
from pipelines.driver.job_failure import resume_command
from pipelines.driver.preflight import check
from pipelines.driver.runner import Runner, run_stages
from pipelines.runfolder import report
from pipelines.runfolder.commit import RunDir, RunDirError
from infra.storage.files import is_remote
from infra.storage.staging import StagingError


def run(argv: list[str] | None = None) -> int:
    """The job, as `mtnlg curate` runs it; 0, or 2 with a message when it cannot start."""
    args, beam_args = cli.parse(argv, __doc__)
    rd = RunDir(args.output if is_remote(args.output) else os.path.abspath(args.output))
    try:
        options = pipeline_options(beam_args)  # unknown options fail here, before any work
        cli_options.use_filesystem_options(options)  # e.g. --s3_endpoint_url for the checks below
        cfg = load_config(config_path("sources", args.config), input_root=args.input_root)
        checked = check(cfg, args.quality_model, args.dedup_against, rd.root)  # before any input
        rd.prepare(checked.fingerprint, resume=bool(args.resume or args.stage), overwrite=args.overwrite)
    except (cli_options.OptionError, CompatError) as e:
        print(f"mtnlg curate: {e}", file=sys.stderr)
        return 2
    except (ConfigError, RunDirError, ResourceError, StagingError) as e:
        print(f"mtnlg curate: config error: {e}", file=sys.stderr)
        return 2
    fp = checked.fingerprint
    runner = Runner(cfg, rd, fp, options, checked.tokenizer["vocab_size"], checked.quality,
                    checked.against, args.progress_every)
    started, t0 = dt.datetime.now(dt.timezone.utc), time.perf_counter()
    with cli_options.job_logging(rd.root, "curate", args.log_level) as log_path:
        code = run_stages(args, rd, fp, runner, resume_command(sys.argv[1:] if argv is None else argv, args.output))
    if code:
        return code
    wall = time.perf_counter() - t0
    base = {
        "format_version": report.FORMAT_VERSION,
        "config": cfg.to_dict(), "config_path": cfg.config_path,
        "input_root": cfg.input_root,  # document ids hold paths relative to it (contract 1)
        "runner": options.view_as(StandardOptions).runner,
        "pipeline_options": options.get_all_options(drop_default=True),
        "mode": cli.mode(args),
        "started_at": started.isoformat(),
        "finished_at": dt.datetime.now(dt.timezone.utc).isoformat(),
        "wall_seconds": round(wall, 3),
        "tokenizer": {**checked.tokenizer, "path": cfg.tokenizer.path},  # as given: pkg://, URL
        "quality_model": checked.quality,
        "fingerprint": fp,
        "dedup_against": [{"run": ix.run, "documents": ix.documents, "params_sha256": ix.params_sha256}
                          for ix in checked.against],
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


if __name__ == "__main__":
    from infra.compat.beam import exit_after_job

    exit_after_job(run())
