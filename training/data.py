"""Manifest-driven data loading for the trainer.

The blended dataset (``blending.sampling.BlendedDataset``) maps a global sample index to
``seq_length + 1`` tokens, deterministically. The loader walks that index in order: a step with a
global batch of B samples starting at ``consumed_samples`` c covers indices [c, c + B). As in
Megatron's pretraining sampler, the step is cut into rounds of ``micro_batch_size * dp`` samples and
data-parallel rank r takes the r-th micro-batch of each round, so every rank reads only its own
samples and a run with a different dp (same global batch) sees exactly the same samples per step.

The only state is ``consumed_samples``; restoring it resumes the stream exactly.
"""

from __future__ import annotations

import logging
import os
from collections import Counter
from dataclasses import dataclass, field
from typing import Protocol, Sequence

import numpy as np
import torch

from infra.config import ConfigError

log = logging.getLogger(__name__)


class SampleDataset(Protocol):
    def __len__(self) -> int: ...
    def __getitem__(self, i: int) -> np.ndarray: ...
    def source_of(self, i: int): ...


@dataclass
class StepBatch:
    """What one rank needs for one optimizer step."""

    micro_batches: list[tuple[torch.Tensor, torch.Tensor]]
    """(inputs, targets) pairs, each [micro_batch_size, seq_length] int64."""
    global_batch: int
    """Samples in the step across all ranks."""
    source_tokens: dict[str, int] = field(default_factory=dict)
    """Training tokens per source in the whole global batch (identical on every rank)."""


