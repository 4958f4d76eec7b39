"""Training data and training of the quality classifier (``mtnlg quality train``).

A training config (``data_manifests/quality/<name>.yaml``) names positive inputs (curated text:
OpenWebText2, Wikipedia, books, ...) and negative inputs (raw, unfiltered Common Crawl), read
with the curation readers.  The labelled set is normalized (ftfy, as the curate job does before
scoring), deduplicated, balanced by down-sampling the larger class, and split into train and
held-out parts; fastText is trained on the train part with the config's hyper-parameters
(deterministic: fixed seed, one thread by default).  Outputs, in one folder:

    model.bin            the fastText model (labels __label__hq / __label__lq)
    heldout.jsonl.gz     the held-out split ({id, source, label, text}) for `mtnlg quality eval`
    model_card.json      data used, sizes, hyper-parameters, metrics, sha256 of the model
    MODEL_CARD.md        the same for people
"""
from __future__ import annotations

import dataclasses
import glob
import gzip
import json
import os
import random
import tempfile
from dataclasses import dataclass, field
from typing import Any, Iterator

import xxhash

from curation.normalize import normalize_text
from curation.quality import HQ_LABEL, LQ_LABEL, preprocess
from curation.sources import SOURCE_BY_SLUG
from infra.config import ConfigError, load, loader_field
from infra.hashing import file_sha256

TRAIN_READERS = ("pile", "warc", "realnews", "cc_stories", "parquet")
WARC_EXTRACTORS = ("raw", "justext", "resiliparse")


@dataclass
class TrainInput:
    """One group of files of one class."""

    reader: str
    """``pile``, ``warc``, ``realnews``, ``cc_stories`` or ``parquet`` (a RUN's
    ``documents/<source>/*.parquet``: columns ``id, source, text``)."""
    paths: list[str]
    """Globs, relative to ``input_root`` unless absolute."""
    source: str | None = None
    """Source slug for ``warc``, ``realnews`` and ``cc_stories``."""
    sources: list[str] | None = None
    """Keep only documents of these slugs (e.g. the curated Pile subsets); None keeps all."""
    extractor: str = "raw"
    """``warc`` text: ``raw`` (all text of the page, boilerplate included: the unfiltered
    Common Crawl text GPT-3 used as negatives), ``justext`` or ``resiliparse`` (main text)."""

    def __post_init__(self) -> None:
        if self.reader not in TRAIN_READERS:
            raise ValueError(f"reader: {self.reader!r} is not one of {TRAIN_READERS}")
        if not self.paths:
            raise ValueError("paths: a non-empty list of globs is required")
        if self.reader in ("warc", "realnews", "cc_stories") and not self.source:
            raise ValueError(f"source: required for reader {self.reader!r}")
        if self.reader == "warc" and self.extractor not in WARC_EXTRACTORS:
            raise ValueError(f"extractor: {self.extractor!r} is not one of {WARC_EXTRACTORS}")
        for setting, slugs in (("source", [self.source] if self.source else []),
                               ("sources", self.sources or [])):
            for slug in slugs:
                if slug not in SOURCE_BY_SLUG:
                    raise ValueError(f"{setting}: unknown source {slug!r}")


@dataclass
class FastTextParams:
    """``fasttext.train_supervised`` hyper-parameters (names as fastText spells them)."""

    lr: float = 0.5
    epoch: int = 25
    dim: int = 16
    wordNgrams: int = 2
    minCount: int = 2
    minn: int = 0
    """Shortest character n-gram (0: none). Character n-grams let symbol soup and unseen
    spellings score like the strings seen in training."""
    maxn: int = 0
    bucket: int = 100_000
    """Hash buckets of word n-grams; the model file is about (vocab + bucket) * dim * 4 bytes."""
    loss: str = "softmax"
    thread: int = 1
    """One thread makes training bit-for-bit reproducible (fastText's Hogwild is not)."""
    seed: int = 0


