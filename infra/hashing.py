"""Hashes used across layers: file checksums (sha256) and a stable 64-bit text hash."""
from __future__ import annotations

import hashlib

import xxhash


def file_sha256(path: str) -> str:
    """Hex sha256 of a file, streamed (``hashlib.file_digest``).  ``path`` may be a local path
    or a Beam FileSystems URL (``s3://``, ``gs://``, ...), read as stored (no decompression)."""
    if "://" not in path:
        with open(path, "rb") as f:
            return hashlib.file_digest(f, "sha256").hexdigest()
    from apache_beam.io.filesystem import CompressionTypes
    from apache_beam.io.filesystems import FileSystems

    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def bytes_sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def stable_hash(text: str) -> int:
    """A 64-bit hash that is the same in every process and run (Python's ``hash`` is not)."""
    return xxhash.xxh3_64_intdigest(text.encode("utf-8"))
