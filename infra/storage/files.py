"""Files of a run, local paths and URLs alike: every access goes through Beam's FileSystems,
so RUN may be ``gs://...`` or ``s3://...``; local writes are atomic (temporary name + rename)."""
from __future__ import annotations

import contextlib
import errno
import io
import json
import os
import shutil
import uuid

import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems


def is_remote(path: str) -> bool:
    return "://" in path


def join(*parts: str) -> str:
    return FileSystems.join(*parts) if is_remote(parts[0]) else os.path.join(*parts)


def write_bytes(path: str, data: bytes) -> None:
    """Write a whole file atomically: temp name + rename locally, one object upload remotely."""
    if is_remote(path):
        with FileSystems.create(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
            f.write(data)
        return
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    try:
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except OSError as e:
        with contextlib.suppress(OSError):
            os.unlink(tmp)  # a full disk leaves no half-written temporary file behind
        if e.errno == errno.ENOSPC:
            raise OSError(errno.ENOSPC, f"No space left on device: writing {len(data)} bytes", path) from e
        raise


def read_bytes(path: str) -> bytes:
    if not is_remote(path):
        with open(path, "rb") as f:
            return f.read()
    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        return f.read()


def file_exists(path: str) -> bool:
    return os.path.exists(path) if not is_remote(path) else FileSystems.exists(path)


def list_files(root: str) -> list[str]:
    """Every file under ``root`` (recursively); empty when ``root`` does not exist."""
    if not is_remote(root):
        if os.path.isfile(root):
            return [root]
        return sorted(os.path.join(d, f) for d, _, files in os.walk(root) for f in files)
    try:
        result = FileSystems.match([root.rstrip("/") + "/**"])[0]
    except Exception:  # noqa: BLE001 - a prefix with no objects
        return []
    return sorted(m.path for m in result.metadata_list)


def delete_tree(path: str) -> None:
    """Delete a file or a folder (all objects under the prefix remotely); missing is fine."""
    if not is_remote(path):
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        elif os.path.lexists(path):
            os.remove(path)
        return
    files = list_files(path)
    if FileSystems.exists(path):
        files.append(path)
    if files:
        FileSystems.delete(sorted(set(files)))


def rename(src: str, dst: str) -> None:
    rename_all([(src, dst)])


def rename_all(moves: list[tuple[str, str]]) -> None:
    """Rename every (source, destination) pair; remotely in one FileSystems call, because each
    call builds a new object-store client (Beam's S3 filesystem: a boto3 session, about 0.1 s of
    CPU) and a run commits a hundred files."""
    local = [(s, d) for s, d in moves if not is_remote(d)]
    for src, dst in local:
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        os.replace(src, dst)
    remote = [(s, d) for s, d in moves if is_remote(d)]
    if remote:
        FileSystems.rename([s for s, _ in remote], [d for _, d in remote])


def json_line(row: dict) -> str:
    return json.dumps(row, sort_keys=True, ensure_ascii=False, default=str)


def parquet_bytes(rows: list[dict], schema: pa.Schema) -> bytes:
    buf = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), buf, compression="zstd")
    return buf.getvalue()


def write_table(path: str, rows: list[dict], schema: pa.Schema) -> None:
    """A small table (an aggregate) as one Parquet file."""
    write_bytes(path, parquet_bytes(rows, schema))
