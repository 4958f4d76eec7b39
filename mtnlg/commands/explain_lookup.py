"""What ``mtnlg explain`` reads for one document, and only that.

* its rows: ``stats/id_index/`` (``pipelines.plumbing.id_index.lookup``) names the one stats file holding
  its per-document row, the ``removed/`` file holding its removal and its dedup group row; a run
  without the index (written with ``id_index: false``) is searched file by file instead;
* where a kept document is: shard ``k`` of its source holds the ids whose hash falls in the
  k-th of ``n`` equal ranges (``pipelines.shards``), so one ``documents/<source>/part-k`` file is
  read for its sequence number and token range;
* with a manifest, where that token range lands in the blended sample stream
  (``blending.sampling``).
"""
from __future__ import annotations

import gzip
import json
import math
from typing import Any

import numpy as np
import pyarrow.compute as pc
import pyarrow.parquet as pq
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from infra.hashing import stable_hash
from infra.storage.files import file_exists, join, list_files, read_bytes
from pipelines.plumbing.id_index import has_index, lookup


class ExplainError(ValueError):
    """The run or the document cannot be explained; the message is one line."""


def _open(path: str):
    return FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED)


def read_row(path: str, column: str, value: str) -> dict | None:
    """The first row of a Parquet file whose ``column`` equals ``value``: the column is read,
    then only the row group holding the match."""
    with _open(path) as f:
        pf = pq.ParquetFile(f)
        for g in range(pf.metadata.num_row_groups):
            col = pf.read_row_group(g, columns=[column]).column(column)
            hits = pc.index(col, value).as_py()
            if hits >= 0:
                return pf.read_row_group(g).slice(hits, 1).to_pylist()[0]
    return None


def read_jsonl_row(path: str, doc_id: str) -> dict | None:
    text = gzip.decompress(read_bytes(path)).decode("utf-8")
    needle = json.dumps(doc_id, ensure_ascii=False)
    for line in text.splitlines():
        if needle in line:
            row = json.loads(line)
            if row.get("id") == doc_id:
                return row
    return None


