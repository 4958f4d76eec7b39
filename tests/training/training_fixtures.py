"""Small stand-ins for the blending layer, with the BlendedDataset / manifest interfaces."""

from __future__ import annotations

import os

import numpy as np


class RepeatedDataset:
    """``num_samples`` samples cycling through ``distinct`` fixed random sequences of
    ``seq_length + 1`` tokens; even indices come from source "a", odd from "b"."""

    def __init__(self, seq_length: int, num_samples: int = 10_000, vocab_size: int = 256,
                 distinct: int = 4, seed: int = 0):
        rng = np.random.default_rng(seed)
        self.pool = rng.integers(0, vocab_size, (distinct, seq_length + 1), dtype=np.int64)
        self.num_samples = num_samples

    def __len__(self) -> int:
        return self.num_samples

    def __getitem__(self, i: int) -> np.ndarray:
        if not 0 <= i < self.num_samples:
            raise IndexError(i)
        return self.pool[i % len(self.pool)]

    def source_of(self, i: int) -> str:
        return "a" if i % 2 == 0 else "b"


TOKENIZER = {"path": "fake", "sha256": "0" * 64, "vocab_size": 256, "eod_id": 255}


GPT2_TOKENIZER = os.path.join(os.path.dirname(__file__), "..", "..", "data_manifests",
                              "tokenizers", "gpt2")

TEXTS = {
    "wiki": [
        "The quick brown fox jumps over the lazy dog. The dog sleeps in the warm sun all day.",
        "Paris is the capital of France. It is known for the Eiffel Tower and the Louvre museum.",
        "Water boils at one hundred degrees Celsius at sea level and freezes at zero degrees.",
    ],
    "books": [
        "Once upon a time there lived a king who had three daughters, each more clever than the "
        "last. The youngest loved to read books in the old library of the castle.",
        "It was a dark and stormy night; the rain fell in torrents, except at occasional "
        "intervals, when it was checked by a violent gust of wind which swept up the streets.",
    ],
}


def small_tokenizer(directory: str, vocab_size: int = 320) -> str:
    """A byte-level BPE tokenizer of ``vocab_size`` tokens trained on TEXTS by
    ``mtnlg tokenizer train``'s code (``<|endoftext|>`` id 0), written as
    ``directory/tokenizer.json``; returns the folder. Multi-step training tests use it: with
    GPT-2's 50257 rows 10 steps of the tiny model (3 checkpoints) took 3.9 s of CPU, with 256
    tokens 1.0-1.3 s (the output layer, AdamW and checkpoints over 3.2M embedding values)."""
    from curation.tokenizer import save_tokenizer_json
    from curation.tokenizer_train import train_bpe

    tok = train_bpe(iter([d for docs in TEXTS.values() for d in docs]), vocab_size, min_frequency=1)
    os.makedirs(directory, exist_ok=True)
    save_tokenizer_json(tok, os.path.join(directory, "tokenizer.json"))
    return directory


TRAIN_TOKENS = 1e4


def write_manifest(directory: str, texts: dict[str, list[str]] | None = None,
                   repeat: int = 20, weights: dict[str, float] | None = None,
                   tokenizer_path: str = GPT2_TOKENIZER) -> str:
    """Tokenize ``texts`` (each document ``repeat`` times) with the tokenizer at
    ``tokenizer_path`` (the real GPT-2 one by default) into Megatron shards and write
    ``directory/manifest.json``; returns its path."""
    from blending.indexed_dataset import IndexedDatasetWriter, dtype_for_vocab
    from blending.manifest import Manifest, ShardEntry, SourceEntry, TokenizerInfo
    from blending.manifest import write_manifest as _write
    from curation.tokenizer import TextTokenizer

    texts = texts or TEXTS
    tok = TextTokenizer(os.path.abspath(tokenizer_path))
    enc = tok._load()
    sources = []
    for name, docs in texts.items():
        prefix = os.path.join(directory, "shards", name, f"{name}_00000")
        with IndexedDatasetWriter(prefix, dtype_for_vocab(tok.vocab_size)) as w:
            for _ in range(repeat):
                for d in docs:
                    w.add_document(np.array(enc.encode(d).ids + [tok.eod_id], dtype=np.int64))
            info = w.finalize()
        shard = ShardEntry(os.path.abspath(prefix), info.documents, info.tokens,
                           info.bin_sha256, info.idx_sha256)
        weight = (weights or {}).get(name, 1.0 / len(texts))
        target = weight * TRAIN_TOKENS  # as build_manifest records them
        sources.append(SourceEntry(name, name, "test", weight, target, info.tokens,
                                   info.documents, target / info.tokens, (shard,)))
    path = os.path.join(directory, "manifest.json")
    manifest = Manifest("test", TRAIN_TOKENS, 100.0,
                        TokenizerInfo(os.path.abspath(tokenizer_path), tok.sha256,
                                      tok.vocab_size, tok.eod_id), tuple(sources), path=path)
    _write(manifest, path)
    return path
