"""The blend spec: which sources, with what weights, for how many training tokens.

A blend spec is data (``data_manifests/blends/<name>.yaml``)::

    name: mtnlg-530b
    train_tokens: 270.0e9        # tokens the trainer consumes
    dataset_tokens: 339.0e9      # size of the curated dataset (informational)
    epoch_cap: 4.0               # warn when a source would be seen more often than this
    sources:
      - name: books3             # slug: matches shards/<name>/ in a RUN (or display_name)
        display_name: Books3
        family: Pile
        weight: 0.14336
        paper_tokens_b: 25.7     # paper Table 1; used by the plan table
        paper_tokens_confirmed: true

Epochs = weight x train_tokens / tokens (REFERENCE.md section 1).
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any

import yaml

WEIGHT_SUM_TOLERANCE = 1e-6


class BlendSpecError(ValueError):
    """A blend spec is malformed; the message names the offending setting."""


@dataclass(frozen=True)
class SourceSpec:
    """One component of the blend."""

    name: str
    """Slug (``books3``); the shard folder ``RUN/shards/<name>/`` (or ``<display_name>``)."""
    weight: float
    """Share of training samples drawn from this source; non-negative, all sum to 1."""
    display_name: str = ""
    """Human name as in the paper and run.json (``Books3``); defaults to ``name``."""
    family: str = ""
    """Where it comes from: ``Pile``, ``Common Crawl snapshot``, ``RealNews``, ``CC-Stories``."""
    paper_tokens_b: float | None = None
    """Tokens in billions from the paper's Table 1; only used by the plan table."""
    paper_tokens_confirmed: bool = True
    """False where REFERENCE.md marks the paper token count unconfirmed."""
    aliases: tuple[str, ...] = ()
    """Other folder/source names that mean this source in a RUN (``Wikipedia (en)``)."""

    @property
    def label(self) -> str:
        return self.display_name or self.name


@dataclass(frozen=True)
class BlendSpec:
    """A validated blend spec (see the module docstring for the YAML form)."""

    name: str
    """Blend name, copied into the manifest."""
    train_tokens: float
    """Tokens the trainer will consume (270e9 for MT-NLG 530B); > 0."""
    sources: tuple[SourceSpec, ...]
    """The components, in a fixed order (blend index ties go to the earlier one)."""
    dataset_tokens: float | None = None
    """Total curated tokens the blend is meant to draw from (339e9 for MT-NLG); informational."""
    epoch_cap: float = 4.0
    """Warn when a source's epochs (weight x train_tokens / available tokens) exceed this."""
    description: str = ""
    path: str | None = None
    """Where the spec was loaded from, if it was."""
    split: tuple[float, ...] | None = None
    """Megatron's train/valid/test split weights (``969,30,1``): every source's documents are
    cut into three contiguous ranges in these proportions; the trainer draws validation
    samples from the valid range only. None: every document is for training."""

    def __post_init__(self) -> None:
        _validate(self)

    @property
    def weights(self) -> list[float]:
        return [s.weight for s in self.sources]

    def source(self, name: str) -> SourceSpec:
        for s in self.sources:
            if s.name == name:
                return s
        raise KeyError(f"blend {self.name!r} has no source {name!r}")


