import math

import pytest

from training.schedule import (BatchRampup, LRSchedule, batch_size_at, batch_sizes, lr_at,
                               plan_steps)

B = 1_000_000_000
MTNLG_LR = LRSchedule(peak=5.0e-5, warmup_tokens=1 * B, decay_tokens=340 * B, min_ratio=0.1)
MTNLG_RAMP = BatchRampup(target=1920, start=32, increment=32, ramp_tokens=12 * B)


def test_mtnlg_warmup_is_linear_over_1b_tokens():
    assert MTNLG_LR(0) == 0.0
    assert MTNLG_LR(B // 2) == pytest.approx(2.5e-5)
    assert MTNLG_LR(B) == pytest.approx(5.0e-5)


def test_mtnlg_cosine_to_10_percent_at_340b():
    mid = (1 + 340) * B // 2  # halfway through the decay: cos(pi/2) = 0
    assert MTNLG_LR(mid) == pytest.approx(0.5e-5 + 0.5 * 4.5e-5)
    assert MTNLG_LR(340 * B) == pytest.approx(5.0e-6)
    assert MTNLG_LR(500 * B) == pytest.approx(5.0e-6)  # floor after the decay
    # 270B tokens trained: still above the floor
    ratio = (270 - 1) / (340 - 1)
    assert MTNLG_LR(270 * B) == pytest.approx(5e-6 + 0.5 * (math.cos(math.pi * ratio) + 1) * 4.5e-5)


def test_lr_monotone():
    xs = [MTNLG_LR(t * B) for t in range(0, 400, 7)]
    peak = xs.index(max(xs))
    assert xs[:peak + 1] == sorted(xs[:peak + 1])
    assert xs[peak:] == sorted(xs[peak:], reverse=True)


def test_lr_no_warmup():
    assert lr_at(0, 1.0, 0, 100) == 1.0


def test_mtnlg_batch_rampup():
    # 59 increments of 32 over 12B tokens: one every 12B/59 ~ 203.4M tokens
    assert MTNLG_RAMP(0) == 32
    assert MTNLG_RAMP(203_000_000) == 32
    assert MTNLG_RAMP(204_000_000) == 64
    assert MTNLG_RAMP(6 * B) == 960  # 6B / 203.4M = 29.5 increments
    assert MTNLG_RAMP(12 * B - 1) == 1888
    assert MTNLG_RAMP(12 * B) == 1920
    assert MTNLG_RAMP(270 * B) == 1920
    sizes = {MTNLG_RAMP(t * 100_000_000) for t in range(130)}
    assert sizes == set(range(32, 1921, 32))


def test_no_rampup():
    assert batch_size_at(0, 1920) == 1920
    assert BatchRampup(target=8)(123) == 8


def test_step_plans():
    ramp = BatchRampup(target=8, start=2, increment=2, ramp_tokens=30)  # 3 increments / 10 tok
    assert batch_sizes(5, seq_length=1, rampup=ramp) == [2, 2, 2, 2, 2]
    assert batch_sizes(8, 1, ramp) == [2, 2, 2, 2, 2, 4, 4, 4]
    assert plan_steps(10, 1, ramp) == [2, 2, 2, 2, 2]
    assert plan_steps(11, 1, ramp) == [2, 2, 2, 2, 2, 4]
