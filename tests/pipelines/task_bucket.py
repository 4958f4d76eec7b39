"""A FileSystems scheme for tests: ``taskbucket://<path>`` is ``<root>/<path>`` on disk, but no
plain ``open`` or ``os.path`` can read it, like ``gs://``.  Counts the files opened."""
from __future__ import annotations

import glob
import os

from apache_beam.io.filesystem import FileMetadata, MatchResult
from apache_beam.io.localfilesystem import LocalFileSystem

PREFIX = "taskbucket://"


class TaskBucket(LocalFileSystem):
    root, opened = "", []

    @classmethod
    def use(cls, root) -> None:
        cls.root, cls.opened = str(root), []

    @classmethod
    def scheme(cls):
        return "taskbucket"

    def _local(self, url: str) -> str:
        assert url.startswith(PREFIX), url
        return os.path.join(self.root, url[len(PREFIX):])

    def match(self, patterns, limits=None):
        return [MatchResult(p, [FileMetadata(PREFIX + os.path.relpath(f, self.root), os.path.getsize(f))
                                for f in sorted(glob.glob(self._local(p))) if os.path.isfile(f)])
                for p in patterns]

    def join(self, basepath, *paths):  # URL-style, as remote filesystems do
        return "/".join([basepath.rstrip("/")] + [p.strip("/") for p in paths])

    def split(self, path):
        head, _, tail = path.rstrip("/").rpartition("/")
        return head, tail

    def exists(self, path):
        return os.path.exists(self._local(path))

    def open(self, path, mime_type="application/octet-stream", compression_type="auto"):
        TaskBucket.opened.append(path)
        return open(self._local(path), "rb")
