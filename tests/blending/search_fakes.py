"""A cheap stand-in for the proxy trainer of `mtnlg blend search` (the runner seam of
``blending.search.run_jobs``), importable by spawned pool workers and subprocesses.

Its "validation loss" per source is a known function of the mixture, so tests can check what
the search proposes; every call appends the job's name to ``context["calls_log"]`` (default SEARCH/calls.log) so tests
count trainings; ``context["kill_at"] = k`` SIGKILLs the process when the k-th call (1-based,
counted in the log) starts, as a killed search would be; ``context["fail"] = NAME`` makes that
proxy raise.
"""
from __future__ import annotations

import math
import os
import signal

# the optimum of the mean loss below is the mixture proportional to IMPORTANCE
IMPORTANCE = {"alpha": 0.3, "beta": 0.7}


def fake_losses(names, weights) -> dict[str, float]:
    return {n: 4.0 - IMPORTANCE.get(n, 0.5) * len(names) * math.log(w + 1e-3)
            for n, w in zip(names, weights)}


def _names(context: dict) -> list[str]:
    if "names" in context:
        return context["names"]
    from blending.spec import load_blend_spec  # the CLI's context: the spec it searches

    return [s.name for s in load_blend_spec(context["spec_path"]).sources]


def _log(context: dict) -> str:
    return context.get("calls_log") or os.path.join(context["search_dir"], "calls.log")


def fake_runner(job: dict, context: dict) -> dict:
    log = _log(context)
    with open(log, "a", encoding="utf-8") as f:
        f.write(job["name"] + "\n")
    with open(log, encoding="utf-8") as f:
        calls = len(f.read().split())
    if context.get("kill_at") and calls >= context["kill_at"]:
        os.kill(os.getpid(), signal.SIGKILL)
    if job["name"] == context.get("fail"):
        raise RuntimeError(f"{job['name']}: the trainer failed")
    return {"per_source": fake_losses(_names(context), job["weights"])}


def calls(context: dict) -> list[str]:
    if not os.path.exists(_log(context)):
        return []
    with open(_log(context), encoding="utf-8") as f:
        return f.read().split()
