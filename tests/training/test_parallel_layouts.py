"""3D parallelism on CPU/gloo with real processes (torchrun's environment, forked by spawn.py):
every (dp, pp, tp) layout gives the losses of one process to 1e-5 in fp32, over 3 steps whose
global batch ramps 8 -> 12 at step 3 (the number of micro-batches changes); a 2x2x2 checkpoint
continues in 1x2x1 and in one process (tp 2 -> tp 1), and a tp 1 one at tp 2.

The tiny model here has 4 layers, hidden 64, vocabulary 300 (padded to 384 at every tp: a
checkpoint reloads at another tp; Megatron's 128 x tp padding gave 384 at tp 1, 512 at tp 2).
Data parallel is FSDP2's `replicate` (gradient all-reduce overlapped with backward) unless a
test asks for zero1 or fsdp.
"""

import json
from pathlib import Path

import pytest

import spawn
from layout_worker import BASE, SEQ
from training_fixtures import TOKENIZER, RepeatedDataset
from training.config import TrainConfig
from training.trainer import Trainer

pytestmark = pytest.mark.xdist_group(spawn.RANK_SERVER_GROUP)

WORKER = Path(__file__).with_name("layout_worker.py")


# Runs whose checkpoint no test reads write none (a save of this model: 0.3-0.45 s of CPU in
# one process).
NO_CHECKPOINT = {"checkpoint.enabled": False}
VOCAB = {"vocab_size": 300}
TINY = {**BASE, **VOCAB}  # the workers get VOCAB on top of BASE too (torchrun below)


def torchrun(nproc: int, out: Path, timeout: int = 240, **overrides) -> list[dict]:
    """``nproc`` gloo ranks of layout_worker.py (forked by spawn.py, torchrun's environment).
    The run's metrics and checkpoints go beside ``out`` unless ``output_dir`` is given (the
    config's default is relative to the job's working directory, the checkout)."""
    overrides.setdefault("output_dir", str(out.parent))
    overrides = {**VOCAB, **overrides}
    rc, log = spawn.run(nproc, WORKER, out, json.dumps(overrides), timeout=timeout)
    assert rc == 0, log[-4000:]
    return json.loads(out.read_text())


@pytest.fixture(scope="module")
def single(tmp_path_factory) -> list[dict]:
    out = tmp_path_factory.mktemp("single")
    cfg = TrainConfig.from_settings({**TINY, **NO_CHECKPOINT, "output_dir": str(out)})
    return Trainer(cfg, RepeatedDataset(SEQ, distinct=7), TOKENIZER).train()


@pytest.fixture(scope="module")
def run_2x2x2(tmp_path_factory) -> tuple[list[dict], Path]:
    out = tmp_path_factory.mktemp("l222")
    rows = torchrun(8, out / "rows.json", dp=2, pp=2, tp=2, pp_schedule="interleaved_1f1b",
                    virtual_stages=2, output_dir=str(out), **{"checkpoint.interval": 2})
    return rows, out


def assert_same_losses(rows: list[dict], single: list[dict], first_step: int = 1) -> None:
    assert [r["step"] for r in rows] == list(range(first_step, first_step + len(rows)))
    for r in rows:
        s = single[r["step"] - 1]
        assert r["global_batch"] == s["global_batch"]
        assert abs(r["loss"] - s["loss"]) < 1e-5, (r["step"], r["loss"], s["loss"])
        assert abs(r["grad_norm"] - s["grad_norm"]) < 1e-5, (r["step"], r["grad_norm"])


def test_baseline_ramps_the_batch(single):
    assert [r["global_batch"] for r in single] == [8, 8, 12]
    assert single[-1]["loss"] < single[0]["loss"]


# Each layout here is a set of ranks, ~2.5 s of CPU each with tensor parallelism (DTensor's
# sharding propagation starts cold in every rank): tensor parallelism runs with pipeline (1F1B
# below, interleaved in 2x2x2) and data parallelism (2x2x2, FSDP, ZeRO-1), and its checkpoint
# reloads at tp 1 (2x2x2 -> one process) and tp 1's at tp 2; no run of tp 2 alone.
@pytest.mark.slow
def test_pp2_tp2_1f1b_matches_single_process(tmp_path, single):
    # pipeline x tensor, the plain 1F1B schedule
    rows = torchrun(4, tmp_path / "rows.json", pp=2, tp=2, pp_schedule="1f1b",
                    output_dir=str(tmp_path), **NO_CHECKPOINT)
    assert_same_losses(rows, single)


