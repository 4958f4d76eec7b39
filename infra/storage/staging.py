"""Files a worker opens (models, tokenizer): from wherever the user named them to a local path.

A DoFn's ``setup`` calls ``local_copy(path_or_url, sha256)`` for every file a library must open
from local disk (fastText models, the tokenizer):

- a local path is returned as is (it must exist on the worker: shared storage, or the same
  machine; on a cluster name files by URL);
- ``pkg://<package>/<path>`` (a file shipped inside the package, ``infra.resources``) resolves
  against the worker's own installation;
- any Beam FileSystems URL (``s3://``, ``gs://``, ``hdfs://``, ...) is downloaded once per
  process into a local cache keyed by its sha256 (``$MTNLG_STAGING_DIR``, default
  ``~/.cache/mtnlg/staged``).  A URL naming a folder (a tokenizer directory) stages the files
  directly inside it.

With ``sha256`` given, the local file is checked against it (a staged file is found in the
cache by that checksum and re-verified instead of downloaded again); a mismatch raises
``StagingError``.  The driver pins the checksum when it builds the pipeline, so every worker
opens the same bytes the driver checked.
"""
from __future__ import annotations

import hashlib
import os
import posixpath
import shutil
import tempfile
import threading

from infra.hashing import file_sha256
from infra import resources

CACHE_ENV = "MTNLG_STAGING_DIR"
_CHUNK = 1 << 20
_lock = threading.Lock()
_staged: dict[tuple[str, str | None], str] = {}  # per process: (path, sha256) -> local path


class StagingError(OSError):
    """A file cannot be staged: missing, unreadable, or its sha256 differs from the pinned one."""


def is_url(path: str) -> bool:
    """A Beam FileSystems URL (``s3://``, ``gs://``, ...); ``pkg://`` references are not."""
    return "://" in path and not resources.is_package_ref(path)


def cache_dir() -> str:
    root = os.environ.get(CACHE_ENV)
    if not root:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        root = os.path.join(base, "mtnlg", "staged")
    return root


def local_copy(path_or_url: str, sha256: str | None = None) -> str:
    """A local path holding ``path_or_url``'s bytes (see the module docstring); once per process."""
    key = (path_or_url, sha256)
    with _lock:
        if key in _staged:
            return _staged[key]
        if resources.is_package_ref(path_or_url):
            try:
                local = resources.local_path(path_or_url)
            except resources.ResourceError as e:
                raise StagingError(str(e)) from None
        elif is_url(path_or_url):
            local = _stage_url(path_or_url, sha256)
        else:
            local = path_or_url
            if not os.path.exists(local):
                raise StagingError(f"{local!r} does not exist on this machine ({_host()}); on a "
                                   "cluster, name worker files by URL (s3://, gs://, ...)")
        if sha256 is not None and os.path.isfile(local):
            _verify(local, sha256, path_or_url)
        _staged[key] = local
        return local


def sha256_of(path_or_url: str) -> str:
    """sha256 of a file's bytes (staging it first if remote); what the driver pins."""
    local = local_copy(path_or_url)
    if os.path.isdir(local):
        raise StagingError(f"{path_or_url!r} is a folder; a checksum pins one file")
    return file_sha256(local)


def exists(path_or_url: str) -> bool:
    """Whether a file or folder is there (local, ``pkg://`` or a FileSystems URL), without
    downloading it: for config validation before any work starts."""
    if resources.is_package_ref(path_or_url):
        return resources.exists(path_or_url)
    if not is_url(path_or_url):
        return os.path.exists(path_or_url)
    return bool(_match(path_or_url) or _match(_folder_glob(path_or_url)))


# -- remote files -------------------------------------------------------------------------------

def _host() -> str:
    import socket

    return socket.gethostname()


def _folder_glob(url: str) -> str:
    return url.rstrip("/") + "/*"


def _match(pattern: str) -> list:
    from apache_beam.io.filesystems import FileSystems

    try:
        return list(FileSystems.match([pattern])[0].metadata_list)
    except Exception:  # an unreachable location or an empty prefix matches nothing
        return []


def _stage_url(url: str, sha256: str | None) -> str:
    # A folder first: some filesystems (local, HDFS) also match a folder's own path.
    prefix = url.rstrip("/") + "/"
    members = [m.path for m in _match(_folder_glob(url))]
    files = sorted(p for p in members if p.startswith(prefix) and "/" not in p[len(prefix):])
    if not files:
        if any(m.path.rstrip("/") == url.rstrip("/") for m in _match(url)):
            return _stage_file(url, sha256)
        raise StagingError(f"{url!r} matches no file or folder")
    staged = {posixpath.basename(p): _stage_file(p, None) for p in files}
    # The folder's cache entry is keyed by its members' checksums: same files, same folder.
    digest = hashlib.sha256("".join(f"{n}\0{_sha_dir(p)}\0" for n, p in sorted(staged.items()))
                            .encode()).hexdigest()
    target = os.path.join(cache_dir(), "dirs", digest)
    if not os.path.isdir(target):
        tmp = tempfile.mkdtemp(prefix=".tmp-", dir=_ensure(os.path.join(cache_dir(), "dirs")))
        for name, path in staged.items():
            _link_or_copy(path, os.path.join(tmp, name))
        try:
            os.rename(tmp, target)
        except OSError:  # another process of this machine staged it first
            shutil.rmtree(tmp, ignore_errors=True)
    return target


def _sha_dir(path: str) -> str:
    return os.path.basename(os.path.dirname(path))  # files live in cache/<sha256>/<name>


def _stage_file(url: str, sha256: str | None) -> str:
    from apache_beam.io.filesystem import CompressionTypes
    from apache_beam.io.filesystems import FileSystems

    name = posixpath.basename(url.rstrip("/")) or "file"
    root = cache_dir()
    if sha256 is not None:
        cached = os.path.join(root, sha256, name)
        if os.path.isfile(cached):
            return cached  # local_copy re-verifies it
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=_ensure(root))
    h = hashlib.sha256()
    try:
        with os.fdopen(fd, "wb") as out, FileSystems.open(
                url, compression_type=CompressionTypes.UNCOMPRESSED) as src:
            for chunk in iter(lambda: src.read(_CHUNK), b""):
                h.update(chunk)
                out.write(chunk)
    except Exception as e:
        os.unlink(tmp)
        raise StagingError(f"cannot stage {url!r}: {type(e).__name__}: {e}") from e
    digest = h.hexdigest()
    if sha256 is not None and digest != sha256:
        os.unlink(tmp)
        raise StagingError(f"{url!r} has sha256 {digest}, expected {sha256} (the file changed "
                           "after the job was submitted?)")
    target = os.path.join(_ensure(os.path.join(root, digest)), name)
    os.replace(tmp, target)  # atomic: a reader sees the whole file or none
    return target


def _verify(local: str, sha256: str, what: str) -> None:
    digest = file_sha256(local)
    if digest != sha256:
        raise StagingError(f"{what!r} has sha256 {digest}, expected {sha256} (the file changed "
                           "after the job was submitted?)")


def _ensure(path: str) -> str:
    os.makedirs(path, exist_ok=True)
    return path


def _link_or_copy(src: str, dst: str) -> None:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copyfile(src, dst)
