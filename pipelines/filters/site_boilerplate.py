"""The optional site-boilerplate stage (``site_boilerplate:``; ``curation.site_boilerplate``).

``docs | SiteBoilerplate(cfg, out_dir)`` -> ``{"kept": docs, "removed": Removal}``, in the read
stage between language id and the heuristic filters.  A shuffle through files
(``pipelines.plumbing.spill``, as the dedup stage's), so that no document and no line record
waits in the local runner's driver (three Beam shuffles grew it with the corpus: bench/RESULTS.md,
"Scale: the site-boilerplate stage over spill files"):

1. ``Spill``: every document with a host goes, with its host and line hashes, to the spill
   partition of its host (``partitions``), and ``(host, content_key, line hashes)`` to a second, smaller
   spill; with the corpus-wide rule also ``(line hash, content_key)`` by line hash.  One file
   of each per bundle (or per ``DOCS_PER_SPILL`` documents); only their descriptors travel
   through Beam, as side inputs, which also order the steps.
2. with the corpus-wide rule, ``CorpusLines``: per line partition, the lines held by more than
   ``corpus_documents`` distinct contents, to one file each.
3. ``Clean``: per host partition, the line counts of its hosts (``LineCounts``: copies of a
   page count once), then its documents again, each without its condemned lines.

Documents without a host (books, papers, code: most of the bytes of a Pile-like corpus) are
not judged and go on unchanged.  A document left empty is removed (``empty_after_boilerplate``).
Counters ``site_boilerplate/<source>/kept|removed|skipped``, ``.../lines_removed`` and
``.../chars_removed``; per-document ``boilerplate_chars`` (stats column); per source and host
the documents changed, lines and characters removed (``stats/site_boilerplate.parquet``, the
``TOP_HOSTS`` hosts with most characters removed per source, hosts with none left out, and one
``*`` row per source with its totals over all its hosts: a host's figures are complete in the
one task that holds it, so each task sends only its top hosts on).
"""
from __future__ import annotations

import heapq

import apache_beam as beam
import pyarrow as pa
from apache_beam.pvalue import AsList
from apache_beam.transforms.window import GlobalWindows

from curation.document import Document, Removal
from curation.site_boilerplate import (CORPUS, EMPTIED, STAGE, LineCounts, SiteBoilerplateConfig,
                                       content_key, host_of, line_hashes, remove_lines)
from infra.storage.files import join
from pipelines.plumbing.outputs import REMOVED, count, with_changes
from pipelines.plumbing.sinks import WriteSmallTable
from pipelines.plumbing.spill import (Spiller, hash_partition, read_chunk, read_partition,
                                       spill_url, write_spill)
from pipelines.plumbing.timing import timed

HOST_STATS = "host_stats"
UNJUDGED = "unjudged"
TOP_HOSTS = 50
"""Hosts kept per source in ``stats/site_boilerplate.parquet`` (the table stays small at any
scale; the ``*`` row of each source holds the totals over all its hosts)."""
ALL_HOSTS = "*"
SCHEMA = pa.schema([("source", pa.string()), ("host", pa.string()), ("documents", pa.int64()),
                    ("documents_changed", pa.int64()), ("lines_removed", pa.int64()),
                    ("chars_removed", pa.int64())])
TABLE = "site_boilerplate.parquet"
SPILLS = "site_boilerplate"
"""The spill files' folder under ``<out>/_tmp/`` (removed when the stage is committed)."""
DOCS_PER_SPILL = 5000
"""Documents a spilling worker holds before it writes them (one file per partition set)."""


