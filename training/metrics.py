"""Throughput accounting: model FLOPs per token, peak FLOP/s per device, MFU, peak memory.

MFU (model FLOPs utilisation, Chowdhery et al. 2022, PaLM appendix B) counts only the FLOPs the
model needs, not recomputation:

    flops_per_token = 6 * N_matmul + 12 * n_layers * hidden * seq_length
    MFU = tokens_per_s * flops_per_token / (n_devices * peak_flops_per_device)

``N_matmul`` is the number of weights that take part in matrix multiplies: the blocks' Linear
weights plus the (tied) output projection ``padded_vocab * hidden``; the position table, biases and
LayerNorms are left out. 6 = 2 (multiply-add) x 3 (forward, backward for inputs and for weights).
The second term is attention's QK^T and AV (2 * 2 * T * hidden per token per layer, x 3), without
halving for the causal mask, as PaLM and Megatron count it. Example, gpt-1.3b at seq 2048:
N_matmul = 24 * 12 * 2048^2 + 50304 * 2048 = 1.311e9, so 6 N = 7.87e9 and the attention term
12 * 24 * 2048 * 2048 = 1.21e9: 9.08e9 FLOPs per token.
"""

from __future__ import annotations

import resource
import sys

import torch

from training.model import GPTConfig

# Dense bf16 tensor-core peaks (no sparsity), FLOP/s, matched in order against the device name
# (the more specific names first): H100 PCIe 756, H100 NVL 835, H100 SXM / H200 989.
PEAK_BF16_FLOPS = (("H100 PCIe", 756e12), ("H100 NVL", 835e12), ("H200", 989e12),
                   ("H100", 989e12), ("A100", 312e12), ("A10G", 125e12), ("L4", 121e12),
                   ("V100", 125e12))


def matmul_params(cfg: GPTConfig) -> int:
    h, f = cfg.hidden, cfg.ffn_multiple * cfg.hidden
    return cfg.n_layers * (4 * h * h + 2 * h * f) + cfg.padded_vocab_size() * h


def flops_per_token(cfg: GPTConfig, seq_length: int) -> float:
    return 6.0 * matmul_params(cfg) + 12.0 * cfg.n_layers * cfg.hidden * seq_length


def peak_flops(device: torch.device, override_tflops: float | None = None) -> float | None:
    """Peak bf16 FLOP/s of one device, or None when unknown (CPU): MFU is then not reported."""
    if override_tflops:
        return override_tflops * 1e12
    if device.type != "cuda":
        return None
    name = torch.cuda.get_device_name(device)
    for key, value in PEAK_BF16_FLOPS:
        if key in name:
            return value
    return None


def peak_memory_bytes(device: torch.device) -> int:
    """Peak accelerator memory allocated by this process; on CPU the peak resident set size."""
    if device.type == "cuda":
        return int(torch.cuda.max_memory_allocated(device))
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(rss if sys.platform == "darwin" else rss * 1024)


class MetricsLogger:
    """Rank 0's metrics: one JSON object per line in ``metrics.jsonl`` (train steps carry
    ``loss``; evaluations carry ``val_loss``) and, optionally, TensorBoard event files
    (``train/*``, ``val/*`` scalars by step). A resumed run appends to both; ``resume_step``
    first drops what a failed attempt logged after the checkpoint it resumes from (those steps
    run again), so each step appears once: lines with a larger ``step`` are removed from
    ``metrics.jsonl`` and TensorBoard purges its events from ``resume_step + 1`` on."""

    TB_SCALARS = ("loss", "grad_norm", "lr", "global_batch", "tokens_per_s", "wall_time_s",
                  "tflops_per_device", "mfu")

    def __init__(self, path: str, tensorboard_dir: str | None = None, append: bool = False,
                 resume_step: int | None = None):
        import os

        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        if append and resume_step is not None:
            _drop_rows_after(path, resume_step)
        self.file = open(path, "a" if append else "w")
        self.tb = None
        if tensorboard_dir:
            from torch.utils.tensorboard import SummaryWriter
            purge = resume_step + 1 if append and resume_step is not None else None
            self.tb = SummaryWriter(tensorboard_dir, purge_step=purge)

    def log(self, record: dict, prefix: str = "train") -> None:
        import json

        self.file.write(json.dumps(record) + "\n")
        self.file.flush()
        if self.tb is not None:
            for key in self.TB_SCALARS if prefix == "train" else record:
                value = record.get(key)
                if isinstance(value, (int, float)) and not isinstance(value, bool) \
                        and key != "step":
                    self.tb.add_scalar(f"{prefix}/{key.removeprefix('val_')}", value,
                                       record["step"])
            self.tb.flush()

    def close(self) -> None:
        self.file.close()
        if self.tb is not None:
            self.tb.close()


def _drop_rows_after(path: str, step: int) -> None:
    """Rewrite a metrics.jsonl without the lines of steps after ``step`` (atomically)."""
    import json
    import os

    if not os.path.exists(path):
        return
    with open(path) as f:
        lines = f.readlines()
    keep = []
    for line in lines:
        try:
            row_step = json.loads(line).get("step")
        except (ValueError, AttributeError):
            continue  # a line cut short by the failure
        if row_step is None or row_step <= step:
            keep.append(line if line.endswith("\n") else line + "\n")
    if len(keep) != len(lines):
        tmp = f"{path}.tmp-{os.getpid()}"
        with open(tmp, "w") as f:
            f.writelines(keep)
        os.replace(tmp, path)
