"""The curate job's four stages, each reading the previous stage's parts and writing its own.

  read          work items -> read + normalize + language + heuristics (+ quality) -> parts
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

from pipelines.transforms.outputs import DEAD_LETTER, REMOVED
from pipelines.config.job import CurateConfig
from pipelines.transforms.sinks import WriteManifest, flatten_small
from pipelines.storage.files import join, write_table
from pipelines.transforms.stats import grid_spec_of

STAGES = ("read", "dedup", "decontaminate", "tokenize")


@dataclass
class StageEnv:
    cfg: CurateConfig
    out_dir: str
    """The stage's staging folder (laid out like RUN/)."""
    vocab_size: int
    quality_sha256: str | None = None
    against: tuple = ()
    """``pipelines.transforms.dedup_index.OlderIndex`` of each ``--dedup-against`` run (checked pre-flight)."""


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
    from pipelines.transforms.chain import ChainFn, chain_filter
    from pipelines.transforms.filters import HeuristicsFn, LanguageFn, NormalizeFn
    from pipelines.transforms.parts import WriteParts, part_urls
    from pipelines.transforms.stats import StageOutcomes
    from pipelines.transforms.work import READ, PlanWork, ReadWorkFn

    cfg = env.cfg
    skip = cfg.skip_sources
    fns = [ReadWorkFn(cfg.inputs, cfg.input_root), NormalizeFn()]
    if cfg.pii.enabled:  # before any stage reads the text: nothing downstream sees the values
        from pipelines.transforms.pii import PiiFn

        fns.append(PiiFn(cfg.pii))
    fns += [chain_filter(LanguageFn(cfg.language), skip.get("language", ())),
           chain_filter(HeuristicsFn(cfg.heuristics), skip.get("heuristics", ()))]
    if cfg.quality.enabled:  # score once, decide in config; the model's sha256 pins every worker
        from pipelines.transforms.quality import QualityFn

        fns.append(chain_filter(QualityFn(cfg.quality, env.quality_sha256)))
    out = (pbegin
           | "PlanWork" >> PlanWork(cfg.inputs)
           | "ReadAndFilter" >> beam.ParDo(ChainFn(fns)).with_outputs(
               REMOVED, DEAD_LETTER, READ, main="kept"))
    parts = out.kept | "WriteParts" >> WriteParts(env.out_dir, "read")
    outcomes = ({"removed": out[REMOVED], "dead_letter": out[DEAD_LETTER], "read": out[READ]}
                | "Outcomes" >> StageOutcomes(env.out_dir, "read", cfg.removed_sample,
                                             grid=grid_spec_of(cfg),
                                             id_index=cfg.id_index))
    _manifest(env, "read", [parts, outcomes["descriptors"]])
    return part_urls(parts)


