"""The dedup stage's group logic: what one group of documents decides, whoever gathered it.

Every function here takes one group (an exact-duplicate group, an LSH bucket, a star of
candidate pairs, a cluster, a decision with the link of the document it names) and returns what
that group decides; the stage's partition steps (``steps``, ``decide``) gather the groups from
files, and the record-based reference the tests check the stage against
(tests/pipelines/dedup/reference.py) gathers them with Beam shuffles: both decide with these
functions, so both make the same decisions.

Nodes are ``curation.dedup_records`` nodes: ``keep_rank`` tuples whose order is the keep rule
(source priority, quality, length, id), so a group's smallest node is the document it keeps;
an older run's document (``--dedup-against``) ranks ahead of every new one and is never removed.

- Exact dedup, one group per text hash: ``keep_best``.  The survivor is named in every removal
  (``detail={"kept": <id>, "kept_source": <source>}``, reason ``duplicate``, or
  ``dedup_against/exact`` when the survivor is an older run's document).  A boilerplate text
  repeated a million times is one hot group: it is read twice (find the best, then decide each
  member) and nothing but the best is held.
- Fuzzy dedup, LSH banding: ``bucket_stars`` links a bucket's members to ONE member (the best: a
  star, never all pairs) as candidate pairs; a bucket over ``max_bucket`` members (boilerplate)
  is split into ``bucket_shards`` salted sub-buckets, each starred, and the sub-bucket centres
  starred together.  Pairs of two older runs' documents are never candidates (their edge cannot
  change what happens to a new document).
- Verification: ``verify_star`` compares a star's centre with each member (the shingle-hash sets,
  ``verify: exact``, or the MinHash signatures, ``estimated``); pairs reaching ``threshold`` are
  edges ``(centre, member, similarity)``.
- Connected components of the edges, in grouped rounds (Kiveris et al., "Connected Components
  in MapReduce and Beyond", SoCC 2014): ``large_star`` and ``small_star`` are one node's step of
  a round; each component converges to a star around its SMALLEST node, so its root is the
  document the keep rule keeps (``components`` runs the rounds).  ``label_decision`` removes a
  labelled node (``near_duplicate``, or ``dedup_against/fuzzy`` under an older root);
  ``cluster_rows`` gives one group row per member of a cluster.
- Survivors: a removal names the document that survives, not a step on the way to it
  (``named_key``, ``link_of``, ``followed``; ``decide.FollowStepFn`` says in which order).
"""
from __future__ import annotations

from typing import Any, Iterable, Iterator

import xxhash

from curation.dedup_records import is_older, node_id, node_source, similarity
from curation.document import Decision
from pipelines.dedup.stats import AGAINST_EXACT, AGAINST_FUZZY, KEPT_REASON, OLDER_KEPT_REASON, group_row
from pipelines.plumbing.outputs import count

KEPT, GROUPS, DECISIONS, INPUTS = "kept", "groups", "decisions", "inputs"
"""Tags of what a group yields: the survivor, group rows, decisions; the stats' denominators."""
CANDIDATES, BUCKETS = "candidates", "buckets"
MEMBER, CENTRE = 0, 1
"""A star's messages: ``(MEMBER | CENTRE, node, payload)``."""
NBR, FINAL, ROOT, LEAF = 0, 1, 2, 3
"""Component steps' value tags.  Large-star input: (NBR, v) a neighbour, (FINAL, None) "your
star is finished".  Small-star input: (NBR, m) an edge (m, u) with m < u, (ROOT, degree), (LEAF,
None)."""
DONE = "done"


