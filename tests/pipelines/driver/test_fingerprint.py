"""The run's fingerprint (pipelines/driver/preflight.py): what decides results changes it, how
inputs are fetched over http(s) does not, so ``--resume`` accepts a run with more retries."""
from pipelines.config.job import load_config
from pipelines.driver.preflight import run_fingerprint
from pipeline_fixtures import write_config


def _fingerprint(tmp_path, name, **overrides):
    return run_fingerprint(load_config(write_config(str(tmp_path / name), str(tmp_path), **overrides),
                                       check_paths=False), "tok-sha", None)


def test_http_settings_do_not_change_the_fingerprint(tmp_path):
    base = _fingerprint(tmp_path, "a.yaml")
    assert _fingerprint(tmp_path, "b.yaml", http={"retries": 12, "max_connections_per_host": 2}) == base
    assert _fingerprint(tmp_path, "c.yaml", language={"allowed": ["en"], "min_score": 0.6}) != base
