"""pipelines.config.options: unknown Beam options fail by name; one progress line per stage."""
from __future__ import annotations

import pytest

from pipelines.config import options as cli_options


@pytest.mark.parametrize("args", [
    [], ["--direct_num_workers", "2"], ["--runner=PortableRunner", "--job_endpoint", "localhost:1"],
    ["--s3_endpoint_url", "http://127.0.0.1:9", "--environment_type", "EXTERNAL"],
    ["--setup_file", "./setup.py", "--sdk_worker_parallelism", "2"],
])
def test_known_beam_options_pass(args):
    cli_options.check_beam_args(args)


@pytest.mark.parametrize("args,name,hint", [
    (["--direct_num_worker", "2"], "--direct_num_worker", "--direct_num_workers"),
    (["--direct_num_worker=2"], "--direct_num_worker", "--direct_num_workers"),
    (["--runnr", "DataflowRunner"], "--runnr", "--runner"),
    (["--zqxw"], "--zqxw", None),
])
def test_unknown_option_is_an_error_naming_it(args, name, hint):
    with pytest.raises(cli_options.OptionError) as e:
        cli_options.check_beam_args(args)
    assert str(e.value).startswith(f"{name}: unknown option")
    assert (f"did you mean {hint}?" in str(e.value)) if hint else "did you mean" not in str(e.value)


def test_curate_refuses_a_typo_before_reading_anything(tmp_path, capsys):
    from pipelines import curate

    rc = curate.run(["--config", "demo", "--output", str(tmp_path / "run"),
                     "--direct_num_worker", "2"])
    assert rc == 2 and "--direct_num_worker: unknown option" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


def test_stage_lines_one_per_stage_in_pipeline_order():
    rows = [{"stage": "tokenize", "outcome": "kept", "value": 5},
            {"stage": "tokenize", "outcome": "tokens", "value": 900},
            {"stage": "read", "outcome": "read", "value": 9},
            {"stage": "read", "outcome": "dead_letter", "value": 1},
            {"stage": "read", "outcome": "removed", "value": 3},  # counted in "read" too
            {"stage": "language", "outcome": "kept", "value": 6},
            {"stage": "language", "outcome": "skipped", "value": 1},
            {"stage": "language", "outcome": "removed", "value": 2}]
    lines = cli_options.stage_lines(rows, {"language": 1.25})
    assert [line.split()[0] for line in lines] == ["read", "language", "tokenize"]
    assert "10 in" in lines[0] and "6 out" in lines[0] and "3 removed" in lines[0]
    assert "1 dead-lettered" in lines[0]
    assert "9 in" in lines[1] and "7 out" in lines[1] and "2 removed" in lines[1]
    assert "1.2s" in lines[1] and "skipped 1" in lines[1]
    assert "tokens 900" in lines[2]


def test_console_logging_replaces_loggings_own_default_handler():
    import logging

    root = logging.getLogger()
    saved = list(root.handlers), root.level
    try:
        for h in saved[0]:
            root.removeHandler(h)
        logging.basicConfig()  # what a module that logged on the root logger at import leaves
        cli_options.console_logging()
        assert [getattr(h, "_mtnlg_console", False) for h in root.handlers] == [True]
    finally:
        for h in list(root.handlers):
            root.removeHandler(h)
        for h in saved[0]:
            root.addHandler(h)
        root.setLevel(saved[1])


@pytest.mark.parametrize("args, mode, workers", [
    (["--direct_num_workers=2"], "multi_processing", 2),
    (["--direct_num_workers", "1"], "in_memory", 1),  # one worker: no worker process
    (["--direct_num_workers=1", "--direct_running_mode=multi_processing"], "multi_processing", 1),
    (["--direct_running_mode=multi_threading"], "multi_threading", None),
])
def test_local_runner_defaults(args, mode, workers, monkeypatch):
    from apache_beam.options.pipeline_options import DirectOptions, StandardOptions

    from pipelines.driver import beam_options

    monkeypatch.setattr(beam_options.os, "cpu_count", lambda: 3)
    options = beam_options.pipeline_options(args)
    assert options.view_as(StandardOptions).runner == "FnApiRunner"
    direct = options.view_as(DirectOptions)
    assert direct.direct_running_mode == mode
    assert direct.direct_num_workers == (workers or 3)
    monkeypatch.setattr(beam_options.os, "cpu_count", lambda: 1)
    assert beam_options.pipeline_options([]).view_as(DirectOptions).direct_running_mode == "in_memory"


@pytest.mark.parametrize("args", [[], ["--runner=PortableRunner", "--job_endpoint=localhost:1"],
                                  ["--no_pipeline_type_check"]])
def test_every_job_is_built_without_construction_time_type_inference(args):
    # the job declares no type hints (docs/runners.md "Beam's fixed cost per job"), on any runner
    from apache_beam.options.pipeline_options import TypeOptions

    from pipelines.driver import beam_options

    options = beam_options.pipeline_options(args)
    assert options.view_as(TypeOptions).pipeline_type_check is False
