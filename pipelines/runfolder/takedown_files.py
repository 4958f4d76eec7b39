"""The file work of a takedown: new versions of the affected files under temporary names, and the
journal that renames them into place.

Every new file is written next to its final name as ``<name>.takedown-<token>`` (a local file or
one object); nothing under a final name changes until every new file exists.  Then the journal
``RUN/_curate/takedown.commit.json`` (the list of renames, ``run.json`` last) is written and
carried out; a takedown killed during the renames is finished by the next ``mtnlg takedown`` on
that RUN (``finish_pending``), the same way ``pipelines.runfolder.commit`` finishes a stage's commit.
The run's dedup index loses the documents' rows last (``remove_from_index``).
"""
from __future__ import annotations

import gzip
import io
import json
import os
import shutil
import tempfile
from collections import defaultdict

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from infra.hashing import bytes_sha256, file_sha256
from pipelines.dedup.index import INDEX_DIR, INDEX_SCHEMA, PARAMS, params_bytes, read_index_part
from infra.storage.files import (delete_tree, file_exists, is_remote, join, list_files,
    parquet_bytes, read_bytes, rename, write_bytes)

JOURNAL = ("_curate", "takedown.commit.json")


class TakedownError(ValueError):
    """The takedown cannot be done as asked; nothing was changed."""


def read_table(path: str, columns: list[str] | None = None) -> pa.Table:
    """A Parquet file of the run; ``TakedownError`` naming it when it is missing or damaged."""
    try:
        if is_remote(path):
            return pq.read_table(io.BytesIO(read_bytes(path)), columns=columns)
        return pq.read_table(path, columns=columns)
    except Exception as e:  # noqa: BLE001 - missing, truncated, not Parquet, columns missing
        raise TakedownError(f"{path} is unreadable ({type(e).__name__}: {str(e)[:200]}); "
                            "the run is incomplete or damaged") from None


def table_bytes(table: pa.Table) -> bytes:
    buf = io.BytesIO()
    pq.write_table(table, buf, compression="zstd")
    return buf.getvalue()


class Staged:
    """New file versions written under temporary names; ``moves`` is the journal's list."""

    def __init__(self, run_dir: str, token: str) -> None:
        self.run_dir, self.token = run_dir, token
        self.moves: list[list[str]] = []

    def temp_of(self, rel: str) -> str:
        return f"{rel}.takedown-{self.token}"

    def write(self, rel: str, data: bytes) -> None:
        write_bytes(join(self.run_dir, *self.temp_of(rel).split("/")), data)
        self.moves.append([self.temp_of(rel), rel])

    def add_local(self, local: str, rel: str) -> None:
        """A finished local file (a shard written in a temp folder) as the new ``rel``."""
        target = join(self.run_dir, *self.temp_of(rel).split("/"))
        if is_remote(target):
            with open(local, "rb") as f:
                write_bytes(target, f.read())
        else:  # the temp folder may be on another file system: move, then it is renamed
            shutil.move(local, target)
        self.moves.append([self.temp_of(rel), rel])

    def delete(self, rel: str) -> None:
        """``rel`` goes away at the commit (a shard left without documents)."""
        self.moves.append([None, rel])

    def discard(self) -> None:
        for tmp, _ in self.moves:
            if tmp is not None:
                delete_tree(join(self.run_dir, *tmp.split("/")))
        self.moves = []

    def commit(self) -> None:
        path = join(self.run_dir, *JOURNAL)
        write_bytes(path, json.dumps({"token": self.token, "moves": self.moves}, indent=1).encode())
        finish_pending(self.run_dir)


def finish_pending(run_dir: str) -> bool:
    """Carry out a written journal (renames left to do); True if there was one."""
    path = join(run_dir, *JOURNAL)
    if not file_exists(path):
        return False
    plan = json.loads(read_bytes(path))
    for tmp, final in plan["moves"]:
        dst = join(run_dir, *final.split("/"))
        if tmp is None:
            delete_tree(dst)
            continue
        src = join(run_dir, *tmp.split("/"))
        if file_exists(src):
            rename(src, dst)
        elif not file_exists(dst):
            raise TakedownError(f"takedown journal {path}: {tmp} is neither staged nor in place")
    delete_tree(path)
    return True


