"""The trainer: one class with small named methods, read top to bottom.

    trainer = Trainer.from_manifest(cfg, "manifest.json")   # verifies the manifest first
    trainer.train()                                         # metrics.jsonl + final checkpoint

Setup order (each step announced in the log): manifest checks (shard sha256s, tokenizer file,
vocab size) -> blended sample index -> process group -> parallel dims/mesh -> model (seeded init)
-> parallelize -> optimizer -> loader. A manifest whose checksums, tokenizer or vocabulary size do
not fit is refused before the process group or the model exist.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
import time
import warnings

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.state_dict import (StateDictOptions, get_model_state_dict,
                                                     get_optimizer_state_dict,
                                                     set_model_state_dict,
                                                     set_optimizer_state_dict)

from training.config import TrainConfig
from training.data import (DistributedSampleLoader, StepBatch, build_blended_dataset,
                           manifest_source_names, manifest_tokenizer, open_manifest,
                           verify_manifest_tokenizer)
from training.model import GPT, cross_entropy_loss, param_groups
from training.parallelize import ParallelDims, check_supported, init_distributed, parallelize
from training.schedule import batch_sizes, plan_steps

log = logging.getLogger(__name__)

# Flattened optimizer state reloads into another layout (pipeline stages: KeyError 'betas').
_SD_OPTIONS = StateDictOptions(flatten_optimizer_state_dict=True)


def check_vocab(cfg: TrainConfig, tokenizer: dict) -> int:
    """The model's vocabulary for this tokenizer; refuses one that cannot hold its tokens."""
    tok_vocab = int(tokenizer["vocab_size"])
    eod = tokenizer.get("eod_id")
    if eod is not None and not 0 <= int(eod) < tok_vocab:
        raise ValueError(f"manifest tokenizer eod_id {eod} is outside its vocab_size {tok_vocab}")
    if cfg.vocab_size is not None and cfg.vocab_size < tok_vocab:
        raise ValueError(f"vocab_size: the model is configured for {cfg.vocab_size} tokens but the "
                         f"manifest's tokenizer has {tok_vocab}; set vocab_size >= {tok_vocab} "
                         f"(or null to take it from the manifest)")
    return cfg.vocab_size or tok_vocab


def total_samples(cfg: TrainConfig) -> int:
    """Samples the whole run consumes (sizes the blended index)."""
    seq, ramp = cfg.effective_seq_length, cfg.batch_rampup()
    if cfg.train_steps is not None:
        return sum(batch_sizes(cfg.train_steps, seq, ramp))
    return sum(plan_steps(cfg.train_tokens, seq, ramp))


@contextlib.contextmanager
def _quiet_single_process_dcp():
    # DCP warns that it "assumes" a single process when no process group exists: that is intended.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="torch.distributed is disabled")
        yield


