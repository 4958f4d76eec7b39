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

Epochs = weight x train_tokens / tokens (REFERENCE.md section 1).  The spec is read by the
project's one config loader (``infra.config``, docs/config.md): every setting type-checked,
unknown and duplicate keys refused, errors are ``ConfigError`` naming the dotted setting
(``sources[3].weight: ...``).
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass

from infra.config import build_section, loader_field, read_config_file

WEIGHT_SUM_TOLERANCE = 1e-6


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

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("name: must be a non-empty string")
        if not self.weight >= 0:
            raise ValueError(f"weight: ({self.name}) must be >= 0, got {self.weight!r}")
        if self.paper_tokens_b is not None and not self.paper_tokens_b > 0:
            raise ValueError(f"paper_tokens_b: ({self.name}) must be > 0, "
                             f"got {self.paper_tokens_b!r}")

    @property
    def label(self) -> str:
        return self.display_name or self.name


@dataclass(frozen=True)
class BlendSpec:
    """A validated blend spec (see the module docstring for the YAML form)."""

    name: str
    """Blend name, copied into the manifest; a file without one is named after the file."""
    train_tokens: float
    """Tokens the trainer will consume (270e9 for MT-NLG 530B); > 0."""
    sources: tuple[SourceSpec, ...]
    """The components, in a fixed order (blend index ties go to the earlier one)."""
    dataset_tokens: float | None = None
    """Total curated tokens the blend is meant to draw from (339e9 for MT-NLG); informational."""
    epoch_cap: float = 4.0
    """Warn when a source's epochs (weight x train_tokens / available tokens) exceed this."""
    description: str = ""
    """Free text, copied into the manifest."""
    split: tuple[float, float, float] | None = None
    """Megatron's train/valid/test split weights (``[969, 30, 1]``): every source's documents
    are cut into three contiguous ranges in these proportions; the trainer draws validation
    samples from the valid range only. None: every document is for training."""
    path: str | None = loader_field()
    """Where the spec was loaded from, if it was."""

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("name: must be a non-empty string")
        if not self.train_tokens > 0:
            raise ValueError(f"train_tokens: must be > 0, got {self.train_tokens!r}")
        if self.dataset_tokens is not None and not self.dataset_tokens > 0:
            raise ValueError(f"dataset_tokens: must be > 0, got {self.dataset_tokens!r}")
        if not self.epoch_cap > 0:
            raise ValueError(f"epoch_cap: must be > 0, got {self.epoch_cap!r}")
        if not self.sources:
            raise ValueError("sources: list at least one source")
        for kind, values in (("name", [s.name for s in self.sources]),
                             ("display_name", [s.label for s in self.sources])):
            seen: set[str] = set()
            for i, value in enumerate(values):
                if value in seen:
                    raise ValueError(f"sources[{i}].{kind}: duplicate source {kind} {value!r}")
                seen.add(value)
        if self.split is not None:
            if not all(w >= 0 for w in self.split):
                raise ValueError(f"split: weights must be >= 0 (train, valid, test), got "
                                 f"{list(self.split)}")
            if not self.split[0] > 0:
                raise ValueError(f"split: the train weight must be > 0, got {list(self.split)}")
        total = math.fsum(s.weight for s in self.sources)
        if abs(total - 1.0) > WEIGHT_SUM_TOLERANCE:
            raise ValueError(f"sources: the weights must sum to 1 (within "
                             f"{WEIGHT_SUM_TOLERANCE:g}), got {total!r}")

    @property
    def weights(self) -> list[float]:
        return [s.weight for s in self.sources]

    def source(self, name: str) -> SourceSpec:
        for s in self.sources:
            if s.name == name:
                return s
        raise KeyError(f"blend {self.name!r} has no source {name!r}")


def blend_spec_from_dict(data: dict, path: str | None = None) -> BlendSpec:
    """Build and validate a ``BlendSpec`` from parsed YAML/JSON (``infra.config``: every
    setting type-checked, unknown keys refused); ``ConfigError`` names the setting."""
    return build_section(BlendSpec, data, prebuilt={"path": path})


def load_blend_spec(path: str, setting: str = "--spec") -> BlendSpec:
    """Read and validate a blend spec YAML file (unnamed: named after the file)."""
    data = read_config_file(path, setting)
    data.setdefault("name", os.path.splitext(os.path.basename(path))[0])
    return build_section(BlendSpec, data, prebuilt={"path": os.fspath(path)})


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
