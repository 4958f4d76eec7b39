"""Downstream-task decontamination (MT-NLG's 13-gram rule, ``curation.decontamination``).

1. ``TaskNgrams``: task files (JSONL ``{"text": ...}``; the task is the file's base name) ->
   ``{ngram: task}``, one dict used as a side input (millions of n-grams at most).
2. Frequency guard: for each indexed n-gram, the number of training documents containing it
   (``CombinePerKey(sum)``); those in ``frequent_ngram_count`` or more documents are common
   phrases and ignored (a second side input).
3. ``DecontaminateFn``: cut each remaining match +- ``cut_chars`` out of the document.  A
   document split more than ``max_splits`` times is removed (``too_many_splits``); one whose
   pieces are all too short is removed (``contaminated``).  A split document stays ONE document
   (the accounting counts documents read): its pieces are joined by a blank line and their
   lengths kept in ``meta["pieces"]`` so tokenization ends each piece with EOD.
"""
from __future__ import annotations

import json
import posixpath

import apache_beam as beam
from apache_beam.io import fileio

from curation.decontamination import DecontaminationConfig
from curation.document import Document, FilterResult
from pipelines.common import FilterDoFn, count, with_changes

PIECE_SEPARATOR = "\n\n"


def _task_texts(readable: fileio.ReadableFile):
    task = posixpath.basename(readable.metadata.path).split(".")[0]
    for line in readable.read_utf8().splitlines():
        line = line.strip()
        if not line:
            continue
        row = json.loads(line)
        text = row.get("text") if isinstance(row, dict) else row
        if isinstance(text, str) and text:
            yield task, text


class TaskNgrams(beam.PTransform):
    """task file globs -> a one-element PCollection holding ``{ngram: task}``."""

    def __init__(self, patterns: list[str], rule: DecontaminationConfig, label: str | None = None):
        super().__init__(label)
        self.patterns, self.rule = patterns, rule

    def expand(self, pbegin):
        from curation.decontamination import task_ngrams

        n, min_words = self.rule.ngram_words, self.rule.min_task_words
        return (
            pbegin
            | "TaskPatterns" >> beam.Create(self.patterns)
            | "MatchTasks" >> fileio.MatchAll()
            | "OpenTasks" >> fileio.ReadMatches()
            | "TaskTexts" >> beam.FlatMap(_task_texts)
            | "TaskNgrams" >> beam.FlatMap(lambda tt: [(g, tt[0]) for g in task_ngrams(tt[1], n, min_words)])
            | "FirstTaskPerNgram" >> beam.CombinePerKey(min)
            | "ToDict" >> beam.combiners.ToDict()
        )


def _matched_ngrams(doc: Document, index: dict[str, str]):
    from curation.decontamination import find_matches

    return [(g, 1) for g in sorted({m.ngram for m in find_matches(doc.text, index)})]


class DecontaminateFn(FilterDoFn):
    stage = "decontamination"

    def __init__(self, rule: DecontaminationConfig) -> None:
        self.rule = rule
        self._index: dict[str, str] = {}
        self._ignore: frozenset[str] = frozenset()

    def process(self, doc: Document, index: dict[str, str], common: list[str]):
        self._index = index
        if getattr(self, "_common_src", None) is not common:  # side inputs are cached per worker
            self._common_src, self._ignore = common, frozenset(common)
        yield from super().process(doc)

    def check(self, doc: Document) -> tuple[Document, FilterResult]:
        from curation.decontamination import find_matches, split_document

        if not self._index:
            return doc, FilterResult.kept()
        matches = find_matches(doc.text, self._index, self._ignore)
        if not matches:
            return doc, FilterResult.kept()
        r = self.rule
        pieces, info = split_document(doc.text, matches, r.cut_chars, r.min_piece_chars, r.max_splits)
        meta = {**doc.meta, "decontamination": {k: v for k, v in info.items() if k != "tasks"},
                "contaminated_by": sorted(set(info.get("tasks", [])))}
        if pieces is None:
            return with_changes(doc, meta=meta), FilterResult.drop("too_many_splits")
        if not pieces:
            return with_changes(doc, meta=meta), FilterResult.drop("contaminated")
        count(self.stage, doc.source, "split")
        meta["pieces"] = [len(p) for p in pieces]
        return with_changes(doc, text=PIECE_SEPARATOR.join(pieces), meta=meta), FilterResult.kept()


def split_pieces(doc: Document) -> list[str]:
    """The pieces a decontaminated document is tokenized as (the whole text if never split)."""
    lengths = doc.meta.get("pieces") if doc.meta else None
    if not lengths:
        return [doc.text]
    out, pos = [], 0
    for n in lengths:
        out.append(doc.text[pos:pos + n])
        pos += n + len(PIECE_SEPARATOR)
    return out


class Decontaminate(beam.PTransform):
    """docs -> ``{"kept", "removed"}``; the task index is built from ``patterns`` in-pipeline."""

    def __init__(self, patterns: list[str], rule: DecontaminationConfig, label: str | None = None):
        super().__init__(label)
        self.patterns, self.rule = patterns, rule

    def expand(self, docs):
        index = docs.pipeline | "TaskIndex" >> TaskNgrams(self.patterns, self.rule)
        threshold = self.rule.frequent_ngram_count
        common = (
            docs
            | "MatchedNgrams" >> beam.FlatMap(_matched_ngrams, beam.pvalue.AsSingleton(index))
            | "DocsPerNgram" >> beam.CombinePerKey(sum)
            | "Common" >> beam.Filter(lambda kv: kv[1] >= threshold)
            | "CommonNgram" >> beam.Keys()
            | "CommonList" >> beam.combiners.ToList()
        )
        out = docs | "Split" >> beam.ParDo(
            DecontaminateFn(self.rule), beam.pvalue.AsSingleton(index),
            beam.pvalue.AsSingleton(common)).with_outputs("removed", main="kept")
        return {"kept": out.kept, "removed": out["removed"]}
