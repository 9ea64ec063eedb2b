"""rg.utils.data against torch.utils.data side by side: datasets, samplers, collation and
DataLoader give the same batches (values, shapes, dtypes, container types) for the same
deterministic pipeline, raise the same kinds of errors for the same misuse, and random
orders have PyTorch's properties (every index once per epoch, reproducible under a seed)."""

from __future__ import annotations

import collections

import numpy as np
import pytest
import torch
import torch.utils.data as tud

import retrograd as rg
import retrograd.utils.data as rud
from retrograd.utils.data import DataLoader, TensorDataset

Point = collections.namedtuple("Point", "x y")


def same(r, t) -> None:
    """`r` (from retrograd) equals `t` (from torch): types, dtypes, shapes and values."""
    if isinstance(t, torch.Tensor):
        assert isinstance(r, rg.Tensor), (type(r), t)
        assert str(r.dtype) == str(t.dtype).removeprefix("torch."), (r.dtype, t.dtype)
        assert r.shape == tuple(t.shape)
        np.testing.assert_array_equal(r.numpy(), t.numpy())
    elif isinstance(t, dict):
        assert type(r) is type(t) and list(r) == list(t)
        for k in t:
            same(r[k], t[k])
    elif isinstance(t, (tuple, list)):
        assert type(r).__name__ == type(t).__name__ and len(r) == len(t), (r, t)
        for a, b in zip(r, t):
            same(a, b)
    else:
        assert type(r) is type(t) and r == t, (r, t)


def both(make):
    """`make(lib)` for lib = (rg, rud) and (torch, tud)."""
    return make(rg, rud), make(torch, tud)


def arrays(n=10):
    rng = np.random.default_rng(0)
    return rng.standard_normal((n, 3)).astype(np.float32), rng.integers(0, 5, n)


# ---------------------------------------------------------------- datasets

def test_tensor_dataset_items_and_length():
    x, y = arrays()
    r, t = both(lambda lib, m: m.TensorDataset(lib.tensor(x), lib.tensor(y)))
    assert len(r) == len(t) == 10
    for i in (0, 3, -1):
        same(r[i], t[i])


def test_tensor_dataset_size_mismatch_names_the_sizes():
    with pytest.raises(AssertionError):
        tud.TensorDataset(torch.zeros(3), torch.zeros(4))
    with pytest.raises(AssertionError, match=r"\[3, 4\]"):
        TensorDataset(rg.zeros(3), rg.zeros(4))


def test_subset_concat_and_add():
    x, y = arrays()
    r, t = both(lambda lib, m: m.TensorDataset(lib.tensor(x), lib.tensor(y)))
    rs, ts = rud.Subset(r, [4, 1, 7]), tud.Subset(t, [4, 1, 7])
    assert len(rs) == len(ts)
    same(rs[1], ts[1])
    rc, tc = r + rs, t + ts
    assert isinstance(rc, rud.ConcatDataset) and rc.cumulative_sizes == tc.cumulative_sizes
    for i in (0, 9, 10, 12, -1, -13):
        same(rc[i], tc[i])
    for lib in (tud, rud):
        with pytest.raises(ValueError):
            lib.ConcatDataset([lib.Subset(list(range(3)), [0, 1])])[-3]
        with pytest.raises(AssertionError):
            lib.ConcatDataset([])


def stream_class(base):
    """An IterableDataset of `base`'s library yielding n dict samples."""
    class Stream(base):
        def __init__(self, n, lib):
            self.n, self.lib = n, lib

        def __iter__(self):
            for i in range(self.n):
                yield {"x": self.lib.full((2,), float(i)), "i": i}

        def __len__(self):
            return self.n
    return Stream


Stream, RStream = stream_class(tud.IterableDataset), stream_class(rud.IterableDataset)


def test_chain_dataset_and_iterable_add():
    r = list(RStream(2, rg) + RStream(3, rg))
    t = list(Stream(2, torch) + Stream(3, torch))
    same(r, t)


# ---------------------------------------------------------------- collation

