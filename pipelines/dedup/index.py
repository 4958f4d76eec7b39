"""A run's persisted dedup index (``RUN/dedup_index/``) and dedup against older runs.

The dedup stage writes one index row (``curation.dedup_records.index_row``) per document that
entered fuzzy dedup, i.e. every survivor of exact dedup (every document, with exact dedup off):
its id and source as this run recorded them, its keep rank, text hash, LSH band keys, MinHash
signature and (``verify: exact``) shingle-hash set, plus what this run's dedup decided about it
(one part per dedup stage part, written where the decisions meet the part).
No text is stored: a later run matches against the index without reading the old documents.

  dedup_index/part-<token>.parquet   INDEX_SCHEMA rows, written where the records are computed
  dedup_index/params.json            parameters (shingling, MinHash, bands, rows, seed, hash
                                     schemes) and every part's name, rows and sha256

Why exact survivors, not only the documents the old run kept: in a joint run over old and new
documents, fuzzy dedup runs on ALL exact survivors, so a new document near an old one that the
old run removed as a near duplicate is still in a component with an old document (and removed).
With those rows, old + (new deduped against it) keeps exactly what one joint run keeps when the
old documents rank first (docs/run-layout.md says when that holds).

``curate --dedup-against RUN_OLD``: ``check_against`` verifies before any work that each older
run is complete, has an index whose parameters equal this run's and whose parts match their
checksums; the dedup stage (``pipelines.dedup.stage.OlderFeaturesFn``) reads
each part on a worker (re-checking its sha256 on the bytes it parses, ``read_index_part``) and
its documents join exact and fuzzy dedup as members that always win and are never removed.  ``remove_from_index`` is the takedown's helper.
"""
from __future__ import annotations

import io
import json
import logging
import os
from dataclasses import dataclass

import apache_beam as beam
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from infra.hashing import bytes_sha256
from curation.fuzzy_config import FuzzyDedupConfig, record_parameters
from pipelines.storage.files import (delete_tree, file_exists, join, parquet_bytes, read_bytes,
    write_bytes)
from pipelines.plumbing.sinks import Gather

log = logging.getLogger("mtnlg.curate")

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
            write_bytes(path, _params_bytes({**params, "documents": sum(p["rows"] for p in parts),
                                             "parts": parts}))
            return len(parts)

        return (descriptors
                | "Checksums" >> beam.Map(_with_sha256)
                | "AllParts" >> Gather()
                | "WriteParams" >> beam.Map(write_params))


def _params_bytes(params: dict) -> bytes:
    return (json.dumps(params, indent=1, sort_keys=True) + "\n").encode()


# -- using an older run's index (pre-flight, then on the workers) --------------------------------
@dataclass(frozen=True)
class OlderIndex:
    run: str
    parts: tuple[tuple[str, str], ...]
    """(part URL, sha256) of each part."""
    documents: int
    params_sha256: str


def _load_params(run: str) -> tuple[dict, bytes]:
    if not file_exists(join(run, "run.json")):
        raise DedupIndexError(f"--dedup-against {run}: no finished curate run there (no run.json)")
    path = join(run, INDEX_DIR, PARAMS)
    if not file_exists(path):
        raise DedupIndexError(f"--dedup-against {run}: the run has no dedup index ({INDEX_DIR}/{PARAMS} "
                          "is missing: made before indices existed, or with dedup off); "
                          "curate it again to index it")
    raw = read_bytes(path)
    try:
        return json.loads(raw), raw
    except ValueError as e:
        raise DedupIndexError(f"--dedup-against {run}: {INDEX_DIR}/{PARAMS} is not valid JSON ({e})") from None


def check_against(runs: list[str], output: str, exact: bool, fuzzy: FuzzyDedupConfig | None,
                  verify_checksums: bool = True) -> list[OlderIndex]:
    """Pre-flight for ``--dedup-against``: every run finished, indexed with this run's parameters,
    its parts present and matching their recorded sha256.  Raises ``DedupIndexError`` naming the run
    and the parameter (both values) or the part."""
    mine = index_parameters(exact, fuzzy)
    seen, out = set(), []
    for run in runs:
        key = run.rstrip("/")
        if key == output.rstrip("/"):
            raise DedupIndexError(f"--dedup-against {run}: that is this run's --output")
        if key in seen:
            raise DedupIndexError(f"--dedup-against {run}: given twice")
        seen.add(key)
        params, raw = _load_params(key)
        _compare(key, params, mine)
        parts = []
        for p in params.get("parts", []):
            url = join(key, INDEX_DIR, p["name"])
            if not file_exists(url):
                raise DedupIndexError(f"--dedup-against {run}: index part {INDEX_DIR}/{p['name']} is missing")
            if verify_checksums:
                found = bytes_sha256(read_bytes(url))
                if found != p["sha256"]:
                    raise DedupIndexError(f"--dedup-against {run}: index part {INDEX_DIR}/{p['name']} does not "
                                      f"match its recorded sha256 ({p['sha256'][:12]}..., found "
                                      f"{found[:12]}...): the index was modified; curate the run again")
            parts.append((url, p["sha256"]))
        out.append(OlderIndex(key, tuple(parts), int(params.get("documents", 0)), bytes_sha256(raw)))
    return out


