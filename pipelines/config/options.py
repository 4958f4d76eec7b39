"""The command line around a Beam job: strict pipeline options, quiet logs, a progress view.

- ``check_beam_args``: Beam's ``PipelineOptions`` only *warns* about an argument no options
  class defines ("Discarding unparseable args") and runs on, so ``--direct_num_worker 2`` would
  silently run with the default.  Here every leftover argument is parsed against every
  registered ``PipelineOptions`` class, and an unknown one is an error that names it (with the
  closest known option), before any work starts.
- ``job_logging``: the terminal gets WARNING and above from Beam (``--log-level`` changes it);
  everything from INFO goes to ``RUN/logs/<job>.log`` (for a remote RUN, a local file copied
  there when the job ends, also when it fails).
- ``stage_lines``: one line per stage of the job from its counters (documents in, kept,
  removed, seconds), printed above the per-source summary table.
"""
from __future__ import annotations

import contextlib
import difflib
import importlib
import logging
import os
import re
import sys
import tempfile
from typing import Iterator

from pipelines.config.stderr_pump import StderrPump

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
# Modules that register PipelineOptions subclasses outside apache_beam.options.pipeline_options.
_OPTION_MODULES = ("apache_beam.runners.render", "apache_beam.yaml.options")


class OptionError(ValueError):
    """A command-line argument that no Beam options class (nor the job) defines."""


def _parse_beam_args(args: list[str]) -> tuple[list[str], list[str]]:
    """(unknown arguments, known option names) as Beam's own ``PipelineOptions`` parser sees
    them: the public ``get_all_options(add_extra_args_fn=...)`` hands us the parser Beam builds
    from every registered options class, and we parse with it before Beam discards the rest."""
    from apache_beam.options.pipeline_options import PipelineOptions

    for name in _OPTION_MODULES:
        with contextlib.suppress(Exception):
            importlib.import_module(name)
    seen: dict[str, list[str]] = {}

    def parse(parser) -> None:
        seen["unknown"] = parser.parse_known_args(list(args))[1]

    options = PipelineOptions(list(args))
    options.get_all_options(add_extra_args_fn=parse, retain_unknown_options=True)
    known = sorted("--" + name for name in PipelineOptions([]).get_all_options())
    return seen["unknown"], known


def check_beam_args(args: list[str]) -> None:
    """Raise ``OptionError`` naming the first argument that is not a Beam pipeline option."""
    unknown, known = _parse_beam_args(args)
    for arg in unknown:
        name = arg.split("=", 1)[0]
        if not name.startswith("-"):
            raise OptionError(f"unexpected argument {arg!r} (options take the form --name VALUE)")
        close = difflib.get_close_matches(name, known, n=1)
        hint = f"; did you mean {close[0]}?" if close else ""
        raise OptionError(f"{name}: unknown option (not an option of this job nor a Beam "
                          f"pipeline option){hint}")


def pipeline_options_for_io(args: list[str]):
    """Checked ``PipelineOptions`` for a command that only uses Beam's FileSystems (``stage``)."""
    from apache_beam.options.pipeline_options import PipelineOptions

    check_beam_args(args)
    return PipelineOptions(list(args))


# S3Options -> the environment variables boto3 reads when it is given no explicit setting.
_S3_ENV = {"s3_endpoint_url": "AWS_ENDPOINT_URL_S3", "s3_access_key_id": "AWS_ACCESS_KEY_ID",
           "s3_secret_access_key": "AWS_SECRET_ACCESS_KEY", "s3_session_token": "AWS_SESSION_TOKEN",
           "s3_region_name": "AWS_DEFAULT_REGION"}


def use_filesystem_options(options) -> None:
    """Let the driver's own FileSystems calls (config checks, staging, run.json) use the job's
    options, e.g. ``--s3_endpoint_url`` and credentials, before the pipeline runs.

    Beam hands pipeline options to the FileSystems of SDK workers only where the worker is
    started by ``sdk_worker_main`` with them (Dataflow, container images); the local
    FnApiRunner's worker subprocesses and a worker pool's harnesses start with none, and their
    boto3 client would go to AWS.  So the S3 settings are also exported as the environment
    variables boto3 reads (``AWS_ENDPOINT_URL_S3``, ``AWS_ACCESS_KEY_ID``, ...), which the
    worker subprocesses this process starts inherit.  Variables already set are kept."""
    from apache_beam.io.filesystems import FileSystems
    from apache_beam.options.pipeline_options import S3Options

    import infra.storage  # noqa: F401 - with Beam's speed patches (one S3 client, not one per file)

    FileSystems.set_options(options)
    s3 = options.view_as(S3Options)
    for option, env in _S3_ENV.items():
        value = getattr(s3, option, None)
        if value and not os.environ.get(env):
            os.environ[env] = str(value)


