"""The curate job's four stages, each reading the previous stage's parts and writing its own.

  read          work items -> read + normalize + language (+ site boilerplate) + heuristics
                (+ quality) -> parts
  dedup         parts -> exact and fuzzy decisions (small records) -> parts minus the removed
  decontaminate parts -> 13-gram decontamination (split / removed) -> parts
  tokenize      parts -> tokens -> sorted runs -> shards + documents/ + the shard table

Every stage writes its outcomes (per-document stats rows, removed/, dead_letter/) where the
documents are and only shuffles small records (file names, hashes, decisions, partial counts),
so on the local runner no process holds more than a stage's small records.  A builder takes the
stage's input part URLs as a PCollection and returns its output part URLs, so the same builders
make one Beam job (``curate`` default) or one job per stage (``--staged``, ``--resume``).
Everything goes to ``env.out_dir``, the stage's staging folder (``pipelines.runfolder.commit``).
"""
from __future__ import annotations

from dataclasses import dataclass

import apache_beam as beam

from pipelines.plumbing.outputs import DEAD_LETTER, REMOVED
from pipelines.config.job import CurateConfig
from pipelines.plumbing.sinks import Gather, WriteManifest, flatten_small
from infra.storage.files import join, write_table
from pipelines.plumbing.stats import grid_spec_of

STAGES = ("read", "dedup", "decontaminate", "tokenize")


@dataclass
class StageEnv:
    cfg: CurateConfig
    out_dir: str
    """The stage's staging folder (laid out like RUN/)."""
    vocab_size: int
    quality_sha256: str | None = None
    against: tuple = ()
    """``pipelines.driver.dedup_against.OlderIndex`` of each ``--dedup-against`` run (checked pre-flight)."""


def enabled(stage: str, cfg: CurateConfig) -> bool:
    """Whether a stage does anything under ``cfg`` (a disabled stage passes its input on)."""
    if stage == "dedup":
        return bool(cfg.dedup.exact or cfg.dedup.fuzzy.enabled)
    if stage == "decontaminate":
        return bool(cfg.decontamination.enabled and cfg.decontamination.tasks)
    return True


def _manifest(env: StageEnv, stage: str, descriptors: list) -> None:
    _ = flatten_small(descriptors, "AllWriterFiles") | "Manifest" >> WriteManifest(env.out_dir, stage)


def build_read(pbegin, env: StageEnv, _urls=None):
    from pipelines.filters.chain import ChainFn
    from pipelines.filters.heuristics import HeuristicsFn
    from pipelines.filters.language import LanguageFn
    from pipelines.filters.normalize import NormalizeFn
    from pipelines.plumbing.parts import WriteParts, part_urls
    from pipelines.plumbing.stats import StageOutcomes
    from pipelines.read.plan import PlanWork
    from pipelines.read.readers import READ, ReadWorkFn

    cfg = env.cfg
    skip = cfg.skip_sources
    fns = [ReadWorkFn(cfg.inputs, cfg.input_root, env.out_dir, cfg.language, skip.get("language", ())),
           NormalizeFn()]
    if cfg.pii.enabled:  # before any stage reads the text: nothing downstream sees the values
        from pipelines.filters.pii import PiiFn

        fns.append(PiiFn(cfg.pii))
    fns.append(LanguageFn(cfg.language, skip.get("language", ())))
    later = [HeuristicsFn(cfg.heuristics, skip.get("heuristics", ()))]
    if cfg.quality.enabled:  # score once, decide in config; the model's sha256 pins every worker
        from pipelines.filters.quality import QualityFn

        later.append(QualityFn(cfg.quality, env.quality_sha256))
    site = cfg.site_boilerplate.enabled  # a cross-document step: the chain is cut around it
    out = (pbegin
           | "PlanWork" >> PlanWork(cfg.inputs)
           | "ReadAndFilter" >> beam.ParDo(ChainFn(fns if site else fns + later)).with_outputs(
               REMOVED, DEAD_LETTER, READ, main="kept"))
    kept, removed = [out.kept], [out[REMOVED]]
    if site:
        from pipelines.filters.site_boilerplate import SiteBoilerplate

        # the judged documents and those without a host go on apart, each filtered and written
        # where it is (a Flatten of the two would pass every document through the driver)
        cleaned = kept[0] | "SiteBoilerplate" >> SiteBoilerplate(cfg.site_boilerplate, env.out_dir,
                                                                  separate_kept=True)
        kept, removed = [], removed + [cleaned["removed"]]
        for i, docs in enumerate(cleaned["kept_parts"]):
            rest = docs | f"Filter{i or ''}" >> beam.ParDo(ChainFn(later)).with_outputs(REMOVED, main="kept")
            kept.append(rest.kept)
            removed.append(rest[REMOVED])
    parts = flatten_small([k | f"WriteParts{i or ''}" >> WriteParts(env.out_dir, "read")
                           for i, k in enumerate(kept)], "AllParts")
    outcomes = ({**{f"removed{i or ''}": r for i, r in enumerate(removed)},
                 "dead_letter": out[DEAD_LETTER], "read": out[READ]}
                | "Outcomes" >> StageOutcomes(env.out_dir, "read", cfg.removed_sample,
                                             grid=grid_spec_of(cfg),
                                             id_index=cfg.id_index))
    _manifest(env, "read", [parts, outcomes["descriptors"]])
    return part_urls(parts)