def preflight(cfg, runs: list[str], output: str) -> list[OlderIndex]:
    """``curate --dedup-against`` before any work: ``check_against`` for ``cfg`` (a
    ``CurateConfig``), failures as ``ConfigError``; local paths made absolute."""
    from infra.config import ConfigError
    from pipelines.storage.files import is_remote

    if not runs:
        return []
    if not (cfg.dedup.exact or cfg.dedup.fuzzy.enabled):
        raise ConfigError("--dedup-against: dedup.exact and dedup.fuzzy.enabled are both off: "
                          "there is no dedup stage to match against older runs")
    runs = [r if is_remote(r) else os.path.abspath(r) for r in runs]
    try:
        indices = check_against(runs, output, cfg.dedup.exact,
                                cfg.dedup.fuzzy if cfg.dedup.fuzzy.enabled else None)
    except DedupIndexError as e:
        raise ConfigError(str(e)) from None
    for ix in indices:
        log.warning("dedup against %s: %d indexed documents in %d parts (parameters and checksums "
                    "match)", ix.run, ix.documents, len(ix.parts))
        _warn_if_outranked(cfg, ix.run)
    return indices


def _warn_if_outranked(cfg, run: str) -> None:
    """The anchor (old run + new run against it == one joint run) holds only when the older
    run's sources rank first; say so when this run's ``priority`` ranks one of its own higher."""
    from curation.exact_dedup import outranked_older
    from curation.sources import SOURCE_FAMILY

    try:
        sources = json.loads(read_bytes(join(run, "run.json"))).get("sources") or {}
        older = [s for s, c in sources.items() if c.get("kept")]  # e.g. not the Pile's unused subsets
    except (OSError, ValueError):
        return  # advice only: the job itself fails on an older run it cannot read
    mine = set()
    for i in cfg.inputs:  # a Pile input's sources are its records' subsets: any of the family
        mine |= {i.source} if i.source else {s for s, f in SOURCE_FAMILY.items() if f == "pile"}
    pairs = outranked_older(mine, older, cfg.priority)
    if pairs:
        shown = ", ".join(f"{n} > {o}" for n, o in pairs[:5]) + (" ..." if len(pairs) > 5 else "")
        log.warning("dedup against %s: this run's priority ranks some of its sources above the "
                    "older run's (%s); the older run's documents are kept anyway, so duplicates "
                    "between them leave this run, unlike in one joint run. List the older "
                    "sources first in 'priority' for a joint run's result.", run, shown)


def _compare(run: str, theirs: dict, mine: dict) -> None:
    if theirs.get("format") != mine["format"]:
        raise DedupIndexError(f"--dedup-against {run}: index format {theirs.get('format')!r}, this "
                          f"version reads {mine['format']}")
    if theirs.get("text_hash") != mine["text_hash"]:
        raise DedupIndexError(f"--dedup-against {run}: text_hash: this run {mine['text_hash']!r}, "
                          f"{run} {theirs.get('text_hash')!r}")
    if not mine["fuzzy"]:
        return
    if not theirs.get("fuzzy"):
        raise DedupIndexError(f"--dedup-against {run}: dedup.fuzzy.enabled: this run true, {run} false "
                          "(its index has no MinHash features)")
    diff = [f"{k}: this run {mine[k]!r}, {run} {theirs.get(k)!r}" for k in sorted(mine)
            if k not in ("format", "text_hash", "exact", "fuzzy") and theirs.get(k) != mine[k]]
    if diff:
        raise DedupIndexError(f"--dedup-against {run}: mismatched dedup index parameters ("
                              f"dedup.fuzzy settings must equal the older run's): {'; '.join(diff)}")


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


# -- takedown ------------------------------------------------------------------------------------
def remove_from_index(run_dir: str, ids) -> int:
    """Remove the rows of ``ids`` from ``run_dir``'s dedup index; returns the rows removed.

    Only the parts holding them are rewritten, each under a new name; params.json (new names,
    rows, sha256) is then replaced in one write and the old parts deleted, so an interrupted call
    leaves either the old index or the new one (plus an unlisted orphan), never a mix.  A run
    without an index removes nothing (0)."""
    run_dir = run_dir.rstrip("/")
    path = join(run_dir, INDEX_DIR, PARAMS)
    if not file_exists(path):
        return 0
    params = json.loads(read_bytes(path))
    wanted = set(ids)
    removed, stale, parts = 0, [], []
    for p in params.get("parts", []):
        url = join(run_dir, INDEX_DIR, p["name"])
        table = read_index_part(url, p["sha256"])
        hit = pc.is_in(table.column("id"), value_set=pa.array(sorted(wanted), pa.string()))
        n = pc.sum(hit).as_py() or 0
        if not n:
            parts.append(p)
            continue
        kept = table.filter(pc.invert(hit))
        data = parquet_bytes(kept.to_pylist(), INDEX_SCHEMA)
        sha = bytes_sha256(data)
        name = f"{p['name'].rsplit('.parquet', 1)[0].split('.t-')[0]}.t-{sha[:12]}.parquet"
        write_bytes(join(run_dir, INDEX_DIR, name), data)
        parts.append({"name": name, "rows": kept.num_rows, "sha256": sha})
        stale.append(url)
        removed += n
    if not removed:
        return 0
    params.update(parts=parts, documents=sum(p["rows"] for p in parts),
                  removed_rows=int(params.get("removed_rows", 0)) + removed)
    write_bytes(path, _params_bytes(params))
    for url in stale:
        delete_tree(url)
    return removed