# -- exact dedup --------------------------------------------------------------------------------
def keep_best(group: str, members: Iterable[tuple]):
    """One exact-duplicate group (``group``: the text hash, hex) -> ``(tag, value)`` pairs:
    ``(KEPT, best member)`` unless the best is an older run's document, and for a group of two
    or more ``(GROUPS, row)`` per member and ``(DECISIONS, Decision)`` per removed member.
    ``members``: a re-iterable of ``(node, anything)``; read twice, only the best is held."""
    best, new = None, 0
    for m in members:  # pass 1: the keep rule's winner and the group's new members
        new += not is_older(m[0])
        if best is None or m[0] < best[0]:
            best = m
    older = is_older(best[0])
    if not older:
        yield KEPT, best
    size = new + older  # the older survivor and the new members (other older ones: not ours)
    if size <= 1:
        return
    bid, bsrc = node_id(best[0]), node_source(best[0])
    reason = AGAINST_EXACT if older else "duplicate"
    yield GROUPS, group_row("exact", group, bid, bsrc, bid, bsrc, size,
                            OLDER_KEPT_REASON if older else KEPT_REASON, 1.0, True)
    if size > 1000:
        count("exact_dedup", "all", "hot_group_over_1000")
    for node, _ in members:  # pass 2 over the re-iterable group
        if node == best[0] or is_older(node):
            continue
        did, dsrc = node_id(node), node_source(node)
        count("exact_dedup", dsrc, "removed", reason)
        yield GROUPS, group_row("exact", group, did, dsrc, bid, bsrc, size, reason, 1.0, False)
        yield DECISIONS, Decision(did, dsrc, "exact_dedup", reason, {"kept": bid, "kept_source": bsrc})


# -- fuzzy dedup: candidates ----------------------------------------------------------------------
def star(members):
    """Candidate pairs (best member, other) of a set of nodes, the best being the smallest;
    none between two older runs' documents."""
    members = sorted(set(members))
    for node in members[1:]:
        if is_older(node):  # then so is the best
            continue
        count("fuzzy_dedup", "all", "candidate_pair")
        yield members[0], node


def salt(node: tuple, shards: int) -> int:
    """The sub-bucket of an oversized bucket's member: a stable hash of its id."""
    return xxhash.xxh3_64_intdigest(node_id(node).encode("utf-8")) % shards


def bucket_stars(band: int, digest: bytes, members: list, max_bucket: int, shards: int):
    """One whole bucket -> ``(CANDIDATES, (centre, member))`` pairs and, for a bucket over
    ``max_bucket``, one ``(BUCKETS, row)`` (its stars: one per salted sub-bucket, and one of
    the sub-bucket centres)."""
    if len(members) <= max_bucket:
        for pair in star(members):
            yield CANDIDATES, pair
        return
    subs: dict[int, list] = {}
    for node in members:
        subs.setdefault(salt(node, shards), []).append(node)
    for sub in subs.values():
        for pair in star(sub):
            yield CANDIDATES, pair
    for pair in star([min(sub) for sub in subs.values()]):
        yield CANDIDATES, pair
    count("fuzzy_dedup", "all", "oversized_bucket")
    yield BUCKETS, {"band": band, "bucket": digest.hex(), "size": len(members)}


# -- fuzzy dedup: verification, components, clusters --------------------------------------------
def verify_star(messages: list[tuple], verify: str, threshold: float):
    """One star's messages ``(MEMBER | CENTRE, node, payload)`` -> verified edges
    ``(centre, member, similarity)``; none without the centre's features."""
    centre = next((m for m in messages if m[0] == CENTRE), None)
    if centre is None:  # no features for the centre (not a member record): nothing to verify
        count("fuzzy_dedup", "all", "candidate_without_features")
        return
    _, cnode, cpayload = centre
    for kind, node, payload in messages:
        if kind != MEMBER:
            continue
        sim = similarity(cpayload, payload, verify)
        if sim >= threshold:
            count("fuzzy_dedup", "all", "verified_pair")
            yield cnode, node, sim
        else:
            count("fuzzy_dedup", "all", "rejected_pair")


def label_decision(label: tuple):
    """A component label ``(node, root)`` -> the node's ``Decision`` (none for an older run's
    document, which is never removed)."""
    node, root = label
    if is_older(node):  # an older run's document: never removed
        return
    source = node_source(node)
    reason = AGAINST_FUZZY if is_older(root) else "near_duplicate"
    count("fuzzy_dedup", source, "removed", reason)
    yield Decision(node_id(node), source, "fuzzy_dedup", reason,
                   {"kept": node_id(root), "kept_source": node_source(root)})


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


