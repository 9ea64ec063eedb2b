"""Differences found by running PyTorch's docstring examples with retrograd bound as torch
(tests/port_docs_sweep.py); each case runs the same code with torch and with retrograd
and compares values, dtypes and shapes (and gradients where the op has them)."""

import math

import numpy as np
import pytest
import torch

import retrograd as rg


def _same(got, want, tol=1e-5) -> None:
    if isinstance(want, torch.Tensor):
        assert isinstance(got, rg.Tensor), type(got)
        assert tuple(got.shape) == tuple(want.shape)
        assert np.dtype(got.dtype) == want.detach().numpy().dtype
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(),
                                   rtol=tol, atol=tol)
    elif isinstance(want, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(want)
        for g, w in zip(got, want):
            _same(g, w, tol)
    elif isinstance(want, float) and math.isnan(want):
        assert math.isnan(got)
    else:
        assert got == want


def _both(fn):
    return fn(rg), fn(torch)


# ---------------------------------------------------------------- constants

@pytest.mark.parametrize("name", ["e", "pi", "inf", "nan"])
def test_number_constants(name):
    _same(getattr(rg, name), getattr(torch, name))


def test_nan_in_examples():
    """`torch.tensor([1, -3, 5, torch.nan])` (aminmax, nanmean, equal)."""
    _same(*_both(lambda T: T.aminmax(T.tensor([1, -3, 5, T.nan]))))
    _same(*_both(lambda T: T.nanmean(T.tensor([[T.nan, 1, 2], [1, 2, 3]]), dim=0)))


# ---------------------------------------------------------------- out=

OUT_CASES = {
    "logical_and": (lambda T: (T.tensor([True, False, True]), T.tensor([True, True, False])),
                    lambda T: T.empty(3, dtype=T.bool)),
    "logical_or": (lambda T: (T.tensor([1, 0, 0]), T.tensor([0.0, 0.0, 2.0])),
                   lambda T: T.empty(3, dtype=T.bool)),
    "logical_xor": (lambda T: (T.tensor([1, 0, 3]), T.tensor([1, 1, 0])),
                    lambda T: T.empty(3, dtype=T.bool)),
    "exp": (lambda T: (T.tensor([0.0, 1.0]),), lambda T: T.empty(2, dtype=T.float64)),
    "maximum": (lambda T: (T.tensor([1, 5]), T.tensor([3, 2])), lambda T: T.empty(0,
                                                                                   dtype=T.int64)),
    "where": (lambda T: (T.tensor([True, False]), T.tensor([1.0, 2.0]), T.tensor([3.0, 4.0])),
              lambda T: T.empty(2)),
    "cat": (lambda T: ([T.tensor([1.0]), T.tensor([2.0, 3.0])],), lambda T: T.empty(3)),
    "sort": (lambda T: (T.tensor([3.0, 1.0, 2.0]),),
             lambda T: (T.empty(3), T.empty(3, dtype=T.int64))),
    "aminmax": (lambda T: (T.tensor([3, 1, 2]),),
                lambda T: (T.empty((), dtype=T.int64), T.empty((), dtype=T.int64))),
}


@pytest.mark.parametrize("name", sorted(OUT_CASES))
def test_out_keyword(name):
    """`torch.logical_and(a, b, out=torch.empty(4, dtype=torch.bool))`: the result is
    written into out (in out's dtype) and out is returned."""
    args, make_out = OUT_CASES[name]
    results = {}
    for T in (rg, torch):
        out = make_out(T)
        res = getattr(T, name)(*args(T), out=out)
        if isinstance(out, tuple):
            assert all(r is o for r, o in zip(res, out))
        else:
            assert res is out
        results[T] = out
    _same(results[rg], results[torch])


def test_out_keyword_refuses_grad_and_narrowing():
    for T in (rg, torch):
        x = T.tensor([1.0, 2.0], requires_grad=True)
        with pytest.raises(RuntimeError, match="out="):
            T.exp(x, out=T.empty(2))
        with pytest.raises((RuntimeError, TypeError)):
            T.exp(T.tensor([1.0]), out=T.empty(1, dtype=T.int64))


# ---------------------------------------------------------------- clamp with tensor bounds

CLAMP_CASES = [
    ([0.0, 1.0, 2.0, 3.0, 4.0, math.nan], [1.0, 1.0, 1.0, 5.0, 1.0, 1.0],
     [3.0, 3.0, 2.0, 2.0, 3.0, 3.0]),
    ([0.0, 1.5, 9.0], [1.0, math.nan, 0.0], None),
    ([0.0, 1.5, 9.0], None, [[1.0], [2.0]]),
    ([-2.0, 0.5, 2.0], [0.0], [1.0, 1.0, 1.0]),
]


@pytest.mark.parametrize("xs, lo, hi", CLAMP_CASES)
def test_clamp_tensor_bounds_values_and_gradients(xs, lo, hi):
    """`torch.clamp(a, min=min)` with `min` a tensor (the clamp docstring's example)."""
    grads = {}
    for T in (rg, torch):
        x = T.tensor(xs, dtype=T.float64, requires_grad=True)
        b = [None if v is None else v if isinstance(v, float)
             else T.tensor(v, dtype=T.float64, requires_grad=True) for v in (lo, hi)]
        y = T.clamp(x, *b)
        (y * T.arange(1.0, 1.0 + y.shape[-1], dtype=T.float64)).sum().backward()
        grads[T] = (y, x.grad, *[v.grad for v in b if isinstance(v, T.Tensor)])
    for g, w in zip(grads[rg], grads[torch]):
        _same(g, w)


def test_clamp_tensor_bounds_dtype_and_method():
    _same(*_both(lambda T: T.clamp(T.tensor([1, 5]), T.tensor([2.5]), None)))
    _same(*_both(lambda T: T.clamp(T.tensor([1, 5]), min=T.tensor(2))))
    _same(*_both(lambda T: T.tensor([1.0, 5.0]).clamp(min=T.tensor(2.0), max=3.0)))
    _same(*_both(lambda T: T.tensor([[1.0, 5.0]]).clip(T.tensor([2.0, 0.0]),
                                                        T.tensor([[3.0], [4.0]]))))


# ---------------------------------------------------------------- creation, shape, linalg

def test_full_size_keyword():
    """`torch.full(size=(N,), fill_value=T, dtype=torch.long)` (the CTCLoss example)."""
    _same(*_both(lambda T: T.full(size=(3,), fill_value=5, dtype=T.long)))
    _same(*_both(lambda T: T.full(size=(2, 2), fill_value=1.5)))
    for T in (rg, torch):
        with pytest.raises(TypeError):
            T.full(fill_value=1.0)


@pytest.mark.parametrize("fn", ["atleast_1d", "atleast_2d", "atleast_3d"])
@pytest.mark.parametrize("seq", [tuple, list])
def test_atleast_takes_one_sequence(fn, seq):
    """`torch.atleast_1d((x, y))` returns a tuple, one tensor per element (a one-element
    sequence too)."""
    _same(*_both(lambda T: getattr(T, fn)(seq([T.tensor(1.5), T.arange(3)]))))
    _same(*_both(lambda T: getattr(T, fn)(seq([T.tensor(2)]))))
    _same(*_both(lambda T: getattr(T, fn)(T.tensor(2))))
    _same(*_both(lambda T: getattr(T, fn)(seq())))
    _same(*_both(lambda T: getattr(T, fn)()))


@pytest.mark.parametrize("shapes", [[(2,), (2,)], [(1, 2), (2, 1), (1, 3)], [(3,), (3, 2)]])
def test_multi_dot_integers(shapes):
    """`multi_dot([torch.tensor([1, 2]), torch.tensor([2, 3])])` is tensor(8), int64."""
    arrays = [np.arange(1, 1 + int(np.prod(s))).reshape(s) for s in shapes]
    _same(*_both(lambda T: T.linalg.multi_dot([T.tensor(a) for a in arrays])))


def test_multi_dot_mixed_dtypes_refused():
    for T in (rg, torch):
        with pytest.raises(RuntimeError):
            T.linalg.multi_dot([T.tensor([1, 2]), T.tensor([2.0, 3.0])])


@pytest.mark.parametrize("driver", [None, "gelsd", "gelss", "gelsy"])
def test_lstsq_rank_and_singular_values_keep_a_batch_shape(driver):
    """A of batch (1,) broadcast against B of batch (2,): the solution is (2, ...), the rank
    and singular values are A's own (1,) (the lstsq docstring example)."""
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((1, 4, 3)), rng.standard_normal((2, 4, 3))
    _same(*_both(lambda T: tuple(T.linalg.lstsq(T.tensor(a), T.tensor(b), driver=driver))),
          tol=1e-8)


# ---------------------------------------------------------------- histogramdd

HISTDD_CASES = {
    "docstring": (np.array([[0.0, 1.0], [1.0, 0.0], [2.0, 0.0], [2.0, 2.0]]),
                  dict(bins=[3, 3], weight=np.array([1.0, 2.0, 4.0, 8.0]))),
    "range density": (np.array([[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]]),
                      dict(bins=[2, 2], range=[0.0, 1.0, 0.0, 1.0], density=True)),
    "int bins, batched": (np.random.default_rng(1).standard_normal((4, 10, 3)), dict(bins=3)),
    "edges": (np.random.default_rng(2).standard_normal((30, 2)),
              dict(bins=[np.array([-1.0, 0.0, 0.5, 2.0]), np.array([-3.0, 0.0, 3.0])])),
    "one point": (np.array([[1.0, 2.0]]), dict(bins=[2, 3])),
}


@pytest.mark.parametrize("name", sorted(HISTDD_CASES))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_histogramdd_against_torch(name, dtype):
    """`torch.histogramdd(torch.tensor([[0., 1.], [1., 0.], [2., 0.], [2., 2.]]), bins=[3, 3],
    weight=torch.tensor([1., 2., 4., 8.]))` and its kin: counts and edges as torch's."""
    data, kw = HISTDD_CASES[name]

    def run(T):
        dt = getattr(T, dtype)
        args = {k: [T.tensor(b, dtype=dt) for b in v] if isinstance(v, list) and
                isinstance(v[0], np.ndarray) else T.tensor(v, dtype=dt)
                if isinstance(v, np.ndarray) else v for k, v in kw.items()}
        r = T.histogramdd(T.tensor(data, dtype=dt), **args)
        assert isinstance(r.bin_edges, tuple)
        return (r.hist, *r.bin_edges)

    _same(*_both(run), tol=1e-6)


# ---------------------------------------------------------------- empty_permuted

@pytest.mark.parametrize("size, order", [((2, 3, 5, 7), (0, 1, 2, 3)), ((2, 3, 5, 7), (0, 2, 3, 1)),
                                         ((4, 3), (1, 0)), ((2, 1, 3), (2, 0, 1))])
def test_empty_permuted_strides_like_torch(size, order):
    """`torch.empty_permuted((2, 3, 5, 7), (0, 2, 3, 1)).stride()` is (105, 1, 21, 3)."""
    got, want = _both(lambda T: T.empty_permuted(size, order, dtype=T.float64))
    assert got.shape == tuple(want.shape) and got.dtype == np.float64
    assert got.stride() == want.stride()
    assert got.is_contiguous() == want.is_contiguous()
    _same(*_both(lambda T: T.empty_permuted(size, order).fill_(2.0) * 3))


def test_empty_permuted_refuses_a_bad_layout():
    for T in (rg, torch):
        with pytest.raises(RuntimeError):
            T.empty_permuted((2, 3), (0, 0))
