"""The blend manifest: the exact shards, weights, epochs and tokenizer a training run uses.

``blending.build.build_manifest`` joins a blend spec with one or more curated RUN directories
and writes ``manifest.json`` (atomically, same inputs → same bytes)::

    {"format_version": 1,
     "blend": {"name", "spec", "train_tokens", "dataset_tokens", "epoch_cap",
              "split"},                                    # [train, valid, test] weights or null
     "runs": ["../RUN"],                                   # relative to the manifest
     "tokenizer": {"path", "sha256", "vocab_size", "eod_id"},
     "sources": [{"name", "display_name", "family", "weight", "target_tokens",
                  "available_tokens", "documents", "epochs",
                  "shards": [{"path": "../RUN/shards/books3/books3_00000",  # prefix
                              "documents", "tokens", "bin_sha256", "idx_sha256"}]}],
     "totals": {"sources", "shards", "documents", "available_tokens", "train_tokens"},
     "warnings": [...]}

``load_manifest`` is what the trainer calls before any compute: it refuses a manifest whose
files are missing or whose checksums differ (with ``trust_stamps``, a shard whose verification
stamp still matches is not read again: ``blending.stamps``); ``verify_tokenizer`` refuses a
tokenizer whose sha256, vocabulary size or EOD id differ from the one the shards were made with.
"""
from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass
from typing import Any

from blending.indexed_dataset import IndexedDataset, IndexedDatasetError, bin_path, idx_path
from blending.stamps import verify_shard

log = logging.getLogger(__name__)


FORMAT_VERSION = 1


class ManifestError(ValueError):
    """A manifest cannot be built, read or trusted; the message says which field and why."""


@dataclass(frozen=True)
class TokenizerInfo:
    path: str
    """Tokenizer path (absolute once loaded; relative to the manifest in the JSON)."""
    sha256: str
    """sha256 of the tokenizer.json bytes."""
    vocab_size: int
    eod_id: int

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "sha256": self.sha256, "vocab_size": self.vocab_size,
                "eod_id": self.eod_id}


@dataclass(frozen=True)
class ShardEntry:
    prefix: str
    """Absolute path prefix of the ``.bin``/``.idx`` pair."""
    documents: int
    tokens: int
    bin_sha256: str
    idx_sha256: str


@dataclass(frozen=True)
class SourceEntry:
    name: str
    display_name: str
    family: str
    weight: float
    target_tokens: float
    """weight x train_tokens."""
    available_tokens: int
    documents: int
    epochs: float
    """target_tokens / available_tokens (how often the source is repeated)."""
    shards: tuple[ShardEntry, ...]


@dataclass(frozen=True)
class Manifest:
    blend_name: str
    train_tokens: float
    epoch_cap: float
    tokenizer: TokenizerInfo
    sources: tuple[SourceEntry, ...]
    dataset_tokens: float | None = None
    spec_path: str | None = None
    runs: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    path: str | None = None
    """Where this manifest was written or read (absolute)."""
    format_version: int = FORMAT_VERSION
    split: tuple[float, ...] | None = None
    """Megatron's train/valid/test split weights (from the blend spec), or None (all train)."""

    @property
    def weights(self) -> list[float]:
        return [s.weight for s in self.sources]

    @property
    def shards(self) -> list[ShardEntry]:
        return [sh for s in self.sources for sh in s.shards]

    @property
    def totals(self) -> dict[str, Any]:
        return {"sources": len(self.sources), "shards": len(self.shards),
                "documents": sum(s.documents for s in self.sources),
                "available_tokens": sum(s.available_tokens for s in self.sources),
                "train_tokens": self.train_tokens}

    def source(self, name: str) -> SourceEntry:
        for s in self.sources:
            if s.name == name:
                return s
        raise KeyError(f"manifest has no source {name!r}")

    def split_range(self, source: SourceEntry, split: str) -> tuple[int, int]:
        """[first, last) document (flat over the source's shards, in manifest order) of
        ``split`` (train, valid, test). Without a split every document is train."""
        if split not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
        if self.split is None:
            return (0, source.documents) if split == "train" else (0, 0)
        bounds = split_bounds(self.split, source.documents)
        i = SPLITS.index(split)
        return bounds[i], bounds[i + 1]


SPLITS = ("train", "valid", "test")


def split_bounds(weights, n: int) -> list[int]:
    """Megatron-Core's document split: cumulative rounded shares of ``n``, the rounding error
    taken off every boundary after the first so the last is exactly ``n``."""
    total = float(sum(weights))
    bounds = [0]
    for w in weights:
        bounds.append(bounds[-1] + int(round(w / total * float(n))))
    diff = bounds[-1] - n
    return [bounds[0]] + [b - diff for b in bounds[1:]]


