"""The quality classifier at scoring time: a supervised fastText model, its keep rules, checks.

``score = P(high quality)`` from a binary fastText model with labels ``__label__hq`` and
``__label__lq`` (trained by ``curation.quality_train``).  Two keep rules, chosen in config:

- ``threshold``: keep when ``score >= threshold``.
- ``pareto`` (GPT-3, appendix A; NeMo Curator): keep when ``pareto(alpha) > 1 - score``.  The
  Pareto draw is the Lomax variable numpy's ``random.pareto`` returns, taken by inverse CDF from
  a uniform that is a hash of ``(seed, document id)``, so a rerun keeps exactly the same
  documents on any runner and any number of workers.  ``P(keep) = (2 - score) ** -alpha``: a
  document scored 1 is always kept, one scored 0.5 with alpha 9 is kept 2.6% of the time.

Nothing here imports Beam; ``pipelines.filters.quality`` wraps it.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

import xxhash

from infra.hashing import file_sha256
from curation.document import FilterResult
from curation.lazy_model import LazyModel

HQ_LABEL = "__label__hq"
LQ_LABEL = "__label__lq"
RULES = ("threshold", "pareto")
_SYMBOL_TOKEN = re.compile(r" [^\w\s]+(?= )")  # a space, then a token without letters or digits
DEFAULT_SOURCES = ("cc_2020_50", "cc_2021_04")


class QualityModelError(ValueError):
    """The quality model file is missing, unreadable, not a fastText model, lacks the labels,
    or differs from the sha256 the run was started with."""


@dataclass
class QualityConfig:
    """The ``quality`` section of a curate config."""

    enabled: bool = False
    """Score and filter. Off by default: a run without a trained model cannot filter; the demo
    config turns it on with the model ``mtnlg quality train`` writes."""
    model_path: str | None = None
    """The fastText model (``model.bin``); relative to the config file's folder unless absolute.
    ``mtnlg curate --quality-model PATH`` overrides it."""
    sources: list[str] = field(default_factory=lambda: list(DEFAULT_SOURCES))
    """Source slugs that are scored and filtered. MT-NLG filtered its Common Crawl snapshots
    only; the curated sources (Pile subsets, RealNews, CC-Stories) pass through unscored."""
    rule: str = "pareto"
    """``pareto`` (GPT-3's stochastic rule) or ``threshold``."""
    threshold: float = 0.5
    """``threshold`` rule: keep when ``score >= threshold``. Also drawn by the dashboard."""
    alpha: float = 9.0
    """``pareto`` rule shape: GPT-3 used 9 (keeps few documents scored below ~0.8); NeMo
    Curator's default is 3 (milder). Higher alpha filters harder."""
    seed: int = 0
    """Mixed into the per-document Pareto draw; change it to draw a different sample."""
    max_chars: int = 20_000
    """Characters of a document given to the classifier: fastText averages word vectors, so a
    long prefix scores like the whole document and bounds the cost of book-length pages."""

    def __post_init__(self) -> None:
        if self.rule not in RULES:
            raise ValueError(f"rule: {self.rule!r} is not one of {RULES}")
        if not 0.0 <= self.threshold <= 1.0:
            raise ValueError(f"threshold: must be in [0, 1], got {self.threshold!r}")
        if not self.alpha > 0:
            raise ValueError(f"alpha: must be > 0, got {self.alpha!r}")
        if self.max_chars < 1:
            raise ValueError(f"max_chars: must be a positive integer, got {self.max_chars!r}")
        if self.enabled and not self.model_path:
            raise ValueError("model_path: required when quality.enabled is true "
                             "(train one with `mtnlg quality train`)")


def preprocess(text: str, max_chars: int = 20_000) -> str:
    """The classifier's view of a text, identical in training and scoring: the first
    ``max_chars`` characters, lowercased, on one line (fastText reads one example per line),
    without the tokens made only of symbols (``|``, ``•``, ``-``, ``©``, ``>>``).

    Symbol tokens are how an extractor lays text out, not what the page says: trafilatura
    writes table cells as ``| a | b |``, others write list bullets or nothing, and the raw page
    text of the training negatives joins menu items with ``|``.  Kept, they became the
    strongest low-quality feature, and real articles with a table scored 0.00 (bench/RESULTS.md,
    "Quality as a filter").  fastText splits words on ASCII whitespace itself,
    so line breaks and tabs become spaces and no split/join is done (that would cost as much as
    the prediction, bench/quality/quality.py); the symbol tokens go with one regex that only
    starts at a space."""
    line = " " + text[:max_chars].lower().replace("\r", " ").replace("\n", " ").replace("\t", " ") + " "
    return _SYMBOL_TOKEN.sub("", line).strip()


def load_model(path: str, expected_sha256: str | None = None):
    """Load and check a quality model; ``QualityModelError`` with a clear message otherwise."""
    if not path or not os.path.isfile(path):
        raise QualityModelError(f"quality.model_path: {path!r} does not exist "
                                "(train one with `mtnlg quality train`)")
    if expected_sha256 is not None and file_sha256(path) != expected_sha256:
        raise QualityModelError(f"quality.model_path: {path!r} changed during the run "
                                f"(sha256 is no longer {expected_sha256})")
    import fasttext

    try:
        model = fasttext.load_model(path)
    except Exception as e:  # fastText raises ValueError/RuntimeError on truncated or foreign files
        raise QualityModelError(f"quality.model_path: {path!r} is not a readable fastText model "
                                f"({type(e).__name__}: {e})") from e
    labels = set(model.get_labels())
    if labels != {HQ_LABEL, LQ_LABEL}:
        raise QualityModelError(f"quality.model_path: {path!r} has labels {sorted(labels)}; a "
                                f"quality model has exactly {HQ_LABEL} and {LQ_LABEL}")
    return model


def model_info(path: str) -> dict:
    """``{"path", "sha256"}`` after checking the model loads (for run.json, before any input)."""
    load_model(path)
    return {"path": os.path.abspath(path), "sha256": file_sha256(path)}


class QualityScorer(LazyModel):
    """``score(text) -> P(hq)``. The model loads on first use in each process and is dropped on
    pickling, so Beam ships the scorer cheaply and each worker loads the model once."""

    def __init__(self, model_path: str, max_chars: int = 20_000,
                 expected_sha256: str | None = None) -> None:
        self.model_path = model_path
        self.max_chars = max_chars
        self.expected_sha256 = expected_sha256
        self._model = None

    def load(self):
        if self._model is None:
            self._model = load_model(self.model_path, self.expected_sha256)
        return self._model

    def score(self, text: str) -> float:
        return self.score_batch([text])[0]

    def score_batch(self, texts: list[str]) -> list[float]:
        """P(hq) per text; an empty text scores 0.0 (nothing there to call high quality)."""
        model = self.load()
        lines = [preprocess(t, self.max_chars) for t in texts]
        scores = [0.0] * len(lines)
        idx = [i for i, line in enumerate(lines) if line]
        if idx:
            labels, probs = model.predict([lines[i] for i in idx], k=2)
            for i, labs, ps in zip(idx, labels, probs):
                p = dict(zip(labs, ps)).get(HQ_LABEL, 0.0)
                scores[i] = min(max(float(p), 0.0), 1.0)  # fastText can return 1.00001
        return scores


def pareto_draw(doc_id: str, alpha: float, seed: int = 0) -> float:
    """A Lomax(alpha) draw (numpy's ``random.pareto``) that is a pure function of the id."""
    h = xxhash.xxh3_64_intdigest(doc_id.encode("utf-8"), seed=seed)
    u = (h + 0.5) / 2.0 ** 64  # uniform in (0, 1), never exactly 0 or 1
    return (1.0 - u) ** (-1.0 / alpha) - 1.0


def pareto_keep_probability(score: float, alpha: float) -> float:
    """P(pareto(alpha) > 1 - score) = (2 - score) ** -alpha: the rule's expected keep rate."""
    return (2.0 - score) ** (-alpha)


def keep_quality(doc_id: str, score: float, cfg: QualityConfig) -> FilterResult:
    """The configured keep rule for a scored document."""
    if cfg.rule == "threshold":
        return FilterResult.kept() if score >= cfg.threshold else FilterResult.drop("low_quality")
    if pareto_draw(doc_id, cfg.alpha, cfg.seed) > 1.0 - score:
        return FilterResult.kept()
    return FilterResult.drop("low_quality")
