"""Input files before a reader sees them: what can be opened, and the name used in ids.

- ``file_problem(path)``: why a local path cannot be read as an input file (a FIFO would block
  the reader forever, a socket or device is not data, a directory or a broken or looping
  symlink has nothing to read), or ``None``.  Remote URLs (``gs://``, ``s3://``) are left to
  their filesystem: object stores hold only objects.
- ``id_path(path, root)``: the path relative to the input root, the middle of every document
  id ``<source>/<id path>:<record>`` (contract 1, docs/run-layout.md), spelled by
  ``escape_id_path``: the characters that end or delimit an id (``:`` and ``#`` before a record
  number, line breaks in a takedown request) are percent-escaped, so two different files never
  share an id path and no id path can be mistaken for another file's id plus a record number:
  ids are unique by construction.
- ``file_identity(path)``: the same file reached through two paths (symlink, hard link,
  ``a/../a/x``) has one identity, for the planner's duplicate check.
"""
from __future__ import annotations

import errno
import os
import posixpath
import re
import stat

_SCHEME_RE = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*://")


def is_remote(path: str) -> bool:
    """A URL of a Beam filesystem other than the local one (``file://`` counts as local)."""
    return bool(_SCHEME_RE.match(path)) and not path.startswith("file://")


def _local(path: str) -> str:
    return path[len("file://"):] if path.startswith("file://") else path


_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
          (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"))


def file_problem(path: str) -> str | None:
    """Why ``path`` cannot be read as an input file, as a dead-letter error, or ``None``.

    Uses ``stat`` only: nothing is opened, so a FIFO cannot block the caller."""
    if is_remote(path):
        return None
    local = _local(path)
    try:
        st = os.stat(local)  # follows symlinks
    except OSError as e:
        if e.errno == errno.ELOOP:
            return "not_a_regular_file: symlink loop"
        if os.path.islink(local):
            try:
                target = os.readlink(local)
            except OSError:
                target = "?"
            return f"not_a_regular_file: broken symlink to {target!r}"
        return f"unreadable_file: {e.strerror or e}"
    for test, kind in _KINDS:
        if test(st.st_mode):
            return f"not_a_regular_file: {kind}"
    if not stat.S_ISREG(st.st_mode):
        return "not_a_regular_file: unknown file type"
    if not os.access(local, os.R_OK):
        return "unreadable_file: permission denied"
    return None


def id_path(path: str, root: str | None) -> str:
    """``path`` relative to ``root`` with ``/`` separators, spelled by ``escape_id_path``; a
    path outside the root (or with no root) keeps its full form, so two files never get the
    same id path."""
    return escape_id_path(_relative(path, root))


# Percent-escaped in id paths: "%" (so every escape reads back one way), ":" and "#" (they
# separate an id path from a record number), and what would break an id across lines or blur its
# end in a one-id-a-line request file: C0/C1 controls and DEL, whitespace other than " ", and a
# trailing " ".  Everything else, spaces and non-ASCII letters included, stays as it is.
_ID_RESERVED = frozenset("%:#")


def _needs_escape(c: str) -> bool:
    o = ord(c)
    return c in _ID_RESERVED or o < 0x20 or 0x7F <= o <= 0x9F or (c.isspace() and c != " ")


def escape_id_path(name: str) -> str:
    """``name`` as it appears in document ids: reserved characters (above) and bytes of a local
    file name that are not UTF-8 (Python's surrogate escapes) become ``%XX`` per UTF-8 byte
    (``a.jsonl:0`` -> ``a.jsonl%3A0``, byte 0xff -> ``%FF``).  Injective: ``%`` itself is
    escaped, so percent-decoding gives the name back."""
    out = []
    last = len(name) - 1
    for i, c in enumerate(name):
        if "\udc80" <= c <= "\udcff":  # an undecodable file-name byte (surrogateescape)
            out.append(f"%{ord(c) - 0xDC00:02X}")
        elif "\ud800" <= c <= "\udfff":  # any other lone surrogate: its code point's bytes
            out.append("".join(f"%{b:02X}" for b in c.encode("utf-8", "surrogatepass")))
        elif _needs_escape(c) or (c == " " and i == last):
            out.append("".join(f"%{b:02X}" for b in c.encode("utf-8")))
        else:
            out.append(c)
    return "".join(out)


def _relative(path: str, root: str | None) -> str:
    if root:
        if is_remote(root) or is_remote(path):
            prefix = root.rstrip("/") + "/"
            if path.startswith(prefix):
                return path[len(prefix):]
        else:
            lp, lr = os.path.normpath(_local(path)), os.path.normpath(_local(root))
            if lp.startswith(lr.rstrip(os.sep) + os.sep):
                return os.path.relpath(lp, lr).replace(os.sep, "/")
    return path


def common_root(patterns: list[str]) -> str:
    """The deepest folder holding every pattern's fixed part (before the first glob
    character): the default input root when none is given."""
    dirs = []
    for p in patterns:
        fixed = re.match(r"[^*?\[]*", p).group(0)
        dirs.append(fixed if fixed.endswith("/") and fixed != p else posixpath.dirname(fixed))
    if any(is_remote(d) for d in dirs):
        common = os.path.commonprefix(dirs)
        return common[: common.rfind("/")] if "/" in common else ""
    try:
        return os.path.commonpath([os.path.normpath(_local(d)) for d in dirs])
    except ValueError:  # relative and absolute mixed
        return ""


def file_identity(path: str) -> str:
    """One key per file, whatever path reaches it (device + inode for local files)."""
    if is_remote(path):
        return "url:" + path
    local = _local(path)
    try:
        st = os.stat(local)
        return f"inode:{st.st_dev}:{st.st_ino}"
    except OSError:
        return "path:" + os.path.realpath(local)
