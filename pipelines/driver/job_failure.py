"""What a curate job that failed part-way tells its user: one line on the terminal that says what
happened, where, and the command that finishes the run; Beam's traceback goes to the log file.

Two failures a cluster causes, not the job's code, are told apart from the rest:

- a lost worker: an SDK worker process killed (the out-of-memory killer, a preempted node, an
  operator's ``kill -9``).  The local runner sees its subprocess exit (``run_worker``'s thread
  raises "Worker subprocess exited with return code N", caught here by ``WorkerWatch``) and the
  bundle it was running fails with "Channel closed prematurely"; Beam's job service with an
  external worker pool reports the same closed channel as the job's error.  Beam does not retry
  a bundle whose worker died: the job stops, within seconds of the loss on both runners;
- a full disk: ``OSError`` errno 28 (ENOSPC), raised in a worker (Beam wraps it in its error
  text, with the step it ran) or in the driver's own commit.

Anything else is not explained here: the job's own traceback is the best account of it.
"""
from __future__ import annotations

import errno
import os
import re
import shutil
import signal
import threading
from dataclasses import dataclass, field

_WORKER_EXIT = re.compile(r"Worker subprocess exited with return code (-?\d+)")
_LOST = ("SDK worker lost", "Channel closed prematurely", "StatusCode.UNAVAILABLE", "Socket closed",
         "Connection reset by peer", "failed to connect to all addresses")
_NO_SPACE = ("[Errno 28]", "No space left on device", "ENOSPC")
_STEP = re.compile(r"\[while running '([^']+)'\]")
# OSError's own text with a filename ("...device: '/x'"), write_bytes' ("...: writing N bytes: '/x'")
_PATH = re.compile(r"No space left on device(?:: writing \d+ bytes)?: '([^'\n]+)'")
_WRITE = re.compile(r"writing (\d+) bytes")


@dataclass
class WorkerWatch:
    """Records the exit codes of the local runner's SDK worker subprocesses that died while the
    job ran (``threading.excepthook`` sees the runner thread's error; other thread errors go on to
    the previous hook).  A context manager: the hook is in place only for the job."""

    exits: list[int] = field(default_factory=list)

    def __enter__(self) -> "WorkerWatch":
        self._previous = threading.excepthook

        def hook(args) -> None:
            m = _WORKER_EXIT.search(str(args.exc_value))
            if m is not None:
                self.exits.append(int(m.group(1)))
            self._previous(args)  # the traceback goes where stderr goes: the job's log file

        threading.excepthook = hook
        return self

    def __exit__(self, *exc) -> None:
        threading.excepthook = self._previous

    def settle(self, seconds: float = 2.0) -> None:
        """Wait a little for the local runner's worker threads to report an exit: the job's
        error (a closed channel) and the thread that saw the process end race each other."""
        import time

        end = time.monotonic() + seconds
        while not self.exits and time.monotonic() < end and _worker_threads():
            time.sleep(0.05)


def _worker_threads() -> bool:
    """Whether a local-runner thread that waits on a worker subprocess is still alive."""
    return any(t.name == "run_worker" for t in threading.enumerate())


def _chain(exc: BaseException):
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def is_no_space(exc: BaseException) -> bool:
    return any((isinstance(e, OSError) and e.errno == errno.ENOSPC) or any(s in str(e) for s in _NO_SPACE)
               for e in _chain(exc))


def is_worker_lost(exc: BaseException, exits: list[int]) -> bool:
    return bool(exits) or any(any(s in str(e) for s in _LOST) for e in _chain(exc))


def _exit_words(code: int) -> str:
    """``137`` -> "exit code 137: killed by SIGKILL"; a negative code is the signal itself."""
    sig = -code if code < 0 else code - 128 if code > 128 else None
    try:
        name = signal.Signals(sig).name if sig else None
    except ValueError:
        name = None
    if name is None:
        return f"exit code {code}"
    why = ", as the out-of-memory killer and a preempted node do" if name == "SIGKILL" else ""
    return f"exit code {code}: killed by {name}{why}"


def _mb(n: int) -> str:
    return f"{n / 1e6:,.1f} MB"


def _space(path: str) -> str:
    """Free and total space of ``path``'s filesystem (the nearest existing folder), if local."""
    if "://" in path:
        return ""
    folder = path
    while folder and not os.path.isdir(folder):
        folder = os.path.dirname(folder)
    try:
        usage = shutil.disk_usage(folder or ".")
    except OSError:
        return ""
    return f"{_mb(usage.free)} free of {_mb(usage.total)}"


def explain(exc: BaseException, exits: list[int], stage: str, run: str, resume: str,
            staged_bytes: int = 0) -> str | None:
    """The one line for a lost worker or a full disk (None for any other failure).  ``stage``:
    what the job was running; ``run``: the RUN folder; ``resume``: the command that finishes it;
    ``staged_bytes``: what the unfinished stages had written (and was removed) when it failed."""
    text = "\n".join(str(e) for e in _chain(exc))
    step = _STEP.search(text)
    where = f"{stage}{f' (step {step.group(1)})' if step else ''}"
    if is_no_space(exc):
        path = next((e.filename for e in _chain(exc) if isinstance(e, OSError) and e.filename), None)
        m = _PATH.search(text)
        path = path or (m.group(1) if m else run)
        wrote = _WRITE.search(text)
        need = [f"a write of {int(wrote.group(1)):,} bytes failed"] if wrote else []
        if staged_bytes:
            need.append(f"the unfinished stage needs more than the {_mb(staged_bytes)} it had "
                        f"written, now removed")
        space = _space(path)
        if space:
            need.append(f"{space} on that filesystem now")
        return (f"the disk is full: no space left on device writing {path} during {where} "
                f"({'; '.join(need) or 'nothing written was kept'}); nothing of it was committed. "
                f"Free space there and finish the run with: {resume}")
    if is_worker_lost(exc, exits):
        who = f" ({', '.join(_exit_words(c) for c in exits)})" if exits else " (its connection to the job closed mid-bundle)"
        return (f"a Beam worker process was lost{who} while the job ran {where}; Beam does not "
                f"retry the work of a lost worker, so the job stopped and nothing of the unfinished "
                f"stage was committed (Beam's traceback: the log file). Finish the run with: {resume}")
    return None


def resume_command(argv: list[str], run: str) -> str:
    """``mtnlg curate`` with the same arguments and ``--resume RUN`` in place of the fresh run's
    ``--output RUN`` and mode (``--staged``, ``--stage``, ``--overwrite``)."""
    import shlex

    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
            continue
        if a in ("--staged", "--overwrite"):
            continue
        if a in ("--stage", "--output", "--resume"):
            skip = True
            continue
        if a.startswith(("--stage=", "--output=", "--resume=")):
            continue
        out.append(a)
    return shlex.join(["mtnlg", "curate", *out, "--resume", run])
