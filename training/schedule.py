"""Learning-rate schedule and global-batch ramp-up, as pure functions of consumed tokens.

Both follow Megatron-LM's token-based arithmetic, which MT-NLG used:

* LR: linear warmup from 0 to ``peak`` over ``warmup_tokens``; then cosine decay from ``peak`` to
  ``min_ratio * peak``, reaching the floor at ``decay_tokens`` (counted from token 0, warmup
  included, as Megatron's ``--lr-decay-tokens``); constant afterwards.
  MT-NLG: peak 5e-5, warmup 1B tokens, decay to 10% at 340B tokens.
* Batch: start at ``start`` sequences and grow by ``increment`` every
  ``ramp_tokens / ((target - start) / increment)`` consumed tokens, capped at ``target``.
  MT-NLG: 32 -> 1920 in steps of 32 over 12B tokens (59 increments, one every ~203M tokens).

Both are evaluated at the tokens consumed *before* a step, so a run resumed from a checkpoint
(which stores consumed tokens) continues the exact same schedule.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class LRSchedule:
    peak: float
    warmup_tokens: int
    decay_tokens: int
    min_ratio: float = 0.1

    def __call__(self, consumed_tokens: int) -> float:
        return lr_at(consumed_tokens, self.peak, self.warmup_tokens, self.decay_tokens,
                     self.min_ratio)


def lr_at(consumed_tokens: int, peak: float, warmup_tokens: int, decay_tokens: int,
          min_ratio: float = 0.1) -> float:
    """Learning rate after ``consumed_tokens`` training tokens."""
    min_lr = peak * min_ratio
    if warmup_tokens > 0 and consumed_tokens < warmup_tokens:
        return peak * consumed_tokens / warmup_tokens
    if consumed_tokens >= decay_tokens:
        return min_lr
    ratio = (consumed_tokens - warmup_tokens) / (decay_tokens - warmup_tokens)
    coeff = 0.5 * (math.cos(math.pi * ratio) + 1.0)
    return min_lr + coeff * (peak - min_lr)


@dataclass(frozen=True)
class BatchRampup:
    """Global batch (in sequences) as a function of consumed tokens. ``start=None`` disables it."""

    target: int
    start: int | None = None
    increment: int = 0
    ramp_tokens: int = 0

    def __call__(self, consumed_tokens: int) -> int:
        return batch_size_at(consumed_tokens, self.target, self.start, self.increment,
                             self.ramp_tokens)


def batch_size_at(consumed_tokens: int, target: int, start: int | None = None,
                  increment: int = 0, ramp_tokens: int = 0) -> int:
    """Global batch size (sequences) for the step that begins after ``consumed_tokens``."""
    if start is None or start >= target or ramp_tokens <= 0:
        return target
    num_increments = (target - start) // increment
    # consumed / (ramp_tokens / num_increments), in integers: no float floor at the boundaries
    steps = int(consumed_tokens) * num_increments // int(ramp_tokens)
    return min(target, start + steps * increment)


def plan_steps(train_tokens: int, seq_length: int, rampup: BatchRampup) -> list[int]:
    """Global batch of every step until ``train_tokens`` are consumed (the last step may overshoot,
    as in Megatron's token-based stopping)."""
    sizes, consumed = [], 0
    while consumed < train_tokens:
        b = rampup(consumed)
        sizes.append(b)
        consumed += b * seq_length
    return sizes


def batch_sizes(num_steps: int, seq_length: int, rampup: BatchRampup) -> list[int]:
    """Global batch of each of the first ``num_steps`` steps."""
    sizes, consumed = [], 0
    for _ in range(num_steps):
        b = rampup(consumed)
        sizes.append(b)
        consumed += b * seq_length
    return sizes
