"""Parallelism: the (dp, pp, tp) mesh arithmetic and the step that applies parallelism to a plain
model (or one pipeline stage of it), in torchtitan's fixed order:

    tensor parallel -> activation checkpointing -> torch.compile -> data parallel

Each step runs behind a guard and says so in the log. Pipeline splitting (``training.pipeline``)
happens before, on the plain model; the parameter names of the plain model never change, so
checkpoints hold the plain names whatever the layout.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from functools import partial

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.constants import default_pg_timeout
from torch.distributed.device_mesh import DeviceMesh, init_device_mesh

from training.worker import process_group_store

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ParallelDims:
    """Degrees of data, pipeline and tensor parallelism. ``dp=-1`` infers it from world_size.

    The mesh is laid out ("dp", "pp", "tp") with tp innermost, so tensor-parallel groups are
    consecutive ranks (inside a node, NVLink) and pipeline stages are next (across nodes), as in
    MT-NLG's topology-aware mapping.
    """

    dp: int
    pp: int
    tp: int
    world_size: int

    def __post_init__(self):
        for name in ("pp", "tp", "world_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.dp == -1:
            if self.world_size % (self.pp * self.tp):
                raise ValueError(
                    f"world_size {self.world_size} is not divisible by pp * tp = "
                    f"{self.pp} * {self.tp}; launch a multiple of {self.pp * self.tp} processes "
                    f"or change --pp/--tp")
            object.__setattr__(self, "dp", self.world_size // (self.pp * self.tp))
        if self.dp < 1:
            raise ValueError(f"dp must be >= 1 or -1 (infer), got {self.dp}")
        if self.dp * self.pp * self.tp != self.world_size:
            raise ValueError(
                f"dp * pp * tp = {self.dp} * {self.pp} * {self.tp} = "
                f"{self.dp * self.pp * self.tp} but world_size is {self.world_size}; "
                f"launch {self.dp * self.pp * self.tp} processes (--nproc), or set --dp -1 to "
                f"infer dp, or change --dp/--pp/--tp so their product is {self.world_size}")

    @property
    def dp_enabled(self) -> bool:
        return self.dp > 1

    @property
    def pp_enabled(self) -> bool:
        return self.pp > 1

    @property
    def tp_enabled(self) -> bool:
        return self.tp > 1

    def build_mesh(self, device_type: str) -> DeviceMesh:
        return init_device_mesh(device_type, (self.dp, self.pp, self.tp),
                                mesh_dim_names=("dp", "pp", "tp"))


def apply_tp(model: nn.Module, tp_mesh: DeviceMesh) -> None:
    """Megatron tensor parallelism with sequence parallelism, on a plain GPT or a stage of it.

    Vocab-parallel embedding (row-wise), q/k/v and fc1 column-wise, wo and fc2 row-wise with a
    reduce-scatter onto the sequence dimension; LayerNorms run sequence-parallel; the (tied)
    output projection is column-wise and leaves its logits sharded over the vocabulary for
    ``loss_parallel``. Between blocks the residual stream is a plain tensor holding this rank's
    1/tp of the sequence.
    """
    from torch.distributed.tensor import Replicate, Shard
    from torch.distributed.tensor.parallel import (ColwiseParallel, PrepareModuleInput,
                                                   RowwiseParallel, SequenceParallel,
                                                   parallelize_module)

    plan = {}
    if model.tok_embeddings is not None:
        # Replicated output so the (replicated) learned positions can be added; the first block
        # then keeps its sequence slice (a local chunk, no communication).
        plan["tok_embeddings"] = RowwiseParallel(input_layouts=Replicate(),
                                                 output_layouts=Replicate())
        first = next(iter(model.layers))
        plan[f"layers.{first}"] = PrepareModuleInput(input_layouts=(Replicate(),),
                                                     desired_input_layouts=(Shard(1),),
                                                     use_local_output=True)
    if model.norm is not None:
        plan["norm"] = SequenceParallel()
    if model.output is not None:
        plan["output"] = ColwiseParallel(input_layouts=Shard(1), output_layouts=Shard(-1),
                                         use_local_output=False)
    parallelize_module(model, tp_mesh, plan)
    if model.tok_embeddings is not None and model.output is not None:
        # Both styles swapped in their own DTensor parameter: tie them again (same Shard(0)).
        model.output.weight = model.tok_embeddings.weight
    gather_seq = partial(PrepareModuleInput, input_layouts=(Shard(1),),
                         desired_input_layouts=(Replicate(),))
    for block in model.layers.values():
        parallelize_module(block, tp_mesh, {
            "attn_norm": SequenceParallel(),
            "attn": gather_seq(),
            "attn.wq": ColwiseParallel(),
            "attn.wk": ColwiseParallel(),
            "attn.wv": ColwiseParallel(),
            "attn.wo": RowwiseParallel(output_layouts=Shard(1)),
            "mlp_norm": SequenceParallel(),
            "mlp": gather_seq(),
            "mlp.fc1": ColwiseParallel(),
            "mlp.fc2": RowwiseParallel(output_layouts=Shard(1)),
        })


def _selective_policy():
    from torch.utils.checkpoint import CheckpointPolicy

    save = {torch.ops.aten.mm.default, torch.ops.aten.addmm.default,
            torch.ops.aten._scaled_dot_product_efficient_attention.default,
            torch.ops.aten._scaled_dot_product_flash_attention.default,
            torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default}

    def policy(ctx, op, *args, **kwargs):
        return CheckpointPolicy.MUST_SAVE if op in save else CheckpointPolicy.PREFER_RECOMPUTE
    return policy


def apply_ac(model: nn.Module, mode: str) -> None:
    """Activation checkpointing per block. ``full`` keeps only each block's input (MT-NLG);
    ``selective`` also keeps matmul and attention outputs and recomputes the element-wise ops.
    The block's ``forward`` is wrapped in place, so parameter names do not change."""
    from torch.utils.checkpoint import checkpoint, create_selective_checkpoint_contexts

    for block in model.layers.values():
        inner = block.forward
        if mode == "full":
            block.forward = partial(checkpoint, inner, use_reentrant=False)
        else:
            block.forward = partial(checkpoint, inner, use_reentrant=False, context_fn=partial(
                create_selective_checkpoint_contexts, _selective_policy()))


