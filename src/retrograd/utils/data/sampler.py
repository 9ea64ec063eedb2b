"""Samplers, as in `torch.utils.data`: they say which indices a `DataLoader` reads, in
what order (`SequentialSampler`, `RandomSampler`, `SubsetRandomSampler`,
`WeightedRandomSampler`), and `BatchSampler` groups them into batches. Random ones draw
from their `generator=` (a `numpy.random.Generator`) or from retrograd's global
generator, so `rg.manual_seed` makes them reproducible."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence

import numpy as np

from ...api._errors import ArgumentError
from ...tensor import Tensor
from ._random import rng

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler",
           "WeightedRandomSampler", "BatchSampler"]


class Sampler:
    """Base class: subclasses define `__iter__` (indices) and usually `__len__`."""

    def __init__(self, data_source=None) -> None:
        pass

    def __iter__(self) -> Iterator:
        raise NotImplementedError


class SequentialSampler(Sampler):
    """0, 1, ..., len(data_source) - 1."""

    def __init__(self, data_source) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


def _positive_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


class RandomSampler(Sampler):
    """A fresh random order every epoch: a permutation (repeated, then cut, when
    `num_samples` exceeds the dataset), or with `replacement=True` independent draws."""

    def __init__(self, data_source, replacement: bool = False, num_samples: int | None = None,
                 generator=None) -> None:
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(replacement, bool):
            raise TypeError("replacement should be a boolean value, but got "
                            f"replacement={replacement}")
        if not _positive_int(self.num_samples):
            raise ValueError("num_samples should be a positive integer value, but got "
                             f"num_samples={self.num_samples}")

    @property
    def num_samples(self) -> int:
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self) -> Iterator[int]:
        n, g = len(self.data_source), rng(self.generator)
        if self.replacement:  # drawn in chunks of 32, as PyTorch: makemore asks for 1e10
            total = self.num_samples
            for _ in range(total // 32):
                yield from g.integers(0, n, 32).tolist()
            yield from g.integers(0, n, total % 32).tolist()
            return
        for _ in range(self.num_samples // n):
            yield from g.permutation(n).tolist()
        yield from g.permutation(n)[:self.num_samples % n].tolist()

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices, in a fresh random order every epoch."""

    def __init__(self, indices: Sequence[int], generator=None) -> None:
        self.indices, self.generator = indices, generator

    def __iter__(self) -> Iterator[int]:
        for i in rng(self.generator).permutation(len(self.indices)).tolist():
            yield self.indices[i]

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """`num_samples` indices drawn with probabilities proportional to `weights`."""

    def __init__(self, weights: Sequence[float], num_samples: int, replacement: bool = True,
                 generator=None) -> None:
        if not _positive_int(num_samples):
            raise ValueError("num_samples should be a positive integer value, but got "
                             f"num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError("replacement should be a boolean value, but got "
                             f"replacement={replacement}")
        w = np.asarray(weights.data if isinstance(weights, Tensor) else weights, np.float64)
        if w.ndim != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape "
                             f"{tuple(w.shape)}")
        self.weights = Tensor._wrap(w)
        self.num_samples, self.replacement, self.generator = num_samples, replacement, generator

    def __iter__(self) -> Iterator[int]:
        w = self.weights.data
        if not np.all(np.isfinite(w)) or np.any(w < 0) or w.sum() <= 0:
            raise ArgumentError("WeightedRandomSampler: weights must be finite, non-negative "
                                "and not all zero")
        g, n, k = rng(self.generator), len(w), self.num_samples
        if self.replacement:
            draws = g.choice(n, k, True, p=w / w.sum())
        else:  # as torch.multinomial: once the weighted ones run out, the zero-weight ones
            if k > n:
                raise ArgumentError(f"WeightedRandomSampler: cannot draw {k} samples without "
                                    f"replacement from {n} categories")
            nz = np.flatnonzero(w)
            first = nz[g.choice(len(nz), min(k, len(nz)), False, p=w[nz] / w.sum())]
            rest = g.permutation(np.flatnonzero(w == 0))[:k - len(first)]
            draws = np.concatenate([first, rest])
        yield from draws.tolist()

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler):
    """Lists of `batch_size` indices from `sampler`; the last may be short unless
    `drop_last`."""

    def __init__(self, sampler, batch_size: int, drop_last: bool) -> None:
        if not _positive_int(batch_size):
            raise ValueError("batch_size should be a positive integer value, but got "
                             f"batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler, self.batch_size, self.drop_last = sampler, batch_size, drop_last

    def __iter__(self) -> Iterator[list[int]]:
        it = iter(self.sampler)
        while True:
            batch = list(itertools.islice(it, self.batch_size))
            if not batch or (self.drop_last and len(batch) < self.batch_size):
                return
            yield batch

    def __len__(self) -> int:
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
