"""Indices are built once, cached under a name derived from their inputs, memory-mapped after."""
import os
import pickle

import numpy as np

from blending.index_cache import cache_key
from blending.build import build_manifest
from blending.sampling import BlendedDataset
from blending.spec import blend_spec_from_dict

from blend_fixtures import make_run, random_docs


def _manifest(tmp_path, weights=(0.75, 0.25)):
    rng = np.random.default_rng(5)
    run = make_run(str(tmp_path / "run"), {"alpha": [random_docs(rng, 40)],
                                          "beta": [random_docs(rng, 15)]})
    spec = blend_spec_from_dict({"name": "t", "train_tokens": 5000, "sources": [
        {"name": "alpha", "weight": weights[0]}, {"name": "beta", "weight": weights[1]}]})
    return build_manifest(spec, [run], str(tmp_path / "m.json"))


def _mapped(a):
    return isinstance(a, np.memmap) or isinstance(a.base, np.memmap) or not a.flags.writeable


def _files(d):
    return sorted(os.listdir(d))


def test_built_once_then_memory_mapped(tmp_path):
    m = _manifest(tmp_path)
    cache = str(tmp_path / "cache")
    first = BlendedDataset(m, 16, 300, seed=7, cache_dir=cache)
    files = _files(cache)
    # one blend entry + one per source: a description and its arrays each, no temp files
    assert sum(f.endswith(".json") for f in files) == 3
    assert not [f for f in files if f.startswith(".tmp")]
    mtimes = {f: os.stat(os.path.join(cache, f)).st_mtime_ns for f in files}
    again = BlendedDataset(m, 16, 300, seed=7, cache_dir=cache)
    assert {f: os.stat(os.path.join(cache, f)).st_mtime_ns for f in _files(cache)} == mtimes
    assert _mapped(again.dataset_index) and _mapped(again.datasets[0].sample_index)
    uncached = BlendedDataset(m, 16, 300, seed=7, cache_dir=None)
    for i in range(300):
        assert again[i].tolist() == first[i].tolist() == uncached[i].tolist()


def test_new_parameters_new_entries(tmp_path):
    m = _manifest(tmp_path)
    cache = str(tmp_path / "cache")
    BlendedDataset(m, 16, 300, seed=7, cache_dir=cache)
    n = len(_files(cache))
    BlendedDataset(m, 16, 300, seed=8, cache_dir=cache)  # same blend index, new source indices
    assert len(_files(cache)) == n + 2 * 4
    BlendedDataset(m, 32, 300, seed=7, cache_dir=cache)
    assert cache_key({"a": 1, "b": [1, 2]}) == cache_key({"b": [1, 2], "a": 1})
    assert cache_key({"a": 1}) != cache_key({"a": 2})


def test_incomplete_entry_is_rebuilt(tmp_path):
    m = _manifest(tmp_path)
    cache = tmp_path / "cache"
    ref = BlendedDataset(m, 16, 100, seed=1, cache_dir=str(cache))
    want = [ref[i].tolist() for i in range(100)]
    del ref  # its arrays map the files damaged below
    # An interrupted build: arrays without their description, and a truncated array.
    victim = next(f for f in _files(cache) if f.startswith("gpt-") and f.endswith(".json"))
    os.remove(cache / victim)
    arr = next(f for f in _files(cache) if f.startswith("blend-") and f.endswith(".npy"))
    (cache / arr).write_bytes((cache / arr).read_bytes()[:20])
    again = BlendedDataset(m, 16, 100, seed=1, cache_dir=str(cache))
    assert [again[i].tolist() for i in range(100)] == want
    assert victim in _files(cache)


def test_default_cache_next_to_manifest_and_small_pickles(tmp_path):
    m = _manifest(tmp_path)
    ds = BlendedDataset(m, 16, 2000, seed=3)
    assert os.path.isdir(tmp_path / "index_cache")
    blob = pickle.dumps(ds)
    assert len(blob) < 20_000  # paths, not the 2000-sample arrays
    clone = pickle.loads(blob)
    assert _mapped(clone.datasets[1].shuffle_index)
    assert all(clone[i].tolist() == ds[i].tolist() for i in range(0, 2000, 37))
