"""Live progress of a running stage, from the stage's own counts, on any runner.

Beam's metrics reach the driver only when a bundle ends on the local FnApiRunner (one bundle per
worker per stage) and only when the job ends on Beam's portable job service, so a stage reports
its own progress: each worker process keeps counts per stage and, at most every
``LOCAL_SECONDS`` or ``REMOTE_SECONDS`` (and when a bundle ends), overwrites one small JSON file
``<stage folder>/_progress/<stage>/<process token>.json`` through FileSystems (a local folder or
an object store: wherever the stage writes its parts).  ``pipelines.runfolder.progress`` on the
driver sums those files into documents done, documents per second and an ETA.  The folder lies
in the stage's staging area and goes away at commit.

Counts (all optional): ``docs`` documents the stage took in, ``out`` documents it passed on to
the next stage, ``bytes`` input bytes of the read stage's finished work items, ``passes`` for a
stage that reads its documents twice (dedup: features, then the decisions).
"""
from __future__ import annotations

import json
import threading
import time
import uuid
from collections import Counter

from infra.storage.files import is_remote, join, write_bytes

PROGRESS_DIR = "_progress"
LOCAL_SECONDS, REMOTE_SECONDS = 1.0, 15.0
"""Least seconds between two writes of one process's file: a local folder is cheap to write;
an object store is written at most every 15 s per worker process."""

_TOKEN = uuid.uuid4().hex[:16]
_lock = threading.Lock()
_reporters: dict[tuple[str, str], "_Reporter"] = {}


class _Reporter:
    def __init__(self, folder: str, stage: str) -> None:
        self.url = join(folder, PROGRESS_DIR, stage, f"{_TOKEN}.json")
        self.every = REMOTE_SECONDS if is_remote(folder) else LOCAL_SECONDS
        self.counts: Counter = Counter()
        # -inf, not 0: time.monotonic() counts from boot, so on a machine up for less than
        # ``every`` seconds a 0 would hold back the first report
        self.written, self.dirty = float("-inf"), False

    def flush(self) -> None:
        if self.dirty:
            self.dirty = False
            self.written = time.monotonic()
            write_bytes(self.url, json.dumps({**self.counts, "time": time.time()}).encode())


def report(folder: str | None, stage: str, **counts: int) -> None:
    """Add ``counts`` to this process's progress of ``stage`` (no-op without a folder)."""
    if not folder:
        return
    with _lock:
        r = _reporters.get((folder, stage))
        if r is None:
            r = _reporters[(folder, stage)] = _Reporter(folder, stage)
        r.counts.update(counts)
        r.dirty = True
        if time.monotonic() - r.written >= r.every:
            _safe_flush(r)


def flush() -> None:
    """Write every pending count now (DoFns call it when a bundle ends)."""
    with _lock:
        for r in _reporters.values():
            _safe_flush(r)


def _safe_flush(r: _Reporter) -> None:
    try:
        r.flush()
    except Exception:  # noqa: BLE001 - progress is a display: never a reason to fail a bundle
        r.dirty = True
