"""The curate job's configuration: one YAML file, typed dataclasses, validated before any work.

A source config (``data_manifests/sources/<name>.yaml``) names the raw inputs and every
threshold of the run.  ``load_config`` reads it with the project's one config loader
(``infra.config``: strict YAML, every value checked against the type of its dataclass field,
unknown keys refused, each section's ``__post_init__`` checks), resolves relative paths
(inputs and task files against ``input_root``, the tokenizer against the config file's folder)
and plans the inputs: a glob that matches nothing, a file matched twice (overlapping globs, the
same file via two paths), an unknown reader or an out-of-range threshold raises
``ConfigError`` naming the setting, before a pipeline is built.
"""
from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from typing import Any

from curation.decontamination import DecontaminationConfig
from curation.fuzzy_config import FuzzyDedupConfig  # noqa: F401 - re-exported: the dedup.fuzzy section
from curation.language import LanguageConfig
from curation.pii import PiiConfig
from curation.site_boilerplate import SiteBoilerplateConfig
from curation.quality import QualityConfig
from curation.readers.warc import DEFAULT_EXTRACTOR, EXTRACTORS
from curation.sources import SOURCE_BY_SLUG
from pipelines.config.listings import ListingSelect
from infra.storage.http_settings import HttpSettings
from infra.config import (ConfigError, build_section, check_overrides, check_value, loader_field,
                          read_config_file, reject_unknown, settable_fields)

READERS = ("pile", "warc", "realnews", "cc_stories")

__all__ = ["CurateConfig", "DecontaminationStage", "DedupConfig", "FuzzyDedupConfig",
           "HttpSettings", "InputSpec", "ListingSelect", "ShardConfig", "TokenizerConfig", "config_from_dict", "load_config"]


def _is_remote(path: str) -> bool:
    return "://" in path


def _join(root: str, path: str) -> str:
    if _is_remote(path) or os.path.isabs(path):
        return path
    if _is_remote(root):
        return root.rstrip("/") + "/" + path
    return os.path.normpath(os.path.join(root, path))


def _unknown_sources(sources, where: str) -> None:
    unknown = [s for s in sources if s not in SOURCE_BY_SLUG]
    if unknown:
        raise ValueError(f"{where}: unknown source {unknown[0]!r}; expected a slug of "
                         f"curation.sources ({', '.join(SOURCE_BY_SLUG)})")


def _positive(name: str, value: int) -> None:
    if value <= 0:
        raise ValueError(f"{name}: must be a positive integer, got {value!r}")


