"""Zero-, one- and few-shot evaluation of trainer checkpoints (`mtnlg eval`).

| module | what |
|---|---|
| `tasks.py` | the MT-NLG tasks (LAMBADA, PiQA, HellaSwag, WinoGrande, BoolQ, ANLI R1-R3, RACE-h) in lm-evaluation-harness's prompt formats |
| `data.py` | task rows from local files (the files decontamination reads), seeded few-shot examples |
| `scoring.py` | continuation log-likelihoods (lm-eval's tokenisation and truncation) and metrics |
| `load.py` | `load_checkpoint_model`: a checkpoint of any layout -> plain model + tokenizer + info |
| `runner.py` | `evaluate`: requests data-parallel over processes, metrics per task |
| `lm_eval_tasks.py` | lm-eval task YAMLs over the same local files, and an HF folder it can load |
| `cli.py` | the `mtnlg eval` command |
"""
