"""AdamW's groups let torch's multi-tensor step (what it picks on a GPU) run on every layout:
tensor parallelism leaves some parameters plain tensors, and one multi-tensor operation cannot
mix them with DTensors (training.optimizer.foreach_groups). The layouts are built over a fake
process group (meshes and DTensor shapes are real; no communication is needed to step)."""
import pytest
import torch
from torch.distributed.tensor import DTensor

from infra.compat.torch import fake_world
from training.config import TrainConfig
from training.model import GPT, PRESETS, param_groups
from training.optimizer import build_optimizer
from training.parallelize import ParallelDims, apply_dp, apply_tp


def _kinds(params) -> set:
    return {p.device_mesh.mesh_dim_names if isinstance(p, DTensor) else "plain" for p in params}


@pytest.mark.parametrize("dp, tp, data_parallel", [(1, 2, None), (2, 2, "fsdp")])
def test_multi_tensor_adamw_steps_every_layout(dp, tp, data_parallel):
    cfg = TrainConfig.from_settings({"model.name": "tiny", "schedule.train_steps": 1})
    with fake_world(dp * tp):
        mesh = ParallelDims(dp, 1, tp, dp * tp).build_mesh("cpu")
        model = GPT(PRESETS["tiny"])
        apply_tp(model, mesh["tp"])
        if data_parallel:
            apply_dp(model, mesh["dp"], data_parallel, False)
        assert len(_kinds(model.parameters())) == 2  # plain + tp, or (dp, tp) + (dp) meshes
        if data_parallel is None:  # the failure: one group of both kinds cannot step
            mixed = torch.optim.AdamW(param_groups(model, 0.1), lr=1e-3, foreach=True)
            for p in model.parameters():
                p.grad = torch.ones_like(p)
            with pytest.raises(RuntimeError, match="mixed torch.Tensor and DTensor"):
                mixed.step()
        before = {n: (p.to_local() if isinstance(p, DTensor) else p).detach().clone()
                  for n, p in model.named_parameters()}
        opt = build_optimizer(model, cfg)
        assert all(len(_kinds(g["params"])) == 1 for g in opt.param_groups)
        assert sum(len(g["params"]) for g in opt.param_groups) == len(before)
        for g in opt.param_groups:
            g["foreach"] = True  # what torch chooses for these parameters on a GPU
        for p in model.parameters():
            p.grad = torch.ones_like(p)
        opt.step()
        after = {n: (p.to_local() if isinstance(p, DTensor) else p) for n, p in model.named_parameters()}
        assert all(not torch.equal(before[n], after[n]) for n in before)  # every parameter stepped