def apply_compile(model: nn.Module, backend: str = "inductor") -> None:
    """torch.compile each block in place (names unchanged; one graph reused by every block)."""
    for block in model.layers.values():
        block.compile(backend=backend)


def apply_dp(model: nn.Module, dp_mesh: DeviceMesh, mode: str, bf16: bool) -> None:
    """Data parallel over the dp mesh with FSDP2's machinery, each block then the root
    (embeddings, norm, output), so each block's gradients are reduced as soon as its backward
    is done, overlapped with the backward of the blocks before it.

    ``fsdp``: ``fully_shard`` (parameters, gradients, optimizer state sharded; bf16 parameters
    and fp32 reduction when bf16). ``ddp`` / ``zero1``: ``replicate`` (parameters replicated,
    gradients all-reduced; bf16 comes from autocast, so the reduction is in fp32). ZeRO-1's
    sharded optimizer state is ``training.optimizer.ZeroOneAdamW``.
    """
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    if mode == "fsdp":
        mp = (MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
              if bf16 else MixedPrecisionPolicy())
        wrap = partial(fully_shard, mesh=dp_mesh, mp_policy=mp)
    else:
        from infra.compat.torch import replicate  # FSDP2's replicate: no public home yet
        wrap = partial(replicate, mesh=dp_mesh)
    for block in model.layers.values():
        wrap(block)
    wrap(model)


