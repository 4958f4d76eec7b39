"""The curate job's configuration: one YAML file, typed dataclasses, validated before any work.

A source config (``data_manifests/sources/<name>.yaml``) names the raw inputs and every
threshold of the run.  ``load_config`` reads it, resolves relative paths (inputs and task files
against ``input_root``, the tokenizer against the config file's folder), and validates
everything: a glob that matches nothing, an unknown reader or an out-of-range threshold raises
``ConfigError`` naming the setting, before a pipeline is constructed.
"""
from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from typing import Any

import yaml

from curation.decontamination import DecontaminationConfig
from curation.fuzzy_config import FuzzyDedupConfig  # noqa: F401 - re-exported: the dedup.fuzzy section
from curation.language import LanguageConfig
from curation.quality import QualityConfig
from curation.sources import SOURCE_BY_SLUG

READERS = ("pile", "warc", "realnews", "cc_stories")
EXTRACTORS = ("justext", "resiliparse")


class ConfigError(ValueError):
    """A setting of the curate config is missing or invalid; the message names it."""


def _is_remote(path: str) -> bool:
    return "://" in path


def _join(root: str, path: str) -> str:
    if _is_remote(path) or os.path.isabs(path):
        return path
    if _is_remote(root):
        return root.rstrip("/") + "/" + path
    return os.path.normpath(os.path.join(root, path))


@dataclass
class InputSpec:
    """One group of raw files read by one reader."""

    reader: str
    """``pile``, ``warc``, ``realnews`` or ``cc_stories``."""
    paths: list[str]
    """Globs, relative to ``input_root`` unless absolute or a URL (``gs://...``)."""
    source: str | None = None
    """Blend source slug (e.g. ``cc_2020_50``); required except for ``pile`` (which maps
    ``meta.pile_set_name`` through ``curation.sources.PILE_SUBSET_TO_SOURCE``)."""
    extractor: str = "justext"
    """HTML text extractor for ``warc``: ``justext`` (the paper's) or ``resiliparse``."""


@dataclass
class DedupConfig:
    exact: bool = True
    fuzzy: FuzzyDedupConfig = field(default_factory=FuzzyDedupConfig)


@dataclass
class DecontaminationStage:
    """The decontamination section: which task files, and the split rule
    (``curation.decontamination.DecontaminationConfig``; its fields sit flat in the YAML)."""

    enabled: bool = True
    tasks: list[Any] = field(default_factory=list)
    """Task sources, relative to ``input_root``: a glob of task files (JSONL/Parquet or
    ``datasets.save_to_disk`` folders; the task is the file's base name and its adapter in
    ``curation.eval_tasks`` picks the text fields), or a mapping ``{path, task, fields, split}``
    (``curation.eval_tasks.TaskSource``)."""
    rule: DecontaminationConfig = field(default_factory=DecontaminationConfig)


@dataclass
class TokenizerConfig:
    path: str = "../tokenizers/gpt2"
    """Tokenizer folder, relative to the config file's folder unless absolute."""
    min_tokens: int = 128
    """Documents with fewer tokens (EOD included) are removed with reason ``too_few_tokens``."""
    batch_size: int = 64
    """Documents per ``encode_batch`` call."""


@dataclass
class ShardConfig:
    max_tokens_per_shard: int = 100_000_000
    """Target upper size of one shard; documents are spread over ceil(tokens / this) shards."""


