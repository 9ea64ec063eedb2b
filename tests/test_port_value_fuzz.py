"""Differential value fuzzing against torch (round 8c): values, dtypes and shapes of
creation functions, reductions with dtype=, out= arguments and edge cases, each
compared with torch computed here."""
import warnings

import numpy as np
import pytest

import retrograd as rg

torch = pytest.importorskip("torch")


def _np(x):
    return x.detach().resolve_conj().numpy() if isinstance(x, torch.Tensor) else x.numpy()


def _same(r, t):
    """retrograd's `r` equals torch's `t`: dtype, shape, values (exact for integers)."""
    assert str(np.dtype(r.dtype)) == str(t.dtype).replace("torch.", ""), (r.dtype, t.dtype)
    assert tuple(r.shape) == tuple(t.shape)
    a, b = _np(r), _np(t)
    if a.dtype.kind in "biu":
        np.testing.assert_array_equal(a, b)
    else:
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7, equal_nan=True)


def _both(fn, *arrays):
    """fn run on torch and on retrograd with copies of the same NumPy arrays."""
    return (fn(rg, *[rg.tensor(a.copy()) for a in arrays]),
            fn(torch, *[torch.tensor(a.copy()) for a in arrays]))


def _raises_like_torch(fn, *arrays):
    with pytest.raises(Exception) as et:
        fn(torch, *[torch.tensor(a.copy()) for a in arrays])
    base = next(c for c in type(et.value).__mro__ if c.__module__ == "builtins")
    with pytest.raises(base):
        fn(rg, *[rg.tensor(a.copy()) for a in arrays])


# ------------------------------------------------------------------ creation

@pytest.mark.parametrize("args", [(2.5, 7.5, 0.5), (0.5, -1, -1), (0, 5.5, 1), (0.3, 4, 1),
                                  (-1.5, 2, 1.5), (10, 0, -3), (0.9, 3), (5.7,)])
@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "int8"])
def test_arange_with_float_bounds_and_an_integer_dtype(args, dtype):
    try:
        t = torch.arange(*args, dtype=getattr(torch, dtype))
    except Exception:
        _raises_like_torch(lambda L: L.arange(*args, dtype=getattr(L, dtype)))
        return
    _same(rg.arange(*args, dtype=getattr(rg, dtype)), t)


@pytest.mark.parametrize("args", [(0.5, 1, 5, 10), (0.5, 2.5, 5, 2.0), (0, 3, 4, 10),
                                  (-1, 2, 4, 2), (1.7, 3.2, 6, 3), (0.5, 1, 1, 10)])
@pytest.mark.parametrize("dtype", ["int64", "int8", "float32", "float64"])
def test_logspace_with_an_integer_dtype_truncates_the_bounds_first(args, dtype):
    s, e, n, b = args
    _same(rg.logspace(s, e, n, base=b, dtype=getattr(rg, dtype)),
          torch.logspace(s, e, n, base=b, dtype=getattr(torch, dtype)))


@pytest.mark.parametrize("value", [-1, -1.5, 255.5, 256.0, -0.5, 2.7, 1e10, -128.7,
                                   float("nan"), -0.0, 300])
@pytest.mark.parametrize("dtype", ["uint8", "int8", "int32"])
@pytest.mark.parametrize("make", ["full", "full_like", "tensor"])
def test_floats_into_an_integer_dtype_must_fit_ints_wrap(value, dtype, make):
    def fn(L):
        d = getattr(L, dtype)
        if make == "full":
            return L.full((2,), value, dtype=d)
        if make == "full_like":
            return L.full_like(L.zeros(2, dtype=d), value)
        return L.tensor([[value, True], [1, 2]], dtype=d)
    try:
        t = fn(torch)
    except Exception:
        _raises_like_torch(fn)
        return
    _same(fn(rg), t)


# ------------------------------------------------------------------ reductions with dtype=

@pytest.mark.parametrize("src", ["uint8", "int32", "float64", "bool"])
@pytest.mark.parametrize("call", [
    lambda L, x: x.sum(dtype=L.bool), lambda L, x: x.sum(0, dtype=L.bool),
    lambda L, x: x.sum((0, 1), keepdim=True, dtype=L.bool), lambda L, x: x.prod(1, dtype=L.bool),
    lambda L, x: L.nansum(x, -1, dtype=L.int32), lambda L, x: L.nansum(x, dtype=L.float32),
    lambda L, x: L.nansum(x, 0, dtype=L.int16),
    lambda L, x: L.nanmean(x, dtype=L.float64)])
def test_reduction_dtype_argument(src, call):
    x = np.array([[5, 0, 3], [0, 0, 0]]).astype(src)
    try:
        t = call(torch, torch.tensor(x))
    except Exception:
        _raises_like_torch(call, x)
        return
    _same(call(rg, rg.tensor(x)), t)


# ------------------------------------------------------------------ index writes, lerp, bincount

def test_index_fill_with_an_empty_index_is_a_copy():
    x = np.array([[4, 6, 3], [2, 1, 6]], np.uint8)
    i = np.zeros(0, np.int64)
    for dim in (0, 1, -1):
        _same(*_both(lambda L, a, b: a.index_fill(dim, b, True), x, i))
        _same(*_both(lambda L, a, b: a.double().index_fill(dim, b, 2.5), x, i))


@pytest.mark.parametrize("dtype", ["int32", "int16", "uint8", "float32"])
@pytest.mark.parametrize("include_self", [True, False])
def test_index_reduce_mean_keeps_an_integer_dtype(dtype, include_self):
    x = np.array([[4, 6, 3], [2, 1, 6]], dtype)
    i = np.array([1, 1, 0])
    s = np.array([[1, 4, 6], [1, 2, 6]], dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch: index_reduce is in beta
        _same(*_both(lambda L, a, b, c: a.index_reduce(1, b, c, "mean",
                                                       include_self=include_self), x, i, s))


@pytest.mark.parametrize("weight", ["tensor", 0.7, 0.2])
def test_lerp_of_complex_tensors_values_and_gradients(weight):
    rs = np.random.RandomState(0)
    a, b = (rs.randn(2, 3) + 1j * rs.randn(2, 3) for _ in range(2))
    w = rs.rand(3) + 1j * rs.rand(3)
    res = []
    for L in (rg, torch):
        A, B = L.tensor(a, requires_grad=True), L.tensor(b, requires_grad=True)
        W = L.tensor(w, requires_grad=True) if weight == "tensor" else weight
        o = L.lerp(A, B, W)
        (o.abs() ** 2).sum().backward()
        res.append([o, A.grad, B.grad] + ([W.grad] if weight == "tensor" else []))
    for r, t in zip(*res):
        _same(r, t)
    _same(*_both(lambda L, x, y: L.lerp(x, y, 0.5), a.astype(np.complex64),
                  b.astype(np.complex64)))


@pytest.mark.parametrize("wdtype", [None, "int64", "float32", "float64"])
@pytest.mark.parametrize("minlength", [0, 3])
def test_bincount_of_an_empty_input_is_int64(wdtype, minlength):
    x = np.zeros(0, np.int64)
    if wdtype is None:
        _same(*_both(lambda L, a: L.bincount(a, minlength=minlength), x))
    else:
        w = np.zeros(0, wdtype)
        _same(*_both(lambda L, a, b: L.bincount(a, weights=b, minlength=minlength), x, w))
    _same(*_both(lambda L, a, b: L.bincount(a, weights=b), np.array([1, 1, 3]),
                 np.array([1, 2, 5])))
