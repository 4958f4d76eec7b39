"""The MT-NLG evaluation tasks, in lm-evaluation-harness's prompt formats.

Each task turns one row of its data file into log-likelihood requests ``(context, continuation)``
exactly as lm-eval 0.4.13's task YAMLs do (``lambada_openai``, ``piqa``, ``hellaswag``,
``winogrande``, ``boolq``, ``anli_r1..r3``, ``race``), so our numbers and lm-eval's can be compared
request for request:

================  ====================================================  ============================
task              context -> continuation(s)                            metrics
================  ====================================================  ============================
lambada           text minus its last word -> " " + last word           acc (greedy), ppl
piqa              "Question: {goal}\\nAnswer:" -> " " + sol1 | sol2      acc, acc_norm
hellaswag         "{activity}: {ctx_a} {Ctx_b}" (cleaned) -> " " + end  acc, acc_norm
winogrande        sentence up to "_" with each option -> " " + rest     acc (one context per option)
boolq             "{passage}\\nQuestion: {question}?\\nAnswer:" -> no|yes acc
anli_r1/r2/r3     "{premise}\\nQuestion: {hypothesis} True, False, or    acc
                  Neither?\\nAnswer:" -> " True" | " Neither" | " False"
race (RACE-h)     "Article: ..." + earlier Q/A of the article + last     acc
                  question -> " " + option
================  ====================================================  ============================

``acc_norm`` divides each choice's log-likelihood by the choice's length in characters (lm-eval's
``acc_norm``). Few-shot examples are ``question + " " + answer + "\\n\\n"`` in front of the
context (lm-eval's target and few-shot delimiters).

Rows use the Hugging Face layouts the decontamination adapters (``curation.eval_tasks``) read, so
one file serves both: e.g. piqa ``{goal, sol1, sol2, label}``, race the ``EleutherAI/race`` layout
``{article, problems}`` with ``problems`` a list (or its Python literal) of ``{question, options,
answer}``.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Any, Callable

Doc = dict[str, Any]


@dataclass(frozen=True)
class Task:
    """One evaluation task: how a row becomes requests, and what is reported."""

    name: str
    kind: str
    """``loglikelihood`` (LAMBADA) or ``multiple_choice``."""
    metrics: tuple[str, ...]
    eval_split: str
    """Split scored when the data is a ``datasets.save_to_disk`` folder (lm-eval's choice)."""
    fewshot_split: str | None
    """Split few-shot examples come from; None: the evaluation split, minus the scored row."""
    question: Callable[[Doc], str | list[str]]
    """The context; a list (one context per choice) for partial scoring (WinoGrande)."""
    choices: Callable[[Doc], list[str]] | None = None
    target: Callable[[Doc], str] | None = None
    """The scored continuation of a LAMBADA / WinoGrande row (its few-shot answer too)."""
    gold: Callable[[Doc], int] | None = None
    prepare: Callable[[Doc], Doc] | None = None
    primary: str = "acc"
    """The metric the report plots (MT-NLG reports acc; HellaSwag is read as acc_norm)."""
    data_names: tuple[str, ...] = ()
    """Other file/folder names holding the task (one saved ``facebook/anli`` serves R1-R3)."""

    @property
    def multiple_input(self) -> bool:
        return self.name.startswith("winogrande")

    def doc(self, row: Doc) -> Doc:
        return self.prepare(row) if self.prepare else row

    def fewshot_text(self, doc: Doc) -> str:
        """A solved example: question, target delimiter, answer, few-shot delimiter."""
        q = self.question(doc)
        if self.kind == "loglikelihood":
            answer = self.target(doc)
        elif self.multiple_input:
            q, answer = q[self.gold(doc)], self.target(doc)
        else:
            answer = self.choices(doc)[self.gold(doc)]
        return f"{q} {answer}\n\n"

    def requests(self, doc: Doc, prefix: str = "") -> list[tuple[str, str]]:
        """``(context, continuation)`` pairs: one for LAMBADA, one per choice otherwise."""
        q = self.question(doc)
        if self.kind == "loglikelihood":
            return [(prefix + q, self.target(doc))]
        if self.multiple_input:
            return [(prefix + c, " " + self.target(doc)) for c in q]
        return [(prefix + q, " " + c) for c in self.choices(doc)]

    def choice_lengths(self, doc: Doc) -> list[int]:
        """Characters per choice, for acc_norm (lm-eval: ``len(choice)``, no delimiter)."""
        return [len(c) for c in self.choices(doc)]


# --- LAMBADA (lambada_openai): last word, greedy accuracy and perplexity ----------------------
def _lambada_context(doc: Doc) -> str:
    return " ".join(doc["text"].split(" ")[:-1])


def _lambada_target(doc: Doc) -> str:
    return " " + doc["text"].split(" ")[-1]


# --- HellaSwag: lm-eval's cleaning of the WikiHow artefacts -----------------------------------
def _hellaswag_clean(text: str) -> str:
    text = text.strip().replace(" [title]", ". ")
    text = re.sub(r"\[.*?\]", "", text)
    return text.replace("  ", " ")


def _hellaswag_prepare(row: Doc) -> Doc:
    ctx = row["ctx_a"] + " " + row["ctx_b"].capitalize()
    return {**row, "query": _hellaswag_clean(row["activity_label"] + ": " + ctx),
            "choices": [_hellaswag_clean(e) for e in row["endings"]], "gold": int(row["label"])}


# --- WinoGrande: partial scoring, one context per option --------------------------------------
def _wino_contexts(doc: Doc) -> list[str]:
    i = doc["sentence"].index("_")
    return [doc["sentence"][:i] + opt for opt in (doc["option1"], doc["option2"])]


def _wino_target(doc: Doc) -> str:
    return doc["sentence"][doc["sentence"].index("_") + 1:].strip()


# --- RACE (EleutherAI/race, high): one row per article, the last question is scored ----------
_LETTER = {"A": 0, "B": 1, "C": 2, "D": 3}


def _race_problems(doc: Doc) -> list[dict]:
    problems = doc["problems"]
    return ast.literal_eval(problems) if isinstance(problems, str) else list(problems)


def _race_answer(problem: dict) -> str:
    return problem["options"][_LETTER[problem["answer"]]]


def _race_question(doc: Doc) -> str:
    *earlier, last = _race_problems(doc)
    text = "Article: " + doc["article"] + "\n\n"
    for p in earlier:  # earlier questions of the article, answered (lm-eval's prompt)
        if p["question"][-6:] == "  _  .":
            text += p["question"][:-5] + _race_answer(p) + "\n"
        else:
            text += "Question: " + p["question"] + "\n" + "Answer: " + _race_answer(p) + "\n"
    return text + last["question"]


def _anli(name: str, r: int) -> Task:
    return Task(name, "multiple_choice", ("acc",), f"test_r{r}", f"train_r{r}", data_names=("anli",),
                question=lambda d: f"{d['premise']}\nQuestion: {d['hypothesis']} True, False, or "
                                   f"Neither?\nAnswer:",
                choices=lambda d: ["True", "Neither", "False"], gold=lambda d: int(d["label"]))


TASKS: dict[str, Task] = {t.name: t for t in (
    Task("lambada", "loglikelihood", ("acc", "ppl"), "test", None,
         question=_lambada_context, target=_lambada_target),
    Task("piqa", "multiple_choice", ("acc", "acc_norm"), "validation", "train",
         question=lambda d: f"Question: {d['goal']}\nAnswer:",
         choices=lambda d: [d["sol1"], d["sol2"]], gold=lambda d: int(d["label"])),
    Task("hellaswag", "multiple_choice", ("acc", "acc_norm"), "validation", "train",
         question=lambda d: d["query"], choices=lambda d: d["choices"],
         gold=lambda d: d["gold"], prepare=_hellaswag_prepare, primary="acc_norm"),
    Task("winogrande", "multiple_choice", ("acc",), "validation", "train",
         question=_wino_contexts, target=_wino_target,
         gold=lambda d: {"1": 0, "2": 1}[str(d["answer"])]),
    Task("boolq", "multiple_choice", ("acc",), "validation", "train",
         question=lambda d: f"{d['passage']}\nQuestion: {d['question']}?\nAnswer:",
         choices=lambda d: ["no", "yes"], gold=lambda d: int(d["label"])),
    _anli("anli_r1", 1), _anli("anli_r2", 2), _anli("anli_r3", 3),
    Task("race", "multiple_choice", ("acc",), "test", None,
         question=_race_question, choices=lambda d: _race_problems(d)[-1]["options"],
         gold=lambda d: _LETTER[_race_problems(d)[-1]["answer"]]),
)}
# Names users and papers use for the same tasks.
ALIASES = {"lambada_openai": "lambada", "race_h": "race", "race_high": "race", "race-h": "race",
           "anli": "anli_r1", "wino": "winogrande"}
MTNLG_TASKS = ("lambada", "piqa", "hellaswag", "winogrande", "boolq", "anli_r1", "anli_r2",
               "anli_r3", "race")
"""The zero/one/few-shot tasks of MT-NLG's paper that lm-eval defines (REFERENCE.md)."""


def get_task(name: str) -> Task:
    key = name.strip().lower()
    key = ALIASES.get(key, key)
    if key not in TASKS:
        raise ValueError(f"--tasks: unknown task {name!r}; choose from {', '.join(TASKS)} "
                         f"(or aliases {', '.join(ALIASES)})")
    return TASKS[key]


def parse_tasks(spec: str) -> list[Task]:
    """``"lambada,piqa"`` (or ``"all"``/``"mtnlg"``) -> tasks, in order, without repeats."""
    names = MTNLG_TASKS if spec.strip().lower() in ("all", "mtnlg") else \
        [s for s in spec.split(",") if s.strip()]
    if not names:
        raise ValueError("--tasks: give at least one task")
    tasks = [get_task(n) for n in names]
    return list({t.name: t for t in tasks}.values())


__all__ = ["Task", "TASKS", "ALIASES", "MTNLG_TASKS", "get_task", "parse_tasks"]