@dataclass
class TrainConfig:
    positives: list[TrainInput]
    negatives: list[TrainInput]
    name: str = "quality"
    input_root: str = ""
    """Root of relative input globs; ``--input-root`` overrides it; default: the config
    file's folder."""
    holdout_fraction: float = 0.2
    """Share of each class held out for evaluation (never trained on)."""
    balance: bool = True
    """Down-sample the larger class to the size of the smaller one."""
    max_per_class: int | None = None
    """Cap on examples per class after balancing (None: no cap)."""
    min_words: int = 5
    """Examples with fewer words carry no signal and are dropped (counted in the card)."""
    max_chars: int = 20_000
    """Characters of each text used (same as ``quality.max_chars`` at scoring time)."""
    seed: int = 0
    """Seed of balancing, the split and the example order."""
    fasttext: FastTextParams = field(default_factory=FastTextParams)
    config_path: str | None = loader_field()

    def __post_init__(self) -> None:
        if not 0.0 < self.holdout_fraction < 1.0:
            raise ValueError(f"holdout_fraction: must be in (0, 1), got {self.holdout_fraction!r}")
        for cls in ("positives", "negatives"):
            if not getattr(self, cls):
                raise ValueError(f"{cls}: at least one input is required")
        if self.max_per_class is not None and self.max_per_class < 2:
            raise ValueError(f"max_per_class: must be >= 2, got {self.max_per_class!r}")


def load_train_config(path: str, input_root: str | None = None) -> TrainConfig:
    """Read a training config YAML (``infra.config``: strict YAML, typed, ``ConfigError``
    naming the setting); relative input globs resolve against ``input_root``
    (``--input-root``, else the config's ``input_root``, else the config file's folder), and
    each must match a file."""
    cfg = load(TrainConfig, path, prebuilt={"config_path": os.path.abspath(path)})
    base = os.path.dirname(os.path.abspath(path))
    cfg.input_root = os.path.abspath(os.path.join(base, input_root or cfg.input_root or "."))
    for cls in ("positives", "negatives"):
        for i, s in enumerate(getattr(cfg, cls)):
            s.paths = [p if os.path.isabs(p) or "://" in p else os.path.join(cfg.input_root, p)
                       for p in s.paths]
            for j, p in enumerate(s.paths):
                if not glob.glob(p):
                    raise ConfigError(f"{cls}[{i}].paths[{j}]: {p!r} matches no file "
                                      f"(input_root={cfg.input_root!r})")
    return cfg


# -- reading ----------------------------------------------------------------------------------
def _raw_warc(fileobj, file_name: str, source: str) -> Iterator[tuple[str, str, str]]:
    """(id, source, text) of every HTML response, all visible text (no boilerplate removal)."""
    from resiliparse.extract.html2text import extract_plain_text
    from resiliparse.parse.html import HTMLTree
    from warcio.archiveiterator import ArchiveIterator

    from curation.readers import base_name, decode_html
    from curation.readers.http_body import http_body

    try:
        for k, rec in enumerate(ArchiveIterator(fileobj)):
            if rec.rec_type != "response" or rec.http_headers is None:
                continue
            if rec.http_headers.get_statuscode() != "200":
                continue
            ctype = rec.http_headers.get_header("Content-Type") or ""
            html = decode_html(http_body(rec).read(), ctype)  # br too (warcio's fails on it)
            text = extract_plain_text(HTMLTree.parse(html), main_content=False)
            yield f"{source}/{base_name(file_name)}#{k}", source, text
    except Exception:  # a truncated last record ends the file; training needs no dead letters
        return


def _records(spec: TrainInput, path: str) -> Iterator[tuple[str, str, str]]:
    from curation import readers
    from curation.document import Document
    from curation.sources import PILE_SUBSET_TO_SOURCE

    if spec.reader == "parquet":
        import pyarrow.parquet as pq

        for row in pq.read_table(path, columns=["id", "source", "text"]).to_pylist():
            yield row["id"], row["source"], row["text"]
        return
    with open(path, "rb") as f:
        if spec.reader == "warc" and spec.extractor == "raw":
            yield from _raw_warc(f, path, spec.source)
            return
        if spec.reader == "pile":
            recs = readers.read_pile(f, path, PILE_SUBSET_TO_SOURCE)
        elif spec.reader == "warc":
            recs = readers.read_warc(f, path, spec.source, spec.extractor)
        else:
            recs = readers.reader_for(spec.reader)(f, path, spec.source)
        for r in recs:  # removals and dead letters are not training data
            if isinstance(r, Document):
                yield r.id, r.source, r.text


def read_inputs(specs: list[TrainInput]) -> Iterator[tuple[str, str, str]]:
    """(id, source, text) of every document of the specs, files in sorted order."""
    for spec in specs:
        for path in sorted({f for p in spec.paths for f in glob.glob(p)}):
            for doc_id, source, text in _records(spec, path):
                if spec.sources is None or source in spec.sources:
                    yield doc_id, source, text


# -- the labelled set -------------------------------------------------------------------------
@dataclass
class Example:
    id: str
    source: str
    label: int  # 1: high quality (hq), 0: low quality (lq)
    text: str   # preprocessed: one lowercased line