# --- serialization ----------------------------------------------------------------------------

def _rel(path: str | None, base: str) -> str | None:
    if path is None or not os.path.isabs(path):
        return path
    return os.path.relpath(path, base).replace(os.sep, "/")


def _abs(path: str | None, base: str) -> str | None:
    if path is None or os.path.isabs(path):
        return path
    return os.path.normpath(os.path.join(base, path))


def manifest_to_json(manifest: Manifest, base_dir: str) -> dict[str, Any]:
    """The JSON document, with every path relative to ``base_dir`` (the manifest's folder)."""
    tok = manifest.tokenizer.to_json()
    tok["path"] = _rel(tok["path"], base_dir) if os.path.exists(tok["path"]) else tok["path"]
    return {
        "format_version": manifest.format_version,
        "blend": {"name": manifest.blend_name, "spec": _rel(manifest.spec_path, base_dir),
                  "train_tokens": manifest.train_tokens,
                  "dataset_tokens": manifest.dataset_tokens, "epoch_cap": manifest.epoch_cap,
                  **({"split": list(manifest.split)} if manifest.split else {})},
        "runs": [_rel(r, base_dir) for r in manifest.runs],
        "tokenizer": tok,
        "sources": [{
            "name": s.name, "display_name": s.display_name, "family": s.family,
            "weight": s.weight, "target_tokens": s.target_tokens,
            "available_tokens": s.available_tokens, "documents": s.documents,
            "epochs": s.epochs,
            "shards": [{"path": _rel(sh.prefix, base_dir), "documents": sh.documents,
                        "tokens": sh.tokens, "bin_sha256": sh.bin_sha256,
                        "idx_sha256": sh.idx_sha256} for sh in s.shards],
        } for s in manifest.sources],
        "totals": manifest.totals,
        "warnings": list(manifest.warnings),
    }


def write_manifest(manifest: Manifest, output: str) -> None:
    """Write ``output`` atomically (temp file in the same folder, then rename)."""
    output = os.path.abspath(output)
    base = os.path.dirname(output)
    os.makedirs(base, exist_ok=True)
    write_text_atomically(output, json.dumps(manifest_to_json(manifest, base), indent=2) + "\n")


def write_text_atomically(path: str, text: str) -> None:
    """Temp file in the same folder, fsync, rename: a reader sees the old file or the new."""
    tmp = f"{path}.tmp-{os.getpid()}"
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


def _field(d: dict, key: str, where: str) -> Any:
    if not isinstance(d, dict) or key not in d:
        name = f"{where}.{key}" if where else key
        raise ManifestError(f"manifest field '{name}' is missing")
    return d[key]


def load_manifest(path: str, verify_checksums: bool = True,
                  trust_stamps: bool = False) -> Manifest:
    """Read a manifest; refuse it if a shard is missing, resized or (optionally) altered.

    Always checked: format version, every shard's files exist and their headers agree with
    the recorded documents/tokens. With ``verify_checksums`` the sha256 of every file is
    compared with the manifest's: recomputed (reads all shard bytes once), or, with
    ``trust_stamps``, taken from the shard's verification stamp when the file has not changed
    since it was verified (``blending.stamps``; only changed or unstamped files are read).
    """
    path = os.path.abspath(path)
    if not os.path.isfile(path):
        raise ManifestError(f"manifest {path!r} does not exist")
    base = os.path.dirname(path)
    with open(path, encoding="utf-8") as f:
        try:
            d = json.load(f)
        except json.JSONDecodeError as e:
            raise ManifestError(f"manifest {path!r} is not valid JSON: {e}") from None
    version = d.get("format_version")
    if version != FORMAT_VERSION:
        raise ManifestError(f"manifest field 'format_version' is {version!r}; this version of "
                            f"mtnlg reads {FORMAT_VERSION}")
    t = _field(d, "tokenizer", "")
    tok_path = str(t.get("path", ""))
    resolved = _abs(tok_path, base)
    tokenizer = TokenizerInfo(resolved if resolved and os.path.exists(resolved) else tok_path,
                              str(_field(t, "sha256", "tokenizer")),
                              int(_field(t, "vocab_size", "tokenizer")),
                              int(_field(t, "eod_id", "tokenizer")))
    blend = _field(d, "blend", "")
    sources, hashed = [], [0, 0]
    for i, s in enumerate(_field(d, "sources", "")):
        shards = []
        for j, sh in enumerate(_field(s, "shards", f"sources[{i}]")):
            where = f"sources[{i}].shards[{j}]"
            entry = ShardEntry(_abs(str(_field(sh, "path", where)), base),
                               int(_field(sh, "documents", where)), int(_field(sh, "tokens", where)),
                               str(_field(sh, "bin_sha256", where)),
                               str(_field(sh, "idx_sha256", where)))
            hashed[0] += _verify_shard(entry, where, verify_checksums, trust_stamps)
            hashed[1] += 2
            shards.append(entry)
        sources.append(SourceEntry(
            str(_field(s, "name", f"sources[{i}]")), str(s.get("display_name", "")),
            str(s.get("family", "")), float(_field(s, "weight", f"sources[{i}]")),
            float(s.get("target_tokens", 0.0)), int(_field(s, "available_tokens", f"sources[{i}]")),
            int(s.get("documents", 0)), float(_field(s, "epochs", f"sources[{i}]")),
            tuple(shards)))
        if sum(sh.tokens for sh in shards) != sources[-1].available_tokens:
            raise ManifestError(f"manifest field 'sources[{i}].available_tokens' does not equal "
                                "the sum of its shards' tokens")
    if verify_checksums:
        log.info("manifest %s: %d of %d shard files hashed%s", path, hashed[0], hashed[1],
                 " (the others' verification stamps match)" if trust_stamps else "")
    return Manifest(
        blend_name=str(_field(blend, "name", "blend")),
        train_tokens=float(_field(blend, "train_tokens", "blend")),
        epoch_cap=float(blend.get("epoch_cap", 4.0)), tokenizer=tokenizer,
        sources=tuple(sources), dataset_tokens=blend.get("dataset_tokens"),
        spec_path=_abs(blend.get("spec"), base),
        runs=tuple(_abs(r, base) for r in d.get("runs", [])),
        warnings=tuple(d.get("warnings", [])), path=path, format_version=version,
        split=_split(blend.get("split")))


