"""The trainer: one class with small named methods, read top to bottom.

    trainer = Trainer.from_manifest(cfg, "manifest.json")   # verifies the manifest first
    trainer.train()                                         # metrics.jsonl + final checkpoint

Setup order (each step announced in the log): manifest checks (shard sha256s, tokenizer file,
vocab size) -> blended sample index -> process group -> parallel dims/mesh -> model (seeded init,
the same on every rank) -> pipeline split -> parallelize each stage -> optimizers -> loader. A manifest whose checksums, tokenizer or vocabulary size do
not fit is refused before the process group or the model exist.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import signal
import sys
import time
import warnings

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp

from training import checkpoint as ckpt
from training.config import TrainConfig
from training.data import (DistributedSampleLoader, StepBatch, build_blended_dataset,
                           manifest_source_names, manifest_tokenizer, open_manifest,
                           verify_manifest_tokenizer)
from training.grads import (allreduce_gradients, clip_grad_norm_, sync_tied_embedding,
                            tied_embedding_group)
from training.metrics import flops_per_token, peak_flops, peak_memory_bytes
from training.model import GPT, cross_entropy_loss, param_groups
from training.parallelize import ParallelDims, init_distributed, parallelize
from training.pipeline import PipelineRunner, split_model
from training.schedule import batch_sizes, plan_steps

log = logging.getLogger(__name__)


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
                 source_names: list[str] | None = None,
                 source_targets: dict[str, float] | None = None):
        self.cfg = cfg
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.rank, self.world_size = init_distributed(self.device.type)
        self.is_main = self.rank == 0
        self.dims = self._setup_parallel_dims()
        self.mesh = self.dims.build_mesh(self.device.type) if self.world_size > 1 else None
        vocab_size = check_vocab(cfg, tokenizer)
        self.model_parts, self.pipeline = self._build_model_parts(vocab_size)
        self.model = self.model_parts[0]  # the whole model when pp == 1
        self.optimizers = [self._build_optimizer(part) for part in self.model_parts]
        self.optimizer = self.optimizers[0]
        self._tied_group = (tied_embedding_group(self.mesh) if self.dims.pp_enabled else None)
        dp_rank = self.mesh["dp"].get_local_rank() if self.mesh is not None else 0
        self.loader = DistributedSampleLoader(dataset, cfg.effective_seq_length,
                                              cfg.micro_batch_size, dp_rank, self.dims.dp,
                                              source_names=source_names, device=self.device)
        self.source_targets = source_targets
        self.lr_schedule, self.batch_rampup = cfg.lr_schedule(), cfg.batch_rampup()
        self.flops_per_token = flops_per_token(cfg.model_config(vocab_size),
                                               cfg.effective_seq_length, cfg.tp)
        self.peak_flops = peak_flops(self.device)
        self.step = 0
        self.consumed_tokens = 0
        self.source_tokens: dict[str, int] = {}
        self._stop_requested = False

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
        names = manifest_source_names(manifest)
        weights = [getattr(s, "weight", None) for s in getattr(manifest, "sources", ()) or ()]
        targets = None
        if names and len(weights) == len(names) and all(w is not None for w in weights):
            total = sum(weights)
            targets = {n: w / total for n, w in zip(names, weights)} if total > 0 else None
        return cls(cfg, dataset, tokenizer, names, targets)

    # --- setup ---
    def _setup_parallel_dims(self) -> ParallelDims:
        dims = ParallelDims(self.cfg.dp, self.cfg.pp, self.cfg.tp, self.world_size)
        self.cfg.check_layout(dims.dp, dims.pp)
        log.info("parallel dims: dp %d x pp %d x tp %d = %d ranks", dims.dp, dims.pp, dims.tp,
                 dims.world_size)
        return dims

    def _build_model_parts(self, vocab_size: int):
        cfg = self.cfg
        mcfg = cfg.model_config(vocab_size)
        torch.manual_seed(cfg.seed)  # identical init on every rank and in every layout
        model = GPT(mcfg, tp=cfg.tp).to(self.device)
        if model.vocab_size < vocab_size:  # padding only grows it; guard against future edits
            raise ValueError(f"vocab_size: model embedding {model.vocab_size} < tokenizer "
                             f"{vocab_size}")
        log.info("model %s: %d layers, hidden %d, %d heads, vocab %d (padded %d), %.2fM params",
                 cfg.model, mcfg.n_layers, mcfg.hidden, mcfg.n_heads, mcfg.vocab_size,
                 model.vocab_size, sum(p.numel() for p in model.parameters()) / 1e6)
        pipeline = None
        if self.dims.pp_enabled:
            pp_mesh = self.mesh["pp"]
            parts, ids = split_model(model, pp_mesh.get_local_rank(), self.dims.pp,
                                     cfg.virtual_stages)
        else:
            parts, ids = [model], [0]
        bf16 = cfg.dtype == "bfloat16"
        for part in parts:
            parallelize(part, self.mesh, self.dims, cfg.activation_checkpoint, cfg.compile,
                        cfg.data_parallel, bf16)
        if self.dims.pp_enabled:
            pipeline = PipelineRunner(parts, ids, self.dims.pp * cfg.virtual_stages,
                                      self.mesh["pp"].get_group(), self.device, cfg.pp_schedule,
                                      self._loss)
        return parts, pipeline

    def _build_optimizer(self, part) -> torch.optim.Optimizer:
        c = self.cfg
        log.info("optimizer AdamW: peak lr %g, betas (%g, %g), eps %g, weight decay %g, clip %g",
                 c.lr, c.adam_beta1, c.adam_beta2, c.adam_eps, c.weight_decay, c.grad_clip)
        return torch.optim.AdamW(param_groups(part, c.weight_decay), lr=c.lr,
                                 betas=(c.adam_beta1, c.adam_beta2), eps=c.adam_eps)

    def parameters(self) -> list[torch.nn.Parameter]:
        return [p for part in self.model_parts for p in part.parameters()]

    # --- one step ---
    def _train_context(self):
        """autocast (bf16 without FSDP, whose policy casts instead) + loss_parallel (tp)."""
        stack = contextlib.ExitStack()
        if self.cfg.dtype == "bfloat16" and not self._fsdp:
            stack.enter_context(torch.autocast(self.device.type, dtype=torch.bfloat16))
        if self.dims.tp_enabled:
            from torch.distributed.tensor.parallel import loss_parallel
            stack.enter_context(loss_parallel())
        return stack

    @property
    def _fsdp(self) -> bool:
        return self.cfg.data_parallel == "fsdp" and self.dims.dp_enabled

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
            if self._fsdp:  # reduce-scatter only after the last micro-batch
                self.model.set_requires_gradient_sync(i == n - 1)
            losses.append(self.forward_backward_step(inputs, targets, 1.0 / n))
        return torch.stack(losses).mean()

    def _reduce_gradients(self) -> None:
        params = self.parameters()
        if self.dims.dp_enabled and not self._fsdp:
            allreduce_gradients(params, self.mesh["dp"].get_group())
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
        max_norm = self.cfg.grad_clip if self.cfg.grad_clip > 0 else float("inf")
        return clip_grad_norm_(self.parameters(), max_norm, pp_group, skip)

    def _step_loss(self, loss: torch.Tensor | None) -> float:
        """The step's loss on every rank: from the last pipeline stage, averaged over dp."""
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
            opt.zero_grad(set_to_none=True)
        loss = self._forward_backward(batch)
        self._reduce_gradients()
        grad_norm = self._clip_gradients()
        for opt in self.optimizers:
            opt.step()
        loss = self._step_loss(loss)
        step_tokens = batch.global_batch * self.cfg.effective_seq_length
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

    # --- the loop ---
    def train(self) -> list[dict]:
        cfg = self.cfg
        steps_left = (cfg.train_steps - self.step) if cfg.train_steps is not None else None
        bar = self._progress_bar(steps_left)
        history = []
        with self._metrics_file() as metrics, self._sigterm_handler():
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
                if self._agree_to_stop():
                    log.warning("SIGTERM: checkpointing at step %d and stopping", self.step)
                    break
        if bar is not None:
            bar.close()
        if not cfg.checkpoint_interval or self.step % cfg.checkpoint_interval:
            self.save_checkpoint()
        if cfg.export_hf and not self._stop_requested:
            self.export_hf(os.path.join(cfg.output_dir, "hf"))
        return history

    @contextlib.contextmanager
    def _sigterm_handler(self):
        """SIGTERM (a preempted job; torchrun forwards it to every rank) ends the run after the
        current step, with a checkpoint."""
        def request_stop(signum, frame):
            self._stop_requested = True
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
        self._stop_requested = bool(flag.item())
        return self._stop_requested

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
        return os.path.join(self.cfg.output_dir, "checkpoints", f"step-{step or self.step:08d}")

    def save_checkpoint(self, path: str | None = None) -> str:
        path = path or self.checkpoint_path()
        log.info("saving checkpoint %s", path)
        with _quiet_single_process_dcp():
            dcp.save(self.state_dict(), checkpoint_id=path)
        if self.is_main:
            # the run config, plus what an export or a reader needs to rebuild the plain model
            meta = {"_world_size": self.world_size, "_tp": self.dims.tp,
                    "_model_config": dataclasses.asdict(self.model.cfg)}
            with open(os.path.join(path, "config.json"), "w") as f:
                json.dump({**self.cfg.to_dict(), **meta}, f, indent=2)
        return path

    def load_checkpoint(self, path: str) -> None:
        """Load a checkpoint saved under any (dp, pp, tp) layout; RNG states come back only
        when the world size is the same."""
        log.info("loading checkpoint %s", path)
        state = self.state_dict()
        if f"rng.rank{self.rank}" not in ckpt.saved_keys(path) or \
                self._saved_world_size(path) != self.world_size:
            log.info("checkpoint from another layout: RNG states not restored")
            state.pop("rng")
        with _quiet_single_process_dcp():
            dcp.load(state, checkpoint_id=path)
        self.load_state_dict(state)

    @staticmethod
    def _saved_world_size(path: str) -> int | None:
        try:
            with open(os.path.join(path, "config.json")) as f:
                saved = json.load(f)
        except OSError:
            return None
        return saved.get("_world_size")

    def export_hf(self, out_dir: str) -> str | None:
        """Write the final weights as a Hugging Face GPT-2 checkpoint (rank 0), from the last
        checkpoint so every layout exports the same way."""
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
