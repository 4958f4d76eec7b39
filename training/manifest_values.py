"""The values of a blend manifest that a launch relies on, checked before any work starts (no
process group, no model, no shard opened), as ``mtnlg blend`` checks a spec's.

    check_manifest_values("RUN/manifest.json")   # ManifestError("manifest field 'X' ...")

``blending.manifest.load_manifest`` checks the manifest against its files (shards exist, their
headers and sha256s agree with what it records). That says nothing of the values themselves,
and a manifest edited by hand (or by a tamperer who also recomputes any checksum) loads: a
weight edited to a negative number made the trainer drop that source without a word
(``BlendedDataset`` takes sources of weight > 0). Refused here: every value that cannot be what
``build_manifest`` (or ``revise``) wrote, with one line naming the field.
"""

from __future__ import annotations

import json
import math
import os
from typing import Any

from blending.manifest import FORMAT_VERSION, ManifestError
from blending.spec import WEIGHT_SUM_TOLERANCE

HEX = frozenset("0123456789abcdef")


def check_manifest_values(path: str) -> dict[str, Any]:
    """Read the manifest at ``path`` and refuse it (``ManifestError``) unless every value a
    launch relies on is one ``mtnlg blend`` can write; returns the JSON document."""
    path = os.path.abspath(path)
    if not os.path.isfile(path):
        raise ManifestError(f"manifest {path!r} does not exist")
    with open(path, encoding="utf-8") as f:
        try:
            d = json.load(f)
        except json.JSONDecodeError as e:
            raise ManifestError(f"manifest {path!r} is not valid JSON: {e}") from None
    if not isinstance(d, dict) or d.get("format_version") != FORMAT_VERSION:
        version = d.get("format_version") if isinstance(d, dict) else None
        raise ManifestError(f"manifest field 'format_version' is {version!r}; this version of "
                            f"mtnlg reads {FORMAT_VERSION}")
    check_values(d, os.path.dirname(path))
    return d


def check_values(d: dict[str, Any], base: str) -> None:
    """The checks of ``check_manifest_values`` on a manifest document whose relative paths are
    relative to ``base``: a negative or non-finite weight, weights not summing to 1, token and
    document counts that are not non-negative integers or disagree with the shards', targets
    and epochs that disagree with the weights, a shard outside the manifest's runs, a tokenizer
    record that cannot be one, a split that cannot be Megatron's."""
    blend = _field(d, "blend", "")
    _text(blend, "name", "blend")
    train_tokens = _number(blend, "train_tokens", "blend", above=True)
    _number(blend, "epoch_cap", "blend", above=True, default=4.0)
    if blend.get("dataset_tokens") is not None:
        _number(blend, "dataset_tokens", "blend", above=True)
    split = blend.get("split")
    if split is not None and not (isinstance(split, list) and len(split) == 3 and all(
            _finite(w) and w >= 0 for w in split) and split[0] > 0):
        raise ManifestError(f"manifest field 'blend.split' must be three non-negative weights "
                            f"with train > 0, got {split!r}")
    tok = _field(d, "tokenizer", "")
    if not isinstance(tok.get("path", ""), str):  # may be empty: then nothing to verify it with
        raise ManifestError(f"manifest field 'tokenizer.path' must be a string, got "
                            f"{tok['path']!r}")
    _text(tok, "sha256", "tokenizer", sha256=True)
    vocab = _number(tok, "vocab_size", "tokenizer", above=True, integer=True)
    if _number(tok, "eod_id", "tokenizer", integer=True) >= vocab:
        raise ManifestError(f"manifest field 'tokenizer.eod_id' must be < tokenizer.vocab_size "
                            f"{vocab}, got {tok['eod_id']!r}")
    runs = d.get("runs", [])
    if not isinstance(runs, list) or not all(isinstance(r, str) and r for r in runs):
        raise ManifestError(f"manifest field 'runs' must be a list of folders, got {runs!r}")
    runs = [_abs(r, base) for r in runs]
    sources = _field(d, "sources", "")
    if not isinstance(sources, list) or not sources:
        raise ManifestError("manifest field 'sources' must list at least one source")
    names: set[str] = set()
    for i, source in enumerate(sources):
        _check_source(source, f"sources[{i}]", train_tokens, runs, base, names)
    total = math.fsum(s["weight"] for s in sources)
    if abs(total - 1.0) > WEIGHT_SUM_TOLERANCE:
        raise ManifestError(f"manifest field 'sources[*].weight' must sum to 1 (within "
                            f"{WEIGHT_SUM_TOLERANCE:g}), got {total!r}")