SAMPLES = [
    [1, 2, 3],
    [1.5, 2.5],
    [True, False],
    ["a", "b"],
    [np.float32(1.5), np.float32(2)],
    [np.int32(1), np.int32(2)],
    [np.array([1.0, 2.0]), np.array([3.0, 4.0])],
    [np.array(1.5), np.array(2.5)],
    [(1, "a", 2.0), (2, "b", 3.0)],
    [[1, 2], [3, 4]],
    [{"a": 1, "b": [1.0, 2.0]}, {"a": 2, "b": [3.0, 4.0]}],
    [Point(1, 2.0), Point(3, 4.0)],
    [collections.OrderedDict(k=np.arange(3)), collections.OrderedDict(k=np.arange(3))],
]


@pytest.mark.parametrize("k", range(len(SAMPLES)))
def test_default_collate_matches_torch(k):
    same(rud.default_collate(SAMPLES[k]), tud.default_collate(SAMPLES[k]))


def test_default_collate_stacks_tensors():
    rng = np.random.default_rng(1)
    xs = [rng.standard_normal((2, 3)) for _ in range(4)]
    same(rud.default_collate([rg.tensor(x) for x in xs]),
         tud.default_collate([torch.tensor(x) for x in xs]))
    same(rud.default_collate([(rg.tensor(x), i) for i, x in enumerate(xs)]),
         tud.default_collate([(torch.tensor(x), i) for i, x in enumerate(xs)]))


@pytest.mark.parametrize(("batch", "error"), [
    ([[1, 2], [3]], RuntimeError),
    ([object(), object()], TypeError),
    ([np.array(["a"]), np.array(["b"])], TypeError),
])
def test_default_collate_errors_match_torch(batch, error):
    with pytest.raises(error):
        tud.default_collate(batch)
    with pytest.raises(error):
        rud.default_collate(batch)


def test_default_collate_unequal_tensors_raise_runtime_error():
    with pytest.raises(RuntimeError):
        tud.default_collate([torch.zeros(2), torch.zeros(3)])
    with pytest.raises(RuntimeError, match="equal size"):
        rud.default_collate([rg.zeros(2), rg.zeros(3)])


@pytest.mark.parametrize("data", [np.array([1.0, 2.0]), np.float32(3), 3, "s",
                                  (np.arange(2), 1.5), [np.arange(2)], {"a": np.arange(2)},
                                  Point(np.arange(2), 1), np.array(["a"])])
def test_default_convert_matches_torch(data):
    r, t = rud.default_convert(data), tud.default_convert(data)
    if isinstance(t, np.ndarray):
        assert r is data and t is data
    else:
        same(r, t)


# ---------------------------------------------------------------- the loader, deterministic

@pytest.mark.parametrize(("batch_size", "drop_last"), [(1, False), (3, False), (3, True),
                                                        (10, False), (4, True)])
def test_loader_batches_equal_torch(batch_size, drop_last):
    x, y = arrays()
    r, t = both(lambda lib, m: m.DataLoader(m.TensorDataset(lib.tensor(x), lib.tensor(y)),
                                           batch_size=batch_size, drop_last=drop_last))
    assert len(r) == len(t)
    rb, tb = list(r), list(t)
    assert len(rb) == len(tb) == len(t)
    same(rb, tb)


def test_loader_over_a_plain_list_of_samples_and_custom_collate():
    data = [{"x": np.full(2, i, np.float32), "label": i, "name": str(i)} for i in range(7)]
    r, t = DataLoader(data, batch_size=3), tud.DataLoader(data, batch_size=3)
    same(list(r), list(t))
    r = DataLoader(data, batch_size=2, collate_fn=lambda b: [s["label"] for s in b])
    t = tud.DataLoader(data, batch_size=2, collate_fn=lambda b: [s["label"] for s in b])
    same(list(r), list(t))


def test_batch_size_none_converts_without_batching():
    x, y = arrays(4)
    data = [(x[i], int(y[i])) for i in range(4)]
    r, t = DataLoader(data, batch_size=None), tud.DataLoader(data, batch_size=None)
    assert len(r) == len(t) == 4
    same(list(r), list(t))


def test_batch_sampler_and_sampler_arguments():
    x, y = arrays()
    bs = [[0, 1], [5], [2, 3, 4]]
    r, t = both(lambda lib, m: m.DataLoader(m.TensorDataset(lib.tensor(x), lib.tensor(y)),
                                           batch_sampler=bs))
    assert len(r) == len(t)
    same(list(r), list(t))
    order = [9, 0, 4, 4]
    r, t = both(lambda lib, m: m.DataLoader(m.TensorDataset(lib.tensor(x)), sampler=order,
                                           batch_size=3))
    assert len(r) == len(t)
    same(list(r), list(t))


