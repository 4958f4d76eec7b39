"""infra.storage.staging: worker files from local paths, pkg:// references and FileSystems URLs.
(Remote URLs against a real S3 server: tests/cluster/test_s3.py.)"""
from __future__ import annotations

import hashlib
import os

import pytest
from apache_beam.io.filesystem import FileMetadata, MatchResult
from apache_beam.io.localfilesystem import LocalFileSystem

from infra.storage import staging


class DirFileSystem(LocalFileSystem):
    """``stagetest://KEY`` -> ``ROOT/KEY``: a FileSystems URL scheme for these tests (Beam ships
    no in-memory filesystem; a real S3 server is in tests/cluster/test_s3.py)."""

    ROOT = ""
    PREFIX = "stagetest://"

    @classmethod
    def scheme(cls):
        return "stagetest"

    def _local(self, url: str) -> str:
        return os.path.join(self.ROOT, url[len(self.PREFIX):])

    def _url(self, path: str) -> str:
        return self.PREFIX + os.path.relpath(path, self.ROOT)

    def match(self, patterns, limits=None):
        out = super().match([self._local(p) for p in patterns], limits)
        return [MatchResult(p, [FileMetadata(self._url(m.path), m.size_in_bytes,
                                             m.last_updated_in_seconds) for m in r.metadata_list])
                for p, r in zip(patterns, out)]

    def open(self, path, *args, **kwargs):
        return super().open(self._local(path), *args, **kwargs)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_local_path_is_used_in_place_and_checked(tmp_path):
    f = tmp_path / "model.bin"
    f.write_bytes(b"weights")
    assert staging.local_copy(str(f)) == str(f)
    assert staging.local_copy(str(f), _sha(b"weights")) == str(f)
    with pytest.raises(staging.StagingError, match="expected"):
        staging.local_copy(str(f), _sha(b"other"))
    with pytest.raises(staging.StagingError, match="does not exist on this machine"):
        staging.local_copy(str(tmp_path / "missing.bin"))


def test_package_reference_resolves_to_the_installed_file():
    from infra.resources import LANGUAGE_MODEL, local_path

    path = staging.local_copy(LANGUAGE_MODEL)
    assert path == local_path(LANGUAGE_MODEL)
    assert staging.sha256_of(LANGUAGE_MODEL).startswith("8f3472cfe873")
    assert staging.exists(LANGUAGE_MODEL) and not staging.exists("pkg://data_manifests/nope")


def test_url_staging_caches_by_checksum_and_verifies(tmp_path, monkeypatch):
    """A FileSystems URL is downloaded once into cache/<sha256>/<name>; a folder URL stages the
    files inside it; a pinned checksum that differs is refused."""
    remote = tmp_path / "remote"
    (remote / "models").mkdir(parents=True)
    (remote / "tok").mkdir()
    (remote / "models" / "lid.bin").write_bytes(b"model bytes")
    for name in ("tokenizer.json", "vocab.json"):
        (remote / "tok" / name).write_bytes(name.encode())
    monkeypatch.setattr(DirFileSystem, "ROOT", str(remote))
    monkeypatch.setenv(staging.CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.setattr(staging, "_staged", {})
    digest = _sha(b"model bytes")
    url = "stagetest://models/lid.bin"
    path = staging.local_copy(url, digest)
    assert path == str(tmp_path / "cache" / digest / "lid.bin")
    assert open(path, "rb").read() == b"model bytes"
    (remote / "models" / "lid.bin").write_bytes(b"changed")
    assert staging.local_copy(url, digest) == path  # once per process: not fetched again
    assert staging.exists(url) and staging.exists("stagetest://tok")
    assert not staging.exists("stagetest://nothing")
    with pytest.raises(staging.StagingError, match="expected"):
        staging.local_copy(url, _sha(b"something else"))
    folder = staging.local_copy("stagetest://tok")
    assert sorted(os.listdir(folder)) == ["tokenizer.json", "vocab.json"]
    assert open(os.path.join(folder, "vocab.json"), "rb").read() == b"vocab.json"
    with pytest.raises(staging.StagingError, match="matches no file"):
        staging.local_copy("stagetest://absent")
