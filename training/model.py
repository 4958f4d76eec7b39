"""A plain GPT in the shape of Megatron-Turing NLG 530B.

Decoder-only, pre-LayerNorm, learned absolute positions, GELU MLP of 4x hidden, tied input/output
embeddings, biases everywhere, causal `F.scaled_dot_product_attention`. Init is normal with
std ``init_std`` (MT-NLG: sqrt(1/(3*hidden)) ~= 4.0e-3 at hidden 20480); the two output projections
of every block (attention ``wo`` and MLP ``fc2``) use std / sqrt(2 * layers), as Megatron's
``scaled_init_method_normal`` does.

This file never imports torch.distributed: parallelism is applied afterwards by
``training.parallelize``. To keep that step simple:

* layers live in a ``ModuleDict`` keyed by their *global* index ("0" .. "L-1"), so a pipeline stage
  can delete the layers it does not own without renumbering parameter names (checkpoints stay
  layout independent);
* q, k, v are separate Linear modules and attention reshapes with ``-1`` heads, so column-wise
  tensor parallelism can shard them without touching this file;
* the output projection is its own ``output`` Linear whose weight *is* ``tok_embeddings.weight``
  (tied). A pipeline split sets ``tok_embeddings``/``pos_embeddings`` to ``None`` on all but the
  first stage and ``norm``/``output`` to ``None`` on all but the last; the last stage then keeps
  the tied weight as ``output.weight`` (Megatron's copy on the last stage). Forward takes or
  returns hidden states where a piece is missing.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, replace

import torch
import torch.nn.functional as F
from torch import nn


@dataclass(frozen=True)
class GPTConfig:
    """Shape of the model. Defaults are GPT-2 small-ish; use `GPTConfig.preset(name)`."""

    n_layers: int = 12
    """Transformer blocks."""
    hidden: int = 768
    """Model width (MT-NLG: 20480)."""
    n_heads: int = 12
    """Attention heads; must divide `hidden` (MT-NLG: 128)."""
    max_seq_length: int = 2048
    """Learned position table size: the longest sequence the model accepts."""
    vocab_size: int = 50257
    """Tokenizer vocabulary (GPT-2 BPE: 50257). The embedding is padded, see `padded_vocab_size`."""
    vocab_multiple: int = 128
    """Pad the embedding rows to a multiple of this. Independent of tp (Megatron pads to
    128 x tp), so a checkpoint reloads at any tp: every tp that divides this multiple divides
    the padded vocabulary (128: tp 1, 2, 4, 8, ... 128)."""
    ffn_multiple: int = 4
    """MLP width = ffn_multiple * hidden."""
    init_std: float | None = None
    """Std of the normal init; None means sqrt(1 / (3 * hidden)) as in MT-NLG."""
    norm_eps: float = 1e-5
    """LayerNorm epsilon."""
    dropout: float = 0.0
    """Dropout on attention output, MLP output and embeddings (MT-NLG trained with 0.1; 0 is
    deterministic and is what the tests and demo use)."""

    def __post_init__(self):
        for name in ("n_layers", "hidden", "n_heads", "max_seq_length", "vocab_size",
                     "vocab_multiple", "ffn_multiple"):
            if getattr(self, name) < 1:
                raise ValueError(f"model.{name} must be >= 1, got {getattr(self, name)}")
        if self.hidden % self.n_heads:
            raise ValueError(
                f"model.hidden ({self.hidden}) must be divisible by model.n_heads ({self.n_heads})")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"model.dropout must be in [0, 1), got {self.dropout}")
        if self.init_std is not None and self.init_std <= 0:
            raise ValueError(f"model.init_std must be > 0 or null, got {self.init_std}")

    @property
    def head_dim(self) -> int:
        return self.hidden // self.n_heads

    @property
    def std(self) -> float:
        return self.init_std if self.init_std is not None else math.sqrt(1.0 / (3 * self.hidden))

    def padded_vocab_size(self) -> int:
        """Embedding rows: vocab_size rounded up to a multiple of vocab_multiple (the same at
        every tp; the padding rows never receive a target)."""
        m = self.vocab_multiple
        return (self.vocab_size + m - 1) // m * m

    def num_params(self) -> int:
        """Exact parameter count (tied embeddings counted once), without building the model."""
        h, f = self.hidden, self.ffn_multiple * self.hidden
        per_layer = (2 * 2 * h            # two LayerNorms
                     + 4 * (h * h + h)    # wq, wk, wv, wo
                     + h * f + f + f * h + h)  # fc1, fc2
        embed = self.padded_vocab_size() * h + self.max_seq_length * h
        return embed + self.n_layers * per_layer + 2 * h  # + final norm

    @classmethod
    def preset(cls, name: str, **overrides) -> "GPTConfig":
        if name not in PRESETS:
            raise ValueError(f"model preset {name!r} is unknown; choose one of {sorted(PRESETS)}")
        return replace(PRESETS[name], **overrides)


PRESETS: dict[str, GPTConfig] = {
    # Debug size: trains a few dozen steps on 2 CPU cores in seconds.
    "tiny": GPTConfig(n_layers=2, hidden=64, n_heads=4, max_seq_length=128),
    # GPT-3 Small / XL shapes (Brown et al. 2020, Table 2.1).
    "gpt-125m": GPTConfig(n_layers=12, hidden=768, n_heads=12, max_seq_length=2048),
    "gpt-1.3b": GPTConfig(n_layers=24, hidden=2048, n_heads=16, max_seq_length=2048),
    # MT-NLG 530B (Smith et al. 2022): shape only; build it on the meta device.
    "mtnlg-530b": GPTConfig(n_layers=105, hidden=20480, n_heads=128, max_seq_length=2048),
}


class Attention(nn.Module):
    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.head_dim = cfg.head_dim
        self.wq = nn.Linear(cfg.hidden, cfg.hidden)
        self.wk = nn.Linear(cfg.hidden, cfg.hidden)
        self.wv = nn.Linear(cfg.hidden, cfg.hidden)
        self.wo = nn.Linear(cfg.hidden, cfg.hidden)
        self.dropout = cfg.dropout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, _ = x.shape
        # -1 heads: under tensor parallelism each rank holds n_heads / tp of them.
        q, k, v = (w(x).view(B, T, -1, self.head_dim).transpose(1, 2)
                   for w in (self.wq, self.wk, self.wv))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        y = y.transpose(1, 2).reshape(B, T, -1)
        return F.dropout(self.wo(y), self.dropout, self.training)


class MLP(nn.Module):
    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.fc1 = nn.Linear(cfg.hidden, cfg.ffn_multiple * cfg.hidden)
        self.fc2 = nn.Linear(cfg.ffn_multiple * cfg.hidden, cfg.hidden)
        self.dropout = cfg.dropout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.dropout(self.fc2(F.gelu(self.fc1(x))), self.dropout, self.training)


class Block(nn.Module):
    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.attn_norm = nn.LayerNorm(cfg.hidden, eps=cfg.norm_eps)
        self.attn = Attention(cfg)
        self.mlp_norm = nn.LayerNorm(cfg.hidden, eps=cfg.norm_eps)
        self.mlp = MLP(cfg)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.attn_norm(x))
        return x + self.mlp(self.mlp_norm(x))


class GPT(nn.Module):
    """The whole model. ``GPT(cfg, seed)`` initialises it on the current device; built under
    ``torch.device("meta")`` it allocates nothing and ``init_weights`` (or
    ``training.parallelize.materialize`` for a sharded stage) fills it later."""

    def __init__(self, cfg: GPTConfig, seed: int = 0):
        super().__init__()
        self.cfg = cfg
        self.vocab_size = cfg.padded_vocab_size()
        device = torch.empty(0).device  # the default device (or a `with torch.device(...)`)
        with torch.device("meta"):  # no wasted default init: init_weights fills every value
            self.tok_embeddings = nn.Embedding(self.vocab_size, cfg.hidden)
            self.pos_embeddings = nn.Embedding(cfg.max_seq_length, cfg.hidden)
            self.layers = nn.ModuleDict({str(i): Block(cfg) for i in range(cfg.n_layers)})
            self.norm = nn.LayerNorm(cfg.hidden, eps=cfg.norm_eps)
            self.output = nn.Linear(cfg.hidden, self.vocab_size, bias=False)
        self.output.weight = self.tok_embeddings.weight  # tied input/output embeddings
        if device.type != "meta":
            self.to_empty(device=device)
            self.output.weight = self.tok_embeddings.weight
            self.init_weights(seed)

    @torch.no_grad()
    def init_weights(self, seed: int) -> None:
        """Every parameter from ``init_rows`` (values depend on seed and name only)."""
        for name, p in self.named_parameters():
            rows = torch.arange(p.shape[0])
            p.copy_(init_rows(self.cfg, name, seed, tuple(p.shape), rows).to(p.device, p.dtype))

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """tokens [B, T] int64 -> logits [B, T, padded_vocab] (or hidden states in/out on a
        pipeline stage that lacks the embeddings or the output)."""
        if self.tok_embeddings is not None:
            T = tokens.shape[1]
            if T > self.cfg.max_seq_length:
                raise ValueError(f"sequence length {T} > model.max_seq_length "
                                 f"{self.cfg.max_seq_length}")
            pos = torch.arange(T, device=tokens.device)
            h = self.tok_embeddings(tokens) + self.pos_embeddings(pos)
            h = F.dropout(h, self.cfg.dropout, self.training)
        else:
            h = tokens
        for layer in self.layers.values():
            h = layer(h)
        if self.norm is not None:
            h = self.norm(h)
        return self.output(h) if self.output is not None else h



# --- initialisation -------------------------------------------------------------------------
# Each block of parameter rows is drawn from its own generator, seeded by (seed, parameter
# name, block index):
# the values depend on nothing else, so a rank that owns a shard (a pipeline stage, a tensor-
# parallel slice, an FSDP shard) draws exactly its rows and gets the same numbers as a single
# process that builds the whole model. The draw is on the CPU generator (bit-identical on every
# machine), then copied to the device. The last pipeline stage's copy of the tied embedding
# ("output.weight") is drawn as "tok_embeddings.weight".

def init_kind(cfg: GPTConfig, name: str) -> tuple[str, float]:
    """("zeros" | "ones" | "normal", std) for a parameter of the plain model."""
    if name.endswith("bias"):
        return "zeros", 0.0
    if "norm" in name:
        return "ones", 0.0
    if name.endswith(("attn.wo.weight", "mlp.fc2.weight")):
        return "normal", cfg.std / math.sqrt(2 * cfg.n_layers)  # Megatron's scaled init
    return "normal", cfg.std


def _row_seed(seed: int, name: str, block: int) -> int:
    digest = hashlib.blake2b(f"{seed}/{name}/{block}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") & ((1 << 63) - 1)


def init_rows(cfg: GPTConfig, name: str, seed: int, shape: tuple[int, ...],
              rows: torch.Tensor, cols: torch.Tensor | None = None) -> torch.Tensor:
    """Initial values of rows ``rows`` (and columns ``cols``, default all) of parameter
    ``name`` of global shape ``shape``, as a float32 CPU tensor.

    Rows are drawn in blocks of ``_block_rows(shape)`` rows, one generator per block seeded by
    (seed, name, block): a shard draws only the blocks that hold its rows."""
    if name == "output.weight":
        name = "tok_embeddings.weight"
    kind, std = init_kind(cfg, name)
    row_len = shape[1] if len(shape) > 1 else 1
    n_cols = row_len if cols is None else len(cols)
    out_shape = (len(rows), n_cols) if len(shape) > 1 else (len(rows),)
    cpu = torch.device("cpu")  # whatever default device a caller's context sets
    if kind != "normal":
        return (torch.zeros if kind == "zeros" else torch.ones)(out_shape, device=cpu)
    rows = torch.as_tensor(rows, dtype=torch.int64, device=cpu)
    per = _block_rows(shape)
    out = torch.empty((len(rows), n_cols), device=cpu)
    gen = torch.Generator(device=cpu)
    blocks = rows // per
    for b in torch.unique(blocks).tolist():
        n = min(per, shape[0] - b * per)
        gen.manual_seed(_row_seed(seed, name, b))
        block = torch.randn((n, row_len), generator=gen, device=cpu)
        if cols is not None:
            block = block[:, torch.as_tensor(cols, device=cpu)]
        mine = (blocks == b).nonzero().flatten()
        out[mine] = block[rows[mine] - b * per]
    return out.mul_(std).reshape(out_shape)


def _block_rows(shape: tuple[int, ...]) -> int:
    """Rows per generator block: about 2^16 values (fixed by the shape, not the layout)."""
    row_len = shape[1] if len(shape) > 1 else 1
    return max(1, (1 << 16) // row_len)


def cross_entropy_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean next-token loss over all positions, computed in fp32."""
    return F.cross_entropy(logits.flatten(0, 1).float(), targets.flatten(0, 1))


def param_groups(model: nn.Module, weight_decay: float) -> list[dict]:
    """AdamW groups: weight decay on matrices (embeddings included, as in Megatron), none on
    biases and LayerNorm parameters (every 1-D parameter)."""
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        (no_decay if p.ndim < 2 else decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay},
            {"params": no_decay, "weight_decay": 0.0}]


__all__ = ["GPT", "GPTConfig", "PRESETS", "cross_entropy_loss", "init_kind", "init_rows",
           "param_groups"]