@pytest.mark.parametrize(("batch_size", "drop_last"), [(2, False), (2, True), (None, False)])
def test_iterable_dataset_batches_equal_torch(batch_size, drop_last):
    r = DataLoader(RStream(5, rg), batch_size=batch_size, drop_last=drop_last)
    t = tud.DataLoader(Stream(5, torch), batch_size=batch_size, drop_last=drop_last)
    assert len(r) == len(t)
    same(list(r), list(t))


def test_num_workers_runs_in_the_main_process_with_the_same_batches():
    x, y = arrays()
    r = DataLoader(TensorDataset(rg.tensor(x), rg.tensor(y)), batch_size=4, num_workers=2,
                   persistent_workers=True, prefetch_factor=3, pin_memory=True)
    t = tud.DataLoader(tud.TensorDataset(torch.tensor(x), torch.tensor(y)), batch_size=4)
    same(list(r), list(t))
    assert rud.get_worker_info() is None


MISUSE = [
    dict(shuffle=True, sampler=[0, 1]),
    dict(batch_sampler=[[0]], batch_size=2),
    dict(batch_sampler=[[0]], shuffle=True),
    dict(batch_sampler=[[0]], sampler=[0]),
    dict(batch_sampler=[[0]], drop_last=True),
    dict(batch_size=None, drop_last=True),
    dict(num_workers=-1),
    dict(timeout=-1),
    dict(prefetch_factor=2),
    dict(persistent_workers=True),
    dict(num_workers=1, prefetch_factor=-1),
    dict(batch_size=0),
    dict(batch_size=2, drop_last=1),
]


@pytest.mark.parametrize("kwargs", MISUSE)
def test_mutually_exclusive_arguments_raise_value_error_as_torch(kwargs):
    with pytest.raises(ValueError):
        tud.DataLoader(list(range(4)), **kwargs)
    with pytest.raises(ValueError):
        DataLoader(list(range(4)), **kwargs)


@pytest.mark.parametrize("kwargs", [dict(shuffle=True), dict(sampler=[0]),
                                    dict(batch_sampler=[[0]])])
def test_iterable_dataset_refuses_sampling_arguments_as_torch(kwargs):
    with pytest.raises(ValueError):
        tud.DataLoader(Stream(3, torch), **kwargs)
    with pytest.raises(ValueError, match="IterableDataset"):
        DataLoader(RStream(3, rg), **kwargs)


def test_attributes_are_frozen_after_init():
    for lib in (tud, rud):
        dl = lib.DataLoader(list(range(4)), batch_size=2)
        with pytest.raises(ValueError):
            dl.batch_size = 3
        dl.num_workers = 0  # others can be set


# ---------------------------------------------------------------- randomness

def _epoch(dl):
    return [int(i) for b in dl for i in b[0].numpy()]


def test_shuffle_visits_every_index_once_and_follows_the_seed():
    n = 50
    ds = TensorDataset(rg.arange(n))
    dl = DataLoader(ds, batch_size=8, shuffle=True)
    rg.manual_seed(3)
    first, second = _epoch(dl), _epoch(dl)
    assert sorted(first) == sorted(second) == list(range(n))
    assert first != list(range(n)) and first != second
    rg.manual_seed(3)
    assert _epoch(dl) == first
    g1, g2 = np.random.default_rng(7), np.random.default_rng(7)
    a = _epoch(DataLoader(ds, batch_size=8, shuffle=True, generator=g1))
    b = _epoch(DataLoader(ds, batch_size=8, shuffle=True, generator=g2))
    assert a == b and sorted(a) == list(range(n))
    rt = [tuple(x.shape) for x, in tud.DataLoader(tud.TensorDataset(torch.arange(n)),
                                                  batch_size=8, shuffle=True)]
    assert [x.shape for x, in dl] == rt


def test_generator_must_be_a_numpy_generator():
    with pytest.raises(TypeError, match="numpy.random.Generator"):
        list(rud.RandomSampler(range(3), generator=3))


@pytest.mark.parametrize(("replacement", "num_samples"), [(False, None), (False, 23),
                                                          (True, None), (True, 7)])
