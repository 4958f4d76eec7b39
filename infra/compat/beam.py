"""Apache Beam internals this project depends on, in one place: the local runner's data-plane fix.

Beam's FnApiRunner (the local runner: ``--runner`` unset, ``FnApiRunner`` or ``DirectRunner``)
loses or garbles elements between the runner and its workers under load; docs/runners.md
("Beam's local runner loses data") describes the race with a minimal reproduction. The fix has
two halves, each in its own function so each can be tested alone
(tests/pipelines/driver/test_local_runner_loss.py):

1. ``disable_timed_flush``: the runner's data streams flush only from the thread that writes
   them, at element boundaries, never from a timer (``worker_handlers.DATA_BUFFER_TIME_LIMIT_MS
   = 0``, the SDK harness's own default).
2. ``stream_runner_input``: the runner sends a stage's input to a worker in messages of about
   the stream's size threshold (10 MB) as it writes them, instead of one message with the whole
   input at the end (which copies the input once more and fails beyond gRPC's 2 GB).

Both replace or set Beam internals (``fn_runner.BundleManager._send_input_to_worker``, a module
constant), so ``check`` verifies first that the installed Beam is a version the fix was verified
for and that those internals are still what the fix replaces; otherwise ``CompatError``.
"""
from __future__ import annotations

import inspect

from infra.compat import CompatError, require, require_version, source_digest

# Verified by reading Beam's source for 2.60, 2.66, 2.72 and 2.77 (the replaced method is the same
# text in all four, the constant is read where the fix expects it) and by the suite on the locked
# version. Widen only after the same check on the new version.
VERIFIED = ((2, 60), (2, 77))
# sha256 of the dedented source of Beam's own BundleManager._send_input_to_worker in those
# versions: a change upstream (a fix, a new argument) is a reason to look before patching.
_SEND_INPUT_SHA256 = "58a5c2c0415341a7ed18d18ec407d9c76f02dc5b082715ba45cb9ce035d49718"
# Runner names (as --runner takes them) whose batch pipelines run on the FnApiRunner in this
# process; Beam accepts a name with or without the "Runner" suffix, in any case.
LOCAL_RUNNERS = frozenset({"fnapirunner", "directrunner", "switchingdirectrunner"})

__all__ = [
    "LOCAL_RUNNERS",
    "VERIFIED",
    "CompatError",
    "check",
    "default_filesystem_options",
    "disable_timed_flush",
    "exit_after_job",
    "fail_on_lost_worker",
    "is_local_runner",
    "safe_local_data_plane",
    "stream_runner_input",
]


def is_local_runner(runner: str | None) -> bool:
    """Whether a ``--runner`` value (``None``: not given) runs the job on the local FnApiRunner."""
    if not runner:
        return True
    name = runner.rsplit(".", 1)[-1].lower()
    return name in LOCAL_RUNNERS or name + "runner" in LOCAL_RUNNERS


def _internals():
    import apache_beam
    from apache_beam.runners.portability.fn_api_runner import fn_runner, worker_handlers

    return apache_beam.__version__, fn_runner, worker_handlers


def check() -> None:
    """Raise ``CompatError`` unless the installed Beam is one the fix was verified for and still
    has, unchanged, what the fix replaces and the places that read it."""
    version, fn_runner, worker_handlers = _internals()
    require_version("apache-beam", version, VERIFIED, "the local runner's data-plane fix "
                    "(infra/compat/beam.py)")
    lib = f"apache-beam {version}"
    require(isinstance(getattr(worker_handlers, "DATA_BUFFER_TIME_LIMIT_MS", None), int), lib,
            "worker_handlers.DATA_BUFFER_TIME_LIMIT_MS is gone")
    # The constant is read when the runner's data server and an in-process worker are built: a
    # constant nobody reads any more would make setting it a silent no-op.
    for reader in (worker_handlers.GrpcServer.__init__,
                   worker_handlers.EmbeddedGrpcWorkerHandler.__init__):
        require("DATA_BUFFER_TIME_LIMIT_MS" in inspect.getsource(reader), lib,
                f"{reader.__qualname__} no longer reads DATA_BUFFER_TIME_LIMIT_MS")
    manager = fn_runner.BundleManager
    method = getattr(manager, "_send_input_to_worker", None)
    require(method is not None, lib, "BundleManager._send_input_to_worker is gone")
    original = getattr(method, "_beam_original", method)
    require(source_digest(original) == _SEND_INPUT_SHA256, lib,
            "BundleManager._send_input_to_worker is not the code the fix replaces")
    require("self._send_input_to_worker(" in inspect.getsource(manager.process_bundle), lib,
            "BundleManager.process_bundle no longer sends its input with _send_input_to_worker")



def disable_timed_flush() -> None:
    """Half 1: no data stream of the local runner (runner side, and in-process workers) flushes
    from a timer thread."""
    check()
    _, _, worker_handlers = _internals()
    worker_handlers.DATA_BUFFER_TIME_LIMIT_MS = 0


def stream_runner_input() -> None:
    """Half 2: the runner sends a stage's input in ~10 MB messages as it writes it. Idempotent."""
    check()
    _, fn_runner, _ = _internals()
    manager = fn_runner.BundleManager
    original = manager._send_input_to_worker
    if getattr(original, "_beam_original", None) is not None:
        return

    def _send_input_to_worker(self, process_bundle_id, read_transform_id, byte_streams):
        data_out = self._worker_handler.data_conn.output_stream(process_bundle_id,
                                                                read_transform_id)
        for byte_stream in byte_streams or []:
            data_out.write(byte_stream)
            data_out.maybe_flush()  # whole chunks only: a chunk holds whole elements
        data_out.close()

    _send_input_to_worker._beam_original = original
    manager._send_input_to_worker = _send_input_to_worker


