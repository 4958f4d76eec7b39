"""A blend search's proxies: which mixtures, where each result lives, resuming and running them.

``mtnlg blend search`` (``mtnlg.commands.blend_search``) trains one small proxy model per
mixture.  This module holds the parts that need neither torch nor the trainer:

- ``ProxyJob``: one proxy (its mixture, seed and ``key``).  The key is the sha256 of everything
  that decides the proxy's result: the search's fingerprint (the spec's sources and split, the
  shards' checksums, the training config after overrides, the measurement settings) plus the
  mixture and seed.  A result is reused only when its recorded key equals the job's, so a
  changed config, corpus or mixture retrains instead of reusing a stale number.
- ``ResultStore``: ``SEARCH/proxies/<name>.json``, one file per proxy, written atomically by
  whoever ran the proxy (a pool worker, or a cluster job) as soon as it finishes.  A killed
  search loses at most the proxies that were running; the next run trains only what has no
  valid result.
- ``run_jobs``: the pending jobs, one at a time in this process or ``jobs`` at once in worker
  processes, through a *runner* seam: ``runner(job_dict, context) -> result dict`` (the real
  one trains with the bundled trainer; tests pass a cheap function).
"""
from __future__ import annotations

import concurrent.futures
import datetime
import hashlib
import json
import logging
import multiprocessing
import os
import time
from dataclasses import asdict, dataclass
from typing import Any, Callable

import numpy as np

from blending.manifest import write_text_atomically

log = logging.getLogger(__name__)

FORMAT_VERSION = 1
Runner = Callable[[dict, dict], dict]


def canonical_hash(data: Any) -> str:
    """sha256 of ``data`` as canonical JSON (sorted keys; floats as repr, so exact)."""
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True)
class ProxyJob:
    """One proxy run of the search."""

    name: str
    """File stem: ``p0007`` for the sampled proxies, ``verify-spec-s1234`` for the checks."""
    role: str
    """``proxy`` (fitted), ``spec`` / ``proposal`` (the verification runs, never fitted)."""
    weights: tuple[float, ...]
    seed: int
    key: str

    def to_json(self) -> dict:
        return asdict(self)


def make_job(name: str, role: str, weights, seed: int, fingerprint: str) -> ProxyJob:
    w = tuple(float(x) for x in weights)
    return ProxyJob(name, role, w, int(seed),
                    canonical_hash({"search": fingerprint, "weights": w, "seed": int(seed)}))


