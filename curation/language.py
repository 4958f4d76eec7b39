"""Language identification with fastText's lid.176 model (the compressed .ftz shipped in the
package as ``pkg://data_manifests/models/lid.176.ftz``, see its README for origin and licence),
loaded lazily once per process so the identifier pickles cheaply.

A page may hold two languages (an English blog quoting Japanese, a German page with an English
caption), so a document's language is decided from its composition, not from one call on the
whole text: its lines are merged into blocks of at least ``block_chars`` characters, every block
is identified (one batched fastText call per document), and the document's language is the one
whose blocks hold most of its characters.  Its ``share`` of the characters and its ``score`` (the
probability of that language for the text of its blocks taken together) are stored on the
document.

A block's prediction is a function of its text alone, and the read stage sees the same blocks
again and again (a site's navigation and footer lines, the copies of a page that dedup removes
only later; 28-38% of the block characters each worker met on the 25k sample), so each identifier
keeps the predictions of the last ``cached_blocks`` distinct blocks it met and asks fastText only
for the others.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from curation.document import FilterResult
from curation.lazy_model import LazyModel


def bundled_model_path() -> str:
    """Path of the ``lid.176.ftz`` shipped with this process's installation of the package."""
    from infra import resources

    try:
        return resources.local_path(resources.LANGUAGE_MODEL)
    except resources.ResourceError as e:
        raise FileNotFoundError(f"{e}; set language.model_path") from None


@dataclass
class LanguageConfig:
    """Which documents the language stage keeps."""

    allowed: list[str] = field(default_factory=lambda: ["en"])
    """ISO 639 codes to keep. MT-NLG is English-only."""
    min_score: float = 0.65
    """Minimum fastText probability of the top language. CCNet keeps at 0.5 and RedPajama/
    NeMo Curator examples use 0.65 for English: above 0.5 the top label is guaranteed to be the
    majority, and 0.65 removes most mixed-language and boilerplate-heavy pages while keeping
    short clean English (the compressed .ftz model scores clean English sentences > 0.8)."""
    model_path: str | None = None
    """lid.176 model: a local path, a Beam FileSystems URL (``s3://...``, staged once per
    worker process) or ``pkg://...``; None uses the shipped ``lid.176.ftz``."""
    max_chars: int = 10_000
    """Only the first this-many characters are classified: a long prefix gives the same
    composition and bounds the cost on book-length documents (linear in this, not the text)."""
    block_chars: int = 100
    """Lines are merged into blocks of at least this many characters (a longer line is a block
    of its own) and each block is identified: fastText is unreliable on a few words (menus,
    captions), and fewer, longer blocks cost fewer predictions.  The last short lines join the
    block before them, so every character of the prefix counts."""

    cached_blocks: int = 100_000
    """Block predictions each worker keeps (~30 MB of ~100-character blocks; emptied when full,
    which costs predictions, never a result); 0: none kept.  A benchmark whose input repeats
    whole pages far more than a crawl does turns it off, or it measures the repetition."""

    early_score: float = 0.1
    """The early decision on web pages (WARC input, before their main text is extracted): a
    page is removed with the language stage's reason ``wrong_language`` (``detail.early``) when
    no block of its first ``early_chars`` characters of text (all of the page's text, Lexbor's,
    scripts and styles left out) gives any allowed language at least this probability; the
    pages it lets through get the full decision above.  0 turns it off.  Chosen with margin:
    on three annotated sets the lowest such value of any page the full decision keeps is about
    6x this (bench/RESULTS.md, "The read stage: issue 52 item 2")."""
    early_chars: int = 2000
    """Characters of the page's text the early decision reads (bounds its cost)."""
    early_block_chars: int = 200
    """Lines of that text are merged into blocks of at least this many characters (as
    ``block_chars``); each block is identified on its own, so an article in an allowed language
    under a menu in another still shows."""

    def __post_init__(self) -> None:
        if not self.allowed:
            raise ValueError("allowed: list at least one language code")
        if not 0.0 <= self.min_score <= 1.0:
            raise ValueError(f"min_score: must be in [0, 1], got {self.min_score}")
        if self.max_chars < 1:
            raise ValueError(f"max_chars: must be >= 1, got {self.max_chars}")
        if self.block_chars < 1:
            raise ValueError(f"block_chars: must be >= 1, got {self.block_chars}")
        if self.cached_blocks < 0:
            raise ValueError(f"cached_blocks: must be >= 0, got {self.cached_blocks}")
        if not 0.0 <= self.early_score < 1.0:
            raise ValueError(f"early_score: must be in [0, 1) (0: off), got {self.early_score}")
        if self.early_chars < 1:
            raise ValueError(f"early_chars: must be >= 1, got {self.early_chars}")
        if self.early_block_chars < 1:
            raise ValueError(f"early_block_chars: must be >= 1, got {self.early_block_chars}")


