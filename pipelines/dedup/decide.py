"""The dedup stage's last partition steps: components -> clusters -> final decisions.

Steps over partition ids, reading and writing ``spill`` files (``steps`` says how):

- ``LabelStepFn`` (by node): each node's component root (its label; a root has none) and its
  best verified similarity -> ``(root, node, similarity)`` by the root's id (``members``).
- ``ClusterStepFn`` (by root id): whole clusters -> their group rows (``groups.cluster_rows``, as
  files with their stats: ``stats.group_outputs``) and a fuzzy ``Decision`` for every member but
  the root (``decisions``, by the document they name as kept).  Roots sharing an id (an older
  run's document and one of this run's) meet in one step.
- ``FollowStepFn`` (by the document a decision names as kept): a removal names the document that
  survives, not a step on the way to it.  Exact dedup names each group's survivor B; fuzzy dedup
  may then remove B itself as a near duplicate of R, and a removal naming B would point at a
  document the corpus does not hold.  Across ``--dedup-against`` the same happens one run back:
  an older document O that wins a group here may have been removed by its own run (its index
  row: ``dedup_kept`` false, ``kept_id`` O2; ``index.redirects``).  So fuzzy decisions follow
  the older runs' links, then exact decisions follow those and the fuzzy decisions' own links
  (``links``): ``detail.kept`` / ``kept_source`` name the survivor and ``detail.via`` the
  documents passed on the way (``groups.followed``).  Chains are short by construction: a
  component's root is never removed by fuzzy dedup, and an older run's ``kept_id`` is that run's
  survivor.  The group rows (``dedup/groups-*.parquet``) keep every step as it was decided.  The
  decisions come out by the part holding their document (``final``: ``(part key, row,
  Decision)``), for ``apply.ApplyPartFn``.
"""
from __future__ import annotations

from collections import defaultdict

import apache_beam as beam

from curation.dedup_records import is_older, node_id, node_ref
from pipelines.dedup.stats import group_outputs
from pipelines.dedup.steps import decision_partition, key_partition
from pipelines.dedup.groups import cluster_rows, followed, label_decision, link_of, named_key
from pipelines.plumbing.outputs import count
from pipelines.plumbing.spill import Spiller, hash_partition, read_partition, spill_url
from pipelines.plumbing.timing import timed

DECIDED = "decided"
"""Tagged output of ``FollowStepFn``: how many final decisions it wrote (checked against the
decisions the parts applied: ``stage``)."""


class LabelStepFn(beam.DoFn):
    def __init__(self, out_dir: str) -> None:
        self.out_dir = out_dir

    @timed("fuzzy_dedup")
    def process(self, p: int, partitions: int, edges: list[dict], *labels):
        root: dict[tuple, tuple] = {}
        for leaf, r in read_partition([d["labels"] for step in labels for d in step], p):
            root[leaf] = r
        best: dict[tuple, float] = {}
        for node, sim in read_partition([d["sims"] for d in edges], p):
            best[node] = max(best.get(node, -1.0), sim)
        members = Spiller(partitions, lambda r: hash_partition(node_id(r[0]), partitions))
        for node in sorted(set(root) | set(best)):
            sim = best.get(node, -1.0)
            members.add((root.get(node, node), node, sim if sim >= 0 else None))
        yield {"p": p, "members": members.write(spill_url(self.out_dir, "members"))}


class ClusterStepFn(beam.DoFn):
    def __init__(self, out_dir: str, id_index: bool) -> None:
        self.out_dir, self.id_index = out_dir, id_index

    @timed("fuzzy_dedup")
    def process(self, p: int, partitions: int, labelled: list[dict]):
        clusters: dict[tuple, list] = defaultdict(list)
        for root, node, sim in read_partition([d["members"] for d in labelled], p):
            clusters[root].append((node, sim))
        rows = []
        decisions = Spiller(partitions, lambda r: decision_partition(r, partitions))
        for root in sorted(clusters):
            members = clusters.pop(root)
            rows += cluster_rows((root, members))
            for node, _ in members:
                if node != root and not is_older(node):
                    for d in label_decision((node, root)):
                        decisions.add((*node_ref(node), d))
        yield {"p": p, "decisions": decisions.write(spill_url(self.out_dir, "fuzzy-decisions"))}
        yield from group_outputs(rows, self.out_dir, self.id_index)


class FollowStepFn(beam.DoFn):
    """Decisions (``decisions`` spills of the steps named ``sources``) meet the links of the
    documents they name (older runs' ``links``, and ``links`` of earlier follow steps); with
    ``emit_links`` the followed decisions' own links go on (fuzzy -> exact)."""

    def __init__(self, out_dir: str, emit_links: bool) -> None:
        self.out_dir, self.emit_links = out_dir, emit_links

    @timed("fuzzy_dedup")
    def process(self, p: int, partitions: int, decided: list[dict], *link_sources):
        links: dict[tuple, tuple] = {}
        for descriptors in link_sources:
            for key, link in read_partition([d["links"] for d in descriptors if d.get("links")], p):
                links.setdefault(key, link)
        final = Spiller(partitions, lambda r: r[0] % partitions)
        onward = Spiller(partitions, lambda kl: key_partition(kl[0], partitions))
        for part, row, d in read_partition([x["decisions"] for x in decided], p):
            link = links.get(named_key(d))
            if link is not None:
                count(d.stage, d.source, "survivor_followed")
                d = followed(d, link)
            final.add((part, row, d))
            if self.emit_links:
                onward.add(link_of(d))
        out = {"p": p, "final": final.write(spill_url(self.out_dir, "final-decisions"))}
        if self.emit_links:
            out["links"] = onward.write(spill_url(self.out_dir, "links"))
        yield out
        yield beam.pvalue.TaggedOutput(DECIDED, ("decided", final.records))
