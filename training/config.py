"""The training run configuration, in sections as torchtitan's job config:

    model:        preset and shape overrides, vocabulary, sequence length, compute dtype
    optimizer:    AdamW hyper-parameters and gradient clipping
    schedule:     batch size (with ramp-up), run length, learning-rate warmup/decay
    parallelism:  dp x pp x tp, pipeline schedule, data-parallel strategy, recomputation, compile
    data:         manifest checks, blend index cache
    validation:   held-out loss every N steps and at the end
    checkpoint:   interval, retention, async save, Hugging Face export, resume
    logging:      output folder, metrics.jsonl, TensorBoard
    launch:       restarts after a failure, shutdown grace period
    seed:         (top level) seeds the model init and the sample order

Defaults are MT-NLG's recipe (REFERENCE.md section 3) where the recipe fixes a value; sizes that
only make sense at scale (model, batch, tokens) default to something a laptop can run. A YAML
file holds the sections; `--set SECTION.FIELD=VALUE` (or `--set FIELD=VALUE` when the field name
is unique) overrides one value. Loading is the project's one config loader (``infra.config``,
docs/config.md): strict YAML, every value type-checked against its field, unknown keys refused
by name, each section's ``__post_init__`` checks; every error is a ``ConfigError`` whose message
starts with the dotted setting (``optimizer.lr: must be > 0 (got 0.0)``).

    cfg = TrainConfig.from_yaml("training/configs/demo.yaml", ["optimizer.lr=1e-3", "tp=1"])
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field

from infra.config import (ConfigError, apply_settings, build_section, check_overrides, load,
                          parse_overrides)
from training.model import PRESETS, GPTConfig
from training.schedule import BatchRampup, LRSchedule, batch_sizes

DTYPES = ("float32", "bfloat16")
PP_SCHEDULES = ("1f1b", "interleaved_1f1b")
DATA_PARALLEL = ("ddp", "zero1", "fsdp")
AC_MODES = ("none", "full", "selective")
COMPILE_BACKENDS = ("inductor", "aot_eager", "eager")


def _need(cond: bool, setting: str, msg: str, value=dataclasses.MISSING) -> None:
    if not cond:
        got = "" if value is dataclasses.MISSING else f" (got {value!r})"
        raise ValueError(f"{setting}: {msg}{got}")


@dataclass
class ModelSection:
    name: str = "tiny"
    """Model preset: one of training.model.PRESETS (tiny, gpt-125m, gpt-1.3b, mtnlg-530b)."""
    overrides: dict = field(default_factory=dict)
    """GPTConfig fields to override on the preset, e.g. {n_layers: 4, dropout: 0.1}."""
    vocab_size: int | None = None
    """Tokenizer vocabulary the model is built for; null takes it from the manifest. A value
    smaller than the manifest tokenizer's vocabulary is refused before training."""
    seq_length: int | None = None
    """Tokens per training sequence; null means the preset's max_seq_length (MT-NLG: 2048)."""
    dtype: str = "float32"
    """Compute dtype: float32, or bfloat16 with fp32 master weights (MT-NLG: bf16)."""

    def __post_init__(self) -> None:
        _need(self.name in PRESETS, "name", f"unknown preset; choose one of {sorted(PRESETS)}",
              self.name)
        self.overrides = check_overrides(GPTConfig, self.overrides, "overrides")
        _need(self.vocab_size is None or self.vocab_size > 0, "vocab_size", "must be > 0 or null",
              self.vocab_size)
        _need(self.seq_length is None or self.seq_length > 0, "seq_length",
              "must be > 0 or null", self.seq_length)
        _need(self.dtype in DTYPES, "dtype", f"must be one of {DTYPES}", self.dtype)
        try:
            shape = GPTConfig.preset(self.name, **self.overrides)
        except (TypeError, ValueError) as e:
            raise ValueError(f"overrides: {e}") from None
        _need(self.seq_length is None or self.seq_length <= shape.max_seq_length, "seq_length",
              f"must be <= the model's max_seq_length ({shape.max_seq_length})", self.seq_length)


