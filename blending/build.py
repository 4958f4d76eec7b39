"""Building a manifest: find each blend source's shards in curated RUN directories.

``build_manifest`` is the public entry point: the RUN discovery (run.json tokenizer, shard
folders matched to sources) and the epoch arithmetic; ``blending.manifest`` holds the format.

Every shard is verified against what curate recorded in ``RUN/stats/shards.parquet`` (sha256
of the ``.bin`` and ``.idx``, documents, tokens) before it is opened or listed: a shard whose
bytes changed after curation, a shard curate never wrote, or a recorded shard that is gone is
refused with ``ManifestError`` naming the file.  A manifest never launders a tampered shard
into fresh "valid" checksums.  A verified shard gets a stamp (``blending.stamps``), so training
launches do not read it again; a shard ``mtnlg stage`` already verified and stamped is not
re-read here either.
"""
from __future__ import annotations

import glob
import json
import logging
import os
import re
from typing import Any

from blending.indexed_dataset import IndexedDataset, IndexedDatasetError, bin_path, idx_path
from blending.manifest import (Manifest, ManifestError, ShardEntry, SourceEntry, TokenizerInfo,
                               write_manifest)
from blending.spec import BlendSpec, SourceSpec
from blending.stamps import verify_shard

log = logging.getLogger(__name__)


def _norm(name: str) -> str:
    """Folder names differ in case and punctuation across tools: compare alphanumerics only."""
    return re.sub(r"[^0-9a-z]", "", name.lower())


def _read_run_json(run: str) -> dict[str, Any]:
    path = os.path.join(run, "run.json")
    if not os.path.isfile(path):
        raise ManifestError(f"run {run!r} has no run.json; is it a finished `mtnlg curate` output?")
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    tok = data.get("tokenizer")
    if not isinstance(tok, dict) or not {"sha256", "vocab_size", "eod_id"} <= set(tok):
        raise ManifestError(f"{path}: 'tokenizer' must have path, sha256, vocab_size, eod_id")
    return data


def _resolve_tokenizer_path(path: str, run: str) -> str:
    if os.path.isabs(path):
        return path
    for base in (run, os.getcwd()):
        candidate = os.path.abspath(os.path.join(base, path))
        if os.path.exists(candidate):
            return candidate
    return path  # not found: keep as recorded; the sha256 is what identifies it


def _source_dirs(run: str) -> dict[str, list[str]]:
    """normalized folder name → shard folders in ``run/shards``."""
    out: dict[str, list[str]] = {}
    for d in sorted(glob.glob(os.path.join(glob.escape(run), "shards", "*"))):
        if os.path.isdir(d):
            out.setdefault(_norm(os.path.basename(d)), []).append(d)
    return out


SHARD_TABLE = os.path.join("stats", "shards.parquet")
_SHARD_COLUMNS = ("prefix", "documents", "tokens", "bin_sha256", "idx_sha256")


def recorded_shards(run: str) -> dict[str, dict[str, Any]]:
    """What curate recorded for ``run``'s shards: normalized absolute prefix -> row of
    ``stats/shards.parquet``; ``ManifestError`` if the table is missing or damaged."""
    import pyarrow.parquet as pq

    path = os.path.join(run, SHARD_TABLE)
    if not os.path.isfile(path):
        raise ManifestError(f"run {run!r} records no shard checksums ({path} is missing); only a "
                            "finished `mtnlg curate` output can be blended")
    try:
        rows = pq.read_table(path).to_pylist()
    except Exception as e:  # noqa: BLE001 - any damage: the checksums cannot be trusted
        raise ManifestError(f"{path} is unreadable ({type(e).__name__}: {e}); the shard "
                            "checksums curate recorded cannot be checked") from None
    out = {}
    for row in rows:
        if any(row.get(c) is None for c in _SHARD_COLUMNS):
            raise ManifestError(f"{path}: a row lacks one of {_SHARD_COLUMNS}: {row}")
        out[os.path.normpath(os.path.join(os.path.abspath(run), row["prefix"]))] = row
    return out


def _shard_entry(prefix: str, recorded: dict[str, dict[str, Any]], run: str) -> ShardEntry:
    """Verify the shard's files against curate's record, then read its counts."""
    row = recorded.get(os.path.normpath(os.path.abspath(prefix)))
    table = os.path.join(run, SHARD_TABLE)
    if row is None:
        raise ManifestError(f"shard {prefix!r} is not recorded in {table}: curate did not write "
                            "it (a copied-in or leftover file); refusing to blend it")
    for path in (bin_path(prefix), idx_path(prefix)):
        if not os.path.isfile(path):
            raise ManifestError(f"{path} is missing: curate recorded it in {table}")
    # hashed here once (or trusted from `mtnlg stage`'s stamp) and stamped for the launches
    shas, _ = verify_shard(prefix, trust_stamps=True)
    for path, kind in ((bin_path(prefix), "bin"), (idx_path(prefix), "idx")):
        key, actual = f"{kind}_sha256", shas[kind]
        if actual != row[key]:
            raise ManifestError(f"{path} does not match the sha256 curate recorded in {table} "
                                f"({row[key][:16]}..., now {actual[:16]}...): the file changed "
                                "after curation; refusing to blend it")
    try:
        ds = IndexedDataset(prefix)
    except IndexedDatasetError as e:
        raise ManifestError(f"shard {prefix!r} is unreadable: {e}") from None
    if (ds.documents, int(ds.num_tokens)) != (row["documents"], row["tokens"]):
        raise ManifestError(f"shard {prefix!r} holds {ds.documents} documents / {ds.num_tokens} "
                            f"tokens but {table} records {row['documents']} / {row['tokens']}")
    return ShardEntry(os.path.abspath(prefix), ds.documents, int(ds.num_tokens),
                      row["bin_sha256"], row["idx_sha256"])