@pytest.mark.slow
def test_2x2x2_interleaved_matches_single_process(run_2x2x2, single):
    rows, out = run_2x2x2
    assert_same_losses(rows, single)
    assert (out / "checkpoints" / "step-00000002" / ".metadata").exists()


@pytest.mark.slow
def test_2x2x2_checkpoint_continues_in_1x2x1(tmp_path, run_2x2x2, single):
    _, out = run_2x2x2
    rows = torchrun(2, tmp_path / "rows.json", dp=1, pp=2, tp=1, output_dir=str(tmp_path),
                    resume=str(out / "checkpoints" / "step-00000002"), **NO_CHECKPOINT)
    assert_same_losses(rows, single, first_step=3)


@pytest.mark.slow
def test_2x2x2_checkpoint_loads_into_one_process(tmp_path, run_2x2x2, single):
    _, out = run_2x2x2
    cfg = TrainConfig.from_settings({**TINY, **NO_CHECKPOINT, "output_dir": str(tmp_path)})
    trainer = Trainer(cfg, RepeatedDataset(SEQ, distinct=7), TOKENIZER)
    trainer.load_checkpoint(str(out / "checkpoints" / "step-00000002"))
    assert trainer.step == 2 and trainer.loader.consumed_samples == 16
    assert_same_losses(trainer.train(), single, first_step=3)


@pytest.mark.slow
@pytest.mark.parametrize("dp, pp, tp", [
    (2, 1, 1),  # FSDP2 alone
    (2, 1, 2),  # FSDP2 over tensor-parallel DTensors: parameters on (dp, tp) and (dp) meshes
    (2, 2, 1),  # FSDP2 on each pipeline stage, tied embedding synced on the dp shards
])
def test_fsdp_layout_matches_single_process(tmp_path, single, dp, pp, tp):
    rows = torchrun(dp * pp * tp, tmp_path / "rows.json", dp=dp, pp=pp, tp=tp,
                    data_parallel="fsdp", output_dir=str(tmp_path))
    assert all(r["fsdp"] for r in rows)  # the model parts really are fully_shard-ed
    assert_same_losses(rows, single)
    assert (tmp_path / "checkpoints" / "step-00000003" / ".metadata").exists()


@pytest.mark.slow
@pytest.mark.parametrize("dp, pp, tp", [
    (2, 1, 2),  # ZeRO-1 over tensor-parallel DTensors
    (2, 2, 1),  # ZeRO-1 on each pipeline stage
])
def test_zero1_matches_single_process(tmp_path, single, dp, pp, tp):
    rows = torchrun(dp * pp * tp, tmp_path / "rows.json", dp=dp, pp=pp, tp=tp,
                    data_parallel="zero1", output_dir=str(tmp_path), **NO_CHECKPOINT)
    assert not rows[0]["fsdp"]
    # optimizer state for about half of the parameters this rank holds
    assert rows[0]["optimizer_params"] < 0.75 * rows[0]["model_params"]
    assert_same_losses(rows, single)


# --- a checkpoint reloads at another tp (the padded vocabulary does not depend on tp) ---------
@pytest.mark.slow
def test_tp1_checkpoint_resumes_at_tp2(tmp_path, single):
    cfg = TrainConfig.from_settings({**TINY, "train_steps": 2,
                                     "output_dir": str(tmp_path / "tp1")})
    Trainer(cfg, RepeatedDataset(SEQ, distinct=7), TOKENIZER).train()
    rows = torchrun(2, tmp_path / "rows.json", tp=2, output_dir=str(tmp_path / "tp2"),
                    resume=str(tmp_path / "tp1" / "checkpoints" / "step-00000002"), **NO_CHECKPOINT)
    assert_same_losses(rows, single, first_step=3)
