"""One proxy of a blend search: a manifest for its mixture, a small training run, its losses.

``run_proxy(job, context)`` is the runner ``blending.search.run_jobs`` calls (in this process, or
in a pool worker):

1. the spec with the job's weights (and the search's split) -> ``PROXY/manifest.json`` through
   the project's blend code (``blending.build.build_manifest``: shard checksums checked);
2. the bundled trainer (``training.trainer.Trainer``, one process) with the search's config and
   seed: every proxy sees the same token budget, model init and schedule; no checkpoint
   (``checkpoint.enabled: false``) and no blended validation (measured below instead);
3. the trained model's loss on each source's held-out *valid* split (the same documents and
   samples for every proxy: the split depends on each source's documents, not on the weights),
   up to ``valid_samples`` sequences per source; and, when the target is an eval task, its score
   through the evaluator (``training.eval``).

On a cluster each proxy is one job: ``python -m mtnlg.blend_proxy SEARCH/jobs/NAME.json`` (what
``mtnlg blend search --launcher`` runs or prints) writes ``SEARCH/proxies/NAME.json`` itself.
"""
from __future__ import annotations

import json
import logging
import os
import sys

log = logging.getLogger("mtnlg.blend_proxy")


def _train_config(context: dict, out_dir: str, seed: int):
    from training.config import TrainConfig

    settings = dict(context["train_settings"])
    settings.update({"logging.output_dir": os.path.join(out_dir, "train"),
                     "logging.tensorboard": False, "checkpoint.enabled": False,
                     "checkpoint.interval": 0, "checkpoint.resume": None,
                     "validation.batches": 0, "validation.interval": 0, "seed": seed})
    return TrainConfig.from_yaml(context["train_config"], settings)


def keep_freed_memory() -> None:
    """glibc: serve allocations up to 32 MB from the heap and keep up to 256 MB of freed heap.

    A proxy allocates and frees the same logits buffers at every step (a sequence of 128 tokens
    over GPT-2's 50,304 padded columns is 26 MB); by default glibc maps each large buffer fresh
    and unmaps it on free, and the page faults cost as much CPU as the arithmetic (measured on
    the 2-core VM: 12 steps of the demo config at micro-batch 1, 3.5 s CPU with this, 6.9 s
    without at micro-batch 2; the losses equal). Elsewhere (not glibc) it does nothing."""
    import ctypes

    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(-3, 32 * 1024 * 1024)  # M_MMAP_THRESHOLD: glibc's maximum
        libc.mallopt(-1, 256 * 1024 * 1024)  # M_TRIM_THRESHOLD
    except (OSError, AttributeError):
        pass


