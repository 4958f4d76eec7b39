"""Pipeline parallelism: split a plain GPT into stages by layers and run them with the schedules of
``torch.distributed.pipelining`` (1F1B, interleaved 1F1B with virtual stages).

Stage ``s`` of ``S = pp * virtual_stages`` owns a contiguous range of layers (the first stages take
the remainder). Pp rank ``r`` holds stages ``r, r + pp, r + 2 pp, ...`` (the interleaved
schedule's "loop" placement). A stage keeps the *global* layer names and drops the rest, so a
checkpoint saved under one layout loads under another. The first stage owns the embeddings, the
last stage the final norm and the output projection, whose weight is a copy of the tied embedding
(kept equal by ``training.grads.sync_tied_embedding``, as in Megatron).
"""

from __future__ import annotations

import copy
import logging

import torch
from torch import nn

log = logging.getLogger(__name__)


def schedule_accepts(schedule: str, n_micro: int, pp: int) -> str | None:
    """Why ``schedule`` cannot run ``n_micro`` micro-batches on ``pp`` ranks, or None."""
    if n_micro < 1:
        return "no micro-batch (increase the global batch or lower dp / micro_batch_size)"
    if schedule == "1f1b" and n_micro < pp:
        return (f"1F1B needs at least pp = {pp}; use pp_schedule: interleaved_1f1b (with "
                f"virtual_stages >= 2), which accepts fewer micro-batches than stages")
    return None


def interleaved_rounds(n_micro: int, pp: int) -> int:
    """Rounds of the interleaved schedule: torch's flexible-pp rule (n_micro // pp rounds of at
    least pp micro-batches) lowered to the nearest divisor of n_micro, so every count works
    (e.g. 112 micro-batches at pp 35: 2 rounds of 56 rather than torch's refusal of 3)."""
    rounds = max(1, n_micro // pp)
    while n_micro % rounds:
        rounds -= 1
    return rounds


def stage_ids(pp_rank: int, pp: int, virtual_stages: int) -> list[int]:
    return [pp_rank + k * pp for k in range(virtual_stages)]


def layer_ranges(n_layers: int, n_stages: int) -> list[range]:
    """Contiguous layer ranges per stage; the first ``n_layers % n_stages`` get one more."""
    if n_layers < n_stages:
        raise ValueError(f"{n_layers} layers cannot fill {n_stages} pipeline stages")
    base, extra = divmod(n_layers, n_stages)
    out, start = [], 0
    for s in range(n_stages):
        n = base + (s < extra)
        out.append(range(start, start + n))
        start += n
    return out


def split_stage(model: nn.Module, stage: int, n_stages: int) -> nn.Module:
    """Turn ``model`` (in place) into pipeline stage ``stage`` of ``n_stages``."""
    keep = {str(i) for i in layer_ranges(len(model.layers), n_stages)[stage]}
    for name in [n for n in model.layers if n not in keep]:
        del model.layers[name]
    if stage > 0:
        model.tok_embeddings = None
        model.pos_embeddings = None
    if stage < n_stages - 1:
        model.norm = None
        model.output = None
    return model


def split_model(model: nn.Module, pp_rank: int, pp: int, virtual_stages: int
                ) -> tuple[list[nn.Module], list[int]]:
    """This rank's stages (model chunks) and their stage indices."""
    n_stages = pp * virtual_stages
    ids = stage_ids(pp_rank, pp, virtual_stages)
    parts = [split_stage(model if i == len(ids) - 1 else copy.deepcopy(model), s, n_stages)
             for i, s in enumerate(ids)]
    for s, part in zip(ids, parts):
        log.info("pipeline stage %d of %d: layers %s%s%s", s, n_stages, list(part.layers),
                 " + embeddings" if part.tok_embeddings is not None else "",
                 " + norm/output" if part.output is not None else "")
    return parts, ids


class PipelineRunner:
    """Runs one optimizer step's micro-batches through this rank's stages. A schedule is built
    per micro-batch count (the batch ramp-up changes it) and reused."""

    def __init__(self, parts: list[nn.Module], ids: list[int], n_stages: int, pp_group,
                 device: torch.device, schedule: str, loss_fn):
        from torch.distributed.pipelining import PipelineStage

        self.stages = [PipelineStage(p, s, n_stages, device, group=pp_group)
                       for p, s in zip(parts, ids)]
        self.schedule_name = schedule
        self.loss_fn = loss_fn
        self.is_first = 0 in ids
        self.is_last = n_stages - 1 in ids
        self._schedules: dict[int, object] = {}

    def _schedule(self, n_micro: int):
        if n_micro not in self._schedules:
            from torch.distributed.pipelining import Schedule1F1B

            if self.schedule_name == "1f1b":
                sched = Schedule1F1B(self.stages[0], n_micro, loss_fn=self.loss_fn,
                                     scale_grads=True)
            else:
                sched = Interleaved1F1B(self.stages, n_micro, loss_fn=self.loss_fn)
            log.info("pipeline schedule %s with %d micro-batches", self.schedule_name, n_micro)
            self._schedules[n_micro] = sched
        return self._schedules[n_micro]

    def step(self, micro_batches: list[tuple[torch.Tensor, torch.Tensor]]) -> torch.Tensor | None:
        """Forward + backward of all micro-batches; gradients are the mean over them. Returns the
        mean loss on the last stage, None elsewhere."""
        sched = self._schedule(len(micro_batches))
        inputs = torch.cat([x for x, _ in micro_batches])
        targets = torch.cat([y for _, y in micro_batches])
        losses: list[torch.Tensor] = []
        args = (inputs,) if self.is_first else ()
        sched.step(*args, target=targets if self.is_last else None, losses=losses)
        if not self.is_last:
            return None
        return torch.stack([_plain(l).detach() for l in losses]).mean()

    @torch.no_grad()
    def eval_step(self, micro_batches) -> torch.Tensor | None:
        """Forward only (validation): mean loss on the last stage, None elsewhere."""
        sched = self._schedule(len(micro_batches))
        inputs = torch.cat([x for x, _ in micro_batches])
        targets = torch.cat([y for _, y in micro_batches])
        losses: list[torch.Tensor] = []
        sched.eval(*((inputs,) if self.is_first else ()),
                   target=targets if self.is_last else None, losses=losses)
        if not self.is_last:
            return None
        return torch.stack([_plain(l).detach() for l in losses]).mean()


def Interleaved1F1B(stages, n_microbatches: int, loss_fn=None):
    """torch's interleaved 1F1B with ``interleaved_rounds`` instead of its own round count
    (which refuses e.g. 112 micro-batches at pp 35). Only the round count differs; the per-rank
    operation order is torch's own and is checked by torch's validator."""
    from infra.compat.torch import interleaved_1f1b

    return interleaved_1f1b(stages, n_microbatches, loss_fn,
                            interleaved_rounds(n_microbatches, stages[0].group_size))


def _plain(t: torch.Tensor) -> torch.Tensor:
    from torch.distributed.tensor import DTensor

    return t.full_tensor() if isinstance(t, DTensor) else t