def build_dedup(p, env: StageEnv, urls):
    """Exact dedup, then fuzzy dedup of exact's survivors, all sources jointly
    (``pipelines.dedup.stage``): the per-document records go to files where
    each part is read, the decisions back to the parts holding their documents.  The records of
    the documents that entered fuzzy dedup become this run's ``dedup_index/``; with
    ``--dedup-against`` the older runs' index parts join both dedup steps (never removed)."""
    from pipelines.dedup.stage import PartitionedDedup
    from pipelines.dedup.stats import WriteDedupStats
    from pipelines.plumbing.parts import PART_ROWS, part_urls
    from pipelines.plumbing.stats import StageOutcomes

    cfg = env.cfg
    fuzzy = cfg.dedup.fuzzy if cfg.dedup.fuzzy.enabled else None
    older = [part for ix in env.against for part in ix.parts]
    out = urls | "Dedup" >> PartitionedDedup(env.out_dir, cfg.dedup.exact, fuzzy, cfg.priority, older,
                                             sum(ix.documents for ix in env.against), PART_ROWS,
                                             id_index=cfg.id_index)
    parts = out["parts"]  # written where the decisions met them
    dedup_in = {k: flatten_small(out[k], f"AllDedup_{k}") for k in ("partials", "inputs")}
    dedup_in.update({k: out[k] for k in ("buckets", "rounds") if out[k] is not None})
    _ = dedup_in | "WriteDedup" >> WriteDedupStats(env.out_dir)
    # The dedup steps count their removals when they decide; the parts count what passed.
    outcomes = {"removed": out["removed"]}
    if cfg.id_index:  # where each member's group row is, for mtnlg explain
        outcomes["index_spools"] = flatten_small(out["index_spools"], "AllDedupSpools")
    outcomes = outcomes | "Outcomes" >> StageOutcomes(
        env.out_dir, "dedup", cfg.removed_sample, grid=grid_spec_of(cfg), id_index=cfg.id_index)
    _manifest(env, "dedup", [parts, out["index"], outcomes["descriptors"], *out["group_files"]])
    return part_urls(parts)


def build_decontaminate(p, env: StageEnv, urls):
    from pipelines.decontaminate import Decontaminate, WriteContaminationStats, WriteCuts
    from pipelines.plumbing.parts import ReadParts, WriteParts, part_urls
    from pipelines.plumbing.stats import StageOutcomes

    cfg = env.cfg
    docs = urls | "ReadParts" >> ReadParts("decontaminate", progress=env.out_dir)
    out = docs | "Decontaminate" >> Decontaminate(cfg.decontamination.tasks, cfg.decontamination.rule,
                                                      separate_kept=True, spill_dir=env.out_dir)
    # The kept documents as the stage produced them (clean / split), each written where it is:
    # a Flatten of the two would pass every document through the local runner's driver.
    kept = out.get("kept_parts") or [out["kept"]]
    parts = [k | f"WriteParts{i}" >> WriteParts(env.out_dir, "decontaminate") for i, k in enumerate(kept)]
    cuts = out["cuts"] | "WriteCuts" >> WriteCuts(env.out_dir)
    _ = ({"contamination": out["contamination"], "tasks": out["tasks"]}
         | "ContaminationStats" >> WriteContaminationStats(env.out_dir))
    outcomes = {"removed": out["removed"]} | "Outcomes" >> StageOutcomes(
        env.out_dir, "decontaminate", cfg.removed_sample, grid=grid_spec_of(cfg), id_index=cfg.id_index)
    _manifest(env, "decontaminate", parts + [cuts, outcomes["descriptors"]])
    return part_urls(flatten_small(parts, "AllParts"))


def build_tokenize(p, env: StageEnv, urls):
    from blending.indexed_dataset import dtype_for_vocab
    from pipelines.plumbing.parts import ReadParts
    from pipelines.tokenize.shards import SHARD_SCHEMA, WriteShards
    from pipelines.plumbing.stats import StageOutcomes
    from pipelines.tokenize.tokens import Tokenize

    cfg, tok = env.cfg, env.cfg.tokenizer
    docs = urls | "ReadParts" >> ReadParts("tokenize", progress=env.out_dir)
    out = docs | "Tokenize" >> Tokenize(tok.path, tok.min_tokens, tok.batch_size)
    dtype = dtype_for_vocab(env.vocab_size).name
    shards = out["kept"] | "Shards" >> WriteShards(env.out_dir, cfg.shards.max_tokens_per_shard, dtype)
    path = join(env.out_dir, "stats", "shards.parquet")
    _ = (shards
         | "ShardList" >> Gather()
         | "ShardTable" >> beam.Map(lambda rows: write_table(
             path, sorted(rows, key=lambda r: r["prefix"]), SHARD_SCHEMA)))
    outcomes = {"kept": out["kept"], "removed": out["removed"]} | "Outcomes" >> StageOutcomes(
        env.out_dir, "tokenize", cfg.removed_sample, grid=grid_spec_of(cfg), id_index=cfg.id_index)
    _manifest(env, "tokenize", [outcomes["descriptors"]])
    return shards


BUILDERS = {"read": build_read, "dedup": build_dedup, "decontaminate": build_decontaminate,
            "tokenize": build_tokenize}


class Stage(beam.PTransform):
    """One stage as a composite transform (its labels nest under the stage name): applied to the
    pipeline's begin for ``read``, to the input part URLs for the others."""

    def __init__(self, stage: str, env: StageEnv) -> None:
        super().__init__(stage)
        self.stage, self.env = stage, env

    def expand(self, pin):
        urls = None if isinstance(pin, beam.pvalue.PBegin) else pin
        return BUILDERS[self.stage](pin, self.env, urls)


def build_stage(stage: str, p, env: StageEnv, urls):
    """Add ``stage`` to pipeline ``p`` (``urls``: its input part URLs, a PCollection); returns
    its output part URLs.  A disabled stage adds nothing and returns its input."""
    if not enabled(stage, env.cfg):
        return urls
    return (p if stage == "read" else urls) | Stage(stage, env)
