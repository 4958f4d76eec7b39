"""Language identification with fastText's lid.176 model (the compressed .ftz shipped in the
package as ``pkg://data_manifests/models/lid.176.ftz``, see its README for origin and licence),
loaded lazily once per process so the identifier pickles cheaply."""
from __future__ import annotations

from dataclasses import dataclass, field

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
    """Only the first this-many characters are classified: fastText averages word vectors, so a
    long prefix gives the same answer and bounds the cost on book-length documents."""

    def __post_init__(self) -> None:
        if not self.allowed:
            raise ValueError("allowed: list at least one language code")
        if not 0.0 <= self.min_score <= 1.0:
            raise ValueError(f"min_score: must be in [0, 1], got {self.min_score}")
        if self.max_chars < 1:
            raise ValueError(f"max_chars: must be >= 1, got {self.max_chars}")


class LanguageIdentifier(LazyModel):
    """``predict(text) -> (lang, score)``. The model is loaded on first use in each process
    and dropped on pickling, so Beam can ship the identifier to workers."""

    def __init__(self, model_path: str | None = None, max_chars: int = 10_000) -> None:
        self.model_path = model_path
        self.max_chars = max_chars
        self._model = None

    def _load(self):
        if self._model is None:
            import fasttext

            # fasttext prints a deprecation warning to stderr on load_model; harmless.
            from infra.resources import local_path

            path = local_path(self.model_path) if self.model_path else bundled_model_path()
            self._model = fasttext.load_model(path)
        return self._model

    def predict(self, text: str) -> tuple[str, float]:
        """Top language code (e.g. ``"en"``) and its probability; ``("unknown", 0.0)`` for text
        with no words. Newlines are replaced by spaces: fastText predicts one line at a time."""
        snippet = " ".join(text[: self.max_chars].split())
        if not snippet:
            return "unknown", 0.0
        labels, probs = self._load().predict(snippet, k=1)
        lang = labels[0].removeprefix("__label__")
        return lang, min(float(probs[0]), 1.0)  # fastText can return 1.00001


def keep_language(lang: str, score: float, cfg: LanguageConfig) -> FilterResult:
    """Keep rule: the language is allowed and its score reaches ``cfg.min_score``."""
    if lang not in cfg.allowed:
        return FilterResult.drop("wrong_language")
    if score < cfg.min_score:
        return FilterResult.drop("low_language_score")
    return FilterResult.kept()


def make_identifier(cfg: LanguageConfig) -> LanguageIdentifier:
    return LanguageIdentifier(cfg.model_path, cfg.max_chars)
