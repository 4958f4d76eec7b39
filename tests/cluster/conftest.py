"""Fixtures of the cluster-shaped tests: the installed package (see cluster_tools.py)."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from cluster_tools import Installed, _build_dist, make_venv


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
    venv = root / "venv"
    make_venv(venv, wheel)
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