def rewrite_shard(run_dir: str, recorded: dict, part: pa.Table, remove_ids: set[str],
                  staged: Staged) -> dict | None:
    """Shard ``recorded["prefix"]`` without the documents in ``remove_ids``: verifies the shard's
    recorded sha256s, writes the new ``.bin``/``.idx`` and documents part (``token_start``
    recomputed) under temporary names; returns the shard's new ``stats/shards.parquet`` row, or
    None when no document is left: then the shard and its part are deleted, as curate writes
    no shard for an empty hash range (and object stores cannot hold an empty multipart upload)."""
    from blending.indexed_dataset import IndexedDataset, IndexedDatasetWriter, bin_path, idx_path
    from pipelines.tokenize.shards import SHARD_DOCUMENT_SCHEMA

    rel, source, k = recorded["prefix"], recorded["source"], recorded["shard"]
    prefix = join(run_dir, *rel.split("/"))
    with tempfile.TemporaryDirectory(prefix="takedown-") as tmp:
        local = prefix
        if is_remote(prefix):
            local = os.path.join(tmp, "old")
            for ext in (".bin", ".idx"):
                with open(local + ext, "wb") as f:
                    f.write(read_bytes(prefix + ext))
        for path, key in ((bin_path(local), "bin_sha256"), (idx_path(local), "idx_sha256")):
            got = file_sha256(path)
            if got != recorded[key]:
                raise TakedownError(f"{rel}{os.path.splitext(path)[1]} has sha256 {got[:16]}... but "
                                    f"stats/shards.parquet records {recorded[key][:16]}...: the shard "
                                    "changed after curation; refusing to rewrite it")
        old = IndexedDataset(local)
        if old.documents != part.num_rows:
            raise TakedownError(f"{rel} holds {old.documents} documents but documents/{source}/"
                                f"part-{k:05d}.parquet lists {part.num_rows}")
        keep = pc.invert(pc.is_in(part.column("id"), value_set=pa.array(sorted(remove_ids))))
        keep_np = np.asarray(keep.to_numpy(zero_copy_only=False), dtype=bool)
        new_prefix = os.path.join(tmp, "new")
        with IndexedDatasetWriter(new_prefix, old.dtype) as writer:
            for i in np.flatnonzero(keep_np):
                writer.add_document(old[int(i)])
        info = writer.finalize()
        kept = part.filter(pa.array(keep_np))
        lengths = np.asarray(old.sequence_lengths, dtype=np.int64)[keep_np]
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]) if len(lengths) else lengths
        kept = kept.set_column(kept.schema.get_field_index("token_start"), "token_start",
                               pa.array(starts, pa.int64())) if "token_start" in kept.schema.names \
            else kept.append_column("token_start", pa.array(starts, pa.int64()))
        kept = kept.select(SHARD_DOCUMENT_SCHEMA.names).cast(SHARD_DOCUMENT_SCHEMA)
        del old
        docs_rel = f"documents/{source}/part-{k:05d}.parquet"
        if info.documents == 0:
            for rel_ in (rel + ".bin", rel + ".idx", docs_rel):
                staged.delete(rel_)
            return None
        staged.add_local(bin_path(new_prefix), rel + ".bin")
        staged.add_local(idx_path(new_prefix), rel + ".idx")
        staged.write(docs_rel, table_bytes(kept))
    return {**recorded, "documents": info.documents, "tokens": info.tokens,
            "bin_sha256": info.bin_sha256, "idx_sha256": info.idx_sha256}


def rewrite_stats_rows(run_dir: str, remove_ids: set[str], staged: Staged) -> tuple[list, list]:
    """Per-document stats rows of the removed documents -> outcome ``removed``, stage and reason
    ``takedown`` (files without such rows untouched); returns (old rows, new rows)."""
    from pipelines.plumbing.stats import DOCUMENTS_DIR

    old_rows, new_rows = [], []
    value_set = pa.array(sorted(remove_ids), pa.string())
    for path in list_files(join(run_dir, *DOCUMENTS_DIR.split("/"))) if remove_ids else []:
        if not path.endswith(".parquet"):
            continue
        hit = pc.is_in(read_table(path, ["id"]).column("id"), value_set=value_set)
        if not pc.any(hit).as_py():
            continue
        table = read_table(path)
        rows, changed = table.to_pylist(), 0
        for row, h in zip(rows, hit.to_pylist()):
            if h and row["outcome"] == "kept":
                old_rows.append(dict(row))
                row.update(outcome="removed", stage="takedown", reason="takedown")
                new_rows.append(dict(row))
                changed += 1
        if changed:
            staged.write(_rel(path, run_dir), table_bytes(pa.Table.from_pylist(rows, schema=table.schema)))
    return old_rows, new_rows


def _rel(path: str, run_dir: str) -> str:
    return path[len(run_dir.rstrip("/")) + 1:].replace(os.sep, "/")


def scrub_stage_parts(run_dir: str, ids: set[str], staged: Staged) -> None:
    """The stages' document parts (``stages/<stage>/docs-*.parquet``) still hold the text of the
    documents each stage passed on: drop the removed ones there too."""
    value_set = pa.array(sorted(ids), pa.string())
    for path in list_files(join(run_dir, "stages")) if ids else []:
        if not path.endswith(".parquet"):
            continue
        hit = pc.fill_null(pc.is_in(read_table(path, ["id"]).column("id"), value_set=value_set), False)
        if pc.any(hit).as_py():
            staged.write(_rel(path, run_dir), table_bytes(read_table(path).filter(pc.invert(hit))))


