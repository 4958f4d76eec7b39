"""Memory plan: parameters and bytes per device for a model under a (dp, pp, tp) layout.

Model state uses MT-NLG's accounting of about 20 bytes per parameter in bf16 mixed precision:
bf16 weights (2) + fp32 master weights (4) + bf16 gradients (2) + fp32 gradient accumulation (4)
+ Adam momentum (4) + Adam variance (4). Data parallelism replicates this (no ZeRO sharding).

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

    @property
    def state_bytes_per_device(self) -> int:
        return self.params_per_device * sum(BYTES_PER_PARAM.values())

    @property
    def total_state_bytes(self) -> int:
        """Model state of one model replica (all tp x pp devices)."""
        return self.total_params * sum(BYTES_PER_PARAM.values())

    def table(self) -> str:
        gb = 1e9
        lines = [
            f"model: {self.model.n_layers} layers, hidden {self.model.hidden}, "
            f"{self.model.n_heads} heads, vocab {self.model.padded_vocab_size(self.tp)} "
            f"(padded), seq {self.seq_length}",
            f"layout: dp {self.dp} x pp {self.pp} x tp {self.tp} = "
            f"{self.dp * self.pp * self.tp} devices ({self.pp * self.tp} per model replica)",
            f"parameters: {self.total_params:,} total ({self.total_params / 1e9:.2f} B); "
            f"{self.params_per_device:,} on the busiest device",
            f"model state of one replica: {self.total_state_bytes / 1e12:.2f} TB "
            f"({sum(BYTES_PER_PARAM.values())} bytes/parameter)",
            "per device:",
        ]
        for what, nbytes in BYTES_PER_PARAM.items():
            lines.append(f"  {what:<24} {self.params_per_device * nbytes / gb:10.2f} GB")
        lines.append(f"  {'model state total':<24} {self.state_bytes_per_device / gb:10.2f} GB")
        lines.append(f"  {'activations (estimate)':<24} {self.activation_bytes_per_device / gb:10.2f}"
                     f" GB  (micro-batch {self.micro_batch}, full checkpointing, "
                     f"{self.pp} micro-batch(es) in flight)")
        total = self.state_bytes_per_device + self.activation_bytes_per_device
        lines.append(f"  {'total':<24} {total / gb:10.2f} GB")
        return "\n".join(lines)


def stage_params(cfg: GPTConfig, pp: int, tp: int) -> list[int]:
    """Parameters of one tensor-parallel shard on each pipeline stage. Layers are split as evenly
    as possible; the first stage holds the embeddings, the last the final norm and the tied output
    embedding copy (as Megatron does). Biases/norms are counted as if sharded (a small
    over-estimate of the savings)."""
    h, f = cfg.hidden, cfg.ffn_multiple * cfg.hidden
    per_layer = 4 * h + 4 * (h * h + h) + 2 * h * f + f + h
    vocab_shard = cfg.padded_vocab_size(tp) * h // tp
    base, extra = divmod(cfg.n_layers, pp)
    out = []
    for stage in range(pp):
        layers = base + (1 if stage < extra else 0)
        n = layers * per_layer // tp
        if stage == 0:
            n += vocab_shard + cfg.max_seq_length * h
        if stage == pp - 1:
            n += 2 * h + (vocab_shard if pp > 1 else 0)
        out.append(n)
    return out


def activation_bytes(cfg: GPTConfig, pp: int, tp: int, seq: int, micro_batch: int) -> int:
    s, b, h, a = seq, micro_batch, cfg.hidden, cfg.n_heads
    layers_per_stage = math.ceil(cfg.n_layers / pp)
    in_flight = pp  # 1F1B: the first stage holds pp micro-batches
    checkpoints = 2 * s * b * h * layers_per_stage * in_flight
    working = s * b * h * (10 + 24 / tp + 5 * a * s / (h * tp))
    return int(checkpoints + working)


def memory_plan(cfg: GPTConfig, dp: int = 1, pp: int = 1, tp: int = 1, seq_length: int | None = None,
                micro_batch: int = 1) -> MemoryPlan:
    for name, v in (("dp", dp), ("pp", pp), ("tp", tp), ("micro_batch", micro_batch)):
        if v < 1:
            raise ValueError(f"{name} must be >= 1, got {v}")
    if pp > cfg.n_layers:
        raise ValueError(f"pp ({pp}) must be <= the number of layers ({cfg.n_layers})")
    if cfg.n_heads % tp:
        raise ValueError(f"tp ({tp}) must divide the number of heads ({cfg.n_heads})")
    seq = seq_length or cfg.max_seq_length
    return MemoryPlan(cfg, dp, pp, tp, seq, micro_batch, cfg.num_params(tp),
                      max(stage_params(cfg, pp, tp)), activation_bytes(cfg, pp, tp, seq,
                                                                       micro_batch))