@dataclass
class OptimizerSection:
    lr: float = 5.0e-5
    """Peak learning rate (MT-NLG: 5e-5)."""
    adam_beta1: float = 0.9
    """Adam beta1 (MT-NLG: 0.9)."""
    adam_beta2: float = 0.95
    """Adam beta2 (MT-NLG: 0.95)."""
    adam_eps: float = 1e-8
    """Adam epsilon (MT-NLG: 1e-8)."""
    weight_decay: float = 0.1
    """AdamW decoupled weight decay (MT-NLG: 0.1); not applied to biases and LayerNorms."""
    grad_clip: float = 1.0
    """Clip the global gradient norm to this (MT-NLG: 1.0); 0 disables clipping."""

    def __post_init__(self) -> None:
        _need(self.lr > 0, "lr", "must be > 0", self.lr)
        _need(0 <= self.adam_beta1 < 1, "adam_beta1", "must be in [0, 1)", self.adam_beta1)
        _need(0 <= self.adam_beta2 < 1, "adam_beta2", "must be in [0, 1)", self.adam_beta2)
        _need(self.adam_eps > 0, "adam_eps", "must be > 0", self.adam_eps)
        _need(self.weight_decay >= 0, "weight_decay", "must be >= 0", self.weight_decay)
        _need(self.grad_clip >= 0, "grad_clip", "must be >= 0 (0 disables)", self.grad_clip)


@dataclass
class ScheduleSection:
    global_batch_size: int = 16
    """Sequences per optimizer step across all data-parallel ranks (MT-NLG: 1920)."""
    micro_batch_size: int = 1
    """Sequences per forward/backward on one rank (MT-NLG: 1)."""
    train_steps: int | None = None
    """Optimizer steps to run. Exactly one of train_steps / train_tokens must be set."""
    train_tokens: int | None = None
    """Tokens to train on (MT-NLG: 270B); the last step may overshoot by under one batch."""
    rampup_batch_start: int | None = None
    """Global batch at step 0 when ramping up (MT-NLG: 32); null disables the ramp."""
    rampup_batch_increment: int = 32
    """Sequences added to the global batch at each ramp increment (MT-NLG: 32)."""
    rampup_tokens: int = 12_000_000_000
    """Tokens over which the batch ramps to global_batch_size (MT-NLG: 12B)."""
    warmup_tokens: int = 1_000_000_000
    """Linear learning-rate warmup in tokens (MT-NLG: 1B)."""
    decay_tokens: int = 340_000_000_000
    """Tokens at which the cosine decay reaches its floor, warmup included (MT-NLG: 340B)."""
    min_lr_ratio: float = 0.1
    """Floor of the cosine decay as a fraction of optimizer.lr (MT-NLG: 10%)."""

    def __post_init__(self) -> None:
        _need(self.global_batch_size > 0, "global_batch_size", "must be > 0",
              self.global_batch_size)
        _need(self.micro_batch_size > 0, "micro_batch_size", "must be > 0", self.micro_batch_size)
        _need(self.global_batch_size % self.micro_batch_size == 0, "global_batch_size",
              f"must be a multiple of micro_batch_size ({self.micro_batch_size})",
              self.global_batch_size)
        _need((self.train_steps is None) != (self.train_tokens is None), "train_steps",
              "set exactly one of train_steps and train_tokens", self.train_steps)
        if self.train_steps is not None:
            _need(self.train_steps > 0, "train_steps", "must be > 0", self.train_steps)
        if self.train_tokens is not None:
            _need(self.train_tokens > 0, "train_tokens", "must be > 0", self.train_tokens)
        if self.rampup_batch_start is not None:
            _need(0 < self.rampup_batch_start <= self.global_batch_size, "rampup_batch_start",
                  f"must be in (0, global_batch_size={self.global_batch_size}]",
                  self.rampup_batch_start)
            _need(self.rampup_batch_increment > 0, "rampup_batch_increment", "must be > 0",
                  self.rampup_batch_increment)
            _need((self.global_batch_size - self.rampup_batch_start)
                  % self.rampup_batch_increment == 0, "rampup_batch_increment",
                  "must divide global_batch_size - rampup_batch_start",
                  self.rampup_batch_increment)
            _need(self.rampup_tokens >= 0, "rampup_tokens", "must be >= 0", self.rampup_tokens)
        _need(self.warmup_tokens >= 0, "warmup_tokens", "must be >= 0", self.warmup_tokens)
        _need(self.decay_tokens > self.warmup_tokens, "decay_tokens",
              f"must be > warmup_tokens ({self.warmup_tokens})", self.decay_tokens)
        _need(0 <= self.min_lr_ratio <= 1, "min_lr_ratio", "must be in [0, 1]",
              self.min_lr_ratio)


