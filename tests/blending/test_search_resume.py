"""A blend search records each proxy as it finishes: a killed search resumes without training
the finished proxies again, a changed search retrains, and ``--jobs`` runs proxies at once."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from blending.search import ResultStore, make_job, run_jobs
from search_fakes import calls, fake_losses, fake_runner

HERE = os.path.dirname(os.path.abspath(__file__))
NAMES = ["alpha", "beta"]


def _jobs(fingerprint: str = "fp-1", n: int = 6):
    rng = np.random.default_rng(0)
    return [make_job(f"p{i:04d}", "proxy", rng.dirichlet([1, 1]), 1234, fingerprint)
            for i in range(n)]


def _context(tmp_path, **extra) -> dict:
    return {"search_dir": str(tmp_path / "search"), "names": NAMES,
            "calls_log": str(tmp_path / "calls.log"), **extra}


def test_a_killed_search_resumes_without_retraining_finished_proxies(tmp_path):
    jobs = _jobs()
    ctx = _context(tmp_path, kill_at=4)
    # the search process is SIGKILLed when its 4th proxy starts (three are finished)
    script = ("import sys, json; sys.path.insert(0, sys.argv[1]); "
              "from blending.search import ProxyJob, run_jobs; from search_fakes import fake_runner;"
              "jobs = [ProxyJob(**j) for j in json.loads(sys.argv[2])];"
              "run_jobs(jobs, fake_runner, json.loads(sys.argv[3]), 1)")
    proc = subprocess.run([sys.executable, "-c", script, HERE,
                           json.dumps([j.to_json() for j in jobs]), json.dumps(ctx)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == -9, proc.stderr
    store = ResultStore(ctx["search_dir"])
    assert [j.name for j in jobs if store.load(j)] == ["p0000", "p0001", "p0002"]
    assert not [f for f in os.listdir(store.folder) if ".tmp" in f]  # nothing half-written
    before = {j.name: store.load(j) for j in jobs[:3]}

    ctx.pop("kill_at")
    records = run_jobs(jobs, fake_runner, ctx, 1)
    # only the proxy that was running and the two never started were trained again
    assert calls(ctx) == ["p0000", "p0001", "p0002", "p0003", "p0003", "p0004", "p0005"]
    assert all(records[n] == before[n] for n in before)
    for j in jobs:
        assert records[j.name]["result"]["per_source"] == fake_losses(NAMES, j.weights)
    run_jobs(jobs, fake_runner, ctx, 1)  # everything done: nothing runs
    assert len(calls(ctx)) == 7


def test_a_changed_search_or_a_damaged_result_is_trained_again(tmp_path):
    ctx = _context(tmp_path)
    run_jobs(_jobs("fp-1", 3), fake_runner, ctx, 1)
    store = ResultStore(ctx["search_dir"])
    with open(store.path("p0001"), "w") as f:
        f.write('{"format_version": 1, "key": ')  # a file cut short by hand
    run_jobs(_jobs("fp-1", 3), fake_runner, ctx, 1)
    assert calls(ctx) == ["p0000", "p0001", "p0002", "p0001"]
    # another training config / corpus / split: another fingerprint, every key differs
    run_jobs(_jobs("fp-2", 3), fake_runner, ctx, 1)
    assert calls(ctx)[4:] == ["p0000", "p0001", "p0002"]


def test_jobs_run_in_parallel_worker_processes(tmp_path):
    ctx = _context(tmp_path, fail="p0002")
    jobs = _jobs(n=4)
    # a failing proxy ends the search with its error; the others that ran are stored
    with pytest.raises(RuntimeError, match="p0002: the trainer failed"):
        run_jobs(jobs, fake_runner, ctx, n_jobs=2)
    store = ResultStore(ctx["search_dir"])
    assert store.load(jobs[2]) is None
    ran = set(calls(ctx))
    ctx.pop("fail")
    records = run_jobs(jobs, fake_runner, ctx, n_jobs=2)
    assert {r["name"] for r in records.values()} == {j.name for j in jobs}
    # the second run trained exactly those without a stored result
    assert sorted(calls(ctx)[len(ran):]) == sorted({"p0002"} | {j.name for j in jobs} - ran)
    assert all(os.path.isfile(store.path(j.name)) for j in jobs)
