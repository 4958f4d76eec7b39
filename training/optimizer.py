"""AdamW, replicated or with its state sharded over data parallelism (ZeRO stage 1).

``data_parallel: zero1`` (Rajbhandari et al. 2020, stage 1): gradients are all-reduced as in
``ddp`` (``replicate``, overlapped with backward), but each dp rank keeps Adam's moments for,
and steps, only the parameters it owns; after the step every owner broadcasts its updated
parameters to the other dp ranks. Optimizer state per rank is 1/dp of the replicated case
(8 of the 20 bytes/parameter of bf16 mixed precision are replicated, 12 divided by dp).
Ownership is whole tensors, balanced by size (largest first to the least loaded rank, the
partition of ``torch.distributed.optim.ZeroRedundancyOptimizer``, which itself cannot step
tensor-parallel DTensor parameters). The optimizer is a plain ``torch.optim.AdamW`` over the
owned parameters, so ``torch.distributed.checkpoint`` saves each rank's share under the
parameters' plain names and any layout can load it.

On a GPU torch steps AdamW with its multi-tensor kernels (``foreach``; DTensor registers itself
for them), and a multi-tensor operation cannot mix plain tensors with DTensors: tensor
parallelism leaves some parameters plain, and the first step fails with "got mixed torch.Tensor
and DTensor" (reproduced on the CPU with ``foreach`` forced: tests/training/test_optimizer_groups.py).
Each group is therefore split until its parameters are plain tensors only or DTensors
of one mesh only (``foreach_groups``; FSDP over tensor parallelism puts parameters on a (dp, tp)
and a (dp) mesh). On the CPU torch steps one tensor at a time, which mixes freely (and was
was faster in the layout tests' ranks than ``foreach=True``). The checkpoint's
optimizer state is keyed by parameter name, not by group, so any split loads.
"""

from __future__ import annotations

import torch
import torch.distributed as dist
from torch.distributed.tensor import DTensor

from training.model import param_groups


def partition(sizes: list[int], n: int) -> list[int]:
    """Owner rank of each tensor: largest first to the least loaded rank (ties: lowest)."""
    load = [0] * n
    owner = [0] * len(sizes)
    for i in sorted(range(len(sizes)), key=lambda i: (-sizes[i], i)):
        r = min(range(n), key=lambda j: (load[j], j))
        owner[i] = r
        load[r] += sizes[i]
    return owner


def foreach_groups(groups: list[dict]) -> list[dict]:
    """``groups`` split so that each holds plain tensors only, or DTensors of one mesh only
    (the same options in each part; empty parts left out)."""
    out = []
    for g in groups:
        kinds: dict[object, list[torch.Tensor]] = {}
        for p in g["params"]:
            kinds.setdefault(p.device_mesh if isinstance(p, DTensor) else None, []).append(p)
        out += [{**g, "params": params} for params in kinds.values()]
    return out


class ZeroOneAdamW(torch.optim.AdamW):
    """AdamW over the parameters this dp rank owns; ``broadcast_parameters`` after ``step``."""

    def __init__(self, model: torch.nn.Module, weight_decay: float, dp_group, **adam):
        self.dp_group = dp_group
        self.dp_rank, self.dp_size = dist.get_rank(dp_group), dist.get_world_size(dp_group)
        params = [p for p in model.parameters() if p.requires_grad]
        owners = partition([p.numel() for p in params], self.dp_size)
        self.owned_by = [[p for p, o in zip(params, owners) if o == r]
                         for r in range(self.dp_size)]
        mine = {id(p) for p in self.owned_by[self.dp_rank]}
        groups = [{**g, "params": [p for p in g["params"] if id(p) in mine]}
                  for g in param_groups(model, weight_decay)]
        super().__init__(foreach_groups(groups), **adam)

    @torch.no_grad()
    def broadcast_parameters(self) -> None:
        """Every owner sends its freshly stepped parameters to the other dp ranks (one flat
        bucket per owner and dtype)."""
        for r, params in enumerate(self.owned_by):
            src = dist.get_global_rank(self.dp_group, r)
            by_dtype: dict[torch.dtype, list[torch.Tensor]] = {}
            for p in params:
                local = p.to_local() if isinstance(p, DTensor) else p.data
                by_dtype.setdefault(local.dtype, []).append(local)
            for tensors in by_dtype.values():
                flat = torch.cat([t.reshape(-1) for t in tensors])
                dist.broadcast(flat, src=src, group=self.dp_group)
                if r != self.dp_rank:
                    values = flat.split([t.numel() for t in tensors])
                    for dst, value in zip(tensors, values):
                        dst.copy_(value.view_as(dst))


def build_optimizer(model: torch.nn.Module, cfg, dp_group=None) -> torch.optim.Optimizer:
    """AdamW for one model part, from the ``optimizer`` section; ZeRO-1 when ``dp_group``."""
    o = cfg.optimizer
    adam = dict(lr=o.lr, betas=(o.adam_beta1, o.adam_beta2), eps=o.adam_eps)
    if dp_group is not None:
        return ZeroOneAdamW(model, o.weight_decay, dp_group, **adam)
    return torch.optim.AdamW(foreach_groups(param_groups(model, o.weight_decay)), **adam)
