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
