"""Our evaluator against lm-evaluation-harness, on the same checkpoint and the same local files.

lm-eval runs its own task definitions (``include:`` of its installed YAMLs, only the data source
replaced by our files) on the Hugging Face export of the checkpoint; `mtnlg eval`'s code path runs
on the trainer checkpoint itself. Every request must have the same context and continuation
text, the same log-likelihood (float tolerance) and greedy flag, and every metric the same value.
"""
import math

import pytest

lm_eval = pytest.importorskip("lm_eval", reason="lm-eval is not installed (the [eval] extra)")

from curation.tokenizer import GPT2_DIR  # noqa: E402
from training.eval.data import load_task_data  # noqa: E402
from training.eval.lm_eval_tasks import PREFIX, export_hf_with_tokenizer, write_task_yamls  # noqa: E402
from training.eval.load import load_checkpoint_model  # noqa: E402
from training.eval.runner import build_requests, score_requests, task_metrics  # noqa: E402
from training.eval.tasks import MTNLG_TASKS, parse_tasks  # noqa: E402

LIMIT = 4
SEED = 1234
# Few-shot: one task per way lm-eval builds examples (LAMBADA's target with its own leading space,
# WinoGrande's per-option contexts, RACE and LAMBADA drawing from the scored rows without the row
# itself, HellaSwag's cleaned rows, PiQA's training split).
FEWSHOT_TASKS = ("lambada", "winogrande", "race", "hellaswag", "piqa")


@pytest.fixture(scope="module")
def setup(tiny_checkpoint, tmp_path_factory):
    env = pytest.MonkeyPatch()
    env.setenv("HF_DATASETS_OFFLINE", "1")  # no hub: the task files and the model are local
    env.setenv("HF_HUB_OFFLINE", "1")
    # lm-eval's bootstrapped stderr in this process, not in a pool of processes forked from
    # this one per metric (4 documents per task; ~3 s of CPU less)
    env.setenv("DISABLE_MULTIPROC", "1")
    out = tmp_path_factory.mktemp("lm_eval")
    hf = export_hf_with_tokenizer(tiny_checkpoint, str(out / "hf"), GPT2_DIR)
    tasks = parse_tasks("mtnlg")
    write_task_yamls(tasks, str(out / "tasks"))
    model, tok, _ = load_checkpoint_model(tiny_checkpoint)
    yield {"hf": hf, "tasks_dir": str(out / "tasks"), "model": model, "tok": tok,
           "data": [load_task_data(t) for t in tasks]}
    env.undo()


def run_lm_eval(setup, shots: int, tasks) -> dict:
    from lm_eval.tasks import TaskManager

    return lm_eval.simple_evaluate(
        model="hf", model_args={"pretrained": setup["hf"], "dtype": "float32"},
        tasks=[PREFIX + t for t in tasks], num_fewshot=shots,
        task_manager=TaskManager(include_path=setup["tasks_dir"], include_defaults=False),
        device="cpu", batch_size=16, limit=LIMIT, log_samples=True, bootstrap_iters=1000,
        fewshot_random_seed=SEED)


def ours(setup, data, shots):
    reqs = build_requests(data, shots, SEED, LIMIT)
    results = score_requests(setup["model"], setup["tok"], [(r[2], r[3]) for r in reqs], 4096)
    return reqs, results, task_metrics(data, reqs, results)


@pytest.mark.parametrize("shots,tasks", [(0, MTNLG_TASKS), (2, FEWSHOT_TASKS)])
def test_every_request_and_metric_equals_lm_eval(setup, shots, tasks):
    theirs = run_lm_eval(setup, shots, tasks)
    for data in [d for d in setup["data"] if d.task.name in tasks]:
        name = data.task.name
        reqs, results, metrics = ours(setup, data, shots)
        samples = sorted(theirs["samples"][PREFIX + name], key=lambda s: s["doc_id"])
        expected = [(s["doc_id"], c, args, resp) for s in samples
                    for c, (args, resp) in enumerate(zip(s["arguments"], s["filtered_resps"]))]
        assert len(expected) == len(reqs), name
        for (d, c, ctx, cont), (ll, greedy), (d2, c2, args, (ll2, greedy2)) in zip(
                reqs, results, expected):
            assert (d, c) == (d2, c2)
            assert (ctx, cont) == tuple(args), f"{name} doc {d} choice {c}: prompt differs"
            assert ll == pytest.approx(ll2, abs=2e-4, rel=1e-5), f"{name} doc {d} choice {c}"
            assert greedy == greedy2
        got = theirs["results"][PREFIX + name]
        assert metrics["n"] == LIMIT == got["sample_len"]
        for key in ("acc", "acc_norm"):
            if key in data.task.metrics:
                assert metrics[key] == got[f"{key},none"], (name, key)
                assert metrics[key + "_stderr"] == pytest.approx(got[f"{key}_stderr,none"],
                                                                 rel=1e-9, abs=1e-12)
        if "ppl" in data.task.metrics:
            assert metrics["ppl"] == pytest.approx(got["perplexity,none"], rel=1e-5)
            # ours: delta method; lm-eval: bootstrap. Same order of magnitude, not equal.
            boot = got["perplexity_stderr,none"]
            assert math.isfinite(metrics["ppl_stderr"]) and \
                0.2 < metrics["ppl_stderr"] / boot < 5, (metrics["ppl_stderr"], boot)