@dataclass
class ParallelismSection:
    dp: int = -1
    """Data-parallel degree; -1 means world_size / (pp * tp)."""
    pp: int = 1
    """Pipeline-parallel degree (MT-NLG: 35). Layers are split evenly over pp * virtual_stages
    stages."""
    tp: int = 1
    """Tensor-parallel degree (MT-NLG: 8), with sequence parallelism and a vocab-parallel loss;
    must divide model.n_heads and the padded vocabulary."""
    pp_schedule: str = "1f1b"
    """1f1b (needs >= pp micro-batches per step), or interleaved_1f1b (Narayanan et al. 2021,
    virtual_stages >= 2; accepts fewer micro-batches than stages, e.g. a batch ramp-up)."""
    virtual_stages: int = 1
    """Pipeline stages held by each pp rank (the interleaved schedule's model chunks)."""
    data_parallel: str = "ddp"
    """ddp: replicated parameters, gradients all-reduced in buckets overlapped with backward
    (FSDP2's `replicate`); zero1: as ddp, with the AdamW state sharded over dp (each rank steps
    the parameters it owns, then broadcasts them); fsdp: FSDP2 fully_shard (parameters,
    gradients and optimizer state sharded)."""
    activation_checkpoint: str = "none"
    """Recompute activations in backward: none, full (every block, MT-NLG's setting), or
    selective (keep matmul and attention outputs, recompute the cheap element-wise ops)."""
    compile: bool = False
    """torch.compile each transformer block."""
    compile_backend: str = "inductor"
    """torch.compile's backend when compile is on: inductor (generated kernels: Triton on GPUs,
    C++ on CPUs), aot_eager (graph capture and AOTAutograd with eager kernels: to tell a
    capture problem from a code-generation one), or eager (graph capture only)."""

    def __post_init__(self) -> None:
        _need(self.dp == -1 or self.dp > 0, "dp", "must be > 0, or -1 to infer", self.dp)
        _need(self.pp > 0, "pp", "must be > 0", self.pp)
        _need(self.tp > 0, "tp", "must be > 0", self.tp)
        _need(self.pp_schedule in PP_SCHEDULES, "pp_schedule", f"must be one of {PP_SCHEDULES}",
              self.pp_schedule)
        _need(self.virtual_stages > 0, "virtual_stages", "must be > 0", self.virtual_stages)
        _need(self.pp_schedule != "interleaved_1f1b" or self.virtual_stages > 1,
              "virtual_stages", "must be >= 2 with pp_schedule: interleaved_1f1b",
              self.virtual_stages)
        _need(self.pp_schedule != "1f1b" or self.virtual_stages == 1, "virtual_stages",
              "must be 1 with pp_schedule: 1f1b (use interleaved_1f1b for more)",
              self.virtual_stages)
        _need(self.data_parallel in DATA_PARALLEL, "data_parallel",
              f"must be one of {DATA_PARALLEL}", self.data_parallel)
        _need(self.activation_checkpoint in AC_MODES, "activation_checkpoint",
              f"must be one of {AC_MODES}", self.activation_checkpoint)
        _need(self.compile_backend in COMPILE_BACKENDS, "compile_backend",
              f"must be one of {COMPILE_BACKENDS}", self.compile_backend)


VERIFY_SHARDS = ("stamps", "full", "none")


@dataclass
class DataSection:
    verify_shards: str = "stamps"
    """Check the shards' sha256s against the manifest before training (once per node):
    stamps (read only the shards whose verification stamp from `mtnlg stage` / `mtnlg blend`
    no longer matches the file: start-up does not read the corpus), full (hash every shard), or
    none (only sizes and headers)."""
    index_cache: str | None = "auto"
    """Folder of the cached sample/blend indices: auto (<manifest folder>/index_cache), a path,
    or null (build in memory on every rank)."""

    def __post_init__(self) -> None:
        _need(self.verify_shards in VERIFY_SHARDS, "verify_shards",
              f"must be one of {VERIFY_SHARDS}", self.verify_shards)


@dataclass
class ValidationSection:
    interval: int = 0
    """Evaluate the held-out loss every N steps (0: only at the end)."""
    batches: int = 2
    """Global batches of the validation split per evaluation (the same ones every time); 0
    disables validation."""

    def __post_init__(self) -> None:
        _need(self.interval >= 0, "interval", "must be >= 0", self.interval)
        _need(self.batches >= 0, "batches", "must be >= 0", self.batches)