@dataclass
class CurateConfig:
    inputs: list[InputSpec]
    name: str = "curate"
    input_root: str = ""
    """Root for relative input paths. Default: the config file's folder; ``--input-root``."""
    language: LanguageConfig = field(default_factory=LanguageConfig)
    heuristics: dict[str, Any] = field(default_factory=dict)
    """Overrides of ``curation.heuristics.HeuristicsConfig`` fields."""
    quality: QualityConfig = field(default_factory=QualityConfig)
    """The fastText quality classifier stage (``curation.quality.QualityConfig``); off unless
    ``quality.enabled`` (or ``mtnlg curate --quality-model PATH``)."""
    dedup: DedupConfig = field(default_factory=DedupConfig)
    decontamination: DecontaminationStage = field(default_factory=DecontaminationStage)
    tokenizer: TokenizerConfig = field(default_factory=TokenizerConfig)
    shards: ShardConfig = field(default_factory=ShardConfig)
    removed_sample: str | int = "all"
    """``all``: every removed document's text goes to ``removed/``; N: at most N per stage."""
    skip_sources: dict[str, list[str]] = field(default_factory=lambda: {
        "language": ["github"], "heuristics": ["github", "arxiv", "stackexchange"]})
    """Per filter stage (``language``, ``heuristics``), sources it passes through unchecked.
    Language id and the Gopher/C4 prose rules misjudge code, LaTeX and Q&A threads (repeated
    "A:" lines), so by default they apply to prose sources only."""
    priority: list[str] | None = None
    """Sources from highest to lowest priority for dedup keep decisions (default:
    ``curation.sources``' order)."""
    config_path: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    # -- validation ---------------------------------------------------------------------------
    def validate(self, check_paths: bool = True) -> "CurateConfig":
        """Raise ``ConfigError`` naming the first bad setting; return self when all is well."""
        if not self.inputs:
            raise ConfigError("inputs: at least one input is required")
        for i, spec in enumerate(self.inputs):
            where = f"inputs[{i}]"
            if spec.reader not in READERS:
                raise ConfigError(f"{where}.reader: unknown reader {spec.reader!r}; expected one of {READERS}")
            if spec.reader != "pile" and not spec.source:
                raise ConfigError(f"{where}.source: required for reader {spec.reader!r}")
            if spec.source is not None and spec.source not in SOURCE_BY_SLUG:
                raise ConfigError(f"{where}.source: unknown source {spec.source!r}; expected a slug "
                                  f"of curation.sources ({', '.join(SOURCE_BY_SLUG)})")
            if spec.reader == "warc" and spec.extractor not in EXTRACTORS:
                raise ConfigError(f"{where}.extractor: unknown extractor {spec.extractor!r}; "
                                  f"expected one of {EXTRACTORS}")
            if not spec.paths or not all(isinstance(p, str) for p in spec.paths):
                raise ConfigError(f"{where}.paths: a non-empty list of globs is required")
            if check_paths:
                for p in spec.paths:
                    if not _matches(p):
                        raise ConfigError(f"{where}.paths: {p!r} matches no file "
                                          f"(input_root={self.input_root!r})")
        try:
            self.dedup.fuzzy.validate()
        except ValueError as e:
            raise ConfigError(f"dedup.fuzzy.{e}") from None
        d = self.decontamination
        if d.enabled and not d.tasks:
            raise ConfigError("decontamination.tasks: required when decontamination is enabled")
        if d.enabled and check_paths:
            for p in d.tasks:
                p = p.get("path", "") if isinstance(p, dict) else p
                if not _matches(p):
                    raise ConfigError(f"decontamination.tasks: {p!r} matches no file")
        if d.enabled:
            from curation.eval_tasks import task_source

            for i, t in enumerate(d.tasks):
                try:
                    task_source(t)
                except ValueError as e:
                    raise ConfigError(f"decontamination.tasks[{i}]: {e}") from None
        unknown = [s for s in self.quality.sources if s not in SOURCE_BY_SLUG]
        if unknown:
            raise ConfigError(f"quality.sources: unknown source {unknown[0]!r}")
        if (check_paths and self.quality.enabled and not _is_remote(self.quality.model_path)
                and not os.path.isfile(self.quality.model_path)):
            raise ConfigError(f"quality.model_path: {self.quality.model_path!r} does not exist "
                              "(train one with `mtnlg quality train`)")
        _positive("tokenizer.min_tokens", self.tokenizer.min_tokens)
        _positive("tokenizer.batch_size", self.tokenizer.batch_size)
        if check_paths and not _is_remote(self.tokenizer.path) and not os.path.exists(self.tokenizer.path):
            raise ConfigError(f"tokenizer.path: {self.tokenizer.path!r} does not exist")
        _positive("shards.max_tokens_per_shard", self.shards.max_tokens_per_shard)
        for stage, sources in self.skip_sources.items():
            if stage not in ("language", "heuristics"):
                raise ConfigError(f"skip_sources.{stage}: only 'language' and 'heuristics' can be skipped")
            unknown = [s for s in sources if s not in SOURCE_BY_SLUG]
            if unknown:
                raise ConfigError(f"skip_sources.{stage}: unknown source {unknown[0]!r}")
        if self.priority is not None:
            unknown = [s for s in self.priority if s not in SOURCE_BY_SLUG]
            if unknown:
                raise ConfigError(f"priority: unknown source {unknown[0]!r}")
        if self.removed_sample != "all" and not (isinstance(self.removed_sample, int)
                                                 and self.removed_sample >= 0):
            raise ConfigError(f"removed_sample: 'all' or a count >= 0, got {self.removed_sample!r}")
        try:
            from curation.heuristics import HeuristicsConfig
        except ImportError:  # the heuristics module is optional at config time
            HeuristicsConfig = None
        if HeuristicsConfig is not None:
            try:
                HeuristicsConfig(**self.heuristics)
            except (TypeError, ValueError) as e:
                raise ConfigError(f"heuristics: {e}") from e
        return self


