"""The curate job's stages and the steps of each, declared once.

A *stage* is what the driver runs, commits and resumes as one unit (``mtnlg curate --stage``,
``RUN/_curate/<stage>.done.json``, the live progress line): it reads the previous stage's parts
and writes its own (``pipelines.build`` adds its transforms to the Beam job).  A *step* is one
kind of work inside a stage, and the name its outcomes are counted under (Beam counters
``<step>/<source>/<outcome>[/<reason>]``, ``RUN/stats/counters.json``) and its worker time is
summed under (``run.json`` ``stage_seconds``).  Each stage's first step carries its own name:
reading its input (records of raw files, or the previous stage's parts).

The steps that can remove a document are the decision steps of ``curation.document.STAGES``
(the ``stage`` of every removal, stats row and dashboard funnel), in the same order; the others
pass every document on (``normalize``, ``pii``) or only count (``dedup``, ``dedup_against``,
``decontaminate``, ``shards``).

Where each step's code is: ``pipelines.read`` (read), ``pipelines.filters`` (normalize ...
quality), ``pipelines.dedup`` (dedup ... dedup_against), ``pipelines.decontaminate``,
``pipelines.tokenize`` (tokenize, shards); docs/architecture.md walks one document through them.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class JobStage:
    name: str
    steps: tuple[str, ...]
    """Counter and timing names of the stage's work, in the order a document meets them."""


JOB = (
    JobStage("read", ("read", "normalize", "pii", "language", "site_boilerplate", "heuristics", "quality")),
    JobStage("dedup", ("dedup", "exact_dedup", "fuzzy_dedup", "dedup_against")),
    JobStage("decontaminate", ("decontaminate", "decontamination")),
    JobStage("tokenize", ("tokenize", "shards")),
)
STAGES = tuple(s.name for s in JOB)
"""The job's stages in order."""
STEPS = tuple(step for s in JOB for step in s.steps)
"""Every step of the job, in the order a document meets them."""
_STAGE_OF = {step: s.name for s in JOB for step in s.steps}


class UnknownStepError(KeyError):
    """A counter or a timing under a name no stage declares (add the step to ``JOB``)."""

    def __str__(self) -> str:
        return (f"{self.args[0]!r} is no step of the curate job (pipelines/stages.py declares "
                f"{', '.join(STEPS)})")


def stage_of(step: str) -> str:
    """The stage whose work ``step`` is; ``UnknownStepError`` for an undeclared name."""
    try:
        return _STAGE_OF[step]
    except KeyError:
        raise UnknownStepError(step) from None
