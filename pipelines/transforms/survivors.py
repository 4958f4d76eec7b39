"""Dedup removal records name the document that survives, not a step on the way to it.

Exact dedup runs first and names each group's survivor B in its decisions (``detail.kept``);
fuzzy dedup may then remove B itself as a near duplicate of R, and a removal naming B would
point at a document the corpus does not hold.  Across ``--dedup-against`` the same happens one
run back: an older document O that wins a group here may have been removed by its own run as a
near duplicate of O2 (its index row: ``dedup_kept`` false, ``kept_id`` O2).

``final_decisions`` rewrites such decisions: ``detail.kept`` / ``kept_source`` name the survivor
and ``detail.via`` lists the documents passed on the way, in order (``[{"id", "source"}]``).
The dedup group rows (``dedup/groups-*.parquet``) keep every step as it was decided.  Chains
are short by construction: a component's root is never removed by fuzzy dedup, and an older
run's ``kept_id`` is that run's survivor (or, if that run was itself deduplicated against an
older one, the document as that run recorded it).  So: older links first, then fuzzy
decisions (which may point at older documents), then exact decisions (which may point at
fuzzy-removed documents or older ones).

Each step is a join on the named document: decisions keyed by the document they name, links
keyed by the document they leave; a group is read twice (find the link, then rewrite), never
held, so a boilerplate group of a million exact duplicates costs time, not memory.
"""
from __future__ import annotations

import apache_beam as beam

from curation.document import Decision
from pipelines.dedup.stats import AGAINST_EXACT, AGAINST_FUZZY
from pipelines.plumbing.outputs import count
from pipelines.plumbing.sinks import flatten_small

DECISION, LINK = "decision", "link"


def named_key(d: Decision) -> tuple:
    """The document a decision names as kept: (is an older run's document, id, source)."""
    return d.reason in (AGAINST_EXACT, AGAINST_FUZZY), d.detail.get("kept"), d.detail.get("kept_source")


def link_of(d: Decision) -> tuple:
    """A removal as a link from the removed document (always this run's) to its survivor."""
    via = tuple((v["id"], v["source"]) for v in d.detail.get("via", ()))
    return (False, d.id, d.source), (d.detail["kept"], d.detail["kept_source"], via)


def followed(d: Decision, link: tuple) -> Decision:
    kept_id, kept_source, via = link
    steps = [*d.detail.get("via", ()), {"id": d.detail["kept"], "source": d.detail["kept_source"]},
             *({"id": i, "source": s} for i, s in via)]
    return Decision(d.id, d.source, d.stage, d.reason,
                    {**d.detail, "kept": kept_id, "kept_source": kept_source, "via": steps})


class FollowFn(beam.DoFn):
    """(named document, [(tag, decision or link)]) -> the decisions, each naming where the link
    goes if the named document has one."""

    def process(self, element):
        _, values = element
        link = next((v for tag, v in values if tag == LINK), None)  # pass 1
        for tag, d in values:  # pass 2 over the re-iterable group
            if tag != DECISION:
                continue
            if link is not None:
                count(d.stage, d.source, "survivor_followed")
                d = followed(d, link)
            yield d


def follow(decisions, links, label: str):
    """``decisions`` with every named document that has a link in ``links`` replaced by its
    survivor (``links``: ``(key, (kept_id, kept_source, via))``, key as ``named_key``)."""
    keyed_by = decisions | f"{label}ByNamed" >> beam.Map(lambda d: (named_key(d), (DECISION, d)))
    tagged = links | f"{label}ByRemoved" >> beam.MapTuple(lambda key, link: (key, (LINK, link)))
    return ((keyed_by, tagged)
            | f"{label}Flatten" >> beam.Flatten()
            | f"{label}Group" >> beam.GroupByKey()
            | f"{label}Follow" >> beam.ParDo(FollowFn()))


def final_decisions(exact=None, fuzzy=None, older_links=None):
    """All dedup decisions, naming final survivors: ``exact`` / ``fuzzy`` are the two steps'
    decisions (either may be None), ``older_links`` the older runs' removals
    (``dedup_index.REDIRECTS``), None without ``--dedup-against``.  The curate job's file-backed
    dedup makes the same joins over files (``dedup_decide.FollowStepFn``)."""
    if fuzzy is not None and older_links is not None:
        fuzzy = follow(fuzzy, older_links, "FuzzyToOlder")
    if exact is not None:
        links = [older_links]
        if fuzzy is not None:
            links.append(fuzzy | "FuzzyLinks" >> beam.Map(link_of))
        links = [x for x in links if x is not None]
        if links:
            exact = follow(exact, flatten_small(links, "AllLinks"), "ExactToSurvivor")
    return flatten_small([exact, fuzzy], "AllDecisions")
