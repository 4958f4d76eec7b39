"""The trainer: one class with small named methods, read top to bottom.

    trainer = Trainer.from_manifest(cfg, "manifest.json")   # verifies the manifest first
    trainer.train()                                         # metrics, validation, checkpoints

Setup order (each step announced in the log): process group -> manifest checks (shard sha256s
once per node, tokenizer, vocab size) -> blended sample indices (built once per node, memory-
mapped by every rank) -> parallel dims/mesh -> model on the meta device -> pipeline split ->
parallelize each stage (tp, activation checkpointing, compile, dp) -> materialize: allocate and
initialise only this rank's shards -> optimizers (ZeRO-1: this rank's share) -> loader. A
manifest whose checksums, tokenizer or vocabulary size do not fit is refused before the model
exists.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import time

import torch
import torch.distributed as dist

from training import checkpoint as ckpt
from infra.config import ConfigError
from training.config import TrainConfig
from training.data import (DistributedSampleLoader, StepBatch, build_blended_dataset,
                           check_manifest, check_vocab, manifest_source_names,
                           manifest_tokenizer, once_per_node, open_manifest,
                           verified_by_launcher)
from training.grads import clip_grad_norm_, sync_tied_embedding, tied_embedding_group
from training.manifest_values import check_manifest_values
from training.metrics import MetricsLogger, flops_per_token, peak_flops, peak_memory_bytes
from training.model import GPT, cross_entropy_loss
from training.optimizer import ZeroOneAdamW, build_optimizer
from training.parallelize import ParallelDims, init_distributed, materialize, parallelize
from training.pipeline import PipelineRunner, split_model
from training.trainer_state import TrainerState
from training.worker import note_stop_signal

log = logging.getLogger(__name__)


class Trainer(TrainerState):
    def __init__(self, cfg: TrainConfig, dataset, tokenizer: dict,
                 source_names: list[str] | None = None,
                 source_targets: dict[str, float] | None = None, valid_dataset=None):
        self.cfg = cfg
        self.tokenizer = tokenizer
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.rank, self.world_size = init_distributed(self.device.type)
        self.is_main = self.rank == 0
        self.dims = self._setup_parallel_dims()
        self.mesh = self.dims.build_mesh(self.device.type) if self.world_size > 1 else None
        vocab_size = check_vocab(cfg, tokenizer)
        self.model_parts, self.pipeline = self._build_model_parts(vocab_size)
        self.model = self.model_parts[0]  # the whole model when pp == 1
        dp_group = (self.mesh["dp"].get_group() if self.dims.dp_enabled
                    and cfg.parallelism.data_parallel == "zero1" else None)
        self.optimizers = [build_optimizer(part, cfg, dp_group) for part in self.model_parts]
        o = cfg.optimizer
        log.info("optimizer AdamW%s: peak lr %g, betas (%g, %g), eps %g, weight decay %g, "
                 "clip %g", " (ZeRO-1: state sharded over dp)" if dp_group else "", o.lr,
                 o.adam_beta1, o.adam_beta2, o.adam_eps, o.weight_decay, o.grad_clip)
        self._tied_group = (tied_embedding_group(self.mesh) if self.dims.pp_enabled else None)
        self.dp_rank = self.mesh["dp"].get_local_rank() if self.mesh is not None else 0
        self.loader = self._loader(dataset, source_names)
        self.valid_dataset, self.source_names = valid_dataset, source_names
        self.source_targets = source_targets
        self.lr_schedule, self.batch_rampup = cfg.lr_schedule(), cfg.batch_rampup()
        self.flops_per_token = flops_per_token(cfg.model_config(vocab_size), cfg.seq_length)
        self.peak_flops = peak_flops(self.device)
        self.checkpoints = ckpt.CheckpointManager(
            os.path.join(cfg.output_dir, "checkpoints"), cfg.checkpoint.keep_last,
            cfg.checkpoint.async_save, self.is_main)
        self.step = 0
        self.consumed_tokens = 0
        self.source_tokens: dict[str, int] = {}
        self._stop_requested = False
        self._last_saved_step: int | None = None

    @classmethod
    def from_manifest(cls, cfg: TrainConfig, manifest_path: str) -> "Trainer":
        """Verify the manifest (checksums once per node, tokenizer, vocab) and build the
        blended datasets (train, and valid when the manifest has a split). The manifest's own
        values are checked first, on every rank, before the process group exists."""
        check_manifest_values(manifest_path)
        init_distributed("cuda" if torch.cuda.is_available() else "cpu")
        mode = cfg.data.verify_shards
        if mode != "none" and verified_by_launcher(manifest_path):
            log.info("manifest shards verified by the launcher on this machine")
            mode = "none"
        once_per_node("manifest checks", lambda: check_manifest(cfg, manifest_path, mode))
        manifest = open_manifest(manifest_path, verify_checksums=False)
        tokenizer = manifest_tokenizer(manifest)
        check_vocab(cfg, tokenizer)
        cache = cfg.data.index_cache
        dataset = build_blended_dataset(manifest, cfg.seq_length, cfg.total_samples(), cfg.seed,
                                        cache, "train")
        valid = None
        if manifest.split is not None and manifest.split[1] > 0 and cfg.validation.batches:
            if any(manifest.split_range(s, "valid")[1] > manifest.split_range(s, "valid")[0]
                   for s in manifest.sources if s.weight > 0):
                valid = build_blended_dataset(manifest, cfg.seq_length, _valid_samples(cfg),
                                              cfg.seed, cache, "valid")
            else:
                log.warning("the valid split of %s holds no document (sources too small for "
                            "its share): no validation loss", manifest_path)
        elif cfg.validation.batches:
            log.warning("manifest %s has no valid split (blend spec `split:`): no validation "
                        "loss", manifest_path)
        names = manifest_source_names(manifest)
        weights = [s.weight for s in manifest.sources]
        total = sum(weights)
        targets = {n: w / total for n, w in zip(names, weights)} if total > 0 else None
        return cls(cfg, dataset, tokenizer, names, targets, valid)

    # --- setup ---
    def _setup_parallel_dims(self) -> ParallelDims:
        p = self.cfg.parallelism
        try:
            dims = ParallelDims(p.dp, p.pp, p.tp, self.world_size)
        except ValueError as e:
            raise ConfigError(f"parallelism: {e}") from None
        self.cfg.check_layout(dims.dp, dims.pp)
        log.info("parallel dims: dp %d x pp %d x tp %d = %d ranks", dims.dp, dims.pp, dims.tp,
                 dims.world_size)
        return dims

    def _build_model_parts(self, vocab_size: int):
        cfg, p = self.cfg, self.cfg.parallelism
        mcfg = cfg.model_config(vocab_size)
        with torch.device("meta"):  # nothing allocated until `materialize`
            model = GPT(mcfg)
        log.info("model %s on the meta device: %d layers, hidden %d, %d heads, vocab %d "
                 "(padded %d), %.2fM params", cfg.model.name, mcfg.n_layers, mcfg.hidden,
                 mcfg.n_heads, mcfg.vocab_size, model.vocab_size,
                 sum(q.numel() for q in model.parameters()) / 1e6)
        if self.dims.pp_enabled:
            parts, ids = split_model(model, self.mesh["pp"].get_local_rank(), self.dims.pp,
                                     p.virtual_stages)
        else:
            parts, ids = [model], [0]
        bf16 = cfg.model.dtype == "bfloat16"
        for part in parts:
            parallelize(part, self.mesh, self.dims, p.activation_checkpoint, p.compile,
                        p.data_parallel, bf16, p.compile_backend)
            materialize(part, self.device, cfg.seed)
        local = sum((q.to_local() if hasattr(q, "to_local") else q).numel()
                    for part in parts for q in part.parameters())
        log.info("materialized this rank's shard: %.2fM parameters on %s (seed %d)", local / 1e6,
                 self.device, cfg.seed)
        pipeline = None
        if self.dims.pp_enabled:
            pipeline = PipelineRunner(parts, ids, self.dims.pp * p.virtual_stages,
                                      self.mesh["pp"].get_group(), self.device, p.pp_schedule,
                                      self._loss)
        return parts, pipeline

    def _loader(self, dataset, source_names=None) -> DistributedSampleLoader:
        return DistributedSampleLoader(dataset, self.cfg.seq_length,
                                       self.cfg.schedule.micro_batch_size, self.dp_rank,
                                       self.dims.dp, source_names=source_names,
                                       device=self.device)

    def parameters(self) -> list[torch.nn.Parameter]:
        return [p for part in self.model_parts for p in part.parameters()]

    # --- one step ---
    def _train_context(self):
        """autocast (bf16 without FSDP, whose policy casts instead) + loss_parallel (tp)."""
        stack = contextlib.ExitStack()
        if self.cfg.model.dtype == "bfloat16" and not self._fsdp:
            stack.enter_context(torch.autocast(self.device.type, dtype=torch.bfloat16))
        if self.dims.tp_enabled:
            from torch.distributed.tensor.parallel import loss_parallel
            stack.enter_context(loss_parallel())
        return stack

    @property
    def _fsdp(self) -> bool:
        return self.cfg.parallelism.data_parallel == "fsdp" and self.dims.dp_enabled

    @staticmethod
    def _loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return cross_entropy_loss(logits, targets)

    def forward_backward_step(self, inputs: torch.Tensor, targets: torch.Tensor,
                              scale: float) -> torch.Tensor:
        """Loss of one micro-batch (no pipeline); gradients of ``loss * scale`` accumulate."""
        with self._train_context():
            loss = self._loss(self.model(inputs), targets)
            (loss * scale).backward()
        loss = loss.detach()
        return loss.full_tensor() if hasattr(loss, "full_tensor") else loss

    def _forward_backward(self, batch: StepBatch) -> torch.Tensor | None:
        """All micro-batches of a step; returns this rank's mean loss (None off the last stage)."""
        if self.pipeline is not None:
            with self._train_context():
                return self.pipeline.step(batch.micro_batches)
        n = len(batch.micro_batches)
        losses = []
        for i, (inputs, targets) in enumerate(batch.micro_batches):
            if self.dims.dp_enabled:  # reduce (overlapped) only in the last micro-batch
                self.model.set_requires_gradient_sync(i == n - 1)
            losses.append(self.forward_backward_step(inputs, targets, 1.0 / n))
        return torch.stack(losses).mean()

    def _sync_tied_embedding(self) -> None:
        if self._tied_group is not None:
            tied = [w for part in self.model_parts for w in
                    ([part.tok_embeddings.weight] if part.tok_embeddings is not None else [])
                    + ([part.output.weight] if part.output is not None else [])]
            sync_tied_embedding(tied, self._tied_group)

    def _clip_gradients(self) -> float:
        skip = []
        if self.dims.pp_enabled:  # the last stage's copy of the tied embedding: counted once
            skip = [p.output.weight for p in self.model_parts
                    if p.output is not None and p.tok_embeddings is None]
        pp_group = self.mesh["pp"].get_group() if self.dims.pp_enabled else None
        clip = self.cfg.optimizer.grad_clip
        return clip_grad_norm_(self.parameters(), clip if clip > 0 else float("inf"), pp_group,
                               skip)

    def _mean_over_ranks(self, loss: torch.Tensor | None) -> float:
        """A loss on every rank: from the last pipeline stage, averaged over dp."""
        if self.mesh is None:
            return float(loss)
        value = (loss.detach().float().reshape(()) if loss is not None
                 else torch.zeros((), device=self.device))
        if self.dims.pp_enabled:
            dist.all_reduce(value, group=self.mesh["pp"].get_group())  # only the last is != 0
        if self.dims.dp_enabled:
            dist.all_reduce(value, group=self.mesh["dp"].get_group())
            value = value / self.dims.dp
        return float(value)

    def train_step(self, batch: StepBatch) -> dict:
        t0 = time.perf_counter()
        lr = self.lr_schedule(self.consumed_tokens)
        for opt in self.optimizers:
            for group in opt.param_groups:
                group["lr"] = lr
        for part in self.model_parts:
            part.zero_grad(set_to_none=True)
        loss = self._forward_backward(batch)
        self._sync_tied_embedding()
        grad_norm = self._clip_gradients()
        for opt in self.optimizers:
            opt.step()
            if isinstance(opt, ZeroOneAdamW):
                opt.broadcast_parameters()
        loss = self._mean_over_ranks(loss)
        step_tokens = batch.global_batch * self.cfg.seq_length
        self.step += 1
        self.consumed_tokens += step_tokens
        for name, tokens in batch.source_tokens.items():
            self.source_tokens[name] = self.source_tokens.get(name, 0) + tokens
        if self.device.type == "cuda":
            torch.cuda.synchronize()
        dt = time.perf_counter() - t0
        return self._record(loss, grad_norm, lr, batch.global_batch, step_tokens, dt)

    def _record(self, loss, grad_norm, lr, global_batch, step_tokens, dt) -> dict:
        tokens_per_s = step_tokens / dt
        tflops = tokens_per_s * self.flops_per_token / self.world_size / 1e12
        total = sum(self.source_tokens.values()) or 1
        record = {"step": self.step, "loss": loss, "grad_norm": grad_norm, "lr": lr,
                  "global_batch": global_batch, "tokens": step_tokens,
                  "consumed_tokens": self.consumed_tokens, "tokens_per_s": tokens_per_s,
                  "step_time_s": dt, "tflops_per_device": tflops,
                  "mfu": tflops * 1e12 / self.peak_flops if self.peak_flops else None,
                  "peak_memory_bytes": peak_memory_bytes(self.device),
                  "source_tokens": dict(self.source_tokens),
                  "source_share": {k: v / total for k, v in self.source_tokens.items()}}
        if self.source_targets:
            record["source_target"] = dict(self.source_targets)
        return record

    # --- validation ---
    @torch.no_grad()
    def evaluate(self) -> float | None:
        """Mean loss over the validation split's first ``validation.batches`` global batches
        (the same samples at every evaluation, so the numbers are comparable)."""
        if self.valid_dataset is None or not self.cfg.validation.batches:
            return None
        loader = self._loader(self.valid_dataset)
        for part in self.model_parts:
            part.eval()
        losses = []
        try:
            for _ in range(self.cfg.validation.batches):
                batch = loader.next_step(self.cfg.schedule.global_batch_size)
                with self._train_context():
                    if self.pipeline is not None:
                        loss = self.pipeline.eval_step(batch.micro_batches)
                    else:
                        loss = torch.stack([_plain(self._loss(self.model(x), y))
                                            for x, y in batch.micro_batches]).mean()
                losses.append(self._mean_over_ranks(loss))
        finally:
            for part in self.model_parts:
                part.train()
        return sum(losses) / len(losses)

    # --- the loop ---
    def train(self) -> list[dict]:
        cfg = self.cfg
        steps_left = (cfg.schedule.train_steps - self.step
                      if cfg.schedule.train_steps is not None else None)
        bar = self._progress_bar(steps_left)
        history = []
        self.validation_history: list[dict] = []
        interval = cfg.validation.interval
        t_prev = time.perf_counter()
        with self._metrics() as metrics, self._sigterm_handler():
            while self._should_continue():
                record = self.train_step(self.loader.next_step(self.batch_rampup(
                    self.consumed_tokens)))
                history.append(record)
                if metrics is not None and self.step % cfg.logging.interval == 0:
                    metrics.log(record)
                if bar is not None:
                    bar.update(1)
                    bar.set_postfix(loss=f"{record['loss']:.3f}", lr=f"{record['lr']:.2e}")
                elif self.is_main and self.step % cfg.logging.interval == 0:
                    log.info("step %d loss %.4f grad_norm %.3f lr %.3e tokens/s %.0f", self.step,
                             record["loss"], record["grad_norm"], record["lr"],
                             record["tokens_per_s"])
                if interval and self.step % interval == 0 and self._should_continue():
                    self._validate(metrics)
                if cfg.checkpoint.interval and self.step % cfg.checkpoint.interval == 0:
                    self.save_checkpoint()
                now = time.perf_counter()
                record["wall_time_s"] = now - t_prev  # loader, step, logging, checkpoint
                t_prev = now
                if self._agree_to_stop():
                    log.warning("SIGTERM: %s at step %d", "checkpointing and stopping"
                                if cfg.checkpoint.enabled else "stopping (checkpoint.enabled is "
                                "false: no checkpoint)", self.step)
                    break
            if not self._stop_requested and history:  # (a finished run resumed: nothing new)
                self._validate(metrics)
        if bar is not None:
            bar.close()
        if cfg.checkpoint.enabled and self._last_saved_step != self.step:
            self.save_checkpoint()
        self.checkpoints.wait()
        if cfg.checkpoint.export_hf and not self._stop_requested:
            self.export_hf(os.path.join(cfg.output_dir, "hf"))
        return history

    def _validate(self, metrics) -> None:
        loss = self.evaluate()
        if loss is None:
            return
        import math
        row = {"step": self.step, "val_loss": loss, "val_ppl": math.exp(min(loss, 50.0)),
               "consumed_tokens": self.consumed_tokens}
        self.validation_history.append(row)
        if metrics is not None:
            metrics.log(row, prefix="val")
        if self.is_main:
            log.info("step %d validation loss %.4f", self.step, loss)

    @contextlib.contextmanager
    def _sigterm_handler(self):
        """SIGTERM (a preempted job; torchrun forwards it to every rank) ends the run after the
        current step, with a checkpoint."""
        def request_stop(signum, frame):
            self._stop_requested = True
            note_stop_signal(signum)
        try:
            previous = signal.signal(signal.SIGTERM, request_stop)
        except ValueError:  # not the main thread: no handler
            yield
            return
        try:
            yield
        finally:
            signal.signal(signal.SIGTERM, previous)

    def _agree_to_stop(self) -> bool:
        if self.mesh is None:
            return self._stop_requested
        flag = torch.tensor(float(self._stop_requested), device=self.device)
        dist.all_reduce(flag, op=dist.ReduceOp.MAX)
        # A SIGTERM handled while the all-reduce ran (its peer was slow) set the request after
        # the flag was read: kept, the next step's agreement stops; overwritten by the agreed
        # "no", the signal was lost and the ranks trained on until the agent killed them.
        agreed = bool(flag.item())
        self._stop_requested = self._stop_requested or agreed
        return agreed

    def _should_continue(self) -> bool:
        s = self.cfg.schedule
        if s.train_steps is not None:
            return self.step < s.train_steps
        return self.consumed_tokens < s.train_tokens

    def _progress_bar(self, total: int | None):
        if not (self.is_main and sys.stderr.isatty()):
            return None
        from tqdm import tqdm
        return tqdm(total=total, desc="train", unit="step")

    @contextlib.contextmanager
    def _metrics(self):
        if not self.is_main:
            yield None
            return
        tb = (os.path.join(self.cfg.output_dir, "tensorboard") if self.cfg.logging.tensorboard
              else None)
        logger = MetricsLogger(self.cfg.metrics_path, tb, append=self.step > 0,
                               resume_step=self.step if self.step > 0 else None)
        try:
            yield logger
        finally:
            logger.close()


def _plain(t: torch.Tensor) -> torch.Tensor:
    return t.full_tensor() if hasattr(t, "full_tensor") else t


def _valid_samples(cfg: TrainConfig) -> int:
    return cfg.validation.batches * cfg.schedule.global_batch_size
