"""The fuzzy (MinHash LSH) dedup section of the curate config: ``dedup.fuzzy``.

A typed dataclass with a documented default under every field, checked in ``__post_init__``,
which raises ``ValueError("<field>: <message>")``; the config loader (``infra.config``)
prefixes the section path (``dedup.fuzzy.<field>: ...``).  ``band_layout()`` is the one place that turns the settings into
the LSH (bands, rows) the pipeline uses.
"""
from __future__ import annotations

from dataclasses import dataclass

SHINGLE_KINDS = ("word", "char")
VERIFY_MODES = ("exact", "estimated", "none")
SCHEMES = ("affine32", "legacy")


@dataclass
class FuzzyDedupConfig:
    enabled: bool = True
    """Run near-duplicate detection (exact dedup is ``dedup.exact``)."""
    num_perm: int = 100
    """MinHash permutations (NVIDIA's tool: 100)."""
    threshold: float = 0.8
    """Jaccard similarity of two documents' shingle sets at or above which they are near
    duplicates (reported second-hand for MT-NLG)."""
    ngram: int = 5
    """Shingle size (n-gram length)."""
    shingle: str = "word"
    """``word`` n-grams (default) or ``char`` n-grams (NVIDIA's tool: character 5-grams)."""
    min_shingles: int = 10
    """Documents with fewer distinct shingles are not fuzzy-deduplicated (only exact): their
    MinHash is too noisy to say anything."""
    bands: int | None = None
    """LSH bands; set together with ``rows`` (bands * rows <= num_perm) to fix the layout.
    Default: derived from threshold and num_perm by minimising weighted false positives and
    false negatives (see ``false_negative_weight``), as datasketch and BigCode do."""
    rows: int | None = None
    """Signature values per band; see ``bands``."""
    false_negative_weight: float | None = None
    """Weight of missed pairs against false candidates (1 - this) when bands/rows are derived.
    Default: 0.95 when candidates are verified (a false candidate then costs one comparison,
    a missed pair is a duplicate left in the corpus: the layout then finds >= 95% of pairs AT
    the threshold), 0.5 (datasketch's weighting) with ``verify: none``."""
    seed: int = 1
    """Seed of the MinHash permutations (datasketch's convention)."""
    scheme: str = "affine32"
    """MinHash permutation scheme: ``affine32`` (datasketch >= 2.0 default) or ``legacy``."""
    verify: str = "exact"
    """How a candidate pair (a shared LSH band) becomes an edge: ``exact`` = the Jaccard
    similarity of the two shingle-hash sets reaches ``threshold`` (recorded in the dedup rows'
    ``similarity``); ``estimated`` = the fraction of equal MinHash values does (cheaper, but its
    noise rejects about half of the pairs whose true Jaccard sits just above the threshold);
    ``none`` = every candidate is an edge (no similarity recorded)."""
    max_bucket: int = 1000
    """LSH buckets with more members are oversized (boilerplate): streamed out again under
    ``bucket_shards`` salted sub-keys instead of held on one worker, and reported."""
    bucket_shards: int = 64
    """Salted sub-buckets per oversized bucket."""
    max_rounds: int = 12
    """Upper bound on large-star/small-star rounds of connected components; converged
    components stop early, and the job fails if any has not converged by then (raise it for
    graphs with very long duplicate chains)."""

    def __post_init__(self) -> None:
        """Raise ``ValueError("<field>: <message>")`` for the first bad setting."""
        for name in ("num_perm", "ngram", "min_shingles", "max_bucket", "bucket_shards", "max_rounds"):
            _positive(name, getattr(self, name))
        if not isinstance(self.seed, int) or isinstance(self.seed, bool) or self.seed < 0:
            raise ValueError(f"seed: must be an integer >= 0, got {self.seed!r}")
        if isinstance(self.threshold, bool) or not isinstance(self.threshold, (int, float)) \
                or not 0.0 < self.threshold < 1.0:
            raise ValueError(f"threshold: must be in (0, 1), got {self.threshold!r}")
        _one_of("shingle", self.shingle, SHINGLE_KINDS)
        _one_of("verify", self.verify, VERIFY_MODES)
        _one_of("scheme", self.scheme, SCHEMES)
        if (self.bands is None) != (self.rows is None):
            raise ValueError("bands/rows: set both or neither (neither: derived from threshold and num_perm)")
        if self.bands is not None:
            _positive("bands", self.bands)
            _positive("rows", self.rows)
            if self.bands * self.rows > self.num_perm:
                raise ValueError(f"bands: bands * rows = {self.bands * self.rows} exceeds "
                                 f"num_perm = {self.num_perm}")
        elif self.num_perm < 2:
            raise ValueError(f"num_perm: must be >= 2 to derive bands/rows, got {self.num_perm}")
        w = self.false_negative_weight
        if w is not None and (isinstance(w, bool) or not isinstance(w, (int, float)) or not 0.0 < w < 1.0):
            raise ValueError(f"false_negative_weight: must be in (0, 1), got {w!r}")

    def lsh_weights(self) -> tuple[float, float]:
        """(false positive weight, false negative weight) of the derived band layout."""
        w = self.false_negative_weight
        if w is None:
            w = 0.5 if self.verify == "none" else 0.95
        return 1.0 - w, w

    def band_layout(self) -> tuple[int, int]:
        """(bands, rows): the configured ones, or the optimum for threshold, num_perm and the
        weights (``curation.lsh.lsh_params``)."""
        if self.bands is not None:
            return self.bands, self.rows
        from curation.lsh import lsh_params

        return lsh_params(self.threshold, self.num_perm, self.lsh_weights())


def record_parameters(cfg: FuzzyDedupConfig) -> dict:
    """Everything that makes two runs' ``DedupRecord`` s comparable (shingling, MinHash, band
    layout, hash functions): record it with persisted records and compare it before reusing
    them; any difference means the band keys, signatures or shingle hashes do not match."""
    bands, rows = cfg.band_layout()
    return {"shingle": cfg.shingle, "ngram": cfg.ngram, "min_shingles": cfg.min_shingles,
            "num_perm": cfg.num_perm, "seed": cfg.seed,
            "scheme": cfg.scheme, "bands": bands, "rows": rows,
            "shingle_hash": "poly64-fmix64-32", "band_digest": "xxh3_64",
            "text_hash": "xxh3_128(canonical_text)"}


def _positive(name: str, value) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"{name}: must be a positive integer, got {value!r}")


def _one_of(name: str, value, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ValueError(f"{name}: one of {', '.join(map(repr, allowed))}, got {value!r}")
