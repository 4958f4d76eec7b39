"""Every module a console command can import is installed by the install option the README
names for that command (issue 45: the installed demo died in its explain step on an import of
pandas, which only the checkout's dev tools had brought).

Static, from the source (tests/import_reach.py, tests/installed_dists.py): the import graph of
the project's modules is walked from each ``mtnlg`` subcommand's module (``mtnlg.cli.COMMANDS``),
every import counted wherever it stands (in functions too: a command imports lazily; module
names in strings too: ``torchrun -m training.worker``), and every third-party module it reaches
is mapped to the distribution whose file list holds it.  That distribution must be in the
requirement closure (``importlib.metadata`` requires, markers and extras evaluated) of
pyproject.toml's base dependencies plus the command's option.  A third-party submodule's own
top-level imports count too (``torch.utils.tensorboard`` imports ``tensorboard``, which torch
does not require).  Where the code says so, an import may reach further:

* inside ``try: ... except ImportError`` (the code handles the module's absence): its
  distribution must be in SOME option, so that the message can name one;
* after ``if missing := missing_extra(MODULE, OPTION): return/raise`` (infra/extras.py: a
  one-line answer naming the option), and in the module's functions called only from there:
  on an install the gate stops, the user is sent to OPTION, so the code may rely on OPTION; on
  one it lets through (it has MODULE), the code runs with that install alone.  OPTION must
  install MODULE.
"""
from __future__ import annotations

from packaging.utils import canonicalize_name

from import_reach import _parsed, command_reach, problems
from installed_dists import ROOT, installs, needs_of, submodule_needs
from mtnlg.cli import COMMANDS

# The install option README.md's "Installing the package" section names for a command; every
# other command runs on the base install (a curation worker's: no torch).
README_OPTION = {"train": "train", "demo": "train", "eval": "eval"}


def test_every_command_runs_on_the_install_the_readme_names_for_it():
    assert set(README_OPTION) <= set(COMMANDS)
    demo = command_reach(COMMANDS["demo"][0])[0]  # the walk is real: the demo reaches every job
    assert {"pipelines.curate", "training.launch", "training.trainer", "mtnlg.commands.explain",
            "mtnlg.commands.eval", "mtnlg.dashboard"} <= demo, sorted(demo)
    found = {command: problems(module, README_OPTION.get(command))
             for command, (module, _, _) in sorted(COMMANDS.items())}
    assert not {c: p for c, p in found.items() if p}, "\n".join(
        f"mtnlg {c}: {line}" for c, lines in found.items() for line in lines)


def test_the_readme_install_section_names_those_options():
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Installing the package", 1)[1].split("\n## ", 1)[0]
    for option in sorted(set(README_OPTION.values())):
        assert f"[{option}]" in section, option
    installs_line = next(line for line in section.splitlines() if "[train]" in line and "pip install" in line)
    assert "-c requirements/lock.txt" in installs_line
    assert "mtnlg demo" in section


def test_a_third_party_submodule_brings_what_its_distribution_leaves_to_an_option():
    # torch does not require tensorboard; torch.utils.tensorboard imports it at its top
    needs = {canonicalize_name(d) for _, d in submodule_needs("torch.utils.tensorboard")}
    assert "tensorboard" in needs
    assert "tensorboard" not in needs_of("torch") and "tensorboard" in installs("train")


def test_the_check_finds_an_undeclared_import_and_honours_guards_and_gates(tmp_path):
    pkg = tmp_path / "toyapp"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "extras.py").write_text("def missing_extra(module, extra):\n    return None\n")
    (pkg / "worker.py").write_text("import datasets\n")  # reached through a string only
    (pkg / "cli.py").write_text('''
import json

from toyapp.extras import missing_extra

WORKER = "toyapp.worker"


def main():
    import pyarrow.parquet  # base: fine
    return explain


def explain():
    import pandas  # the issue's bug: in no option of the base install


def optional():
    try:
        import no_such_module_anywhere
    except ImportError:
        return None


def train():
    if missing := missing_extra("torch", "train"):
        return 2
    return _fit()


def _fit():
    import torch  # runs only behind train's gate


def wrong():
    if missing_extra("torch", "aws"):
        raise SystemExit(2)
''')
    found = problems("toyapp.cli", None, root=tmp_path, packages=("toyapp",))
    assert [line.split(" ")[0] for line in found] == ["datasets", "pandas", "toyapp.cli:"], found
    assert "missing_extra('torch', 'aws') names an option that does not install torch" in found[2]
    assert "imported by toyapp.worker" in found[0] and "imported by toyapp.cli" in found[1]
    # the same import outside the gate is found
    (pkg / "cli.py").write_text((pkg / "cli.py").read_text().replace("    return _fit()\n", "    return 1\n"))
    _parsed.cache_clear()
    again = problems("toyapp.cli", None, tmp_path, ("toyapp",))
    assert len(again) == 4 and again[2].startswith("torch (torch), imported by toyapp.cli"), again
