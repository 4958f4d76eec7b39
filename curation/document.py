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
    "site_boilerplate",
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

    ``id`` is stable across reruns and unique by construction: ``<source>/<path>:<line>`` for
    JSON Lines (0-based line of the decompressed stream), ``<source>/<path>#<k>`` for WARC
    (k = 0-based index among all records of the file) and ``<source>/<path>`` for one-file
    documents, where ``<path>`` is the file's path relative to the run's input root (recorded
    in run.json as ``input_root``; a file outside the root keeps its full path).  Only the
    readers build ids; nothing else may parse them.
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
    lang_share: float | None = None
    """Share of the classified characters in ``lang`` (``curation.language``: a page may hold
    two languages; ``lang`` is the one holding most of its text); None until identified."""
    quality_score: float | None = None
    tokens: int | None = None
    heuristic_scores: dict[str, float] | None = None
    """Every heuristic rule's score (``curation.heuristics.SCORE_COLUMNS``); None until scored."""
    boilerplate_chars: int | None = None
    """Characters the ``site_boilerplate`` stage removed (lines repeated across the document's
    site, ``curation.site_boilerplate``); None when the stage did not judge the document."""
    pii_spans: list[dict[str, Any]] | None = None
    """Personal data the ``pii`` stage replaced: ``{"kind", "start", "end"}`` offsets in the
    text as it was before the replacement (never the values); None when the stage is off."""

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


MAX_META_DEPTH = 32
"""Deepest nesting of containers allowed in ``Document.meta`` / ``Removal.detail``.  Real
metadata is two or three levels deep; Beam's coders recurse per level and fail near 500."""
MAX_META_ITEMS = 100_000


def has_lone_surrogate(text: str) -> bool:
    """JSON ``"\\ud800"`` escapes decode to strings that UTF-8 cannot encode.  A Python string
    fails strict UTF-8 encoding exactly when it holds a surrogate code point; the encoder finds
    that faster than a regex scan of the text."""
    if text.isascii():
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def value_problem(value: Any, max_depth: int = MAX_META_DEPTH) -> str | None:
    """Why a JSON-like value cannot travel through the pipeline (be pickled by Beam and written
    as UTF-8 JSON/Parquet), or ``None``: nesting deeper than ``max_depth``, more than
    ``MAX_META_ITEMS`` items, a lone surrogate in a string, or a non-JSON type.  Iterative, so
    a hostile value cannot exhaust the stack here either."""
    stack, items = [(value, 0)], 0
    while stack:
        v, depth = stack.pop()
        items += 1
        if items > MAX_META_ITEMS:
            return f"more than {MAX_META_ITEMS} items"
        if isinstance(v, str):
            if has_lone_surrogate(v):
                return "lone surrogate in a string"
        elif isinstance(v, (dict, list, tuple)):
            if depth >= max_depth:
                return f"nested deeper than {max_depth} levels"
            if isinstance(v, dict):
                for k, x in v.items():
                    if not isinstance(k, str):
                        return f"non-string key {type(k).__name__}"
                    stack += [(k, depth + 1), (x, depth + 1)]
            else:
                stack += [(x, depth + 1) for x in v]
        elif v is not None and not isinstance(v, (bool, int, float)):
            return f"unsupported value type {type(v).__name__}"
    return None


def record_problem(rec: "Document | Removal | DeadLetter") -> str | None:
    """Why a reader's record cannot be encoded downstream, or ``None`` (cheap: the text is
    scanned only when it is not ASCII, ``meta``/``detail`` are small)."""
    doc = rec.doc if isinstance(rec, Removal) else rec
    if isinstance(doc, Document):
        for name in ("id", "source", "text", "url"):
            v = getattr(doc, name)
            if v is not None and (not isinstance(v, str) or has_lone_surrogate(v)):
                return f"{name}: not encodable as UTF-8"
        problem = value_problem(doc.meta)
        if problem:
            return f"meta: {problem}"
    if isinstance(rec, Removal):
        problem = value_problem(rec.detail)
        if problem:
            return f"detail: {problem}"
    if isinstance(rec, DeadLetter):
        for name in ("source", "location", "error", "raw"):
            if has_lone_surrogate(getattr(rec, name)):
                return f"{name}: not encodable as UTF-8"
    return None


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