def _validate(spec: BlendSpec) -> None:
    if not spec.name:
        raise BlendSpecError("blend setting 'name' must be a non-empty string")
    if not (isinstance(spec.train_tokens, (int, float)) and math.isfinite(spec.train_tokens)
            and spec.train_tokens > 0):
        raise BlendSpecError(f"blend setting 'train_tokens' must be a positive number, "
                             f"got {spec.train_tokens!r}")
    if spec.dataset_tokens is not None and not spec.dataset_tokens > 0:
        raise BlendSpecError(f"blend setting 'dataset_tokens' must be positive, "
                             f"got {spec.dataset_tokens!r}")
    if not spec.epoch_cap > 0:
        raise BlendSpecError(f"blend setting 'epoch_cap' must be positive, got {spec.epoch_cap!r}")
    if not spec.sources:
        raise BlendSpecError("blend setting 'sources' must list at least one source")
    seen: set[str] = set()
    for i, s in enumerate(spec.sources):
        where = f"sources[{i}]"
        if not s.name or not isinstance(s.name, str):
            raise BlendSpecError(f"blend setting '{where}.name' must be a non-empty string")
        if s.name in seen:
            raise BlendSpecError(f"blend setting '{where}.name': duplicate source name {s.name!r}")
        seen.add(s.name)
        if not (isinstance(s.weight, (int, float)) and math.isfinite(s.weight) and s.weight >= 0):
            raise BlendSpecError(f"blend setting '{where}.weight' ({s.name}) must be a "
                                 f"non-negative number, got {s.weight!r}")
        if s.paper_tokens_b is not None and not s.paper_tokens_b > 0:
            raise BlendSpecError(f"blend setting '{where}.paper_tokens_b' ({s.name}) must be "
                                 f"positive, got {s.paper_tokens_b!r}")
    if spec.split is not None:
        if len(spec.split) != 3 or not all(isinstance(w, (int, float)) and math.isfinite(w)
                                           and w >= 0 for w in spec.split):
            raise BlendSpecError(f"blend setting 'split' must be three non-negative numbers "
                                 f"train,valid,test (e.g. 969,30,1), got {spec.split!r}")
        if not spec.split[0] > 0:
            raise BlendSpecError(f"blend setting 'split': the train weight must be > 0, "
                                 f"got {spec.split!r}")
    labels = [s.label for s in spec.sources]
    if len(set(labels)) != len(labels):
        raise BlendSpecError("blend setting 'sources[*].display_name' must be unique")
    total = math.fsum(s.weight for s in spec.sources)
    if abs(total - 1.0) > WEIGHT_SUM_TOLERANCE:
        raise BlendSpecError(f"blend setting 'sources[*].weight' must sum to 1 "
                             f"(within {WEIGHT_SUM_TOLERANCE:g}), got {total!r}")


_SOURCE_KEYS = {"name", "weight", "display_name", "family", "paper_tokens_b",
                "paper_tokens_confirmed", "aliases"}
_TOP_KEYS = {"name", "train_tokens", "dataset_tokens", "epoch_cap", "description", "sources",
             "split"}


def parse_split(value: Any) -> tuple[float, float, float] | None:
    """``"969,30,1"``, ``[969, 30, 1]`` or None -> weights (not normalised)."""
    if value is None:
        return None
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)):
        raise BlendSpecError(f"blend setting 'split' must be 'train,valid,test' weights, "
                             f"got {value!r}")
    return tuple(_number(v, "split") for v in items)  # type: ignore[return-value]


def _number(value: Any, setting: str) -> float:
    try:
        return float(value)  # YAML reads "270e9" (no dot) as a string; accept it
    except (TypeError, ValueError):
        raise BlendSpecError(f"blend setting '{setting}' must be a number, got {value!r}") from None


def blend_spec_from_dict(data: dict[str, Any], path: str | None = None) -> BlendSpec:
    """Build and validate a ``BlendSpec`` from parsed YAML/JSON."""
    if not isinstance(data, dict):
        raise BlendSpecError(f"blend spec {path or ''} must be a mapping at the top level")
    unknown = set(data) - _TOP_KEYS
    if unknown:
        raise BlendSpecError(f"unknown blend setting(s) {sorted(unknown)}; "
                             f"expected {sorted(_TOP_KEYS)}")
    raw_sources = data.get("sources")
    if not isinstance(raw_sources, list):
        raise BlendSpecError("blend setting 'sources' must be a list of sources")
    sources = []
    for i, src in enumerate(raw_sources):
        if not isinstance(src, dict):
            raise BlendSpecError(f"blend setting 'sources[{i}]' must be a mapping")
        bad = set(src) - _SOURCE_KEYS
        if bad:
            raise BlendSpecError(f"unknown blend setting(s) {sorted(bad)} in 'sources[{i}]'; "
                                 f"expected {sorted(_SOURCE_KEYS)}")
        if "weight" not in src:
            raise BlendSpecError(f"blend setting 'sources[{i}].weight' is required")
        tokens_b = src.get("paper_tokens_b")
        sources.append(SourceSpec(
            name=str(src.get("name", "")),
            weight=_number(src["weight"], f"sources[{i}].weight"),
            display_name=str(src.get("display_name") or ""),
            family=str(src.get("family") or ""),
            paper_tokens_b=None if tokens_b is None else _number(tokens_b,
                                                                 f"sources[{i}].paper_tokens_b"),
            paper_tokens_confirmed=bool(src.get("paper_tokens_confirmed", True)),
            aliases=_aliases(src.get("aliases"), i),
        ))
    if "train_tokens" not in data:
        raise BlendSpecError("blend setting 'train_tokens' is required")
    ds = data.get("dataset_tokens")
    return BlendSpec(
        name=str(data.get("name") or (os.path.splitext(os.path.basename(path))[0] if path else "")),
        train_tokens=_number(data["train_tokens"], "train_tokens"),
        sources=tuple(sources),
        dataset_tokens=None if ds is None else _number(ds, "dataset_tokens"),
        epoch_cap=_number(data.get("epoch_cap", 4.0), "epoch_cap"),
        description=str(data.get("description") or ""),
        path=path,
        split=parse_split(data.get("split")),
    )


