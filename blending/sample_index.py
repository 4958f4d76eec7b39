"""One source's GPT sample index, built from document lengths alone (numpy, no files).

Megatron-Core's GPT dataset serves fixed-length samples from a stream made by concatenating
the documents (each already ends with EOD) in a shuffled order, repeated in epochs when more
samples are asked for than one pass holds. Three arrays describe it:

* ``document_index`` (int32, ``epochs x documents``): the document order of the stream. Each
  epoch is its own permutation, so every document appears exactly once per epoch (Megatron
  shuffles the ``epochs - 1`` full epochs jointly; a per-epoch shuffle keeps the same
  statistics and guarantees every token is seen once per epoch).
* ``sample_index`` (``(S + 1, 2)``, int32 when it fits): row ``j`` is
  ``(position in document_index, token offset)`` of token ``j * L`` of the stream. Sample ``j``
  is tokens ``[j*L, j*L + L + 1)``: from row ``j`` up to and including row ``j + 1``'s token,
  so consecutive samples share one token (the last label of one is the first input of the
  next). ``S = (epochs * tokens_per_epoch - 1) // L``.
* ``shuffle_index`` (uint32 when it fits, ``S`` entries): the order samples are served in;
  served sample ``i < num_samples`` is stream sample ``shuffle_index[i]``.

The last partial epoch, as Megatron: when the samples taken from the last epoch are fewer
than 80% of an epoch's samples, the first ``S0 = ((epochs - 1) * T - 1) // L`` samples and
the rest are shuffled separately (``shuffle_index = perm(S0) ++ S0 + perm(S - S0)``), so the
few samples drawn from the last epoch are spread over all of it instead of being its first
documents; otherwise all ``S`` samples are shuffled together.

Worked numbers: documents of 5 and 4 tokens, ``L = 3``: ``T = 9``, one epoch holds
``(9 - 1) // 3 = 2`` samples, ``stream[0:4]`` and ``stream[3:7]``; ``sample_index`` rows
``(0, 0), (0, 3), (1, 1)`` when the order is ``[0, 1]``. A third sample needs a second epoch.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Megatron's threshold for building the last epoch's shuffle separately.
SEPARATE_FINAL_EPOCH_THRESHOLD = 0.80


@dataclass(frozen=True)
class EpochPlan:
    """How many epochs ``num_samples`` samples need and how the last one is shuffled."""

    tokens_per_epoch: int
    num_epochs: int
    stream_samples: int
    """S: samples the whole ``num_epochs``-epoch stream holds (>= num_samples)."""
    samples_before_final_epoch: int
    """S0: samples wholly inside the first ``num_epochs - 1`` epochs."""
    separate_final_epoch: bool


def plan_epochs(tokens_per_epoch: int, seq_length: int, num_samples: int) -> EpochPlan:
    """Megatron's epoch arithmetic (``_get_num_epochs`` and the 80% rule)."""
    if seq_length < 1:
        raise ValueError(f"seq_length must be >= 1, got {seq_length}")
    if num_samples < 0:
        raise ValueError(f"num_samples must be >= 0, got {num_samples}")
    t, n, L = int(tokens_per_epoch), int(num_samples), int(seq_length)
    if n == 0:
        return EpochPlan(t, 0, 0, 0, False)
    if t <= 0:
        raise ValueError(f"{n} samples were asked of a source with no tokens")
    epochs = max(1, -(-(n * L + 1) // t))  # smallest E with E*T >= n*L + 1 (the extra token)
    total = (epochs * t - 1) // L
    before = ((epochs - 1) * t - 1) // L if epochs > 1 else 0
    per_epoch = (t - 1) // L
    separate = epochs > 1 and (n - before) < int(SEPARATE_FINAL_EPOCH_THRESHOLD * per_epoch)
    return EpochPlan(t, epochs, total, before, separate)


def _index_dtype(limit: int, small=np.int32) -> np.dtype:
    return np.dtype(small) if limit < np.iinfo(small).max else np.dtype(np.int64)


def build_document_index(num_documents: int, num_epochs: int,
                         rng: np.random.Generator) -> np.ndarray:
    """``num_epochs`` independent permutations of ``range(num_documents)``, int32 (int64 when
    a source has 2**31 documents or more)."""
    dt = _index_dtype(num_documents)
    out = np.empty(num_epochs * num_documents, dtype=dt)
    for e in range(num_epochs):
        part = out[e * num_documents:(e + 1) * num_documents]
        part[:] = np.arange(num_documents, dtype=dt)
        rng.shuffle(part)
    return out


def build_sample_index(doc_lengths: np.ndarray, document_index: np.ndarray, seq_length: int,
                       stream_samples: int) -> np.ndarray:
    """Rows ``(document_index position, offset)`` of tokens ``0, L, 2L, ..., S*L``.

    Vectorized: entry ``k`` of the stream covers tokens ``[start_k, end_k)`` and holds the
    sample starts ``j*L`` in that range, ``ceil(end_k / L) - ceil(start_k / L)`` of them, so
    ``np.repeat`` lays out the owning entry of every row in one pass (empty documents own no
    row, exactly as Megatron's loop skips them).
    """
    L = int(seq_length)
    ends = np.cumsum(doc_lengths[document_index], dtype=np.int64)
    if stream_samples * L >= (int(ends[-1]) if len(ends) else 0):
        raise ValueError(f"{stream_samples} samples of {L} tokens need more than the "
                         f"{int(ends[-1]) if len(ends) else 0} tokens of the stream")
    firsts = -(-ends // L)  # rows owned by entries 0..k: ceil(end_k / L)
    owned = np.diff(firsts, prepend=0)
    del firsts
    rows = stream_samples + 1
    entry = np.repeat(np.arange(len(ends), dtype=_index_dtype(len(ends))), owned)[:rows]
    del owned
    starts = ends[entry] - doc_lengths[document_index[entry]]
    del ends
    offsets = np.arange(rows, dtype=np.int64) * L - starts
    out = np.empty((rows, 2), dtype=_index_dtype(max(len(document_index),
                                                     int(doc_lengths.max(initial=0)))))
    out[:, 0] = entry
    out[:, 1] = offsets
    return out


def build_shuffle_index(plan: EpochPlan, rng: np.random.Generator) -> np.ndarray:
    """The served order of stream samples (see the module docstring)."""
    total = plan.stream_samples
    dt = np.dtype(np.uint32) if total < np.iinfo(np.uint32).max - 1 else np.dtype(np.int64)
    out = np.arange(total, dtype=dt)
    split = plan.samples_before_final_epoch if plan.separate_final_epoch else total
    rng.shuffle(out[:split])
    rng.shuffle(out[split:])
    return out


def build_gpt_indices(doc_lengths: np.ndarray, seq_length: int, num_samples: int,
                      seed_sequence: np.random.SeedSequence, shuffle_samples: bool = True
                      ) -> tuple[EpochPlan, np.ndarray, np.ndarray, np.ndarray]:
    """(plan, document_index, sample_index, shuffle_index) for one source.

    ``doc_lengths`` is the source's per-document token counts (int32, EOD included) in the
    order of its shards; nothing else of the source is needed, so benchmarks can pass
    synthetic lengths. ``shuffle_samples=False`` serves stream samples in order.
    """
    lengths = np.asarray(doc_lengths)
    if lengths.ndim != 1 or (len(lengths) and lengths.min() < 0):
        raise ValueError("doc_lengths must be a 1-D array of non-negative lengths")
    plan = plan_epochs(int(lengths.sum(dtype=np.int64)), seq_length, num_samples)
    doc_rng, shuffle_rng = (np.random.default_rng(s) for s in seed_sequence.spawn(2))
    document_index = build_document_index(len(lengths), plan.num_epochs, doc_rng)
    if plan.num_epochs == 0:
        return plan, document_index, np.zeros((1, 2), dtype=np.int32), np.empty(0, np.uint32)
    sample_index = build_sample_index(lengths, document_index, seq_length, plan.stream_samples)
    if shuffle_samples:
        shuffle_index = build_shuffle_index(plan, shuffle_rng)
    else:
        shuffle_index = np.arange(plan.stream_samples, dtype=np.int64)
    return plan, document_index, sample_index, shuffle_index
