"""`rg.data`: the handwritten digits, the user's own arrays, and a `DataLoader`.

scikit-learn (the `[train]` extra) is imported only when the digits are
loaded. `load_arrays` reads an `.npz` or MNIST's IDX files with NumPy alone.
The loader takes a tuple of equally long arrays or Tensors, a list of
`(x, y)` pairs, or any object with `__len__` and `__getitem__` returning
tuples (a PyTorch-style Dataset), and yields tuples of Tensors; shuffling uses
its own generator, seeded by `seed` or, when `seed` is None, drawn from the
global one (`rg.manual_seed`). With `shard=(rank, size)` each rank of a
distributed job takes its contiguous share of every global batch.
"""

from __future__ import annotations

import gzip
import math
import struct
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from . import creation
from .primitive import ArgumentError
from .tensor import Tensor

__all__ = ["load_digits", "load_arrays", "read_idx", "DataLoader"]


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
        raise ArgumentError(f"test_size must be in (0, 1) as a fraction, got {test_size}")
    sk = _sklearn()
    digits = sk.datasets.load_digits()
    X = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.int64)
    if isinstance(test_size, int) and not 10 <= test_size <= len(y) - 10:
        raise ArgumentError(f"test_size as a count must be between 10 and {len(y) - 10}, got "
                            f"{test_size}")
    X_train, X_test, y_train, y_test = sk.model_selection.train_test_split(
        X, y, test_size=test_size, random_state=seed, stratify=y)
    return (np.ascontiguousarray(X_train), np.ascontiguousarray(y_train),
            np.ascontiguousarray(X_test), np.ascontiguousarray(y_test))


class DataLoader:
    """Mini-batches of a dataset, as tuples of Tensors.

    `dataset` is a tuple of equally long arrays or Tensors (the columns), a
    list of `(x, y, ...)` tuples, or any object with `__len__` and
    `__getitem__` returning such tuples (items are stacked per position).
    `shuffle=True` draws a new order every epoch; the same `seed` gives the
    same sequence of orders. `drop_last` drops a final short batch.

    `shard=(rank, size)` is for data-parallel training: `batch_size` is then
    the *global* batch (all ranks together) and must be divisible by `size`;
    every rank draws the same order (so `shuffle` needs a `seed`) and takes
    rows `[rank * b, (rank + 1) * b)` of each global batch, `b = batch_size //
    size`, so the ranks' batches of one step together are exactly the
    one-process batch. A final short batch is split as evenly as possible
    (earlier ranks get one row more); if it has fewer rows than ranks it is
    dropped on every rank, so every rank takes the same number of steps.
    """

    def __init__(self, dataset, batch_size: int = 1, shuffle: bool = False,
                 seed: int | None = None, drop_last: bool = False,
                 shard: tuple[int, int] | None = None) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) \
                or batch_size <= 0:
            raise ArgumentError(f"DataLoader: batch_size must be a positive integer, got "
                                f"{batch_size!r}")
        self.arrays: list[np.ndarray] | None = None
        self.dataset = None
        if isinstance(dataset, (np.ndarray, Tensor)):
            dataset = (dataset,)
        if isinstance(dataset, list) and dataset and all(isinstance(d, tuple) for d in dataset):
            self.arrays = list(_collate(dataset, range(len(dataset))))
            self.n = len(dataset)
        elif isinstance(dataset, (tuple, list)):
            if not dataset:
                raise TypeError("DataLoader: the dataset is empty")
            self.arrays = _columns(dataset)
            self.n = len(self.arrays[0])
        elif hasattr(dataset, "__len__") and hasattr(dataset, "__getitem__") \
                and not isinstance(dataset, (str, bytes, dict)):
            self.dataset = dataset
            self.n = len(dataset)
            if self.n:
                _collate([dataset[0]], [0])  # fail here, not in the first batch
        else:
            raise TypeError("DataLoader: dataset must be a tuple of equally long arrays or "
                            "Tensors, a list of (x, y) tuples, or an object with __len__ and "
                            f"__getitem__, got {type(dataset).__name__}")
        self.batch_size = int(batch_size)
        self.shuffle = bool(shuffle)
        self.drop_last = bool(drop_last)
        self.seed = seed
        self.rank, self.world_size = _check_shard(shard, self.batch_size, self.shuffle, seed)
        self.shard = None if shard is None else (self.rank, self.world_size)
        self._rng = np.random.default_rng(seed) if seed is not None else None

    def __len__(self) -> int:
        full, rest = divmod(self.n, self.batch_size)
        if self.drop_last or rest < self.world_size:
            return full
        return full + 1

    def _order(self) -> np.ndarray | None:
        if not self.shuffle:
            return None
        rng = self._rng if self._rng is not None else creation.generator()
        return rng.permutation(self.n)

    def _rows(self, start: int) -> tuple[int, int]:
        """This rank's [lo, hi) of the global batch that starts at `start`."""
        length = min(self.batch_size, self.n - start)
        q, rem = divmod(length, self.world_size)
        lo = start + self.rank * q + min(self.rank, rem)
        return lo, lo + q + (self.rank < rem)

    def __iter__(self) -> Iterator[tuple[Tensor, ...]]:
        order = self._order()
        bs = self.batch_size
        wrap = Tensor._wrap
        for step in range(len(self)):
            lo, hi = self._rows(step * bs)
            if self.dataset is not None:
                idx = range(lo, hi) if order is None else order[lo:hi]
                yield tuple(wrap(a) for a in _collate([self.dataset[int(i)] for i in idx], idx))
            elif order is None:
                yield tuple(wrap(a[lo:hi].copy()) for a in self.arrays)
            else:
                idx = order[lo:hi]
                yield tuple(wrap(a[idx]) for a in self.arrays)