def _aliases(value: Any, i: int) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise BlendSpecError(f"blend setting 'sources[{i}].aliases' must be a list of strings")


def load_blend_spec(path: str) -> BlendSpec:
    """Read and validate a blend spec YAML file."""
    with open(path, encoding="utf-8") as f:
        try:
            data = yaml.safe_load(f)
        except yaml.YAMLError as e:
            raise BlendSpecError(f"blend spec {path!r} is not valid YAML: {e}") from None
    return blend_spec_from_dict(data, path=os.fspath(path))


def plan_table(spec: BlendSpec, available_tokens: dict[str, float] | None = None) -> str:
    """Per-source tokens / weight / epochs as a text table.

    Without ``available_tokens`` the paper's token counts are used, which reproduces
    REFERENCE.md Table 1 (books3 1.51 epochs, openwebtext2 3.53, cc_stories 0.44).
    ``available_tokens`` maps source name → tokens actually in the shards.
    """
    rows = []
    for s in spec.sources:
        tokens = (available_tokens.get(s.name) if available_tokens is not None
                  else (s.paper_tokens_b * 1e9 if s.paper_tokens_b is not None else None))
        target = s.weight * spec.train_tokens
        epochs = _epochs(target, tokens)
        note = "" if s.paper_tokens_confirmed or available_tokens is not None else "unconfirmed"
        if epochs is not None and epochs > spec.epoch_cap:
            note = (note + " " if note else "") + f"> epoch cap {spec.epoch_cap:g}"
        rows.append((s.name, s.label, s.weight, target, tokens, epochs, note))
    head = f"{'source':<18}{'display':<20}{'weight':>9}{'target tok':>14}{'avail tok':>14}" \
           f"{'epochs':>9}  note"
    lines = [f"blend {spec.name}: train_tokens={_fmt(spec.train_tokens)}"
             + (f", dataset_tokens={_fmt(spec.dataset_tokens)}" if spec.dataset_tokens else ""),
             head, "-" * len(head)]
    for name, label, w, target, tokens, epochs, note in rows:
        lines.append(f"{name:<18}{label[:19]:<20}{w:>9.5f}{_fmt(target):>14}"
                     f"{_fmt(tokens) if tokens is not None else '-':>14}{_fmt_epochs(epochs):>9}  {note}")
    known = [r[4] for r in rows if r[4] is not None]
    total_avail = sum(known) if known else None
    lines.append("-" * len(head))
    lines.append(f"{'total':<38}{sum(r[2] for r in rows):>9.5f}{_fmt(spec.train_tokens):>14}"
                 f"{_fmt(total_avail):>14}")
    return "\n".join(lines)


def _epochs(target: float, tokens: float | None) -> float | None:
    """weight x train_tokens / tokens; inf for a wanted source with no tokens, None unknown."""
    if tokens is None:
        return None
    if tokens <= 0:
        return float("inf") if target > 0 else 0.0
    return target / tokens


def _fmt_epochs(e: float | None) -> str:
    return "-" if e is None else f"{e:.2f}"


def _fmt(n: float | None) -> str:
    if n is None:
        return "-"
    for unit, scale in (("T", 1e12), ("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if abs(n) >= scale:
            return f"{n / scale:.2f}{unit}"
    return f"{n:.0f}"
