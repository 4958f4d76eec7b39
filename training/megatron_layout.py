"""Megatron-Core's GPT state dict for a tp x pp layout, from this trainer's plain GPT and back
(pure functions on tensors; the files are ``training.megatron_export``).

The layout is that of a GPTModel built from Megatron-Core's *local* layer spec
(``get_gpt_layer_local_spec``, Megatron-LM ``--transformer-impl local``) with learned absolute
positions, LayerNorm, biases, GELU and tied embeddings: the shape of this trainer's GPT. Names
(ours under ``layers.i.`` -> Megatron's under ``decoder.layers.j.``, j counted within the
pipeline stage), and how tensor parallelism splits them (column: dim 0, row: dim 1)::

    tok_embeddings -> embedding.word_embeddings (dim 0, first stage; the last stage of a
                      pipeline also holds it as output_layer.weight)
    pos_embeddings -> embedding.position_embeddings (replicated)
    attn_norm / mlp_norm -> input_layernorm / pre_mlp_layernorm (replicated)
    wq, wk, wv -> self_attention.linear_qkv: rows grouped per head [q_h; k_h; v_h] (dim 0)
    attn.wo -> self_attention.linear_proj (weight dim 1, bias replicated)
    mlp.fc1 -> mlp.linear_fc1 (dim 0)        mlp.fc2 -> mlp.linear_fc2 (weight dim 1)
    norm -> decoder.final_layernorm (last stage)

The vocabulary is padded as Megatron pads it (``make_vocab_size_divisible_by`` x tp rows,
recorded in args, chosen to give this model's own padding whenever tp divides
``model.vocab_multiple``; otherwise Megatron's extra rows are zeros). The padding rows are
exported as trained: both trainers' softmax runs over every padded row. Stages follow
Megatron's interleaving (virtual stage v of pp rank p holds the layers of stage v * pp + p, as
``training.pipeline``); Megatron needs the layers to split evenly.
"""

from __future__ import annotations

import argparse
import dataclasses
import math

import torch

from training.checkpoint import CheckpointError
from training.model import GPTConfig
from training.pipeline import layer_ranges, stage_ids

CHECKPOINT_VERSION = 3.0
# ours (under layers.i.) -> (Megatron's, under decoder.layers.j.; tp split dim or None)
LAYER_NAMES = {
    "attn_norm.weight": ("input_layernorm.weight", None),
    "attn_norm.bias": ("input_layernorm.bias", None),
    "attn.wo.weight": ("self_attention.linear_proj.weight", 1),
    "attn.wo.bias": ("self_attention.linear_proj.bias", None),
    "mlp_norm.weight": ("pre_mlp_layernorm.weight", None),
    "mlp_norm.bias": ("pre_mlp_layernorm.bias", None),
    "mlp.fc1.weight": ("mlp.linear_fc1.weight", 0),
    "mlp.fc1.bias": ("mlp.linear_fc1.bias", 0),
    "mlp.fc2.weight": ("mlp.linear_fc2.weight", 1),
    "mlp.fc2.bias": ("mlp.linear_fc2.bias", None),
}
LINEARS = ("self_attention.linear_qkv", "self_attention.linear_proj", "mlp.linear_fc1",
           "mlp.linear_fc2")  # each carries an (empty) _extra_state entry in Megatron's dict


@dataclasses.dataclass(frozen=True)
class MegatronLayout:
    tp: int = 1
    pp: int = 1
    virtual_stages: int = 1

    @property
    def stages(self) -> int:
        return self.pp * self.virtual_stages

    def rank_dir(self, tp_rank: int, pp_rank: int) -> str:
        return f"mp_rank_{tp_rank:02d}" if self.pp == 1 else f"mp_rank_{tp_rank:02d}_{pp_rank:03d}"

    def check(self, cfg: GPTConfig) -> None:
        if cfg.n_heads % self.tp or (cfg.ffn_multiple * cfg.hidden) % self.tp:
            raise CheckpointError(f"tp {self.tp} must divide the heads ({cfg.n_heads}) and the "
                                  f"MLP width ({cfg.ffn_multiple * cfg.hidden})")
        if cfg.n_layers % self.stages:
            raise CheckpointError(f"Megatron splits layers evenly: {cfg.n_layers} layers over "
                                  f"pp {self.pp} x virtual stages {self.virtual_stages}")


def megatron_vocab(cfg: GPTConfig, tp: int) -> tuple[int, int]:
    """(make_vocab_size_divisible_by, padded rows): this model's padding when tp divides it."""
    divisible = cfg.vocab_multiple // tp if cfg.vocab_multiple % tp == 0 else cfg.vocab_multiple
    unit = divisible * tp
    return divisible, math.ceil(cfg.vocab_size / unit) * unit