def scrub_removed_text(run_dir: str, ids: set[str], staged: Staged) -> int:
    """Text of the documents left in ``removed/`` (earlier removals, decontamination cuts of a
    split document): set to null, with ``detail.text_taken_down``; returns the rows changed."""
    changed_total = 0
    needles = {json.dumps(i, ensure_ascii=a) for i in ids for a in (True, False)}
    for path in list_files(join(run_dir, "removed")):
        if not path.endswith(".jsonl.gz"):
            continue
        text = gzip.decompress(read_bytes(path)).decode("utf-8")
        if not any(n in text for n in needles):  # most files hold none: skip parsing them
            continue
        lines, changed = text.splitlines(), 0
        for i, line in enumerate(lines):
            row = json.loads(line)
            if row.get("id") in ids and row.get("text") is not None:
                row["text"] = None
                if isinstance(row.get("detail"), dict):
                    row["detail"]["text_taken_down"] = True
                lines[i] = json.dumps(row, sort_keys=True, ensure_ascii=False, default=str)
                changed += 1
        if changed:
            staged.write(_rel(path, run_dir), gzip.compress(
                "".join(line + "\n" for line in lines).encode("utf-8"), mtime=0))
            changed_total += changed
    return changed_total


def updated_aggregates(run_dir: str, old_rows: list[dict], new_rows: list[dict]) -> dict:
    """The aggregate tables (counts, histograms, languages, read, pii and the filter grid) with
    the removed documents moved from ``kept`` to ``removed``/``takedown``, exactly as if the
    stages had decided so.  ``tables["grid_spec"]`` is the grid's spec (None: no grid table)."""
    from curation.stats import aggregate_keys, merge_partials, table_partials
    from pipelines.plumbing.stats import AGGREGATE_TABLES, GRID_FILE, read_grid

    total: dict[tuple, int] = defaultdict(int)
    for name, (file_name, _) in AGGREGATE_TABLES.items():
        path = join(run_dir, "stats", file_name)
        if name == "pii" and not file_exists(path):  # a run written before the pii table
            continue
        for row in read_table(path).to_pylist():
            for key, n in table_partials(name, row):
                total[key] += n
    spec = None
    if file_exists(join(run_dir, "stats", GRID_FILE)):
        spec, grid_rows = read_grid(read_table(join(run_dir, "stats", GRID_FILE)))
        for row in grid_rows:
            for key, n in table_partials("grid", row):
                total[key] += n
    for rows, sign in ((old_rows, -1), (new_rows, 1)):
        for row in rows:
            for key, n in aggregate_keys(row, spec):
                total[key] += sign * n
    if any(n < 0 for n in total.values()):
        raise TakedownError("the run's stats tables disagree with its per-document rows "
                            "(a count would go negative); refusing to update them")
    tables = merge_partials([[(k, n) for k, n in total.items() if n]])
    tables["grid_spec"] = spec
    return tables


def remove_from_index(run_dir: str, ids) -> int:
    """Remove the rows of ``ids`` from ``run_dir``'s dedup index; returns the rows removed.

    Only the parts holding them are rewritten, each under a new name; params.json (new names,
    rows, sha256) is then replaced in one write and the old parts deleted, so an interrupted call
    leaves either the old index or the new one (plus an unlisted orphan), never a mix.  A run
    without an index removes nothing (0)."""
    run_dir = run_dir.rstrip("/")
    path = join(run_dir, INDEX_DIR, PARAMS)
    if not file_exists(path):
        return 0
    params = json.loads(read_bytes(path))
    wanted = set(ids)
    removed, stale, parts = 0, [], []
    for p in params.get("parts", []):
        url = join(run_dir, INDEX_DIR, p["name"])
        table = read_index_part(url, p["sha256"])
        hit = pc.is_in(table.column("id"), value_set=pa.array(sorted(wanted), pa.string()))
        n = pc.sum(hit).as_py() or 0
        if not n:
            parts.append(p)
            continue
        kept = table.filter(pc.invert(hit))
        data = parquet_bytes(kept.to_pylist(), INDEX_SCHEMA)
        sha = bytes_sha256(data)
        name = f"{p['name'].rsplit('.parquet', 1)[0].split('.t-')[0]}.t-{sha[:12]}.parquet"
        write_bytes(join(run_dir, INDEX_DIR, name), data)
        parts.append({"name": name, "rows": kept.num_rows, "sha256": sha})
        stale.append(url)
        removed += n
    if not removed:
        return 0
    params.update(parts=parts, documents=sum(p["rows"] for p in parts),
                  removed_rows=int(params.get("removed_rows", 0)) + removed)
    write_bytes(path, params_bytes(params))
    for url in stale:
        delete_tree(url)
    return removed
