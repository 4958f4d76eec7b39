"""Downstream-task decontamination (MT-NLG's 13-gram rule, ``curation.decontamination``).

A per-document transform, ``docs -> {kept, removed, cuts, contamination, tasks}``, after dedup:

1. The index: every worker process builds ``curation.ngram_index.TaskNgramIndex`` ONCE from
   the task files (``curation.eval_tasks`` adapters; files and ``save_to_disk`` folders opened
   through Beam's FileSystems by ``pipelines.storage.task_files``, so they may be ``gs://`` or ``s3://``
   URLs), shared by all its threads and DoFn instances
   (``apache_beam.utils.shared.Shared``).  Nothing index-sized travels through the pipeline:
   no side input, no shuffle.  Task texts are normalised exactly as documents are
   (``normalized_words``).  Build time per worker: log line and the ``index_build_ms``
   distribution.
2. ``MatchFn`` + frequency guard: every document is scanned against the index (in batches).  Clean documents
   leave at once, untouched (byte-identical).  Matched documents go on with their matches, and
   every matched n-gram occurrence is counted over the whole corpus (``CombinePerKey(sum)``);
   n-grams with ``>= frequent_ngram_count`` occurrences are common phrases (a side input: only
   the frequent matched n-grams, not the index).
3. ``SplitFn``: matches of common n-grams are ignored; the rest are cut out of the document
   (``split_document``).  More than ``max_splits`` splits -> removed ``too_many_splits``; no
   piece long enough -> removed ``contaminated``.

Split documents and the accounting: the PARENT is the unit of accounting (one row in
``stats/documents.parquet``, outcome ``kept``, so read = kept + removed + dead_lettered still
counts documents read).  Its pieces are records of their own: ``meta["pieces"]`` lists
``{"id": "<parent id>#p<k>", "chars": n}``, the parent's text is the pieces joined by a blank
line, tokenization ends every piece with EOD (``curation.pieces``: ``split_pieces``,
``piece_documents``).  What was cut out (and short pieces dropped) goes
to ``removed/decontamination/cuts/`` with the task and the n-gram that matched; removed
documents go to ``removed/decontamination/`` through the usual ``Removal`` path.
"""
from __future__ import annotations

import logging
import time

import apache_beam as beam
import pyarrow as pa

from curation.decontamination import DecontaminationConfig, TaskNgramIndex
from curation.document import Document, Removal
from curation.eval_tasks import task_source
from curation.pieces import join_pieces
from pipelines.plumbing.outputs import REMOVED, count, with_changes
from pipelines.plumbing.sinks import Gather, WriteSmallTable
from pipelines.plumbing.spill import Spilled
from pipelines.plumbing.timing import timed
from infra.storage.files import join
from pipelines.storage.task_files import task_texts

STAGE = "decontamination"
MATCH_BATCH = 256
"""Documents screened per call (``MatchFn``): ~1 MB of text for the sample's documents."""
MATCHED, CUTS, EVENTS = "matched", "cuts", "events"


class TaskIndex:
    """The task n-gram index of one ``Decontaminate``, built at most once per worker process.

    Pickles as the task sources and the rule (a few hundred bytes); ``acquire`` builds the
    index from the task files on first use in a process and hands every later caller (other
    threads, other DoFn instances of the stage) the same object."""

    def __init__(self, tasks: list, rule: DecontaminationConfig) -> None:
        from apache_beam.utils.shared import Shared

        self.sources, self.rule = [task_source(t) for t in tasks], rule
        self._shared = Shared()

    def acquire(self) -> tuple[TaskNgramIndex, float | None]:
        """``(index, seconds it took to build)``; seconds is None when it was built before."""
        built: list[float] = []

        def build() -> TaskNgramIndex:
            from curation.decontamination import build_task_ngrams

            t0 = time.perf_counter()
            index = build_task_ngrams(task_texts(self.sources), self.rule.ngram_words, self.rule.min_task_words)
            built.append(time.perf_counter() - t0)
            logging.info("decontamination: index of %s n-grams from %d tasks (%.1f MB) built in %.1f s",
                         f"{len(index):,}", len(index.tasks), index.nbytes / 2**20, built[0])
            return index

        index = self._shared.acquire(build)
        return index, (built[0] if built else None)


