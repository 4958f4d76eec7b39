"""Training throughput on one device: the trainer vs a bare loop of the same model, fed by the
same loader.

    # on one GPU (H100/H200/A100): gpt-1.3b, seq 2048, bf16 autocast, fp32 master weights
    python -m bench.training.train_mfu --preset gpt-1.3b --seq 2048 --micro-batch 4 --repeats 3
    # smoke run on CPU (what the test runs; float32)
    python -m bench.training.train_mfu --tiny

What is measured, honestly:
* the trainer: wall clock of every step of `Trainer.train()` (``wall_time_s``: the loader's
  next batch, the step, metrics.jsonl and TensorBoard logging); checkpoints are off (interval 0)
  and the end-of-run save is outside the timed steps;
* the bare loop: the same model (same init), the same `DistributedSampleLoader` over the same
  dataset producing each step's micro-batches (host to device copy included), AdamW, clipping at
  1.0, bf16 autocast, and a device synchronize per step like the trainer's;
* --repeats runs of each, in alternating order (bare, trainer, trainer, bare, ...), each with
  --warmup untimed steps; tokens/s is per run, the table reports medians and every run;
* peak memory: torch.cuda.max_memory_allocated, reset before every run (CPU: not measured);
* MFU = tokens/s x FLOPs/token (training/metrics.py) / peak FLOP/s of the device, whose name and
  peak are printed (H100 SXM 989, H100 PCIe 756, H100 NVL 835 dense bf16 TFLOP/s;
  --peak-tflops overrides).
Overhead = 1 - trainer tokens/s / bare tokens/s (medians). Target: MFU >= 50%, overhead <= 5%.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time

import numpy as np  # noqa: E402
import torch  # noqa: E402

from training.config import TrainConfig  # noqa: E402
from training.data import DistributedSampleLoader  # noqa: E402
from training.metrics import flops_per_token, peak_flops  # noqa: E402
from training.model import GPT, GPTConfig, cross_entropy_loss, param_groups  # noqa: E402
from training.trainer import Trainer  # noqa: E402

VOCAB = 50257


class RandomTokens:
    """Deterministic random samples of seq + 1 tokens, 256 distinct (no disk I/O)."""

    def __init__(self, seq: int, vocab: int, n: int):
        self.data = np.random.default_rng(0).integers(0, vocab, (256, seq + 1), dtype=np.int64)
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return self.data[i % len(self.data)]

    def source_of(self, i):
        return "synthetic"


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def _reset_memory(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()


def _peak_memory(device: torch.device) -> float | None:
    return torch.cuda.max_memory_allocated() / 1e9 if device.type == "cuda" else None


def run_trainer(args, steps: int, device: torch.device) -> tuple[float, float | None]:
    _reset_memory(device)
    cfg = TrainConfig.from_settings({
        "model.name": args.preset, "seq_length": args.seq, "dtype": args.dtype,
        "global_batch_size": args.micro_batch * args.accum,
        "micro_batch_size": args.micro_batch, "train_steps": steps, "lr": 1e-4,
        "warmup_tokens": 0, "decay_tokens": 10**12, "compile": args.compile,
        "activation_checkpoint": args.ac, "vocab_size": VOCAB, "seed": 1234,
        "output_dir": tempfile.mkdtemp(prefix="bench-train-")})
    data = RandomTokens(args.seq, VOCAB, cfg.schedule.global_batch_size * steps)
    trainer = Trainer(cfg, data, {"vocab_size": VOCAB, "eod_id": VOCAB - 1})
    try:
        history = trainer.train()
    finally:  # the end-of-run checkpoint (16 bytes per parameter) and logs
        shutil.rmtree(cfg.output_dir, ignore_errors=True)
    timed = history[args.warmup:]
    tokens = sum(r["tokens"] for r in timed)
    return tokens / sum(r["wall_time_s"] for r in timed), _peak_memory(device)


def run_bare(args, steps: int, device: torch.device) -> tuple[float, float | None]:
    _reset_memory(device)
    with torch.device(device):
        model = GPT(GPTConfig.preset(args.preset, vocab_size=VOCAB), seed=1234)
    if args.ac != "none":
        from training.parallelize import apply_ac
        apply_ac(model, args.ac)
    if args.compile:
        for block in model.layers.values():
            block.compile()
    opt = torch.optim.AdamW(param_groups(model, 0.1), lr=1e-4, betas=(0.9, 0.95), eps=1e-8)
    batch = args.micro_batch * args.accum
    loader = DistributedSampleLoader(RandomTokens(args.seq, VOCAB, batch * steps), args.seq,
                                     args.micro_batch, device=device)
    dtype = torch.bfloat16 if args.dtype == "bfloat16" else torch.float32
    walls = []
    for _ in range(steps):
        t0 = time.perf_counter()
        step = loader.next_step(batch)
        opt.zero_grad(set_to_none=True)
        for inputs, targets in step.micro_batches:
            with torch.autocast(device.type, dtype=dtype, enabled=dtype != torch.float32):
                loss = cross_entropy_loss(model(inputs), targets)
            (loss / args.accum).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        _sync(device)
        walls.append(time.perf_counter() - t0)
    tokens = (steps - args.warmup) * batch * args.seq
    return tokens / sum(walls[args.warmup:]), _peak_memory(device)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.partition("\n\n")[0])
    p.add_argument("--preset", default="gpt-1.3b")
    p.add_argument("--seq", type=int, default=2048)
    p.add_argument("--micro-batch", type=int, default=4)
    p.add_argument("--accum", type=int, default=2, help="micro-batches per optimizer step")
    p.add_argument("--steps", type=int, default=20, help="timed optimizer steps per run")
    p.add_argument("--warmup", type=int, default=5, help="untimed steps first, per run")
    p.add_argument("--repeats", type=int, default=3, help="runs of each side, alternating")
    p.add_argument("--dtype", default="bfloat16", choices=("bfloat16", "float32"))
    p.add_argument("--ac", default="none", choices=("none", "full", "selective"))
    p.add_argument("--compile", action="store_true", help="torch.compile each block (both sides)")
    p.add_argument("--peak-tflops", type=float, help="device peak, if not detected")
    p.add_argument("--tiny", action="store_true",
                   help="CPU smoke run: tiny preset, seq 64, float32 (CPUs without bf16 units "
                        "emulate bf16 matmuls: 7x slower here)")
    p.add_argument("--json", help="write the results here")
    args = p.parse_args(argv)
    if args.tiny:
        args.preset, args.seq, args.micro_batch, args.accum = "tiny", 64, 2, 2
        args.dtype = "float32"
        args.steps, args.warmup, args.repeats = 3, 1, 2
    steps = args.warmup + args.steps
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    fpt = flops_per_token(GPTConfig.preset(args.preset, vocab_size=VOCAB), args.seq)
    peak = peak_flops(device, args.peak_tflops)
    dev = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    print(f"device: {dev}; peak used for MFU: "
          + (f"{peak / 1e12:.0f} TFLOP/s dense bf16" if peak else "none (MFU not reported)"),
          flush=True)

    sides = {"bare loop": run_bare, "trainer": run_trainer}
    runs: dict[str, list[tuple[float, float | None]]] = {k: [] for k in sides}
    for r in range(args.repeats):
        for name in (list(sides) if r % 2 == 0 else list(reversed(sides))):
            runs[name].append(sides[name](args, steps, device))
            print(f"run {r + 1}: {name:<9} {runs[name][-1][0]:.0f} tokens/s", flush=True)

    rows = []
    for name, results in runs.items():
        tps = statistics.median(t for t, _ in results)
        mems = [m for _, m in results if m is not None]
        tflops = tps * fpt / 1e12
        rows.append({"run": name, "tokens_per_s": tps, "runs_tokens_per_s": [t for t, _ in results],
                     "tflops": tflops, "mfu": tflops * 1e12 / peak if peak else None,
                     "peak_memory_gb": max(mems) if mems else None})
    overhead = 1.0 - rows[1]["tokens_per_s"] / rows[0]["tokens_per_s"]
    print(f"\n{args.preset}, seq {args.seq}, micro-batch {args.micro_batch} x {args.accum}, "
          f"{args.dtype}, ac {args.ac}, compile {args.compile}, on {dev}; "
          f"{fpt / 1e9:.2f} GFLOP/token; {args.repeats} runs per side of {args.warmup} + "
          f"{args.steps} steps, medians\n")
    print("| run | tokens/s (median) | every run | TFLOP/s | MFU | peak memory (GB) |\n"
          "|---|---:|---|---:|---:|---:|")
    for r in rows:
        mfu = f"{100 * r['mfu']:.1f}%" if r["mfu"] is not None else "n/a"
        mem = f"{r['peak_memory_gb']:.2f}" if r["peak_memory_gb"] is not None else "n/a (CPU)"
        every = ", ".join(f"{t:.0f}" for t in r["runs_tokens_per_s"])
        print(f"| {r['run']} | {r['tokens_per_s']:.0f} | {every} | {r['tflops']:.2f} | {mfu} | "
              f"{mem} |")
    print(f"\ntrainer overhead: {100 * overhead:.1f}% (target <= 5%)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": dev, "peak_flops": peak, "args": vars(args),
                       "flops_per_token": fpt, "rows": rows, "overhead": overhead}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