def _split(value) -> tuple[float, ...] | None:
    if value is None:
        return None
    if not (isinstance(value, list) and len(value) == 3
            and all(isinstance(v, (int, float)) and v >= 0 for v in value) and value[0] > 0):
        raise ManifestError(f"manifest field 'blend.split' must be three non-negative weights "
                            f"with train > 0, got {value!r}")
    return tuple(float(v) for v in value)


def _verify_shard(sh: ShardEntry, where: str, verify_checksums: bool,
                  trust_stamps: bool) -> int:
    """Check one shard; returns how many of its files were hashed."""
    files = ((bin_path(sh.prefix), sh.bin_sha256, "bin"), (idx_path(sh.prefix), sh.idx_sha256,
                                                           "idx"))
    for p, _, _ in files:
        if not os.path.isfile(p):
            raise ManifestError(f"manifest '{where}': shard file {p!r} is missing")
    hashed = 0
    if verify_checksums:
        shas, hashed = verify_shard(sh.prefix, trust_stamps)
        for p, want, kind in files:
            got = shas[kind]
            if got != want:
                raise ManifestError(f"manifest '{where}': checksum mismatch for {p!r}: "
                                    f"sha256 {got} but the manifest records {want}; the shard "
                                    "changed after the manifest was built (rebuild it with "
                                    "`mtnlg blend`)")
    try:
        ds = IndexedDataset(sh.prefix)
    except IndexedDatasetError as e:
        raise ManifestError(f"manifest '{where}': {e}") from None
    if (ds.documents, ds.num_tokens) != (sh.documents, sh.tokens):
        raise ManifestError(f"manifest '{where}': {sh.prefix!r} holds {ds.documents} documents / "
                            f"{ds.num_tokens} tokens but the manifest records {sh.documents} / "
                            f"{sh.tokens}")
    return hashed


def verify_tokenizer(manifest: Manifest, tokenizer: Any) -> None:
    """Refuse a tokenizer (anything with sha256, vocab_size, eod_id) that differs from the
    manifest's: training on ids from another vocabulary silently produces garbage."""
    want = manifest.tokenizer
    for f in ("sha256", "vocab_size", "eod_id"):
        got = getattr(tokenizer, f)
        if got != getattr(want, f):
            raise ManifestError(f"tokenizer mismatch: tokenizer.{f} is {got!r} but manifest "
                                f"{manifest.path or ''} was built with {getattr(want, f)!r}")


def megatron_data_path(manifest: Manifest) -> str:
    """Megatron-LM's ``--data-path "w1 prefix1 w2 prefix2 ..."`` for this blend.

    A source's weight is split across its shards in proportion to their tokens (Megatron
    normalizes the weights itself). Sources with weight 0 are left out.
    """
    parts = []
    for s in manifest.sources:
        if s.weight <= 0 or s.available_tokens <= 0:
            continue
        for sh in s.shards:
            if sh.tokens:
                parts.append(f"{s.weight * sh.tokens / s.available_tokens:.10g} {sh.prefix}")
    return " ".join(parts)
