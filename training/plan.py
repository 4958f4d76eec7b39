"""Memory plan: parameters and bytes per device for a model under a (dp, pp, tp) layout.

Model state uses MT-NLG's accounting of about 20 bytes per parameter in bf16 mixed precision:
bf16 weights (2) + fp32 master weights (4) + bf16 gradients (2) + fp32 gradient accumulation (4)
+ Adam momentum (4) + Adam variance (4). ``ddp`` replicates all of it over dp; ``zero1`` divides
the fp32 master weights and Adam moments (12 bytes) by dp; ``fsdp`` divides everything by dp.

``meta_check`` builds the real rank-local model of every pipeline stage on the meta device
under a fake process group of the full world size (tensor parallelism applied exactly as in
training) and counts its parameters, to check the formula (``stage_params``).

Activations follow Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large
Transformer Models"): with full activation checkpointing per block (MT-NLG) a stage keeps each
block's bf16 input, 2*s*b*h bytes, for every micro-batch in flight (up to pp under 1F1B on the
first stage), plus one block's full activations while recomputing it,
s*b*h*(10 + 24/t + 5*a*s/(h*t)) bytes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from training.model import GPTConfig

BYTES_PER_PARAM = {"bf16 weights": 2, "fp32 master weights": 4, "bf16 grads": 2,
                   "fp32 grad accumulation": 4, "Adam momentum": 4, "Adam variance": 4}
SHARDED_BY_ZERO1 = ("fp32 master weights", "Adam momentum", "Adam variance")


@dataclass(frozen=True)
class MemoryPlan:
    model: GPTConfig
    dp: int
    pp: int
    tp: int
    seq_length: int
    micro_batch: int
    total_params: int
    params_per_device: int          # the heaviest pipeline stage, one tensor-parallel shard
    activation_bytes_per_device: int
    data_parallel: str = "ddp"

    def bytes_per_device(self, what: str) -> float:
        n = self.params_per_device * BYTES_PER_PARAM[what]
        if self.data_parallel == "fsdp" or (self.data_parallel == "zero1" and what in SHARDED_BY_ZERO1):
            return n / self.dp
        return n

    @property
    def state_bytes_per_device(self) -> int:
        return int(sum(self.bytes_per_device(w) for w in BYTES_PER_PARAM))

    @property
    def total_state_bytes(self) -> int:
        """Model state of one model replica (all tp x pp devices)."""
        return self.total_params * sum(BYTES_PER_PARAM.values())

    def table(self) -> str:
        gb = 1e9
        lines = [
            f"model: {self.model.n_layers} layers, hidden {self.model.hidden}, "
            f"{self.model.n_heads} heads, vocab {self.model.padded_vocab_size()} "
            f"(padded), seq {self.seq_length}",
            f"layout: dp {self.dp} x pp {self.pp} x tp {self.tp} = "
            f"{self.dp * self.pp * self.tp} devices ({self.pp * self.tp} per model replica), "
            f"data parallel {self.data_parallel}",
            f"parameters: {self.total_params:,} total ({self.total_params / 1e9:.2f} B); "
            f"{self.params_per_device:,} on the busiest device",
            f"model state of one replica: {self.total_state_bytes / 1e12:.2f} TB "
            f"({sum(BYTES_PER_PARAM.values())} bytes/parameter)",
            "per device:",
        ]
        for what, nbytes in BYTES_PER_PARAM.items():
            lines.append(f"  {what:<24} {self.bytes_per_device(what) / gb:10.2f} GB")
        lines.append(f"  {'model state total':<24} {self.state_bytes_per_device / gb:10.2f} GB")
        lines.append(f"  {'activations (estimate)':<24} {self.activation_bytes_per_device / gb:10.2f}"
                     f" GB  (micro-batch {self.micro_batch}, full checkpointing, "
                     f"{self.pp} micro-batch(es) in flight)")
        total = self.state_bytes_per_device + self.activation_bytes_per_device
        lines.append(f"  {'total':<24} {total / gb:10.2f} GB")
        return "\n".join(lines)


def stage_params(cfg: GPTConfig, pp: int, tp: int, virtual_stages: int = 1) -> list[int]:
    """Parameters on one device of each pipeline rank, exactly as training holds them: layers
    split as ``training.pipeline.layer_ranges`` over pp * virtual_stages stages (rank r holds
    stages r, r + pp, ...); the first stage holds the embeddings (vocabulary sharded over tp,
    positions replicated), the last the final norm and the tied output embedding's copy (as
    Megatron does). Column-parallel weights and biases (q, k, v, fc1) and row-parallel
    weights (wo, fc2) are sharded over tp; LayerNorms and row-parallel biases are replicated."""
    from training.pipeline import layer_ranges

    h, f = cfg.hidden, cfg.ffn_multiple * cfg.hidden
    per_layer = (3 * (h * h + h) + f * h + f) // tp + (h * h + h * f) // tp + 4 * h + 2 * h
    vocab_shard = cfg.padded_vocab_size() * h // tp
    n_stages = pp * virtual_stages
    ranges = layer_ranges(cfg.n_layers, n_stages)
    out = []
    for rank in range(pp):
        n = 0
        for stage in range(rank, n_stages, pp):
            n += len(ranges[stage]) * per_layer
            if stage == 0:
                n += vocab_shard + cfg.max_seq_length * h
            if stage == n_stages - 1:
                n += 2 * h + (vocab_shard if n_stages > 1 else 0)
        out.append(n)
    return out


def meta_check(cfg: GPTConfig, pp: int, tp: int, virtual_stages: int = 1) -> list[int]:
    """Parameters per device of each pipeline rank, counted on the real rank-local model:
    built on the meta device, split into this rank's stages and tensor-parallelized over a
    fake process group of pp * tp ranks (no memory, no communication). Ranks whose stages have
    the same shape (layer counts, first/last stage) hold the same model, so one of each kind
    is built."""
    import copy

    import torch

    from infra.compat.torch import fake_world
    from training.model import GPT
    from training.parallelize import ParallelDims, apply_tp
    from training.pipeline import layer_ranges, split_model

    world = pp * tp
    with fake_world(world):
        mesh = ParallelDims(1, pp, tp, world).build_mesh("cpu")
        with torch.device("meta"):
            model = GPT(cfg)
        n_stages = pp * virtual_stages
        ranges = layer_ranges(cfg.n_layers, n_stages)
        by_kind: dict[tuple, int] = {}
        counts = []
        for rank in range(pp):
            kind = tuple((len(ranges[s]), s == 0, s == n_stages - 1)
                         for s in range(rank, n_stages, pp))
            if kind not in by_kind:
                parts, _ = (split_model(copy.deepcopy(model), rank, pp, virtual_stages)
                            if n_stages > 1 else ([copy.deepcopy(model)], [0]))
                n = 0
                for part in parts:
                    if tp > 1:
                        apply_tp(part, mesh["tp"])
                    n += sum((p.to_local() if hasattr(p, "to_local") else p).numel()
                             for p in part.parameters())
                by_kind[kind] = n
            counts.append(by_kind[kind])
        return counts


def activation_bytes(cfg: GPTConfig, pp: int, tp: int, seq: int, micro_batch: int,
                     virtual_stages: int = 1) -> int:
    s, b, h, a = seq, micro_batch, cfg.hidden, cfg.n_heads
    layers_per_stage = math.ceil(cfg.n_layers / pp)
    # 1F1B: the first stage holds pp micro-batches. Interleaved (an estimate): the warm-up of
    # the other v - 1 chunks keeps about (v - 1) / v x pp more micro-batches' block inputs
    in_flight = pp + (virtual_stages - 1) * pp // max(1, virtual_stages)
    checkpoints = 2 * s * b * h * layers_per_stage * in_flight
    working = s * b * h * (10 + 24 / tp + 5 * a * s / (h * tp))
    return int(checkpoints + working)


def memory_plan(cfg: GPTConfig, dp: int = 1, pp: int = 1, tp: int = 1, seq_length: int | None = None,
                micro_batch: int = 1, virtual_stages: int = 1,
                data_parallel: str = "ddp") -> MemoryPlan:
    for name, v in (("dp", dp), ("pp", pp), ("tp", tp), ("micro_batch", micro_batch)):
        if v < 1:
            raise ValueError(f"{name} must be >= 1, got {v}")
    if pp * virtual_stages > cfg.n_layers:
        raise ValueError(f"pp * virtual_stages ({pp} * {virtual_stages}) must be <= the number "
                         f"of layers ({cfg.n_layers})")
    if cfg.n_heads % tp:
        raise ValueError(f"tp ({tp}) must divide the number of heads ({cfg.n_heads})")
    seq = seq_length or cfg.max_seq_length
    return MemoryPlan(cfg, dp, pp, tp, seq, micro_batch, cfg.num_params(),
                      max(stage_params(cfg, pp, tp, virtual_stages)),
                      activation_bytes(cfg, pp, tp, seq, micro_batch, virtual_stages),
                      data_parallel)