@dataclass
class InputSpec:
    """One group of raw files read by one reader: named by globs (``paths``) or by a path
    listing (``listing``, ``base``, ``select``; ``pipelines.config.listings``)."""

    reader: str
    """``pile``, ``warc``, ``realnews`` or ``cc_stories``."""
    paths: list[str] = field(default_factory=list)
    """Globs, relative to ``input_root`` unless absolute or a URL (``gs://...``).  Not with
    ``listing``.  http(s):// URLs cannot be globbed (no directory listing): name each file."""
    source: str | None = None
    """Blend source slug (e.g. ``cc_2020_50``); required except for ``pile`` (which maps
    ``meta.pile_set_name`` through ``curation.sources.PILE_SUBSET_TO_SOURCE``)."""
    extractor: str | None = None
    """HTML text extractor for ``warc``: ``main_text`` (the default; curation.extraction,
    docs/extraction.md), ``justext`` (MT-NLG's and Pile-CC's, for reproduction) or
    ``resiliparse`` (DCLM's); an error for the other readers."""
    listing: str | None = None
    """A file of paths, one a line, relative to ``base`` (plain or gzip; e.g. Common Crawl's
    ``crawl-data/CC-MAIN-2020-50/warc.paths.gz``): a local path or any URL the job reads,
    relative to ``input_root``.  Instead of ``paths``."""
    base: str | None = None
    """What the listing's lines are relative to (a URL such as ``https://data.commoncrawl.org/``
    or ``s3://commoncrawl/``, or a folder); default: ``input_root``.  Document ids hold the
    path relative to it (the listing's line), whatever ``select`` picks."""
    select: ListingSelect | None = None
    """Which lines of the listing to read (``first``, ``every``/``offset``, ``segments``);
    default: all of them."""
    listing_sha256: str | None = loader_field()
    """The listing's sha256 when the driver checked it; each worker that reads the listing
    again checks it is the same."""
    http: HttpSettings = loader_field(default_factory=HttpSettings)
    """The config's ``http:`` section, carried by each input so that every step reading one
    applies it in its worker process."""

    def __post_init__(self) -> None:
        if self.extractor is None and self.reader == "warc":
            self.extractor = DEFAULT_EXTRACTOR
        if self.reader not in READERS:
            raise ValueError(f"reader: unknown reader {self.reader!r}; expected one of {READERS}")
        if self.reader == "pile" and self.source is not None:
            raise ValueError("source: not used by reader 'pile' (each record's source comes from "
                             "meta.pile_set_name via curation.sources.PILE_SUBSET_TO_SOURCE); "
                             "remove it")
        if self.reader != "pile" and not self.source:
            raise ValueError(f"source: required for reader {self.reader!r}")
        if self.source is not None:
            _unknown_sources([self.source], "source")
        if self.reader != "warc" and self.extractor is not None:
            raise ValueError(f"extractor: only used by reader 'warc', not {self.reader!r}; remove it")
        if self.reader == "warc" and self.extractor not in EXTRACTORS:
            raise ValueError(f"extractor: unknown extractor {self.extractor!r}; expected one of "
                             f"{EXTRACTORS}")
        if self.listing is not None:
            if self.paths:
                raise ValueError("paths: not with 'listing' (an input reads globs or a listing); "
                                 "make them two inputs")
            if not self.listing.strip():
                raise ValueError("listing: an empty path")
        else:
            if not self.paths:
                raise ValueError("paths: required setting is missing: a non-empty list of globs, "
                                 "or a 'listing' instead")
            for name in ("base", "select"):
                if getattr(self, name) is not None:
                    raise ValueError(f"{name}: only used with 'listing'; remove it")


@dataclass
class DedupConfig:
    exact: bool = True
    """Remove exact duplicates (same normalised text) across all sources."""
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
    rule: DecontaminationConfig = loader_field(default_factory=DecontaminationConfig)
    """The split rule; its settings sit flat in the ``decontamination:`` mapping."""

    def __post_init__(self) -> None:
        if not self.enabled:
            return
        if not self.tasks:
            raise ValueError("tasks: required when decontamination is enabled")
        from curation.eval_tasks import task_source

        for i, t in enumerate(self.tasks):
            try:
                task_source(t)
            except ValueError as e:
                raise ValueError(f"tasks[{i}]: {e}") from None


@dataclass
class TokenizerConfig:
    path: str = "pkg://data_manifests/tokenizers/gpt2"
    """Tokenizer folder or ``tokenizer.json``: ``pkg://...`` (shipped in the package, resolved
    on each worker), a Beam FileSystems URL (staged once per worker), or a local path relative
    to the config file's folder."""
    min_tokens: int = 128
    """Documents with fewer tokens (EOD included) are removed with reason ``too_few_tokens``."""
    batch_size: int = 64
    """Documents per ``encode_batch`` call."""

    def __post_init__(self) -> None:
        _positive("min_tokens", self.min_tokens)
        _positive("batch_size", self.batch_size)


@dataclass
class ShardConfig:
    max_tokens_per_shard: int = 100_000_000
    """Target upper size of one shard; documents are spread over ceil(tokens / this) shards."""

    def __post_init__(self) -> None:
        _positive("max_tokens_per_shard", self.max_tokens_per_shard)