# --- plain state dict -> per-rank Megatron state dicts --------------------------------------------
def fuse_qkv(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, n_heads: int) -> torch.Tensor:
    """[q; k; v] regrouped per head ([q_h; k_h; v_h] for every h), Megatron's linear_qkv order."""
    parts = [t.reshape(n_heads, -1, *t.shape[1:]) for t in (q, k, v)]
    return torch.stack(parts, dim=1).reshape(3 * q.shape[0], *q.shape[1:])


def split_qkv(qkv: torch.Tensor, n_heads: int) -> tuple[torch.Tensor, ...]:
    grouped = qkv.reshape(n_heads, 3, -1, *qkv.shape[1:])
    return tuple(grouped[:, i].reshape(-1, *qkv.shape[1:]) for i in range(3))


def _shard(t: torch.Tensor, dim: int | None, rank: int, tp: int) -> torch.Tensor:
    return t.clone() if dim is None else t.chunk(tp, dim=dim)[rank].clone()


def to_megatron(state: dict[str, torch.Tensor], cfg: GPTConfig, layout: MegatronLayout
                ) -> dict[tuple[int, int], list[dict]]:
    """``{(tp_rank, pp_rank): [state dict of each virtual stage]}`` from our plain state dict."""
    layout.check(cfg)
    _, padded = megatron_vocab(cfg, layout.tp)
    emb = state["tok_embeddings.weight"]  # padding rows too: they are in every softmax
    emb = torch.cat([emb, emb.new_zeros(padded - emb.shape[0], emb.shape[1])])
    ranges = layer_ranges(cfg.n_layers, layout.stages)
    out = {}
    for t in range(layout.tp):
        for p in range(layout.pp):
            chunks = []
            for s in stage_ids(p, layout.pp, layout.virtual_stages):
                sd: dict = {}
                if s == 0:
                    sd["embedding.word_embeddings.weight"] = _shard(emb, 0, t, layout.tp)
                    sd["embedding.position_embeddings.weight"] = state[
                        "pos_embeddings.weight"].clone()
                for j, i in enumerate(ranges[s]):
                    ours, theirs = f"layers.{i}.", f"decoder.layers.{j}."
                    for name, (mname, dim) in LAYER_NAMES.items():
                        sd[theirs + mname] = _shard(state[ours + name], dim, t, layout.tp)
                    for kind in ("weight", "bias"):
                        qkv = fuse_qkv(*(state[f"{ours}attn.{w}.{kind}"] for w in ("wq", "wk", "wv")),
                                       cfg.n_heads)
                        sd[f"{theirs}self_attention.linear_qkv.{kind}"] = _shard(qkv, 0, t, layout.tp)
                    for lin in LINEARS:
                        sd[f"{theirs}{lin}._extra_state"] = None
                if s == layout.stages - 1:
                    sd["decoder.final_layernorm.weight"] = state["norm.weight"].clone()
                    sd["decoder.final_layernorm.bias"] = state["norm.bias"].clone()
                    if layout.stages > 1:  # the last stage's copy of the tied embedding
                        sd["output_layer.weight"] = _shard(emb, 0, t, layout.tp)
                    sd["output_layer._extra_state"] = None
                chunks.append(sd)
            out[(t, p)] = chunks
    return out


# --- per-rank Megatron state dicts -> plain state dict --------------------------------------------
def from_megatron(ranks: dict[tuple[int, int], list[dict]], cfg: GPTConfig,
                  layout: MegatronLayout) -> dict[str, torch.Tensor]:
    """Our plain state dict (vocab padded to this model's padding) from per-rank dicts."""
    layout.check(cfg)
    ranges = layer_ranges(cfg.n_layers, layout.stages)
    stage_of = {s: (p, v) for p in range(layout.pp)
                for v, s in enumerate(stage_ids(p, layout.pp, layout.virtual_stages))}

    def full(stage: int, name: str, dim: int | None) -> torch.Tensor:
        p, v = stage_of[stage]
        try:
            shards = [ranks[(t, p)][v][name] for t in range(layout.tp)]
        except KeyError:
            raise CheckpointError(f"Megatron checkpoint: {layout.rank_dir(0, p)} lacks {name} "
                                  f"(expected megatron-core's local GPT layer spec)") from None
        return shards[0].clone() if dim is None else torch.cat(shards, dim=dim)

    emb = full(0, "embedding.word_embeddings.weight", 0)
    if emb.shape[0] != cfg.padded_vocab_size():
        raise CheckpointError(f"Megatron checkpoint: {emb.shape[0]} embedding rows, but "
                              f"padded_vocab_size says {cfg.padded_vocab_size()}")
    state = {"tok_embeddings.weight": emb, "output.weight": emb,
             "pos_embeddings.weight": full(0, "embedding.position_embeddings.weight", None),
             "norm.weight": full(layout.stages - 1, "decoder.final_layernorm.weight", None),
             "norm.bias": full(layout.stages - 1, "decoder.final_layernorm.bias", None)}
    for s, layers in enumerate(ranges):
        for j, i in enumerate(layers):
            ours, theirs = f"layers.{i}.", f"decoder.layers.{j}."
            for name, (mname, dim) in LAYER_NAMES.items():
                state[ours + name] = full(s, theirs + mname, dim)
            for kind in ("weight", "bias"):
                qkv = full(s, f"{theirs}self_attention.linear_qkv.{kind}", 0)
                for w, part in zip(("wq", "wk", "wv"), split_qkv(qkv, cfg.n_heads)):
                    state[f"{ours}attn.{w}.{kind}"] = part.contiguous()
    return state


