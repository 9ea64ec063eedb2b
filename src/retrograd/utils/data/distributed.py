"""`DistributedSampler`: each process's share of a dataset, as `torch.utils.data`'s.

Every rank builds the same index order (a permutation from `seed + epoch` when
shuffling), pads it by repeating its head (or cuts it, with `drop_last`) to a
multiple of the number of ranks, and takes every `num_replicas`-th index from its
`rank`. Without `num_replicas`/`rank` they come from `rg.distributed`'s world (one
rank of size 1 without an MPI launcher). Call `set_epoch` each epoch to reshuffle.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np

from .sampler import Sampler

__all__ = ["DistributedSampler"]


class DistributedSampler(Sampler):
    """The indices of `dataset` that process `rank` of `num_replicas` reads."""

    def __init__(self, dataset, num_replicas: int | None = None, rank: int | None = None,
                 shuffle: bool = True, seed: int = 0, drop_last: bool = False) -> None:
        if num_replicas is None or rank is None:
            from ...distributed import init  # MPI only when asked for (lazy)
            world = init()
            num_replicas = world.size if num_replicas is None else num_replicas
            rank = world.rank if rank is None else rank
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval "
                             f"[0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas, self.rank = int(num_replicas), int(rank)
        self.epoch = 0
        self.drop_last = drop_last
        n = len(dataset)
        if drop_last and n % self.num_replicas != 0:
            self.num_samples = math.ceil((n - self.num_replicas) / self.num_replicas)
        else:
            self.num_samples = math.ceil(n / self.num_replicas)
        self.total_size = self.num_samples * self.num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self) -> Iterator[int]:
        n = len(self.dataset)
        if self.shuffle:  # the same order on every rank: seeded by seed + epoch alone
            indices = np.random.default_rng(self.seed + self.epoch).permutation(n).tolist()
        else:
            indices = list(range(n))
        if not self.drop_last:
            pad = self.total_size - len(indices)
            if pad <= len(indices):
                indices += indices[:pad]
            else:
                indices += (indices * math.ceil(pad / len(indices)))[:pad]
        else:
            indices = indices[:self.total_size]
        if len(indices) != self.total_size:
            raise AssertionError("DistributedSampler: index count does not match total_size")
        mine = indices[self.rank:self.total_size:self.num_replicas]
        return iter(mine)

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """The epoch number, so that each epoch shuffles differently (same on every rank)."""
        self.epoch = epoch