class Trainer:
    def __init__(self, cfg: TrainConfig, dataset, tokenizer: dict,
                 source_names: list[str] | None = None):
        self.cfg = cfg
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.rank, self.world_size = init_distributed(self.device.type)
        self.dims = self._setup_parallel_dims()
        self.mesh = self.dims.build_mesh(self.device.type) if self.world_size > 1 else None
        self.model = self._build_model(check_vocab(cfg, tokenizer))
        self.train_model = parallelize(self.model, self.mesh, self.dims)
        self.optimizer = self._build_optimizer()
        dp_rank = self.mesh["dp"].get_local_rank() if self.mesh is not None else 0
        self.loader = DistributedSampleLoader(dataset, cfg.effective_seq_length,
                                              cfg.micro_batch_size, dp_rank, self.dims.dp,
                                              source_names=source_names, device=self.device)
        self.lr_schedule, self.batch_rampup = cfg.lr_schedule(), cfg.batch_rampup()
        self.step = 0
        self.consumed_tokens = 0
        self.source_tokens: dict[str, int] = {}
        self.is_main = self.rank == 0

    @classmethod
    def from_manifest(cls, cfg: TrainConfig, manifest_path: str) -> "Trainer":
        """Verify the manifest (checksums, tokenizer, vocab) and build the blended dataset."""
        manifest = open_manifest(manifest_path, verify_checksums=cfg.verify_checksums)
        verify_manifest_tokenizer(manifest)
        tokenizer = manifest_tokenizer(manifest)
        check_vocab(cfg, tokenizer)
        log.info("manifest ok: tokenizer vocab %s, eod %s", tokenizer["vocab_size"],
                 tokenizer.get("eod_id"))
        dataset = build_blended_dataset(manifest, cfg.effective_seq_length, total_samples(cfg),
                                        cfg.seed)
        return cls(cfg, dataset, tokenizer, manifest_source_names(manifest))

    # --- setup ---
    def _setup_parallel_dims(self) -> ParallelDims:
        dims = ParallelDims(self.cfg.dp, self.cfg.pp, self.cfg.tp, self.world_size)
        check_supported(dims)
        self.cfg.check_dp(dims.dp)
        log.info("parallel dims: dp %d x pp %d x tp %d = %d ranks", dims.dp, dims.pp, dims.tp,
                 dims.world_size)
        return dims

    def _build_model(self, vocab_size: int) -> GPT:
        mcfg = self.cfg.model_config(vocab_size)
        torch.manual_seed(self.cfg.seed)  # identical init on every rank
        model = GPT(mcfg, tp=self.cfg.tp).to(self.device)
        if model.vocab_size < vocab_size:  # padding only grows it; guard against future edits
            raise ValueError(f"vocab_size: model embedding {model.vocab_size} < tokenizer "
                             f"{vocab_size}")
        log.info("model %s: %d layers, hidden %d, %d heads, vocab %d (padded %d), %.2fM params",
                 self.cfg.model, mcfg.n_layers, mcfg.hidden, mcfg.n_heads, mcfg.vocab_size,
                 model.vocab_size, sum(p.numel() for p in model.parameters()) / 1e6)
        return model

    def _build_optimizer(self) -> torch.optim.Optimizer:
        c = self.cfg
        log.info("optimizer AdamW: peak lr %g, betas (%g, %g), eps %g, weight decay %g, clip %g",
                 c.lr, c.adam_beta1, c.adam_beta2, c.adam_eps, c.weight_decay, c.grad_clip)
        return torch.optim.AdamW(param_groups(self.model, c.weight_decay), lr=c.lr,
                                 betas=(c.adam_beta1, c.adam_beta2), eps=c.adam_eps)

    # --- one step ---
    def _autocast(self):
        if self.cfg.dtype == "bfloat16":
            return torch.autocast(self.device.type, dtype=torch.bfloat16)
        return contextlib.nullcontext()

    def forward_backward_step(self, inputs: torch.Tensor, targets: torch.Tensor,
                              scale: float) -> torch.Tensor:
        """Loss of one micro-batch; gradients of ``loss * scale`` are accumulated."""
        with self._autocast():
            logits = self.train_model(inputs)
        loss = cross_entropy_loss(logits, targets)
        (loss * scale).backward()
        return loss.detach()

    def train_step(self, batch: StepBatch) -> dict:
        t0 = time.perf_counter()
        lr = self.lr_schedule(self.consumed_tokens)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        self.optimizer.zero_grad(set_to_none=True)
        n = len(batch.micro_batches)
        losses = []
        for i, (inputs, targets) in enumerate(batch.micro_batches):
            # DDP: all-reduce gradients only after the last micro-batch.
            sync = i == n - 1 or not hasattr(self.train_model, "no_sync")
            with contextlib.nullcontext() if sync else self.train_model.no_sync():
                losses.append(self.forward_backward_step(inputs, targets, 1.0 / n))
        grad_norm = self._clip_gradients()
        self.optimizer.step()
        loss = self._global_mean(torch.stack(losses).mean())
        step_tokens = batch.global_batch * self.cfg.effective_seq_length
        self.step += 1
        self.consumed_tokens += step_tokens
        for name, tokens in batch.source_tokens.items():
            self.source_tokens[name] = self.source_tokens.get(name, 0) + tokens
        dt = time.perf_counter() - t0
        return {"step": self.step, "loss": loss, "grad_norm": grad_norm, "lr": lr,
                "global_batch": batch.global_batch, "tokens": step_tokens,
                "consumed_tokens": self.consumed_tokens, "tokens_per_s": step_tokens / dt,
                "step_time_s": dt, "source_tokens": dict(self.source_tokens)}

    def _clip_gradients(self) -> float:
        max_norm = self.cfg.grad_clip if self.cfg.grad_clip > 0 else float("inf")
        return float(torch.nn.utils.clip_grad_norm_(self.model.parameters(), max_norm))

    def _global_mean(self, value: torch.Tensor) -> float:
        if self.mesh is not None and self.dims.dp_enabled:
            value = value.clone()
            dist.all_reduce(value, op=dist.ReduceOp.AVG, group=self.mesh["dp"].get_group())
        return float(value)

    # --- the loop ---
    def train(self) -> list[dict]:
        cfg = self.cfg
        steps_left = (cfg.train_steps - self.step) if cfg.train_steps is not None else None
        bar = self._progress_bar(steps_left)
        history = []
        with self._metrics_file() as metrics:
            while self._should_continue():
                record = self.train_step(self.loader.next_step(self.batch_rampup(
                    self.consumed_tokens)))
                history.append(record)
                if metrics is not None and self.step % cfg.log_interval == 0:
                    metrics.write(json.dumps(record) + "\n")
                    metrics.flush()
                if bar is not None:
                    bar.update(1)
                    bar.set_postfix(loss=f"{record['loss']:.3f}", lr=f"{record['lr']:.2e}")
                elif self.is_main and self.step % cfg.log_interval == 0:
                    log.info("step %d loss %.4f grad_norm %.3f lr %.3e tokens/s %.0f", self.step,
                             record["loss"], record["grad_norm"], record["lr"],
                             record["tokens_per_s"])
                if cfg.checkpoint_interval and self.step % cfg.checkpoint_interval == 0:
                    self.save_checkpoint()
        if bar is not None:
            bar.close()
        if not cfg.checkpoint_interval or self.step % cfg.checkpoint_interval:
            self.save_checkpoint()
        return history

    def _should_continue(self) -> bool:
        if self.cfg.train_steps is not None:
            return self.step < self.cfg.train_steps
        return self.consumed_tokens < self.cfg.train_tokens

    def _progress_bar(self, total: int | None):
        if not (self.is_main and sys.stderr.isatty()):
            return None
        from tqdm import tqdm
        return tqdm(total=total, desc="train", unit="step")

    @contextlib.contextmanager
    def _metrics_file(self):
        if not self.is_main:
            yield None
            return
        os.makedirs(os.path.dirname(os.path.abspath(self.cfg.metrics_path)), exist_ok=True)
        # a fresh run starts the file; a resumed one continues it
        with open(self.cfg.metrics_path, "a" if self.step else "w") as f:
            yield f

    # --- state and checkpoints ---
    def state_dict(self) -> dict:
        return {"model": get_model_state_dict(self.model),
                "optimizer": get_optimizer_state_dict(self.model, self.optimizer,
                                                      options=_SD_OPTIONS),
                "train": {"step": self.step, "consumed_tokens": self.consumed_tokens,
                          "source_tokens": json.dumps(self.source_tokens),
                          **self.loader.state_dict()}}

    def load_state_dict(self, state: dict) -> None:
        set_model_state_dict(self.model, state["model"])
        set_optimizer_state_dict(self.model, self.optimizer, state["optimizer"],
                                 options=_SD_OPTIONS)
        train = state["train"]
        self.step = int(train["step"])
        self.consumed_tokens = int(train["consumed_tokens"])
        self.source_tokens = json.loads(train["source_tokens"])
        self.loader.load_state_dict(train)

    def checkpoint_path(self, step: int | None = None) -> str:
        return os.path.join(self.cfg.output_dir, "checkpoints", f"step-{step or self.step:08d}")

    def save_checkpoint(self, path: str | None = None) -> str:
        path = path or self.checkpoint_path()
        log.info("saving checkpoint %s", path)
        with _quiet_single_process_dcp():
            dcp.save(self.state_dict(), checkpoint_id=path)
        if self.is_main:
            with open(os.path.join(path, "config.json"), "w") as f:
                json.dump(self.cfg.to_dict(), f, indent=2)
        return path

    def load_checkpoint(self, path: str) -> None:
        log.info("loading checkpoint %s", path)
        state = self.state_dict()
        with _quiet_single_process_dcp():
            dcp.load(state, checkpoint_id=path)
        self.load_state_dict(state)
