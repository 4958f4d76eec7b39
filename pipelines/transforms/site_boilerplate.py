"""The optional site-boilerplate stage (``site_boilerplate:``; ``curation.site_boilerplate``).

``docs | SiteBoilerplate(cfg, out_dir)`` -> ``{"kept": docs, "removed": Removal}``, in the read
stage between language id and the heuristic filters.  Three shuffles, none holding more than one
key's records on a worker:

1. every document with a host emits ``((host, line_hash), (doc_id, content_key))`` once per
   distinct line (and ``(("", line_hash), ...)`` with the corpus-wide rule); a ``CombinePerKey``
   counts the distinct contents per key (copies of a page count once), each accumulator a set
   of at most threshold + 1 keys, and keeps the keys above their threshold;
2. a ``CoGroupByKey`` of those counts with the line records turns each condemned key into
   ``(doc_id, line_hash)`` for the documents holding it;
3. a ``CoGroupByKey`` by document id joins every document with a host with its condemned
   hashes, and the lines are removed.

No side input and no table of all hashes anywhere.  The documents with a URL cross shuffle 3,
which the other read-stage filters avoid: the price of a cross-document decision made before the
heuristics (the alternative, writing parts and rewriting them as the dedup stage does, reads and
writes every document twice).  Documents without a URL (books, papers, code: most of the
bytes of a Pile-like corpus) bypass the shuffles and rejoin the judged ones in a Flatten.  A
document left empty is removed (``empty_after_boilerplate``).  Counters
``site_boilerplate/<source>/kept|removed|skipped``, ``.../lines_removed`` and
``.../chars_removed``; per-document ``boilerplate_chars`` (stats column); per source and host
the documents changed, lines and characters removed (``stats/site_boilerplate.parquet``, the
``TOP_HOSTS`` hosts with most characters removed per source, hosts with none left out, and one
``*`` row per source with its totals over all its hosts).
"""
from __future__ import annotations

import apache_beam as beam
import pyarrow as pa

from curation.document import Document, Removal
from curation.site_boilerplate import (CORPUS, EMPTIED, STAGE, SiteBoilerplateConfig,
                                       content_key, host_of, line_hashes, remove_lines)
from pipelines.storage.files import join
from pipelines.transforms.outputs import REMOVED, count, with_changes
from pipelines.transforms.sinks import WriteSmallTable
from pipelines.transforms.timing import timed

HOST_STATS = "host_stats"
TOP_HOSTS = 50
"""Hosts kept per source in ``stats/site_boilerplate.parquet`` (the table stays small at any
scale; the ``*`` row of each source holds the totals over all its hosts)."""
ALL_HOSTS = "*"
SCHEMA = pa.schema([("source", pa.string()), ("host", pa.string()), ("documents", pa.int64()),
                    ("documents_changed", pa.int64()), ("lines_removed", pa.int64()),
                    ("chars_removed", pa.int64())])
TABLE = "site_boilerplate.parquet"


UNJUDGED = "unjudged"


class _SplitFn(beam.DoFn):
    """Documents with a host (main) apart from those without (``unjudged``: not a site's page,
    passed on unchanged and counted ``skipped``)."""

    @timed(STAGE)
    def process(self, doc: Document):
        if host_of(doc.url) is None:
            count(STAGE, doc.source, "skipped")
            yield beam.pvalue.TaggedOutput(UNJUDGED, doc)
        else:
            yield doc


class _LineRecordsFn(beam.DoFn):
    """A document -> ``((host, hash), (doc_id, content_key))`` per distinct line (and the
    corpus-wide key)."""

    def __init__(self, cfg: SiteBoilerplateConfig) -> None:
        self.cfg = cfg

    @timed(STAGE)
    def process(self, doc: Document):
        host = host_of(doc.url)
        corpus = self.cfg.corpus_documents > 0
        hashes = line_hashes(doc.text, self.cfg.min_line_chars)
        value = doc.id, content_key(hashes)
        for h in hashes:
            yield (host, h), value
            if corpus:
                yield (CORPUS, h), value


class DistinctUpTo(beam.CombineFn):
    """The number of distinct values, counted up to ``cap`` (a set of at most ``cap`` values
    per key however many documents hold the line: a site's footer is on all its pages)."""

    def __init__(self, cap: int) -> None:
        self.cap = cap

    def create_accumulator(self):
        return set()

    def add_input(self, seen, value):
        if len(seen) < self.cap:
            seen.add(value)
        return seen

    def merge_accumulators(self, accumulators):
        merged = set()
        for seen in accumulators:
            for value in seen:
                if len(merged) >= self.cap:
                    return merged
                merged.add(value)
        return merged

    def extract_output(self, seen):
        return len(seen)


def _condemned(kv, cfg: SiteBoilerplateConfig):
    """``((host, hash), {"n": [count], "ids": (doc_id, content_key)s})`` -> ``(doc_id, hash)``
    when the key occurs in more distinct documents than its threshold allows."""
    (host, h), got = kv
    if any(n > cfg.threshold(host) for n in got["n"]):
        for doc_id, _ in got["ids"]:
            yield doc_id, h