def per_source_valid_loss(model, manifest, seq_length: int, seed: int, max_samples: int,
                          batch: int = 1) -> tuple[dict[str, float | None], dict[str, int]]:
    """Mean next-token loss of ``model`` on each source's valid split: up to ``max_samples``
    sequences of ``seq_length`` (Megatron's sample index over the split's documents, shuffled
    with ``seed``, one epoch at most). Sources without valid documents get None. ``batch``
    sequences per forward: 1 keeps the logits under glibc's mmap limit (``keep_freed_memory``)."""
    import numpy as np
    import torch

    from blending.sampling import GPTSampleIndex
    from training.model import cross_entropy_loss

    losses, tokens = {}, {}
    device = next(model.parameters()).device
    model.eval()
    with torch.no_grad():
        for s in manifest.sources:
            first, last = manifest.split_range(s, "valid")
            index = GPTSampleIndex(s, seq_length, 0, seed, cache_dir=None,
                                   doc_range=(first, last), split="valid") if last > first else None
            n = min(max_samples, max(0, (index.tokens_per_epoch - 1) // seq_length)) \
                if index is not None else 0
            if n == 0:
                losses[s.name], tokens[s.name] = None, 0
                continue
            index = GPTSampleIndex(s, seq_length, n, seed, cache_dir=None,
                                   doc_range=(first, last), split="valid")
            total, count = 0.0, 0
            for b in range(0, n, batch):
                rows = torch.from_numpy(np.stack(
                    [index[i] for i in range(b, min(n, b + batch))])).to(device)
                loss = cross_entropy_loss(model(rows[:, :-1]), rows[:, 1:])
                total += float(loss) * rows[:, 1:].numel()
                count += rows[:, 1:].numel()
            losses[s.name], tokens[s.name] = total / count, count
    return losses, tokens


def _eval_scores(model, manifest_path: str, tasks: list[str], task_data: dict) -> dict:
    from training.eval.data import load_task_data
    from training.eval.load import EvalModel, resolve_tokenizer
    from training.eval.runner import evaluate
    from training.eval.tasks import get_task

    tok = resolve_tokenizer(model.cfg.vocab_size, None, manifest_path)
    datasets = [load_task_data(get_task(t), None, task_data.get(t)) for t in tasks]
    scores = evaluate(EvalModel.from_gpt(model), tok, datasets)
    return {t: {k: v for k, v in m.items() if isinstance(v, (int, float))}
            for t, m in scores.items()}


def run_proxy(job: dict, context: dict) -> dict:
    """Train and measure one proxy (see the module docstring); returns its result."""
    import torch

    from blending.build import build_manifest
    from blending.manifest import load_manifest
    from blending.search_outputs import with_weights
    from blending.spec import load_blend_spec
    from training.trainer import Trainer

    keep_freed_memory()
    out_dir = os.path.join(context["search_dir"], "proxies", job["name"])
    spec = load_blend_spec(context["spec_path"])
    split = context.get("split")
    spec = with_weights(spec, job["weights"], name=f"{spec.name}-{job['name']}",
                        split=tuple(split) if split else None)
    manifest_path = os.path.join(out_dir, "manifest.json")
    build_manifest(spec, context["runs"], manifest_path)
    cfg = _train_config(context, out_dir, job["seed"])
    torch.manual_seed(job["seed"])
    trainer = Trainer.from_manifest(cfg, manifest_path)
    history = trainer.train()
    s = cfg.schedule
    if (trainer.step < s.train_steps if s.train_steps is not None
            else trainer.consumed_tokens < s.train_tokens):
        # the trainer ends early on SIGTERM (a killed search): such a proxy saw less data than
        # the others, so it is not recorded and a rerun trains it again
        raise RuntimeError(f"proxy {job['name']} stopped early, at step {trainer.step} "
                           f"({trainer.consumed_tokens} tokens; SIGTERM?): not recorded")
    reference = load_manifest(context["reference_manifest"], verify_checksums=False)
    losses, tokens = per_source_valid_loss(trainer.model, reference, cfg.seq_length,
                                           context["valid_seed"], context["valid_samples"])
    result = {"per_source": losses, "valid_tokens": tokens, "steps": trainer.step,
              "train_tokens": trainer.consumed_tokens,
              "final_train_loss": history[-1]["loss"] if history else None}
    if context.get("eval_tasks"):
        result["eval"] = _eval_scores(trainer.model, manifest_path, context["eval_tasks"],
                                      context.get("task_data") or {})
    return result


def main(argv: list[str] | None = None) -> int:
    """``python -m mtnlg.blend_proxy SEARCH/jobs/NAME.json``: one proxy, as a cluster job."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if len(argv) != 1 or argv[0].startswith("-"):
        print("usage: python -m mtnlg.blend_proxy SEARCH/jobs/NAME.json", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s",
                        datefmt="%H:%M:%S")
    with open(argv[0], encoding="utf-8") as f:
        spec = json.load(f)
    from blending.search import ResultStore, ProxyJob, run_and_record

    job = ProxyJob(**spec["job"])
    if ResultStore(spec["context"]["search_dir"]).load(job) is not None:
        print(f"{job.name}: already finished")
        return 0
    runner = run_proxy
    if spec["context"].get("runner"):  # "module:function": the search's runner seam
        import importlib

        module, _, name = spec["context"]["runner"].partition(":")
        runner = getattr(importlib.import_module(module), name)
    record = run_and_record(runner, spec["job"], spec["context"])
    print(f"{job.name}: done in {record['seconds']:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
