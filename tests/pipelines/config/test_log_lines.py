"""What the terminal shows of Beam's errors (pipelines/config/options.py): one line each, the
tracebacks left to the log file; and the stderr pump that keeps a full log disk from failing a
write to stderr (pipelines/config/stderr_pump.py)."""
import logging
import os
import subprocess
import sys

from pipelines.config.options import _BeamOneLine

# A worker's log entry as Beam's local job service logs it (protobuf text, newlines escaped).
WORKER_ENTRY = ('Worker: severity: ERROR timestamp {   seconds: 1795910660 } message: "OSError: [Errno 28] '
                'No space left on device [while running \\\'dedup/Features\\\']\\nTraceback (most recent '
                'call last):\\n  File \\"x.py\\", line 1\\n" trace: "Traceback (most recent call last):\\n"')


def _format(name, msg, exc_info=None):
    record = logging.makeLogRecord({"name": name, "msg": msg, "levelname": "ERROR", "levelno": 40,
                                    "exc_info": exc_info})
    return _BeamOneLine("%(levelname)s %(name)s: %(message)s").format(record)


def test_a_worker_entry_is_its_first_message_line():
    assert _format("apache_beam.runners.portability.local_job_service", WORKER_ENTRY) == (
        "ERROR apache_beam.runners.portability.local_job_service: Worker: OSError: [Errno 28] No space "
        "left on device [while running 'dedup/Features'] (traceback: the log file)")


def test_a_message_holding_a_traceback_keeps_its_last_line():
    msg = "Traceback (most recent call last):\n  File \"y.py\", line 2\nRuntimeError: Channel closed"
    assert _format("apache_beam.runners.portability.portable_runner", msg).endswith(
        ": RuntimeError: Channel closed (traceback: the log file)")


def test_the_jobs_own_lines_are_left_alone():
    assert _format("pipelines.curate", "a plain line") == "ERROR pipelines.curate: a plain line"


def test_a_full_log_disk_does_not_fail_a_write_to_stderr(tmp_path):
    """/dev/full refuses every write with ENOSPC, as a full disk does: through the pump, a child
    process's print to stderr succeeds and the bytes are counted as lost."""
    code = ("import sys; from pipelines.config.stderr_pump import StderrPump\n"
            "pump = StderrPump('/dev/full')\n"
            "import subprocess; r = subprocess.run([sys.executable, '-c', "
            "'import sys; print(\"x\" * 1000, file=sys.stderr)'])\n"
            "pump.close(); print(r.returncode, pump.lost)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(__file__)))))
    assert proc.stdout.split() == ["0", "1001"], proc.stderr
