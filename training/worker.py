"""What a rank knows of the elastic agent that started it (``mtnlg train``'s own, or a
cluster's ``torchrun``): how often the agent restarted it, the stop signal it received, and
the store its process group meets in for this rendezvous round.

The trainer and the launcher's rank entry (``training.launch.run_worker``) both read it; it
imports nothing else of the training package, so neither the agent side (``training.elastic``)
nor the trainer has to import the other.

Why the store of the round: torch's c10d rendezvous (torchrun's default since torch 2.4) hands
its workers a TCP store hosted by the agent of node 0 that lives as long as that agent, across
rounds (pytorch/pytorch#135712). Workers started after a restart find the keys the previous
round's process group wrote there, the dead ranks' gloo/NCCL addresses among them, read those
instead of waiting for the new ones, and fail ("Connection refused") or hang. The process group
therefore meets under a prefix that is new in every round. TORCHELASTIC_RESTART_COUNT cannot be
that prefix: an agent counts only its own node's failures (a node restarted because another
node failed keeps its count), so the nodes of one round can disagree on it. Instead global rank
0 draws a token and hands it to every other rank through the shared store by a handshake whose
keys no earlier round can have written (each rank's own random nonce; the token itself).
"""

from __future__ import annotations

import logging
import os
import time
import uuid
from datetime import timedelta

log = logging.getLogger(__name__)

ROUND_PREFIX = "mtnlg/round"
"""Keys of the handshake in the agent's store; the process group's under ROUND_PREFIX/TOKEN/."""


def restart_count() -> int:
    """How many times the agent restarted this worker group (0 on the first attempt, and
    outside the agent)."""
    return int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0") or 0)


_stop_signal: int | None = None


def note_stop_signal(signum: int) -> None:
    """Record that this process was asked to stop by signal ``signum`` (the trainer's handler:
    it stops after the current step)."""
    global _stop_signal
    _stop_signal = signum


def stop_signal() -> int | None:
    """The signal ``note_stop_signal`` recorded, None when none was."""
    return _stop_signal


def uses_agent_store() -> bool:
    """Whether MASTER_ADDR:MASTER_PORT is the elastic agent's store, shared by every round
    (torch's variable; ``False`` when TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1: then global rank 0
    hosts a fresh store at a fresh port in every round, as outside the agent)."""
    return os.environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True"


def round_store(store, rank: int, world_size: int, timeout: timedelta, poll_s: float = 0.01):
    """``store`` (the agent's, shared by every round) under a prefix of this round's own,
    agreed by the ``world_size`` ranks: rank 0 draws a token; every other rank writes a fresh
    nonce to ``ask/RANK``, waits for the token at ``reply/NONCE`` and counts itself in at
    ``TOKEN/joined``. Rank 0 answers whatever nonce each ``ask/RANK`` holds (a dead rank's
    from an earlier round, until the live one overwrites it) until all ``world_size - 1`` have
    joined: three store requests a pass, whatever the world size. Collective; the ranks of
    earlier rounds have exited (the agents stop them before they rendezvous again)."""
    import torch.distributed as dist

    if world_size == 1:
        return dist.PrefixStore(f"{ROUND_PREFIX}/{uuid.uuid4().hex}", store)
    if rank != 0:
        nonce = uuid.uuid4().hex
        store.set(f"{ROUND_PREFIX}/ask/{rank}", nonce)
        token = store.get(f"{ROUND_PREFIX}/reply/{nonce}").decode()  # blocks up to the timeout
        store.add(f"{ROUND_PREFIX}/{token}/joined", 1)
        return dist.PrefixStore(f"{ROUND_PREFIX}/{token}", store)
    token = uuid.uuid4().hex
    asks = [f"{ROUND_PREFIX}/ask/{r}" for r in range(1, world_size)]
    store.wait(asks, timeout)  # each written by this round's rank or an earlier one's
    answered: set[bytes] = set()
    deadline = time.monotonic() + timeout.total_seconds()
    while (joined := store.add(f"{ROUND_PREFIX}/{token}/joined", 0)) < world_size - 1:
        if time.monotonic() > deadline:
            raise RuntimeError(f"process group store: {joined} of {world_size - 1} ranks took "
                               f"this round's token within {timeout} (the others never "
                               f"started, or an earlier round's rank is still running)")
        new = [n for n in store.multi_get(asks) if n not in answered]
        if new:
            store.multi_set([f"{ROUND_PREFIX}/reply/{n.decode()}" for n in new], [token] * len(new))
            answered.update(new)
        else:
            time.sleep(poll_s)
    return dist.PrefixStore(f"{ROUND_PREFIX}/{token}", store)


def process_group_store(timeout: timedelta) -> dict:
    """``init_process_group``'s store, rank and world size for this rank when its store is the
    agent's (``uses_agent_store``): the agent's store under this round's prefix
    (``round_store``); ``{}`` otherwise (torch's env:// rendezvous is safe there)."""
    if not uses_agent_store():
        return {}
    import torch.distributed as dist

    rank, world_size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    store = dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), world_size,
                          is_master=False, timeout=timeout)
    prefixed = round_store(store, rank, world_size, timeout)
    log.info("process group store: the agent's, under this round's prefix (restart %d)",
             restart_count())
    return {"store": prefixed, "rank": rank, "world_size": world_size}