# --- args: the model's Megatron-LM flags ----------------------------------------------------------
def megatron_args(cfg: GPTConfig, layout: MegatronLayout, seq_length: int, iteration: int,
                  consumed_samples: int) -> argparse.Namespace:
    divisible, padded = megatron_vocab(cfg, layout.tp)
    return argparse.Namespace(
        num_layers=cfg.n_layers, hidden_size=cfg.hidden, ffn_hidden_size=cfg.ffn_multiple * cfg.hidden,
        num_attention_heads=cfg.n_heads, num_query_groups=cfg.n_heads, group_query_attention=False,
        kv_channels=cfg.head_dim, max_position_embeddings=cfg.max_seq_length,
        seq_length=seq_length, position_embedding_type="learned_absolute",
        add_position_embedding=True, normalization="LayerNorm", norm_epsilon=cfg.norm_eps,
        add_bias_linear=True, add_qkv_bias=True, swiglu=False, squared_relu=False,
        untie_embeddings_and_output_weights=False, apply_query_key_layer_scaling=False,
        hidden_dropout=cfg.dropout, attention_dropout=0.0, vocab_size=cfg.vocab_size,
        make_vocab_size_divisible_by=divisible, padded_vocab_size=padded,
        tensor_model_parallel_size=layout.tp, pipeline_model_parallel_size=layout.pp,
        virtual_pipeline_model_parallel_size=(layout.virtual_stages
                                              if layout.virtual_stages > 1 else None),
        transformer_impl="local", params_dtype=torch.float32, iteration=iteration,
        consumed_train_samples=consumed_samples, consumed_valid_samples=0)


def config_from_args(args: argparse.Namespace) -> GPTConfig:
    """Our GPTConfig for a Megatron GPT whose flags this trainer's model can represent."""
    def get(name, default=None):
        return getattr(args, name, default)
    unsupported = [why for why, bad in (
        ("position_embedding_type must be learned_absolute",
         get("position_embedding_type", "learned_absolute") != "learned_absolute"),
        ("normalization must be LayerNorm", get("normalization", "LayerNorm") != "LayerNorm"),
        ("swiglu / squared_relu are not supported", get("swiglu") or get("squared_relu")),
        ("biases are required (add_bias_linear)", not get("add_bias_linear", True)),
        ("untied embeddings are not supported", get("untie_embeddings_and_output_weights")),
        ("grouped-query attention is not supported",
         get("num_query_groups") not in (None, args.num_attention_heads)),
    ) if bad]
    if unsupported:
        raise CheckpointError("Megatron checkpoint: " + "; ".join(unsupported))
    ffn = get("ffn_hidden_size") or 4 * args.hidden_size
    if ffn % args.hidden_size:
        raise CheckpointError(f"Megatron checkpoint: ffn_hidden_size {ffn} is not a multiple of "
                              f"hidden_size {args.hidden_size}")
    vocab = get("vocab_size") or args.padded_vocab_size
    unit = get("make_vocab_size_divisible_by", 128) * get("tensor_model_parallel_size", 1)
    return GPTConfig(n_layers=args.num_layers, hidden=args.hidden_size,
                     n_heads=args.num_attention_heads,
                     max_seq_length=args.max_position_embeddings, vocab_size=vocab,
                     vocab_multiple=unit, ffn_multiple=ffn // args.hidden_size,
                     norm_eps=get("norm_epsilon", 1e-5), dropout=get("hidden_dropout", 0.0))
