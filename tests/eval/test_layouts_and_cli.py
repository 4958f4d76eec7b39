"""`mtnlg eval` end to end: layout independence (a tp 2 checkpoint scores as its tp 1 reload),
data parallelism over examples (2 processes = 1 process), several checkpoints and the report."""
import json
import os
import subprocess
import sys

import pytest

import spawn  # tests/training/spawn.py (the eval conftest puts tests/training on sys.path)
from mtnlg.commands import eval as cli

pytestmark = pytest.mark.xdist_group(spawn.RANK_SERVER_GROUP)

TASKS = "lambada,piqa,winogrande,race"
HERE = os.path.dirname(__file__)


def run_eval(checkpoints, out, *extra):
    args = [a for c in checkpoints for a in ("--checkpoint", c)]
    assert cli.main([*args, "--tasks", TASKS, "--limit", "4", "--output", str(out), *extra]) == 0
    return json.loads(out.read_text())


def per_task(results, keys=("acc", "acc_norm", "ppl", "acc_stderr", "n")):
    return {t: {k: m[k] for k in keys if k in m} for t, m in results["tasks"].items()}


@pytest.mark.slow
def test_tp2_checkpoint_scores_as_its_tp1_reload_and_2_processes_as_1(tmp_path):
    from training.trainer import Trainer

    # tp 2 (2 processes): vocabulary 50257 padded to 50304 rows (a multiple of 128 at every tp)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([os.getcwd(), os.environ.get("PYTHONPATH", "")])}
    rc, log = spawn.run(2, os.path.join(HERE, "tp_worker.py"), tmp_path / "tp2",
                        json.dumps({"parallelism.tp": 2}))  # 2 gloo ranks, torchrun's env
    assert rc == 0, log[-4000:]
    tp2 = str(tmp_path / "tp2" / "checkpoints" / "step-00000002")
    assert json.load(open(os.path.join(tp2, "config.json")))["_tp"] == 2

    # its tp 1 reload through the trainer (the padded vocabulary does not depend on tp)
    from eval_fixtures import BASE, GPT2_TOKENIZER, SEQ
    from training.config import TrainConfig
    from training_fixtures import RepeatedDataset
    cfg = TrainConfig.from_settings({**BASE, "logging.output_dir": str(tmp_path / "tp1")})
    trainer = Trainer(cfg, RepeatedDataset(SEQ, vocab_size=50257), GPT2_TOKENIZER)
    trainer.load_checkpoint(tp2)
    reload = trainer.save_checkpoint()  # tp1/checkpoints/step-00000002
    assert json.load(open(os.path.join(reload, "config.json")))["_tp"] == 1

    a = run_eval([tp2], tmp_path / "a.json")
    b = run_eval([reload], tmp_path / "b.json")
    assert a["checkpoints"][0]["saved_layout"]["tp"] == 2
    assert a["checkpoints"][0]["model"]["padded_vocab_rows"] == 50304
    assert per_task(a) == per_task(b)  # same weights, same real vocabulary: identical numbers
    assert a["checkpoints"][0]["consumed_tokens"] == b["checkpoints"][0]["consumed_tokens"] == 128

    # data parallel over examples: 2 processes (the elastic agent, gloo) give the 1-process numbers
    two = tmp_path / "two.json"
    subprocess.run([sys.executable, "-m", "mtnlg.commands.eval", "--checkpoint", tp2, "--tasks",
                    TASKS, "--limit", "4", "--nproc", "2", "--output", str(two)],
                   check=True, env=env, timeout=300)
    c = json.loads(two.read_text())
    assert c["settings"]["processes"] == 2
    for task, m in per_task(a).items():
        got = per_task(c)[task]
        assert {k: v for k, v in got.items() if k != "ppl"} == \
            {k: v for k, v in m.items() if k != "ppl"}
        if "ppl" in m:
            assert got["ppl"] == pytest.approx(m["ppl"], rel=1e-6)


def test_several_checkpoints_make_a_curve_and_a_report(tmp_path):
    from eval_fixtures import make_checkpoint

    make_checkpoint(str(tmp_path / "run"), **{"schedule.train_steps": 2, "checkpoint.interval": 1})
    out = run_eval([str(tmp_path / "run" / "checkpoints")], tmp_path / "eval.json",
                   "--report", str(tmp_path / "eval.html"), "--shots", "1")
    steps = [(e["step"], e["consumed_tokens"]) for e in out["checkpoints"]]
    assert steps == [(1, 64), (2, 128)]
    assert out["tasks"] == out["checkpoints"][-1]["tasks"]
    assert out["settings"]["shots"] == 1 and out["tasks"]["piqa"]["shots"] == 1
    for task in TASKS.split(","):
        m = out["tasks"][task]
        assert m["n"] == 4 and 0.0 <= m["acc"] <= 1.0 and m["acc_stderr"] is not None
    assert out["tasks"]["lambada"]["ppl"] > 1 and "acc_norm" in out["tasks"]["piqa"]
    page = (tmp_path / "eval.html").read_text()
    assert "<svg" in page and "step-00000002" in page and "lambada" in page


def test_cli_errors_name_the_setting(tmp_path, capsys, tiny_checkpoint):
    assert cli.main(["--checkpoint", str(tmp_path), "--output", str(tmp_path / "x.json")]) == 1
    assert "holds no step-* checkpoints" in capsys.readouterr().err
    assert cli.main(["--checkpoint", tiny_checkpoint, "--tasks", "piqa", "--data",
                     str(tmp_path), "--output", str(tmp_path / "x.json")]) == 1
    assert "--task-data piqa=PATH" in capsys.readouterr().err
    assert cli.main(["--checkpoint", tiny_checkpoint, "--tasks", "mmlu", "--output", "x"]) == 1
    assert "--tasks: unknown task 'mmlu'" in capsys.readouterr().err