class DistributedSampleLoader:
    def __init__(self, dataset: SampleDataset, seq_length: int, micro_batch_size: int,
                 dp_rank: int = 0, dp_size: int = 1, consumed_samples: int = 0,
                 source_names: Sequence[str] | None = None,
                 device: torch.device | str = "cpu"):
        if not 0 <= dp_rank < dp_size:
            raise ValueError(f"dp_rank {dp_rank} out of range for dp_size {dp_size}")
        self.dataset = dataset
        self.seq_length = seq_length
        self.micro_batch_size = micro_batch_size
        self.dp_rank = dp_rank
        self.dp_size = dp_size
        self.consumed_samples = consumed_samples
        self.source_names = list(source_names) if source_names is not None else None
        self.device = torch.device(device)

    # --- the stream ---
    def rank_indices(self, start: int, global_batch: int) -> list[list[int]]:
        """Global sample indices of this rank's micro-batches for a step starting at ``start``."""
        round_size = self.micro_batch_size * self.dp_size
        if global_batch % round_size:
            raise ValueError(f"global batch {global_batch} is not a multiple of micro_batch_size "
                             f"* dp = {self.micro_batch_size} * {self.dp_size}")
        out = []
        for r in range(global_batch // round_size):
            base = start + r * round_size + self.dp_rank * self.micro_batch_size
            out.append(list(range(base, base + self.micro_batch_size)))
        return out

    def next_step(self, global_batch: int) -> StepBatch:
        start = self.consumed_samples
        if start + global_batch > len(self.dataset):
            raise IndexError(f"the dataset holds {len(self.dataset)} samples but the step needs "
                             f"[{start}, {start + global_batch}); build it with more num_samples")
        micro = [self._micro_batch(ix) for ix in self.rank_indices(start, global_batch)]
        sources = self.source_tokens(start, global_batch)
        self.consumed_samples += global_batch
        return StepBatch(micro, global_batch, sources)

    def _micro_batch(self, indices: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
        samples = [np.asarray(self.dataset[i], dtype=np.int64) for i in indices]
        for i, s in zip(indices, samples):
            if s.shape != (self.seq_length + 1,):
                raise ValueError(f"sample {i} has shape {s.shape}; the trainer needs "
                                 f"seq_length + 1 = {self.seq_length + 1} tokens")
        tokens = torch.from_numpy(np.stack(samples)).to(self.device)
        return tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()

    def source_tokens(self, start: int, global_batch: int) -> dict[str, int]:
        """Tokens per source of a whole global batch. The blend index is deterministic, so every
        rank computes this without communication."""
        counts = Counter(self._source_name(self.dataset.source_of(i))
                         for i in range(start, start + global_batch))
        return {name: n * self.seq_length for name, n in sorted(counts.items())}

    def _source_name(self, source) -> str:
        if self.source_names is not None and isinstance(source, (int, np.integer)):
            return self.source_names[int(source)]
        return str(source)

    # --- resumable state ---
    def state_dict(self) -> dict:
        return {"consumed_samples": self.consumed_samples}

    def load_state_dict(self, state: dict) -> None:
        self.consumed_samples = int(state["consumed_samples"])


def open_manifest(path: str, verify_checksums: bool = True, trust_stamps: bool = False):
    """Check the blend manifest's values (``training.manifest_values``), load it and verify
    it against its files (shard sha256s, tokenizer) before any compute; with
    ``trust_stamps`` only shards changed since their verification stamp are hashed."""
    from blending.manifest import load_manifest  # deferred: the model/test code paths don't need it
    from training.manifest_values import check_manifest_values

    check_manifest_values(path)  # its own values first (weights, counts, epochs, paths)
    log.info("loading manifest %s (verify checksums: %s)", path,
             ("changed shards only (stamps)" if trust_stamps else "every shard")
             if verify_checksums else "no")
    return load_manifest(path, verify_checksums=verify_checksums, trust_stamps=trust_stamps)


# --- start-up work done once per node -----------------------------------------------------------
# Hashing every shard (the corpus read once) and building the blend index are the expensive
# parts of start-up. Local rank 0 of every node does them while the other ranks of the node
# wait; the verdict (or the error) is shared with every rank, and the other ranks then read the
# manifest without hashing and memory-map the indices local rank 0 wrote to the cache.

VERIFIED_ENV = "MTNLG_VERIFIED_MANIFEST"
"""Set by the `mtnlg train --nproc N` launcher after it verified the manifest (once per
machine, before torchrun starts): ``<absolute path>:<sha256 of the manifest file>``."""


def manifest_fingerprint(path: str) -> str:
    import hashlib

    with open(path, "rb") as f:
        return f"{os.path.abspath(path)}:{hashlib.sha256(f.read()).hexdigest()}"


def verified_by_launcher(path: str) -> bool:
    value = os.environ.get(VERIFIED_ENV)
    return bool(value) and os.path.isfile(path) and value == manifest_fingerprint(path)


def _distributed() -> bool:
    import torch.distributed as dist

    return dist.is_initialized() and dist.get_world_size() > 1


def node_leader() -> bool:
    """Local rank 0 (every process when not distributed)."""
    return not _distributed() or int(os.environ.get("LOCAL_RANK", "0")) == 0


def once_per_node(what: str, work):
    """Run ``work()`` on each node's local rank 0 while the node's other ranks wait; an error
    there is raised on every rank (same message). Returns work's result on the leaders, None
    elsewhere. Collective: every rank must call it."""
    import torch.distributed as dist

    result, error = None, None
    if node_leader():
        try:
            result = work()
        except Exception as e:  # noqa: BLE001 - handed to every rank below, then raised
            error = e
    if _distributed():
        errors = [None] * dist.get_world_size()
        dist.all_gather_object(errors, None if error is None else (type(error).__name__,
                                                                   str(error)))
        first = next((e for e in errors if e is not None), None)
        if error is None and first is not None:
            from blending.manifest import ManifestError
            raise ManifestError(first[1]) if first[0] == "ManifestError" else \
                RuntimeError(f"{what} failed on another node's leader: {first[1]}")
    if error is not None:
        raise error
    log.info("%s: done once per node", what)
    return result


def verify_manifest_tokenizer(manifest) -> None:
    """Refuse a manifest whose tokenizer file no longer matches what it records (sha256,
    vocab size, EOD id). A tokenizer path that does not exist here cannot be checked: warn."""
    from infra.resources import ResourceError, local_path

    path = manifest.tokenizer.path
    try:
        path = local_path(path) if path else path  # pkg://: the tokenizer shipped with this install
    except ResourceError:
        path = None
    if not path or not os.path.exists(path):
        log.warning("tokenizer %r recorded in the manifest is not on this machine; trusting its "
                    "recorded sha256/vocab size", path)
        return
    from blending.manifest import verify_tokenizer
    from curation.tokenizer import TextTokenizer

    verify_tokenizer(manifest, TextTokenizer(path))
    log.info("tokenizer %s matches the manifest (sha256 %s...)", path,
             manifest.tokenizer.sha256[:12])


def manifest_tokenizer(manifest) -> dict:
    """The manifest's tokenizer record as a dict with vocab_size and eod_id."""
    tok = manifest.tokenizer
    if isinstance(tok, dict):
        return tok
    return {k: getattr(tok, k) for k in ("path", "sha256", "vocab_size", "eod_id")
            if hasattr(tok, k)}


def check_vocab(cfg, tokenizer: dict) -> int:
    """The model's vocabulary (``cfg``: a ``TrainConfig``) for this tokenizer; refuses one that
    cannot hold its tokens."""
    tok_vocab = int(tokenizer["vocab_size"])
    eod = tokenizer.get("eod_id")
    if eod is not None and not 0 <= int(eod) < tok_vocab:
        raise ValueError(f"manifest tokenizer eod_id {eod} is outside its vocab_size {tok_vocab}")
    if cfg.model.vocab_size is not None and cfg.model.vocab_size < tok_vocab:
        raise ConfigError(f"model.vocab_size: the model is configured for {cfg.model.vocab_size}"
                          f" tokens but the manifest's tokenizer has {tok_vocab}; set "
                          f"model.vocab_size >= {tok_vocab} (or null to take it from the "
                          f"manifest)")
    return cfg.model.vocab_size or tok_vocab


def check_manifest(cfg, path: str, verify_shards: str) -> None:
    """What a node leader checks before anyone trains: shard sha256s (``data.verify_shards``:
    stamps, full or none), sizes and headers, tokenizer file, vocabulary. Here rather than in
    the trainer: the launcher runs it before it starts any rank, without importing the
    training stack."""
    manifest = open_manifest(path, verify_checksums=verify_shards != "none",
                             trust_stamps=verify_shards == "stamps")
    verify_manifest_tokenizer(manifest)
    tokenizer = manifest_tokenizer(manifest)
    check_vocab(cfg, tokenizer)
    log.info("manifest ok: tokenizer vocab %s, eod %s", tokenizer["vocab_size"],
             tokenizer.get("eod_id"))


def manifest_source_names(manifest) -> list[str] | None:
    sources = getattr(manifest, "sources", None)
    if sources is None:
        return None
    if isinstance(sources, dict):
        return list(sources)
    return [getattr(s, "name", str(s)) for s in sources]


def build_blended_dataset(manifest, seq_length: int, num_samples: int, seed: int,
                          cache_dir: str | None = "auto", split: str = "train"):
    """The blended dataset of one split. With an index cache, local rank 0 of each node builds
    the indices while the others wait, then every rank memory-maps them (collective)."""
    from blending.sampling import BlendedDataset

    kwargs = dict(seq_length=seq_length, num_samples=num_samples, seed=seed, split=split)
    if cache_dir != "auto":
        kwargs["cache_dir"] = cache_dir
    log.info("blended sample index (%s): %d samples of %d tokens, seed %d", split,
             num_samples, seq_length, seed)
    if cache_dir is not None and _distributed():
        once_per_node(f"{split} blend index", lambda: BlendedDataset(manifest, **kwargs))
    return BlendedDataset(manifest, **kwargs)