@dataclass
class CurateConfig:
    inputs: list[InputSpec]
    name: str = "curate"
    input_root: str = ""
    """Root for relative input paths. Default: the config file's folder; ``--input-root``."""
    language: LanguageConfig = field(default_factory=LanguageConfig)
    pii: PiiConfig = field(default_factory=PiiConfig)
    """The optional personal-data stage (``curation.pii.PiiConfig``): off unless
    ``pii.enabled``; runs right after normalization."""
    site_boilerplate: SiteBoilerplateConfig = field(default_factory=SiteBoilerplateConfig)
    """The optional site-boilerplate stage (``curation.site_boilerplate.SiteBoilerplateConfig``):
    off unless ``site_boilerplate.enabled``; lines repeated across a host's documents are removed
    after language id, before the heuristic filters."""
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
    id_index: bool = True
    """Write ``stats/id_index/`` (each document's rows by the hash of its id and URL), so
    ``mtnlg explain`` reads a few small files instead of every stats file; costs a sort of
    small per-document entries per stage (spooled to files by the writers, no shuffle)."""
    http: HttpSettings = field(default_factory=HttpSettings)
    """How ``http://`` and ``https://`` inputs are read (``infra.storage.http_settings``):
    retries, backoff, timeout, requests in flight per host, block size, CA bundle."""
    priority: list[str] | None = None
    """Sources from highest to lowest priority for dedup keep decisions (default:
    ``curation.sources``' order)."""
    config_path: str | None = loader_field()
    """The config file (absolute), set by ``load_config``."""

    def to_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        for spec in out["inputs"]:
            spec.pop("http", None)  # a copy of the top-level section (see InputSpec.http)
        return out

    def __post_init__(self) -> None:
        """Checks across sections (each section checked itself when it was built)."""
        if not self.inputs:
            raise ValueError("inputs: at least one input is required")
        _unknown_sources(self.quality.sources, "quality.sources")
        for stage, sources in self.skip_sources.items():
            if stage not in ("language", "heuristics"):
                raise ValueError(f"skip_sources.{stage}: only 'language' and 'heuristics' can be skipped")
            _unknown_sources(sources, f"skip_sources.{stage}")
        if self.priority is not None:
            _unknown_sources(self.priority, "priority")
        if self.removed_sample != "all" and not (isinstance(self.removed_sample, int)
                                                 and self.removed_sample >= 0):
            raise ValueError(f"removed_sample: 'all' or a count >= 0, got {self.removed_sample!r}")


def check_files(cfg: CurateConfig) -> None:
    """What the config names must exist: inputs (planned: every glob matches, no file twice),
    task files, the quality model and the tokenizer.  ``ConfigError`` naming the setting."""
    from pipelines.config.inputs import InputPlanError, plan_inputs

    if cfg.http.ca_bundle:  # before the inputs: an https listing is read with it
        _check_ca_bundle(cfg.http.ca_bundle)
    try:
        plan_inputs(cfg.inputs, cfg.input_root)
    except InputPlanError as e:
        raise ConfigError(str(e)) from None
    if cfg.decontamination.enabled:
        try:  # the worker's own resolution (files, save_to_disk folders), where it exists
            from pipelines.storage.task_files import source_exists
        except ImportError:
            source_exists = _matches
        for i, t in enumerate(cfg.decontamination.tasks):
            p = t.get("path", "") if isinstance(t, dict) else t
            if not source_exists(p):
                raise ConfigError(f"decontamination.tasks[{i}]: {p!r} matches no file")
    # Worker files may be local, pkg:// (resolved in each worker's install) or FileSystems URLs.
    if cfg.quality.enabled and not _exists(cfg.quality.model_path):
        raise ConfigError(f"quality.model_path: {cfg.quality.model_path!r} does not exist "
                          "(train one with `mtnlg quality train`)")
    if cfg.language.model_path and not _exists(cfg.language.model_path):
        raise ConfigError(f"language.model_path: {cfg.language.model_path!r} does not exist")
    if not _exists(cfg.tokenizer.path):
        raise ConfigError(f"tokenizer.path: {cfg.tokenizer.path!r} does not exist")


def _check_ca_bundle(path: str) -> None:
    """``http.ca_bundle`` must be there and hold PEM certificates (``ConfigError`` otherwise)."""
    import ssl

    from infra.storage.staging import StagingError, local_copy

    try:
        ssl.create_default_context(cafile=local_copy(path))
    except StagingError as e:
        raise ConfigError(f"http.ca_bundle: {e}") from None
    except (ssl.SSLError, OSError, ValueError) as e:
        raise ConfigError(f"http.ca_bundle: {path!r} holds no PEM certificate "
                          f"({type(e).__name__}: {e})") from None


def _exists(path: str) -> bool:
    """A worker file (model, tokenizer) is there: local, ``pkg://`` or a FileSystems URL."""
    from infra.storage.staging import exists

    return exists(path)