def _report_build(seconds: float | None) -> None:
    if seconds is not None:
        beam.metrics.Metrics.distribution(STAGE, "index_build_ms").update(int(seconds * 1000))


class TaskNgramCountsFn(beam.DoFn):
    """One element in -> ``(task, distinct n-grams attributed to it)`` per task."""

    def __init__(self, index: TaskIndex) -> None:
        self.index = index

    def process(self, _):
        index, seconds = self.index.acquire()
        _report_build(seconds)
        yield from sorted(index.ngrams_per_task().items())


class MatchFn(beam.DoFn):
    """A batch of documents (``BatchElements``) -> clean documents to the main output unchanged;
    ``(doc, matches)`` to ``matched``; ``((ngram, task), occurrences)`` to ``counts`` for the
    frequency guard.  The batch is screened at once (``find_matches_batch``: a few numpy passes
    over all its texts instead of a few per document), in order."""

    def __init__(self, index: TaskIndex) -> None:
        self.index = index
        self._index, self._built = None, None

    def setup(self) -> None:
        self._index, self._built = self.index.acquire()

    def start_bundle(self) -> None:  # metrics count inside a bundle, not in setup
        _report_build(self._built)
        self._built = None

    @timed("decontamination")
    def process(self, batch: list[Document]):
        from curation.decontamination import find_matches_batch

        if self._index is None:
            self.setup()
            self.start_bundle()
        for doc, matches in zip(batch, find_matches_batch([d.text for d in batch], self._index)):
            if not matches:
                yield doc
                continue
            occurrences: dict[tuple[str, str], int] = {}
            for m in matches:
                occurrences[m.ngram, m.task] = occurrences.get((m.ngram, m.task), 0) + 1
            for key, n in sorted(occurrences.items()):
                yield beam.pvalue.TaggedOutput("counts", (key, n))
            yield beam.pvalue.TaggedOutput(MATCHED, (doc, matches))


def _cut_row(doc: Document, k: int, start: int, end: int, reason: str, task: str, ngram: str) -> dict:
    return {"id": f"{doc.id}#cut{k}", "parent": doc.id, "source": doc.source, "stage": STAGE,
            "reason": reason, "detail": {"task": task, "ngram": ngram, "start": start, "end": end},
            "text": doc.text[start:end]}


