"""Fixtures for the blending tests (helpers in blend_fixtures.py)."""
from __future__ import annotations

import numpy as np
import pytest

from blend_fixtures import TWO_SOURCE_SPEC, make_run, random_docs


@pytest.fixture
def tiny_spec(tmp_path):
    from blending.spec import load_blend_spec

    p = tmp_path / "tiny.yaml"
    p.write_text(TWO_SOURCE_SPEC)
    return load_blend_spec(str(p))


@pytest.fixture
def tiny_run(tmp_path):
    rng = np.random.default_rng(0)
    return make_run(str(tmp_path / "run"), {
        "alpha": [random_docs(rng, 30), random_docs(rng, 20)],
        "beta": [random_docs(rng, 25)],
    })
