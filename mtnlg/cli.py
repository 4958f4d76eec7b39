"""`mtnlg`: one console script, one subcommand per job.

Each subcommand is a thin dispatch to the module that owns it, so every job is also reachable
as ``python -m <package>.<module>`` with the same arguments (DESIGN.md, "Contracts").
Imports are lazy: ``mtnlg --help`` must not pay for importing Beam or torch.
"""
from __future__ import annotations

import importlib
import sys

# subcommand -> (module, function taking argv, one-line help)
COMMANDS: dict[str, tuple[str, str, str]] = {
    "sample-data": ("mtnlg.sample_data", "main", "write the embedded sample corpus in the real raw formats"),
    "curate": ("pipelines.curate", "run", "run the Beam curation job: read, clean, filter, dedup, decontaminate, tokenize, shard"),
    "quality": ("mtnlg.commands.quality", "main", "train and evaluate the fastText quality classifier (train | eval)"),
    "tokenizer": ("mtnlg.commands.tokenizer", "dispatch", "train a byte-level BPE tokenizer on curated text (train)"),
    "stage": ("mtnlg.commands.stage", "main", "copy a curated RUN from object storage to a local folder, verifying shard checksums"),
    "takedown": ("pipelines.runfolder.takedown", "main", "remove documents (ids or URLs) from a curated RUN, rewriting only the shards that held them"),
    "explain": ("mtnlg.commands.explain", "main", "one document's story in a curated RUN: source, every stage with scores and thresholds, why removed or where in the shards"),
    "blend": ("mtnlg.commands.blend", "main", "join a blend spec with curated runs into a training manifest; `blend search`: weights chosen by proxy runs"),
    "train": ("training.launch", "main", "train the bundled GPT from a blend manifest (torchrun, dp x pp x tp)"),
    "eval": ("mtnlg.commands.eval", "main", "zero/one/few-shot accuracy of trainer checkpoints (LAMBADA, PiQA, HellaSwag, ...)"),
    "dashboard": ("mtnlg.dashboard", "main", "render a self-contained HTML dashboard of one or two runs"),
    "demo": ("mtnlg.demo", "main", "all of the above on the embedded sample corpus, end to end"),
}

# Commands that run Beam: their terminal logging is set up before Beam is imported (the others,
# e.g. train, configure their own logging).
BEAM_COMMANDS = ("curate", "stage", "takedown", "explain")
# Commands that run a Beam job in this process: the console script ends them without the
# interpreter's teardown, where gRPC's runtime can abort a finished job (infra.compat.beam.
# exit_after_job says why). ``main`` itself returns normally, for callers in process.
IN_PROCESS_JOBS = ("curate", "demo")


def _usage() -> str:
    width = max(len(name) for name in COMMANDS)
    lines = [
        "usage: mtnlg <command> [options]",
        "",
        "The MT-NLG 530B data system: curation on Apache Beam, Megatron-compatible shards,",
        "blend manifests and a 3D-parallel PyTorch trainer.",
        "",
        "commands:",
    ]
    lines += [f"  {name.ljust(width)}  {help_}" for name, (_, _, help_) in COMMANDS.items()]
    lines += ["", "Run `mtnlg <command> --help` for a command's options."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(_usage())
        return 0
    command, rest = argv[0], argv[1:]
    if command not in COMMANDS:
        print(f"mtnlg: unknown command {command!r}\n\n{_usage()}", file=sys.stderr)
        return 2
    module_name, func_name, _ = COMMANDS[command]
    if command in BEAM_COMMANDS:
        from pipelines.config.options import console_logging

        console_logging()  # before the command imports Beam: short WARNING lines, no import noise
    func = getattr(importlib.import_module(module_name), func_name)
    result = func(rest)
    return int(result or 0)


def console_main() -> None:
    """The ``mtnlg`` console script: ``main`` with the process's exit status."""
    argv = sys.argv[1:]
    code = main(argv)
    if argv and argv[0] in IN_PROCESS_JOBS:
        from infra.compat.beam import exit_after_job

        exit_after_job(code)
    sys.exit(code)


if __name__ == "__main__":
    console_main()
