"""The `mtnlg` console script: subcommand dispatch and help."""
import logging
import pathlib
import subprocess
import sys

import pytest

from mtnlg import cli


def test_help_lists_every_command(capsys):
    assert cli.main(["--help"]) == 0
    out = capsys.readouterr().out
    for name in ("sample-data", "curate", "blend", "train", "dashboard", "demo"):
        assert name in out


def test_unknown_command_exits_2(capsys):
    assert cli.main(["frobnicate"]) == 2
    assert "unknown command 'frobnicate'" in capsys.readouterr().err


@pytest.fixture
def root_logging():
    """Commands set up the terminal's logging (console_logging): restored after the test."""
    root = logging.getLogger()
    saved = (root.level, list(root.handlers))
    yield
    root.handlers[:] = saved[1]
    root.setLevel(saved[0])


@pytest.mark.parametrize("name", sorted(cli.COMMANDS))
def test_every_command_has_help(name, capsys, root_logging):
    # Each subcommand's own --help must work without running anything (argparse exits 0). In
    # this process: the dispatch and the command's parser are what is tested; a fresh
    # interpreter per command (11 of them, each importing Beam or torch) adds nothing to that.
    try:
        code = cli.main([name, "--help"])
    except SystemExit as exited:  # argparse's --help
        code = exited.code
    out, err = capsys.readouterr()
    assert code in (0, None), err[-2000:]
    assert "usage" in out.lower(), name


def test_python_m_curate_prints_no_import_noise():
    # `python -m pipelines.curate` (docs/runners.md) imported Beam before setting up its terminal:
    # Beam's import-time warning ("apitools not found") then installed logging's default handler
    # on the root logger, and every later log line of the job came out twice.
    root = pathlib.Path(__file__).resolve().parents[2]
    proc = subprocess.run([sys.executable, "-m", "pipelines.curate", "--help"], cwd=root,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "--dedup-against" in proc.stdout
    default_format = [line for line in proc.stderr.splitlines()
                      if line.startswith(("DEBUG:", "INFO:", "WARNING:", "ERROR:"))]
    assert not default_format, proc.stderr


def test_train_help_and_usage_errors_do_not_import_torch():
    # `mtnlg train --help` imported torch and its checkpoint module (5.6 s on the 2-core VM)
    # before argparse printed anything; the command's parser needs neither.
    root = pathlib.Path(__file__).resolve().parents[2]
    code = ("import sys, training.launch as launch\n"
            "for argv in (['--help'], ['--bogus']):\n"
            "    try:\n        launch.main(argv)\n    except SystemExit:\n        pass\n"
            "print('torch' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip().splitlines()[-1] == "False", proc.stdout[-2000:]
