"""Run lm-evaluation-harness on the same local task files, for a side-by-side check.

``write_task_yamls`` writes one lm-eval task YAML per task that *includes lm-eval's own task
definition* (its prompt, choices, target and metrics, from the installed package) and replaces
only where the rows come from: ``dataset_path: json`` with local ``data_files`` (no hub). The
scored file becomes the ``validation`` split and the few-shot file (if any) the ``train`` split,
with ``test_split: null``; lm-eval then draws few-shot examples the way ``training.eval.data``
does (from ``train``, else from the scored rows without the row itself).

``export_hf_with_tokenizer`` writes the Hugging Face GPT-2 export of a checkpoint
(``training.hf_export``) plus the tokenizer files ``AutoTokenizer`` loads, so
``lm_eval --model hf --model_args pretrained=DIR`` runs offline:

    python -m training.eval.lm_eval_tasks CKPT OUT [--tasks lambada,piqa] [--data DIR]
    HF_DATASETS_OFFLINE=1 HF_HUB_OFFLINE=1 lm_eval --model hf \\
        --model_args pretrained=OUT/hf,dtype=float32 --include_path OUT/tasks \\
        --tasks mtnlg_lambada,mtnlg_piqa --num_fewshot 0 --device cpu
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys

from training.eval.data import FORMATS, _file_for, bundled_data_dir
from training.eval.tasks import Task, parse_tasks

PREFIX = "mtnlg_"
"""lm-eval task name of our task ``T``: ``mtnlg_T`` (no clash with lm-eval's own names)."""

# Our task -> lm-eval's task YAML (relative to lm_eval/tasks) that defines its prompts.
LM_EVAL_YAML = {"lambada": "lambada/lambada_openai.yaml", "piqa": "piqa/piqa.yaml",
                "hellaswag": "hellaswag/hellaswag.yaml", "winogrande": "winogrande/default.yaml",
                "boolq": "super_glue/boolq/default.yaml", "anli_r1": "anli/anli_r1.yaml",
                "anli_r2": "anli/anli_r2.yaml", "anli_r3": "anli/anli_r3.yaml",
                "race": "race/race.yaml"}


def lm_eval_task_dir() -> str:
    import lm_eval.tasks

    return os.path.dirname(os.path.abspath(lm_eval.tasks.__file__))


def _builder(path: str) -> str:
    name = path[:-3] if path.endswith(".gz") else path
    return "parquet" if name.endswith(".parquet") else "json"


def write_task_yamls(tasks: list[Task], out_dir: str, data_dir: str | None = None,
                     task_data: dict[str, str] | None = None) -> list[str]:
    """One ``mtnlg_<task>.yaml`` per task in ``out_dir``; returns the lm-eval task names."""
    import yaml

    data_dir, task_data = data_dir or bundled_data_dir(), task_data or {}
    os.makedirs(out_dir, exist_ok=True)
    names = []
    for task in tasks:
        scored = task_data.get(task.name) or _file_for(data_dir, task.name)
        if not scored or not os.path.isfile(scored):
            raise FileNotFoundError(f"lm-eval tasks need a data file for {task.name} "
                                    f"({'|'.join(FORMATS)}), found none in {data_dir}")
        files = {"validation": os.path.abspath(scored)}
        shots = _file_for(os.path.join(os.path.dirname(scored), "fewshot"), task.name)
        if shots:
            files["train"] = os.path.abspath(shots)
        cfg = {"include": os.path.join(lm_eval_task_dir(), LM_EVAL_YAML[task.name]),
               "task": PREFIX + task.name, "tag": None,
               "dataset_path": _builder(scored), "dataset_name": None,
               "dataset_kwargs": {"data_files": files},
               "training_split": "train" if shots else None, "validation_split": "validation",
               "test_split": None, "fewshot_split": None}
        with open(os.path.join(out_dir, f"{PREFIX}{task.name}.yaml"), "w") as f:
            yaml.safe_dump(cfg, f, sort_keys=False)
        names.append(PREFIX + task.name)
    return names


def export_hf_with_tokenizer(checkpoint: str, out_dir: str, tokenizer_path: str) -> str:
    """The HF export of ``checkpoint`` plus ``tokenizer.json`` / ``tokenizer_config.json``."""
    from curation.tokenizer import TextTokenizer
    from training.hf_export import export_checkpoint

    export_checkpoint(checkpoint, out_dir)
    tok = TextTokenizer(tokenizer_path)
    tok._load()
    src = tok._json_path
    if src:
        shutil.copyfile(src, os.path.join(out_dir, "tokenizer.json"))
    else:
        tok._load().save(os.path.join(out_dir, "tokenizer.json"))
    with open(os.path.join(out_dir, "config.json")) as f:
        n_positions = json.load(f)["n_positions"]
    eod = "<|endoftext|>"
    with open(os.path.join(out_dir, "tokenizer_config.json"), "w") as f:
        json.dump({"tokenizer_class": "GPT2TokenizerFast", "model_max_length": n_positions,
                   "bos_token": eod, "eos_token": eod, "unk_token": eod,
                   "add_prefix_space": False}, f, indent=2)
    return out_dir


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.partition("\n\n")[0])
    p.add_argument("checkpoint", help="trainer checkpoint folder")
    p.add_argument("out_dir", help="writes OUT/hf (model + tokenizer) and OUT/tasks (YAMLs)")
    p.add_argument("--tasks", default="mtnlg")
    p.add_argument("--data", help="task data folder (default: the bundled samples)")
    p.add_argument("--tokenizer", help="tokenizer (default: as `mtnlg eval` resolves it)")
    p.add_argument("--manifest", help="the run's blend manifest (its tokenizer)")
    args = p.parse_args(argv)
    from training.eval.load import read_checkpoint_meta, resolve_tokenizer

    vocab = read_checkpoint_meta(args.checkpoint)["_model_config"]["vocab_size"]
    tok = resolve_tokenizer(vocab, args.tokenizer, args.manifest)
    export_hf_with_tokenizer(args.checkpoint, os.path.join(args.out_dir, "hf"), tok.path)
    names = write_task_yamls(parse_tasks(args.tasks), os.path.join(args.out_dir, "tasks"),
                             args.data)
    print(f"wrote {args.out_dir}/hf and {args.out_dir}/tasks: {','.join(names)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