def _check_source(s: dict, where: str, train_tokens: float, runs: list[str], base: str,
                  names: set[str]) -> None:
    name = _text(s, "name", where)
    if name in names:
        raise ManifestError(f"manifest field '{where}.name': duplicate source {name!r}")
    names.add(name)
    weight = _number(s, "weight", where)
    shards = _field(s, "shards", where)
    if not isinstance(shards, list):
        raise ManifestError(f"manifest field '{where}.shards' must be a list, got {shards!r}")
    tokens = documents = 0
    for j, sh in enumerate(shards):
        at = f"{where}.shards[{j}]"
        prefix = _abs(_text(sh, "path", at), base)
        # build_manifest takes shards from RUN/shards/; a manifest without runs (made by hand
        # or by an older version) has nothing to hold them against
        if runs and not any(os.path.commonpath([prefix, r]) == r for r in runs):
            raise ManifestError(f"manifest field '{at}.path': {prefix!r} is not inside any of "
                                f"the manifest's runs")
        tokens += _number(sh, "tokens", at, integer=True)
        documents += _number(sh, "documents", at, integer=True)
        _text(sh, "bin_sha256", at, sha256=True)
        _text(sh, "idx_sha256", at, sha256=True)
    for key, want in (("available_tokens", tokens), ("documents", documents)):
        if _number(s, key, where, integer=True, default=want) != want:
            raise ManifestError(f"manifest field '{where}.{key}' is {s[key]!r} but its shards "
                                f"hold {want}")
    if weight > 0 and not tokens:
        raise ManifestError(f"manifest field '{where}.weight' is {weight!r} but the source's "
                            f"shards hold no tokens")
    target = weight * train_tokens
    for key, want, rule in (("target_tokens", target, "weight x blend.train_tokens"),
                            ("epochs", target / tokens if tokens else 0.0,
                             "target_tokens / available_tokens")):
        got = _number(s, key, where, default=want)
        if not math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-9):
            raise ManifestError(f"manifest field '{where}.{key}' is {got!r} but {rule} gives "
                                f"{want!r}")


def _field(d: Any, key: str, where: str) -> Any:
    if not isinstance(d, dict) or key not in d:
        raise ManifestError(f"manifest field '{where + '.' if where else ''}{key}' is missing")
    return d[key]


def _finite(value: Any) -> bool:
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value))


def _number(d: dict, key: str, where: str, low: float = 0.0, above: bool = False,
            integer: bool = False, default: Any = None) -> Any:
    """``d[key]`` (``default`` when absent and not None): an int with ``integer``, else a finite
    number; >= ``low``, or > with ``above``. Booleans, strings, NaN and infinities are refused."""
    value = d.get(key, default) if default is not None else _field(d, key, where)
    if (not _finite(value) or (integer and not isinstance(value, int)) or value < low
            or (above and value == low)):
        raise ManifestError(f"manifest field '{where + '.' if where else ''}{key}' must be "
                            f"{'an integer' if integer else 'a finite number'} "
                            f"{'>' if above else '>='} {low:g}, got {value!r}")
    return value


def _text(d: dict, key: str, where: str, sha256: bool = False) -> str:
    value = _field(d, key, where)
    if not isinstance(value, str) or not value or (
            sha256 and (len(value) != 64 or not set(value) <= HEX)):
        raise ManifestError(f"manifest field '{where}.{key}' must be "
                            f"{'a sha256 (64 hex digits)' if sha256 else 'a non-empty string'}, "
                            f"got {value!r}")
    return value


def _abs(path: str, base: str) -> str:
    return os.path.normpath(path if os.path.isabs(path) else os.path.join(base, path))