class _SpillFn(beam.DoFn):
    """Documents -> descriptors of their spill files (main); those without a host on
    ``unjudged``, unchanged, counted ``skipped``."""

    def __init__(self, cfg: SiteBoilerplateConfig, out_dir: str, every: int = DOCS_PER_SPILL) -> None:
        self.cfg, self.out_dir, self.every = cfg, out_dir, every

    def start_bundle(self) -> None:
        self._reset()

    def _reset(self) -> None:
        n = self.cfg.partitions
        self._docs, self._lines = Spiller(n), Spiller(n)
        self._corpus = Spiller(n) if self.cfg.corpus_documents else None
        self._held = 0

    @timed(STAGE)
    def process(self, doc: Document):
        host = host_of(doc.url)
        if host is None:
            count(STAGE, doc.source, "skipped")
            yield beam.pvalue.TaggedOutput(UNJUDGED, doc)
            return
        hashes = line_hashes(doc.text, self.cfg.min_line_chars)
        content, n = content_key(hashes), self.cfg.partitions
        p = hash_partition(host, n)
        self._docs.add_at(p, (host, doc, hashes))
        self._lines.add_at(p, (host, content, hashes))
        if self._corpus is not None:
            for h in hashes:
                self._corpus.add_at(h % n, (h, content))
        self._held += 1
        if self._held >= self.every:
            yield self._flush()

    def finish_bundle(self):
        if self._held:
            yield GlobalWindows.windowed_value(self._flush())

    def _flush(self) -> dict:
        def write(spiller, name):
            return spiller.write(spill_url(self.out_dir, name, SPILLS)) if spiller else None
        desc = {"docs": write(self._docs, "docs"), "lines": write(self._lines, "lines"),
                "corpus": write(self._corpus, "corpus")}
        self._reset()
        return desc


class _CorpusLinesFn(beam.DoFn):
    """Line partition ``p`` -> one file of the lines held by more than ``corpus_documents``
    distinct contents of the whole corpus (its descriptor)."""

    def __init__(self, cfg: SiteBoilerplateConfig, out_dir: str) -> None:
        self.cfg, self.out_dir = cfg, out_dir

    @timed(STAGE)
    def process(self, p: int, spills: list[dict]):
        counts = LineCounts(self.cfg.corpus_documents + 1)
        for h, content in read_partition((d["corpus"] for d in spills), p):
            counts.add(CORPUS, content, (h,))
        over = sorted(counts.above(self.cfg.corpus_documents).get(CORPUS, ()))
        yield write_spill(spill_url(self.out_dir, "corpus-lines", SPILLS), [over])


class _CleanFn(beam.DoFn):
    """Host partition ``p`` -> its documents without their condemned lines (main), a
    ``Removal`` for each left empty, and ``(source, (totals, top hosts))`` on ``host_stats``."""

    def __init__(self, cfg: SiteBoilerplateConfig) -> None:
        self.cfg = cfg
        self._corpus_from, self._corpus = None, frozenset()

    def _corpus_lines(self, corpus: list[dict]) -> frozenset[int]:
        urls = tuple(sorted(d["url"] for d in corpus))
        if urls != self._corpus_from:  # the same list for every partition: read once per worker
            self._corpus = frozenset(h for url in urls for h in read_chunk(url, 0))
            self._corpus_from = urls
        return self._corpus

    @timed(STAGE)
    def process(self, p: int, spills: list[dict], corpus: list[dict]):
        cfg = self.cfg
        counts = LineCounts(cfg.host_documents + 1)
        for host, content, hashes in read_partition((d["lines"] for d in spills), p):
            counts.add(host, content, hashes)
        condemned, everywhere = counts.above(cfg.host_documents), self._corpus_lines(corpus)
        del counts
        hosts: dict[tuple[str, str], list[int]] = {}
        for host, doc, hashes in read_partition((d["docs"] for d in spills), p):
            here = condemned.get(host, frozenset())
            drop = {h for h in hashes if h in here or h in everywhere}
            cleaned = remove_lines(doc.text, drop, cfg.min_line_chars)
            if cleaned.lines_removed:
                count(STAGE, doc.source, "lines_removed", n=cleaned.lines_removed)
                count(STAGE, doc.source, "chars_removed", n=cleaned.chars_removed)
            sums = hosts.setdefault((doc.source, host), [0, 0, 0, 0])
            sums[0] += 1
            sums[1] += cleaned.lines_removed > 0
            sums[2] += cleaned.lines_removed
            sums[3] += cleaned.chars_removed
            doc = with_changes(doc, text=cleaned.text, boilerplate_chars=cleaned.chars_removed)
            if not cleaned.text.strip():
                count(STAGE, doc.source, "removed", EMPTIED)
                yield beam.pvalue.TaggedOutput(REMOVED, Removal(
                    doc, STAGE, EMPTIED, {"lines_removed": cleaned.lines_removed}))
            else:
                count(STAGE, doc.source, "kept")
                yield doc
        for source, summary in _summaries(hosts).items():
            yield beam.pvalue.TaggedOutput(HOST_STATS, (source, summary))


