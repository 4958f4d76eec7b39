"""What dedup needs of a document, computed per document and without a shuffle.

Dedup never moves document text: a ``DedupRecord`` holds the few hundred bytes both dedup
stages work on, and each stage shuffles only the part it needs:

- ``node``: the keep-rule sort key plus the source, ``keep_rank(doc) + (source,)`` (six values:
  four rank values, the id, the source).  Ordering nodes orders documents by the keep rule, so
  the smallest node of a duplicate group or component is the survivor; ``node_id`` /
  ``node_source`` read it back.  The file-backed dedup of the curate job appends where the
  document is, ``(part key, row)`` (``with_ref``): ids are unique, so the order is unchanged.
- ``text_hash``: 16-byte xxh3-128 digest of the canonical text (exact dedup's key;
  ``.hex()`` is ``curation.exact_dedup.text_hash``).
- ``bands``: the LSH band keys ``(band, 8-byte digest)`` of the MinHash signature, None when
  the document is not fuzzy-deduplicated (too few shingles, or fuzzy dedup off).
- ``signature``: the MinHash signature (uint32 little-endian bytes, ``num_perm`` x 4).
- ``shingles``: the sorted distinct 32-bit shingle hashes (``curation.lsh.hash_set``), only
  when candidates are verified by exact Jaccard.

Records are plain values (bytes, tuples), so they persist as table columns and encode compactly
in a Beam shuffle: ``index_row`` / ``record_from_row`` are that table form (``RUN/dedup_index/``).

Documents of OLDER runs (``curate --dedup-against``) join a run's dedup as records read from
those runs' indices.  Their nodes are ``older_node`` s: the keep rank as the older run recorded
it, with its priority component offset by ``OLDER`` so that every older document ranks ahead of
every document of the run (it is never removed, and wins every group it is in), while older
documents keep their own order among themselves.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from curation.document import Document
from curation.exact_dedup import keep_rank, text_digest
from curation.fuzzy_config import FuzzyDedupConfig


@dataclass(frozen=True)
class DedupRecord:
    node: tuple
    text_hash: bytes
    bands: tuple[tuple[int, bytes], ...] | None = None
    signature: bytes | None = None
    shingles: bytes | None = None

    @property
    def id(self) -> str:
        return node_id(self.node)

    @property
    def source(self) -> str:
        return node_source(self.node)


def dedup_node(doc: Document, priority: dict[str, int] | None = None) -> tuple:
    """``keep_rank(doc, priority) + (doc.source,)``: the smallest node is the one kept."""
    return keep_rank(doc, priority) + (doc.source,)


RANK_FIELDS = 4
"""Values of a node before its id: source priority, unscored flag, -quality, -length."""


def node_id(node: tuple) -> str:
    return node[RANK_FIELDS]


def node_source(node: tuple) -> str:
    return node[RANK_FIELDS + 1]


def node_ref(node: tuple) -> tuple[int, int]:
    """``(part key, row)`` of a node made ``with_ref``."""
    return node[RANK_FIELDS + 2], node[RANK_FIELDS + 3]


def with_ref(node: tuple, part_key: int, row: int) -> tuple:
    return (*node[:RANK_FIELDS + 2], part_key, row)


OLDER = 1 << 40
"""Offset subtracted from an older run's node priority (keep-rank priorities are small ints)."""


def is_older(node: tuple) -> bool:
    """Whether ``node`` is an older run's document (``older_node``)."""
    return node[0] <= -(OLDER // 2)


def older_node(rank: list, doc_id: str, source: str) -> tuple:
    """An older run's node from its recorded rank (``index_row``'s ``rank``): ranks ahead of
    every node of this run, in the older run's own order among older nodes."""
    return (rank[0] - OLDER, *rank[1:], doc_id, source)


def index_row(record: DedupRecord) -> dict:
    """A record as a ``RUN/dedup_index/`` row (``pipelines.dedup.index.INDEX_SCHEMA``)."""
    bands = record.bands
    return {"id": record.id, "source": record.source,
            "rank": json.dumps(list(record.node[:RANK_FIELDS])), "text_hash": record.text_hash,
            "band_keys": None if bands is None else [k for _, k in bands],
            "signature": record.signature, "shingles": record.shingles}


def record_from_row(row: dict) -> DedupRecord:
    """An index row as an OLDER record (``older_node``)."""
    keys = row.get("band_keys")
    bands = None if keys is None else tuple(enumerate(keys))  # band i's key is keys[i]
    node = older_node(json.loads(row["rank"]), row["id"], row["source"])
    return DedupRecord(node, row["text_hash"], bands, row.get("signature"), row.get("shingles"))


def dedup_records(docs: Sequence[Document], fuzzy: FuzzyDedupConfig | None,
                  priority: dict[str, int] | None = None) -> list[DedupRecord]:
    """One record per document (a batch: the MinHash work is vectorised over it).  ``fuzzy``
    None: exact-dedup fields only."""
    from curation.lsh import band_keys
    from curation.minhash import text_features

    nodes = [dedup_node(d, priority) for d in docs]
    hashes = [text_digest(d.text) for d in docs]
    if fuzzy is None or not fuzzy.enabled:
        return [DedupRecord(n, h) for n, h in zip(nodes, hashes)]
    bands, rows = fuzzy.band_layout()
    feats = text_features([d.text for d in docs], fuzzy.ngram, fuzzy.shingle, fuzzy.num_perm,
                          fuzzy.seed, fuzzy.scheme, fuzzy.min_shingles,
                          with_sets=fuzzy.verify == "exact")
    out = []
    for node, h, f in zip(nodes, hashes, feats):
        if f is None:
            out.append(DedupRecord(node, h))
            continue
        sig = f[0].astype("<u4")  # legacy-scheme values are < 2^32 too
        out.append(DedupRecord(node, h, tuple(band_keys(sig, bands, rows)), sig.tobytes(),
                               None if f[1] is None else f[1].astype("<u4").tobytes()))
    return out


def verification_payload(record: DedupRecord, verify: str) -> bytes | None:
    """What a candidate pair's verification compares: the shingle-hash set (``exact``) or the
    signature (``estimated``)."""
    return record.shingles if verify == "exact" else record.signature


def similarity(a: bytes, b: bytes, verify: str) -> float:
    """Exact Jaccard of two shingle-hash sets, or the estimate from two signatures."""
    from curation.lsh import estimated_jaccard, hash_jaccard

    x, y = np.frombuffer(a, dtype="<u4"), np.frombuffer(b, dtype="<u4")
    return hash_jaccard(x, y) if verify == "exact" else estimated_jaccard(x, y)
