"""The curate driver's live progress: documents done, documents per second and an ETA.

The workers write their counts per stage (``pipelines.plumbing.progress``); ``ProgressLine``
sums them for the stage now running (the last one, in job order, with any count) and prints

    read: 48,210 documents, 312/s, 41% of the input, ETA 2m41s
    dedup: 40,100 of 93,212 documents, 1,210/s, ETA 44s

On a terminal one line is rewritten in place every ``every`` seconds (default 1) and every
finished stage's last line stays, a stage that began and ended between two polls (or before the
first) included; otherwise (a log, a cluster job's driver) a line is printed at most every
``every`` seconds (default 30) and only when it changed, so logs are never flooded, plus one
line for a stage that ran between two of them (every stage of the job shows in the log).  Totals: the
read stage's share is by input bytes (work items finished / all input files); a later stage's
total is the documents the previous stage passed on.  The rate is over the last ``WINDOW``
seconds.  Reading the files never fails the job: a display only.
"""
from __future__ import annotations

import json
import threading
import time
from collections import deque

from infra.storage.files import join, list_files, read_bytes
from pipelines.plumbing.progress import PROGRESS_DIR

WINDOW = 30.0
TTY_EVERY, LOG_EVERY = 1.0, 30.0


def stage_counts(folder: str, stage: str) -> dict[str, int]:
    """The summed counts of every worker process's progress file of ``stage``."""
    total: dict[str, int] = {}
    for url in list_files(join(folder, PROGRESS_DIR, stage)):
        try:
            counts = json.loads(read_bytes(url))
        except (OSError, ValueError):
            continue  # being replaced right now: the next poll reads it
        for k, v in counts.items():
            if k != "time":
                total[k] = total.get(k, 0) + int(v)
    return total


def done_documents(stage: str, counts: dict[str, int]) -> int:
    """Documents a stage has handled: dedup reads each twice (``passes``)."""
    return counts.get("passes", 0) // 2 if stage == "dedup" else counts.get("docs", 0)


def _duration(seconds: float) -> str:
    s = int(round(seconds))
    h, m = divmod(s // 60, 60)
    return f"{h}h{m:02d}m" if h else f"{m}m{s % 60:02d}s" if m else f"{s}s"


def format_line(stage: str, done: int, total: int | None, rate: float | None,
                share: float | None, eta: float | None) -> str:
    parts = [f"{done:,} of {total:,} documents" if total else f"{done:,} documents"]
    if rate is not None:
        parts.append(f"{rate:,.0f}/s")
    if share is not None:
        parts.append(f"{100 * share:.0f}% of the input")
    if eta is not None:
        parts.append(f"ETA {_duration(eta)}")
    return f"{stage}: " + ", ".join(parts)


class ProgressLine:
    """Progress of the stages ``[(stage, stage folder), ...]`` of one Beam job, in job order.

    ``input_bytes``: size of the read stage's input; ``totals``: documents entering stages whose
    previous stage ran in an earlier job (``--staged``).  ``poll()`` returns the current line;
    ``start()`` / ``stop()`` run it on a thread that writes to ``stream``."""

    def __init__(self, stages: list[tuple[str, str]], stream, tty: bool, every: float | None = None,
                 input_bytes: int = 0, totals: dict[str, int] | None = None, clock=time.monotonic) -> None:
        self.stages, self.stream, self.tty = list(stages), stream, tty
        self.every = every if every is not None else (TTY_EVERY if tty else LOG_EVERY)
        self.input_bytes, self.totals, self.clock = input_bytes, dict(totals or {}), clock
        self.passed_on: dict[str, int] = {}
        self._history: dict[str, deque] = {}
        self._current: str | None = None
        self._shown: str | None = None
        self._printed: set[str] = set()  # stages with a line in the output
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def poll(self) -> str | None:
        now, current, line = self.clock(), None, None
        counts = {}
        for stage, folder in self.stages:
            c = stage_counts(folder, stage)
            if c:
                counts[stage], current = c, stage
                self.passed_on[stage] = c.get("out", 0)
        if current is None:
            return None
        if current != self._current:  # the stages finished since the last poll (or the start)
            names = [s for s, _ in self.stages]
            first = names.index(self._current) if self._current is not None else 0
            for stage in names[first:names.index(current)]:
                if stage in counts and (self.tty or stage not in self._printed):
                    self._show(stage, self._line(stage, counts[stage], now), end=True)
        self._current = current
        line = self._line(current, counts[current], now)
        return line

    def _line(self, stage: str, c: dict, now: float) -> str:
        done = done_documents(stage, c)
        hist = self._history.setdefault(stage, deque())
        hist.append((now, done, c.get("bytes", 0)))
        while len(hist) > 2 and hist[1][0] <= now - WINDOW:
            hist.popleft()
        (start, d0, b0) = hist[0]
        dt = now - start
        rate = (done - d0) / dt if dt > 0 else None
        if stage == "read":
            total = None
            share = min(1.0, c.get("bytes", 0) / self.input_bytes) if self.input_bytes else None
            byte_rate = (c.get("bytes", 0) - b0) / dt if dt > 0 else 0
            eta = (self.input_bytes - c.get("bytes", 0)) / byte_rate if byte_rate > 0 and share is not None else None
        else:
            total, share = self._total(stage), None
            eta = (total - done) / rate if total and rate else None
        return format_line(stage, done, total, rate, share, max(eta, 0.0) if eta is not None else None)

    def _total(self, stage: str) -> int | None:
        names = [s for s, _ in self.stages]
        i = names.index(stage)
        if i and names[i - 1] in self.passed_on:
            return self.passed_on[names[i - 1]]
        return self.totals.get(stage)

    def _write(self, line: str, end: bool = False) -> None:
        try:
            if self.tty:
                self.stream.write("\r" + line + "\033[K" + ("\n" if end else ""))
            else:
                self.stream.write(line + "\n")
            self.stream.flush()
        except (OSError, ValueError):
            pass

    def _show(self, stage: str, line: str, end: bool = False) -> None:
        """``line`` on a terminal; in a log only when it is not the line printed last."""
        if self.tty or line != self._shown:
            self._write(line, end)
            self._shown = line
            self._printed.add(stage)

    def _tick(self) -> None:
        try:
            line = self.poll()
        except Exception:  # noqa: BLE001 - a display: never a reason to fail the job
            return
        if line is not None:
            self._show(self._current, line)

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            self._tick()

    def start(self) -> "ProgressLine":
        if self.every > 0:
            self._thread = threading.Thread(target=self._run, name="mtnlg-progress", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop; on a terminal the last stage's final line stays (its line is ended), in a log
        the last stage has a line."""
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join()
        try:
            line = self.poll()
        except Exception:  # noqa: BLE001
            line = None
        if line is not None and (self.tty or self._current not in self._printed):
            self._show(self._current, line, end=True)