def _top(hosts) -> list:
    """The ``TOP_HOSTS`` of ``(host, sums)`` with most characters removed, then most lines."""
    return heapq.nlargest(TOP_HOSTS, hosts, key=lambda hs: (hs[1][3], hs[1][2], hs[0]))


def _summaries(hosts: dict[tuple[str, str], list[int]]) -> dict[str, tuple]:
    """Per source: ``(totals over its hosts, its top hosts with anything removed)``."""
    per_source: dict[str, list] = {}
    for (source, host), sums in hosts.items():
        per_source.setdefault(source, []).append((host, tuple(sums)))
    return {source: (tuple(map(sum, zip(*(s for _, s in rows)))),
                     _top([r for r in rows if r[1][3] > 0]))
            for source, rows in per_source.items()}


def _merge_summaries(summaries) -> tuple:
    totals, top = (0, 0, 0, 0), []
    for t, hosts in summaries:
        totals = tuple(a + b for a, b in zip(totals, t))
        top = _top(top + list(hosts))
    return totals, top


def _table_rows(kv):
    """``(source, (totals, top))`` -> the source's table rows: its top hosts and ``*``."""
    source, (totals, top) = kv
    return [dict(zip(SCHEMA.names, (source, host, *sums)))
            for host, sums in [*top, (ALL_HOSTS, totals)]]


class SiteBoilerplate(beam.PTransform):
    """Documents -> ``{"kept", "removed"}`` without the lines repeated across their site; writes
    ``<out_dir>/stats/site_boilerplate.parquet``."""

    def __init__(self, cfg: SiteBoilerplateConfig, out_dir: str, label: str | None = None,
                 separate_kept: bool = False, docs_per_spill: int = DOCS_PER_SPILL) -> None:
        super().__init__(label)
        self.cfg, self.out_dir, self.docs_per_spill = cfg, out_dir, docs_per_spill
        # separate_kept: return "kept_parts" [judged, unjudged] instead of one flattened "kept"
        # (a Flatten of two stages' outputs passes every document through the local runner's
        # driver: most of them, the unjudged, would make that trip for nothing).
        self.separate_kept = separate_kept

    def expand(self, docs):
        cfg, out_dir = self.cfg, self.out_dir
        spilled = docs | "Spill" >> beam.ParDo(_SpillFn(cfg, out_dir, self.docs_per_spill)).with_outputs(
            UNJUDGED, main="spills")
        spills = AsList(spilled.spills)
        each = (docs.pipeline
                | "Partitions" >> beam.Create(list(range(cfg.partitions)), reshuffle=False)
                | "SpreadPartitions" >> beam.Reshuffle())
        if cfg.corpus_documents:
            corpus = each | "CorpusLines" >> beam.ParDo(_CorpusLinesFn(cfg, out_dir), spills)
        else:
            corpus = docs.pipeline | "NoCorpusRule" >> beam.Create([])
        out = each | "Clean" >> beam.ParDo(_CleanFn(cfg), spills, AsList(corpus)).with_outputs(
            REMOVED, HOST_STATS, main="kept")
        _ = (out[HOST_STATS]
             | "PerSource" >> beam.CombinePerKey(_merge_summaries)
             | "TableRows" >> beam.FlatMap(_table_rows)
             | "Table" >> WriteSmallTable(join(out_dir, "stats", TABLE), SCHEMA))
        if self.separate_kept:
            return {"kept_parts": [out.kept, spilled[UNJUDGED]], "removed": out[REMOVED]}
        kept = (out.kept, spilled[UNJUDGED]) | "WithUnjudged" >> beam.Flatten()
        return {"kept": kept, "removed": out[REMOVED]}