def _columns(dataset) -> list[np.ndarray]:
    arrays = []
    for k, a in enumerate(dataset):
        arr = a.data if isinstance(a, Tensor) else np.asarray(a)
        if arr.ndim == 0:
            raise ArgumentError(f"DataLoader: item {k} of the dataset is a scalar; each item "
                                "needs a first (sample) dimension")
        if arr.dtype.kind not in "biufc":
            raise TypeError(f"DataLoader: item {k} has dtype {arr.dtype}; numbers expected")
        arrays.append(arr)
    lengths = [len(a) for a in arrays]
    if len(set(lengths)) != 1:
        raise ArgumentError(f"DataLoader: dataset items have different lengths {lengths}")
    return arrays


def _collate(items: list, indices) -> tuple[np.ndarray, ...]:
    """Stack sample tuples into one array per position (a lone value counts as a 1-tuple)."""
    items = [it if isinstance(it, tuple) else (it,) for it in items]
    if not items:
        raise ArgumentError("DataLoader: an empty batch")
    width = len(items[0])
    columns = []
    for pos in range(width):
        values = []
        for i, it in zip(indices, items):
            if len(it) != width:
                raise ArgumentError(f"DataLoader: sample {i} has {len(it)} fields, sample "
                                    f"{indices[0]} has {width}")
            v = it[pos]
            arr = v.data if isinstance(v, Tensor) else np.asarray(v)
            if arr.dtype.kind not in "biuf":
                raise TypeError(f"DataLoader: field {pos} of sample {i} has dtype {arr.dtype}; "
                                "numbers expected")
            if values and arr.shape != values[0].shape:
                raise ArgumentError(f"DataLoader: field {pos} of sample {i} has shape {arr.shape}, "
                                    f"sample {indices[0]}'s has {values[0].shape}")
            values.append(arr)
        columns.append(np.stack(values))
    return tuple(columns)


def _check_shard(shard, batch_size: int, shuffle: bool, seed) -> tuple[int, int]:
    if shard is None:
        return 0, 1
    ok = isinstance(shard, tuple) and len(shard) == 2 and all(
        isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in shard)
    if not ok or not 0 <= shard[0] < shard[1]:
        raise ArgumentError(f"DataLoader: shard must be (rank, size) with 0 <= rank < size, got "
                            f"{shard!r}")
    rank, size = int(shard[0]), int(shard[1])
    if batch_size % size:
        raise ArgumentError(f"DataLoader: with shard=({rank}, {size}), batch_size is the global "
                            f"batch of all {size} ranks and must be divisible by {size}; got "
                            f"batch_size={batch_size}")
    if shuffle and seed is None and size > 1:
        raise ArgumentError("DataLoader: shuffle=True with shard needs seed= (the same on every "
                            "rank) so that all ranks draw the same order")
    return rank, size


# ------------------------------------------------------------ the user's own data

_IDX_DTYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}
_IDX_FILES = (("train", "images", "idx3"), ("train", "labels", "idx1"),
              ("t10k", "images", "idx3"), ("t10k", "labels", "idx1"))


