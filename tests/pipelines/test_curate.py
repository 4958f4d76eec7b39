"""The whole curate job on a tiny corpus, run by the local runner in this process (every DoFn is
pickled and unpickled all the same), then again by two worker threads: the same bytes. Worker
processes are the cluster tests' (one local worker process, and an EXTERNAL pool of two)."""
import glob
import gzip
import io
import json
import os

import pandas as pd
import pytest

from blending.indexed_dataset import IndexedDataset
from pipelines import curate
from pipelines.config import options as cli_options
from pipeline_fixtures import write_config, write_corpus

pytestmark = pytest.mark.slow


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("curate")
    write_corpus(str(tmp / "raw"))
    cfg = write_config(str(tmp / "cfg.yaml"), str(tmp / "raw"))
    out = str(tmp / "run")
    terminal = _Terminal()  # what a terminal shows while it runs: every finished stage's line stays
    saved, cli_options.terminal = cli_options.terminal, lambda: terminal
    try:
        rc = curate.run(["--config", cfg, "--output", out, "--direct_running_mode=in_memory",
                         "--direct_num_workers=1", "--progress-every", "0.2"])
    finally:
        cli_options.terminal = saved
    assert rc == 0
    with open(os.path.join(str(tmp), "progress.txt"), "w") as f:
        f.write(terminal.getvalue().replace("\033[K", ""))  # lines end at "\r" or "\n"
    return out


def test_every_stage_shows_live_progress(run_dir):
    text = open(os.path.join(os.path.dirname(run_dir), "progress.txt")).read()
    lines = [line for line in text.splitlines() if line]
    stages = [line.split(":")[0] for line in lines]
    assert [s for i, s in enumerate(stages) if s not in stages[:i]] == [
        "read", "dedup", "decontaminate", "tokenize"], lines
    assert any(line.startswith("read: 11 documents") and "100% of the input" in line for line in lines)


def test_accounting_identity_holds(run_dir):
    info = json.load(open(os.path.join(run_dir, "run.json")))
    assert info["accounting_ok"] and info["runner"] == "FnApiRunner"
    assert info["totals"]["read"] == 11  # 7 Pile lines + 2 RealNews + 2 stories
    for name, s in info["sources"].items():
        assert s["read"] == s["kept"] + sum(s["removed"].values()) + s["dead_lettered"], name
    counts = pd.read_parquet(os.path.join(run_dir, "stats", "counts.parquet"))
    rows = pd.read_parquet(os.path.join(run_dir, "stats", "documents"))
    assert counts.documents.sum() == len(rows) == info["totals"]["read"]
    assert rows.id.is_unique
    assert not os.path.exists(os.path.join(run_dir, "_progress"))  # the workers' counts: not a result


def test_run_json_reports_worker_time_per_stage(run_dir):
    # to the microsecond, as counted: a step's few documents may take well under a millisecond
    seconds = json.load(open(os.path.join(run_dir, "run.json")))["stage_seconds"]
    for stage in ("read", "normalize", "language", "heuristics", "tokenize"):
        assert seconds[stage] > 0, (stage, seconds)


def test_every_counter_and_time_is_a_declared_step(run_dir):
    from pipelines.stages import stage_of

    counters = json.load(open(os.path.join(run_dir, "stats", "counters.json")))["counters"]
    seconds = json.load(open(os.path.join(run_dir, "run.json")))["stage_seconds"]
    for step in {c["stage"] for c in counters} | set(seconds):
        stage_of(step)  # UnknownStepError for a name pipelines/stages.py does not declare


def test_planted_problems_are_removed_with_reasons(run_dir):
    rows = pd.read_parquet(os.path.join(run_dir, "stats", "documents")).set_index("id")
    assert rows.loc["pile_cc/pile/00.jsonl.zst:4", "reason"] == "wrong_language"
    assert rows.loc["openwebtext2/pile/00.jsonl.zst:2", "stage"] == "fuzzy_dedup"
    assert rows.loc["pile_other/pile/00.jsonl.zst:5", "reason"] == "pile_subset_not_in_blend"
    assert (rows.outcome == "dead_letter").sum() == 1
    removed = [json.loads(line) for f in glob.glob(os.path.join(run_dir, "removed", "*", "*.jsonl.gz"))
               for line in gzip.open(f, "rt")]
    assert len(removed) == (rows.outcome == "removed").sum()
    assert {r["id"] for r in removed} == set(rows.index[rows.outcome == "removed"])


def test_shards_hold_the_kept_documents(run_dir):
    info = json.load(open(os.path.join(run_dir, "run.json")))
    eod = info["tokenizer"]["eod_id"]
    for name, s in info["sources"].items():
        docs = sum(len(pd.read_parquet(f)) for f in glob.glob(os.path.join(run_dir, "documents", name, "*.parquet")))
        assert docs == s["kept"], name
        tokens = 0
        for prefix in s["shards"]:
            ds = IndexedDataset(os.path.join(run_dir, prefix))
            for i in range(len(ds)):
                assert ds[i][-1] == eod
                tokens += ds[i].size
        assert tokens == s["tokens"], name
    wiki = pd.read_parquet(glob.glob(os.path.join(run_dir, "documents", "wikipedia", "*.parquet"))[0])
    split = wiki[wiki.meta.str.contains('"pieces"')]
    assert len(split) == 1  # the contaminated document was cut in two


def test_rerun_gives_the_same_shard_bytes(run_dir, tmp_path):
    info = json.load(open(os.path.join(run_dir, "run.json")))
    before = {p: open(os.path.join(run_dir, p + ".bin"), "rb").read()
              for s in info["sources"].values() for p in s["shards"]}
    rc = curate.run(["--config", info["config_path"], "--output", run_dir, "--direct_num_workers=2",
                     "--direct_running_mode=multi_threading"])
    assert rc == 0
    after = {p: open(os.path.join(run_dir, p + ".bin"), "rb").read() for p in before}
    assert before == after


def test_bad_config_returns_2_before_any_work(tmp_path):
    cfg = write_config(str(tmp_path / "c.yaml"), str(tmp_path / "missing"))
    assert curate.run(["--config", cfg, "--output", str(tmp_path / "run")]) == 2
    assert not os.path.exists(tmp_path / "run")
