"""Fuzzy dedup's second half: verify candidate pairs on joined features; rows per cluster.

``VerifyCandidates`` joins each document's verification features (the shingle-hash set for
``exact``, the MinHash signature for ``estimated``) to the candidate pairs it is part of, in two
keyed steps, so no step holds more than one star's features:

1. group by document id: the document's features with its roles (member of centre c, or a
   centre).  A member ships its features once to each distinct centre; a centre to itself.
2. group by centre id: the centre's features and its members' -> similarity per pair; pairs at
   or above ``threshold`` are edges ``(centre node, member node, similarity)``.

A pair found in several bands is verified once (step 1 keeps distinct centres).  Both steps key
by node, not id: an older run's document (``--dedup-against``) may carry the same id as one of
this run's.

``ClusterRows``: components labels + edges -> one ``dedup_stats.group_row`` per member of each
cluster, the kept member included, with ``similarity`` = the best verified similarity of that
document to another member it was compared with (the edge that put it in the cluster).
"""
from __future__ import annotations

import apache_beam as beam

from curation.dedup_records import (DedupRecord, is_older, node_id, node_source, similarity,
                                   verification_payload)
from pipelines.plumbing.outputs import count
from pipelines.dedup.stats import AGAINST_FUZZY, KEPT_REASON, OLDER_KEPT_REASON, group_row

MEMBER, CENTRE = 0, 1


def _features(verify: str):
    def features(record: DedupRecord):
        payload = verification_payload(record, verify)
        if record.bands is not None and payload is not None:
            yield record.node, (record.node, payload)
    return features


def _roles(pair: tuple):
    centre, member = pair
    yield member, centre  # member of that centre
    yield centre, None  # a centre


def _ship(element):
    """(node, {"features": [(node, payload)], "roles": [centre | None]}) -> messages to centres."""
    _, grouped = element
    features = list(grouped["features"]) or list(grouped.get("older_features") or [])
    if not features:
        return
    roles = grouped["roles"]
    node, payload = features[0]
    centres, is_centre = set(), False
    for role in roles:
        if role is None:
            is_centre = True
        else:
            centres.add(role)
    for c in centres:
        yield c, (MEMBER, node, payload)
    if is_centre:
        yield node, (CENTRE, node, payload)


class VerifyStarFn(beam.DoFn):
    """(centre id, messages) -> verified edges; streams members (two passes over the group)."""

    def __init__(self, verify: str, threshold: float) -> None:
        self.verify, self.threshold = verify, threshold

    def process(self, element):
        _, messages = element
        centre = next((m for m in messages if m[0] == CENTRE), None)
        if centre is None:  # no features for the centre (not a member record): nothing to verify
            count("fuzzy_dedup", "all", "candidate_without_features")
            return
        _, cnode, cpayload = centre
        for kind, node, payload in messages:
            if kind != MEMBER:
                continue
            sim = similarity(cpayload, payload, self.verify)
            if sim >= self.threshold:
                count("fuzzy_dedup", "all", "verified_pair")
                yield cnode, node, sim
            else:
                count("fuzzy_dedup", "all", "rejected_pair")


class VerifyCandidates(beam.PTransform):
    """``{"records", "candidates": (centre node, member node)}`` -> (centre, member, similarity);
    optional ``older``: older runs' records (their features too)."""

    def __init__(self, verify: str, threshold: float, label: str | None = None) -> None:
        super().__init__(label)
        if verify not in ("exact", "estimated"):
            raise ValueError(f"verify: 'exact' or 'estimated', got {verify!r}")
        self.verify, self.threshold = verify, threshold

    def expand(self, pcolls):
        features = pcolls["records"] | "Features" >> beam.FlatMap(_features(self.verify))
        roles = pcolls["candidates"] | "Roles" >> beam.FlatMap(_roles)
        joined = {"features": features, "roles": roles}
        if pcolls.get("older") is not None:
            joined["older_features"] = pcolls["older"] | "OlderFeatures" >> beam.FlatMap(
                _features(self.verify))
        return (
            joined
            | "JoinFeatures" >> beam.CoGroupByKey()
            | "ShipToCentres" >> beam.FlatMap(_ship)
            | "GroupByCentre" >> beam.GroupByKey()
            | "VerifyStars" >> beam.ParDo(VerifyStarFn(self.verify, self.threshold)))


def _best(similarities) -> float:
    return max(similarities, default=-1.0)


def _by_root(element):
    """(node, {"root": [root], "sim": [best]}) -> (root, (node, best similarity or None))."""
    node, grouped = element
    roots, sims = list(grouped["root"]), list(grouped["sim"])
    best = sims[0] if sims and sims[0] >= 0 else None
    yield (roots[0] if roots else node), (node, best)


def cluster_rows(element):
    """(root, members) -> one row per member, streamed (two passes over the group).  Older runs'
    documents get no row, except an older root (the kept member, reason ``older_run``)."""
    root, members = element
    older = is_older(root)
    size = sum(1 for node, _ in members if node == root or not is_older(node))
    if size <= 1:
        return  # an older root whose component holds no new document
    rid, src = node_id(root), node_source(root)
    removed = AGAINST_FUZZY if older else "near_duplicate"
    for node, sim in members:
        kept = node == root
        if not kept and is_older(node):
            continue
        yield group_row("fuzzy", rid, node_id(node), node_source(node), rid, src, size,
                        (OLDER_KEPT_REASON if older else KEPT_REASON) if kept else removed, sim, kept)


class ClusterRows(beam.PTransform):
    """``{"labels": (node, root), "edges": (u, v, similarity)}`` -> group rows."""

    def expand(self, pcolls):
        sims = (pcolls["edges"]
                | "EndpointSims" >> beam.FlatMap(
                    lambda e: [(e[0], -1.0 if e[2] is None else e[2]),
                               (e[1], -1.0 if e[2] is None else e[2])])
                | "BestSim" >> beam.CombinePerKey(_best))
        return (
            {"root": pcolls["labels"], "sim": sims}
            | "JoinSims" >> beam.CoGroupByKey()
            | "ByRoot" >> beam.FlatMap(_by_root)
            | "GroupClusters" >> beam.GroupByKey()
            | "Rows" >> beam.FlatMap(cluster_rows))
