"""The trainer's state and checkpoints: what a step's state is, saving it, finding and loading
the checkpoint a run starts from (any saved layout), and exporting the final weights.

Mixed into ``training.trainer.Trainer``, whose attributes (model parts, optimizers, loader,
step counters, mesh, config) it reads; kept apart so the training loop reads in one sitting.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os

import torch.distributed as dist
import torch.distributed.checkpoint as dcp

from training import checkpoint as ckpt
from training.worker import restart_count

log = logging.getLogger("training.trainer")


class TrainerState:
    """State dict, checkpoint save/resume/load and export for the Trainer."""

    def state_dict(self) -> dict:
        return {"model": ckpt.model_state(self.model_parts),
                "optimizer": ckpt.optimizer_state(self.model_parts, self.optimizers),
                "train": {"step": self.step, "consumed_tokens": self.consumed_tokens,
                          "source_tokens": json.dumps(self.source_tokens),
                          **self.loader.state_dict()},
                "rng": {f"rank{self.rank}": ckpt.rng_state(self.device)}}

    def load_state_dict(self, state: dict) -> None:
        ckpt.load_model_state(self.model_parts, state["model"])
        ckpt.load_optimizer_state(self.model_parts, self.optimizers, state["optimizer"])
        train = state["train"]
        self.step = int(train["step"])
        self.consumed_tokens = int(train["consumed_tokens"])
        self.source_tokens = json.loads(train["source_tokens"])
        self.loader.load_state_dict(train)
        if "rng" in state:
            ckpt.set_rng_state(state["rng"][f"rank{self.rank}"], self.device)

    def checkpoint_path(self, step: int | None = None) -> str:
        return ckpt.step_dir(os.path.join(self.cfg.output_dir, "checkpoints"),
                             self.step if step is None else step)

    def checkpoint_meta(self) -> dict:
        """config.json: the run config, plus what a reader needs to rebuild the plain model."""
        return {**self.cfg.to_dict(), "_world_size": self.world_size, "_tp": self.dims.tp,
                "_model_config": dataclasses.asdict(self.model.cfg),
                "_tokenizer": {k: v for k, v in self.tokenizer.items()
                               if k in ("path", "sha256", "vocab_size", "eod_id")}}

    def save_checkpoint(self) -> str:
        path = self.checkpoints.save(self.step, self.state_dict(), self.checkpoint_meta())
        self._last_saved_step = self.step
        return path

    def resume(self) -> str | None:
        """Load the checkpoint this run starts from (``checkpoint.resume``; collective) and
        return its path, or None when the run starts from scratch. Workers restarted by the
        elastic agent after a failure always continue from the run's own newest complete,
        verified checkpoint when there is one, so no sample is skipped or seen twice."""
        setting = self.cfg.checkpoint.resume
        restarted = restart_count() > 0
        if setting == "auto" or restarted:
            own = os.path.join(self.cfg.output_dir, "checkpoints")
            path = ckpt.latest_verified_checkpoint(own)
            if path is not None:
                log.info("resuming from %s (the newest verified checkpoint of the run%s)", path,
                         f"; restart {restart_count()} after a failure" if restarted else "")
                self.load_checkpoint(path, verified=True)
                return path
            if setting == "auto":
                log.info("no complete checkpoint in %s: starting from scratch", own)
                return None
        if setting is None:
            return None
        self.load_checkpoint(setting)
        return setting

    def load_checkpoint(self, path: str, verified: bool = False) -> None:
        """Load a checkpoint saved under any (dp, pp, tp) layout, after verifying its checksums
        (nothing is unpickled before; ``verified``: the caller just did); RNG states come back
        only when the world size is the same."""
        if not verified:
            log.info("verifying checkpoint %s", path)
            ckpt.verify_checkpoint(path)
        log.info("loading checkpoint %s", path)
        state = self.state_dict()
        ckpt.check_shapes(path, {k: tuple(v.shape) for k, v in state["model"].items()})
        saved = ckpt.read_checkpoint_config(path)
        if saved.get("_weights_only"):  # imported (training.megatron_export): no optimizer
            self._load_weights_only(path, state, saved)
            return
        if saved.get("_world_size") != self.world_size:
            log.info("checkpoint from another layout: RNG states not restored")
            state.pop("rng")
        dcp.load(state, checkpoint_id=path)
        self.load_state_dict(state)
        self._last_saved_step = self.step

    def _load_weights_only(self, path: str, state: dict, saved: dict) -> None:
        model = {"model": state["model"]}
        dcp.load(model, checkpoint_id=path)
        ckpt.load_model_state(self.model_parts, model["model"])
        train = saved.get("_train") or {}
        self.step = int(train.get("step", 0))
        self.consumed_tokens = int(train.get("consumed_tokens", 0))
        self.loader.load_state_dict({"consumed_samples": int(train.get("consumed_samples", 0))})
        log.warning("%s holds weights only (%s): step %d, %d samples consumed; AdamW starts "
                    "with empty moments", path, saved.get("_source", "imported"), self.step,
                    self.loader.consumed_samples)

    def export_hf(self, out_dir: str) -> str | None:
        """Write the final weights as a Hugging Face GPT-2 checkpoint with its tokenizer
        (rank 0), from the last checkpoint so every layout exports the same way."""
        from training.hf_export import export_checkpoint

        path = self.checkpoint_path()
        if self.mesh is not None:
            dist.barrier()
        if self.is_main:
            export_checkpoint(path, out_dir)
            log.info("exported Hugging Face GPT-2 checkpoint to %s", out_dir)
        if self.mesh is not None:
            dist.barrier()
        return out_dir if self.is_main else None
