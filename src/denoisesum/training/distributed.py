"""Multi-process data-parallel training with `torchrun` (torch.distributed), for every trainer.

`torchrun --nproc-per-node N -m denoisesum.cli train ...` starts N copies of the command with
RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT set. `setup()` joins them into one
process group: gloo for CPU tensors, and nccl for CUDA tensors when the machine has a GPU for
each of its processes (process LOCAL_RANK then uses GPU LOCAL_RANK). Without those variables,
or with WORLD_SIZE=1, `setup()` returns a single-process `Distributed` whose methods do nothing,
and training runs exactly the single-process code.

What stays the same whatever the number of processes W:
- The batches. Every rank builds the same global batch (batches depend only on seed and epoch)
  and computes on its share of it (`shard`: items rank, rank + W, ...), so the union of the
  ranks' micro-batches is the single-process batch. A rank whose share is empty (a batch
  smaller than W) runs one item with weight 0: DistributedDataParallel all-reduces gradients
  during backward, so every rank must run forward and backward.
- The gradient. DDP averages the ranks' gradients; each rank scales its loss by
  W x (its share of the normaliser: tokens for a mean over tokens, pairs for a mean over pairs),
  so the average is the gradient of the single-process loss on the whole batch (up to the order
  of float additions).
- The model. All ranks start from the same weights (and resume from the same checkpoint), and
  apply the same averaged gradient with the same optimizer, so they stay identical.

Only rank 0 writes: checkpoints, the exported model, metrics, results, progress bars. Rank 0
builds data caches first while the others wait (`main_first`), then they read them. The run
directory must be one that every rank sees (trivially so on one machine). Each rank draws
its own dropout masks (`rank_seed`); their random states are saved in checkpoints.
"""

from __future__ import annotations

import atexit
import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import numpy as np
import torch
import torch.distributed as dist
from torch import nn

from denoisesum.errors import ConfigError

# How long a rank waits for the others: rank 0 alone tokenizes a corpus or encodes the pairs
# (minutes to an hour for big data) while the others wait at a barrier.
TIMEOUT_ENV = "DENOISESUM_DIST_TIMEOUT_MINUTES"
DEFAULT_TIMEOUT_MINUTES = 180


