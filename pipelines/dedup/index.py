"""A run's persisted dedup index (``RUN/dedup_index/``): its format, written by the dedup stage.

The dedup stage writes one index row (``curation.dedup_records.index_row``) per document that
entered fuzzy dedup, i.e. every survivor of exact dedup (every document, with exact dedup off):
its id and source as this run recorded them, its keep rank, text hash, LSH band keys, MinHash
signature and (``verify: exact``) shingle-hash set, plus what this run's dedup decided about it
(one part per dedup stage part, written where the decisions meet the part, ``apply``).
No text is stored: a later run matches against the index without reading the old documents.

  dedup_index/part-<token>.parquet   INDEX_SCHEMA rows, written where the records are computed
  dedup_index/params.json            parameters (shingling, MinHash, bands, rows, seed, hash
                                     schemes) and every part's name, rows and sha256

Why exact survivors, not only the documents the old run kept: in a joint run over old and new
documents, fuzzy dedup runs on ALL exact survivors, so a new document near an old one that the
old run removed as a near duplicate is still in a component with an old document (and removed).
With those rows, old + (new deduped against it) keeps exactly what one joint run keeps when the
old documents rank first (docs/run-layout.md says when that holds).

Who uses it: ``curate --dedup-against RUN_OLD`` checks an older run's index before any work
(``pipelines.driver.dedup_against``); the dedup stage reads each part on a worker
(``stage.OlderFeaturesFn``: ``read_index_part`` re-checks its sha256 on the bytes it parses) and
its documents join exact and fuzzy dedup as members that always win and are never removed;
``mtnlg takedown`` removes rows (``pipelines.runfolder.takedown_files.remove_from_index``).
"""
from __future__ import annotations

import io
import json

import apache_beam as beam
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from curation.fuzzy_config import FuzzyDedupConfig, record_parameters
from infra.hashing import bytes_sha256
from pipelines.plumbing.sinks import Gather
from infra.storage.files import join, read_bytes, write_bytes

INDEX_DIR = "dedup_index"
PARAMS = "params.json"
INDEX_FORMAT = 1
TEXT_HASH = "xxh3_128(canonical_text)"

INDEX_SCHEMA = pa.schema([
    ("id", pa.string()), ("source", pa.string()), ("rank", pa.string()),
    ("text_hash", pa.binary()), ("band_keys", pa.list_(pa.binary())),
    ("signature", pa.binary()), ("shingles", pa.binary()),
    ("dedup_kept", pa.bool_()), ("kept_id", pa.string()), ("kept_source", pa.string()),
])


class DedupIndexError(ValueError):
    """An older run's index cannot be used (missing, mismatched, modified)."""


def index_parameters(exact: bool, fuzzy: FuzzyDedupConfig | None) -> dict:
    """What makes two runs' index rows comparable, as recorded in params.json."""
    p = {"format": INDEX_FORMAT, "text_hash": TEXT_HASH, "exact": bool(exact),
         "fuzzy": fuzzy is not None and fuzzy.enabled}
    if p["fuzzy"]:
        p.update(record_parameters(fuzzy), verify=fuzzy.verify)
    return p


def _with_sha256(desc: dict) -> dict:
    return {**desc, "sha256": bytes_sha256(read_bytes(desc["url"]))}


class WriteIndexParams(beam.PTransform):
    """Index part descriptors (``sinks`` writer descriptors) -> ``dedup_index/params.json``:
    the parameters and every part's name, rows and sha256."""

    def __init__(self, out_dir: str, params: dict, label: str | None = None) -> None:
        super().__init__(label)
        self.out_dir, self.params = out_dir, params

    def expand(self, descriptors):
        path, params = join(self.out_dir, INDEX_DIR, PARAMS), self.params
        prefix = f"_w/{INDEX_DIR}/"

        def write_params(descs: list[dict]) -> int:
            parts = sorted(({"name": d["path"][len(prefix):], "rows": d["rows"], "sha256": d["sha256"]}
                            for d in descs), key=lambda p: p["name"])
            write_bytes(path, params_bytes({**params, "documents": sum(p["rows"] for p in parts),
                                             "parts": parts}))
            return len(parts)

        return (descriptors
                | "Checksums" >> beam.Map(_with_sha256)
                | "AllParts" >> Gather()
                | "WriteParams" >> beam.Map(write_params))


def params_bytes(params: dict) -> bytes:
    return (json.dumps(params, indent=1, sort_keys=True) + "\n").encode()


def read_index_part(url: str, sha256: str) -> pa.Table:
    data = read_bytes(url)
    found = bytes_sha256(data)
    if found != sha256:
        raise DedupIndexError(f"dedup index part {url} does not match its recorded sha256 "
                          f"({sha256[:12]}..., found {found[:12]}...)")
    return pq.read_table(io.BytesIO(data))


REDIRECTS = "redirects"
"""Older runs' removals as survivor links (``decide.FollowStepFn``):
``((True, id, source), (kept_id, kept_source, ()))`` for every older document its own run
removed as a near duplicate (``redirects``)."""


def redirects(table: pa.Table) -> list[tuple]:
    """The ``REDIRECTS`` links of an index part's rows (``dedup_kept`` false, ``kept_id`` set)."""
    gone = table.filter(pc.and_(pc.invert(table.column("dedup_kept")), pc.is_valid(table.column("kept_id"))))
    return [((True, i, s), (k, ks, ())) for i, s, k, ks in zip(
        *(gone.column(c).to_pylist() for c in ("id", "source", "kept_id", "kept_source")))]
