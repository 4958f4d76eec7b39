"""Parallelism: the (dp, pp, tp) mesh arithmetic and the step that applies parallelism to a plain
model, in torchtitan's fixed order: tensor parallel -> activation checkpointing -> compile ->
data parallel (pipeline splitting happens before, on the plain model).

Today only data parallelism is implemented (DDP over the mesh's "dp" group: gradient all-reduce,
gloo on CPU, NCCL on GPU). Tensor and pipeline parallelism have their seams here
(`apply_tp`, `split_pipeline`) and fail loudly when asked for, rather than being silently ignored.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.device_mesh import DeviceMesh, init_device_mesh

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


def check_supported(dims: ParallelDims) -> None:
    """Refuse layouts this trainer cannot run yet, naming the setting."""
    if dims.tp_enabled:
        raise NotImplementedError(
            f"tensor parallelism (tp={dims.tp}) is not yet supported by this trainer; set tp: 1 "
            f"(--tp 1) and use data parallelism")
    if dims.pp_enabled:
        raise NotImplementedError(
            f"pipeline parallelism (pp={dims.pp}) is not yet supported by this trainer; set pp: 1 "
            f"(--pp 1) and use data parallelism")


def split_pipeline(model: nn.Module, mesh: DeviceMesh, dims: ParallelDims) -> nn.Module:
    """Seam for pipeline parallelism: keep this stage's layers (by global index), drop the rest,
    and build a `torch.distributed.pipelining` schedule. Not implemented yet."""
    if dims.pp_enabled:
        raise NotImplementedError("pipeline parallelism is not yet supported (set pp: 1)")
    return model


def apply_tp(model: nn.Module, tp_mesh: DeviceMesh) -> None:
    """Seam for tensor parallelism: `parallelize_module` with wq/wk/wv/fc1 column-wise and
    wo/fc2 row-wise, sequence parallel norms, `loss_parallel`. Not implemented yet."""
    raise NotImplementedError("tensor parallelism is not yet supported (set tp: 1)")


def parallelize(model: nn.Module, mesh: DeviceMesh | None, dims: ParallelDims) -> nn.Module:
    """Apply parallelism to a plain model in place; returns the module to call for training
    (the DDP wrapper, or the model itself with dp == 1). Parameter names of the plain model are
    unchanged, so checkpoints hold the plain names."""
    check_supported(dims)
    if dims.tp_enabled:
        apply_tp(model, mesh["tp"])
    if dims.dp_enabled:
        assert mesh is not None, "data parallelism needs a device mesh"
        group = mesh["dp"].get_group()
        device_ids = None
        if next(model.parameters()).device.type == "cuda":
            device_ids = [torch.cuda.current_device()]
        log.info("applying data parallel (DDP, %s) over %d ranks", dist.get_backend(group),
                 dims.dp)
        return nn.parallel.DistributedDataParallel(model, device_ids=device_ids,
                                                   process_group=group)
    log.info("single data-parallel rank: no gradient all-reduce")
    return model


def init_distributed(device_type: str) -> tuple[int, int]:
    """Initialise the default process group when launched by torchrun; returns (rank, world)."""
    if "WORLD_SIZE" not in os.environ or dist.is_initialized():
        return (dist.get_rank(), dist.get_world_size()) if dist.is_initialized() else (0, 1)
    backend = "nccl" if device_type == "cuda" else "gloo"
    if device_type == "cuda":
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", 0)))
    dist.init_process_group(backend)
    log.info("process group initialised: backend %s, rank %d of %d", backend, dist.get_rank(),
             dist.get_world_size())
    return dist.get_rank(), dist.get_world_size()