def _missing_recorded(recorded: dict[str, dict[str, Any]], dirs: list[str], found: set[str],
                      run: str) -> None:
    for prefix in sorted(recorded):
        if os.path.dirname(prefix) in dirs and prefix not in found:
            raise ManifestError(f"shard {prefix!r} recorded in {os.path.join(run, SHARD_TABLE)} "
                                "is missing from the run; refusing a blend with silently fewer "
                                "documents")


def _keys(s: SourceSpec) -> set[str]:
    return {_norm(n) for n in (s.name, s.display_name, *s.aliases) if n}


def build_manifest(spec: BlendSpec, run_dirs: list[str], output: str,
                   epoch_cap: float | None = None) -> Manifest:
    """Collect shards for every spec source from ``run_dirs``, compute epochs, write ``output``.

    A source's shards are ``RUN/shards/<dir>/*.idx`` where ``<dir>`` matches its name,
    display name or an alias ignoring case and punctuation; runs are taken in the given
    order, shards sorted by name. Errors (``ManifestError``): a weighted source with no
    shards, a run without run.json, runs made with different tokenizers. ``epoch_cap``
    overrides the spec's warning threshold; warnings land in ``Manifest.warnings``.
    """
    if not run_dirs:
        raise ManifestError("at least one --run directory is needed")
    cap = spec.epoch_cap if epoch_cap is None else float(epoch_cap)
    tokenizer: TokenizerInfo | None = None
    dirs_per_run, recorded_per_run = [], []
    for run in run_dirs:
        tok = _read_run_json(run)["tokenizer"]
        info = TokenizerInfo(_resolve_tokenizer_path(str(tok.get("path", "")), run),
                             str(tok["sha256"]), int(tok["vocab_size"]), int(tok["eod_id"]))
        if tokenizer is None:
            tokenizer, first = info, run
        else:
            for f in ("sha256", "vocab_size", "eod_id"):
                if getattr(info, f) != getattr(tokenizer, f):
                    raise ManifestError(
                        f"tokenizer mismatch: run {run!r} has tokenizer.{f}={getattr(info, f)!r}"
                        f" but run {first!r} has {getattr(tokenizer, f)!r}; shards from "
                        "different tokenizers cannot be blended")
        dirs_per_run.append(_source_dirs(run))
        recorded_per_run.append(recorded_shards(run))
    assert tokenizer is not None

    warnings: list[str] = []
    used: set[str] = set()
    sources = []
    for s in spec.sources:
        keys = _keys(s)
        entries = []
        for run, dirs, recorded in zip(run_dirs, dirs_per_run, recorded_per_run):
            for key in sorted(keys & set(dirs)):
                used.add(key)
                found = set()
                for d in dirs[key]:
                    prefixes = [p[:-4] for p in sorted(glob.glob(os.path.join(glob.escape(d), "*.idx")))]
                    found |= {os.path.normpath(os.path.abspath(p)) for p in prefixes}
                    entries += [_shard_entry(p, recorded, run) for p in prefixes]
                _missing_recorded(recorded, [os.path.normpath(os.path.abspath(d)) for d in dirs[key]],
                                  found, run)
        if not entries and s.weight > 0:
            raise ManifestError(f"source {s.name!r} (weight {s.weight}) has no shards: looked for "
                                f"shards/<{'|'.join(sorted({s.name, s.label, *s.aliases}))}>/*.idx "
                                f"in {', '.join(map(repr, run_dirs))}")
        shards = tuple(entries)
        available = sum(sh.tokens for sh in shards)
        target = s.weight * spec.train_tokens
        if available == 0 and s.weight > 0:
            raise ManifestError(f"source {s.name!r} has weight {s.weight} but its shards hold "
                                "no tokens")
        epochs = target / available if available else 0.0
        if epochs > cap:
            warnings.append(f"source {s.name!r} would be repeated {epochs:.2f} epochs "
                            f"(> epoch cap {cap:g}): {target:.0f} target tokens, "
                            f"{available} available")
        sources.append(SourceEntry(s.name, s.label, s.family, s.weight, target, available,
                                   sum(sh.documents for sh in shards), epochs, shards))
    for dirs in dirs_per_run:
        for key in sorted(set(dirs) - used):
            warnings.append(f"shard folder {dirs[key][0]!r} matches no source in blend "
                            f"{spec.name!r} and is not used")
    for w in warnings:  # also in manifest.warnings, which `mtnlg blend` prints
        log.info("warning: %s", w)
    manifest = Manifest(
        blend_name=spec.name, train_tokens=spec.train_tokens, epoch_cap=cap,
        tokenizer=tokenizer, sources=tuple(sources), dataset_tokens=spec.dataset_tokens,
        spec_path=os.path.abspath(spec.path) if spec.path else None,
        runs=tuple(os.path.abspath(r) for r in run_dirs), warnings=tuple(warnings),
        path=os.path.abspath(output),
        split=tuple(spec.split) if spec.split is not None else None)  # the held-out split
    write_manifest(manifest, output)
    return manifest
