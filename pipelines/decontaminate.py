"""Downstream-task decontamination (MT-NLG's 13-gram rule, ``curation.decontamination``).

Three passes, after dedup:

1. ``TaskNgrams``: task sources (``curation.eval_tasks``: JSONL/Parquet files or
   ``datasets.save_to_disk`` folders, one adapter per task naming its text fields) ->
   ``{ngram: task}`` as ONE element, used as a side input (millions of n-grams at most).
2. ``MatchFn`` + frequency guard: every document is scanned against the index.  Clean documents
   leave at once, untouched (byte-identical).  Matched documents go on with their matches, and
   every matched n-gram occurrence is counted over the whole corpus (``CombinePerKey(sum)``);
   n-grams with ``>= frequent_ngram_count`` occurrences are common phrases (a side input).
3. ``SplitFn``: matches of common n-grams are ignored; the rest are cut out of the document
   (``split_document``).  More than ``max_splits`` splits -> removed ``too_many_splits``; no
   piece long enough -> removed ``contaminated``.

Split documents and the accounting: the PARENT is the unit of accounting (one row in
``stats/documents.parquet``, outcome ``kept``, so read = kept + removed + dead_lettered still
counts documents read).  Its pieces are records of their own: ``meta["pieces"]`` lists
``{"id": "<parent id>#p<k>", "chars": n}``, the parent's text is the pieces joined by a blank
line, tokenization ends every piece with EOD (``split_pieces``), and ``piece_documents`` gives
them as ``Document`` s with the parent's source.  What was cut out (and short pieces dropped) goes
to ``removed/decontamination/cuts/`` with the task and the n-gram that matched; removed
documents go to ``removed/decontamination/`` through the usual ``Removal`` path.
"""
from __future__ import annotations

import json

import apache_beam as beam
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from curation.decontamination import DecontaminationConfig, TaskNgramIndex
from curation.document import Document, Removal
from curation.eval_tasks import TaskSource, is_saved_dataset, task_source
from pipelines.common import REMOVED, count, with_changes, timed

STAGE = "decontamination"
PIECE_SEPARATOR = "\n\n"
MATCHED, CUTS, EVENTS = "matched", "cuts", "events"


