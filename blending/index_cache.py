"""On-disk cache for sample and blend indices: build once, memory-map on every later use.

An entry is a set of ``.npy`` arrays plus a ``.json`` description, all named
``<kind>-<key>-...`` where ``key`` is the first 20 hex digits of the sha256 of the canonical
JSON of everything the arrays depend on (shard checksums, weights, seq_length, sample counts,
seed, format version). Changing any input changes the name, so a stale entry is never read.

Writes are atomic: each file goes to a temporary name in the cache folder and is renamed into
place, the description last; an entry counts as present only when its description exists.
Several ranks building the same entry at once therefore only waste work: each rename installs
identical bytes. Reuse is ``np.load(mmap_mode="r")``: pages are read on demand and shared by
all processes on a machine, so a 132M-sample index costs no resident memory up front.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
from typing import Any, Callable

import numpy as np

CACHE_FORMAT = 1


def cache_key(params: dict[str, Any]) -> str:
    """sha256 (20 hex digits) of the canonical JSON of ``params``."""
    blob = json.dumps({"cache_format": CACHE_FORMAT, **params}, sort_keys=True,
                      separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


def entry_paths(cache_dir: str, kind: str, key: str, names: list[str]) -> dict[str, str]:
    base = os.path.join(cache_dir, f"{kind}-{key}")
    return {name: f"{base}-{name}.npy" for name in names} | {"description": f"{base}.json"}


def _atomic_write(path: str, write: Callable[[Any], None], mode: str) -> None:
    directory = os.path.dirname(path)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=os.path.basename(path), dir=directory)
    try:
        with os.fdopen(fd, mode) as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


def load_entry(paths: dict[str, str]) -> dict[str, np.ndarray] | None:
    """The entry's arrays memory-mapped read-only, or None if it is not (completely) there."""
    if not os.path.isfile(paths["description"]):
        return None
    try:
        # A plain ndarray view of the mapping: same pages, but indexing skips np.memmap's
        # per-access subclass overhead (a third of a random sample read).
        return {name: np.load(p, mmap_mode="r", allow_pickle=False).view(np.ndarray)
                for name, p in paths.items() if name != "description"}
    except (FileNotFoundError, ValueError):
        return None  # a file went missing or was damaged: rebuild it


def cached_arrays(cache_dir: str | None, kind: str, params: dict[str, Any],
                  build: Callable[[], dict[str, np.ndarray]]
                  ) -> tuple[dict[str, np.ndarray], dict[str, str] | None]:
    """Arrays for ``params``: memory-mapped from ``cache_dir`` if present, else built, saved
    and memory-mapped. Returns (arrays, file paths or None when ``cache_dir`` is None)."""
    if cache_dir is None:
        return build(), None
    key = cache_key({"kind": kind, **params})
    os.makedirs(cache_dir, exist_ok=True)
    probe = {"description": os.path.join(cache_dir, f"{kind}-{key}.json")}
    if os.path.isfile(probe["description"]):
        with open(probe["description"], encoding="utf-8") as f:
            names = json.load(f)["arrays"]
        paths = entry_paths(cache_dir, kind, key, names)
        found = load_entry(paths)
        if found is not None:
            return found, paths
    arrays = build()
    paths = entry_paths(cache_dir, kind, key, sorted(arrays))
    for name, arr in arrays.items():
        _atomic_write(paths[name], lambda f, a=arr: np.save(f, np.ascontiguousarray(a),
                                                            allow_pickle=False), "wb")
    description = json.dumps({"kind": kind, "key": key, "params": params,
                              "arrays": sorted(arrays)}, indent=2, sort_keys=True) + "\n"
    _atomic_write(paths["description"], lambda f: f.write(description.encode()), "wb")
    del arrays  # hand back the memory-mapped copies so callers never hold both
    loaded = load_entry(paths)
    assert loaded is not None
    return loaded, paths
