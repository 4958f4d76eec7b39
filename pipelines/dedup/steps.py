"""The dedup stage's partition steps up to the verified edges (``stage``).

Each step is a DoFn over partition ids ``p``: it reads partition ``p`` of the files of the steps
before it (``tables`` entry files, ``spill`` files), decides each group with ``groups``, and
writes ONE spill file split by the next step's key; it yields ``{"p": p, <name>: spill
descriptor, ...}`` (and small tagged outputs).  Nodes carry their reference ``(part key, row)``
(``tables.runs_nodes``), which partitions them (``node_partition``).

- ``ExactStepFn``: exact entries -> ``keep_best`` per text hash: decisions (by the document they
  name as kept, for ``decide.FollowStepFn``), the removed references (``removed``, one chunk:
  what fuzzy dedup leaves out), group rows and their stats.
- ``BandStepFn``: band entries minus the exact duplicates -> ``bucket_stars`` per bucket:
  candidate pairs as roles by the part holding the document (``roles``), oversized buckets; with
  ``verify: none`` the pairs are the edges.
- ``ShipStepFn``: the roles of the parts of partition ``p`` -> each candidate's payload (shingle
  hashes or signature) read from its part's features file, to its star's centre (``messages``).
- ``VerifyStepFn``: a partition's stars -> ``verify_star`` -> edges: for the components' first
  round (``edges``, both directions by node) and each endpoint's similarity (``sims``).
"""
from __future__ import annotations

from collections import defaultdict

import apache_beam as beam
import numpy as np

from curation.dedup_records import is_older, node_id, node_ref
from pipelines.dedup import tables
from pipelines.dedup.stats import group_outputs
from pipelines.dedup.groups import (CANDIDATES, CENTRE, DECISIONS, GROUPS, MEMBER, both_directions,
                                    bucket_stars, keep_best, named_key, verify_star)
from pipelines.plumbing.spill import Spiller, hash_partition, read_partition, ref_partition, spill_url
from pipelines.plumbing.timing import timed


def node_partition(node: tuple, partitions: int) -> int:
    return ref_partition(*node_ref(node), partitions)


def key_partition(key: tuple, partitions: int) -> int:
    """The partition of a survivor link's key ``(older, id, source)`` (``groups.named_key``)."""
    older, doc_id, source = key
    return hash_partition(f"{int(bool(older))}\0{doc_id}\0{source}", partitions)


def decision_partition(record: tuple, partitions: int) -> int:
    """``(part, row, Decision)`` -> the partition of the document it names as kept."""
    return key_partition(named_key(record[2]), partitions)


class ExactStepFn(beam.DoFn):
    """Partition ``p`` of the exact entries -> ``{"p", "decisions", "removed"}`` spills, and the
    group rows' outputs (``stats.group_outputs``)."""

    def __init__(self, out_dir: str, id_index: bool) -> None:
        self.out_dir, self.id_index = out_dir, id_index

    @timed("exact_dedup")
    def process(self, p: int, partitions: int, descriptors: list[dict]):
        t = tables.entry_batches(descriptors, "exact", p)
        h = tables.digest_u64(t.column("text_hash"))
        _, runs = tables.equal_runs(h[:, 1], h[:, 0])
        decisions = Spiller(partitions, lambda r: decision_partition(r, partitions))
        removed, rows = [], []
        for text_hash, nodes in tables.runs_nodes(t, runs, "text_hash"):
            refs = {node_id(n): node_ref(n) for n in nodes if not is_older(n)}
            for tag, value in keep_best(text_hash.hex(), [(n, None) for n in nodes]):
                if tag == DECISIONS:
                    key, row = refs[value.id]
                    decisions.add((key, row, value))
                    removed.append((key, row))
                elif tag == GROUPS:
                    rows.append(value)
        yield {"p": p, "decisions": decisions.write(spill_url(self.out_dir, "exact-decisions")),
               "removed": Spiller(1, lambda r: 0).extend(removed).write(
                   spill_url(self.out_dir, "exact-removed"))}
        yield from group_outputs(rows, self.out_dir, self.id_index)


def edge_spills(edges: list[tuple], partitions: int, out_dir: str) -> dict:
    """Verified edges ``(centre, member, similarity)`` -> the components' first-round input
    (both directions, by node) and each endpoint's similarity (``-1.0`` for none), by node."""
    cc = Spiller(partitions, lambda r: node_partition(r[0], partitions))
    sims = Spiller(partitions, lambda r: node_partition(r[0], partitions))
    for u, v, sim in edges:
        for a, (tag, b) in both_directions((min(u, v), max(u, v))):
            cc.add((a, tag, b))
        s = -1.0 if sim is None else sim
        sims.add((u, s))
        sims.add((v, s))
    return {"edges": cc.write(spill_url(out_dir, "cc-in")), "sims": sims.write(spill_url(out_dir, "sims"))}


