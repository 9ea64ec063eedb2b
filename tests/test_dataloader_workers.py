"""rg.utils.data.DataLoader with num_workers > 0 on an IterableDataset, against torch's
real worker processes: the stream split by get_worker_info() (the documented pattern, in
__iter__ and in worker_init_fn), a stream not split (each worker yields it whole), batch
sizes, drop_last, batch_size=None, and the order the batches arrive in."""

import math

import numpy as np
import pytest
import torch.utils.data as TD

import retrograd as rg
import retrograd.utils.data as RD


def _make(lib_data, kind):
    class Split(lib_data.IterableDataset):
        """The torch docs' example: each worker takes its share of [start, end)."""

        def __init__(self, start, end):
            self.start, self.end = start, end

        def __iter__(self):
            info = lib_data.get_worker_info()
            if info is None:
                lo, hi = self.start, self.end
            else:
                per = int(math.ceil((self.end - self.start) / float(info.num_workers)))
                lo = self.start + info.id * per
                hi = min(lo + per, self.end)
            return iter(range(lo, hi))

    class Whole(lib_data.IterableDataset):
        def __iter__(self):
            return iter(range(7))

    class ByInit(lib_data.IterableDataset):
        def __init__(self):
            self.start, self.end = 3, 20

        def __iter__(self):
            return iter(range(self.start, self.end))

    return {"split": lambda: Split(3, 20), "whole": Whole, "init": ByInit}[kind]()


def _init_fn(lib_data):
    def init(worker_id):
        info = lib_data.get_worker_info()
        ds = info.dataset
        per = int(math.ceil((ds.end - ds.start) / float(info.num_workers)))
        ds.start = ds.start + info.id * per
        ds.end = min(ds.start + per, ds.end)
    return init


def _batches(lib_data, kind, **kw):
    if kind == "init":
        kw["worker_init_fn"] = _init_fn(lib_data)
    loader = lib_data.DataLoader(_make(lib_data, kind), **kw)
    out = []
    for b in loader:
        out.append(np.asarray(b.numpy() if hasattr(b, "numpy") else b).tolist())
    return out


@pytest.mark.parametrize("kind,workers", [(k, w) for k in ("split", "whole", "init")
                                          for w in (0, 2, 3) if (k, w) != ("init", 0)])
@pytest.mark.parametrize("kw", [{"batch_size": 3}, {"batch_size": 3, "drop_last": True},
                                {"batch_size": None}, {"batch_size": 4}])
def test_iterable_dataset_batches_match_torch_workers(kind, workers, kw):
    want = _batches(TD, kind, num_workers=workers, multiprocessing_context="fork", **kw) \
        if workers else _batches(TD, kind, **kw)
    got = _batches(RD, kind, num_workers=workers, **kw)
    assert got == want


def test_worker_info_is_none_outside_the_workers():
    seen = []

    class Peek(RD.IterableDataset):
        def __iter__(self):
            info = RD.get_worker_info()
            seen.append((info.id, info.num_workers, info.dataset is self, self is not ds))
            yield from range(2)

    ds = Peek()
    assert [b.tolist() for b in RD.DataLoader(ds, batch_size=2, num_workers=2)] == [[0, 1]] * 2
    assert RD.get_worker_info() is None
    assert sorted(seen) == [(0, 2, True, True), (1, 2, True, True)]  # each its own copy
    assert isinstance(rg.utils.data.DataLoader(ds, num_workers=1), RD.DataLoader)
