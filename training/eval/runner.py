"""Evaluate one model on several tasks, data-parallel over requests.

Every process builds the same prompts (few-shot sampling is seeded and runs in row order on
every rank), takes every ``world``-th request of the length-sorted list, scores it, and the
log-likelihoods are gathered so every rank computes the same metrics. One process or N
processes give the same numbers up to batch composition (float32 sums, about 1e-6).
"""
from __future__ import annotations

import logging
import sys
import time
from typing import Any

import torch.distributed as dist

from training.eval.data import TaskData, fewshot_prefixes
from training.eval.scoring import choice_metrics, encode_pair, loglikelihood_metrics, \
    loglikelihoods

log = logging.getLogger(__name__)


def build_requests(data: TaskData, shots: int, seed: int, limit: int | None):
    """``[(doc index, choice index, context, continuation)]`` for one task."""
    docs = data.docs[:limit] if limit else data.docs
    prefixes = fewshot_prefixes(data, shots, seed, limit)
    return [(d, c, ctx, cont) for d, (doc, prefix) in enumerate(zip(docs, prefixes))
            for c, (ctx, cont) in enumerate(data.task.requests(doc, prefix))]


def _rank_world() -> tuple[int, int]:
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def _progress(total: int, rank: int):
    if rank != 0 or not sys.stderr.isatty():
        return None
    from tqdm import tqdm
    return tqdm(total=total, desc="eval", unit="req")


def score_requests(model, tok, texts: list[tuple[str, str]], batch_tokens: int) -> list:
    """(log-likelihood, is_greedy) for every (context, continuation), this rank's share scored
    here and the rest gathered from the other ranks."""
    rank, world = _rank_world()
    order = sorted(range(len(texts)), key=lambda i: -len(texts[i][0]) - len(texts[i][1]))
    mine = order[rank::world]
    bar = _progress(len(mine), rank)
    scored = loglikelihoods(model, [encode_pair(tok, *texts[i]) for i in mine], batch_tokens, bar)
    if bar is not None:
        bar.close()
    pairs = list(zip(mine, scored))
    if world > 1:
        gathered: list[Any] = [None] * world
        dist.all_gather_object(gathered, pairs)
        pairs = [p for part in gathered for p in part]
    out: list[Any] = [None] * len(texts)
    for i, result in pairs:
        out[i] = result
    return out


def task_metrics(data: TaskData, requests: list, results: list) -> dict[str, Any]:
    task = data.task
    if task.kind == "loglikelihood":
        metrics = loglikelihood_metrics(results)
    else:
        per_doc: dict[int, list[float]] = {}
        for (d, _, _, _), (ll, _) in zip(requests, results):
            per_doc.setdefault(d, []).append(ll)
        rows = [(lls, task.choice_lengths(data.docs[d]) if "acc_norm" in task.metrics else [],
                 task.gold(data.docs[d])) for d, lls in sorted(per_doc.items())]
        metrics = choice_metrics(rows, "acc_norm" in task.metrics)
    n = len({r[0] for r in requests})
    return {**metrics, "n": n, "primary": task.primary}


def evaluate(model, tok, datasets: list[TaskData], shots: int = 0, seed: int = 1234,
             limit: int | None = None, batch_tokens: int = 8192) -> dict[str, dict[str, Any]]:
    """``{task: {acc, acc_stderr, [acc_norm, ...], [ppl, ...], n, shots, seconds}}``."""
    out: dict[str, dict[str, Any]] = {}
    for data in datasets:
        t0 = time.perf_counter()
        reqs = build_requests(data, shots, seed, limit)
        results = score_requests(model, tok, [(r[2], r[3]) for r in reqs], batch_tokens)
        out[data.task.name] = {**task_metrics(data, reqs, results), "shots": shots,
                               "requests": len(reqs),
                               "seconds": round(time.perf_counter() - t0, 3),
                               "data": data.source}
        log.info("%s: %s", data.task.name, {k: v for k, v in out[data.task.name].items()
                                            if k in ("acc", "acc_norm", "ppl", "n")})
    return out


__all__ = ["evaluate", "build_requests", "score_requests", "task_metrics"]