class BandStepFn(beam.DoFn):
    """Partition ``p`` of the band entries -> ``{"p", "roles"}`` (or, ``verify: none``, the
    edge spills of ``edge_spills``), oversized buckets to ``buckets``.  Every task reads the
    references of all exact duplicates (12 bytes each), as the old in-memory side input gave
    every task; the rest of what it holds is its own partition."""

    def __init__(self, out_dir: str, max_bucket: int, shards: int, verify: str) -> None:
        self.out_dir, self.max_bucket, self.shards, self.verify = out_dir, max_bucket, shards, verify

    @timed("fuzzy_dedup")
    def process(self, p: int, partitions: int, descriptors: list[dict], exact: list[dict]):
        gone: dict[int, list] = defaultdict(list)
        for key, row in read_partition([d["removed"] for d in exact], 0):
            gone[key].append(row)
        drop = {k: np.array(sorted(rows), np.int32) for k, rows in gone.items()}
        t = tables.entry_batches(descriptors, "bands", p, drop)
        digests = tables.digest_u64(t.column("digest"))[:, 0]
        bands = t.column("band").to_numpy()
        _, runs = tables.equal_runs(bands, digests)
        pairs = []
        for rows, (digest, nodes) in zip(runs, tables.runs_nodes(t, runs, "digest")):
            for tag, value in bucket_stars(int(bands[int(rows[0])]), digest, nodes,
                                           self.max_bucket, self.shards):
                if tag == CANDIDATES:
                    pairs.append(value)
                else:
                    yield beam.pvalue.TaggedOutput(tag, value)
        if self.verify == "none":  # every pair an edge, as found (once per band it is found in)
            edges = [(c, m, None) for c, m in pairs]
            yield {"p": p, **edge_spills(edges, partitions, self.out_dir)}
            return
        roles = Spiller(partitions, lambda r: node_ref(r[0])[0] % partitions)
        centres = set()
        for centre, member in sorted(set(pairs)):  # a pair found in several bands: verified once
            roles.add((member, centre))
            if centre not in centres:
                centres.add(centre)
                roles.add((centre, None))
        yield {"p": p, "roles": roles.write(spill_url(self.out_dir, "roles"))}


class ShipStepFn(beam.DoFn):
    """The parts with ``part key % P == p``: each candidate's payload, read once per document
    from its features file, sent once to each distinct centre."""

    def __init__(self, out_dir: str, verify: str) -> None:
        self.out_dir, self.column = out_dir, "shingles" if verify == "exact" else "signature"

    @timed("fuzzy_dedup")
    def process(self, p: int, partitions: int, bands: list[dict], descriptors: list[dict]):
        features = {d["key"]: d["features"] for d in descriptors}
        by_part: dict[int, dict] = defaultdict(dict)
        for node, centre in read_partition([d["roles"] for d in bands], p):
            key, row = node_ref(node)
            entry = by_part[key].setdefault(row, [node, set(), False])
            if centre is None:
                entry[2] = True
            else:
                entry[1].add(centre)
        messages = Spiller(partitions, lambda m: node_partition(m[0], partitions))
        for key in sorted(by_part):
            rows = by_part.pop(key)
            payloads = tables.read_rows(features[key], sorted(rows), self.column)
            for row, (node, centres, is_centre) in sorted(rows.items()):
                payload = payloads[row]
                if payload is None:
                    continue
                for c in sorted(centres):
                    messages.add((c, MEMBER, node, payload))
                if is_centre:
                    messages.add((node, CENTRE, node, payload))
        yield {"p": p, "messages": messages.write(spill_url(self.out_dir, "messages"))}


class VerifyStepFn(beam.DoFn):
    """Partition ``p`` of the shipped messages, by star centre -> the edge spills."""

    def __init__(self, out_dir: str, verify: str, threshold: float) -> None:
        self.out_dir, self.verify, self.threshold = out_dir, verify, threshold

    @timed("fuzzy_dedup")
    def process(self, p: int, partitions: int, shipped: list[dict]):
        stars: dict[tuple, list] = defaultdict(list)
        for centre, kind, node, payload in read_partition([d["messages"] for d in shipped], p):
            stars[centre].append((kind, node, payload))
        edges = []
        for centre in sorted(stars):
            edges += verify_star(stars.pop(centre), self.verify, self.threshold)
        yield {"p": p, **edge_spills(edges, partitions, self.out_dir)}

