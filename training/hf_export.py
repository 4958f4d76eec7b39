"""Export trained weights as a Hugging Face GPT-2 checkpoint (config.json + model.safetensors).

    python -m training.hf_export runs/demo/checkpoints/step-00000048 runs/demo/hf

Our GPT is GPT-2's architecture (pre-LayerNorm, learned positions, GELU MLP of 4h, tied
embeddings, biases) with two differences the export takes care of: GELU is the exact erf form
(``activation_function="gelu"``, not GPT-2's tanh ``gelu_new``), and the embedding is padded to a
multiple of 128 * tp rows (the export keeps the tokenizer's ``vocab_size`` rows; the padding rows
never receive a target). Mapping, with GPT-2's Conv1D storing weights as [in, out]:

    tok_embeddings -> transformer.wte          pos_embeddings -> transformer.wpe
    layers.i.attn_norm -> h.i.ln_1             layers.i.mlp_norm -> h.i.ln_2
    [wq; wk; wv]^T -> h.i.attn.c_attn          attn.wo^T -> h.i.attn.c_proj
    mlp.fc1^T -> h.i.mlp.c_fc                  mlp.fc2^T -> h.i.mlp.c_proj
    norm -> transformer.ln_f                   (lm_head is tied to wte)

The source is a torch.distributed.checkpoint directory from any (dp, pp, tp) layout: it is read
into one plain model on CPU, without a process group.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import torch
import torch.distributed.checkpoint as dcp

from training.model import GPT, GPTConfig


def hf_config(cfg: GPTConfig) -> dict:
    return {
        "architectures": ["GPT2LMHeadModel"], "model_type": "gpt2",
        "vocab_size": cfg.vocab_size, "n_positions": cfg.max_seq_length,
        "n_embd": cfg.hidden, "n_layer": cfg.n_layers, "n_head": cfg.n_heads,
        "n_inner": cfg.ffn_multiple * cfg.hidden, "activation_function": "gelu",
        "layer_norm_epsilon": cfg.norm_eps, "initializer_range": cfg.std,
        "resid_pdrop": cfg.dropout, "embd_pdrop": cfg.dropout, "attn_pdrop": 0.0,
        "scale_attn_weights": True, "tie_word_embeddings": True, "use_cache": True,
        "bos_token_id": cfg.vocab_size - 1, "eos_token_id": cfg.vocab_size - 1,
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


def save_hf(model: GPT, out_dir: str) -> str:
    from safetensors.torch import save_file

    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(hf_config(model.cfg), f, indent=2)
    save_file(gpt2_state_dict(model), os.path.join(out_dir, "model.safetensors"),
              metadata={"format": "pt"})
    return out_dir


def load_plain_model(checkpoint: str) -> GPT:
    """The plain model (CPU, fp32) from a trainer checkpoint of any layout."""
    with open(os.path.join(checkpoint, "config.json")) as f:
        meta = json.load(f)
    if "_model_config" not in meta:
        raise ValueError(f"{checkpoint}/config.json lacks _model_config: not a trainer checkpoint")
    model = GPT(GPTConfig(**meta["_model_config"]), tp=int(meta.get("_tp", 1)))
    state = {"model": model.state_dict()}
    dcp.load(state, checkpoint_id=checkpoint, no_dist=True)
    model.load_state_dict(state["model"])
    return model


def export_checkpoint(checkpoint: str, out_dir: str) -> str:
    return save_hf(load_plain_model(checkpoint), out_dir)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.partition("\n\n")[0])
    p.add_argument("checkpoint", help="trainer checkpoint directory (step-NNNNNNNN)")
    p.add_argument("out_dir", help="where config.json and model.safetensors go")
    args = p.parse_args(argv)
    export_checkpoint(args.checkpoint, args.out_dir)
    print(f"wrote {args.out_dir}/config.json and model.safetensors")
    return 0


if __name__ == "__main__":
    sys.exit(main())