def build_examples(cfg: TrainConfig) -> tuple[dict[str, list[Example]], dict[str, Any]]:
    """``({"train": [...], "heldout": [...]}, data card)``: normalized, deduplicated, balanced,
    split. A text seen in both classes is dropped from both (its label is contradictory)."""
    stats: dict[str, Any] = {"read": {"hq": 0, "lq": 0}, "too_short": {"hq": 0, "lq": 0},
                             "duplicates": {"hq": 0, "lq": 0}, "conflicting": 0, "sources": {}}
    by_class: dict[int, dict[int, Example]] = {1: {}, 0: {}}
    for label, specs in ((1, cfg.positives), (0, cfg.negatives)):
        name = "hq" if label else "lq"
        for doc_id, source, text in read_inputs(specs):
            stats["read"][name] += 1
            line = preprocess(normalize_text(text), cfg.max_chars)
            if len(line.split()) < cfg.min_words:
                stats["too_short"][name] += 1
                continue
            key = xxhash.xxh3_64_intdigest(line.encode("utf-8"))
            if key in by_class[label]:
                stats["duplicates"][name] += 1
                continue
            by_class[label][key] = Example(doc_id, source, label, line)
    for key in set(by_class[1]) & set(by_class[0]):
        del by_class[1][key], by_class[0][key]
        stats["conflicting"] += 1
    rng = random.Random(cfg.seed)
    pools = {lab: sorted(ex.values(), key=lambda e: e.id) for lab, ex in by_class.items()}
    for lab, pool in pools.items():
        rng.shuffle(pool)
        if not pool:
            raise ConfigError(f"{'positives' if lab else 'negatives'}: no usable documents")
    n = min(len(p) for p in pools.values()) if cfg.balance else None
    split: dict[str, list[Example]] = {"train": [], "heldout": []}
    for lab, pool in pools.items():
        pool = pool[:n] if n else pool
        pool = pool[:cfg.max_per_class] if cfg.max_per_class else pool
        k = max(1, round(len(pool) * cfg.holdout_fraction))
        split["heldout"] += pool[:k]
        split["train"] += pool[k:]
    for part in split.values():
        part.sort(key=lambda e: e.id)
        rng.shuffle(part)  # mixed classes: SGD sees no long runs of one label
        for e in part:
            key = f"{'hq' if e.label else 'lq'}/{e.source}"
            stats["sources"][key] = stats["sources"].get(key, 0) + 1
    stats["sources"] = dict(sorted(stats["sources"].items()))
    stats["sizes"] = {p: {"hq": sum(e.label for e in ex), "lq": sum(1 - e.label for e in ex)}
                      for p, ex in split.items()}
    return split, stats


def write_heldout(path: str, examples: list[Example]) -> None:
    with gzip.GzipFile(path, "wb", mtime=0) as f:  # mtime 0: same input, same bytes
        for e in examples:
            f.write((json.dumps(dataclasses.asdict(e), ensure_ascii=False) + "\n").encode())


def read_heldout(path: str) -> list[Example]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [Example(**json.loads(line)) for line in f if line.strip()]


def train_model(examples: list[Example], params: FastTextParams, model_path: str) -> None:
    """Train fastText on the examples and save the model to ``model_path``."""
    import fasttext

    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "train.txt")
        with open(data, "w", encoding="utf-8") as f:
            for e in examples:
                f.write(f"{HQ_LABEL if e.label else LQ_LABEL} {e.text}\n")
        model = fasttext.train_supervised(input=data, verbose=0, **dataclasses.asdict(params))
    model.save_model(model_path)


def model_card(cfg: TrainConfig, data: dict, metrics: dict, model_path: str) -> dict:
    return {
        "format_version": 1, "name": cfg.name, "config_path": cfg.config_path,
        "model": {"path": os.path.basename(model_path), "sha256": file_sha256(model_path),
                  "bytes": os.path.getsize(model_path), "labels": [HQ_LABEL, LQ_LABEL],
                  "score": "P(__label__hq)"},
        "data": {"positives": [dataclasses.asdict(s) for s in cfg.positives],
                 "negatives": [dataclasses.asdict(s) for s in cfg.negatives],
                 "holdout_fraction": cfg.holdout_fraction, "balance": cfg.balance,
                 "max_per_class": cfg.max_per_class, "min_words": cfg.min_words,
                 "max_chars": cfg.max_chars, "seed": cfg.seed, **data},
        "fasttext": dataclasses.asdict(cfg.fasttext),
        "metrics": {"heldout": metrics},
    }
