"""The one document record used everywhere, and the records for what leaves the pipeline.

Every document read ends in exactly one of three places, and the run's accounting
(``run.json``) proves it: kept (a ``Document`` that reaches the shards), removed (a
``Removal`` with the stage and reason), or dead-lettered (a ``DeadLetter`` with the error and
the input location).  Records are plain dataclasses so they pickle for any Beam runner.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

# Stage names in pipeline order. The dashboard's funnel and the stats tables use these strings.
STAGES = (
    "read",
    "language",
    "heuristics",
    "quality",
    "exact_dedup",
    "fuzzy_dedup",
    "decontamination",
    "tokenize",
)


@dataclass
class Document:
    """A document with a stable id and its source.

    ``id`` is stable across reruns: ``<source>/<file base name>:<line>`` for JSON Lines (0-based
    line of the decompressed stream), ``<source>/<file base name>#<k>`` for WARC (k = 0-based
    index among all records of the file) and ``<source>/<file base name>`` for one-file documents.
    ``source`` is a slug from ``curation.sources`` (``books3``, ``cc_2020_50``, ...).
    Scores are stored on the document once computed ("score once, decide in config").
    """

    id: str
    source: str
    text: str
    url: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    lang: str | None = None
    lang_score: float | None = None
    quality_score: float | None = None
    tokens: int | None = None
    heuristic_scores: dict[str, float] | None = None
    """Every heuristic rule's score (``curation.heuristics.SCORE_COLUMNS``); None until scored."""

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, row: dict[str, Any]) -> "Document":
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in row.items() if k in names})


@dataclass
class Removal:
    """A document removed by policy: which stage, why, and the document itself."""

    doc: Document
    stage: str
    reason: str
    detail: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.stage not in STAGES:
            raise ValueError(f"unknown stage {self.stage!r}; expected one of {STAGES}")


@dataclass(frozen=True)
class Decision:
    """A removal decided without the document's text (dedup works on small records): which
    document, which stage and reason, and the context (e.g. the kept duplicate's id).
    The pipeline turns it into a ``Removal`` once the decision meets its document."""

    id: str
    source: str
    stage: str
    reason: str
    detail: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.stage not in STAGES:
            raise ValueError(f"unknown stage {self.stage!r}; expected one of {STAGES}")

    def removal(self, doc: "Document") -> "Removal":
        if doc.id != self.id:
            raise ValueError(f"decision for {self.id!r} applied to document {doc.id!r}")
        return Removal(doc, self.stage, self.reason, dict(self.detail))


@dataclass
class DeadLetter:
    """Input that could not be parsed into a document: the error and where it was."""

    source: str
    location: str  # "<file path>:<byte offset or line/record number>"
    error: str
    raw: str = ""  # a truncated, printable excerpt of the offending input

    MAX_RAW = 2000

    def __post_init__(self) -> None:
        if len(self.raw) > self.MAX_RAW:
            self.raw = self.raw[: self.MAX_RAW]


@dataclass(frozen=True)
class FilterResult:
    """A filter's verdict: keep, or drop with a reason (a short snake_case string)."""

    keep: bool
    reason: str | None = None

    @staticmethod
    def kept() -> "FilterResult":
        return FilterResult(True, None)

    @staticmethod
    def drop(reason: str) -> "FilterResult":
        return FilterResult(False, reason)