# -- connected components: one node's step of a round ----------------------------------------------
# A round is two groupings: by node (large-star: every larger neighbour of u is linked to the
# smallest node of u's closed neighbourhood) and by the larger endpoint (small-star: u and its
# smaller neighbours are linked to the smallest of them).  Every step reads neighbours into a set
# and emits no more edges than it reads, so duplicate edges need no pass of their own.
# Converged components stop early: in the large-star step a root (no smaller neighbour) sends its
# degree to itself and a leaf (exactly one neighbour, smaller) a message to that neighbour; in the
# small-star step a root that heard from as many leaves as it has neighbours is the centre of a
# finished star (a fixed point of both steps) and marks itself FINAL for the next round, whose
# large-star step routes its edges out (DONE).  A component costs one round after it has become a
# star.
class NotConvergedError(RuntimeError):
    """Edges still active after the last round that are not stars (raise ``max_rounds``)."""


def both_directions(edge: tuple[Any, Any]) -> Iterator[tuple[Any, tuple[int, Any]]]:
    u, v = edge
    yield u, (NBR, v)
    yield v, (NBR, u)


def large_star(u: Any, values: Iterable[tuple[int, Any]]) -> Iterator[tuple[str, Any]]:
    """One node's large-star step.  Yields ``("next", (v, (tag, x)))`` messages for the
    small-star grouping (keyed by node) or ``(DONE, (root, leaf))`` edges of a finished star."""
    nbrs, final = set(), False
    for tag, x in values:
        if tag == NBR:
            nbrs.add(x)
        else:
            final = True
    if final:  # u is the root of a star found finished in the previous round
        for v in nbrs:
            yield DONE, (u, v)
        return
    m = min(nbrs) if nbrs else u
    if m < u:
        if len(nbrs) == 1:
            yield "next", (m, (LEAF, None))
    else:
        m = u
        yield "next", (u, (ROOT, len(nbrs)))
    for v in nbrs:
        if v > u:
            yield "next", (v, (NBR, m))


def small_star(u: Any, values: Iterable[tuple[int, Any]]) -> Iterator[tuple[str, Any]]:
    """One node's small-star step: ``("edge", (m, v))`` for the next round, or
    ``("final", u)`` when u is a root whose neighbours are all its leaves."""
    smaller, degree, leaves = set(), None, 0
    for tag, x in values:
        if tag == NBR:
            smaller.add(x)
        elif tag == ROOT:
            degree = x
        else:
            leaves += 1
    if smaller:
        m = min(smaller)
        yield "edge", (m, u)
        for v in smaller:
            if v != m:
                yield "edge", (m, v)
    elif degree is not None and leaves == degree:
        yield "final", u


# -- survivors ------------------------------------------------------------------------------------
def named_key(d: Decision) -> tuple:
    """The document a decision names as kept: (is an older run's document, id, source)."""
    return d.reason in (AGAINST_EXACT, AGAINST_FUZZY), d.detail.get("kept"), d.detail.get("kept_source")


def link_of(d: Decision) -> tuple:
    """A removal as a link from the removed document (always this run's) to its survivor."""
    via = tuple((v["id"], v["source"]) for v in d.detail.get("via", ()))
    return (False, d.id, d.source), (d.detail["kept"], d.detail["kept_source"], via)


def followed(d: Decision, link: tuple) -> Decision:
    """``d`` naming where ``link`` goes; ``detail.via`` lists the documents passed on the way."""
    kept_id, kept_source, via = link
    steps = [*d.detail.get("via", ()), {"id": d.detail["kept"], "source": d.detail["kept_source"]},
             *({"id": i, "source": s} for i, s in via)]
    return Decision(d.id, d.source, d.stage, d.reason,
                    {**d.detail, "kept": kept_id, "kept_source": kept_source, "via": steps})