def _source_texts(source: TaskSource):
    """(task, text) pairs of one task source.  Files go through Beam's FileSystems (so
    ``gs://`` works); ``save_to_disk`` folders, which a file match does not list, are local."""
    from curation.eval_tasks import read_task_texts, rows_from_bytes, texts_from_rows

    matched = sorted(FileSystems.match([source.path])[0].metadata_list, key=lambda m: m.path)
    if not matched or any(is_saved_dataset(m.path) for m in matched):
        yield from read_task_texts(source)
        return
    for meta in matched:
        # raw bytes: rows_from_bytes decides on .gz itself (AUTO would decompress twice)
        with FileSystems.open(meta.path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
            data = f.read()
        yield from texts_from_rows(source, meta.path, rows_from_bytes(meta.path, data))


class TaskNgrams(beam.PTransform):
    """task sources -> ``{"index": one {ngram: task} element, "ngrams": (task, n) per task}``."""

    def __init__(self, tasks: list, rule: DecontaminationConfig, label: str | None = None):
        super().__init__(label)
        self.sources, self.rule = [task_source(t) for t in tasks], rule

    def expand(self, pbegin):
        from curation.decontamination import task_ngrams

        n, min_words = self.rule.ngram_words, self.rule.min_task_words
        pairs = (
            pbegin
            | "TaskSources" >> beam.Create(self.sources)
            | "TaskTexts" >> beam.FlatMap(_source_texts)
            | "TaskNgrams" >> beam.FlatMap(lambda tt: [(g, tt[0]) for g in task_ngrams(tt[1], n, min_words)])
            # An n-gram in several tasks is attributed to one, the same in every run.
            | "OneTaskPerNgram" >> beam.CombinePerKey(min)
        )
        index = (pairs
                 | "ToDict" >> beam.combiners.ToDict()
                 | "ToIndex" >> beam.Map(TaskNgramIndex))
        per_task = (pairs | "Task" >> beam.Values() | "NgramsPerTask" >> beam.combiners.Count.PerElement())
        return {"index": index, "ngrams": per_task}


class MatchFn(beam.DoFn):
    """Clean documents to the main output unchanged; ``(doc, matches)`` to ``matched``;
    ``(ngram, occurrences)`` to ``counts`` for the frequency guard."""

    @timed("decontamination")
    def process(self, doc: Document, index: dict):
        from curation.decontamination import find_matches

        matches = find_matches(doc.text, index)
        if not matches:
            yield doc
            return
        occurrences: dict[str, int] = {}
        for m in matches:
            occurrences[m.ngram] = occurrences.get(m.ngram, 0) + 1
        for ngram, n in sorted(occurrences.items()):
            yield beam.pvalue.TaggedOutput("counts", (ngram, n))
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
        meta["pieces"] = [{"id": f"{doc.id}#p{k}", "chars": len(p)} for k, p in enumerate(pieces)]
        yield with_changes(doc, text=PIECE_SEPARATOR.join(pieces), meta=meta)


def split_pieces(doc: Document) -> list[str]:
    """The pieces a decontaminated document is tokenized as (the whole text if never split)."""
    pieces = doc.meta.get("pieces") if doc.meta else None
    if not pieces:
        return [doc.text]
    out, pos = [], 0
    for p in pieces:
        n = p["chars"] if isinstance(p, dict) else int(p)
        out.append(doc.text[pos:pos + n])
        pos += n + len(PIECE_SEPARATOR)
    return out


def piece_documents(doc: Document) -> list[Document]:
    """A split document's pieces as documents: id ``<parent id>#p<k>``, the parent's source,
    ``meta`` with ``parent`` and ``piece``.  An unsplit document is returned as itself."""
    pieces = doc.meta.get("pieces") if doc.meta else None
    if not pieces:
        return [doc]
    base = {k: v for k, v in doc.meta.items() if k != "pieces"}
    return [with_changes(doc, id=p["id"], text=text, meta={**base, "parent": doc.id, "piece": k},
                         tokens=None)
            for k, (p, text) in enumerate(zip(pieces, split_pieces(doc)))]


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
                 separate_kept: bool = False):
        super().__init__(label)
        self.tasks, self.rule = list(tasks), rule
        # separate_kept: return "kept_parts" [clean, split] instead of one flattened "kept" (a
        # Flatten of two stages' outputs holds every document on the local runner's driver).
        self.separate_kept = separate_kept

    def expand(self, docs):
        idx = docs.pipeline | "TaskIndex" >> TaskNgrams(self.tasks, self.rule)
        index = beam.pvalue.AsSingleton(idx["index"])
        scanned = docs | "Match" >> beam.ParDo(MatchFn(), index).with_outputs("counts", MATCHED, main="clean")
        threshold = self.rule.frequent_ngram_count
        common = (
            scanned.counts
            | "OccurrencesPerNgram" >> beam.CombinePerKey(sum)
            | "Common" >> beam.Filter(lambda kv: kv[1] >= threshold)
            | "CommonNgram" >> beam.Keys()
        )
        common_list = common | "CommonList" >> beam.combiners.ToList()
        out = scanned[MATCHED] | "Split" >> beam.ParDo(
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
        frequent = (common
                    | "FrequentTask" >> beam.Map(lambda g, index: (index.get(g, ""), ("frequent_ngrams", 1)), index))
        metrics = [
            idx["ngrams"] | "NgramMetric" >> beam.MapTuple(lambda t, n: (t, ("ngrams", n))),
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
    """Cut-out text -> ``removed/decontamination/cuts/part-*.jsonl.gz`` (one JSON row per cut:
    ``id, parent, source, stage, reason (cut|short_piece), detail {task, ngram, start, end}, text``)."""

    def __init__(self, run_dir: str, label: str | None = None):
        super().__init__(label)
        self.run_dir = run_dir

    def expand(self, cuts):
        from pipelines.sinks import join

        return (cuts
                | "Json" >> beam.Map(lambda r: json.dumps(r, sort_keys=True, ensure_ascii=False))
                | "Write" >> beam.io.WriteToText(
                    join(self.run_dir, "removed", STAGE, "cuts", "part"), file_name_suffix=".jsonl.gz"))
