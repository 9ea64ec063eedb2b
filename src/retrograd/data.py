"""`rg.data`: the handwritten-digits dataset and a small `DataLoader`.

scikit-learn (the `[train]` extra) is imported only when the digits are
loaded. The loader takes a tuple of equally long arrays or Tensors and yields
tuples of Tensors; shuffling uses its own generator, seeded by `seed` or, when
`seed` is None, drawn from the global one (`rg.manual_seed`).
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np

from . import creation
from .tensor import Tensor

__all__ = ["load_digits", "DataLoader"]


def _sklearn():
    try:
        import sklearn.datasets
        import sklearn.model_selection
    except ImportError as e:
        raise ImportError("rg.data.load_digits needs scikit-learn, which is in the [train] "
                          "extra: pip install 'retrograd[train]'") from e
    return sklearn


def load_digits(test_size: float = 0.2, seed: int = 0) -> tuple[np.ndarray, np.ndarray,
                                                                   np.ndarray, np.ndarray]:
    """The 8x8 handwritten digits (1,797 images), split into train and test sets.

    Returns `(X_train, y_train, X_test, y_test)`: X float32 in [0, 1] of shape
    (n, 64), y int64 in 0..9. The split is stratified by class and depends
    only on `test_size` and `seed`.
    """
    if isinstance(test_size, bool) or not isinstance(test_size, (int, float)):
        raise TypeError(f"test_size must be a fraction in (0, 1) or a count, got {test_size!r}")
    if isinstance(test_size, float) and not 0.0 < test_size < 1.0:
        raise ValueError(f"test_size must be in (0, 1) as a fraction, got {test_size}")
    sk = _sklearn()
    digits = sk.datasets.load_digits()
    X = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.int64)
    if isinstance(test_size, int) and not 10 <= test_size <= len(y) - 10:
        raise ValueError(f"test_size as a count must be between 10 and {len(y) - 10}, got "
                         f"{test_size}")
    X_train, X_test, y_train, y_test = sk.model_selection.train_test_split(
        X, y, test_size=test_size, random_state=seed, stratify=y)
    return (np.ascontiguousarray(X_train), np.ascontiguousarray(y_train),
            np.ascontiguousarray(X_test), np.ascontiguousarray(y_test))


class DataLoader:
    """Mini-batches over a tuple of equally long arrays or Tensors, as tuples of Tensors.

    `shuffle=True` draws a new order every epoch; the same `seed` gives the
    same sequence of orders. `drop_last` drops a final short batch.
    """

    def __init__(self, dataset, batch_size: int = 1, shuffle: bool = False,
                 seed: int | None = None, drop_last: bool = False) -> None:
        if isinstance(dataset, (np.ndarray, Tensor)):
            dataset = (dataset,)
        if not isinstance(dataset, (tuple, list)) or not dataset:
            raise TypeError("DataLoader: dataset must be a tuple of equally long arrays or "
                            f"Tensors, got {type(dataset).__name__}")
        arrays = []
        for k, a in enumerate(dataset):
            arr = a.data if isinstance(a, Tensor) else np.asarray(a)
            if arr.ndim == 0:
                raise ValueError(f"DataLoader: item {k} of the dataset is a scalar; each item "
                                 "needs a first (sample) dimension")
            if arr.dtype.kind not in "biufc":
                raise TypeError(f"DataLoader: item {k} has dtype {arr.dtype}; numbers expected")
            arrays.append(arr)
        lengths = [len(a) for a in arrays]
        if len(set(lengths)) != 1:
            raise ValueError(f"DataLoader: dataset items have different lengths {lengths}")
        if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) \
                or batch_size <= 0:
            raise ValueError(f"DataLoader: batch_size must be a positive integer, got "
                             f"{batch_size!r}")
        self.arrays = arrays
        self.batch_size = int(batch_size)
        self.shuffle = bool(shuffle)
        self.drop_last = bool(drop_last)
        self.seed = seed
        self._rng = np.random.default_rng(seed) if seed is not None else None
        self.n = lengths[0]

    def __len__(self) -> int:
        if self.drop_last:
            return self.n // self.batch_size
        return math.ceil(self.n / self.batch_size)

    def _order(self) -> np.ndarray | None:
        if not self.shuffle:
            return None
        rng = self._rng if self._rng is not None else creation.generator()
        return rng.permutation(self.n)

    def __iter__(self) -> Iterator[tuple[Tensor, ...]]:
        order = self._order()
        bs = self.batch_size
        stop = len(self) * bs
        wrap = Tensor._wrap
        for start in range(0, min(stop, self.n), bs):
            if order is None:
                sl = slice(start, start + bs)
                yield tuple(wrap(a[sl].copy()) for a in self.arrays)
            else:
                idx = order[start:start + bs]
                yield tuple(wrap(a[idx]) for a in self.arrays)