SCORE_TOP_K = 5
"""Labels asked of the scoring call: the blocks' language is almost always the top one."""


class Composition(NamedTuple):
    """A document's language as its blocks decided it."""

    lang: str
    """The language whose blocks hold most of the classified characters (``unknown``: no words)."""
    score: float
    """fastText's probability of that language for the text of its blocks taken together (for a
    page in one language: the probability of the whole prefix, as one call would give)."""
    share: float
    """Share of the classified characters in that language's blocks, in [0, 1]."""


def blocks(text: str, block_chars: int, max_chars: int) -> list[str]:
    """The first ``max_chars`` characters as single-line blocks: consecutive lines merged until a
    block reaches ``block_chars`` characters; a short tail joins the block before it."""
    out: list[str] = []
    cur: list[str] = []
    size = 0
    for line in text[:max_chars].split("\n"):
        line = " ".join(line.split())  # fastText reads one line; tabs and runs of spaces are noise
        if not line:
            continue
        cur.append(line)
        size += len(line) + 1
        if size >= block_chars:
            out.append(" ".join(cur))
            cur, size = [], 0
    if cur:
        tail = " ".join(cur)
        if out:
            out[-1] += " " + tail
        else:
            out.append(tail)
    return out


def dominant(predictions: list[tuple[str, int]]) -> tuple[str, float]:
    """``(lang, chars)`` per block -> the language holding most characters and its share
    (``("unknown", 0.0)`` for none).  A tie goes to the language first met (stable)."""
    chars: dict[str, int] = {}
    for lang, n in predictions:
        chars[lang] = chars.get(lang, 0) + n
    total = sum(chars.values())
    if not total:
        return "unknown", 0.0
    lang = max(chars, key=chars.__getitem__)
    return lang, chars[lang] / total