def safe_local_data_plane() -> None:
    """Both halves, and ``fail_on_lost_worker``. Call it only for the local runner
    (``is_local_runner``) or in a process that runs Beam's job service, before the pipeline
    runs; process-wide and idempotent. Raises ``CompatError`` (nothing patched) when the
    installed Beam is not one the fix was verified for."""
    check()
    disable_timed_flush()
    stream_runner_input()
    fail_on_lost_worker()


# sha256 of the dedented source of Beam's ControlConnection._read (2.77), which
# ``fail_on_lost_worker`` replaces.
_CONTROL_READ_SHA256 = "cd94361477e02ff667d0ab62a6fcc9d7959d6e1a0eb863d626544e7adc766ad8"
LOST_WORKER = "SDK worker lost"
"""How the error of an instruction whose worker went away begins (``fail_on_lost_worker``)."""


def fail_on_lost_worker() -> bool:
    """An SDK worker that dies (SIGKILL, a lost node) fails the instructions it had not answered,
    instead of leaving the runner waiting for them forever.

    The FnApiRunner (the local runner, and Beam's job service, which runs it for an EXTERNAL
    worker pool) reads each worker's control stream in a thread (``ControlConnection._read``)
    that hands every response to the future waiting for it; when the stream breaks, the thread
    dies and those futures are never answered.  The local runner usually fails anyway (its data
    channel closes mid-bundle), but a worker lost between bundles, or one whose data the runner
    was not reading, hung the job service until gRPC's deadline.  Here the pending futures are
    aborted with an error that starts with ``LOST_WORKER``.  A Beam whose ``_read`` is not the
    code this replaces keeps its own, with one warning (the job then only risks that wait).
    Returns whether the replacement is in place."""
    import logging

    _, _, worker_handlers = _internals()
    conn = worker_handlers.ControlConnection
    original = conn._read
    if getattr(original, "_beam_original", None) is not None:
        return True
    if source_digest(original) != _CONTROL_READ_SHA256:
        logging.getLogger(__name__).warning(
            "apache-beam: ControlConnection._read is not the code fail_on_lost_worker replaces; "
            "a lost SDK worker may leave the job waiting (infra/compat/beam.py)")
        return False

    def _read(self):
        try:
            for data in self._input:
                self._futures_by_id.pop(data.instruction_id).set(data)
        except Exception as e:  # noqa: BLE001 - the stream broke: the worker is gone
            self.abort(RuntimeError(f"{LOST_WORKER}: its control stream failed ({type(e).__name__})"))
            return
        if self._futures_by_id:  # ended with instructions unanswered
            self.abort(RuntimeError(f"{LOST_WORKER}: its control stream ended with "
                                    f"{len(self._futures_by_id)} instruction(s) unanswered"))

    _read._beam_original = original
    conn._read = _read
    return True


def default_filesystem_options() -> bool:
    """Give Beam's FileSystems empty pipeline options in a process that has none; returns
    whether it did.

    A Beam worker gets the job's options for its FileSystems only when ``sdk_worker_main``
    starts it (the local runner's worker processes, Dataflow, SDK containers).  The harnesses of
    an EXTERNAL worker pool (``worker_pool_main``: Flink, Spark, the portable job service) start
    ``SdkHarness`` directly and get none, and Beam's S3 filesystem then fails on every file
    (``S3IO``: "Must provide one of client or options").  With empty options its boto3 client
    takes the endpoint and credentials from the worker's environment (``AWS_ENDPOINT_URL_S3``,
    ``AWS_ACCESS_KEY_ID``, ...), as docs/runners.md tells pool operators to set them.  Options
    set later (the driver's ``set_options`` with the job's flags) replace these."""
    import apache_beam
    from apache_beam.io.filesystems import FileSystems
    from apache_beam.options.pipeline_options import PipelineOptions

    require(hasattr(FileSystems, "_pipeline_options"), f"apache-beam {apache_beam.__version__}",
            "FileSystems._pipeline_options is gone (default_filesystem_options reads it)")
    if FileSystems._pipeline_options is not None:
        return False
    FileSystems.set_options(PipelineOptions([]))
    return True


def exit_after_job(code: int) -> None:
    """End a process that ran a Beam job in-process with exit status ``code``, skipping the
    interpreter's teardown.

    After the local runner has finished, gRPC's C++ runtime (the runner's control and data
    servers, stopped by Beam, still own event-engine threads that wind down asynchronously) is
    destroyed with the process.  Under load, about one run in 30-70 of the sample job (10 jobs at
    once on 2 cores) aborted there, after ``run.json`` was written: ``terminate called without an
    active exception``, SIGABRT, exit status 134, so a scheduler saw a finished job as failed.
    Only idle, daemonic Beam thread-pool threads are left in Python at that point (checked with
    ``threading.enumerate``), every gRPC server is stopped; the same abort during gRPC's
    event-engine destruction is reported upstream (grpc/grpc#39942).  Everything the job writes
    is closed and committed before this is called, so the teardown has nothing left to do: flush
    the logs and standard streams and end the process with ``os._exit``."""
    import logging
    import os
    import sys

    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: nothing more can reach it
            pass
    os._exit(code)