def test_random_sampler_lengths_and_contents(replacement, num_samples):
    n = 10
    r = rud.RandomSampler(range(n), replacement=replacement, num_samples=num_samples)
    t = tud.RandomSampler(range(n), replacement=replacement, num_samples=num_samples)
    got = list(r)
    assert len(r) == len(t) == len(got) == len(list(t))
    assert all(0 <= i < n for i in got)
    if not replacement:
        for k in range(0, len(got) - n + 1, n):  # each full pass is a permutation
            assert sorted(got[k:k + n]) == list(range(n))
        assert len(set(got[len(got) // n * n:])) == len(got) % n


@pytest.mark.parametrize(("make", "error"), [
    (lambda m: m.RandomSampler(range(3), replacement=1), TypeError),
    (lambda m: m.RandomSampler(range(3), num_samples=0), ValueError),
    (lambda m: m.RandomSampler([], num_samples=None), ValueError),
    (lambda m: m.WeightedRandomSampler([1.0, 2.0], 0), ValueError),
    (lambda m: m.WeightedRandomSampler([1.0, 2.0], 2, replacement=1), ValueError),
    (lambda m: m.WeightedRandomSampler([[1.0, 2.0]], 2), ValueError),
    (lambda m: m.BatchSampler(range(3), 0, False), ValueError),
    (lambda m: m.BatchSampler(range(3), True, False), ValueError),
    (lambda m: m.BatchSampler(range(3), 2, None), ValueError),
])
def test_sampler_argument_errors_match_torch(make, error):
    with pytest.raises(error):
        make(tud)
    with pytest.raises(error):
        make(rud)


def test_subset_random_sampler_is_a_permutation_of_the_indices():
    idx = [3, 8, 1, 6]
    r = rud.SubsetRandomSampler(idx)
    assert len(r) == len(tud.SubsetRandomSampler(idx)) == 4
    assert sorted(r) == sorted(idx)


def test_weighted_random_sampler_respects_weights():
    w = [0.0, 1.0, 0.0, 3.0]
    r = rud.WeightedRandomSampler(w, 400)
    got = list(r)
    assert len(r) == len(got) == 400 and set(got) <= {1, 3}
    assert 0.6 < got.count(3) / 400 < 0.9  # expected 0.75
    same(r.weights, tud.WeightedRandomSampler(w, 400).weights)
    assert sorted(rud.WeightedRandomSampler([1.0, 2.0, 3.0], 3, replacement=False)) == [0, 1, 2]
    for _ in range(5):  # without replacement: the weighted ones first, then the others
        got = list(rud.WeightedRandomSampler(w, 3, replacement=False))
        assert sorted(got[:2]) == [1, 3] and got[2] in (0, 2)
        assert sorted(tud.WeightedRandomSampler(w, 4, replacement=False)) == [0, 1, 2, 3]
        assert sorted(rud.WeightedRandomSampler(w, 4, replacement=False)) == [0, 1, 2, 3]
    for lib in (tud, rud):
        with pytest.raises(RuntimeError):
            list(lib.WeightedRandomSampler(w, 5, replacement=False))
        with pytest.raises(RuntimeError):
            list(lib.WeightedRandomSampler([0.0, 0.0], 1))


@pytest.mark.parametrize(("n", "bs", "drop"), [(10, 3, False), (10, 3, True), (9, 3, True)])
def test_batch_sampler_equals_torch(n, bs, drop):
    r = rud.BatchSampler(rud.SequentialSampler(range(n)), bs, drop)
    t = tud.BatchSampler(tud.SequentialSampler(range(n)), bs, drop)
    assert len(r) == len(t) and list(r) == list(t)


@pytest.mark.parametrize(("n", "lengths"), [(10, [3, 7]), (10, [0.3, 0.3, 0.4]),
                                            (11, [0.5, 0.5]), (7, [0.1, 0.2, 0.7]),
                                            (5, [1.0])])
def test_random_split_sizes_equal_torch_and_contents_partition(n, lengths):
    r = rud.random_split(list(range(n)), lengths, generator=np.random.default_rng(0))
    t = tud.random_split(list(range(n)), lengths)
    assert [len(s) for s in r] == [len(s) for s in t]
    assert sorted(i for s in r for i in s) == list(range(n))
    again = rud.random_split(list(range(n)), lengths, generator=np.random.default_rng(0))
    assert [list(s) for s in again] == [list(s) for s in r]


def test_random_split_refuses_lengths_that_do_not_sum():
    for lib in (tud, rud):
        with pytest.raises(ValueError):
            lib.random_split(list(range(10)), [3, 3])
