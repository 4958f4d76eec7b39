"""Holds one Beam SDK worker inside a chosen stage so a test can SIGKILL it there.

Put this folder first on ``PYTHONPATH`` of a curate run (the local runner's worker processes,
or an external pool's harnesses, inherit it) with ``MTNLG_TEST_HOLD`` naming the stage
(``read`` or ``dedup``) and ``MTNLG_TEST_HOLD_DIR`` a folder: the first worker process to run
that stage's first DoFn writes ``DIR/holding`` (its pid) and waits there to be killed, or until
``DIR/release`` exists; every other process runs on.  The test waits for files, not for a time."""
import os

_STEPS = {"read": ("pipelines.read.readers", "ReadWorkFn"),
          "dedup": ("pipelines.dedup.stage", "PartFeaturesFn")}
_stage = os.environ.get("MTNLG_TEST_HOLD")

if _stage in _STEPS:
    import importlib
    import time

    _module, _name = _STEPS[_stage]
    _cls = getattr(importlib.import_module(_module), _name)
    _process = _cls.process

    def process(self, *args, **kwargs):
        folder = os.environ["MTNLG_TEST_HOLD_DIR"]
        try:  # the claim stays: one process holds, once
            os.close(os.open(os.path.join(folder, "claimed"), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:  # another process holds, or has held
            return _process(self, *args, **kwargs)
        marker = os.path.join(folder, "holding")
        with open(marker + ".tmp", "w") as f:
            f.write(str(os.getpid()))
        os.rename(marker + ".tmp", marker)  # whole, then visible
        release = os.path.join(folder, "release")
        deadline = time.monotonic() + 600  # a guard: the test kills or releases it long before
        while time.monotonic() < deadline and not os.path.exists(release):
            time.sleep(0.05)
        return _process(self, *args, **kwargs)

    _cls.process = process
