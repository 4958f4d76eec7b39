"""Atomic outputs for a curate RUN: staging folders, a commit per stage, completion markers.

Nothing a stage writes carries its final name until the stage has finished:

  RUN/_curate/owner.json                     this folder is a curate RUN (config fingerprint)
  RUN/_curate/staging/<stage>-<attempt>/...  a stage's outputs while it runs, laid out as in RUN/
  RUN/_curate/<stage>.commit.json            the commit list (written once the stage finished)
  RUN/_curate/<stage>.done.json              the completion marker, written LAST

A commit writes the list of (staged, final) paths, renames every file (``FileSystems.rename``:
a rename locally, copy + delete on object stores), then writes the marker.  A run killed during
the renames is finished by ``roll_forward`` (the list says what is left); a stage without a marker
is not a result, and its staging folder is deleted before it runs again.  ``RUN/run.json`` is the
marker of the whole run and is written after every stage has committed.

Inside a stage's staging folder:
  _w/<dest>-<token>.<ext>   files of the pipeline's own row writers (``sinks.WriteRowsFn``); only
                            those listed in ``_manifest/`` (the descriptors of bundles that
                            succeeded) are committed, so a retried bundle leaves no duplicate rows
  _tmp/                     stage-internal temporaries (e.g. token runs), deleted at commit
  _progress/                the workers' live progress counts (``pipelines.plumbing.progress``),
                            deleted at commit
  beam-temp-*               Beam writers' own temporaries, deleted at commit
  anything else             files of Beam writers given this folder as their RUN (dedup groups,
                            contamination cuts, ...), committed under the same relative path
"""
from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import posixpath
import uuid
from dataclasses import dataclass
from typing import Any, Iterable

from pipelines.plumbing.progress import PROGRESS_DIR
from pipelines.stages import STAGES
from infra.storage.files import (delete_tree, join, list_files, read_bytes, rename_all,
    write_bytes)

CONTROL = "_curate"
RUN_OUTPUTS = ("run.json", "documents", "shards", "removed", "dead_letter", "dedup", "dedup_index", "stats",
               "stages", "logs", CONTROL)
"""Top-level names a curate run writes; the only ones ever deleted from an existing RUN."""
MARKER_VERSION = 1
WRITER_DIR, TMP_DIR, MANIFEST_DIR = "_w", "_tmp", "_manifest"


class RunDirError(ValueError):
    """RUN cannot be used as asked (not ours, a different config, nothing to resume)."""


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat()


def _read_json(path: str) -> Any | None:
    try:
        return json.loads(read_bytes(path))
    except (FileNotFoundError, OSError, ValueError):
        return None
    except Exception:  # noqa: BLE001 - object stores raise their own "not found" errors
        return None


def _write_json(path: str, data: Any) -> None:
    write_bytes(path, (json.dumps(data, indent=1, sort_keys=True, default=str) + "\n").encode())


