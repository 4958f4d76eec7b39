"""The one line a failed job prints (pipelines/driver/job_failure.py), from the errors Beam
raises: a lost worker, a full disk in a worker or in the driver, anything else left alone."""
import errno

from pipelines.driver.job_failure import explain, resume_command

RESUME = "mtnlg curate --config c.yaml --resume /runs/r"
# What the local runner raises for a bundle that failed in a worker: the worker's traceback as
# text, with quoted file names of its own that are not the full file.
BEAM_ENOSPC = ("OSError: [Errno 28] No space left on device [while running "
               "'dedup/Dedup/Features/ParDo(PartFeaturesFn)']\nTraceback (most recent call last):\n"
               "  File \"apache_beam/runners/common.py\", line 1512, in process\n")


def test_a_killed_worker_is_named_with_its_signal_and_the_resume_command():
    line = explain(RuntimeError("Channel closed prematurely."), [137], "read", "/runs/r", RESUME)
    assert "a Beam worker process was lost (exit code 137: killed by SIGKILL" in line
    assert "while the job ran read" in line and line.endswith(RESUME)


def test_a_closed_channel_without_an_exit_code_is_a_lost_worker_too():
    line = explain(RuntimeError("SDK worker lost: its control stream failed"), [], "dedup", "/r", RESUME)
    assert "its connection to the job closed mid-bundle" in line


def test_a_full_disk_in_the_driver_names_the_file_and_the_write():
    err = OSError(errno.ENOSPC, "No space left on device: writing 4096 bytes", "/runs/r/stats/x.parquet")
    line = explain(err, [], "tokenize", "/runs/r", RESUME, staged_bytes=2_000_000)
    assert "writing /runs/r/stats/x.parquet during tokenize" in line
    assert "a write of 4,096 bytes failed" in line and "more than the 2.0 MB it had written" in line
    assert "nothing of it was committed" in line and line.endswith(RESUME)


def test_a_full_disk_in_a_worker_names_the_run_not_a_file_of_the_traceback():
    line = explain(RuntimeError(BEAM_ENOSPC), [], "dedup", "/runs/r", RESUME)
    assert line.startswith("the disk is full: no space left on device writing /runs/r during dedup "
                           "(step dedup/Dedup/Features/ParDo(PartFeaturesFn))"), line


def test_other_failures_are_left_to_their_traceback():
    assert explain(ValueError("bad config"), [], "read", "/r", RESUME) is None


def test_resume_replaces_the_output_and_the_mode():
    argv = ["--config", "c.yaml", "--output", "/runs/r", "--stage", "read", "--overwrite",
            "--direct_num_workers=2"]
    assert resume_command(argv, "/runs/r") == (
        "mtnlg curate --config c.yaml --direct_num_workers=2 --resume /runs/r")
