"""infra.compat: each module refuses, loudly and before patching anything, a library version or
an internal name that is not what it was verified for."""
import pytest

from infra.compat import CompatError, minor_version, require_version


def test_minor_version_reads_release_local_and_pre_release_versions():
    assert minor_version("2.77.0") == (2, 77)
    assert minor_version("2.13.0+cpu") == (2, 13)
    assert minor_version("2.14.0rc1") == (2, 14)
    with pytest.raises(CompatError, match="cannot read"):
        minor_version("unknown")


def test_version_outside_the_verified_range_names_library_version_and_range():
    require_version("lib", "2.77.3", ((2, 60), (2, 77)), "the fix")
    with pytest.raises(CompatError, match=r"lib 2\.78\.0 is outside .* the fix .*2\.60 to 2\.77"):
        require_version("lib", "2.78.0", ((2, 60), (2, 77)), "the fix")
    with pytest.raises(CompatError):
        require_version("lib", "2.59.9", ((2, 60), (2, 77)), "the fix")


# -- Beam --------------------------------------------------------------------------------------

@pytest.fixture
def beam_internals(monkeypatch):
    """Beam as installed, unpatched (restored after the test)."""
    from apache_beam.runners.portability.fn_api_runner import fn_runner, worker_handlers

    method = fn_runner.BundleManager._send_input_to_worker
    monkeypatch.setattr(fn_runner.BundleManager, "_send_input_to_worker",
                        getattr(method, "_beam_original", method))
    monkeypatch.setattr(worker_handlers, "DATA_BUFFER_TIME_LIMIT_MS", 1000)
    return fn_runner, worker_handlers


def test_beam_check_passes_on_the_installed_beam(beam_internals):
    from infra.compat import beam

    beam.check()


def test_beam_outside_the_verified_versions_is_refused_and_nothing_patched(beam_internals,
                                                                          monkeypatch):
    import apache_beam

    from infra.compat import beam

    fn_runner, worker_handlers = beam_internals
    monkeypatch.setattr(apache_beam, "__version__", "2.99.0")
    with pytest.raises(CompatError, match=r"apache-beam 2\.99\.0 is outside"):
        beam.safe_local_data_plane()
    assert worker_handlers.DATA_BUFFER_TIME_LIMIT_MS == 1000
    assert not hasattr(fn_runner.BundleManager._send_input_to_worker, "_beam_original")


def test_beam_renamed_constant_is_refused(beam_internals, monkeypatch):
    from infra.compat import beam

    _, worker_handlers = beam_internals
    monkeypatch.delattr(worker_handlers, "DATA_BUFFER_TIME_LIMIT_MS")
    with pytest.raises(CompatError, match="DATA_BUFFER_TIME_LIMIT_MS is gone"):
        beam.disable_timed_flush()
    assert not hasattr(worker_handlers, "DATA_BUFFER_TIME_LIMIT_MS")  # not created


def test_beam_changed_method_is_refused(beam_internals, monkeypatch):
    from infra.compat import beam

    fn_runner, _ = beam_internals

    def _send_input_to_worker(self, process_bundle_id, read_transform_id, byte_streams):
        return None  # Beam's method, changed upstream

    monkeypatch.setattr(fn_runner.BundleManager, "_send_input_to_worker", _send_input_to_worker)
    with pytest.raises(CompatError, match="not the code the fix replaces"):
        beam.stream_runner_input()
    assert fn_runner.BundleManager._send_input_to_worker is _send_input_to_worker


def test_beam_method_nobody_calls_is_refused(beam_internals, monkeypatch):
    from infra.compat import beam

    fn_runner, _ = beam_internals
    monkeypatch.setattr(fn_runner.BundleManager, "process_bundle",
                        lambda self, inputs, expected_outputs: None)
    with pytest.raises(CompatError, match="no longer sends its input"):
        beam.check()


def test_curate_on_a_refused_beam_is_a_one_line_error(beam_internals, monkeypatch, tmp_path,
                                                      capsys):
    import apache_beam

    from pipelines import curate

    monkeypatch.setattr(apache_beam, "__version__", "2.99.0")
    code = curate.run(["--config", "demo", "--output", str(tmp_path / "run")])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert err.startswith("mtnlg curate: apache-beam 2.99.0 is outside") and err.count("\n") == 1