# -- logging ------------------------------------------------------------------------------------

def add_log_level(parser) -> None:
    parser.add_argument("--log-level", default="WARNING", choices=LOG_LEVELS, type=str.upper,
                        help="what the terminal shows of Beam's and the job's logs (default: "
                             "%(default)s); INFO and above always go to RUN/logs/<job>.log")


@contextlib.contextmanager
def job_logging(run_dir: str, job: str, level: str = "WARNING") -> Iterator[str]:
    """Route logs for the duration of a job; yields the final log location.

    INFO and above go to the log file, and so does everything written to file descriptor 2
    (stderr) by this process and the worker processes it starts (Beam's SDK harnesses log to
    their stderr; fastText prints there).  The terminal keeps this job's own WARNING lines and
    Beam's ERROR lines, or everything from ``level`` when it is INFO or DEBUG."""
    from infra.storage.files import is_remote, join

    final = join(run_dir, "logs", f"{job}.log")
    if is_remote(run_dir):
        fd, local = tempfile.mkstemp(prefix=f"mtnlg-{job}-", suffix=".log")
        os.close(fd)
    else:
        local = final
        os.makedirs(os.path.dirname(local), exist_ok=True)
    sys.stderr.flush()
    terminal = os.fdopen(os.dup(2), "w", buffering=1, encoding="utf-8", errors="replace")
    open(local, "w").close()
    # Appends, like the pump's: both write to the file's end, neither over the other.
    log_file = open(local, "a", buffering=1, encoding="utf-8", errors="replace")
    pump = StderrPump(local)
    root = logging.getLogger()
    saved = (root.level, list(root.handlers))
    file_handler = logging.StreamHandler(log_file)
    file_handler.setLevel(logging.DEBUG if level == "DEBUG" else logging.INFO)
    file_handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    console = logging.StreamHandler(terminal)
    console.setLevel(getattr(logging, level))
    console.setFormatter(_BeamOneLine("%(levelname)s %(name)s: %(message)s"))
    console.addFilter(_DropImportNoise())
    if level not in ("INFO", "DEBUG"):
        console.addFilter(_BeamErrorsOnly())
    for h in saved[1]:
        root.removeHandler(h)
    root.addHandler(file_handler)
    root.addHandler(console)
    root.setLevel(min(logging.INFO, getattr(logging, level)))
    _TERMINAL.append(terminal)
    try:
        yield final
    finally:
        _TERMINAL.remove(terminal)
        root.removeHandler(file_handler)
        root.removeHandler(console)
        for h in saved[1]:
            root.addHandler(h)
        root.setLevel(saved[0])
        sys.stderr.flush()
        pump.close()
        terminal.close()
        log_file.close()
        if local != final:
            _upload(local, final)


_TERMINAL: list = []


def terminal():
    """The terminal's stream: during ``job_logging`` (whose file descriptor 2 is the log file)
    the saved terminal, else ``sys.stderr``."""
    return _TERMINAL[-1] if _TERMINAL else sys.stderr


# The message field of a worker's log entry in protobuf text form (quotes and newlines escaped).
_WORKER_ENTRY = re.compile(r'message: "((?:[^"\\]|\\.)*)"')


class _BeamOneLine(logging.Formatter):
    """Beam's errors on the terminal as one line each; their tracebacks are in the log file (a
    lost worker makes several, none of which tells a user more than the job's own message).  A
    job service's errors arrive as messages holding a traceback: their last line is kept."""

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        beam = record.name.startswith("apache_beam") and (record.exc_info or record.exc_text)
        if not beam and "Traceback (most recent call last)" not in message:
            return super().format(record)
        entry = _WORKER_ENTRY.search(message) if message.startswith("Worker: ") else None
        if entry:  # a worker's log entry as the job service prints it: one escaped line
            message = "Worker: " + entry.group(1).split("\\n")[0].replace("\\'", "'").replace('\\"', '"')
        lines = [ln for ln in message.splitlines() if ln.strip()]
        first = lines[0] if lines else ""
        if first.startswith("Traceback"):
            first = lines[-1].strip()
        record = logging.makeLogRecord({**record.__dict__, "msg": first, "args": None,
                                        "exc_info": None, "exc_text": None})
        return super().format(record) + " (traceback: the log file)"