@dataclass
class CheckpointSection:
    enabled: bool = True
    """Write checkpoints. false: none at all, not at the end nor on SIGTERM (throughput
    benchmarks, smoke runs; with none written, workers restarted after a failure start from
    scratch). Loading one (`resume`) is unaffected."""
    interval: int = 0
    """Save a checkpoint every N steps; 0 saves only at the end (and on SIGTERM)."""
    keep_last: int = 0
    """Keep only the newest K checkpoints (older ones are deleted after a save completes);
    0 keeps all."""
    async_save: bool = False
    """Write checkpoints in the background (torch.distributed.checkpoint.async_save); training
    continues while the files are written. The checksum manifest is written once it finishes."""
    export_hf: bool = False
    """At the end, also write OUTPUT_DIR/hf: a Hugging Face GPT-2 checkpoint with tokenizer."""
    resume: str | None = "auto"
    """Where the run starts. auto: from the newest complete, checksum-verified checkpoint in
    OUTPUT_DIR/checkpoints (a half-written or altered one is skipped; none there: from scratch).
    A checkpoint folder: from it (it must verify); after a failure the restarted workers
    continue from the run's own newest checkpoint instead. null: from scratch, and restarts
    after a failure continue from the run's own newest checkpoint. `--resume DIR` sets it."""

    def __post_init__(self) -> None:
        _need(self.interval >= 0, "interval", "must be >= 0", self.interval)
        _need(self.enabled or not self.interval, "interval",
              "saves every N steps, but checkpoint.enabled is false", self.interval)
        _need(self.enabled or not self.export_hf, "export_hf",
              "exports the final checkpoint, but checkpoint.enabled is false", self.export_hf)
        _need(self.keep_last >= 0, "keep_last", "must be >= 0 (0 keeps all)", self.keep_last)
        _need(self.resume is None or bool(self.resume.strip()), "resume",
              "must be auto, a checkpoint folder or null", self.resume)


@dataclass
class LoggingSection:
    output_dir: str = "runs/train"
    """Where metrics, TensorBoard events and checkpoints go."""
    metrics_file: str | None = None
    """JSON-lines metrics path; null means OUTPUT_DIR/metrics.jsonl."""
    interval: int = 1
    """Write a metrics line every N steps."""
    tensorboard: bool = True
    """Also write TensorBoard event files to OUTPUT_DIR/tensorboard (rank 0)."""

    def __post_init__(self) -> None:
        _need(self.interval > 0, "interval", "must be > 0", self.interval)


@dataclass
class LaunchSection:
    max_restarts: int = 0
    """Times the elastic agent restarts the workers after one fails (a crashed or killed rank)
    before the job gives up; restarted workers resume from the newest verified checkpoint.
    `--max-restarts N` sets it."""
    shutdown_timeout_s: int = 30
    """Seconds the agent gives the ranks after SIGTERM (they checkpoint after the current step)
    before it kills them: at least one step plus one checkpoint save."""

    def __post_init__(self) -> None:
        _need(self.max_restarts >= 0, "max_restarts", "must be >= 0", self.max_restarts)
        _need(self.shutdown_timeout_s >= 0, "shutdown_timeout_s", "must be >= 0",
              self.shutdown_timeout_s)