class SplitFn(beam.DoFn):
    """``(doc, matches)`` -> kept (split) documents, ``removed`` Removals, ``cuts`` rows and
    ``events`` (task, source, action, metric, n) for the per-task stats."""

    def __init__(self, rule: DecontaminationConfig) -> None:
        self.rule = rule
        self._common_src, self._ignore = None, frozenset()

    @timed("decontamination")
    def process(self, item, common: list[str]):
        from curation.decontamination import split_document

        if self._common_src is not common:  # side inputs are cached per worker; build the set once
            self._common_src, self._ignore = common, frozenset(common)
        doc, matches = item
        matches = [m for m in matches if m.ngram not in self._ignore]
        if not matches:  # every match was a common phrase: the document is left alone
            count(STAGE, doc.source, "kept", "common_ngrams_only")
            yield doc
            return
        r = self.rule
        pieces, info = split_document(doc.text, matches, r.cut_chars, r.min_piece_chars,
                                      r.max_splits, r.boundary_window_chars)
        task, ngram = matches[0].task, matches[0].ngram  # stats attribute a document to its first task
        for m in matches:
            yield beam.pvalue.TaggedOutput(EVENTS, (m.task, doc.source, "", "matches", 1))
        summary = {k: info[k] for k in ("matches", "splits", "pieces_dropped", "chars_removed")}
        meta = {**doc.meta, STAGE: {**summary, "tasks": info["tasks"]}}
        if not pieces:
            reason = "too_many_splits" if pieces is None else "contaminated"
            count(STAGE, doc.source, "removed", reason)
            yield beam.pvalue.TaggedOutput(EVENTS, (task, doc.source, "removed", "documents_removed", 1))
            yield beam.pvalue.TaggedOutput(REMOVED, Removal(
                with_changes(doc, meta=meta), STAGE, reason,
                {"task": task, "ngram": ngram, "tasks": info["tasks"], **summary}))
            return
        prev = 0
        for k, (start, end, t, g) in enumerate(info["cuts"]):
            gap = doc.text[prev:start].strip()
            if gap and len(gap) < r.min_piece_chars:  # a dropped piece is removed text too
                yield beam.pvalue.TaggedOutput(CUTS, _cut_row(doc, k, prev, start, "short_piece", t, g) |
                                               {"id": f"{doc.id}#short{k}"})
            yield beam.pvalue.TaggedOutput(CUTS, _cut_row(doc, k, start, end, "cut", t, g))
            prev = end
        tail = doc.text[prev:].strip()
        if tail and len(tail) < r.min_piece_chars:
            yield beam.pvalue.TaggedOutput(CUTS, _cut_row(doc, len(info["cuts"]), prev, len(doc.text),
                                                          "short_piece", task, ngram))
        count(STAGE, doc.source, "split")
        yield beam.pvalue.TaggedOutput(EVENTS, (task, doc.source, "split", "documents_split", 1))
        yield beam.pvalue.TaggedOutput(EVENTS, (task, doc.source, "", "pieces_dropped", info["pieces_dropped"]))
        text, meta["pieces"] = join_pieces(doc.id, pieces)
        yield with_changes(doc, text=text, meta=meta)


def _task_row(task: str, metrics) -> dict:
    row = {"task": task, "ngrams": 0, "frequent_ngrams": 0, "matches": 0, "documents_split": 0,
           "documents_removed": 0, "pieces_dropped": 0}
    for name, n in metrics:
        row[name] += n
    return row


class Decontaminate(beam.PTransform):
    """docs -> ``{"kept", "removed", "cuts", "contamination", "tasks"}``.

    ``contamination``: rows ``{task, source, action, documents}`` (docs/stats-schema.md);
    ``tasks``: one row per task with ``ngrams`` (in the index), ``frequent_ngrams`` (ignored as
    common), ``matches``, ``documents_split``, ``documents_removed``, ``pieces_dropped``.
    """

    def __init__(self, tasks: list, rule: DecontaminationConfig, label: str | None = None,
                 separate_kept: bool = False, spill_dir: str | None = None):
        super().__init__(label)
        self.tasks, self.rule = list(tasks), rule
        # separate_kept: return "kept_parts" [clean, split] instead of one flattened "kept" (a
        # Flatten of two stages' outputs holds every document on the local runner's driver).
        self.separate_kept = separate_kept
        # spill_dir: the matched documents wait for the frequent n-grams (a side input from the
        # whole corpus) in files under <spill_dir>/_tmp/, not as elements in the local runner's
        # driver, which they grew with the corpus (bench/RESULTS.md, "Scale").
        self.spill_dir = spill_dir

    def expand(self, docs):
        index = TaskIndex(self.tasks, self.rule)
        ngrams = (docs.pipeline
                  | "TaskIndexStats" >> beam.Create([None])
                  | "NgramsPerTask" >> beam.ParDo(TaskNgramCountsFn(index)))
        scanned = (docs
                   | "Batch" >> beam.BatchElements(min_batch_size=MATCH_BATCH, max_batch_size=MATCH_BATCH)
                   | "Match" >> beam.ParDo(MatchFn(index)).with_outputs("counts", MATCHED, main="clean"))
        threshold = self.rule.frequent_ngram_count
        common = (  # (ngram, task) of the n-grams matched >= threshold times in the corpus
            scanned.counts
            | "OccurrencesPerNgram" >> beam.CombinePerKey(sum)
            | "Common" >> beam.Filter(lambda kv: kv[1] >= threshold)
            | "CommonNgram" >> beam.Keys()
        )
        common_list = common | "CommonText" >> beam.Map(lambda key: key[0]) | "CommonList" >> Gather()
        matched = scanned[MATCHED]
        if self.spill_dir is not None:
            matched = matched | "SpillMatched" >> Spilled(self.spill_dir, "decontaminate_matched")
        out = matched | "Split" >> beam.ParDo(
            SplitFn(self.rule), beam.pvalue.AsSingleton(common_list)
        ).with_outputs(REMOVED, CUTS, EVENTS, main="kept")
        kept = ({"kept_parts": [scanned.clean, out.kept]} if self.separate_kept
                else {"kept": (scanned.clean, out.kept) | "Kept" >> beam.Flatten()})

        events = out[EVENTS]
        contamination = (
            events
            | "Affected" >> beam.Filter(lambda e: e[2] in ("split", "removed"))
            | "DocKey" >> beam.Map(lambda e: ((e[0], e[1], e[2]), e[4]))
            | "DocsPerTask" >> beam.CombinePerKey(sum)
            | "ContaminationRows" >> beam.MapTuple(
                lambda k, n: {"task": k[0], "source": k[1], "action": k[2], "documents": n}))
        frequent = common | "FrequentTask" >> beam.Map(lambda key: (key[1], ("frequent_ngrams", 1)))
        metrics = [
            ngrams | "NgramMetric" >> beam.MapTuple(lambda t, n: (t, ("ngrams", n))),
            frequent,
            events | "EventMetric" >> beam.Map(lambda e: (e[0], (e[3], e[4]))),
        ]
        tasks = (metrics
                 | "AllMetrics" >> beam.Flatten()
                 | "ByTask" >> beam.GroupByKey()
                 | "TaskRows" >> beam.MapTuple(_task_row))
        return {**kept, "removed": out[REMOVED], "cuts": out[CUTS],
                "contamination": contamination, "tasks": tasks}


