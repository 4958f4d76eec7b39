"""Fixtures of the cluster-shaped tests: the installed package (see cluster_tools.py)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cluster_tools import EXTRAS, LOCK, Installed, _build_dist, _wheelhouse


def pytest_collection_modifyitems(items):
    # One xdist worker runs them all, so the session's venv is built once (make test uses
    # --dist loadgroup).
    for item in items:
        if "tests/cluster/" in str(item.fspath).replace(os.sep, "/"):
            item.add_marker(pytest.mark.slow)
            item.add_marker(pytest.mark.xdist_group("cluster"))


@pytest.fixture(scope="session")
def installed(tmp_path_factory) -> Installed:
    if shutil.which("unshare") is None or os.geteuid() != 0:
        pytest.fail("the cluster tests hide the checkout with `unshare -m` and need root")
    root = tmp_path_factory.mktemp("installed")
    sdist, wheel = _build_dist(root / "dist")
    house = _wheelhouse(wheel)
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    # --no-compile: no .pyc for all of Beam up front; the commands compile what they import.
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-compile",
                    "--no-index", "--find-links", str(house), "-c", str(LOCK),
                    f"{wheel}[{EXTRAS}]"], check=True, capture_output=True, timeout=900, cwd=root)
    (root / "hide").mkdir()
    (root / "home").mkdir()
    return Installed(venv=venv, wheel=wheel, sdist=sdist, hide=root / "hide", home=root / "home")


@pytest.fixture(scope="session")
def sample(installed, tmp_path_factory) -> Path:
    """The embedded sample corpus, written by the installed package."""
    out = tmp_path_factory.mktemp("sample") / "raw"
    proc = installed.run(["mtnlg", "sample-data", str(out)], cwd=out.parent)
    assert proc.returncode == 0, proc.stderr
    return out
