"""``curate --dedup-against RUN_OLD`` on the driver, before any work: each older run's dedup
index (``pipelines.dedup.index``) is checked to be complete, made with this run's parameters and
unmodified (every part matches its recorded sha256); the dedup stage then reads the parts on
the workers.
"""
from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass

from curation.fuzzy_config import FuzzyDedupConfig
from infra.hashing import bytes_sha256
from pipelines.dedup.index import INDEX_DIR, PARAMS, DedupIndexError, index_parameters
from infra.storage.files import file_exists, join, read_bytes

log = logging.getLogger("mtnlg.curate")


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
    from infra.storage.files import is_remote

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