def fingerprint(config: dict[str, Any], extra: dict[str, Any] | None = None) -> str:
    """sha256 of what decides a run's results (the resolved config and e.g. the tokenizer):
    a stage committed under one fingerprint is never reused under another."""
    blob = json.dumps({"config": config, **(extra or {})}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def _rel(path: str, root: str) -> str:
    """``path`` relative to ``root`` with forward slashes (both local paths or both URLs)."""
    root = root.rstrip("/") + "/"
    if not path.startswith(root):
        raise ValueError(f"{path!r} is not under {root!r}")
    return path[len(root):].replace(os.sep, "/")


@dataclass
class Attempt:
    """One try at running a stage: its outputs go to ``staging`` until ``RunDir.commit``."""

    stage: str
    token: str
    staging: str

    def out_dir(self) -> str:
        """The folder the stage writes to, laid out like RUN/."""
        return self.staging


class RunDir:
    """A curate RUN directory (local path or ``gs://`` / ``s3://`` URL)."""

    def __init__(self, root: str) -> None:
        self.root = root.rstrip("/") if "://" in root else os.path.abspath(root)

    # -- paths ----------------------------------------------------------------------------------
    def path(self, *parts: str) -> str:
        return join(self.root, *parts)

    def control(self, *parts: str) -> str:
        return self.path(CONTROL, *parts)

    def marker_path(self, stage: str) -> str:
        return self.control(f"{stage}.done.json")

    def commit_path(self, stage: str) -> str:
        return self.control(f"{stage}.commit.json")

    # -- ownership ------------------------------------------------------------------------------
    def owner(self) -> dict | None:
        """The owner marker, or a ``run.json`` of ours (runs made before the marker existed)."""
        data = _read_json(self.control("owner.json"))
        if isinstance(data, dict) and data.get("tool") == "mtnlg curate":
            return data
        run = _read_json(self.path("run.json"))
        if isinstance(run, dict) and "format_version" in run and "sources" in run:
            return {"tool": "mtnlg curate", "fingerprint": None, "legacy": True}
        return None

    def entries(self) -> list[str]:
        """Top-level names in RUN (files and folders)."""
        names = set()
        for f in list_files(self.root):
            names.add(_rel(f, self.root).split("/", 1)[0])
        if "://" not in self.root and os.path.isdir(self.root):
            names.update(os.listdir(self.root))  # empty folders too
        return sorted(names)

    def prepare(self, fp: str, *, resume: bool = False, overwrite: bool = False) -> None:
        """Make RUN ready for a run with fingerprint ``fp``.

        Fresh run (``resume=False``): RUN must be absent or empty, or hold a curate run of ours
        (whose outputs are then deleted), or ``overwrite`` must be given (then only the names a
        curate run writes, ``RUN_OUTPUTS``, are deleted; other files stay).  ``resume=True``:
        RUN must hold a run of ours made with the same fingerprint; completed stages are kept,
        interrupted commits are finished and unfinished stages' staging folders deleted.
        """
        if "://" not in self.root and os.path.lexists(self.root) and not os.path.isdir(self.root):
            raise RunDirError(f"--output: {self.root!r} is an existing file, not a folder (a curate "
                              "RUN is a folder); name a new or empty folder")
        entries = self.entries()
        owner = self.owner()
        if resume:
            if owner is None:
                raise RunDirError(f"--resume: {self.root!r} holds no curate run to resume "
                                  "(no _curate/owner.json or run.json)")
            if owner.get("legacy"):
                raise RunDirError(f"--resume: {self.root!r} was written by an mtnlg curate without "
                                  "stage markers; nothing in it can be resumed: start a fresh run")
            if owner.get("fingerprint") != fp:
                raise RunDirError(
                    f"--resume: {self.root!r} was started with a different configuration "
                    f"(fingerprint {str(owner.get('fingerprint'))[:12]} != {fp[:12]}); resume with "
                    "the same config, input root and tokenizer, or start a fresh run")
            self.roll_forward()
            delete_tree(self.control("staging"))
            return
        if entries:
            if owner is None and not overwrite:
                raise RunDirError(
                    f"--output: {self.root!r} is not empty and holds no curate run "
                    f"(found {', '.join(entries[:5])}{' ...' if len(entries) > 5 else ''}); "
                    "choose an empty folder, or pass --overwrite to replace the curate outputs "
                    f"in it ({', '.join(n for n in RUN_OUTPUTS)})")
            for name in RUN_OUTPUTS:
                if name in entries:
                    delete_tree(self.path(name))
        self._write_owner(fp)

    def _write_owner(self, fp: str) -> None:
        if "://" not in self.root:
            os.makedirs(self.root, exist_ok=True)
        _write_json(self.control("owner.json"), {"tool": "mtnlg curate", "format": MARKER_VERSION,
                                                 "fingerprint": fp, "created_at": _now()})

    # -- stages ---------------------------------------------------------------------------------
    def done(self, stage: str, fp: str | None = None) -> dict | None:
        """The stage's completion marker, if it committed (under fingerprint ``fp`` when given)."""
        m = _read_json(self.marker_path(stage))
        if not isinstance(m, dict) or m.get("stage") != stage:
            return None
        if fp is not None and m.get("fingerprint") != fp:
            return None
        return m

    def new_attempt(self, stage: str) -> Attempt:
        token = uuid.uuid4().hex[:12]
        return Attempt(stage, token, self.control("staging", f"{stage}-{token}"))

    def staged_files(self, attempt: Attempt) -> list[str]:
        """Files of a finished attempt that make its result (paths relative to the staging
        folder): manifest-listed writer files under their final names, and Beam writers' files."""
        manifest = read_manifest(attempt.staging)
        listed = {d["path"] for d in manifest}
        out = []
        for f in list_files(attempt.staging):
            rel = _rel(f, attempt.staging)
            top = rel.split("/", 1)[0]
            if top in (TMP_DIR, MANIFEST_DIR, PROGRESS_DIR) or any(p.startswith("beam-temp-") for p in rel.split("/")):
                continue
            if top == WRITER_DIR and rel not in listed:
                continue  # an orphan of a failed bundle attempt
            out.append(rel)
        return sorted(out)

    def commit(self, attempts: Iterable[Attempt], fp: str, info: dict[str, dict] | None = None) -> None:
        """Commit finished attempts: for each, write the commit list, rename, write the marker."""
        for attempt in attempts:
            moves = []
            for rel in self.staged_files(attempt):
                final = rel[len(WRITER_DIR) + 1:] if rel.startswith(WRITER_DIR + "/") else rel
                moves.append([rel, final])
            _write_json(self.commit_path(attempt.stage), {
                "stage": attempt.stage, "attempt": attempt.token, "staging": attempt.staging,
                "fingerprint": fp, "moves": moves, "info": (info or {}).get(attempt.stage, {})})
            self._finish_commit(attempt.stage)

    def _finish_commit(self, stage: str) -> None:
        plan = _read_json(self.commit_path(stage))
        staging = plan["staging"]
        # One listing of each side instead of an existence check per file (on object storage
        # every check is a request and a new client).
        staged = {_rel(f, staging) for f in list_files(staging)}
        moves, done = [], None
        for rel, final in plan["moves"]:
            if rel in staged:
                moves.append((join(staging, *rel.split("/")), self.path(*final.split("/"))))
                continue
            if done is None:  # a roll-forward: some moves happened before the kill
                done = {_rel(f, self.root) for f in list_files(self.root)}
            if final not in done:
                raise RunDirError(f"commit of stage {stage!r}: {rel} is neither staged nor committed")
        rename_all(moves)
        _write_json(self.marker_path(stage), {
            "stage": stage, "version": MARKER_VERSION, "fingerprint": plan["fingerprint"],
            "attempt": plan["attempt"], "committed_at": _now(),
            "files": sorted(final for _, final in plan["moves"]), **plan["info"]})
        delete_tree(staging)
        delete_tree(self.commit_path(stage))

    def roll_forward(self) -> list[str]:
        """Finish what a killed run left half done: commits (rename the rest, write the marker)
        and uncommits (delete the rest); returns the stages concerned."""
        finished = []
        for stage in STAGES:
            if _read_json(self.uncommit_path(stage)) is not None:
                self._finish_uncommit(stage)
                finished.append(stage)
            if _read_json(self.commit_path(stage)) is not None:
                self._finish_commit(stage)
                finished.append(stage)
        return finished

    def uncommit_path(self, stage: str) -> str:
        return self.control(f"{stage}.uncommit.json")

    def uncommit(self, stage: str) -> None:
        """Delete a committed stage's files and marker (to run it again).  The file list is
        written first, so a run killed half way is finished by ``roll_forward`` and never leaves
        a stage's files behind without its marker."""
        m = self.done(stage)
        if m is None:
            return
        _write_json(self.uncommit_path(stage), {"stage": stage, "files": m.get("files", [])})
        delete_tree(self.marker_path(stage))  # from here on the stage is not a result
        self._finish_uncommit(stage)

    def _finish_uncommit(self, stage: str) -> None:
        plan = _read_json(self.uncommit_path(stage))
        delete_tree(self.path("run.json"))
        for rel in plan.get("files", []):
            delete_tree(self.path(*rel.split("/")))
        delete_tree(self.uncommit_path(stage))

    def files(self, stage: str, prefix: str) -> list[str]:
        """Absolute paths of the committed files of ``stage`` under the relative ``prefix``."""
        m = self.done(stage)
        if m is None:
            raise RunDirError(f"stage {stage!r} has not completed in {self.root!r}")
        return [self.path(*f.split("/")) for f in m["files"] if f.startswith(prefix)]


def read_manifest(staging: str) -> list[dict]:
    """Descriptors ``{"path": <relative to staging>, "rows": n, ...}`` of a stage's writer files."""
    out: list[dict] = []
    for f in list_files(join(staging, MANIFEST_DIR)):
        data = _read_json(f)
        if isinstance(data, list):
            out.extend(data)
    return out


def relative_to(path: str, root: str) -> str:
    return posixpath.normpath(_rel(path, root))