def write_json_atomic(path: str, data: Any) -> None:
    """``data`` as indented JSON, written atomically (see ``write_text_atomically``)."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    write_text_atomically(path, json.dumps(data, indent=2, sort_keys=True) + "\n")


class ResultStore:
    """``ROOT/proxies/<name>.json``: one finished proxy each (job, key, result, timing)."""

    def __init__(self, root: str):
        self.root = os.path.abspath(root)
        self.folder = os.path.join(self.root, "proxies")

    def path(self, name: str) -> str:
        return os.path.join(self.folder, f"{name}.json")

    def load(self, job: ProxyJob) -> dict | None:
        """The stored record of ``job``, or None: missing, unreadable (logged), or made by a
        different search (another key: logged as stale, and retrained)."""
        path = self.path(job.name)
        if not os.path.isfile(path):
            return None
        try:
            with open(path, encoding="utf-8") as f:
                record = json.load(f)
        except (OSError, json.JSONDecodeError) as e:
            log.warning("%s is unreadable (%s): the proxy is trained again", path, e)
            return None
        if record.get("format_version") != FORMAT_VERSION or record.get("key") != job.key:
            log.info("%s was made by a different search (config, corpus or mixture changed): "
                     "stale, trained again", path)
            return None
        return record

    def save(self, job: ProxyJob, result: dict, seconds: float) -> dict:
        record = {"format_version": FORMAT_VERSION, **job.to_json(), "result": result,
                  "seconds": round(seconds, 3),
                  "finished": datetime.datetime.now(datetime.timezone.utc)
                  .isoformat(timespec="seconds")}
        write_json_atomic(self.path(job.name), record)
        return record


def run_and_record(runner: Runner, job: dict, context: dict) -> dict:
    """Run one proxy and store its result (in the process that ran it, so a result survives a
    killed search); returns the stored record."""
    j = ProxyJob(**job)
    t0 = time.perf_counter()
    result = runner(job, context)
    return ResultStore(context["search_dir"]).save(j, result, time.perf_counter() - t0)


def _init_worker(threads: int) -> None:
    # one core per proxy: torch's and BLAS's pools sized to the machine would oversubscribe it
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(threads)


def run_jobs(jobs: list[ProxyJob], runner: Runner, context: dict, n_jobs: int = 1,
             on_done: Callable[[dict], None] | None = None) -> dict[str, dict]:
    """Every job's record: stored ones reused, the others run (``n_jobs`` at once in spawned
    worker processes, each importing the trainer once; 1: in this process)."""
    store = ResultStore(context["search_dir"])
    records: dict[str, dict] = {}
    pending = []
    for job in jobs:
        record = store.load(job)
        if record is None:
            pending.append(job)
        else:
            records[job.name] = record
    if records:
        log.info("%d of %d proxies already finished (reused)", len(records), len(jobs))
    if not pending:
        return records
    if n_jobs < 1:
        raise ValueError(f"--jobs must be >= 1, got {n_jobs}")
    if n_jobs == 1 or len(pending) == 1:
        for job in pending:
            records[job.name] = run_and_record(runner, job.to_json(), context)
            if on_done:
                on_done(records[job.name])
        return records
    threads = max(1, (os.cpu_count() or 1) // n_jobs)
    ctx = multiprocessing.get_context("spawn")  # no fork of a process that may hold threads
    with concurrent.futures.ProcessPoolExecutor(min(n_jobs, len(pending)), mp_context=ctx,
                                                initializer=_init_worker,
                                                initargs=(threads,)) as pool:
        futures = {pool.submit(run_and_record, runner, job.to_json(), context): job
                   for job in pending}
        try:
            for fut in concurrent.futures.as_completed(futures):
                record = fut.result()  # a failed proxy ends the search
                records[record["name"]] = record
                if on_done:
                    on_done(record)
        except BaseException:
            # the running proxies finish and store themselves; those not started are dropped
            for fut in futures:
                fut.cancel()
            raise
    return records


# --- what is measured ------------------------------------------------------------------------

def parse_target(target: str, source_names: list[str]) -> tuple[str, str | None, bool]:
    """``mean`` | ``source:NAME`` | ``eval:TASK[:METRIC]`` -> (kind, detail, minimize)."""
    kind, _, rest = target.partition(":")
    if kind == "mean" and not rest:
        return "mean", None, True
    if kind == "source" and rest:
        if rest not in source_names:
            from infra.config import ConfigError
            raise ConfigError(f"--target source:{rest}: no such source (sources: "
                              f"{', '.join(source_names)})")
        return "source", rest, True
    if kind == "eval" and rest:
        task, _, metric = rest.partition(":")
        metric = metric or "acc"
        return "eval", f"{task}:{metric}", metric == "ppl"
    from infra.config import ConfigError
    raise ConfigError(f"--target {target!r}: expected mean, source:NAME or eval:TASK[:METRIC]")


def target_value(result: dict, kind: str, detail: str | None) -> float | None:
    """The target of one proxy's result (None where it was not measured)."""
    losses = result.get("per_source") or {}
    if kind == "mean":
        vals = [v for v in losses.values() if v is not None]
        return float(np.mean(vals)) if vals else None
    if kind == "source":
        v = losses.get(detail)
        return None if v is None else float(v)
    task, _, metric = (detail or "").partition(":")
    v = (result.get("eval") or {}).get(task, {}).get(metric)
    return None if v is None else float(v)


def train_split_tokens(manifest) -> dict[str, int]:
    """Tokens in each source's train split (all of it without a split): what a weight may draw
    on before the epoch cap."""
    from blending.indexed_dataset import IndexedDataset

    out = {}
    for s in manifest.sources:
        first, last = manifest.split_range(s, "train")
        lengths = [IndexedDataset(sh.prefix).sequence_lengths for sh in s.shards]
        flat = np.concatenate(lengths) if lengths else np.zeros(0, np.int64)
        out[s.name] = int(flat[first:last].sum(dtype=np.int64))
    return out
