"""Checkpoints are sealed by checksums.json and verified before anything is unpickled; the
manager keeps the last K; async saves are sealed too; errors in `mtnlg train` are one line."""

import json
import os
import pickle
from pathlib import Path

import pytest

from training_fixtures import TOKENIZER, RepeatedDataset, write_manifest
from training.checkpoint import CheckpointError, load_plain_model, sealed_steps, \
    verify_checkpoint
from training.config import TrainConfig
from training.trainer import Trainer

SEQ = 16


def config(tmp_path, **kw) -> TrainConfig:
    base = {"model.name": "tiny", "model.overrides": {"n_layers": 2}, "seq_length": SEQ,
            "global_batch_size": 4, "micro_batch_size": 2, "train_steps": 2, "lr": 3e-3,
            "warmup_tokens": 0, "decay_tokens": 10**6, "output_dir": str(tmp_path / "out"),
            "tensorboard": False}
    return TrainConfig.from_settings({**base, **kw})


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("ckpt")
    Trainer(config(tmp), RepeatedDataset(SEQ), TOKENIZER).train()
    return tmp / "out" / "checkpoints" / "step-00000002"


def copy_of(saved: Path, tmp_path: Path) -> Path:
    import shutil
    dst = tmp_path / "step-00000002"
    shutil.copytree(saved, dst)
    return dst


def test_sealed_checkpoint_verifies_and_loads(saved):
    doc = json.loads((saved / "checksums.json").read_text())
    assert {".metadata", "config.json", "__0_0.distcp"} <= set(doc["files"])
    verify_checkpoint(str(saved))
    model = load_plain_model(str(saved))
    assert model.cfg.n_layers == 2


@pytest.mark.parametrize("victim", [".metadata", "__0_0.distcp", "config.json"])
def test_flipped_byte_refused(saved, tmp_path, victim):
    ckpt = copy_of(saved, tmp_path)
    data = bytearray((ckpt / victim).read_bytes())
    data[len(data) // 2] ^= 1
    (ckpt / victim).write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match=f"{victim}.*does not match its sha256"):
        verify_checkpoint(str(ckpt))


class _Payload:
    def __init__(self, marker: str):
        self.marker = marker

    def __reduce__(self):
        return (os.mkdir, (self.marker,))


def test_crafted_metadata_is_refused_before_unpickling(saved, tmp_path):
    ckpt = copy_of(saved, tmp_path)
    marker = tmp_path / "code-ran"
    (ckpt / ".metadata").write_bytes(pickle.dumps(_Payload(str(marker))))
    trainer = Trainer(config(tmp_path / "t"), RepeatedDataset(SEQ), TOKENIZER)
    with pytest.raises(CheckpointError, match=r"\.metadata does not match its sha256"):
        trainer.load_checkpoint(str(ckpt))
    with pytest.raises(CheckpointError):
        load_plain_model(str(ckpt))
    assert not marker.exists()  # the pickle was never loaded
    pickle.loads((ckpt / ".metadata").read_bytes())  # ... and it would have run code
    assert marker.exists()


def test_unsealed_or_grown_checkpoint_refused(saved, tmp_path):
    ckpt = copy_of(saved, tmp_path)
    (ckpt / "extra.bin").write_bytes(b"x")
    with pytest.raises(CheckpointError, match="files not in checksums.json: extra.bin"):
        verify_checkpoint(str(ckpt))
    os.remove(ckpt / "checksums.json")
    with pytest.raises(CheckpointError, match="no checksums.json"):
        verify_checkpoint(str(ckpt))


def test_keep_last_and_async_save(tmp_path):
    cfg = config(tmp_path, train_steps=4, **{"checkpoint.interval": 1, "keep_last": 2,
                                             "async_save": True})
    full = Trainer(cfg, RepeatedDataset(SEQ), TOKENIZER).train()
    root = tmp_path / "out" / "checkpoints"
    assert sealed_steps(str(root)) == [3, 4]
    assert sorted(os.listdir(root)) == ["step-00000003", "step-00000004"]
    resumed = Trainer(config(tmp_path / "r", train_steps=4), RepeatedDataset(SEQ), TOKENIZER)
    resumed.load_checkpoint(str(root / "step-00000003"))
    assert [r["loss"] for r in resumed.train()] == [full[3]["loss"]]


# --- `mtnlg train`: one clear line, non-zero exit, no traceback ---------------------------------
# In this process: the errors are raised and printed by training.launch.main before any rank
# starts (the launcher's preflight) or by the single process itself; what is tested is the
# message and the exit code, which an interpreter per case (each importing torch) adds nothing to.
def run_cli(capsys, *args: str) -> tuple[int, str]:
    from training import launch

    import logging

    capsys.readouterr()
    # In process, a logging handler left by an earlier test on this worker may hold that test's
    # closed capture stream; logging then prints "--- Logging error ---" with a traceback. A real
    # `mtnlg train` process starts with fresh handlers, so such stale ones are dropped here.
    loggers = [logging.getLogger()] + [v for v in logging.root.manager.loggerDict.values()
                                       if isinstance(v, logging.Logger)]
    for logger in loggers:
        for handler in list(logger.handlers):
            if getattr(getattr(handler, "stream", None), "closed", False):
                logger.removeHandler(handler)
    code = launch.main(list(args))
    return code, capsys.readouterr().err


def assert_one_line_error(result, *needles):
    code, err = result
    assert code == 2, err[-2000:]
    assert "Traceback" not in err, err[-2000:]
    errors = [l for l in err.splitlines() if l.startswith("mtnlg train: error:")]
    assert len(errors) == 1, err[-2000:]
    for needle in needles:
        assert needle in errors[0], errors[0]


def test_cli_errors_are_one_line(tmp_path, saved, capsys, monkeypatch):
    for var in ("RANK", "WORLD_SIZE", "LOCAL_RANK"):
        monkeypatch.delenv(var, raising=False)
    manifest = write_manifest(str(tmp_path / "blend"), repeat=2)
    sets = ["--set", "model.name=tiny", "--set", "seq_length=32", "--set", "train_steps=1",
            "--set", "global_batch_size=2", "--set", "tensorboard=false"]
    # a wrong setting: refused before any process starts (here: before torchrun)
    assert_one_line_error(run_cli(capsys, "--manifest", manifest, *sets, "--set", "lr=-1",
                                  "--nproc", "2"), "optimizer.lr")
    assert_one_line_error(run_cli(capsys, "--manifest", manifest, *sets, "--tp", "3"),
                          "parallelism.tp")
    # a tampered checkpoint
    ckpt = copy_of(saved, tmp_path)
    (ckpt / "__0_0.distcp").write_bytes(b"tampered")
    assert_one_line_error(run_cli(capsys, "--manifest", manifest, *sets, "--output",
                                  str(tmp_path / "o"), "--resume", str(ckpt)),
                          "__0_0.distcp", "does not match")
    # a flipped byte in a shard's .idx (the .bin case is in test_trainer.py)
    idx = tmp_path / "blend" / "shards" / "books" / "books_00000.idx"
    data = bytearray(idx.read_bytes())
    data[-1] ^= 1
    idx.write_bytes(bytes(data))
    assert_one_line_error(run_cli(capsys, "--manifest", manifest, *sets, "--nproc", "2"),
                          "books_00000.idx", "checksum mismatch")
