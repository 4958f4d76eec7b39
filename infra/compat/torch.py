"""torch internals the trainer depends on, in one place (everything else in ``training/`` is
public torch API).

- ``replicate``: FSDP2's data-parallel replicate (parameters replicated, gradients all-reduced
  per block, overlapped with backward), ``torch.distributed._composable.replicate_with_fsdp``.
  It has no public home yet; it takes a 1-D mesh since torch 2.10 (2.9's needed a 2-D one).
- ``fake_world``: a process group of N fake ranks inside this one process (no memory, no
  communication) for ``mtnlg train --plan``'s meta check. The ``fake`` backend is registered
  only by ``torch.testing._internal.distributed.fake_pg``; the store is the public HashStore.
- ``interleaved_1f1b``: torch's ``ScheduleInterleaved1F1B`` with a given number of rounds. Its
  own count (micro-batches // pp) refuses counts it does not divide (112 micro-batches at pp 35);
  torch computes and uses ``number_of_rounds`` inside its constructor, so a subclass supplies it
  through a property and torch's own code builds and validates the per-rank order.

``check`` verifies the version and these names first; a mismatch raises ``CompatError``.
"""
from __future__ import annotations

import contextlib
import functools
import inspect
from collections.abc import Iterator

from infra.compat import CompatError, require, require_version

# Verified by reading torch's source for 2.10 to 2.14 (replicate's keyword `mesh` taking a 1-D
# mesh, the fake backend's registration, ScheduleInterleaved1F1B's use of `number_of_rounds`)
# and by the suite on the locked 2.13. pyproject.toml's range is the same.
VERIFIED = ((2, 10), (2, 14))

__all__ = ["VERIFIED", "CompatError", "check", "fake_world", "interleaved_1f1b", "replicate"]


def check() -> None:
    """Raise ``CompatError`` unless the installed torch is one this module was verified for and
    still has the internals it uses."""
    import torch

    require_version("torch", torch.__version__, VERIFIED, "the trainer's use of torch "
                    "internals (infra/compat/torch.py)")
    lib = f"torch {torch.__version__}"
    try:
        from torch.distributed._composable import replicate_with_fsdp
        from torch.distributed.pipelining import ScheduleInterleaved1F1B
    except ImportError as e:
        raise CompatError(f"{lib}: {e}; infra/compat/ must be re-verified for this version") from e
    function = getattr(replicate_with_fsdp, "replicate", None)
    params = inspect.signature(function).parameters if callable(function) else {}
    require("mesh" in params and params["mesh"].kind is inspect.Parameter.KEYWORD_ONLY, lib,
            "replicate_with_fsdp.replicate(module, *, mesh=...) is gone")
    # The names the constructor's bytecode stores and loads, not its source: inspect.getsource
    # of a class parses the whole module, a cost every training process would pay.
    init = getattr(ScheduleInterleaved1F1B.__init__, "__code__", None)
    require(init is not None and "number_of_rounds" in init.co_names, lib,
            "ScheduleInterleaved1F1B no longer computes its schedule from number_of_rounds")


@functools.cache
def _checked() -> None:
    check()  # once per process


def replicate(module, mesh) -> None:
    """Replicate ``module`` over the 1-D data-parallel ``mesh`` (in place, as ``fully_shard``)."""
    _checked()
    from torch.distributed._composable.replicate_with_fsdp import (
        replicate as _replicate,
    )

    _replicate(module, mesh=mesh)


@contextlib.contextmanager
def fake_world(world_size: int) -> Iterator[None]:
    """The default process group, for the duration: ``world_size`` fake ranks, this one rank 0.
    Collectives return at once and compute nothing; meshes and DTensor shapes are real."""
    _checked()
    import torch.distributed as dist
    import torch.testing._internal.distributed.fake_pg  # noqa: F401  registers "fake"

    dist.init_process_group("fake", store=dist.HashStore(), rank=0, world_size=world_size)
    try:
        yield
    finally:
        dist.destroy_process_group()


def interleaved_1f1b(stages, n_microbatches: int, loss_fn, rounds: int):
    """torch's interleaved 1F1B schedule over this rank's ``stages`` in ``rounds`` rounds (a
    divisor of ``n_microbatches``), gradients scaled by the micro-batch count as torch's default."""
    _checked()
    if rounds < 1 or n_microbatches % rounds:
        raise ValueError(f"{rounds} rounds do not divide {n_microbatches} micro-batches")
    schedule = _interleaved_class()(stages, n_microbatches, loss_fn=loss_fn, rounds=rounds)
    require(schedule.microbatches_per_round == n_microbatches // rounds, "torch",
            "ScheduleInterleaved1F1B ignored the given number_of_rounds")
    return schedule


@functools.cache
def _interleaved_class():
    from torch.distributed.pipelining import ScheduleInterleaved1F1B

    class InterleavedRounds(ScheduleInterleaved1F1B):
        def __init__(self, stages, n_microbatches: int, loss_fn=None, *, rounds: int):
            self._rounds = rounds
            super().__init__(stages, n_microbatches, loss_fn=loss_fn)

        # torch assigns its own count in __init__ and reads it to build the order: keep ours.
        number_of_rounds = property(lambda self: self._rounds, lambda self, _torch_count: None)

    return InterleavedRounds
