"""Load a `training.megatron_export` checkpoint with megatron-core on CPU and write its logits.

    torchrun --nproc-per-node TP megatron_worker.py EXPORT_DIR TOKENS.pt OUT.pt

One process per tensor-parallel rank (gloo); `parallel_state` gets tp = TP and pp = 1, and the
pipeline stages of the export (pp from its args) are built in each process as separate
GPTModel chunks (pre_process on the first, post_process on the last) and run one after the
other, passing hidden states with `set_input_tensor`: the numbers are those of a pp-rank
pipeline. Rank 0 writes the gathered logits [batch, seq, padded vocab].

megatron-core 0.16.1 assumes CUDA in three places of its forward pass that do not change the
numbers; they are shimmed here for CPU: the attention score scratch buffer
(`GlobalMemoryBuffer.get_tensor`, overwritten by `baddbmm` with beta 0) is allocated on CPU, the
CUDA RNG tracker's `fork` (it only scopes attention dropout, 0 here) is a no-op, and the causal
mask is passed explicitly (its default is built with device="cuda"). A fourth, the gather of the
vocabulary-parallel logits (`parallel_output=False` allocates its output on CUDA), is done with
`dist.all_gather` here instead.
"""

import contextlib
import os
import sys
import warnings

import torch
import torch.distributed as dist
import torch.nn.functional as F

warnings.filterwarnings("ignore")

# At module level: spawn.py's rank server imports the worker once and forks every rank from it
# (megatron-core's import is 2 s of CPU).
from megatron.core import parallel_state, tensor_parallel  # noqa: E402
from megatron.core.models.gpt import GPTModel  # noqa: E402
from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_spec  # noqa: E402
from megatron.core.transformer.transformer_config import TransformerConfig  # noqa: E402


def main(argv: list[str] | None = None) -> None:
    export_dir, tokens_path, out_path = (sys.argv[1:] if argv is None else argv)[:3]
    dist.init_process_group("gloo")

    tp = dist.get_world_size()
    parallel_state.initialize_model_parallel(tensor_model_parallel_size=tp)
    parallel_state.get_global_memory_buffer().get_tensor = (
        lambda shape, dtype, name, mem_alloc_context=None: torch.empty(shape, dtype=dtype))
    tensor_parallel.get_cuda_rng_tracker().fork = lambda *a, **k: contextlib.nullcontext()

    it = open(os.path.join(export_dir, "latest_checkpointed_iteration.txt")).read().strip()
    it_dir = os.path.join(export_dir, f"iter_{int(it):07d}")
    rank = parallel_state.get_tensor_model_parallel_rank()
    first = torch.load(os.path.join(it_dir, sorted(os.listdir(it_dir))[0], "model_optim_rng.pt"),
                       weights_only=False)
    args = first["args"]
    assert args.tensor_model_parallel_size == tp, (args.tensor_model_parallel_size, tp)
    pp = args.pipeline_model_parallel_size
    config = TransformerConfig(
        num_layers=args.num_layers // pp, hidden_size=args.hidden_size,
        ffn_hidden_size=args.ffn_hidden_size, num_attention_heads=args.num_attention_heads,
        tensor_model_parallel_size=tp, add_bias_linear=args.add_bias_linear,
        normalization=args.normalization, layernorm_epsilon=args.norm_epsilon,
        activation_func=F.gelu, bias_activation_fusion=False, masked_softmax_fusion=False,
        bias_dropout_fusion=False, apply_rope_fusion=False, persist_layer_norm=False,
        gradient_accumulation_fusion=False, attention_dropout=0.0, hidden_dropout=0.0,
        use_cpu_initialization=True, params_dtype=torch.float32)
    stages = []
    for p in range(pp):
        name = f"mp_rank_{rank:02d}" if pp == 1 else f"mp_rank_{rank:02d}_{p:03d}"
        doc = torch.load(os.path.join(it_dir, name, "model_optim_rng.pt"), weights_only=False)
        model = GPTModel(config, get_gpt_layer_local_spec(), vocab_size=args.padded_vocab_size,
                         max_sequence_length=args.max_position_embeddings,
                         position_embedding_type=args.position_embedding_type,
                         share_embeddings_and_output_weights=True, parallel_output=True,
                         pre_process=p == 0, post_process=p == pp - 1)
        model.load_state_dict(doc["model"], strict=True)
        stages.append(model.eval())

    tokens = torch.load(tokens_path)
    b, s = tokens.shape
    positions = torch.arange(s).unsqueeze(0).expand(b, -1)
    mask = torch.triu(torch.ones(s, s, dtype=torch.bool), diagonal=1)[None, None]
    hidden = None
    with torch.no_grad():
        for p, model in enumerate(stages):
            if p > 0:
                model.set_input_tensor(hidden)
            hidden = model(tokens, positions, attention_mask=mask)
    # the last stage's output is this rank's vocabulary shard of the logits: gather them here
    # (megatron's own gather, parallel_output=False, allocates on CUDA)
    shards = [torch.empty_like(hidden) for _ in range(tp)]
    dist.all_gather(shards, hidden.contiguous())
    if dist.get_rank() == 0:
        torch.save(torch.cat(shards, dim=-1), out_path)  # logits [b, s, padded vocab]
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
