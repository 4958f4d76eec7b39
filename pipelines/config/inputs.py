"""Planning the inputs on the driver, before any work: every glob matched through Beam's
FileSystems, every listing read and its selection made (``pipelines.config.listings``; the
listed files themselves are not asked anything), every file listed once.

``plan_inputs(inputs, input_root)`` is what ``load_config`` runs: a glob that matches nothing,
or a file matched twice (two overlapping globs, or the same file through a symlink, a hard link
or a second spelling of its path) raises ``InputPlanError`` naming both settings, because
reading a file twice duplicates its documents and their ids.  Files that cannot be read (a
FIFO, socket, device, directory, broken or looping symlink, unreadable file) are not errors
here: each becomes one dead letter when the job reaches it, and the plan logs them up front.

Beam's match silently skips two kinds of files, which ``match_files`` (used by the planner and
by the read stage alike) finds: local entries it cannot ``stat`` (broken or looping symlinks;
dead-lettered when read) and names holding a backslash (Beam's ``*`` stops at ``\\`` as at a
separator; here only ``/`` separates, so ``a\\b.jsonl`` is read like any other file).
"""
from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass

from curation.readers.files import common_root, file_identity, file_problem, id_path, is_remote

log = logging.getLogger(__name__)
_GLOB_RE = re.compile(r"[*?\[]")


class InputPlanError(ValueError):
    """An input glob matches nothing, or a file would be read twice."""


@dataclass(frozen=True)
class PlannedFile:
    path: str
    id_path: str
    problem: str | None
    setting: str  # e.g. "inputs[1].paths[0]"
    pattern: str


def glob_regex(pattern: str) -> re.Pattern:
    """``pattern`` as a regular expression with Beam's glob rules (``FileSystem.translate_pattern``:
    ``**`` any characters, ``*`` any but a separator, ``?`` one character, ``[...]`` a class,
    ``[!...]`` its complement) except that ``/`` is the only separator: Beam's ``*`` also stops
    at ``\\``, so a POSIX file or object named ``a\\b.jsonl`` matched no glob and was silently
    never read."""
    out, i, n = [], 0, len(pattern)
    while i < n:
        c = pattern[i]
        i += 1
        if c == "*":
            if i < n and pattern[i] == "*":
                out.append(".*")
                i += 1
            else:
                out.append("[^/]*")
        elif c == "?":
            out.append(".")
        elif c == "[":
            j = i + (i < n and pattern[i] == "!")
            j += j < n and pattern[j] == "]"  # a leading "]" is a member, not the end
            end = pattern.find("]", j)
            if end < 0:
                out.append(r"\[")
                continue
            body = pattern[i:end].replace("\\", "\\\\")
            body = "^" + body[1:] if body[0] == "!" else "\\" + body if body[0] == "^" else body
            out.append(f"[{body}]")
            i = end + 1
        else:
            out.append(re.escape(c))
    return re.compile("(?ms)" + "".join(out) + r"\Z")


def unstattable_matches(pattern: str) -> list[str]:
    """Local entries matching ``pattern`` (``glob_regex``) that Beam's match drops because
    they cannot be stat-ed: broken and looping symlinks.  Remote patterns: none."""
    if is_remote(pattern):
        return []
    local = pattern[len("file://"):] if pattern.startswith("file://") else pattern
    if not _GLOB_RE.search(local):
        return [pattern] if os.path.islink(local) and not os.path.exists(local) else []
    prefix = _GLOB_RE.split(local, 1)[0]
    top = prefix if prefix.endswith("/") else os.path.dirname(prefix)
    if not os.path.isdir(top):
        return []
    regex = glob_regex(local)
    out = []
    for dirpath, _, names in os.walk(top):  # as Beam's LocalFileSystem lists
        for name in names:
            p = os.path.join(dirpath, name)
            if regex.match(p) and os.path.islink(p) and not os.path.exists(p):
                out.append(p)
    return sorted(out)


def match_files(pattern: str) -> list:
    """Every file ``pattern`` matches, as Beam ``FileMetadata``: listed through Beam's
    FileSystems (the listing Beam's own match makes: everything under the pattern's fixed
    prefix), filtered with ``glob_regex`` so names holding a backslash match too, plus the
    local entries Beam drops (``unstattable_matches``, size 0: each is read as one dead
    letter).  Raises what the filesystem raises when the location cannot be listed."""
    from apache_beam.io.filesystem import FileMetadata
    from apache_beam.io.filesystems import FileSystems

    if pattern.endswith("/"):  # as Beam: a folder means everything directly in it
        pattern += "*"
    if not _GLOB_RE.search(pattern):
        found = list(FileSystems.match([pattern])[0].metadata_list)
    else:
        regex = glob_regex(pattern)
        listing = FileSystems.match([_GLOB_RE.split(pattern, 1)[0] + "**"])[0].metadata_list
        found = [m for m in listing if regex.match(m.path)]
    seen = {m.path for m in found}
    found += [FileMetadata(p, 0) for p in unstattable_matches(pattern) if p not in seen]
    return sorted(found, key=lambda m: m.path)


