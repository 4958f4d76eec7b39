"""Verification stamps: a shard's bytes are hashed once, where they arrive, not at every launch.

``mtnlg stage`` (after copying a shard and checking it against curate's sha256) and ``mtnlg
blend`` (after checking a shard against ``stats/shards.parquet``) write a stamp next to the
shard, ``PREFIX.stamp.json``::

    {"format": 1, "files": {"bin": {"size", "mtime_ns", "ctime_ns", "inode", "sha256"},
                            "idx": {...}}}

A later check (``verify_shard``, called by ``load_manifest`` at every training launch) trusts
the recorded sha256 of a file whose size, mtime, ctime and inode are still what the stamp says,
and hashes only the files whose stamp is missing or no longer matches (then rewrites the stamp).
ctime cannot be set from user space (``touch`` and ``os.utime`` change mtime, and set ctime to
now), so a rewrite that restores size and mtime is still seen. A stamp is only as trustworthy
as the folder it sits in: whoever can rewrite a shard can rewrite its stamp, as with the
manifest itself; ``--verify-shards full`` hashes everything regardless.

A stamp describes one file system's view of a file (the inode), so ``mtnlg stage`` never copies
stamps from the remote run: it writes its own. A folder that cannot be written (a read-only
mount) gets no stamps; its shards are then hashed at every check, as before.
"""

from __future__ import annotations

import json
import logging
import os

from infra.hashing import file_sha256

log = logging.getLogger(__name__)

STAMP_SUFFIX = ".stamp.json"
STAMP_FORMAT = 1
KINDS = ("bin", "idx")


def stamp_path(prefix: str) -> str:
    return prefix + STAMP_SUFFIX


def file_identity(path: str) -> dict[str, int]:
    """What changes when a file's bytes are replaced or rewritten in place."""
    st = os.stat(path)
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "ctime_ns": st.st_ctime_ns,
            "inode": st.st_ino}


def read_stamp(prefix: str) -> dict[str, dict]:
    """The stamp's per-file records ({} when there is none or it is unreadable)."""
    try:
        with open(stamp_path(prefix), encoding="utf-8") as f:
            doc = json.load(f)
        files = doc["files"]
        if doc.get("format") != STAMP_FORMAT or not isinstance(files, dict):
            return {}
        return files
    except (OSError, ValueError, KeyError, TypeError):
        return {}


def stamped_sha256(prefix: str, kind: str, stamp: dict[str, dict] | None = None) -> str | None:
    """The verified sha256 of ``PREFIX.<kind>`` if its stamp still matches the file, else None."""
    record = (read_stamp(prefix) if stamp is None else stamp).get(kind)
    if not isinstance(record, dict) or "sha256" not in record:
        return None
    try:
        now = file_identity(f"{prefix}.{kind}")
    except OSError:
        return None
    return record["sha256"] if all(record.get(k) == v for k, v in now.items()) else None


def write_stamp(prefix: str, records: dict[str, dict]) -> bool:
    """Record ``{kind: {**file_identity, "sha256"}}`` (atomically); False when the folder is
    not writable (then the shard is simply hashed again next time)."""
    path = stamp_path(prefix)
    tmp = f"{path}.tmp-{os.getpid()}"
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump({"format": STAMP_FORMAT, "files": records}, f, sort_keys=True)
        os.replace(tmp, path)
        return True
    except OSError as e:
        log.debug("cannot write stamp %s: %s", path, e)
        try:
            os.remove(tmp)
        except OSError:
            pass
        return False


def stamp_verified(prefix: str, sha256s: dict[str, str],
                   identities: dict[str, dict] | None = None) -> bool:
    """Stamp a shard whose files were just verified to hold ``sha256s`` ({"bin": ..., "idx":
    ...}). ``identities`` are the files' ``file_identity`` taken before they were hashed; when
    a file changed since (a concurrent writer), nothing is stamped."""
    records = {}
    for kind, sha in sha256s.items():
        now = file_identity(f"{prefix}.{kind}")
        if identities is not None and identities.get(kind) != now:
            return False
        records[kind] = {**now, "sha256": sha}
    return write_stamp(prefix, records)


def verify_shard(prefix: str, trust_stamps: bool = True) -> tuple[dict[str, str], int]:
    """The sha256 of the shard's two files and how many of them had to be hashed: a file whose
    stamp matches (with ``trust_stamps``) is not read; the others are hashed and, when they did
    not change while being read, stamped. The caller compares the result with what it expects."""
    stamp = read_stamp(prefix) if trust_stamps else {}
    shas, before, hashed = {}, {}, 0
    for kind in KINDS:
        sha = stamped_sha256(prefix, kind, stamp) if trust_stamps else None
        if sha is None:
            before[kind] = file_identity(f"{prefix}.{kind}")
            sha = file_sha256(f"{prefix}.{kind}")
            hashed += 1
        shas[kind] = sha
    if hashed:
        stamp_verified(prefix, shas, {k: before.get(k, file_identity(f"{prefix}.{k}"))
                                      for k in KINDS})
    return shas, hashed