@dataclass
class TrainConfig:
    model: ModelSection = field(default_factory=ModelSection)
    optimizer: OptimizerSection = field(default_factory=OptimizerSection)
    schedule: ScheduleSection = field(default_factory=ScheduleSection)
    parallelism: ParallelismSection = field(default_factory=ParallelismSection)
    data: DataSection = field(default_factory=DataSection)
    validation: ValidationSection = field(default_factory=ValidationSection)
    checkpoint: CheckpointSection = field(default_factory=CheckpointSection)
    logging: LoggingSection = field(default_factory=LoggingSection)
    launch: LaunchSection = field(default_factory=LaunchSection)
    seed: int = 1234
    """Seeds the model init (per parameter, layout independent) and the blended sample order."""

    def __post_init__(self) -> None:
        """The checks that span sections (each section checked itself when it was built)."""
        p, m = self.parallelism, self.model_config()
        if m.n_heads % p.tp:
            raise ConfigError(f"parallelism.tp: {p.tp} does not divide model.n_heads "
                              f"({m.n_heads}); choose a tp that divides it")
        if m.padded_vocab_size() % p.tp:
            raise ConfigError(f"parallelism.tp: {p.tp} does not divide the padded vocabulary "
                              f"({m.padded_vocab_size()}); set model.overrides.vocab_multiple "
                              f"to a multiple of {p.tp}")
        if p.pp * p.virtual_stages > m.n_layers:
            raise ConfigError(f"parallelism.pp: {m.n_layers} layers cannot fill pp * "
                              f"virtual_stages = {p.pp} * {p.virtual_stages} stages")

    # --- derived ---
    def model_config(self, vocab_size: int | None = None) -> GPTConfig:
        overrides = dict(self.model.overrides)
        vocab = vocab_size or self.model.vocab_size
        if vocab is not None:
            overrides["vocab_size"] = vocab
        return GPTConfig.preset(self.model.name, **overrides)

    @property
    def seq_length(self) -> int:
        if self.model.seq_length is not None:
            return self.model.seq_length
        return GPTConfig.preset(self.model.name, **self.model.overrides).max_seq_length

    @property
    def output_dir(self) -> str:
        return self.logging.output_dir

    @property
    def metrics_path(self) -> str:
        return self.logging.metrics_file or os.path.join(self.logging.output_dir, "metrics.jsonl")

    def lr_schedule(self) -> LRSchedule:
        s = self.schedule
        return LRSchedule(self.optimizer.lr, s.warmup_tokens, s.decay_tokens, s.min_lr_ratio)

    def batch_rampup(self) -> BatchRampup:
        s = self.schedule
        return BatchRampup(s.global_batch_size, s.rampup_batch_start, s.rampup_batch_increment,
                           s.rampup_tokens)

    def global_batches(self) -> list[int]:
        """The distinct global batch sizes the run goes through (the ramp, then the target)."""
        s = self.schedule
        if s.rampup_batch_start is None:
            return [s.global_batch_size]
        return list(range(s.rampup_batch_start, s.global_batch_size + 1,
                          s.rampup_batch_increment))

    def check_layout(self, dp: int, pp: int) -> None:
        """The (dp, pp) layout fits every batch size of the run; raises ConfigError."""
        self.check_dp(dp)
        if pp == 1:
            return
        from training.pipeline import schedule_accepts  # the schedule's own rule
        mbs = self.schedule.micro_batch_size
        for batch in self.global_batches():
            n_micro = batch // (mbs * dp)
            why = schedule_accepts(self.parallelism.pp_schedule, n_micro, pp)
            if why:
                raise ConfigError(f"parallelism.pp_schedule: a global batch of {batch} sequences "
                                  f"gives {n_micro} micro-batches per pipeline at dp {dp}: {why}")

    def check_dp(self, dp: int) -> None:
        """Every global batch the run can see must split evenly into micro-batches on dp ranks."""
        s = self.schedule
        unit = s.micro_batch_size * dp
        for setting in ("global_batch_size", "rampup_batch_start", "rampup_batch_increment"):
            value = getattr(s, setting)
            if setting != "global_batch_size" and s.rampup_batch_start is None:
                continue
            if value % unit:
                raise ConfigError(f"schedule.{setting}: {value} is not a multiple of "
                                  f"micro_batch_size * dp = {s.micro_batch_size} * {dp} = {unit}")

    def total_samples(self) -> int:
        """Samples the whole run consumes (sizes the blended index)."""
        seq, ramp = self.seq_length, self.batch_rampup()
        if self.schedule.train_steps is not None:
            return sum(batch_sizes(self.schedule.train_steps, seq, ramp))
        from training.schedule import plan_steps
        return sum(plan_steps(self.schedule.train_tokens, seq, ramp))

    # --- loading (infra.config) ---
    @classmethod
    def from_settings(cls, settings: dict, base: dict | None = None) -> "TrainConfig":
        """From flat settings, ``{"optimizer.lr": 1e-3, "tp": 2}`` (a bare field name when it
        is unique across sections), applied over ``base`` (a sectioned mapping)."""
        return build_section(cls, apply_settings(cls, base or {}, settings))

    @classmethod
    def from_yaml(cls, path: str | None = None, overrides: list[str] | dict | None = None,
                  ) -> "TrainConfig":
        """From a YAML file (None: the defaults) with ``--set`` overrides (``"lr=1e-3"``
        strings, or a mapping of settings)."""
        settings = overrides if isinstance(overrides, dict) else parse_overrides(overrides or [])
        return load(cls, path, settings)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)
