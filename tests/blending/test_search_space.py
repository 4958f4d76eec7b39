"""The blend search's region: every sampled mixture respects every constraint."""
from __future__ import annotations

import numpy as np
import pytest

from blending.mixture_space import MixtureSpace, parse_bounds, space_for_spec
from blending.search_outputs import with_weights, write_spec_yaml
from blending.spec import blend_spec_from_dict
from infra.config import ConfigError

SPEC = blend_spec_from_dict({
    "name": "five", "train_tokens": 1000.0, "epoch_cap": 2.0, "split": [90, 10, 0],
    "sources": [{"name": "a", "weight": 0.4}, {"name": "b", "weight": 0.3},
                {"name": "c", "weight": 0.2}, {"name": "d", "weight": 0.05},
                {"name": "e", "weight": 0.05}]})
# epoch cap 2 at 1000 train tokens: a <= 2 x 100 / 1000 = 0.2, b <= 0.5, e has no tokens
AVAILABLE = {"a": 100, "b": 250, "c": 5000, "d": 5000, "e": 0}
BOUNDS = {"c": (0.1, 0.45), "d": (0.02, 1.0)}


def test_sampled_mixtures_respect_caps_bounds_and_missing_tokens():
    space = space_for_spec(SPEC, AVAILABLE, BOUNDS)
    np.testing.assert_allclose(space.hi, [0.2, 0.5, 0.45, 1.0, 0.0])
    np.testing.assert_allclose(space.lo, [0.0, 0.0, 0.1, 0.02, 0.0])
    assert space.why_hi == ("epoch cap 2", "epoch cap 2", "--bound", "none", "no train tokens")
    rng = np.random.default_rng(0)
    # around the spec (which breaks a's cap and e's missing tokens), around uniform, and wide
    W = np.vstack([space.sample(300, rng, SPEC.weights), space.sample(300, rng, None),
                   space.sample(300, rng, SPEC.weights, (0.5, 2.0))])
    assert np.all(np.abs(W.sum(axis=1) - 1.0) < 1e-9)
    assert np.all(W >= space.lo - 1e-12) and np.all(W <= space.hi + 1e-12)
    assert np.all(W[:, 4] == 0.0)
    epochs = W * SPEC.train_tokens / np.maximum([AVAILABLE[n] for n in "abcde"], 1)
    assert epochs[:, :4].max() <= SPEC.epoch_cap + 1e-9
    # draws at the default concentration, not a few clipped corners
    assert len({tuple(np.round(w, 6)) for w in W[:600]}) > 580
    # projection of arbitrary vectors (zeros, mass on capped sources only) lands inside too
    X = np.vstack([rng.random((200, 5)), np.eye(5), np.zeros((1, 5)), [[5, 5, 0, 0, 0]]])
    assert all(space.contains(w) for w in space.project(X))


def test_an_infeasible_region_or_bound_names_the_setting():
    with pytest.raises(ConfigError, match="epoch_cap / --bound.*at most 0.7"):
        space_for_spec(SPEC, {"a": 100, "b": 250}, {})
    with pytest.raises(ConfigError, match="--bound: no source 'zz'"):
        space_for_spec(SPEC, AVAILABLE, {"zz": (0, 1)})
    with pytest.raises(ConfigError, match="--bound a: the lower bound 0.3 exceeds"):
        space_for_spec(SPEC, AVAILABLE, {"a": (0.3, 1.0)})
    with pytest.raises(ConfigError, match="lower bounds sum"):
        MixtureSpace(("x", "y"), np.array([0.6, 0.6]), np.array([1.0, 1.0]))
    assert parse_bounds(["a=0.1:", "b=:0.3"]) == {"a": (0.1, 1.0), "b": (0.0, 0.3)}
    for bad in ("a", "a=0.5", "a=0.4:0.2", "a=x:1"):
        with pytest.raises(ConfigError, match="--bound"):
            parse_bounds([bad])


def test_a_written_spec_loads_back_with_the_weights(tmp_path):
    w = space_for_spec(SPEC, AVAILABLE, BOUNDS).sample(1, np.random.default_rng(3))[0]
    back = write_spec_yaml(with_weights(SPEC, w, name="five-searched"),
                           str(tmp_path / "spec.yaml"), "a header\nline two")
    assert back.name == "five-searched" and back.split == SPEC.split
    assert back.weights == [float(x) for x in w]
    assert (tmp_path / "spec.yaml").read_text().startswith("# a header\n# line two\n")