@dataclass(frozen=True)
class Distributed:
    """This process's place among the training processes; the single-process default is a
    no-op for every method."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0

    @property
    def enabled(self) -> bool:
        return self.world_size > 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    # ---- data -------------------------------------------------------------------------------

    def shard(self, items: np.ndarray) -> tuple[np.ndarray, bool]:
        """This rank's share of a global batch and whether it counts: items[rank::W] (strided:
        length-sorted batches give every rank similar lengths). An empty share becomes
        (items[:1], False): run it, with loss weight 0."""
        if not self.enabled:
            return items, True
        mine = items[self.rank :: self.world_size]
        return (mine, True) if len(mine) else (items[:1], False)

    def device(self, device: torch.device) -> torch.device:
        """A CUDA device becomes this process's own GPU (LOCAL_RANK)."""
        if not (self.enabled and device.type == "cuda"):
            return device
        if not _gpu_per_process():
            raise ConfigError(
                f"{torch.cuda.device_count()} GPU(s) for "
                f"{_local_world_size()} processes on this machine: start at most "
                "one process per GPU, or train on the CPU (train.device='cpu')"
            )
        return torch.device("cuda", self.local_rank)

    def wrap(self, model: nn.Module, find_unused_parameters: bool = False) -> nn.Module:
        """The model as training calls it: DistributedDataParallel when distributed. Needs
        `find_unused_parameters` when a forward pass may leave parameters out of the graph
        (e.g. the tail clusters of an adaptive softmax that no target of a batch falls in)."""
        if not self.enabled:
            return model
        device = next(model.parameters()).device
        return nn.parallel.DistributedDataParallel(
            model,
            device_ids=[device.index] if device.type == "cuda" else None,
            find_unused_parameters=find_unused_parameters,
        )

    def rank_seed(self, seed: int, *more: int) -> int:
        """A seed for this rank's own random stream (dropout)."""
        return int(np.random.SeedSequence([seed, *more, self.rank]).generate_state(1)[0])

    # ---- collectives (all ranks must call them, in the same order) ----------------------------

    def sum(self, *values: float) -> list[float]:
        """Each value summed over the ranks (float64); the values themselves when alone."""
        if not self.enabled:
            return list(values)
        total = torch.tensor(values, dtype=torch.float64)
        dist.all_reduce(total)
        return total.tolist()

    def any(self, *flags: bool) -> list[bool]:
        """Each flag OR-ed over the ranks: decisions (stop, save) that all must take together."""
        if not self.enabled:
            return list(flags)
        found = torch.tensor([int(f) for f in flags], dtype=torch.int64)
        dist.all_reduce(found, op=dist.ReduceOp.MAX)
        return [bool(f) for f in found.tolist()]

    def all_gather(self, obj: Any) -> list[Any]:
        """Every rank's `obj` (picklable), by rank, on every rank."""
        if not self.enabled:
            return [obj]
        out: list[Any] = [None] * self.world_size
        dist.all_gather_object(out, obj)
        return out

    def gather(self, obj: Any) -> list[Any] | None:
        """Every rank's `obj` on rank 0 (None elsewhere)."""
        if not self.enabled:
            return [obj]
        out: list[Any] | None = [None] * self.world_size if self.is_main else None
        dist.gather_object(obj, out, dst=0)
        return out

    def barrier(self) -> None:
        if self.enabled:
            dist.barrier()

    @contextlib.contextmanager
    def main_first(self) -> Iterator[None]:
        """Rank 0 runs the block first (e.g. building a cache), then the others (reusing it)."""
        if not self.is_main:
            self.barrier()
        yield
        if self.is_main:
            self.barrier()


SINGLE = Distributed()  # one process: what setup() returns without torchrun
_current: Distributed | None = None
_owned = False  # whether setup() created the process group (and shutdown() destroys it)


def setup() -> Distributed:
    """Join the torchrun process group (once per process; later calls return the same)."""
    global _current, _owned
    if _current is not None:
        return _current
    if dist.is_available() and dist.is_initialized():  # set up by the caller
        _current = Distributed(
            dist.get_rank(),
            dist.get_world_size(),
            int(os.environ.get("LOCAL_RANK", dist.get_rank())),
        )
        return _current
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1:
        _current = SINGLE
        return _current
    if not dist.is_available():
        raise RuntimeError("WORLD_SIZE > 1 but this PyTorch build has no torch.distributed")
    rank = int(os.environ["RANK"])
    local_rank = int(os.environ.get("LOCAL_RANK", rank))
    backend = "gloo"
    if _gpu_per_process():
        torch.cuda.set_device(local_rank)
        backend = "cpu:gloo,cuda:nccl"  # CPU tensors (counts, objects) go through gloo
    minutes = float(os.environ.get(TIMEOUT_ENV, DEFAULT_TIMEOUT_MINUTES))
    dist.init_process_group(
        backend, rank=rank, world_size=world, timeout=timedelta(minutes=minutes)
    )
    _current, _owned = Distributed(rank, world, local_rank), True
    atexit.register(shutdown)
    return _current


def _local_world_size() -> int:
    return int(os.environ.get("LOCAL_WORLD_SIZE", os.environ.get("WORLD_SIZE", "1")))


def _gpu_per_process() -> bool:
    """Whether this machine has a GPU for each of its processes (then NCCL is set up too)."""
    return torch.cuda.is_available() and torch.cuda.device_count() >= _local_world_size()


def shutdown() -> None:
    """Destroy the process group setup() created (it is also done at exit)."""
    global _current, _owned
    if _owned and dist.is_initialized():
        # every rank done with its collectives before any tears the group down: a rank that
        # destroyed it while another still used it aborted the other at exit, now and then
        with contextlib.suppress(RuntimeError):
            dist.barrier()
        dist.destroy_process_group()
    _current, _owned = None, False