def parallelize(model: nn.Module, mesh: DeviceMesh | None, dims: ParallelDims,
                activation_checkpoint: str = "none", compile: bool = False,
                data_parallel: str = "ddp", bf16: bool = False,
                compile_backend: str = "inductor") -> nn.Module:
    """Apply parallelism to a plain model (or one pipeline stage) in place and return it.

    Works on a model built on the meta device (nothing is allocated); ``materialize`` then
    allocates and initialises only this rank's shards.
    """
    if dims.tp_enabled:
        log.info("applying tensor parallel (tp %d) with sequence parallel + loss_parallel",
                 dims.tp)
        apply_tp(model, mesh["tp"])
    if activation_checkpoint != "none":
        log.info("applying %s activation checkpointing to %d blocks", activation_checkpoint,
                 len(model.layers))
        apply_ac(model, activation_checkpoint)
    if compile:
        log.info("compiling %d blocks with torch.compile (%s)", len(model.layers), compile_backend)
        apply_compile(model, compile_backend)
    if dims.dp_enabled:
        log.info("data parallel over %d ranks: %s", dims.dp, {
            "fsdp": "FSDP2 fully_shard" + (" (bf16 params, fp32 reduce)" if bf16 else ""),
            "ddp": "replicate, bucketed all-reduce overlapped with backward",
            "zero1": "replicate + optimizer state sharded over dp (ZeRO-1)"}[data_parallel])
        apply_dp(model, mesh["dp"], data_parallel, bf16)
    else:
        log.info("single data-parallel rank: no gradient reduction")
    return model


@torch.no_grad()
def materialize(model: nn.Module, device: torch.device, seed: int) -> nn.Module:
    """Allocate a meta-built (and parallelized) model on ``device`` and initialise only this
    rank's shard of every parameter, with exactly the values the whole model gets from
    ``GPT(cfg, seed)`` (``training.model.init_rows``): any layout starts from the same weights.
    """
    from torch.distributed.tensor import DTensor

    from training.model import init_rows

    model.to_empty(device=device)
    if model.tok_embeddings is not None and model.output is not None:
        model.output.weight = model.tok_embeddings.weight
    for name, p in model.named_parameters():
        if isinstance(p, DTensor):
            rows, cols = local_indices(p)
            local = p.to_local()
        else:
            rows, cols, local = torch.arange(p.shape[0]), None, p
        values = init_rows(model.cfg, name, seed, tuple(p.shape), rows, cols)
        local.copy_(values.reshape(local.shape).to(local.device, local.dtype))
    return model


def local_indices(p) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Global row (and column) indices of a DTensor's local shard, found by distributing index
    tensors with the parameter's own placements (no communication), so every placement DTensor
    knows (Shard, FSDP2's strided shard over a tensor-parallel shard, Replicate) is handled by
    DTensor itself."""
    from torch.distributed.tensor import distribute_tensor

    mesh, placements, shape = p.device_mesh, p.placements, tuple(p.shape)
    k = mesh.size()  # wide enough that a split of the other dimension leaves each rank a column
    if len(shape) == 1:
        rows = distribute_tensor(torch.arange(shape[0]), mesh, placements, src_data_rank=None)
        return rows.to_local().cpu(), None
    r = torch.arange(shape[0]).view(-1, 1).expand(shape[0], k).contiguous()
    c = torch.arange(shape[1]).view(1, -1).expand(k, shape[1]).contiguous()
    rows = distribute_tensor(r, mesh, placements, src_data_rank=None).to_local()[:, 0]
    cols = distribute_tensor(c, mesh, placements, src_data_rank=None).to_local()[0]
    return rows.cpu(), cols.cpu()


def init_distributed(device_type: str) -> tuple[int, int]:
    """Initialise the default process group when launched by torchrun; returns (rank, world)."""
    if "WORLD_SIZE" not in os.environ or dist.is_initialized():
        return (dist.get_rank(), dist.get_world_size()) if dist.is_initialized() else (0, 1)
    backend = "nccl" if device_type == "cuda" else "gloo"
    if device_type == "cuda":
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", 0)))
    # under an elastic agent that shares its store across rounds: a prefix of this round's own
    # (training.worker), so a restarted group never reads a dead rank's address
    dist.init_process_group(backend, **process_group_store(default_pg_timeout))
    log.info("process group initialised: backend %s, rank %d of %d", backend, dist.get_rank(),
             dist.get_world_size())
    return dist.get_rank(), dist.get_world_size()