class LanguageIdentifier(LazyModel):
    """``predict(text) -> (lang, score)``. The model is loaded on first use in each process
    and dropped on pickling, so Beam can ship the identifier to workers."""

    def __init__(self, model_path: str | None = None, max_chars: int = 10_000,
                 block_chars: int = 100, cached_blocks: int = 100_000) -> None:
        self.model_path = model_path
        self.max_chars = max_chars
        self.block_chars = block_chars
        self.cached_blocks = cached_blocks
        self._model = None
        self._blocks: dict[str, tuple[str, float]] = {}  # block -> (label, probability), k=1

    def __getstate__(self) -> dict:
        state = super().__getstate__()
        state["_blocks"] = {}  # a per-process cache, like the model
        return state

    def _load(self):
        if self._model is None:
            import fasttext

            # fasttext prints a deprecation warning to stderr on load_model; harmless.
            from infra.resources import local_path

            path = local_path(self.model_path) if self.model_path else bundled_model_path()
            self._model = fasttext.load_model(path)
        return self._model

    def identify(self, text: str) -> Composition:
        """The document's language from its blocks (``blocks``), all predicted in one call."""
        parts = blocks(text, self.block_chars, self.max_chars)
        if not parts:
            return Composition("unknown", 0.0, 0.0)
        model = self._load()
        predicted = self._predict_blocks(model, parts)
        if len(parts) == 1:  # the block is the whole text: its prediction is the score
            return Composition(predicted[0][0], min(predicted[0][1], 1.0), 1.0)
        labels = [lab for lab, _ in predicted]
        lang, share = dominant([(lab, len(b)) for lab, b in zip(labels, parts)])
        # The score comes from the language's own blocks as one text: short blocks are less
        # certain one by one than together, and a one-language page keeps the score it had.
        # (fastText's own bindings, as ``model.predict`` calls them: a block holds no newline.)
        own = " ".join(b for lab, b in zip(labels, parts) if lab == lang)
        got = model.f.predict(own + "\n", SCORE_TOP_K, 0.0, "strict")
        score = next((float(pr) for pr, lab in got if lab == "__label__" + lang), 0.0)
        return Composition(lang, min(score, 1.0), share)  # fastText can return 1.00001

    def _predict_blocks(self, model, parts: list[str]) -> list[tuple[str, float]]:
        """(label, probability) of each block: from the cache, the others in one batched call
        (each line of ``multilinePredict`` is predicted on its own, as ``model.predict(parts)``
        does)."""
        cache = self._blocks
        got = list(map(cache.get, parts))
        missing = [i for i, g in enumerate(got) if g is None]
        if missing:
            labels, probs = model.f.multilinePredict([parts[i] + "\n" for i in missing], 1, 0.0, "strict")
            if len(cache) + len(missing) > self.cached_blocks:
                cache.clear()
            keep = len(missing) <= self.cached_blocks
            for i, lab, pr in zip(missing, labels, probs):
                got[i] = (lab[0].removeprefix("__label__"), float(pr[0]))
                if keep:
                    cache[parts[i]] = got[i]
        return got

    def early(self, text: str, cfg: LanguageConfig) -> "Early":
        """The early decision on a page's ``text`` (``LanguageConfig.early_score``): its first
        ``cfg.early_chars`` characters as blocks, all predicted in one call."""
        parts = blocks(text, cfg.early_block_chars, cfg.early_chars)
        if not parts:  # nothing to judge: the full decision will
            return Early("unknown", 0.0, 0.0, False)
        labels, probs = self._load().f.multilinePredict([b + "\n" for b in parts], -1, EARLY_FLOOR, "strict")
        wanted = {"__label__" + lang for lang in cfg.allowed}
        score, tops = 0.0, []
        for part, labs, prs in zip(parts, labels, probs):
            tops.append((labs[0].removeprefix("__label__") if labs else "unknown", len(part)))
            for lab, pr in zip(labs, prs):
                if lab in wanted and pr > score:
                    score = float(pr)
        lang, share = dominant(tops)
        score = min(score, 1.0)
        return Early(lang, share, score, score < cfg.early_score and lang not in cfg.allowed)

    def predict(self, text: str) -> tuple[str, float]:
        """``(lang, score)`` of ``identify``: e.g. ``("en", 0.93)``; ``("unknown", 0.0)`` for
        text with no words."""
        c = self.identify(text)
        return c.lang, c.score


EARLY_FLOOR = 0.001
"""Probabilities below this are not asked of fastText in the early decision (an ``Early.score``
of 0.0 means below it): fewer labels per block to read back."""


class Early(NamedTuple):
    """The early decision on a page (``LanguageIdentifier.early``)."""

    lang: str
    """The language whose blocks hold most of the judged characters (``unknown``: no text)."""
    share: float
    """Share of the judged characters in that language's blocks."""
    score: float
    """The highest probability any allowed language reached in a block (0.0: below
    ``EARLY_FLOOR``): what ``LanguageConfig.early_score`` is compared with."""
    remove: bool
    """Surely not an allowed language: removed before extraction."""


def keep_language(lang: str, score: float, cfg: LanguageConfig) -> FilterResult:
    """Keep rule: the language is allowed and its score reaches ``cfg.min_score``."""
    if lang not in cfg.allowed:
        return FilterResult.drop("wrong_language")
    if score < cfg.min_score:
        return FilterResult.drop("low_language_score")
    return FilterResult.kept()


def make_identifier(cfg: LanguageConfig, model_path: str | None = None) -> LanguageIdentifier:
    """The identifier ``cfg`` describes; ``model_path``: a local copy of ``cfg.model_path`` (a
    worker's staged file) to load instead."""
    return LanguageIdentifier(model_path or cfg.model_path, cfg.max_chars, cfg.block_chars,
                              cfg.cached_blocks)
