"""Gradient bookkeeping across the (dp, pp, tp) mesh: the tied-embedding sync between the first
and last pipeline stage, and clipping at the *global* norm. (Data-parallel reduction happens in
backward, in FSDP2's `replicate` / `fully_shard`: ``training.parallelize.apply_dp``.)

The global norm is the norm over every parameter of the whole model, counted once:
tensor-parallel shards (DTensors) are reduced over their mesh, pipeline stages add their squared
norms over the pp group, data-parallel replicas hold identical gradients (after averaging) and are
not summed, and the last stage's copy of the tied embedding is left out (the first stage counts
it), as Megatron does.
"""

from __future__ import annotations

import math
from typing import Iterable

import torch
import torch.distributed as dist
from torch.distributed.tensor import DTensor


def _local(t: torch.Tensor) -> torch.Tensor:
    return t.to_local() if isinstance(t, DTensor) else t


def tied_embedding_group(mesh) -> object | None:
    """Process group {first pp stage, last pp stage} of this rank's (dp, tp) coordinate, or None
    when this rank is a middle stage. Every rank creates every group (new_group is collective)."""
    ranks = mesh.mesh  # [dp, pp, tp] tensor of global ranks
    mine = None
    for d in range(ranks.shape[0]):
        for t in range(ranks.shape[2]):
            pair = [int(ranks[d, 0, t]), int(ranks[d, -1, t])]
            group = dist.new_group(pair)
            if dist.get_rank() in pair:
                mine = group
    return mine


def sync_tied_embedding(weights: list[torch.nn.Parameter], group) -> None:
    """Sum the gradients of the embedding (first stage) and its copy used as the output
    projection (last stage), so both copies take the same optimizer step."""
    for w in weights:
        if w.grad is None:
            continue
        if isinstance(w.grad, DTensor) and w.grad.placements != w.placements:
            # e.g. a vocab-parallel embedding's gradient can come back in another placement:
            # both copies must hold the same shard before they are summed.
            w.grad = w.grad.redistribute(w.device_mesh, w.placements)
        dist.all_reduce(_local(w.grad), group=group)


def _sum_of_squares(grads: list[torch.Tensor]) -> torch.Tensor:
    dtensors = [g for g in grads if isinstance(g, DTensor)]
    plain = [g for g in grads if not isinstance(g, DTensor)]
    total = torch.zeros((), dtype=torch.float32)
    by_mesh: dict[object, list[torch.Tensor]] = {}
    for g in dtensors:
        # FSDP over tp puts the tp-sharded parameters on a (dp, tp) mesh and the rest on (dp):
        # DTensor ops cannot mix meshes, so each mesh is reduced on its own.
        by_mesh.setdefault(g.device_mesh, []).append(g)
    for same_mesh in by_mesh.values():
        # DTensor norms reduce over their mesh (tp shards, FSDP shards) in full_tensor().
        norm = torch.nn.utils.get_total_norm(same_mesh, 2.0, foreach=False)
        norm = norm.full_tensor() if isinstance(norm, DTensor) else norm
        total = total.to(norm.device) + norm.float() ** 2
    if plain:
        norm = torch.nn.utils.get_total_norm(plain, 2.0, foreach=False)
        total = total.to(norm.device) + norm.float() ** 2
    return total


def clip_grad_norm_(params: list[torch.nn.Parameter], max_norm: float, pp_group=None,
                    skip: Iterable[torch.nn.Parameter] = ()) -> float:
    """Clip all gradients by the global norm (see module docstring); returns that norm."""
    skip_ids = {id(p) for p in skip}
    grads = [p.grad for p in params if p.grad is not None and id(p) not in skip_ids]
    device = grads[0].device if grads else torch.device("cpu")
    sq = _sum_of_squares(grads).to(device) if grads else torch.zeros((), device=device)
    if pp_group is not None:
        dist.all_reduce(sq, group=pp_group)
    total = float(sq.sqrt())
    if max_norm > 0 and math.isfinite(max_norm):
        coef = max_norm / (total + 1e-6)
        if coef < 1.0:
            for p in params:  # the skipped tied copy is clipped too: it must stay equal
                if p.grad is not None:
                    p.grad.mul_(coef)
    return total
