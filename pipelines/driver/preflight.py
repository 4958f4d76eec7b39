"""What the curate job checks before it reads any input or touches RUN: the quality model and
the tokenizer load, the older runs of ``--dedup-against`` are usable, and the run's fingerprint
(what decides its results) is known.  Every failure is a ``ConfigError`` naming the setting."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass

from infra.config import ConfigError
from pipelines.config.job import CurateConfig
from pipelines.driver import dedup_against
from pipelines.runfolder.commit import fingerprint
from infra.storage.files import is_remote
from infra.storage.staging import StagingError, local_copy


@dataclass(frozen=True)
class Checked:
    """What the checks found, for the job and for ``run.json``."""

    quality: dict | None
    """``{path, sha256, card}`` of the quality model, or None without the quality step."""
    tokenizer: dict
    """The tokenizer's facts (``Tokenizer.info``: sha256, vocab size, EOD id)."""
    against: tuple
    """``dedup_against.OlderIndex`` of each ``--dedup-against`` run."""
    fingerprint: str


def check(cfg: CurateConfig, quality_model_path: str | None, against_runs: list[str],
          output: str) -> Checked:
    quality = quality_model(cfg, quality_model_path)
    tokenizer = tokenizer_info(cfg)
    against = dedup_against.preflight(cfg, against_runs, output)  # before RUN is touched
    return Checked(quality, tokenizer, tuple(against),
                   run_fingerprint(cfg, tokenizer["sha256"], quality, against))


def quality_model(cfg: CurateConfig, override: str | None) -> dict | None:
    """Apply ``--quality-model`` and check the model loads: ``{path, sha256, card}`` for run.json,
    or ``ConfigError`` for a missing or corrupt model (so the run fails before reading input)."""
    from curation.quality import QualityModelError, model_info

    if override:
        cfg.quality.model_path = override if is_remote(override) else os.path.abspath(override)
        cfg.quality.enabled = True
    if not cfg.quality.enabled:
        return None
    try:
        info = {**model_info(local_copy(cfg.quality.model_path)), "path": cfg.quality.model_path}
    except (QualityModelError, StagingError) as e:
        raise ConfigError(str(e)) from None
    card = os.path.join(os.path.dirname(local_copy(info["path"])), "model_card.json")
    if os.path.exists(card):  # the held-out metrics travel with the run
        with open(card, encoding="utf-8") as f:
            c = json.load(f)
        if c.get("model", {}).get("sha256") == info["sha256"]:
            info["card"] = {"path": card, "metrics": c.get("metrics", {})}
    return info


def tokenizer_info(cfg: CurateConfig) -> dict:
    """The run's tokenizer, loaded (so a folder without one, or a ``tokenizer.json`` that does
    not parse, is a ``ConfigError`` naming the setting, before any work): its facts."""
    from curation.tokenizer import TokenizerError, load_tokenizer

    try:
        return load_tokenizer(local_copy(cfg.tokenizer.path)).info()
    except TokenizerError as e:
        raise ConfigError(f"tokenizer.path: {e}") from None


def run_fingerprint(cfg: CurateConfig, tokenizer_sha: str, quality: dict | None,
                    against: list | None = None) -> str:
    # How inputs are fetched over http(s) decides no kept document, so a run stopped by a
    # throttling server may be resumed with more retries or another CA bundle.
    config = {k: v for k, v in cfg.to_dict().items() if k not in ("config_path", "http")}
    extra = {"tokenizer": tokenizer_sha, "quality_model": (quality or {}).get("sha256")}
    if against:  # the older indices decide the dedup stage's results too
        extra["dedup_against"] = [[ix.run, ix.params_sha256] for ix in against]
    return fingerprint(config, extra)