def build_dedup(p, env: StageEnv, urls):
    """Exact dedup, then fuzzy dedup of exact's survivors, on ``DedupRecord`` s computed where
    each part is read; the decisions go back to the parts holding their documents.  The records
    of the documents that entered fuzzy dedup become this run's ``dedup_index/``; with
    ``--dedup-against`` the older runs' index records join both dedup steps (never removed)."""
    from pipelines.transforms.decisions import ApplyDecisions
    from pipelines.transforms.dedup import DECISIONS, GROUPS, INPUTS, DedupRecords, ExactDedup
    from pipelines.transforms.dedup_index import REDIRECTS, ReadIndex, WriteDedupIndex, index_parameters
    from pipelines.transforms.dedup_stats import WriteDedupOutputs
    from pipelines.transforms.fuzzy import BUCKETS, FuzzyDedup
    from pipelines.transforms.parts import ReadParts, WriteParts, part_urls
    from pipelines.transforms.stats import StageOutcomes
    from pipelines.transforms.survivors import final_decisions

    cfg = env.cfg
    fuzzy = cfg.dedup.fuzzy if cfg.dedup.fuzzy.enabled else None
    keyed = urls | "ReadParts" >> ReadParts("dedup", with_part=True)
    ids = keyed | "IdPart" >> beam.MapTuple(lambda url, d: (d.id, url))
    records = (keyed
               | "Docs" >> beam.Values()
               | "Records" >> DedupRecords(fuzzy, cfg.priority))
    index = (beam.pvalue.PBegin(urls.pipeline)
             | "OlderIndex" >> ReadIndex(list(env.against), with_redirects=True) if env.against else None)
    older = index["records"] if index else None
    decisions, extra, members = {}, {GROUPS: [], INPUTS: [], BUCKETS: [], "rounds": []}, None
    if cfg.dedup.exact:
        ex = ({"records": records, "older": older} if older is not None else records) | "Exact" >> ExactDedup()
        decisions["exact"] = ex[DECISIONS]
        for k in (GROUPS, INPUTS):
            extra[k].append(ex[k])
        members = ex["kept"]
    if fuzzy is not None:  # the members are exact's survivors; records supply the features
        inputs = {"records": records, "members": members, "older": older}
        fz = {k: v for k, v in inputs.items() if v is not None} | "Fuzzy" >> FuzzyDedup(fuzzy)
        decisions["fuzzy"] = fz[DECISIONS]
        for k in extra:
            extra[k].append(fz[k])
    # Removals name the document that survives both steps (and the older runs' own dedup).
    decided = final_decisions(**decisions, older_links=index[REDIRECTS] if index else None)
    # ExactDedup / FuzzyDedup count their removals when they decide: apply without counting
    # them again; the documents each stage passed are counted where they are.
    kept_stages = tuple(s for s, on in (("exact_dedup", cfg.dedup.exact),
                                        ("fuzzy_dedup", fuzzy is not None)) if on)
    applied = ({"parts": urls, "ids": ids, "decisions": decided}
               | "Apply" >> ApplyDecisions(count_removed=False, kept_stages=kept_stages))
    parts = applied["kept"] | "WriteParts" >> WriteParts(env.out_dir, "dedup")
    index = ({"records": records, "decisions": decided}
             | "WriteIndex" >> WriteDedupIndex(env.out_dir, index_parameters(cfg.dedup.exact, fuzzy)))
    dedup_in = {k: flatten_small(v, f"AllDedup_{k}") for k, v in extra.items() if v}
    _ = dedup_in | "WriteDedup" >> WriteDedupOutputs(env.out_dir)
    outcomes = {"removed": applied["removed"]}
    if cfg.id_index and GROUPS in dedup_in:  # where each member's group row is, for mtnlg explain
        from pipelines.transforms.id_index import detail_json, entry

        outcomes["index"] = dedup_in[GROUPS] | "GroupEntries" >> beam.Map(
            lambda r: entry("dedup", r["id"], r["id"], None, detail_json(r)))
    outcomes = outcomes | "Outcomes" >> StageOutcomes(
        env.out_dir, "dedup", cfg.removed_sample, grid=grid_spec_of(cfg), id_index=cfg.id_index)
    _manifest(env, "dedup", [parts, index, outcomes["descriptors"]])
    return part_urls(parts)


def build_decontaminate(p, env: StageEnv, urls):
    from pipelines.transforms.decontaminate import Decontaminate, WriteCuts
    from pipelines.transforms.parts import ReadParts, WriteParts, part_urls
    from pipelines.transforms.stats import StageOutcomes, WriteContaminationStats

    cfg = env.cfg
    docs = urls | "ReadParts" >> ReadParts("decontaminate")
    out = docs | "Decontaminate" >> Decontaminate(cfg.decontamination.tasks, cfg.decontamination.rule,
                                                      separate_kept=True)
    # The kept documents as the stage produced them (clean / split), each written where it is:
    # a Flatten of the two would pass every document through the local runner's driver.
    kept = out.get("kept_parts") or [out["kept"]]
    parts = [k | f"WriteParts{i}" >> WriteParts(env.out_dir, "decontaminate") for i, k in enumerate(kept)]
    _ = out["cuts"] | "WriteCuts" >> WriteCuts(env.out_dir)
    _ = ({"contamination": out["contamination"], "tasks": out["tasks"]}
         | "ContaminationStats" >> WriteContaminationStats(env.out_dir))
    outcomes = {"removed": out["removed"]} | "Outcomes" >> StageOutcomes(
        env.out_dir, "decontaminate", cfg.removed_sample, grid=grid_spec_of(cfg), id_index=cfg.id_index)
    _manifest(env, "decontaminate", parts + [outcomes["descriptors"]])
    return part_urls(flatten_small(parts, "AllParts"))


def build_tokenize(p, env: StageEnv, urls):
    from blending.indexed_dataset import dtype_for_vocab
    from pipelines.transforms.parts import ReadParts
    from pipelines.transforms.shards import SHARD_SCHEMA, WriteShards
    from pipelines.transforms.stats import StageOutcomes
    from pipelines.transforms.tokenize import Tokenize

    cfg, tok = env.cfg, env.cfg.tokenizer
    docs = urls | "ReadParts" >> ReadParts("tokenize")
    out = docs | "Tokenize" >> Tokenize(tok.path, tok.min_tokens, tok.batch_size)
    dtype = dtype_for_vocab(env.vocab_size).name
    shards = out["kept"] | "Shards" >> WriteShards(env.out_dir, cfg.shards.max_tokens_per_shard, dtype)
    path = join(env.out_dir, "stats", "shards.parquet")
    _ = (shards
         | "ShardList" >> beam.combiners.ToList()
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
