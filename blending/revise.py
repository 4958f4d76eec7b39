"""A new version of a blend manifest after its shards changed on purpose (``mtnlg takedown``).

The trainer refuses a manifest whose shard checksums differ from the files (``load_manifest``),
so a run whose shards were rewritten needs a new manifest.  ``write_next_version`` keeps
everything the old one chose (blend, weights, runs, tokenizer, split) and takes each shard of
the changed run again from what curate and the takedown recorded in ``stats/shards.parquet``
(``build._shard_entry`` verifies the files against it), recomputing the sources' documents,
available tokens and epochs.  It is written next to the old one as the next version:
``manifest.json`` -> ``manifest.v2.json`` -> ``manifest.v3.json`` (never overwriting a file);
the old manifest stays as it was and now fails against the changed shards.
"""
from __future__ import annotations

import dataclasses
import os
import re

from blending.build import _shard_entry, recorded_shards
from blending.manifest import Manifest, ManifestError, load_manifest, write_manifest

_VERSION = re.compile(r"^(?P<stem>.*?)(?:\.v(?P<n>\d+))?\.json$")


def next_version_path(path: str) -> str:
    """``x.json`` -> ``x.v2.json``, ``x.vN.json`` -> ``x.v{N+1}.json`` (skipping existing files)."""
    m = _VERSION.match(os.path.basename(path))
    stem, n = (m.group("stem"), int(m.group("n") or 1)) if m else (os.path.basename(path), 1)
    while True:
        n += 1
        candidate = os.path.join(os.path.dirname(os.path.abspath(path)), f"{stem}.v{n}.json")
        if not os.path.exists(candidate):
            return candidate


def check_manifest(path: str, run_dir: str) -> Manifest:
    """Before a takedown: the manifest must verify against the run as it is now and use it."""
    if "://" in run_dir:
        raise ManifestError("--manifest needs a local RUN (manifests point at local shard files)")
    manifest = load_manifest(path, verify_checksums=True)
    run = os.path.normpath(os.path.abspath(run_dir))
    if run not in {os.path.normpath(r) for r in manifest.runs}:
        raise ManifestError(f"manifest {path!r} was not built from {run_dir!r} (its runs: "
                            f"{', '.join(manifest.runs) or 'none'})")
    return manifest


def write_next_version(manifest: Manifest, run_dir: str) -> dict:
    """Write the next version of ``manifest`` with ``run_dir``'s shards as recorded now;
    returns ``{"path", "previous", "shards_changed"}``."""
    recorded = recorded_shards(run_dir)
    run = os.path.normpath(os.path.abspath(run_dir)) + os.sep
    changed = 0
    sources = []
    for s in manifest.sources:
        shards = []
        for sh in s.shards:
            key = os.path.normpath(sh.prefix)
            if key in recorded:
                new = _shard_entry(sh.prefix, recorded, run_dir)
                changed += (new.bin_sha256, new.idx_sha256) != (sh.bin_sha256, sh.idx_sha256)
                shards.append(new)
            elif key.startswith(run):
                changed += 1  # the takedown emptied and deleted it
            else:
                shards.append(sh)
        available = sum(sh.tokens for sh in shards)
        if available == 0 and s.weight > 0:
            raise ManifestError(f"source {s.name!r} (weight {s.weight}) has no tokens left")
        sources.append(dataclasses.replace(
            s, shards=tuple(shards), available_tokens=available,
            documents=sum(sh.documents for sh in shards),
            epochs=s.target_tokens / available if available else 0.0))
    warnings = [w for w in manifest.warnings if "would be repeated" not in w]
    warnings += [f"source {s.name!r} would be repeated {s.epochs:.2f} epochs (> epoch cap "
                 f"{manifest.epoch_cap:g}): {s.target_tokens:.0f} target tokens, "
                 f"{s.available_tokens} available" for s in sources if s.epochs > manifest.epoch_cap]
    output = next_version_path(manifest.path or "manifest.json")
    new = dataclasses.replace(manifest, sources=tuple(sources), warnings=tuple(warnings),
                              path=output)
    write_manifest(new, output)
    load_manifest(output, verify_checksums=True)  # what the trainer will check, checked now
    return {"path": output, "previous": manifest.path, "shards_changed": changed}