def _matches(pattern: str) -> bool:
    from apache_beam.io.filesystems import FileSystems

    try:
        result = FileSystems.match([pattern])[0]
    except Exception:  # an unreachable or malformed location matches nothing
        return False
    return bool(result.metadata_list)


def _heuristics_overrides(data: Any) -> dict[str, Any]:
    """``heuristics:`` holds overrides of ``curation.heuristics.HeuristicsConfig``: each one
    type-checked and the whole set validated by building that config once."""
    from curation.heuristics import HeuristicsConfig

    overrides = check_overrides(HeuristicsConfig, data, "heuristics")
    build_section(HeuristicsConfig, overrides, "heuristics")
    return overrides


def _decontamination(data: Any) -> DecontaminationStage:
    """The flat ``decontamination:`` mapping: ``enabled`` and ``tasks`` of the stage, the rest
    ``curation.decontamination.DecontaminationConfig`` fields."""
    data = check_value({} if data is None else data, dict[str, Any], "decontamination")
    stage_keys = set(settable_fields(DecontaminationStage))
    rule_keys = set(settable_fields(DecontaminationConfig))
    reject_unknown(data, DecontaminationStage, "decontamination", also=rule_keys)
    rule = build_section(DecontaminationConfig, {k: v for k, v in data.items() if k in rule_keys},
                         "decontamination")
    return build_section(DecontaminationStage, {k: v for k, v in data.items() if k in stage_keys},
                         "decontamination", prebuilt={"rule": rule})


def config_from_dict(data: dict[str, Any], base_dir: str = ".", input_root: str | None = None,
                     check_paths: bool = True) -> CurateConfig:
    """Build, check, resolve and validate a ``CurateConfig`` from a parsed YAML mapping."""
    if not isinstance(data, dict):
        raise ConfigError("config: expected a YAML mapping at the top level")
    data = dict(data)
    if "inputs" not in data:
        raise ConfigError("inputs: required setting is missing: a list of {reader, paths, ...}")
    special = {"heuristics": _heuristics_overrides(data.pop("heuristics", None)),
               "decontamination": _decontamination(data.pop("decontamination", None))}
    cfg = build_section(CurateConfig, data, "", prebuilt=special)
    if input_root:  # given on the command line: relative to where the command runs
        root = input_root if _is_remote(input_root) else os.path.abspath(input_root)
    else:  # in the config: relative to the config file's folder
        root = cfg.input_root or base_dir
    cfg.input_root = root if _is_remote(root) else os.path.abspath(_join(base_dir, root))
    for spec in cfg.inputs:
        spec.paths = [_join(cfg.input_root, p) for p in spec.paths]
        if spec.listing is not None:
            spec.listing = _join(cfg.input_root, spec.listing)
            spec.base = cfg.input_root if spec.base is None else _join(cfg.input_root, spec.base)
        spec.http = cfg.http
    from infra.storage.http_filesystem import configure

    configure(cfg.http)  # the driver's own reads (listings, checks) follow the config too
    cfg.decontamination.tasks = [
        {**t, "path": _join(cfg.input_root, str(t.get("path", "")))} if isinstance(t, dict)
        else _join(cfg.input_root, t) for t in cfg.decontamination.tasks]
    # Worker files relative to the config file's folder; pkg:// references and URLs stay as
    # given, so each worker resolves them itself (infra/storage/staging.py).
    cfg.tokenizer.path = _join(os.path.abspath(base_dir), cfg.tokenizer.path)
    if cfg.quality.model_path:
        cfg.quality.model_path = _join(os.path.abspath(base_dir), cfg.quality.model_path)
    if cfg.language.model_path:
        cfg.language.model_path = _join(os.path.abspath(base_dir), cfg.language.model_path)
    if check_paths:
        check_files(cfg)
    return cfg


def load_config(path: str, input_root: str | None = None, check_paths: bool = True) -> CurateConfig:
    """Read a YAML source config; relative paths resolve as described in the module docstring."""
    data = read_config_file(path, "--config")
    cfg = config_from_dict(data, base_dir=os.path.dirname(os.path.abspath(path)),
                           input_root=input_root, check_paths=check_paths)
    cfg.config_path = os.path.abspath(path)
    return cfg
