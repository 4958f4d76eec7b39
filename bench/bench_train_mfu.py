"""Training throughput on one GPU: the trainer vs a minimal loop of the same model.

    # on one GPU (H100/H200/A100): gpt-1.3b, seq 2048, bf16 autocast, fp32 master weights
    python bench/bench_train_mfu.py --preset gpt-1.3b --seq 2048 --micro-batch 4 --compile
    # smoke run on CPU (what the test runs)
    python bench/bench_train_mfu.py --tiny

Both sides train the same model (same init, same synthetic tokens, AdamW, clipping at 1.0, bf16
autocast) for --warmup untimed and --steps timed optimizer steps, in the same process one after
the other. Reported: tokens/s, TFLOP/s and MFU (formula: training/metrics.py), peak memory, and
the trainer's overhead = 1 - trainer tokens/s / minimal tokens/s. Target: MFU >= 50%, overhead
<= 5%. Prints a Markdown table and, with --json, writes the numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from training.config import TrainConfig  # noqa: E402
from training.metrics import flops_per_token, peak_flops, peak_memory_bytes  # noqa: E402
from training.model import GPT, cross_entropy_loss, param_groups  # noqa: E402
from training.trainer import Trainer  # noqa: E402


class RandomTokens:
    """Deterministic random samples of seq + 1 tokens (no disk I/O in the measurement)."""

    def __init__(self, seq: int, vocab: int, n: int):
        self.data = np.random.default_rng(0).integers(0, vocab, (64, seq + 1), dtype=np.int64)
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return self.data[i % len(self.data)]

    def source_of(self, i):
        return "synthetic"


def bench_trainer(args, steps: int) -> tuple[float, int]:
    vocab = 50257
    cfg = TrainConfig(model=args.preset, seq_length=args.seq, dtype=args.dtype,
                      global_batch_size=args.micro_batch * args.accum,
                      micro_batch_size=args.micro_batch, train_steps=steps, lr=1e-4,
                      warmup_tokens=0, decay_tokens=10**12, compile=args.compile,
                      activation_checkpoint=args.ac, vocab_size=vocab,
                      output_dir=tempfile.mkdtemp(prefix="bench-train-"))
    data = RandomTokens(args.seq, vocab, cfg.global_batch_size * steps)
    trainer = Trainer(cfg, data, {"vocab_size": vocab, "eod_id": vocab - 1})
    trainer.save_checkpoint = lambda path=None: None  # not part of the step being measured
    history = trainer.train()
    timed = history[args.warmup:]
    tokens = sum(r["tokens"] for r in timed)
    seconds = sum(r["step_time_s"] for r in timed)
    return tokens / seconds, peak_memory_bytes(trainer.device)


def bench_minimal(args, steps: int) -> tuple[float, int]:
    from training.model import GPTConfig

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(1234)
    model = GPT(GPTConfig.preset(args.preset, vocab_size=50257)).to(device)
    if args.compile:
        for block in model.layers.values():
            block.compile()
    opt = torch.optim.AdamW(param_groups(model, 0.1), lr=1e-4, betas=(0.9, 0.95), eps=1e-8)
    data = RandomTokens(args.seq, 50257, 1)
    x = torch.from_numpy(data.data[:args.micro_batch]).to(device)
    inputs, targets = x[:, :-1], x[:, 1:]
    dtype = torch.bfloat16 if args.dtype == "bfloat16" else torch.float32
    t0 = None
    for step in range(steps):
        if step == args.warmup:
            if device.type == "cuda":
                torch.cuda.synchronize()
            t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        for _ in range(args.accum):
            with torch.autocast(device.type, dtype=dtype, enabled=dtype != torch.float32):
                loss = cross_entropy_loss(model(inputs), targets)
            (loss / args.accum).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
    if device.type == "cuda":
        torch.cuda.synchronize()
    tokens = (steps - args.warmup) * args.accum * args.micro_batch * args.seq
    return tokens / (time.perf_counter() - t0), peak_memory_bytes(device)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.partition("\n\n")[0])
    p.add_argument("--preset", default="gpt-1.3b")
    p.add_argument("--seq", type=int, default=2048)
    p.add_argument("--micro-batch", type=int, default=4)
    p.add_argument("--accum", type=int, default=2, help="micro-batches per optimizer step")
    p.add_argument("--steps", type=int, default=20, help="timed optimizer steps")
    p.add_argument("--warmup", type=int, default=5, help="untimed steps first")
    p.add_argument("--dtype", default="bfloat16", choices=("bfloat16", "float32"))
    p.add_argument("--ac", default="none", choices=("none", "full", "selective"))
    p.add_argument("--compile", action="store_true", help="torch.compile each block (both sides)")
    p.add_argument("--peak-tflops", type=float, help="device peak, if not detected")
    p.add_argument("--tiny", action="store_true", help="CPU smoke run: tiny preset, seq 64")
    p.add_argument("--json", help="write the results here")
    args = p.parse_args(argv)
    if args.tiny:
        args.preset, args.seq, args.micro_batch, args.accum = "tiny", 64, 2, 2
        args.steps, args.warmup = 3, 1
    steps = args.warmup + args.steps
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    from training.model import GPTConfig
    fpt = flops_per_token(GPTConfig.preset(args.preset, vocab_size=50257), args.seq)
    peak = peak_flops(device, args.peak_tflops)

    minimal_tps, minimal_mem = bench_minimal(args, steps)
    if device.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    trainer_tps, trainer_mem = bench_trainer(args, steps)

    rows = []
    for name, tps, mem in (("minimal loop", minimal_tps, minimal_mem),
                           ("trainer", trainer_tps, trainer_mem)):
        tflops = tps * fpt / 1e12
        rows.append({"run": name, "tokens_per_s": tps, "tflops": tflops,
                     "mfu": tflops * 1e12 / peak if peak else None, "peak_memory_gb": mem / 1e9})
    overhead = 1.0 - trainer_tps / minimal_tps
    dev = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    print(f"\n{args.preset}, seq {args.seq}, micro-batch {args.micro_batch} x {args.accum}, "
          f"{args.dtype}, ac {args.ac}, compile {args.compile}, on {dev}; "
          f"{fpt / 1e9:.2f} GFLOP/token\n")
    print("| run | tokens/s | TFLOP/s | MFU | peak memory (GB) |\n|---|---:|---:|---:|---:|")
    for r in rows:
        mfu = f"{100 * r['mfu']:.1f}%" if r["mfu"] is not None else "n/a"
        print(f"| {r['run']} | {r['tokens_per_s']:.0f} | {r['tflops']:.2f} | {mfu} | "
              f"{r['peak_memory_gb']:.2f} |")
    print(f"\ntrainer overhead: {100 * overhead:.1f}% (target <= 5%)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": dev, "args": vars(args), "flops_per_token": fpt, "rows": rows,
                       "overhead": overhead}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
