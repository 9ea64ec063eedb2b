"""Datasets, as in `torch.utils.data`: the map-style `Dataset` (`__getitem__` and
`__len__`), the `IterableDataset` (`__iter__`), and the ones built from others:
`TensorDataset`, `Subset`, `ConcatDataset`, `ChainDataset`, `StackDataset`, and
`random_split`."""

from __future__ import annotations

import bisect
import math
import warnings
from collections.abc import Sequence

from ._random import rng

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "Subset", "ConcatDataset",
           "ChainDataset", "StackDataset", "random_split"]


class Dataset:
    """A map-style dataset: subclasses define `__getitem__(index)` (and usually `__len__`).
    `a + b` concatenates two datasets."""

    def __getitem__(self, index):
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other: Dataset) -> ConcatDataset:
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """A dataset that is a stream: subclasses define `__iter__`. `a + b` chains two."""

    def __iter__(self):
        raise NotImplementedError("Subclasses of IterableDataset should implement __iter__.")

    def __add__(self, other: Dataset) -> ChainDataset:
        return ChainDataset([self, other])


def _first_dim(t) -> int:
    shape = t.shape
    if len(shape) == 0:
        raise IndexError("TensorDataset: a 0-d tensor has no first dimension to index")
    return shape[0]


class TensorDataset(Dataset):
    """Tensors of the same first size; item `i` is the tuple of their `i`-th rows."""

    def __init__(self, *tensors) -> None:
        sizes = [_first_dim(t) for t in tensors]
        if any(s != sizes[0] for s in sizes):
            raise AssertionError(f"Size mismatch between tensors: first dimensions {sizes}")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return _first_dim(self.tensors[0])


class StackDataset(Dataset):
    """Datasets of one length side by side: item `i` is the tuple (or, given keywords,
    the dict) of their `i`-th items."""

    def __init__(self, *args, **kwargs) -> None:
        if args and kwargs:
            raise ValueError("Supported either ``tuple``- (via ``args``) or``dict``- (via "
                             "``kwargs``) like input/output, but both types are given.")
        parts = list(args) or list(kwargs.values())
        if not parts:
            raise ValueError("At least one dataset should be passed")
        self._length = len(parts[0])
        if any(len(d) != self._length for d in parts):
            raise ValueError(f"Size mismatch between datasets: {[len(d) for d in parts]}")
        self.datasets = args if args else kwargs

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {k: d[index] for k, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)

    def __getitems__(self, indices: list) -> list:
        """The items at `indices`, fetched batch-wise from each dataset that has
        `__getitems__` (as torch's, which the DataLoader calls for a whole batch)."""
        names = list(self.datasets) if isinstance(self.datasets, dict) else None
        parts = list(self.datasets.values()) if names is not None else list(self.datasets)
        columns = [_items(d, indices) for d in parts]
        if names is not None:
            return [dict(zip(names, row)) for row in zip(*columns)]
        return [tuple(row) for row in zip(*columns)]

    def __len__(self) -> int:
        return self._length


class ConcatDataset(Dataset):
    """Map-style datasets one after another; `cumulative_sizes[k]` is where dataset k ends."""

    def __init__(self, datasets) -> None:
        self.datasets = list(datasets)
        if not self.datasets:
            raise AssertionError("datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise AssertionError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = []
        total = 0
        for d in self.datasets:
            total += len(d)
            self.cumulative_sizes.append(total)

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, index):
        if index < 0:
            if -index > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            index += len(self)
        k = bisect.bisect_right(self.cumulative_sizes, index)
        start = self.cumulative_sizes[k - 1] if k else 0
        return self.datasets[k][index - start]


class ChainDataset(IterableDataset):
    """Iterable datasets one after another."""

    def __init__(self, datasets) -> None:
        self.datasets = datasets

    def __iter__(self):
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            yield from d

    def __len__(self) -> int:
        return sum(len(d) for d in self.datasets)


class Subset(Dataset):
    """The items of `dataset` at `indices`, in that order."""

    def __init__(self, dataset, indices: Sequence[int]) -> None:
        self.dataset, self.indices = dataset, indices

    def __getitem__(self, index):
        if isinstance(index, list):
            return self.dataset[[self.indices[i] for i in index]]
        return self.dataset[self.indices[index]]

    def __getitems__(self, indices: list) -> list:
        """The items at `indices`: the dataset's own `__getitems__` for a whole batch
        where it has one, as torch's Subset (the DataLoader calls this per batch)."""
        return _items(self.dataset, [self.indices[i] for i in indices])

    def __len__(self) -> int:
        return len(self.indices)


def _items(dataset, indices: list) -> list:
    """`dataset`'s items at `indices`, batch-wise if it has a `__getitems__`."""
    many = getattr(dataset, "__getitems__", None)
    if not callable(many):
        return [dataset[i] for i in indices]
    items = many(indices)
    if len(items) != len(indices):
        raise ValueError(f"Nested dataset's output size mismatch. Expected {len(indices)}, "
                         f"got {len(items)}")
    return items


def _lengths(n: int, lengths: Sequence) -> list[int]:
    """Fractions summing to 1 become counts as PyTorch makes them: floors, then the
    remainder handed out one by one from the first."""
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        counts = []
        for i, frac in enumerate(lengths):
            if frac < 0 or frac > 1:
                raise ValueError(f"Fraction at index {i} is not between 0 and 1")
            counts.append(int(math.floor(n * frac)))
        for i in range(n - sum(counts)):
            counts[i % len(counts)] += 1
        for i, c in enumerate(counts):
            if c == 0:
                warnings.warn(f"Length of split at index {i} is 0. This might result in an "
                              "empty dataset.", stacklevel=3)
        return counts
    return [int(c) for c in lengths]


def random_split(dataset, lengths: Sequence, generator=None) -> list[Subset]:
    """Split `dataset` into non-overlapping random `Subset`s of the given lengths (counts
    summing to `len(dataset)`, or fractions summing to 1)."""
    counts = _lengths(len(dataset), lengths)
    if sum(counts) != len(dataset):
        raise ValueError("Sum of input lengths does not equal the length of the input "
                         f"dataset! (lengths {counts}, dataset length {len(dataset)})")
    order = rng(generator).permutation(sum(counts)).tolist()
    out, start = [], 0
    for c in counts:
        out.append(Subset(dataset, order[start:start + c]))
        start += c
    return out