def _matches(pattern: str) -> bool:
    from apache_beam.io.filesystems import FileSystems

    try:
        result = FileSystems.match([pattern])[0]
    except Exception:  # an unreachable or malformed location matches nothing
        return False
    return bool(result.metadata_list)


def _positive(name: str, value: Any) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ConfigError(f"{name}: must be a positive integer, got {value!r}")


def _build(cls, data: Any, where: str):
    """Build dataclass ``cls`` from a mapping, rejecting unknown keys by name."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: expected a mapping, got {type(data).__name__}")
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - names)
    if unknown:
        raise ConfigError(f"{where}.{unknown[0]}: unknown setting (known: {sorted(names)})")
    try:
        return cls(**data)
    except (TypeError, ValueError) as e:  # __post_init__ checks of the curation dataclasses
        raise ConfigError(f"{where}: {e}") from e


def config_from_dict(data: dict[str, Any], base_dir: str = ".", input_root: str | None = None,
                     check_paths: bool = True) -> CurateConfig:
    """Build, resolve and validate a ``CurateConfig`` from a parsed YAML mapping."""
    if not isinstance(data, dict):
        raise ConfigError("config: expected a YAML mapping at the top level")
    data = dict(data)
    raw_inputs = data.pop("inputs", None)
    if not isinstance(raw_inputs, list):
        raise ConfigError("inputs: a list of {reader, paths, ...} is required")
    inputs = [_build(InputSpec, x, f"inputs[{i}]") for i, x in enumerate(raw_inputs)]
    for i, spec in enumerate(inputs):
        if isinstance(spec.paths, str):
            spec.paths = [spec.paths]
    dedup = data.pop("dedup", None) or {}
    if not isinstance(dedup, dict):
        raise ConfigError("dedup: expected a mapping")
    dedup = dict(dedup)
    fuzzy = _build(FuzzyDedupConfig, dedup.pop("fuzzy", None), "dedup.fuzzy")
    dedup_cfg = _build(DedupConfig, {**dedup, "fuzzy": fuzzy}, "dedup")
    sections = {"language": LanguageConfig, "tokenizer": TokenizerConfig, "shards": ShardConfig,
                "quality": QualityConfig}
    built = {k: _build(cls, data.pop(k, None), k) for k, cls in sections.items()}
    decon = data.pop("decontamination", None) or {}
    if not isinstance(decon, dict):
        raise ConfigError("decontamination: expected a mapping")
    decon = dict(decon)
    stage = {k: decon.pop(k) for k in ("enabled", "tasks") if k in decon}
    if isinstance(stage.get("tasks"), str):
        stage["tasks"] = [stage["tasks"]]
    built["decontamination"] = DecontaminationStage(
        **stage, rule=_build(DecontaminationConfig, decon, "decontamination"))
    cfg = _build(CurateConfig, {**data, "inputs": inputs, "dedup": dedup_cfg, **built}, "config")
    root = input_root or cfg.input_root or base_dir
    cfg.input_root = root if _is_remote(root) else os.path.abspath(_join(base_dir, root))
    for spec in cfg.inputs:
        spec.paths = [_join(cfg.input_root, p) for p in spec.paths]
    cfg.decontamination.tasks = [
        {**t, "path": _join(cfg.input_root, str(t.get("path", "")))} if isinstance(t, dict)
        else _join(cfg.input_root, t) for t in cfg.decontamination.tasks]
    cfg.tokenizer.path = _join(os.path.abspath(base_dir), cfg.tokenizer.path)
    if cfg.quality.model_path:  # like the tokenizer: relative to the config file's folder
        cfg.quality.model_path = _join(os.path.abspath(base_dir), cfg.quality.model_path)
    return cfg.validate(check_paths=check_paths)


def load_config(path: str, input_root: str | None = None, check_paths: bool = True) -> CurateConfig:
    """Read a YAML source config; relative paths resolve as described in the module docstring."""
    if not os.path.exists(path):
        raise ConfigError(f"--config: {path!r} does not exist")
    with open(path, encoding="utf-8") as f:
        try:
            data = yaml.safe_load(f)
        except yaml.YAMLError as e:
            raise ConfigError(f"--config: {path!r} is not valid YAML: {e}") from e
    cfg = config_from_dict(data, base_dir=os.path.dirname(os.path.abspath(path)),
                           input_root=input_root, check_paths=check_paths)
    cfg.config_path = os.path.abspath(path)
    return cfg