def match_pattern(pattern: str) -> list[str]:
    """The paths of ``match_files``; ``InputPlanError`` if the location cannot be listed."""
    try:
        return [m.path for m in match_files(pattern)]
    except Exception as e:  # noqa: BLE001 - unreachable bucket, bad URL, permissions
        raise InputPlanError(f"{pattern!r} cannot be listed: {type(e).__name__}: {e}") from None


def plan_inputs(inputs, input_root: str, labels: list[str] | None = None) -> list[list[PlannedFile]]:
    """The files of each input (``InputSpec``), sorted; raises ``InputPlanError`` for a glob
    that matches nothing and for a file matched twice anywhere in the config."""
    labels = labels or [f"inputs[{i}]" for i in range(len(inputs))]
    seen: dict[str, PlannedFile] = {}
    ids: dict[str, PlannedFile] = {}
    plans = []
    for label, spec in zip(labels, inputs):
        files = []
        for path, setting, pattern in _listed(spec, label):
            _add(PlannedFile(path, id_path(path, spec.base), file_problem(path), setting, pattern),
                 files, seen, ids, spec.source)
        for j, pattern in enumerate(spec.paths):
            setting = f"{label}.paths[{j}]"
            try:
                paths = match_pattern(pattern)
            except InputPlanError as e:
                raise InputPlanError(f"{setting}: {e}") from None
            if not paths:
                raise InputPlanError(f"{setting}: {pattern!r} matches no file (input_root={input_root!r})")
            for path in paths:
                _add(PlannedFile(path, id_path(path, input_root), file_problem(path), setting, pattern),
                     files, seen, ids, spec.source)
        plans.append(sorted(files, key=lambda f: f.path))
    problems = [f for plan in plans for f in plan if f.problem]
    return _report(plans, problems)


def _listed(spec, label: str):
    """``(path, setting, line)`` for the selected lines of a listing input (none for globs);
    pins the listing's sha256 on ``spec`` so each worker reads the same listing."""
    if getattr(spec, "listing", None) is None:
        return []
    from pipelines.config.listings import ListingError, join, load_listing

    try:
        listed = load_listing(spec.listing, spec.select, label)
    except ListingError as e:
        raise InputPlanError(str(e)) from None
    spec.listing_sha256 = listed.sha256
    log.info("%s: %d of the %d files of %s selected", label, len(listed.lines), listed.total,
             spec.listing)
    return [(join(spec.base, line), f"{label}.listing", line) for line in listed.lines]


def _add(f: PlannedFile, files: list, seen: dict, ids: dict, source: str | None) -> None:
    """Add ``f`` to its input's files; ``InputPlanError`` if it is already planned, or if its
    documents would get the ids of another file's (the same path under two listing bases)."""
    key = file_identity(f.path)
    path, pattern, setting = f.path, f.pattern, f.setting
    if key in seen:
        first = seen[key]
        same = "" if first.path == path else f" (as {first.path!r}: the same file)"
        what = repr(path) if path == pattern else f"{pattern!r} matches {path!r}, which is"
        raise InputPlanError(
            f"{setting}: {what} already matched by "
            f"{first.setting} {first.pattern!r}{same}; a file may be read only once "
            "(its documents and ids would be duplicated): make the globs disjoint")
    id_key = (source, f.id_path)
    if id_key in ids:  # two bases holding the same relative path, for one source
        raise InputPlanError(f"{setting}: {path!r} and {ids[id_key].path!r} would "
                             f"share document ids ({f.id_path!r})")
    seen[key] = ids[id_key] = f
    files.append(f)


def _report(plans: list, problems: list) -> list:
    for f in problems[:20]:
        log.warning("%s: %s is %s; it will be dead-lettered", f.setting, f.path,
                    f.problem.split(": ", 1)[-1])
    if len(problems) > 20:
        log.warning("... and %d more input files that cannot be read", len(problems) - 20)
    return plans


# -- what the job's plan (pipelines.read.plan) asks of an input on its workers -------------

def work_patterns(inputs) -> list[tuple[int, str]]:
    """``(input index, glob or listing)``: what the plan expands on a worker, one element each
    (a listing is ONE element: its lines become files there, not in the job's graph)."""
    return [(i, p) for i, spec in enumerate(inputs)
            for p in (spec.paths if spec.listing is None else [spec.listing])]


def input_files(spec, pattern: str) -> list:
    """The files one element of ``work_patterns`` names: a glob's matches (``match_files``),
    or a listing's selected files (``listings.listed_files``: sizes not asked yet)."""
    if spec.listing is not None and pattern == spec.listing:
        from pipelines.config.listings import listed_files

        return list(listed_files(spec))
    return match_files(pattern)


def id_root(spec, input_root: str | None) -> str:
    """What the ids of ``spec``'s documents are relative to: a listing's base (so an id is the
    file's line of the listing), else ``input_root``, else the deepest folder of its globs."""
    if spec.listing is not None:
        return spec.base
    return input_root if input_root is not None else common_root(spec.paths)


def apply_http_settings(inputs) -> None:
    """This process reads http(s):// with the config's ``http:`` section (``InputSpec.http``)."""
    from infra.storage.http_filesystem import configure

    configure(inputs[0].http if inputs else None)
