"""File descriptor 2 of a job and its worker processes, copied into the job's log file by a
thread, so that no write to stderr can fail.

Beam's SDK harness prints a failed bundle's traceback to its stderr before it answers the
runner; with stderr the log file itself, a full disk made that print raise, the answer was never
sent and the job waited for it forever.  A pipe never reports a full disk: the thread reading it
appends what it can to the log file and counts what it could not write."""
from __future__ import annotations

import os
import threading


class StderrPump:
    """While open, fd 2 is a pipe whose bytes are appended to ``path``; ``close()`` gives fd 2
    back.  ``lost`` counts the bytes the log file refused (a full disk)."""

    def __init__(self, path: str):
        self.lost = 0
        self._out = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._read_end, write_end = os.pipe()
        self._saved = os.dup(2)
        os.dup2(write_end, 2)  # inherited by the worker processes the job starts
        os.close(write_end)
        self._thread = threading.Thread(target=self._pump, name="stderr-to-log", daemon=True)
        self._thread.start()

    def _pump(self) -> None:
        while data := os.read(self._read_end, 1 << 16):
            view = memoryview(data)
            try:
                while view:
                    view = view[os.write(self._out, view):]
            except OSError:  # the log file's disk is full: drop this chunk, keep draining
                self.lost += len(view)

    def close(self, timeout: float = 5.0) -> None:
        """Give fd 2 back and wait for the pipe to drain; a worker process still holding the
        pipe (one that outlived its job) keeps the thread, which is a daemon, reading it."""
        os.dup2(self._saved, 2)
        os.close(self._saved)
        self._thread.join(timeout)
        if not self._thread.is_alive():
            os.close(self._read_end)
            os.close(self._out)
