"""Checkpoint state for model parts spread over a (dp, pp, tp) mesh.

``torch.distributed.checkpoint`` stores every tensor by its plain-model name (``layers.7.attn.wq.
weight``) with its global shape, whatever layout saved it; a load reshards into the layout at hand.
Pipeline stages contribute disjoint names (global layer indices); the optimizer state is
flattened (``state.<name>.exp_avg``), which is what lets pipeline-stage state reload into another
layout. The tied embedding appears as ``tok_embeddings.weight`` (first stage) and
``output.weight`` (last stage): equal values, both kept, so any pp can load any pp.

RNG states are per rank (``rng.rank<N>``) and restored only when the world size is unchanged.
"""

from __future__ import annotations

import torch
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.state_dict import (StateDictOptions, get_model_state_dict,
                                                     get_optimizer_state_dict,
                                                     set_model_state_dict,
                                                     set_optimizer_state_dict)

# Flattened optimizer state reloads into another layout (pipeline stages: KeyError 'betas').
SD_OPTIONS = StateDictOptions(flatten_optimizer_state_dict=True)


def model_state(parts: list[torch.nn.Module]) -> dict:
    out = {}
    for part in parts:
        out.update(get_model_state_dict(part))
    return out


def optimizer_state(parts, optimizers) -> dict:
    out = {}
    for part, opt in zip(parts, optimizers):
        out.update(get_optimizer_state_dict(part, opt, options=SD_OPTIONS))
    return out


def load_model_state(parts, state: dict) -> None:
    for part in parts:
        own = get_model_state_dict(part)
        set_model_state_dict(part, {k: state[k] for k in own})


def load_optimizer_state(parts, optimizers, state: dict) -> None:
    for part, opt in zip(parts, optimizers):
        set_optimizer_state_dict(part, opt, state, options=SD_OPTIONS)


def rng_key(rank: int) -> str:
    return f"rng.rank{rank}"


def rng_state(device: torch.device) -> torch.Tensor:
    state = torch.get_rng_state()
    if device.type == "cuda":
        state = torch.cat([state, torch.cuda.get_rng_state(device)])
    return state


def set_rng_state(state: torch.Tensor, device: torch.device) -> None:
    n = torch.get_rng_state().numel()
    torch.set_rng_state(state[:n])
    if device.type == "cuda" and state.numel() > n:
        torch.cuda.set_rng_state(state[n:], device)


def saved_keys(path: str) -> set[str]:
    return set(dcp.FileSystemReader(path).read_metadata().state_dict_metadata)
