"""Applying the dedup decisions to the parts: the last step of the file-backed dedup.

Each part (``stage``) reads its own decisions from the final decision files and
writes what survives, its removals and its dedup index part, column by column (no per-document
objects but the removed ones); ``check_applied`` proves that every decision met its part.
"""
from __future__ import annotations

from collections import Counter

import apache_beam as beam
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from apache_beam.pvalue import TaggedOutput

from curation.document import STAGES
from pipelines.plumbing import progress
from pipelines.dedup.groups import INPUTS
from pipelines.dedup.index import INDEX_DIR, INDEX_SCHEMA
from pipelines.plumbing.outputs import REMOVED, count
from pipelines.plumbing.parts import PART_SCHEMA, from_row, part_dest
from pipelines.plumbing.sinks import write_table_file
from pipelines.plumbing.spill import read_partition

INDEX, APPLIED = "index", "applied"


class ApplyPartFn(beam.DoFn):
    """A part's features descriptor -> its documents not removed, written as this stage's part
    straight from the input's columns (main: the part's writer descriptor), a ``Removal`` per
    removed one (``removed``), this run's dedup index part (``index``: a writer descriptor),
    ``(("fuzzy", source), n)`` (``inputs``) and how many decisions it read (``applied``).  Its
    decisions are the records of its part in partition ``part key % P`` of the ``final`` spill
    files (``decide.FollowStepFn``).  Fails if a decision meets no document of its part,
    and ``check_applied`` fails the job if a decision named a part that was never read: nothing
    may be lost silently."""

    def __init__(self, out_dir: str, kept_stages: tuple[str, ...], fuzzy: bool) -> None:
        self.out_dir, self.kept_stages, self.fuzzy = out_dir, tuple(kept_stages), fuzzy

    def process(self, desc: dict, partitions: int, finals: list[dict]):
        key = desc["key"]
        decisions = [d for part, _, d in read_partition([f["final"] for f in finals], key % partitions)
                     if part == key]
        yield TaggedOutput(APPLIED, ("applied", len(decisions)))
        yield from self.apply(desc, decisions)

    def apply(self, desc: dict, decisions):
        """The part of ``desc`` with ``decisions`` (``Decision`` s of its documents) applied."""
        pending = {}
        for v in decisions:  # stages apply in pipeline order: a document removed twice goes at the earlier
            old = pending.get(v.id)
            if old is None or (STAGES.index(v.stage), v.reason) < (STAGES.index(old.stage), old.reason):
                pending[v.id] = v
        decided = dict(pending)
        table = _read_table(desc["part"])
        ids, sources = table.column("id").to_pylist(), table.column("source").to_pylist()
        removed = np.array([i in decided for i in ids], dtype=bool)
        for row in np.flatnonzero(removed):  # only the removed become documents
            doc = from_row(table.slice(int(row), 1).to_pylist()[0])
            yield TaggedOutput(REMOVED, pending.pop(doc.id).removal(doc))
        if pending:
            raise RuntimeError(f"{len(pending)} decision(s) for documents not in part {desc['part']}: "
                               f"{sorted(pending)[:3]}")
        passed: Counter = Counter()
        for i, source in zip(ids, sources):
            d = decided.get(i)
            for stage in self.kept_stages:
                if d is not None and stage == d.stage:
                    break
                passed[stage, source] += 1
        for (stage, source), n in sorted(passed.items()):
            count(stage, source, "kept", n=n)
        kept = table.filter(pa.array(~removed))
        progress.report(self.out_dir, "dedup", passes=len(ids), out=kept.num_rows)
        if kept.num_rows:
            yield write_table_file(self.out_dir, part_dest("dedup"), kept.cast(PART_SCHEMA), row_group=500)
        yield from self._index(desc, decided)

    def finish_bundle(self) -> None:
        progress.flush()

    def _index(self, desc: dict, decided: dict):
        """The index rows of the documents that entered fuzzy dedup (every exact survivor)."""
        features = _read_table(desc["features"])
        ids, sources = features.column("id").to_pylist(), features.column("source").to_pylist()
        member = np.array([decided.get(i) is None or decided[i].stage != "exact_dedup" for i in ids],
                          dtype=bool)
        if self.fuzzy:
            no_bands = features.column("band_keys").is_null().to_numpy(zero_copy_only=False)
            for source, n in sorted(Counter(s for s, m in zip(sources, member) if m).items()):
                yield TaggedOutput(INPUTS, (("fuzzy", source), n))
            for s, m, nb in zip(sources, member, no_bands):
                if m and nb:
                    count("fuzzy_dedup", s, "too_few_shingles")
        kept = features.filter(pa.array(member))
        fuzzy = [decided.get(i) for i, m in zip(ids, member) if m]
        kept = (kept.append_column("dedup_kept", pa.array([d is None for d in fuzzy], pa.bool_()))
                .append_column("kept_id", pa.array([d and d.detail.get("kept") for d in fuzzy], pa.string()))
                .append_column("kept_source", pa.array([d and d.detail.get("kept_source") for d in fuzzy],
                                                       pa.string())))
        if kept.num_rows:
            yield TaggedOutput(INDEX, write_table_file(self.out_dir, f"{INDEX_DIR}/part",
                                                       kept.cast(INDEX_SCHEMA), row_group=2000))


def _read_table(url: str) -> pa.Table:
    with FileSystems.open(url, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        return pq.read_table(f)


def check_applied(counts: list[tuple[str, int]]) -> int:
    """``[("decided" | "applied", n)]`` summed -> the number of decisions, or an error if some
    decision named a part that no step read (it would be lost without a trace)."""
    total = Counter()
    for what, n in counts:
        total[what] += n
    if total["decided"] != total["applied"]:
        raise RuntimeError(f"{total['decided'] - total['applied']} dedup decision(s) name a part that "
                           f"was never read ({total['decided']} decided, {total['applied']} applied)")
    return total["decided"]
