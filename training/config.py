"""The training run configuration: one typed dataclass, loadable from YAML, overridable from the CLI.

Defaults are MT-NLG's recipe (REFERENCE.md section 3) where the recipe fixes a value; sizes that
only make sense at scale (model, batch, tokens) default to something a laptop can run. Every error
names the setting to change.

    cfg = TrainConfig.from_yaml("training/configs/demo.yaml", overrides=["lr=1e-3", "tp=1"])
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field

import yaml

from training.model import PRESETS, GPTConfig
from training.schedule import BatchRampup, LRSchedule

DTYPES = ("float32", "bfloat16")
PP_SCHEDULES = ("1f1b", "interleaved_1f1b")
DATA_PARALLEL = ("allreduce", "fsdp")
AC_MODES = ("none", "full", "selective")


@dataclass
class TrainConfig:
    # --- model ---
    model: str = "tiny"
    """Model preset: one of training.model.PRESETS (tiny, gpt-125m, gpt-1.3b, mtnlg-530b)."""
    model_overrides: dict = field(default_factory=dict)
    """GPTConfig fields to override on the preset, e.g. {n_layers: 4, dropout: 0.1}."""
    vocab_size: int | None = None
    """Tokenizer vocabulary the model is built for; None takes it from the manifest. A value
    smaller than the manifest tokenizer's vocabulary is refused before training."""
    seq_length: int | None = None
    """Tokens per training sequence; None means the preset's max_seq_length (MT-NLG: 2048)."""
    dtype: str = "float32"
    """Compute dtype: float32, or bfloat16 autocast with fp32 master weights (MT-NLG: bf16)."""

    # --- batch and length of training ---
    global_batch_size: int = 16
    """Sequences per optimizer step across all data-parallel ranks (MT-NLG: 1920)."""
    micro_batch_size: int = 1
    """Sequences per forward/backward on one rank (MT-NLG: 1). Gradients are accumulated over
    global_batch_size / (micro_batch_size * dp) micro-batches."""
    train_steps: int | None = None
    """Optimizer steps to run. Exactly one of train_steps / train_tokens must be set."""
    train_tokens: int | None = None
    """Tokens to train on (MT-NLG: 270B); the last step may overshoot by under one batch."""
    rampup_batch_start: int | None = None
    """Global batch at step 0 when ramping up (MT-NLG: 32); None disables the ramp."""
    rampup_batch_increment: int = 32
    """Sequences added to the global batch at each ramp increment (MT-NLG: 32)."""
    rampup_tokens: int = 12_000_000_000
    """Tokens over which the batch ramps to global_batch_size (MT-NLG: 12B)."""

    # --- optimizer ---
    lr: float = 5.0e-5
    """Peak learning rate (MT-NLG: 5e-5)."""
    min_lr_ratio: float = 0.1
    """Floor of the cosine decay as a fraction of lr (MT-NLG: 10%)."""
    warmup_tokens: int = 1_000_000_000
    """Linear warmup length in tokens (MT-NLG: 1B)."""
    decay_tokens: int = 340_000_000_000
    """Tokens at which the cosine decay reaches its floor, warmup included (MT-NLG: 340B)."""
    adam_beta1: float = 0.9
    adam_beta2: float = 0.95
    adam_eps: float = 1e-8
    weight_decay: float = 0.1
    """AdamW decoupled weight decay; not applied to biases and LayerNorm parameters."""
    grad_clip: float = 1.0
    """Clip the global gradient norm to this; 0 disables clipping."""

    # --- parallelism ---
    dp: int = -1
    """Data-parallel degree; -1 means world_size / (pp * tp)."""
    pp: int = 1
    """Pipeline-parallel degree (MT-NLG: 35). Layers are split evenly over pp * virtual_stages
    stages; the number of micro-batches per step must be >= pp for 1F1B."""
    tp: int = 1
    """Tensor-parallel degree (MT-NLG: 8), with sequence parallelism and a vocab-parallel loss."""
    pp_schedule: str = "1f1b"
    """Pipeline schedule: 1f1b, or interleaved_1f1b (Narayanan et al. 2021, needs
    virtual_stages >= 2)."""
    virtual_stages: int = 1
    """Pipeline stages held by each pp rank (the interleaved schedule's model chunks)."""
    data_parallel: str = "allreduce"
    """allreduce: replicated parameters, gradients averaged over dp once per step (MT-NLG's
    setting); fsdp: FSDP2 fully_shard over dp (bf16 parameters and fp32 gradient reduction when
    dtype is bfloat16)."""
    activation_checkpoint: str = "none"
    """Recompute activations in backward: none, full (every block, MT-NLG's setting), or
    selective (keep matmul and attention outputs, recompute the cheap element-wise ops)."""
    compile: bool = False
    """torch.compile each transformer block."""
    export_hf: bool = False
    """At the end, also write OUTPUT_DIR/hf: a GPT-2-compatible config.json + model.safetensors."""

    # --- bookkeeping ---
    seed: int = 1234
    """Seeds the model init and the blended sample order."""
    output_dir: str = "runs/train"
    """Where metrics and checkpoints go."""
    metrics_file: str | None = None
    """JSON-lines metrics path; None means OUTPUT_DIR/metrics.jsonl."""
    checkpoint_interval: int = 0
    """Save a checkpoint every N steps; 0 saves only at the end."""
    log_interval: int = 1
    """Write a metrics line every N steps."""
    verify_checksums: bool = True
    """Check every shard's sha256 against the manifest before training."""

    def __post_init__(self):
        def need(cond: bool, setting: str, msg: str):
            if not cond:
                raise ValueError(f"{setting}: {msg} (got {getattr(self, setting)!r})")

        need(self.model in PRESETS, "model", f"unknown preset; choose one of {sorted(PRESETS)}")
        need(isinstance(self.model_overrides, dict), "model_overrides", "must be a mapping")
        bad = set(self.model_overrides) - {f.name for f in dataclasses.fields(GPTConfig)}
        need(not bad, "model_overrides", f"unknown GPTConfig fields {sorted(bad)}")
        need(self.vocab_size is None or self.vocab_size > 0, "vocab_size", "must be > 0 or null")
        need(self.seq_length is None or self.seq_length > 0, "seq_length", "must be > 0 or null")
        need(self.dtype in DTYPES, "dtype", f"must be one of {DTYPES}")
        need(self.global_batch_size > 0, "global_batch_size", "must be > 0")
        need(self.micro_batch_size > 0, "micro_batch_size", "must be > 0")
        need(self.global_batch_size % self.micro_batch_size == 0, "global_batch_size",
             f"must be a multiple of micro_batch_size ({self.micro_batch_size})")
        need((self.train_steps is None) != (self.train_tokens is None), "train_steps",
             "set exactly one of train_steps and train_tokens")
        if self.train_steps is not None:
            need(self.train_steps > 0, "train_steps", "must be > 0")
        if self.train_tokens is not None:
            need(self.train_tokens > 0, "train_tokens", "must be > 0")
        if self.rampup_batch_start is not None:
            need(0 < self.rampup_batch_start <= self.global_batch_size, "rampup_batch_start",
                 f"must be in (0, global_batch_size={self.global_batch_size}]")
            need(self.rampup_batch_increment > 0, "rampup_batch_increment", "must be > 0")
            need((self.global_batch_size - self.rampup_batch_start)
                 % self.rampup_batch_increment == 0, "rampup_batch_increment",
                 "must divide global_batch_size - rampup_batch_start")
            need(self.rampup_tokens >= 0, "rampup_tokens", "must be >= 0")
        need(self.lr > 0, "lr", "must be > 0")
        need(0 <= self.min_lr_ratio <= 1, "min_lr_ratio", "must be in [0, 1]")
        need(self.warmup_tokens >= 0, "warmup_tokens", "must be >= 0")
        need(self.decay_tokens > self.warmup_tokens, "decay_tokens",
             f"must be > warmup_tokens ({self.warmup_tokens})")
        need(0 <= self.adam_beta1 < 1, "adam_beta1", "must be in [0, 1)")
        need(0 <= self.adam_beta2 < 1, "adam_beta2", "must be in [0, 1)")
        need(self.adam_eps > 0, "adam_eps", "must be > 0")
        need(self.weight_decay >= 0, "weight_decay", "must be >= 0")
        need(self.grad_clip >= 0, "grad_clip", "must be >= 0 (0 disables)")
        need(self.dp == -1 or self.dp > 0, "dp", "must be > 0, or -1 to infer")
        need(self.pp > 0, "pp", "must be > 0")
        need(self.tp > 0, "tp", "must be > 0")
        need(self.pp_schedule in PP_SCHEDULES, "pp_schedule", f"must be one of {PP_SCHEDULES}")
        need(self.virtual_stages > 0, "virtual_stages", "must be > 0")
        need(self.pp_schedule != "interleaved_1f1b" or self.virtual_stages > 1, "virtual_stages",
             "must be >= 2 with pp_schedule: interleaved_1f1b")
        need(self.pp_schedule != "1f1b" or self.virtual_stages == 1, "virtual_stages",
             "must be 1 with pp_schedule: 1f1b (use interleaved_1f1b for more)")
        need(self.data_parallel in DATA_PARALLEL, "data_parallel",
             f"must be one of {DATA_PARALLEL}")
        need(self.activation_checkpoint in AC_MODES, "activation_checkpoint",
             f"must be one of {AC_MODES}")
        need(self.checkpoint_interval >= 0, "checkpoint_interval", "must be >= 0")
        need(self.log_interval > 0, "log_interval", "must be > 0")
        model = self.model_config()
        need(self.effective_seq_length <= model.max_seq_length, "seq_length",
             f"must be <= the model's max_seq_length ({model.max_seq_length})")

    # --- derived ---
    def model_config(self, vocab_size: int | None = None) -> GPTConfig:
        overrides = dict(self.model_overrides)
        vocab = vocab_size or self.vocab_size
        if vocab is not None:
            overrides["vocab_size"] = vocab
        return GPTConfig.preset(self.model, **overrides)

    @property
    def effective_seq_length(self) -> int:
        if self.seq_length is not None:
            return self.seq_length
        return GPTConfig.preset(self.model, **self.model_overrides).max_seq_length

    @property
    def metrics_path(self) -> str:
        return self.metrics_file or os.path.join(self.output_dir, "metrics.jsonl")

    def lr_schedule(self) -> LRSchedule:
        return LRSchedule(self.lr, self.warmup_tokens, self.decay_tokens, self.min_lr_ratio)

    def batch_rampup(self) -> BatchRampup:
        return BatchRampup(self.global_batch_size, self.rampup_batch_start,
                           self.rampup_batch_increment, self.rampup_tokens)

    def check_layout(self, dp: int, pp: int) -> None:
        """The (dp, pp) layout fits the batch sizes and the model's layers."""
        self.check_dp(dp)
        n_stages = pp * self.virtual_stages
        n_layers = self.model_config().n_layers
        if pp > 1 and n_layers < n_stages:
            raise ValueError(f"pp: {n_layers} layers cannot fill pp * virtual_stages = "
                             f"{pp} * {self.virtual_stages} = {n_stages} stages")
        if pp > 1:
            smallest = self.rampup_batch_start or self.global_batch_size
            n_micro = smallest // (self.micro_batch_size * dp)
            if self.pp_schedule == "1f1b" and n_micro < pp:
                raise ValueError(f"global_batch_size: a step of {smallest} sequences gives "
                                 f"{n_micro} micro-batches per pipeline, fewer than pp = {pp}; "
                                 f"1F1B needs at least pp micro-batches")

    def check_dp(self, dp: int) -> None:
        """Every global batch the run can see must split evenly into micro-batches on dp ranks."""
        unit = self.micro_batch_size * dp
        for setting in ("global_batch_size", "rampup_batch_start", "rampup_batch_increment"):
            value = getattr(self, setting)
            if setting != "global_batch_size" and self.rampup_batch_start is None:
                continue
            if value % unit:
                raise ValueError(f"{setting}: {value} is not a multiple of micro_batch_size * dp "
                                 f"= {self.micro_batch_size} * {dp} = {unit}")

    # --- loading ---
    @classmethod
    def from_dict(cls, data: dict) -> "TrainConfig":
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown training settings {unknown}; known: {sorted(known)}")
        return cls(**{k: _coerce(cls, k, v) for k, v in data.items()})

    @classmethod
    def from_yaml(cls, path: str | None = None, overrides: list[str] | dict | None = None,
                  ) -> "TrainConfig":
        data = {}
        if path:
            with open(path) as f:
                data = yaml.safe_load(f) or {}
            if not isinstance(data, dict):
                raise ValueError(f"{path}: a training config must be a YAML mapping")
        data.update(parse_overrides(overrides or {}))
        return cls.from_dict(data)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def parse_overrides(overrides: list[str] | dict) -> dict:
    """``["lr=1e-3", "model_overrides={n_layers: 4}"]`` -> dict; values are parsed as YAML."""
    if isinstance(overrides, dict):
        return dict(overrides)
    out = {}
    for item in overrides:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"override {item!r} must look like SETTING=VALUE")
        out[key.strip()] = yaml.safe_load(value)
    return out


def _coerce(cls, name: str, value):
    """YAML reads ``1e-3`` and ``1e9`` as strings; turn numeric settings into numbers."""
    kind = {f.name: str(f.type) for f in dataclasses.fields(cls)}.get(name, "")
    if value is None or isinstance(value, bool):
        return value
    try:
        if kind.startswith("float"):
            return float(value)
        if kind.startswith("int") and isinstance(value, (str, float)):
            number = float(value)
            if number != int(number):
                raise ValueError
            return int(number)
    except ValueError:
        raise ValueError(f"{name}: expected a number, got {value!r}") from None
    return value