def read_idx(path) -> np.ndarray:
    """One IDX file (MNIST's format), gzipped or not, as a native-endian NumPy array."""
    path = Path(path)
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as e:
            raise ArgumentError(f"{path}: a corrupt gzip file ({e})") from None
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] not in _IDX_DTYPES:
        raise ArgumentError(f"{path}: not an IDX file (its first bytes are {raw[:4].hex(' ')}; IDX "
                            "starts with 00 00, a type code and the number of dimensions)")
    ndim = raw[3]
    header = 4 + 4 * ndim
    if len(raw) < header:
        raise ArgumentError(f"{path}: truncated IDX header ({len(raw)} bytes for {ndim} "
                            f"dimensions)")
    dims = struct.unpack(f">{ndim}I", raw[4:header])
    dtype = np.dtype(_IDX_DTYPES[raw[2]])
    expected = math.prod(dims) * dtype.itemsize
    if len(raw) - header != expected:
        raise ArgumentError(f"{path}: the header says shape {dims} of {dtype.newbyteorder('=')} "
                            f"({expected} bytes of data) but the file holds {len(raw) - header}")
    arr = np.frombuffer(raw, dtype=dtype, count=math.prod(dims), offset=header)
    return arr.reshape(dims).astype(dtype.newbyteorder("="))


def _idx_dir(path: Path) -> list[tuple[str, np.ndarray]]:
    found = []
    for split, kind, idx in _IDX_FILES:
        names = [f"{split}-{kind}-{idx}-ubyte", f"{split}-{kind}.{idx}-ubyte"]
        candidates = [path / (n + gz) for n in names for gz in ("", ".gz")]
        hit = next((c for c in candidates if c.is_file()), None)
        if hit is None:
            present = sorted(p.name for p in path.iterdir())[:8]
            raise FileNotFoundError(
                f"{path}: no {names[0]}[.gz] in this directory; a data directory holds MNIST's "
                f"four IDX files (train-images-idx3-ubyte, train-labels-idx1-ubyte, "
                f"t10k-images-idx3-ubyte, t10k-labels-idx1-ubyte, gzipped or not); found "
                f"{present or 'nothing'}")
        found.append((str(hit), read_idx(hit)))
    return found