class _BeamErrorsOnly(logging.Filter):
    """Beam's own warnings (worker start-up, pickling notes) are for the log file."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.name.startswith("apache_beam") or record.levelno >= logging.ERROR


def _upload(local: str, url: str) -> None:
    from apache_beam.io.filesystems import FileSystems

    try:
        with open(local, "rb") as src, FileSystems.create(url) as dst:
            dst.write(src.read())
        os.unlink(local)
    except Exception as e:  # the log is a convenience: never hide the job's own outcome
        print(f"mtnlg: could not copy the log to {url} ({type(e).__name__}: {e}); it stays at "
              f"{local}", file=sys.stderr)


# -- progress -----------------------------------------------------------------------------------

def stage_lines(counters: list[dict], seconds: dict[str, float]) -> list[str]:
    """One line per stage, in pipeline order, from the job's ``curate`` counters (rows of
    ``stats/counters.json``: ``stage``, ``source``, ``outcome``, ``reason``, ``value``) and the
    seconds of worker time per stage: documents in, passed on, removed, dead-lettered, and the
    stage's other counts (skipped, split, shards written, tokens)."""
    totals: dict[str, dict[str, int]] = {}
    for c in counters:
        stage, outcome = c.get("stage"), c.get("outcome")
        if stage and outcome:
            t = totals.setdefault(stage, {})
            t[outcome] = t.get(outcome, 0) + int(c.get("value") or 0)
    names = sorted(set(totals) | set(seconds), key=_stage_rank)
    lines = []
    for stage in names:
        t = dict(totals.get(stage, {}))
        passed = sum(t.get(k, 0) for k in _PASSED)
        if "read" in t:  # the readers count every record read, their own removals included
            passed -= t.get("removed", 0)
        for k in ("kept", "read", "normalized"):
            t.pop(k, None)
        removed, dead = t.pop("removed", 0), t.pop("dead_letter", 0)
        docs = (f"{passed + removed + dead:>7,} in {passed:>7,} out {removed:>5,} removed"
                if passed or removed or dead else f"{'':>33}")
        extra = ", ".join(f"{k} {v:,}" for k, v in sorted(t.items()) if k in _SHOWN)
        extra = ", ".join(x for x in (f"{dead:,} dead-lettered" if dead else "", extra) if x)
        if not (passed or removed or dead or extra or stage in seconds):
            continue  # only internal counters (e.g. part_documents_read): nothing to show
        secs = f"{seconds[stage]:6.1f}s" if stage in seconds else f"{'':>7}"
        lines.append(f"  {stage:<15}{docs} {secs}  {extra}".rstrip())
    return lines


_PASSED = ("kept", "read", "normalized", "skipped")
_SHOWN = ("skipped", "split", "written", "tokens", "lines_removed", "chars_removed")
def _stage_rank(step: str) -> tuple[int, str]:
    from pipelines.stages import STEPS

    return (STEPS.index(step) if step in STEPS else len(STEPS), step)


# Known-harmless import-time warnings of Beam's optional extras (e.g. without [gcp] installed,
# apache_beam.io.gcp logs "apitools not found" on the root logger while Beam imports itself).
_IMPORT_NOISE = ("apitools not found",)


class _DropImportNoise(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not any(n in str(record.msg) for n in _IMPORT_NOISE)


def _is_logging_default(h: logging.Handler) -> bool:
    """The handler ``logging.basicConfig()`` installs when the root logger is used unconfigured."""
    return (type(h) is logging.StreamHandler and h.formatter is not None
            and h.formatter._fmt == logging.BASIC_FORMAT)


def console_logging(level: str = "WARNING") -> None:
    """The terminal's default for every `mtnlg` command: WARNING and above, one short line each,
    configured before Beam is imported so its import-time noise is filtered."""
    root = logging.getLogger()
    if any(getattr(h, "_mtnlg_console", False) for h in root.handlers):
        return
    for h in list(root.handlers):  # logging's own default, installed by a module that logged on
        if _is_logging_default(h):  # the root logger before us: ours replaces it (no line twice)
            root.removeHandler(h)
    handler = logging.StreamHandler(sys.stderr)
    handler._mtnlg_console = True  # type: ignore[attr-defined]
    handler.setLevel(getattr(logging, level))
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    handler.addFilter(_DropImportNoise())
    root.addHandler(handler)
