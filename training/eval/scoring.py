"""Log-likelihood of continuations, and the metrics built from them.

Tokenisation and truncation follow lm-evaluation-harness's causal-LM path (``HFLM``), so a
request scores the same here and there:

* trailing whitespace of the context moves to the continuation; the continuation's tokens are
  ``encode(context + continuation)[len(encode(context)):]`` and the model reads
  ``encode(context) + continuation tokens`` (BPE merges across the boundary stay on the
  continuation's side);
* an empty context is the end-of-text token;
* a request longer than the model's window keeps its last ``max_length + 1`` tokens (left
  truncation); the log-probabilities are a float32 log-softmax over the real vocabulary
  (embedding padding rows excluded); ``is_greedy`` is whether the argmax at every continuation
  position is the continuation token.

The model is used through two calls, ``hidden(tokens[B, T]) -> [B, T, H]`` and ``logits(h[N, H])
-> [N, V]``, so only continuation positions pay for the vocabulary projection.
"""
from __future__ import annotations

import math
from typing import Protocol, Sequence

import torch
import torch.nn.functional as F


class Tokenizer(Protocol):
    eod_id: int

    def encode(self, text: str): ...


class ScoringModel(Protocol):
    max_length: int
    device: torch.device

    def hidden(self, tokens: torch.Tensor) -> torch.Tensor: ...

    def logits(self, hidden: torch.Tensor) -> torch.Tensor: ...


def encode_pair(tok: Tokenizer, context: str, continuation: str) -> tuple[list[int], list[int]]:
    """(context ids, continuation ids) as lm-eval splits them."""
    if context == "":
        cont = [int(t) for t in tok.encode(continuation)]
        eod = int(tok.eod_id)
        return ([eod], cont) if cont[:1] != [eod] else (cont[:1], cont[1:])
    n = len(context) - len(context.rstrip())
    if n:
        context, continuation = context[:-n], context[-n:] + continuation
    whole = [int(t) for t in tok.encode(context + continuation)]
    ctx = [int(t) for t in tok.encode(context)]
    return ctx, whole[len(ctx):]


@torch.no_grad()
def loglikelihoods(model: ScoringModel, requests: Sequence[tuple[list[int], list[int]]],
                   batch_tokens: int = 8192, progress=None) -> list[tuple[float, bool]]:
    """``(sum of log p(continuation), is_greedy)`` per ``(context ids, continuation ids)``.

    Requests are run longest first in right-padded batches of at most ``batch_tokens`` tokens
    (causal attention: padding after a row never changes it)."""
    L = model.max_length
    prepared = []
    for i, (ctx, cont) in enumerate(requests):
        if not cont:
            raise ValueError(f"request {i}: empty continuation")
        if len(cont) > L:
            raise ValueError(f"request {i}: continuation of {len(cont)} tokens exceeds the "
                             f"model's {L}-token window")
        inp = (ctx + cont)[-(L + 1):][:-1]
        prepared.append((i, inp, cont))
    prepared.sort(key=lambda r: -len(r[1]))
    out: list[tuple[float, bool] | None] = [None] * len(requests)
    start = 0
    while start < len(prepared):
        width = len(prepared[start][1])
        rows = max(1, batch_tokens // width)
        batch = prepared[start:start + rows]
        start += len(batch)
        tokens = torch.zeros(len(batch), width, dtype=torch.long)
        for b, (_, inp, _) in enumerate(batch):
            tokens[b, :len(inp)] = torch.tensor(inp)
        h = model.hidden(tokens.to(model.device))
        for b, (i, inp, cont) in enumerate(batch):
            n = len(cont)
            logp = F.log_softmax(model.logits(h[b, len(inp) - n:len(inp)]).float(), dim=-1)
            target = torch.tensor(cont, device=logp.device)
            ll = logp.gather(1, target[:, None]).sum().item()
            out[i] = (float(ll), bool((logp.argmax(-1) == target).all().item()))
        if progress is not None:
            progress.update(len(batch))
    return out  # type: ignore[return-value]


# --- metrics ---------------------------------------------------------------------------------
def mean(xs: Sequence[float]) -> float:
    return sum(xs) / len(xs)


def mean_stderr(xs: Sequence[float]) -> float | None:
    """Standard error of the mean with the sample (n - 1) standard deviation, as lm-eval."""
    if len(xs) < 2:
        return None
    mu = mean(xs)
    return math.sqrt(sum((x - mu) ** 2 for x in xs) / (len(xs) - 1)) / math.sqrt(len(xs))


def argmax(xs: Sequence[float]) -> int:
    """Index of the first maximum (numpy's tie rule, which lm-eval uses)."""
    best = 0
    for i, x in enumerate(xs):
        if x > xs[best]:
            best = i
    return best


def loglikelihood_metrics(results: Sequence[tuple[float, bool]]) -> dict[str, float | None]:
    """LAMBADA: acc = mean greedy match; ppl = exp(-mean log-likelihood of the last word).

    ``ppl_stderr`` is the delta-method error ``ppl * stderr(log-likelihood)``; lm-eval
    bootstraps it instead, so that one figure agrees only approximately."""
    lls = [ll for ll, _ in results]
    acc = [float(g) for _, g in results]
    ppl = math.exp(-mean(lls))
    se = mean_stderr(lls)
    return {"acc": mean(acc), "acc_stderr": mean_stderr(acc), "ppl": ppl,
            "ppl_stderr": ppl * se if se is not None else None}


def choice_metrics(per_doc: Sequence[tuple[list[float], list[int], int]],
                   with_norm: bool) -> dict[str, float | None]:
    """Multiple choice: acc = argmax log-likelihood is gold; acc_norm divides each choice's
    log-likelihood by its length in characters first. ``per_doc``: (lls, lengths, gold)."""
    acc = [float(argmax(lls) == gold) for lls, _, gold in per_doc]
    out = {"acc": mean(acc), "acc_stderr": mean_stderr(acc)}
    if with_norm:
        norm = [float(argmax([ll / n if n else -math.inf for ll, n in zip(lls, lens)]) == gold)
                for lls, lens, gold in per_doc]
        out.update(acc_norm=mean(norm), acc_norm_stderr=mean_stderr(norm))
    return out


__all__ = ["encode_pair", "loglikelihoods", "loglikelihood_metrics", "choice_metrics",
           "mean_stderr", "argmax"]