def _npz(path: Path, test_size, seed) -> list[tuple[str, np.ndarray]]:
    with open(path, "rb") as f:
        if f.read(4) != b"PK\x03\x04":
            raise ArgumentError(f"{path}: not a readable .npz file (an .npz is a zip archive of "
                                "arrays, as np.savez writes; a directory of MNIST IDX files "
                                "also works)")
    try:
        with np.load(path, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
    except ValueError as e:
        raise ArgumentError(f"{path}: could not read it as .npz without pickle ({e})") from None
    except (OSError, zipfile.BadZipFile, EOFError) as e:
        raise ArgumentError(f"{path}: not a readable .npz file ({e})") from None
    keys = {k.lower(): k for k in arrays}
    split_keys = ("x_train", "y_train", "x_test", "y_test")
    if any(k in keys for k in split_keys):
        missing = [k for k in split_keys if k not in keys]
        if missing:
            raise ArgumentError(f"{path}: has {sorted(arrays)} but lacks "
                                f"{[k.replace('x', 'X', 1) for k in missing]}; an .npz holds "
                                "X_train, y_train, X_test, y_test (or X and y to be split)")
        return [(f"{path}['{keys[k]}']", arrays[keys[k]]) for k in split_keys]
    if "x" not in keys or "y" not in keys:
        raise ArgumentError(f"{path}: holds {sorted(arrays)}; expected X_train, y_train, X_test, "
                            "y_test, or X and y (split with test_size)")
    X, y = arrays[keys["x"]], arrays[keys["y"]]
    xname, yname = f"{path}['{keys['x']}']", f"{path}['{keys['y']}']"
    _check_pair(X, y, xname, yname)
    n = len(X)
    n_test = _test_count(test_size, n)
    order = np.random.default_rng(seed).permutation(n)
    test, train = order[:n_test], order[n_test:]
    return [(xname + " (train split)", X[train]), (yname + " (train split)", y[train]),
            (xname + " (test split)", X[test]), (yname + " (test split)", y[test])]


def _test_count(test_size, n: int) -> int:
    if isinstance(test_size, bool) or not isinstance(test_size, (int, float)):
        raise TypeError(f"test_size must be a fraction in (0, 1) or a count, got {test_size!r}")
    if isinstance(test_size, float):
        if not 0.0 < test_size < 1.0:
            raise ArgumentError(f"test_size must be in (0, 1) as a fraction, got {test_size}")
        count = math.ceil(test_size * n)
    else:
        count = test_size
    if not 1 <= count <= n - 1:
        raise ArgumentError(f"test_size={test_size!r} leaves {n - count} of {n} samples for "
                            "training; both splits need at least one")
    return count


def _check_pair(X: np.ndarray, y: np.ndarray, xname: str, yname: str) -> np.ndarray:
    """Check one (X, y) pair; returns y as a flat array."""
    if X.dtype.kind not in "biuf":
        raise ArgumentError(f"{xname}: features must be numbers, got dtype {X.dtype}")
    if X.ndim < 2:
        raise ArgumentError(f"{xname}: features need shape (samples, ...) with at least 2 "
                            f"dimensions, got shape {X.shape}")
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.ndim != 1:
        raise ArgumentError(f"{yname}: labels must be one class index per sample, shape (n,), got "
                            f"shape {y.shape}")
    if len(X) != len(y):
        raise ArgumentError(f"{xname} has {len(X)} samples (shape {X.shape}) but {yname} has "
                            f"{len(y)} labels (shape {y.shape})")
    if len(y) == 0:
        raise ArgumentError(f"{xname}: no samples (shape {X.shape})")
    if X.dtype.kind == "f" and not np.isfinite(X).all():
        raise ArgumentError(f"{xname}: features contain NaN or infinity")
    if y.dtype.kind == "f":
        if not (np.isfinite(y).all() and (y == np.round(y)).all()):
            raise ArgumentError(f"{yname}: labels must be whole class indices, got non-integer "
                                f"values of dtype {y.dtype}")
    elif y.dtype.kind not in "biu":
        raise ArgumentError(f"{yname}: labels must be integers, got dtype {y.dtype}")
    if y.min() < 0:
        raise ArgumentError(f"{yname}: labels must be class indices >= 0, found {y.min()}")
    return y


def load_arrays(path, test_size: float = 0.2, seed: int = 0) -> tuple[
        np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The user's own classification data as `(X_train, y_train, X_test, y_test)`.

    `path` is an `.npz` holding `X_train, y_train, X_test, y_test` (any case,
    so Keras' `x_train` works) or `X, y`, which are split at random (not
    stratified) by `test_size` (a fraction or a count) and `seed`; or a
    directory with MNIST's IDX files (`train-images-idx3-ubyte`,
    `train-labels-idx1-ubyte`, `t10k-images-idx3-ubyte`,
    `t10k-labels-idx1-ubyte`, each gzipped or not). The .npz is read without
    pickle. Shapes, label dtypes and ranges are checked, with errors naming
    the file and the shapes. X comes back float32 in its stored shape (MNIST:
    (n, 28, 28)), uint8 data scaled to [0, 1]; y int64 class indices.
    """
    path = Path(path)
    if path.is_dir():
        parts = _idx_dir(path)
    elif path.is_file():
        parts = _npz(path, test_size, seed)
    else:
        raise FileNotFoundError(f"{path}: no such file or directory (expected an .npz file or a "
                                "directory of MNIST IDX files)")
    (xn, X_train), (yn, y_train), (xtn, X_test), (ytn, y_test) = parts
    y_train = _check_pair(X_train, y_train, xn, yn)
    y_test = _check_pair(X_test, y_test, xtn, ytn)
    if X_train.shape[1:] != X_test.shape[1:]:
        raise ArgumentError(f"{xn} has samples of shape {X_train.shape[1:]} (shape "
                            f"{X_train.shape}) but {xtn} has {X_test.shape[1:]} (shape "
                            f"{X_test.shape})")
    if y_test.max() > y_train.max():
        raise ArgumentError(f"{ytn} has label {y_test.max()} but the labels of {yn} only go up "
                            f"to {y_train.max()}")

    def features(X):
        if X.dtype == np.uint8:
            return (X / np.float32(255)).astype(np.float32)
        return np.ascontiguousarray(X, dtype=np.float32)

    return (features(X_train), np.ascontiguousarray(y_train, dtype=np.int64),
            features(X_test), np.ascontiguousarray(y_test, dtype=np.int64))
