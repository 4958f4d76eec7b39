import pytest

from training.launch import main
from training.model import GPTConfig
from training.parallelize import ParallelDims
from training.plan import memory_plan


def test_dims_infer_dp():
    assert ParallelDims(-1, 2, 2, 8).dp == 2
    assert ParallelDims(-1, 1, 1, 1).dp == 1


def test_dims_product_error_says_what_to_change():
    with pytest.raises(ValueError, match=r"dp \* pp \* tp = 2 \* 2 \* 2 = 8 but world_size is 4"):
        ParallelDims(2, 2, 2, 4)
    with pytest.raises(ValueError, match="not divisible by pp \\* tp"):
        ParallelDims(-1, 3, 1, 4)


def test_mtnlg_plan_over_10tb():
    plan = memory_plan(GPTConfig.preset("mtnlg-530b"), dp=1, pp=35, tp=8)
    assert plan.total_state_bytes > 10e12
    assert plan.total_state_bytes == plan.total_params * 20
    # 3 layers per stage / 8 + the embedding shard: about 2.06B parameters, ~41 GB of state
    assert 1.9e9 < plan.params_per_device < 2.2e9
    assert 35e9 < plan.state_bytes_per_device < 45e9
    assert plan.activation_bytes_per_device > 0


def test_plan_cli(capsys, monkeypatch):
    # main() configures root logging for a real process; keep it off pytest's captured streams
    monkeypatch.setattr("training.launch.setup_logging", lambda: None)
    assert main(["--plan", "--preset", "mtnlg-530b", "--tp", "8", "--pp", "35"]) == 0
    out = capsys.readouterr().out
    assert "dp 1 x pp 35 x tp 8 = 280 devices" in out
    assert "model state of one replica: 10.59 TB" in out
    assert "Adam momentum" in out and "activations (estimate)" in out


def test_plan_rejects_bad_layout():
    with pytest.raises(ValueError, match="tp"):
        memory_plan(GPTConfig.preset("mtnlg-530b"), tp=3)


def test_nproc_starts_the_workers_through_the_elastic_agent(monkeypatch):
    """`--nproc 2` runs the same command as this node's workers under torch's elastic agent,
    with the environment the pre-flight checks returned (the real agent, rendezvous, restarts
    and signals are exercised end to end in test_elastic_launch)."""
    launched = []
    monkeypatch.setattr("training.launch.setup_logging", lambda: None)
    monkeypatch.setattr("training.launch.preflight", lambda args, cfg: {"CHECKED": "1"})
    monkeypatch.setattr("training.elastic.run_node",
                        lambda node, args, worker, env: launched.append((node, args, env)) or 0)
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    argv = ["--manifest", "m.json", "--nproc", "2", "--steps", "3", "--max-restarts", "2"]
    assert main(argv) == 0
    ((node, args, env),) = launched
    assert (node.nproc_per_node, node.nnodes, node.max_restarts) == (2, 1, 2)
    assert node.rdzv_endpoint is None  # one node: a free local port, as torchrun --standalone
    assert args == argv  # each rank runs training.launch.main(argv)
    assert env == {"CHECKED": "1"}


def test_several_nodes_need_a_rendezvous(monkeypatch, capsys):
    monkeypatch.setattr("training.launch.setup_logging", lambda: None)
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    assert main(["--manifest", "m.json", "--nnodes", "2", "--nproc", "2", "--steps", "3"]) == 2
    assert "--rdzv-endpoint: required with --nnodes > 1" in capsys.readouterr().err
