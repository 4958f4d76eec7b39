"""Checkpoints: the state of model parts spread over a (dp, pp, tp) mesh, written with
``torch.distributed.checkpoint`` (DCP), sealed by a checksum manifest, kept with retention.

Layout independence: DCP stores every tensor by its plain-model name (``layers.7.attn.wq.weight``)
with its global shape, whatever layout saved it; a load reshards into the layout at hand.
Pipeline stages contribute disjoint names (global layer indices); the optimizer state is flattened
(``state.<name>.exp_avg``), which lets pipeline-stage state and ZeRO-1 shards reload into another
layout. The tied embedding appears as ``tok_embeddings.weight`` (first stage) and
``output.weight`` (last stage): equal values, both kept, so any pp can load any pp. The padded
vocabulary does not depend on tp, so any tp loads any tp. RNG states are per rank
(``rng.rank<N>``) and restored only when the world size is unchanged.

Trust: checkpoints are TRUSTED input. DCP's ``.metadata`` is a pickle, so a crafted checkpoint
can run code when loaded. Every checkpoint folder therefore carries ``checksums.json`` (sha256
and size of every file, written after all ranks finished writing; it doubles as the completion
marker) and ``verify_checkpoint`` checks it before anything in the folder is unpickled; a folder
without it, or with any file changed, missing or added, is refused. That stops corrupted and
altered checkpoints, not a forger who rewrites the manifest too: share weights as the
safetensors export (``training.hf_export``), never as trainer checkpoints.

For evaluation and export, ``load_plain_model(path)`` verifies a checkpoint of any layout and
returns the plain ``GPT`` on one device, without a process group.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from concurrent.futures import Future

import torch
import torch.distributed as dist

from infra.hashing import file_sha256

log = logging.getLogger(__name__)

CHECKSUMS = "checksums.json"
CHECKSUMS_FORMAT = 1
STEP_PREFIX = "step-"


class CheckpointError(ValueError):
    """A checkpoint is missing, unsealed, altered or does not fit this model; the message names
    the file and what to do."""


# --- state of the model parts -------------------------------------------------------------------
# DCP is imported where a state is saved, read or loaded: a launcher verifies a checkpoint's
# checksums (and catches CheckpointError) without paying for its import.
def _dcp():
    import torch.distributed.checkpoint as dcp

    return dcp


def _sd_options():
    from torch.distributed.checkpoint.state_dict import StateDictOptions

    # Flattened optimizer state reloads into another layout (pipeline stages: KeyError 'betas').
    return StateDictOptions(flatten_optimizer_state_dict=True)


def model_state(parts: list[torch.nn.Module]) -> dict:
    from torch.distributed.checkpoint.state_dict import get_model_state_dict

    out = {}
    for part in parts:
        out.update(get_model_state_dict(part))
    return out


def optimizer_state(parts, optimizers) -> dict:
    from torch.distributed.checkpoint.state_dict import get_optimizer_state_dict

    out = {}
    for part, opt in zip(parts, optimizers):
        out.update(get_optimizer_state_dict(part, opt, options=_sd_options()))
    return out


def load_model_state(parts, state: dict) -> None:
    from torch.distributed.checkpoint.state_dict import get_model_state_dict, set_model_state_dict

    for part in parts:
        own = get_model_state_dict(part)
        set_model_state_dict(part, {k: state[k] for k in own})


def load_optimizer_state(parts, optimizers, state: dict) -> None:
    from torch.distributed.checkpoint.state_dict import set_optimizer_state_dict

    for part, opt in zip(parts, optimizers):
        set_optimizer_state_dict(part, opt, state, options=_sd_options())


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


# --- checksums ----------------------------------------------------------------------------------


def _files(path: str) -> list[str]:
    out = []
    for root, _, names in os.walk(path):
        for n in names:
            rel = os.path.relpath(os.path.join(root, n), path)
            if rel != CHECKSUMS:
                out.append(rel.replace(os.sep, "/"))
    return sorted(out)


def _hash_files(path: str, names: list[str]) -> dict[str, dict]:
    return {n: {"sha256": file_sha256(os.path.join(path, n)),
                "bytes": os.path.getsize(os.path.join(path, n))} for n in names}


def seal_checkpoint(path: str, group_ranks: tuple[int, int] | None = None) -> None:
    """Write ``path/checksums.json``. With a process group every rank hashes its share of the
    files (file i by rank i mod world) and rank 0 writes the manifest; call on every rank."""
    rank, world = group_ranks or ((dist.get_rank(), dist.get_world_size())
                                  if dist.is_initialized() else (0, 1))
    names = _files(path) if rank == 0 else None
    if world > 1:
        box = [names]
        dist.broadcast_object_list(box, src=0)
        names = box[0]
    mine = _hash_files(path, names[rank::world])
    if world > 1:
        parts = [None] * world
        dist.all_gather_object(parts, mine)
        mine = {k: v for p in parts for k, v in p.items()}
    if rank == 0:
        doc = {"format": CHECKSUMS_FORMAT, "files": dict(sorted(mine.items()))}
        tmp = os.path.join(path, f".{CHECKSUMS}.tmp")
        with open(tmp, "w") as f:
            json.dump(doc, f, indent=1)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, os.path.join(path, CHECKSUMS))
    if world > 1:
        dist.barrier()


def read_checksums(path: str) -> dict[str, dict]:
    manifest = os.path.join(path, CHECKSUMS)
    if not os.path.isdir(path):
        raise CheckpointError(f"checkpoint {path}: no such folder")
    if not os.path.isfile(manifest):
        raise CheckpointError(f"checkpoint {path}: no {CHECKSUMS}, so it is incomplete or not "
                              f"written by this trainer; refusing to load it (checkpoints are "
                              f"trusted input: re-save it with `mtnlg train`)")
    try:
        with open(manifest) as f:
            doc = json.load(f)
        files = doc["files"]
        assert doc["format"] == CHECKSUMS_FORMAT and isinstance(files, dict)
    except (ValueError, KeyError, TypeError, AssertionError):
        raise CheckpointError(f"checkpoint {manifest}: not a valid checksum manifest") from None
    return files


def verify_files(path: str, files: dict[str, dict], names: list[str]) -> None:
    for n in names:
        full = os.path.join(path, n)
        want = files[n]
        if not os.path.isfile(full):
            raise CheckpointError(f"checkpoint file {full} is missing (recorded in {CHECKSUMS})")
        if os.path.getsize(full) != want["bytes"] or file_sha256(full) != want["sha256"]:
            raise CheckpointError(f"checkpoint file {full} does not match its sha256 in "
                                  f"{CHECKSUMS}: it changed after the save; refusing to load")


def verify_checkpoint(path: str) -> None:
    """Refuse ``path`` unless every file matches ``checksums.json`` and no file was added.
    Nothing is unpickled before this passes. Collective when a process group exists: the
    files are hashed once per job, spread over the ranks, and every rank gets the verdict."""
    distributed = dist.is_initialized() and dist.get_world_size() > 1
    rank, world = (dist.get_rank(), dist.get_world_size()) if distributed else (0, 1)
    error = None
    try:
        files = read_checksums(path)
        extra = sorted(set(_files(path)) - set(files))
        if extra:
            raise CheckpointError(f"checkpoint {path}: files not in {CHECKSUMS}: "
                                  f"{', '.join(extra[:3])}; refusing to load")
        names = sorted(files)
        # every rank checks .metadata itself (every rank unpickles it); the rest is shared
        mine = sorted({".metadata"} & set(names) | set(names[rank::world]))
        verify_files(path, files, mine)
    except CheckpointError as e:
        error = str(e)
    if distributed:
        errors = [None] * world
        dist.all_gather_object(errors, error)
        error = next((e for e in errors if e), None)
    if error:
        raise CheckpointError(error)


# --- the manager --------------------------------------------------------------------------------
def step_dir(root: str, step: int) -> str:
    return os.path.join(root, f"{STEP_PREFIX}{step:08d}")


def sealed_steps(root: str) -> list[int]:
    """Steps with a complete (sealed) checkpoint under ``root``, oldest first."""
    if not os.path.isdir(root):
        return []
    steps = []
    for name in os.listdir(root):
        if name.startswith(STEP_PREFIX) and name[len(STEP_PREFIX):].isdigit() and \
                os.path.isfile(os.path.join(root, name, CHECKSUMS)):
            steps.append(int(name[len(STEP_PREFIX):]))
    return sorted(steps)


def latest_verified_checkpoint(root: str) -> str | None:
    """The newest checkpoint under ``root`` that is complete (sealed by ``checksums.json``) and
    whose files all match their checksums; None when there is none. A folder without the seal
    (a save cut short) is never a candidate; a sealed one that fails verification is skipped
    with a warning and the next older one is tried. Collective under a process group: rank 0
    lists the folder, every rank shares the hashing and gets the same answer."""
    steps = sealed_steps(root)
    if dist.is_initialized() and dist.get_world_size() > 1:
        box = [steps]
        dist.broadcast_object_list(box, src=0)
        steps = box[0]
    for step in reversed(steps):
        path = step_dir(root, step)
        try:
            verify_checkpoint(path)
        except CheckpointError as e:
            log.warning("skipping checkpoint %s: %s", path, e)
            continue
        return path
    return None


class CheckpointManager:
    """Saves ``step-NNNNNNNN`` folders under ``root``: DCP files, then ``config.json`` (rank 0),
    then ``checksums.json`` (the completion marker). ``keep_last`` > 0 deletes older sealed
    checkpoints after a new one is sealed. ``async_save`` writes in the background (DCP
    ``async_save`` stages the state to CPU memory first, so training may change the weights at
    once); the checkpoint is sealed at the next save, at ``wait()``, or at the end.  The
    background save runs its collectives on a process group of its own: sharing the training
    group from a second thread interleaves two streams of collectives on one gloo/NCCL group,
    which hung pipeline runs under load (the scaled-down 530B recipe test)."""

    def __init__(self, root: str, keep_last: int = 0, async_save: bool = False,
                 is_main: bool = True):
        self.root, self.keep_last, self.async_save = root, keep_last, async_save
        self.is_main = is_main
        self._pending: tuple[str, Future, dict] | None = None
        self._save_group = None

    def save(self, step: int, state: dict, meta: dict) -> str:
        self.wait()
        path = step_dir(self.root, step)
        if self.is_main:
            os.makedirs(path, exist_ok=True)
            stale = os.path.join(path, CHECKSUMS)
            if os.path.exists(stale):  # re-saving a step: the old seal no longer applies
                os.remove(stale)
        if dist.is_initialized():
            dist.barrier()
        log.info("saving checkpoint %s%s", path, " (async)" if self.async_save else "")
        if self.async_save:
            if dist.is_initialized() and self._save_group is None:
                # collective: every rank reaches its first save at the same step
                self._save_group = dist.new_group(backend="gloo")
            self._pending = (path, _dcp().async_save(state, checkpoint_id=path,
                                                     process_group=self._save_group), meta)
        else:
            _dcp().save(state, checkpoint_id=path)
            self._finish(path, meta)
        return path

    def wait(self) -> None:
        """Finish and seal a pending async save (collective)."""
        if self._pending is not None:
            path, future, meta = self._pending
            self._pending = None
            future.result()
            self._finish(path, meta)

    def _finish(self, path: str, meta: dict) -> None:
        if self.is_main:
            tmp = os.path.join(path, ".config.json.tmp")
            with open(tmp, "w") as f:
                json.dump(meta, f, indent=2)
            os.replace(tmp, os.path.join(path, "config.json"))
        if dist.is_initialized():
            dist.barrier()
        seal_checkpoint(path)
        self._retain()

    def _retain(self) -> None:
        if self.keep_last <= 0 or not self.is_main:
            return
        for old in sealed_steps(self.root)[:-self.keep_last]:
            log.info("retention (keep_last %d): deleting %s", self.keep_last,
                     step_dir(self.root, old))
            shutil.rmtree(step_dir(self.root, old), ignore_errors=True)


# --- reading ------------------------------------------------------------------------------------
def read_checkpoint_config(path: str) -> dict:
    """``config.json`` of a verified checkpoint (run config + ``_model_config``, ``_tp``, ...)."""
    with open(os.path.join(path, "config.json")) as f:
        meta = json.load(f)
    if "_model_config" not in meta:
        raise CheckpointError(f"{path}/config.json lacks _model_config: not a trainer checkpoint")
    return meta


def saved_shapes(path: str) -> dict[str, tuple[int, ...]]:
    """Global shape of every tensor in a VERIFIED checkpoint (reads its .metadata)."""
    from torch.distributed.checkpoint.metadata import TensorStorageMetadata

    meta = _dcp().FileSystemReader(path).read_metadata().state_dict_metadata
    return {k: tuple(v.size) for k, v in meta.items() if isinstance(v, TensorStorageMetadata)}


def check_shapes(path: str, expected: dict[str, tuple[int, ...]], prefix: str = "model.") -> None:
    """One-line error when the checkpoint's tensors cannot fit this model (a layout change is
    always possible; a shape change is not)."""
    saved = saved_shapes(path)
    for name, shape in expected.items():
        got = saved.get(prefix + name)
        if got is None:
            raise CheckpointError(f"checkpoint {path} has no tensor {prefix + name}: it was saved "
                                  f"from another model; check model.name / model.overrides")
        if tuple(got) != tuple(shape):
            hint = ("; its vocabulary was padded differently (older checkpoints padded to 128 x "
                    "tp): set model.overrides.vocab_multiple so the padded vocabulary is "
                    f"{got[0]}" if name.endswith(("tok_embeddings.weight", "output.weight"))
                    else "; set model.name / model.overrides to the checkpoint's model")
            raise CheckpointError(f"checkpoint {path}: {prefix + name} has shape {list(got)} but "
                                  f"this model's is {list(shape)}{hint}")


def load_plain_model(path: str, device: str | torch.device = "cpu",
                     dtype: torch.dtype = torch.float32):
    """The plain ``GPT`` from a trainer checkpoint of any (dp, pp, tp) layout: checksums
    verified first, then loaded on ``device`` without a process group. For evaluation
    (``mtnlg eval``) and export; returns the model in eval mode."""
    from training.model import GPT, GPTConfig

    sums = read_checksums(path)
    verify_files(path, sums, sorted(sums))
    meta = read_checkpoint_config(path)
    with torch.device("meta"):
        model = GPT(GPTConfig(**meta["_model_config"]))
    model.to_empty(device=torch.device(device))
    model.output.weight = model.tok_embeddings.weight
    expected = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    check_shapes(path, expected)
    state = {"model": model.state_dict()}
    _dcp().load(state, checkpoint_id=path, no_dist=True)
    model.load_state_dict(state["model"])
    return model.to(dtype).eval()
