"""Load a trainer checkpoint (any dp x pp x tp layout) as one plain model for evaluation.

``load_checkpoint_model`` is the ONE place evaluation reads checkpoints. It uses the trainer's
``training.checkpoint.load_plain_model`` (the checkpoint's ``checksums.json`` verified before
anything is unpickled, then a ``torch.distributed.checkpoint`` read of every tensor by its
plain-model name, on CPU without a process group), then drops the embedding rows that only exist
for padding: the logits cover exactly ``model.vocab_size`` ids, whatever layout saved it.

The tokenizer is not stored in a checkpoint; it comes from, in order: ``tokenizer=`` (a
``tokenizer.json`` or a folder), the ``manifest=`` the run trained on (its recorded tokenizer,
checked against its sha256), or the bundled GPT-2 tokenizer (MT-NLG's) when the model's
vocabulary is GPT-2's 50257.
"""
from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass, field
from typing import Any

import torch

log = logging.getLogger(__name__)

GPT2_VOCAB = 50257


@dataclass
class EvalModel:
    """A plain GPT seen as ``hidden(tokens)`` + ``logits(hidden)`` over the real vocabulary."""

    body: torch.nn.Module
    """The GPT with its output projection removed: forward returns final hidden states."""
    head: torch.Tensor
    """[vocab_size, hidden]: the tied embedding without its padding rows."""
    max_length: int
    device: torch.device = field(default_factory=lambda: torch.device("cpu"))

    @classmethod
    def from_gpt(cls, gpt, device: str | torch.device = "cpu",
                 dtype: torch.dtype = torch.float32) -> "EvalModel":
        device = torch.device(device)
        gpt = gpt.to(device=device, dtype=dtype).eval()
        head = gpt.tok_embeddings.weight[:gpt.cfg.vocab_size].detach()
        gpt.output = None  # forward stops at the final LayerNorm (as on a pipeline stage)
        return cls(gpt, head, gpt.cfg.max_seq_length, device)

    def hidden(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.body(tokens)

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        return hidden @ self.head.t()

    @property
    def vocab_size(self) -> int:
        return self.head.shape[0]


def read_checkpoint_meta(checkpoint: str) -> dict[str, Any]:
    path = os.path.join(checkpoint, "config.json")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{checkpoint}: no config.json; expected a trainer checkpoint "
                                f"folder such as RUN/checkpoints/step-00000048")
    with open(path) as f:
        meta = json.load(f)
    if "_model_config" not in meta:
        raise ValueError(f"{path} lacks _model_config: not a trainer checkpoint")
    return meta


def _plain_model(checkpoint: str):
    from training.checkpoint import load_plain_model

    return load_plain_model(checkpoint)


def _training_progress(checkpoint: str) -> dict[str, int | None]:
    """Step and consumed tokens saved with the weights (None where the checkpoint lacks them)."""
    import torch.distributed.checkpoint as dcp

    state = {"train": {"step": -1, "consumed_tokens": -1}}
    try:
        dcp.load(state, checkpoint_id=checkpoint, no_dist=True)
    except Exception as err:  # an older or foreign checkpoint: fall back to the folder name
        log.warning("%s: no training progress in the checkpoint (%s)", checkpoint, err)
        name = os.path.basename(os.path.normpath(checkpoint))
        step = int(name.split("-")[-1]) if name.split("-")[-1].isdigit() else None
        return {"step": step, "consumed_tokens": None}
    return {k: (int(v) if int(v) >= 0 else None) for k, v in state["train"].items()}


def resolve_tokenizer(vocab_size: int, tokenizer: str | None = None,
                      manifest: str | None = None):
    """The checkpoint's tokenizer (see the module docstring for the order)."""
    from curation.tokenizer import GPT2_DIR, TextTokenizer

    if tokenizer:
        tok, origin = TextTokenizer(tokenizer), "--tokenizer"
    elif manifest:
        from blending.manifest import verify_tokenizer
        from training.data import open_manifest

        m = open_manifest(manifest, verify_checksums=False)
        tok, origin = TextTokenizer(m.tokenizer.path), f"manifest {manifest}"
        verify_tokenizer(m, tok)
    elif vocab_size == GPT2_VOCAB:
        tok, origin = TextTokenizer(GPT2_DIR), "bundled GPT-2 (model vocabulary is 50257)"
    else:
        raise ValueError(f"the model's vocabulary is {vocab_size}, not GPT-2's {GPT2_VOCAB}: "
                         f"name its tokenizer with --tokenizer PATH or --manifest MANIFEST")
    if tok.vocab_size > vocab_size:
        raise ValueError(f"tokenizer {tok.path} has {tok.vocab_size} tokens but the model only "
                         f"{vocab_size}: wrong tokenizer for this checkpoint")
    log.info("tokenizer %s (%s, sha256 %s...)", tok.path, origin, tok.sha256[:12])
    return tok


def load_checkpoint_model(checkpoint: str, tokenizer: str | None = None,
                          manifest: str | None = None, device: str | torch.device = "cpu",
                          dtype: torch.dtype = torch.float32):
    """``(EvalModel, TextTokenizer, info)`` for a trainer checkpoint folder of any layout."""
    meta = read_checkpoint_meta(checkpoint)
    gpt = _plain_model(checkpoint)
    cfg = gpt.cfg
    tok = resolve_tokenizer(cfg.vocab_size, tokenizer, manifest)
    info = {"checkpoint": os.path.abspath(checkpoint), **_training_progress(checkpoint),
            "saved_layout": {"tp": meta.get("_tp", 1), "world_size": meta.get("_world_size")},
            "model": {"n_layers": cfg.n_layers, "hidden": cfg.hidden, "n_heads": cfg.n_heads,
                      "max_seq_length": cfg.max_seq_length, "vocab_size": cfg.vocab_size,
                      "padded_vocab_rows": gpt.vocab_size,
                      "parameters": sum(p.numel() for p in gpt.parameters())},
            "tokenizer": {"path": tok.path, "sha256": tok.sha256, "vocab_size": tok.vocab_size}}
    return EvalModel.from_gpt(gpt, device, dtype), tok, info


__all__ = ["EvalModel", "load_checkpoint_model", "read_checkpoint_meta", "resolve_tokenizer"]