class _ApplyFn(beam.DoFn):
    """``(doc_id, {"doc": [doc], "drop": hashes})`` -> the document without those lines (main),
    a ``Removal`` when nothing is left, and ``((source, host), counts)`` on ``host_stats``."""

    def __init__(self, cfg: SiteBoilerplateConfig) -> None:
        self.cfg = cfg

    @timed(STAGE)
    def process(self, kv):
        _, got = kv
        drop = frozenset(got["drop"])
        for doc in got["doc"]:  # one per id (ids are unique by construction)
            host = host_of(doc.url)
            cleaned = remove_lines(doc.text, drop, self.cfg.min_line_chars)
            if cleaned.lines_removed:
                count(STAGE, doc.source, "lines_removed", n=cleaned.lines_removed)
                count(STAGE, doc.source, "chars_removed", n=cleaned.chars_removed)
            yield beam.pvalue.TaggedOutput(HOST_STATS, ((doc.source, host), (
                1, int(cleaned.lines_removed > 0), cleaned.lines_removed, cleaned.chars_removed)))
            doc = with_changes(doc, text=cleaned.text, boilerplate_chars=cleaned.chars_removed)
            if not cleaned.text.strip():
                count(STAGE, doc.source, "removed", EMPTIED)
                yield beam.pvalue.TaggedOutput(REMOVED, Removal(
                    doc, STAGE, EMPTIED, {"lines_removed": cleaned.lines_removed}))
            else:
                count(STAGE, doc.source, "kept")
                yield doc


def _sum4(rows):
    a = [0, 0, 0, 0]
    for r in rows:
        for i in range(4):
            a[i] += r[i]
    return tuple(a)


def _table_rows(kv):
    """``(source, [((host, sums))...top])`` -> table rows."""
    source, top = kv
    return [dict(zip(SCHEMA.names, (source, host, *sums))) for host, sums in top]


class SiteBoilerplate(beam.PTransform):
    """Documents -> ``{"kept", "removed"}`` without the lines repeated across their site; writes
    ``<out_dir>/stats/site_boilerplate.parquet``."""

    def __init__(self, cfg: SiteBoilerplateConfig, out_dir: str, label: str | None = None,
                 separate_kept: bool = False) -> None:
        super().__init__(label)
        self.cfg, self.out_dir = cfg, out_dir
        # separate_kept: return "kept_parts" [judged, unjudged] instead of one flattened "kept"
        # (a Flatten of two stages' outputs passes every document through the local runner's
        # driver: most of them, the unjudged, would make that trip for nothing).
        self.separate_kept = separate_kept

    def expand(self, docs):
        cfg = self.cfg
        split = docs | "WithHost" >> beam.ParDo(_SplitFn()).with_outputs(UNJUDGED, main="judged")
        docs = split.judged
        lines = docs | "LineRecords" >> beam.ParDo(_LineRecordsFn(cfg))
        cap = max(cfg.host_documents, cfg.corpus_documents) + 1  # "above the threshold" at most
        counts = (lines
                  | "Contents" >> beam.Map(lambda kv: (kv[0], kv[1][1]))
                  | "CountDocuments" >> beam.CombinePerKey(DistinctUpTo(cap))
                  | "AboveThreshold" >> beam.Filter(lambda kv: kv[1] > cfg.threshold(kv[0][0])))
        drops = ({"n": counts, "ids": lines}
                 | "JoinCounts" >> beam.CoGroupByKey()
                 | "Condemned" >> beam.FlatMap(_condemned, cfg))
        out = ({"doc": docs | "ById" >> beam.Map(lambda d: (d.id, d)), "drop": drops}
               | "JoinDocuments" >> beam.CoGroupByKey()
               | "RemoveLines" >> beam.ParDo(_ApplyFn(cfg)).with_outputs(
                   REMOVED, HOST_STATS, main="kept"))
        per_host = out[HOST_STATS] | "PerHost" >> beam.CombinePerKey(_sum4)
        totals = (per_host
                  | "BySource" >> beam.Map(lambda kv: (kv[0][0], kv[1]))
                  | "SourceTotals" >> beam.CombinePerKey(_sum4)
                  | "TotalRows" >> beam.Map(lambda kv: (kv[0], [(ALL_HOSTS, kv[1])])))
        top = (per_host
               | "Changed" >> beam.Filter(lambda kv: kv[1][3] > 0)  # the * row counts the others
               | "HostBySource" >> beam.Map(lambda kv: (kv[0][0], (kv[0][1], kv[1])))
               | "TopHosts" >> beam.combiners.Top.PerKey(
                   TOP_HOSTS, key=lambda hs: (hs[1][3], hs[1][2], hs[0])))
        _ = ((top, totals)
             | "TableParts" >> beam.Flatten()
             | "TableRows" >> beam.FlatMap(_table_rows)
             | "Table" >> WriteSmallTable(join(self.out_dir, "stats", TABLE), SCHEMA))
        if self.separate_kept:
            return {"kept_parts": [out.kept, split[UNJUDGED]], "removed": out[REMOVED]}
        kept = (out.kept, split[UNJUDGED]) | "WithUnjudged" >> beam.Flatten()
        return {"kept": kept, "removed": out[REMOVED]}
