"""Live progress: workers' counts in the stage folder, the driver's line (documents, rate, ETA)."""
from __future__ import annotations

import io
import itertools
import json
import os
import shutil
import threading
import time
import types

import apache_beam as beam

from pipelines.runfolder.progress import ProgressLine, format_line, stage_counts
from pipelines.plumbing import progress
from pipeline_fixtures import local_pipeline


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def _write(folder, stage, name, **counts):
    path = os.path.join(folder, progress.PROGRESS_DIR, stage, f"{name}.json")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump({**counts, "time": 0}, f)


def test_reporter_sums_per_process_and_writes_at_most_every_interval(tmp_path, monkeypatch):
    folder = str(tmp_path)
    monkeypatch.setattr(progress, "LOCAL_SECONDS", 3600.0)
    # a machine booted a minute ago (time.monotonic counts from boot, as on a fresh CI machine)
    monkeypatch.setattr(progress, "time", types.SimpleNamespace(monotonic=lambda: 60.0, time=time.time))
    progress._reporters.clear()
    progress.report(folder, "read", docs=5, bytes=100)  # the first report is written at once
    progress.report(folder, "read", docs=7)  # within the interval: kept in memory
    assert stage_counts(folder, "read") == {"docs": 5, "bytes": 100}
    progress.flush()  # a bundle ended
    assert stage_counts(folder, "read") == {"docs": 12, "bytes": 100}
    _write(folder, "read", "other-worker", docs=3, out=2)
    assert stage_counts(folder, "read") == {"docs": 15, "bytes": 100, "out": 2}
    progress.report(None, "read", docs=1)  # no folder: nothing
    progress._reporters.clear()


def test_line_totals_rate_and_eta(tmp_path):
    folder, clock, out = str(tmp_path), Clock(), io.StringIO()
    stages = [("read", folder), ("dedup", folder), ("tokenize", folder)]
    line = ProgressLine(stages, out, tty=False, every=30, input_bytes=1000, clock=clock)
    assert line.poll() is None  # nothing reported yet
    _write(folder, "read", "w1", docs=100, bytes=200)
    assert line.poll() == "read: 100 documents, 20% of the input"
    clock.t = 10.0
    _write(folder, "read", "w1", docs=600, bytes=600, out=550)
    assert line.poll() == "read: 600 documents, 50/s, 60% of the input, ETA 10s"
    clock.t = 20.0
    _write(folder, "dedup", "w1", passes=550)  # dedup reads every document twice
    assert line.poll() == "dedup: 275 of 550 documents"
    clock.t = 25.0
    _write(folder, "dedup", "w1", passes=825, out=500)
    assert line.poll() == "dedup: 412 of 550 documents, 27/s, ETA 5s"
    _write(folder, "tokenize", "w2", docs=10)
    assert line.poll().startswith("tokenize: 10 of 500 documents")
    assert format_line("tokenize", 5, 10, 1.0, None, 4000) == "tokenize: 5 of 10 documents, 1/s, ETA 1h06m"


def test_log_output_prints_changed_lines_only_and_a_terminal_keeps_finished_stages(tmp_path):
    folder, clock = str(tmp_path), Clock()
    log = io.StringIO()
    line = ProgressLine([("read", folder), ("dedup", folder)], log, tty=False, every=30, clock=clock)
    _write(folder, "read", "w", docs=4, out=4)
    line._tick()
    line._tick()  # unchanged: not printed again
    assert log.getvalue() == "read: 4 documents\n"
    tty = io.StringIO()
    line = ProgressLine([("read", folder), ("dedup", folder)], tty, tty=True, every=1, clock=clock)
    line._tick()
    _write(folder, "dedup", "w", passes=2)
    clock.t = 1.0
    line._tick()
    text = tty.getvalue()
    assert text.startswith("\rread: 4 documents\033[K") and "\rread: 4 documents" in text
    assert text.count("\n") == 1 and text.endswith("\rdedup: 1 of 4 documents\033[K")


def test_every_stage_shows_even_one_that_ran_between_two_polls(tmp_path):
    folder, stages = str(tmp_path), [("read", str(tmp_path)), ("dedup", str(tmp_path)),
                                     ("tokenize", str(tmp_path))]
    outputs = {}
    for tty in (False, True):
        for f in os.listdir(folder):
            shutil.rmtree(os.path.join(folder, f))
        clock, out = Clock(), io.StringIO()
        line = ProgressLine(stages, out, tty=tty, every=30, clock=clock).start()  # ticked by hand
        _write(folder, "read", "w", docs=4)
        line._tick()
        # before the next poll: read ends, dedup runs from start to end, tokenize begins
        _write(folder, "read", "w", docs=11, out=9)
        _write(folder, "dedup", "w", passes=18, out=7)
        _write(folder, "tokenize", "w", docs=2)
        clock.t = 1.0
        line._tick()
        _write(folder, "tokenize", "w", docs=7, out=7)  # the job ends before the next poll
        line.stop()
        outputs[tty] = out.getvalue()
    # a log: one line per poll when it changed, and one for dedup, which no poll saw running
    assert outputs[False].splitlines() == [
        "read: 4 documents", "dedup: 9 of 9 documents", "tokenize: 2 of 7 documents"]
    # a terminal: every stage's final line stays
    kept = outputs[True].replace("\033[K", "").split("\n")
    assert [k.split("\r")[-1] for k in kept if k] == [
        "read: 11 documents, 7/s", "dedup: 9 of 9 documents", "tokenize: 7 of 7 documents"]
    # the first poll may already see a later stage: the earlier ones still show
    for f in os.listdir(folder):
        shutil.rmtree(os.path.join(folder, f))
    log = io.StringIO()
    line = ProgressLine(stages, log, tty=False, every=30, clock=Clock()).start()
    _write(folder, "read", "w", docs=11, out=9)
    _write(folder, "dedup", "w", passes=4)
    line._tick()
    line.stop()
    assert log.getvalue().splitlines() == ["read: 11 documents", "dedup: 2 of 9 documents"]


class _Shown(io.StringIO):
    """The driver's output; ``shown`` is set once a line of the read stage is on it."""

    def __init__(self) -> None:
        super().__init__()
        self.shown = threading.Event()

    def write(self, text: str) -> int:
        n = super().write(text)
        if "read: " in self.getvalue():
            self.shown.set()
        return n


_TEST: dict = {}  # the test's output and element count, found by the DoFn (a pickled copy) by name


class _Paused(beam.DoFn):
    """Counts each element; at the ``PAUSE``-th it writes its counts out and waits until the
    driver's line has shown them (the job is still running: the rest wait behind it)."""

    PAUSE = 50

    def __init__(self, folder: str) -> None:
        self.folder = folder

    def process(self, x):
        progress.report(self.folder, "read", docs=1)
        if next(_TEST["seen"]) == self.PAUSE:
            progress.flush()
            assert _TEST["out"].shown.wait(600), "no progress line while the stage ran"
        yield x

    def finish_bundle(self):
        progress.flush()


def test_progress_lines_appear_while_the_stage_runs(tmp_path):
    folder, out = str(tmp_path), _Shown()
    _TEST.update(out=out, seen=itertools.count(1))
    line = ProgressLine([("read", folder)], out, tty=False, every=0.1).start()
    with local_pipeline(test=False) as p:  # in this process: the DoFn sees _TEST
        _ = p | beam.Create(range(150)) | beam.ParDo(_Paused(folder))
    line.stop()
    first = out.getvalue().splitlines()[0]
    assert first.startswith("read: ") and int(first.split()[1].replace(",", "")) < 150
    assert stage_counts(folder, "read") == {"docs": 150}