class RunReader:
    """One curate RUN, read lazily: run.json, then per document only the files it needs."""

    def __init__(self, run_dir: str) -> None:
        self.run_dir = run_dir.rstrip("/") if "://" in run_dir else run_dir
        path = join(self.run_dir, "run.json")
        if not file_exists(path):
            raise ExplainError(f"--run {run_dir!r} has no run.json: not a finished `mtnlg curate` run")
        try:
            self.info = json.loads(read_bytes(path))
        except ValueError as e:
            raise ExplainError(f"{path} is not JSON ({e})") from None
        self.indexed = has_index(self.run_dir)
        self.files_read: list[str] = []

    def _p(self, rel: str) -> str:
        return join(self.run_dir, *rel.split("/"))

    def entries(self, key: str) -> list[dict]:
        return lookup(self.run_dir, key) if self.indexed else []

    def stats_row(self, doc_id: str, entries: list[dict]) -> dict | None:
        """The per-document stats row of ``doc_id`` (index, else every stats file)."""
        files = [e["file"] for e in entries if e["what"] == "stats"]
        if not self.indexed:
            from pipelines.plumbing.stats import DOCUMENTS_DIR

            files = [p[len(self.run_dir) + 1:] for p in list_files(self._p(DOCUMENTS_DIR))
                     if p.endswith(".parquet")]
        for rel in files:
            self.files_read.append(rel)
            row = read_row(self._p(rel), "id", doc_id)
            if row is not None:
                return row
        return None

    def id_of_url(self, url: str) -> str | None:
        if self.indexed:
            hits = [e for e in self.entries(url) if e["what"] == "url"]
            return hits[0]["id"] if hits else None
        from pipelines.plumbing.stats import DOCUMENTS_DIR

        for p in list_files(self._p(DOCUMENTS_DIR)):
            if p.endswith(".parquet"):
                row = read_row(p, "url", url)
                if row is not None:
                    return row["id"]
        return None

    def removed_row(self, doc_id: str, entries: list[dict], stage: str) -> dict | None:
        """Its ``removed/<stage>/`` row (text and detail), when the run kept one."""
        files = [e["file"] for e in entries if e["what"] == "removed"]
        if not self.indexed:
            files = [p[len(self.run_dir) + 1:] for p in list_files(self._p(f"removed/{stage}"))
                     if p.endswith(".jsonl.gz")]
        for rel in files:
            self.files_read.append(rel)
            row = read_jsonl_row(self._p(rel), doc_id)
            if row is not None:
                return row
        return None

    def dedup_rows(self, doc_id: str, entries: list[dict]) -> list[dict]:
        if self.indexed:
            return [json.loads(e["detail"]) for e in entries if e["what"] == "dedup"]
        out = []
        for p in list_files(self._p("dedup")):
            if p.endswith(".parquet") and "groups" in p.rsplit("/", 1)[-1]:
                t = pq.read_table(p) if "://" not in p else pq.read_table(_open(p))
                out += t.filter(pc.equal(t.column("id"), doc_id)).to_pylist()
        return out

    def cuts(self, doc_id: str) -> list[dict]:
        """Decontamination cuts of a split document (removed/decontamination/cuts: only split
        documents have rows there)."""
        out = []
        for p in list_files(self._p("removed/decontamination/cuts")):
            if p.endswith(".jsonl.gz"):
                row_text = gzip.decompress(read_bytes(p)).decode("utf-8")
                if json.dumps(doc_id, ensure_ascii=False) in row_text:
                    out += [{**(r.get("detail") or {}), "cut": r.get("id")}
                            for r in map(json.loads, row_text.splitlines()) if r.get("parent") == doc_id]
        return out

    # -- where a kept document is ----------------------------------------------------------------
    def shard_location(self, source: str, doc_id: str) -> dict | None:
        """``{shard, prefix, sequence, token_start, tokens, url, text}`` of a kept document."""
        from pipelines.runfolder.report import read_parquet_rows
        from pipelines.tokenize.shards import SPACE

        shards = [r for r in read_parquet_rows(self._p("stats/shards.parquet")) if r["source"] == source]
        if not shards:
            return None
        max_tokens = ((self.info.get("config") or {}).get("shards") or {}).get("max_tokens_per_shard") or 1
        taken = sum(t.get("tokens_removed", 0) for t in self.info.get("takedowns") or [])
        tokens = (self.info.get("sources") or {}).get(source, {}).get("tokens") or 0
        # n as curate chose it (takedowns keep the layout; their tokens counted back as an upper
        # bound), verified by reading the part; else every part of the source is searched.
        h = stable_hash(doc_id)
        candidates = []
        for n in sorted({max(1, math.ceil(tokens / max_tokens)), max(r["shard"] for r in shards) + 1,
                         max(1, math.ceil((tokens + taken) / max_tokens))}):
            candidates.append(h * n // SPACE)
        by_index = {r["shard"]: r for r in shards}
        order = list(dict.fromkeys([k for k in candidates if k in by_index] + sorted(by_index)))
        for k in order:
            rel = f"documents/{source}/part-{k:05d}.parquet"
            self.files_read.append(rel)
            with _open(self._p(rel)) as f:
                t = pq.read_table(f, columns=["id"])
            i = pc.index(t.column("id"), doc_id).as_py()
            if i < 0:
                continue
            row = read_row(self._p(rel), "id", doc_id)
            return {"shard": k, "prefix": by_index[k]["prefix"], "sequence": i,
                    "token_start": row["token_start"], "tokens": row["tokens"], "url": row.get("url"),
                    "text": row.get("text")}
        return None


def sample_stream(manifest_path: str, run_dir: str, source: str, loc: dict, seq_length: int,
                  num_samples: int, seed: int, batch_sizes: list[int] | None = None) -> dict[str, Any]:
    """Where a kept document's tokens are served in the blended sample stream of a manifest
    (the trainer's ``BlendedDataset`` for these sizes): per epoch, the stream samples holding
    its tokens and the blended sample numbers (and training steps) that serve them."""
    import os

    from blending.manifest import load_manifest
    from blending.sampling import BlendedDataset

    manifest = load_manifest(manifest_path, verify_checksums=False)
    names = [s.name for s in manifest.sources]
    if source not in names:
        return {"note": f"source {source!r} is not in the manifest"}
    entry = manifest.sources[names.index(source)]
    prefix = os.path.normpath(os.path.join(os.path.abspath(run_dir), loc["prefix"]))
    shard_pos = [i for i, sh in enumerate(entry.shards) if os.path.normpath(sh.prefix) == prefix]
    if not shard_pos:
        return {"note": f"the manifest does not use {loc['prefix']} of this run"}
    cache = os.path.join(os.path.dirname(os.path.abspath(manifest_path)), "index_cache")
    ds = BlendedDataset(manifest, seq_length, num_samples, seed,
                        cache_dir=cache if os.path.isdir(cache) else None)
    k = [s.name for s in ds.sources].index(source) if source in [s.name for s in ds.sources] else -1
    if k < 0:
        return {"note": f"source {source!r} has weight 0 in the manifest"}
    gpt = ds.datasets[k]
    flat = int(gpt.doc_starts[shard_pos[0]]) + loc["sequence"] - gpt.first_doc
    lengths = gpt.doc_lengths[gpt.document_index].astype(np.int64)
    starts = np.concatenate([[0], np.cumsum(lengths)])
    served = np.full(len(gpt.sample_index) - 1, -1, dtype=np.int64)
    served[np.asarray(gpt.shuffle_index[:len(gpt)], dtype=np.int64)] = np.arange(len(gpt))
    mine = np.flatnonzero(ds.dataset_index == k)
    within = np.asarray(ds.dataset_sample_index)[mine]
    global_of = dict(zip(within.tolist(), mine.tolist()))
    steps = np.cumsum(batch_sizes) if batch_sizes else None
    epochs = []
    for p in np.flatnonzero(np.asarray(gpt.document_index) == flat):
        lo, hi = int(starts[p]), int(starts[p] + lengths[p])  # the document's stream tokens
        first, last = lo // seq_length, min((hi - 1) // seq_length, len(served) - 1)
        samples = []
        for j in range(first, last + 1):
            i = int(served[j]) if j < len(served) else -1
            g = global_of.get(i) if i >= 0 else None
            samples.append({"stream_sample": j, "source_sample": i if i >= 0 else None, "sample": g,
                            "step": int(np.searchsorted(steps, g, side="right")) if steps is not None and g is not None else None})
        epochs.append({"epoch": int(p) // max(1, len(gpt.doc_lengths)), "stream_tokens": [lo, hi],
                       "samples": samples})
    return {"source": source, "seq_length": seq_length, "num_samples": num_samples, "seed": seed,
            "epochs": epochs}
