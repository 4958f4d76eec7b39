"""Export trained weights as a Hugging Face GPT-2 checkpoint: config.json, model.safetensors,
generation_config.json and the tokenizer (tokenizer.json + tokenizer_config.json), so
``AutoTokenizer`` / ``GPT2LMHeadModel.from_pretrained(OUT)`` and ``generate`` work offline.

    python -m training.hf_export runs/demo/checkpoints/step-00000048 runs/demo/hf

Our GPT is GPT-2's architecture (pre-LayerNorm, learned positions, GELU MLP of 4h, tied
embeddings, biases) with two differences the export takes care of: GELU is the exact erf form
(``activation_function="gelu"``, not GPT-2's tanh ``gelu_new``), and the embedding is padded to a
multiple of 128 rows (the export keeps the tokenizer's ``vocab_size`` rows; the padding rows
never receive a target). Mapping, with GPT-2's Conv1D storing weights as [in, out]:

    tok_embeddings -> transformer.wte          pos_embeddings -> transformer.wpe
    layers.i.attn_norm -> h.i.ln_1             layers.i.mlp_norm -> h.i.ln_2
    [wq; wk; wv]^T -> h.i.attn.c_attn          attn.wo^T -> h.i.attn.c_proj
    mlp.fc1^T -> h.i.mlp.c_fc                  mlp.fc2^T -> h.i.mlp.c_proj
    norm -> transformer.ln_f                   (lm_head is tied to wte)

The source is a torch.distributed.checkpoint directory from any (dp, pp, tp) layout: it is
verified against its checksums and read into one plain model on CPU, without a process group
(``training.checkpoint.load_plain_model``). The tokenizer is the one the run trained with (its
path and sha256 are in the checkpoint's config.json; the file must still match the sha256), or
``--tokenizer`` when the checkpoint's path is not on this machine.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import torch

from infra.hashing import file_sha256
from training.checkpoint import CheckpointError, load_plain_model, \
    read_checkpoint_config
from training.model import GPT, GPTConfig

EOD_TOKEN = "<|endoftext|>"


def hf_config(cfg: GPTConfig, eod_id: int | None = None) -> dict:
    return {
        "architectures": ["GPT2LMHeadModel"], "model_type": "gpt2",
        "vocab_size": cfg.vocab_size, "n_positions": cfg.max_seq_length,
        "n_embd": cfg.hidden, "n_layer": cfg.n_layers, "n_head": cfg.n_heads,
        "n_inner": cfg.ffn_multiple * cfg.hidden, "activation_function": "gelu",
        "layer_norm_epsilon": cfg.norm_eps, "initializer_range": cfg.std,
        "resid_pdrop": cfg.dropout, "embd_pdrop": cfg.dropout, "attn_pdrop": 0.0,
        "scale_attn_weights": True, "tie_word_embeddings": True, "use_cache": True,
        "bos_token_id": _eod(cfg, eod_id), "eos_token_id": _eod(cfg, eod_id),
        "torch_dtype": "float32",
    }


def gpt2_state_dict(model: GPT) -> dict[str, torch.Tensor]:
    """Our plain model's weights under GPT-2's names (fp32, contiguous, vocab unpadded)."""
    V = model.cfg.vocab_size
    out = {"transformer.wte.weight": model.tok_embeddings.weight[:V],
           "transformer.wpe.weight": model.pos_embeddings.weight,
           "transformer.ln_f.weight": model.norm.weight,
           "transformer.ln_f.bias": model.norm.bias}
    for i, block in model.layers.items():
        p, a, m = f"transformer.h.{i}.", block.attn, block.mlp
        out.update({
            p + "ln_1.weight": block.attn_norm.weight, p + "ln_1.bias": block.attn_norm.bias,
            p + "ln_2.weight": block.mlp_norm.weight, p + "ln_2.bias": block.mlp_norm.bias,
            p + "attn.c_attn.weight": torch.cat([a.wq.weight, a.wk.weight, a.wv.weight]).t(),
            p + "attn.c_attn.bias": torch.cat([a.wq.bias, a.wk.bias, a.wv.bias]),
            p + "attn.c_proj.weight": a.wo.weight.t(), p + "attn.c_proj.bias": a.wo.bias,
            p + "mlp.c_fc.weight": m.fc1.weight.t(), p + "mlp.c_fc.bias": m.fc1.bias,
            p + "mlp.c_proj.weight": m.fc2.weight.t(), p + "mlp.c_proj.bias": m.fc2.bias,
        })
    return {k: v.detach().float().contiguous().clone() for k, v in out.items()}


def _eod(cfg: GPTConfig, eod_id: int | None) -> int:
    return cfg.vocab_size - 1 if eod_id is None else int(eod_id)


def generation_config(cfg: GPTConfig, eod_id: int | None = None) -> dict:
    """Greedy decoding that stops at EOD (pad = EOD, as GPT-2 has no pad token)."""
    eod = _eod(cfg, eod_id)
    return {"bos_token_id": eod, "eos_token_id": eod, "pad_token_id": eod,
            "max_length": cfg.max_seq_length, "do_sample": False}


def save_tokenizer(tokenizer_json: str, out_dir: str, cfg: GPTConfig,
                   eod_id: int | None = None) -> None:
    """tokenizer.json (the run's byte-level BPE) + tokenizer_config.json for GPT2TokenizerFast."""
    import shutil

    shutil.copyfile(tokenizer_json, os.path.join(out_dir, "tokenizer.json"))
    with open(tokenizer_json, encoding="utf-8") as f:
        vocab = json.load(f)["model"]["vocab"]
    eod = _eod(cfg, eod_id)
    eod_token = next((t for t, i in vocab.items() if i == eod), EOD_TOKEN)
    config = {"tokenizer_class": "GPT2TokenizerFast", "model_max_length": cfg.max_seq_length,
              "bos_token": eod_token, "eos_token": eod_token, "unk_token": eod_token,
              "pad_token": eod_token, "add_prefix_space": False, "clean_up_tokenization_spaces":
              False}
    with open(os.path.join(out_dir, "tokenizer_config.json"), "w") as f:
        json.dump(config, f, indent=2)
    with open(os.path.join(out_dir, "special_tokens_map.json"), "w") as f:
        json.dump({k: eod_token for k in ("bos_token", "eos_token", "unk_token", "pad_token")},
                  f, indent=2)


def save_hf(model: GPT, out_dir: str, tokenizer_json: str | None = None,
            eod_id: int | None = None) -> str:
    from safetensors.torch import save_file

    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(hf_config(model.cfg, eod_id), f, indent=2)
    with open(os.path.join(out_dir, "generation_config.json"), "w") as f:
        json.dump(generation_config(model.cfg, eod_id), f, indent=2)
    save_file(gpt2_state_dict(model), os.path.join(out_dir, "model.safetensors"),
              metadata={"format": "pt"})
    if tokenizer_json is not None:
        save_tokenizer(tokenizer_json, out_dir, model.cfg, eod_id)
    return out_dir


def checkpoint_tokenizer(checkpoint: str, override: str | None = None) -> tuple[str | None,
                                                                                 int | None]:
    """(tokenizer.json path, EOD id) recorded by the run, checked against its sha256."""
    tok = read_checkpoint_config(checkpoint).get("_tokenizer") or {}
    path = override or tok.get("path")
    if path and os.path.isdir(path):
        path = os.path.join(path, "tokenizer.json")
    if not path or not os.path.isfile(path):
        return None, tok.get("eod_id")
    want = tok.get("sha256")
    if want and not override and file_sha256(path) != want:
        raise CheckpointError(f"tokenizer {path} does not match the sha256 the run recorded "
                              f"({want[:12]}...); pass --tokenizer with the run's tokenizer.json")
    return path, tok.get("eod_id")


def export_checkpoint(checkpoint: str, out_dir: str, tokenizer: str | None = None) -> str:
    model = load_plain_model(checkpoint)
    tok_path, eod = checkpoint_tokenizer(checkpoint, tokenizer)
    return save_hf(model, out_dir, tok_path, eod)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.partition("\n\n")[0])
    p.add_argument("checkpoint", help="trainer checkpoint directory (step-NNNNNNNN)")
    p.add_argument("out_dir", help="where config.json, model.safetensors and the tokenizer go")
    p.add_argument("--tokenizer", help="tokenizer.json (or its folder) when the run's is not here")
    args = p.parse_args(argv)
    try:
        export_checkpoint(args.checkpoint, args.out_dir, args.tokenizer)
    except (CheckpointError, OSError) as e:
        print(f"hf_export: error: {e}", file=sys.stderr)
        return 1
    print(f"wrote {args.out_dir}: config.json, generation_config.json, model.safetensors"
          + (", tokenizer" if os.path.exists(os.path.join(args.out_dir, "tokenizer.json"))
             else " (no tokenizer: pass --tokenizer)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