# -- torch -------------------------------------------------------------------------------------

def test_torch_check_passes_on_the_installed_torch():
    pytest.importorskip("torch")
    from infra.compat import torch as compat

    compat.check()


def test_torch_outside_the_verified_versions_is_refused(monkeypatch):
    torch = pytest.importorskip("torch")
    from infra.compat import torch as compat

    monkeypatch.setattr(torch, "__version__", "2.15.0")
    with pytest.raises(CompatError, match=r"torch 2\.15\.0 is outside .*2\.10 to 2\.14"):
        compat.check()


def test_torch_replicate_without_a_mesh_keyword_is_refused(monkeypatch):
    pytest.importorskip("torch")
    from torch.distributed._composable import replicate_with_fsdp

    from infra.compat import torch as compat

    monkeypatch.setattr(replicate_with_fsdp, "replicate", lambda module, device_mesh=None: module)
    with pytest.raises(CompatError, match=r"replicate\(module, \*, mesh=\.\.\.\) is gone"):
        compat.check()


def test_torch_interleaved_schedule_without_number_of_rounds_is_refused(monkeypatch):
    pytest.importorskip("torch")
    import torch.distributed.pipelining as pipelining

    from infra.compat import torch as compat

    class ScheduleInterleaved1F1B:  # a rewrite upstream that computes rounds differently
        def __init__(self, stages, n_microbatches):
            self.rounds = n_microbatches

    monkeypatch.setattr(pipelining, "ScheduleInterleaved1F1B", ScheduleInterleaved1F1B)
    with pytest.raises(CompatError, match="number_of_rounds"):
        compat.check()


def test_torch_fake_world_is_a_process_group_of_fake_ranks():
    pytest.importorskip("torch")
    import torch.distributed as dist

    from infra.compat.torch import fake_world

    with fake_world(6):
        assert dist.get_world_size() == 6 and dist.get_rank() == 0
    assert not dist.is_initialized()


def test_exit_after_job_flushes_logs_and_streams_and_keeps_the_status(tmp_path):
    import subprocess
    import sys

    log = tmp_path / "job.log"
    child = (
        "import logging, sys\n"
        f"h = logging.FileHandler({str(log)!r}); logging.getLogger().addHandler(h)\n"
        "logging.getLogger().warning('last log line')\n"
        "sys.stdout.write('no newline on stdout'); sys.stderr.write('buffered stderr')\n"
        "from infra.compat.beam import exit_after_job\n"
        "exit_after_job(3)\n"
        "print('never printed')\n"
    )
    proc = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 3
    assert proc.stdout == "no newline on stdout"
    assert proc.stderr.endswith("buffered stderr")
    assert log.read_text() == "last log line\n"


def test_console_script_ends_in_process_jobs_without_teardown(monkeypatch):
    import sys

    from infra.compat import beam
    from mtnlg import cli

    ended: list[int] = []
    monkeypatch.setattr(beam, "exit_after_job", ended.append)
    monkeypatch.setattr(cli, "main", lambda argv: 5)
    for argv, expected in ((["curate", "--config", "demo"], [5]), (["demo"], [5]),
                           (["blend", "--help"], [])):
        ended.clear()
        monkeypatch.setattr(sys, "argv", ["mtnlg", *argv])
        with pytest.raises(SystemExit) as exit_:
            cli.console_main()  # exit_after_job is patched out, so sys.exit follows it here
        assert exit_.value.code == 5
        assert ended == expected, argv


def test_require_sources_names_each_changed_function():
    import json

    from infra.compat import dotted_object, require_sources, source_digest

    sources = {"json.dumps": source_digest(json.dumps), "json.JSONEncoder.encode": "0" * 64}
    assert dotted_object("json.JSONEncoder.encode") is json.JSONEncoder.encode
    require_sources("json", "2.0", ((2, 0), (2, 0)), {"json.dumps": sources["json.dumps"]}, "a test")
    with pytest.raises(CompatError, match=r"changed json\.JSONEncoder\.encode \(a test\)"):
        require_sources("json", "2.0", ((2, 0), (2, 0)), sources, "a test")
    with pytest.raises(CompatError, match="outside the versions a test was verified for"):
        require_sources("json", "3.1", ((2, 0), (2, 0)), sources, "a test")