class WriteCuts(beam.PTransform):
    """Cut-out text -> ``removed/decontamination/cuts/part-<token>.jsonl.gz`` (one JSON row per cut:
    ``id, parent, source, stage, reason (cut|short_piece), detail {task, ngram, start, end}, text``),
    written where the cuts are made (``sinks.WriteRowsFn``, as the other ``removed/`` files);
    outputs the writer descriptors for the stage's manifest."""

    def __init__(self, run_dir: str, label: str | None = None):
        super().__init__(label)
        self.run_dir = run_dir

    def expand(self, cuts):
        from pipelines.plumbing.sinks import WriteRowsFn

        return (cuts
                | "Rows" >> beam.Map(lambda r: (f"removed/{STAGE}/cuts/part", r))
                | "Write" >> beam.ParDo(WriteRowsFn(self.run_dir, "jsonl")))


CONTAMINATION_SCHEMA = pa.schema([
    ("task", pa.string()), ("source", pa.string()), ("action", pa.string()), ("documents", pa.int64()),
])
CONTAMINATION_TASK_SCHEMA = pa.schema([("task", pa.string())] + [(c, pa.int64()) for c in (
    "ngrams", "frequent_ngrams", "matches", "documents_split", "documents_removed", "pieces_dropped")])


class WriteContaminationStats(beam.PTransform):
    """``Decontaminate``'s stats -> ``stats/contamination.parquet`` (task, source, action,
    documents; docs/stats-schema.md) and ``stats/contamination_tasks.parquet`` (one row per task:
    n-grams indexed, frequent n-grams ignored, matches, documents split/removed, pieces dropped).
    Both are small (one row per task and source)."""

    def __init__(self, run_dir: str, label: str | None = None):
        super().__init__(label)
        self.run_dir = run_dir

    def expand(self, outputs):
        stats = join(self.run_dir, "stats")
        _ = outputs["contamination"] | "PerTaskSource" >> WriteSmallTable(
            join(stats, "contamination.parquet"), CONTAMINATION_SCHEMA)
        _ = outputs["tasks"] | "PerTask" >> WriteSmallTable(
            join(stats, "contamination_tasks.parquet"), CONTAMINATION_TASK_SCHEMA)
        return outputs["tasks"].pipeline
