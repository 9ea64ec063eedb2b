"""`DataLoader`, with `torch.utils.data.DataLoader`'s signature and argument checks.

It reads a map-style dataset through a sampler (sequential, or random with
`shuffle=True`) grouped by a `BatchSampler`, or iterates an `IterableDataset`, and
collates each batch with `default_collate` (`default_convert` when `batch_size=None`
turns batching off). Everything runs in the calling process. With `num_workers > 0`, a
map-style dataset gives the same batches, read in the main process (`worker_init_fn` is
not called). An IterableDataset is read as PyTorch's workers read it: each of
`num_workers` workers iterates its own copy of the dataset with `get_worker_info()`
describing that worker (after `worker_init_fn(worker_id)` ran in its context), batches
its own stream, and the workers take turns batch by batch until each is exhausted, so a
stream split by worker info, or one that is not (each worker then yields it whole),
comes out in PyTorch's order.
`pin_memory` and `timeout` change nothing on the host. Shuffling draws from
`generator=` (a `numpy.random.Generator`) or from the global generator that
`rg.manual_seed` seeds.

(`rg.data.DataLoader` is retrograd's own, simpler loader with a `seed=` and `shard=`.)
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

from .collate import default_collate, default_convert
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, SequentialSampler

__all__ = ["DataLoader", "get_worker_info", "WorkerInfo"]

_FROZEN = ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset",
           "persistent_workers")


class WorkerInfo:
    """What `get_worker_info()` tells a dataset read by a DataLoader worker: `id`,
    `num_workers`, `seed` and the worker's copy of the `dataset`."""

    def __init__(self, id: int, num_workers: int, seed: int, dataset) -> None:  # noqa: A002
        self.id, self.num_workers, self.seed, self.dataset = id, num_workers, seed, dataset

    def __repr__(self) -> str:
        return (f"WorkerInfo(id={self.id}, num_workers={self.num_workers}, "
                f"seed={self.seed}, dataset={self.dataset!r})")


_worker: list = [None]  # the WorkerInfo of the worker whose stream is being read


def get_worker_info() -> WorkerInfo | None:
    """The current worker's WorkerInfo while a DataLoader reads an IterableDataset with
    `num_workers > 0` (see the module docstring); None otherwise."""
    return _worker[0]


@contextmanager
def _as_worker(info: WorkerInfo):
    before, _worker[0] = _worker[0], info
    try:
        yield
    finally:
        _worker[0] = before


class DataLoader:
    """Batches of a dataset, as `torch.utils.data.DataLoader` gives them (see the module
    docstring for what runs in the main process)."""

    _initialized = False

    def __init__(self, dataset, batch_size: int | None = 1, shuffle: bool | None = None,
                 sampler=None, batch_sampler=None, num_workers: int = 0, collate_fn=None,
                 pin_memory: bool = False, drop_last: bool = False, timeout: float = 0,
                 worker_init_fn=None, multiprocessing_context=None, generator=None, *,
                 prefetch_factor: int | None = None, persistent_workers: bool = False,
                 pin_memory_device: str = "", in_order: bool = True) -> None:
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 "
                             "to disable multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in "
                             "multiprocessing; let num_workers > 0, or set prefetch_factor "
                             "to None.")
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        elif prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        if multiprocessing_context is not None and num_workers == 0:
            raise ValueError("multiprocessing_context can only be used with multi-process "
                             f"loading (num_workers > 0), but got num_workers={num_workers}")

        iterable = isinstance(dataset, IterableDataset)
        if iterable:
            if shuffle not in (False, None):
                raise ValueError("DataLoader with IterableDataset: expected unspecified "
                                 f"shuffle option, but got shuffle={shuffle}")
            if sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified "
                                 f"sampler option, but got sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified "
                                 f"batch_sampler option, but got batch_sampler={batch_sampler}")
        else:
            shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, "
                                 "shuffle, sampler, and drop_last")
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually "
                             "exclusive with drop_last")
        if sampler is None and not iterable:
            sampler = (RandomSampler(dataset, generator=generator) if shuffle
                       else SequentialSampler(dataset))
        if batch_size is not None and batch_sampler is None and not iterable:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.dataset, self.batch_size, self.drop_last = dataset, batch_size, drop_last
        self.sampler, self.batch_sampler, self.generator = sampler, batch_sampler, generator
        self.num_workers, self.prefetch_factor = num_workers, prefetch_factor
        self.pin_memory, self.pin_memory_device = pin_memory, pin_memory_device
        self.timeout, self.worker_init_fn = timeout, worker_init_fn
        self.multiprocessing_context, self.in_order = multiprocessing_context, in_order
        self.persistent_workers = persistent_workers
        self._iterable = iterable
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self._initialized = True

    def __setattr__(self, name: str, value) -> None:
        if self._initialized and name in _FROZEN:
            raise ValueError(f"{name} attribute should not be set after "
                             f"{type(self).__name__} is initialized")
        super().__setattr__(name, value)

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None or (self._iterable and self.batch_size is not None)

    def __len__(self) -> int:
        if self._iterable:
            n = len(self.dataset)
            if self.batch_size is None:
                return n
            return n // self.batch_size if self.drop_last else math.ceil(n / self.batch_size)
        return len(self.batch_sampler if self.batch_sampler is not None else self.sampler)

    def __iter__(self) -> Iterator:
        if self._iterable:
            return self._iter_stream()
        return self._iter_map()

    def _iter_map(self) -> Iterator:
        ds, collate = self.dataset, self.collate_fn
        if self.batch_sampler is None:
            for i in self.sampler:
                yield collate(ds[i])
            return
        many = getattr(ds, "__getitems__", None)
        for idx in self.batch_sampler:
            yield collate(many(idx) if many is not None else [ds[i] for i in idx])

    def _iter_stream(self) -> Iterator:
        if self.num_workers == 0:
            yield from self._batches(iter(self.dataset))
            return
        workers = []
        base = int(np.random.default_rng().integers(2 ** 62))
        for k in range(self.num_workers):
            try:  # each worker holds its own copy, as a forked or spawned one does
                ds = copy.deepcopy(self.dataset)
            except Exception:  # noqa: BLE001 - not copyable: the workers share it
                ds = self.dataset
            info = WorkerInfo(k, self.num_workers, base + k, ds)
            with _as_worker(info):
                if self.worker_init_fn is not None:
                    self.worker_init_fn(k)
                workers.append((info, self._batches(iter(ds))))
        while workers:  # round robin over the workers still running, as PyTorch's
            for entry in list(workers):
                info, batches = entry
                with _as_worker(info):
                    batch = next(batches, _END)
                if batch is _END:
                    workers.remove(entry)
                else:
                    yield batch

    def _batches(self, it: Iterator) -> Iterator:
        collate = self.collate_fn
        if self.batch_size is None:
            for sample in it:
                yield collate(sample)
            return
        while True:
            batch = []
            for sample in it:
                batch.append(sample)
                if len(batch) == self.batch_size:
                    break
            if not batch or (self.drop_last and len(batch) < self.batch_size):
                return
            yield collate(batch)
            if len(batch) < self.batch_size:
                return


_END = object()
