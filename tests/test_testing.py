"""rg.testing.assert_close and make_tensor, and rg.Size, side by side with torch.testing
and torch.Size: the same verdicts, error types and failure messages (up to the library's
name), tolerances per dtype, and value ranges."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest
import torch
import torch.testing as tt

import retrograd as rg
import retrograd.testing as rt

NAN, INF = math.nan, math.inf

# (actual, expected, kwargs) as data: NumPy arrays become each library's tensors
CASES = [
    (np.array([1.0, 2, 3], np.float32), np.array([1.0, 2.5, 3], np.float32), {}),
    (np.array([1.0, 2, 3], np.float32), np.array([1.0, 2 + 1e-6, 3], np.float32), {}),
    (np.array([1.0, 2, 3], np.float32), np.array([1.0, 2 + 1e-4, 3], np.float32), {}),
    (np.array([1.0, 2]), np.array([1.0, 2 + 1e-7]), {}),
    (np.array([1.0, 2]), np.array([1.0, 2 + 1e-6]), {}),
    (np.array([[1.0, 2], [3, 4]]), np.array([[1.0, 2], [3, 5]]), {}),
    (np.array([1, 2]), np.array([1, 3]), {}),
    (np.array([True]), np.array([False]), {}),
    (np.array([1.0, 2], np.float32), np.array([1.0, 2]), {}),
    (np.array([1.0, 2], np.float32), np.array([1.0, 2]), {"check_dtype": False}),
    (np.array([1.0, 2], np.float32), np.array([1.0, 2, 3], np.float32), {}),
    (np.array([1.0, NAN]), np.array([1.0, NAN]), {}),
    (np.array([1.0, NAN]), np.array([1.0, NAN]), {"equal_nan": True}),
    (np.array([1.0, INF]), np.array([1.0, INF]), {}),
    (np.array([1.0, INF]), np.array([1.0, -INF]), {}),
    (np.array([1.0]), np.array([1.1]), {"rtol": 0.2, "atol": 0.0}),
    (np.array([1.0]), np.array([1.1]), {"rtol": 0.0, "atol": 0.01}),
    (np.array([1.0]), np.array([1.1]), {"rtol": 0.2}),
    (np.array([1.0]), np.array([1.1]), {"atol": 0.2}),
    (np.array(1.0, np.float32), np.array(2.0, np.float32), {}),
    (np.array([0.0], np.float32), np.array([1e-6], np.float32), {}),
    (np.array([1 + 1j, 2], np.complex64), np.array([1 + 1j, 2 + 1e-3j], np.complex64), {}),
    (np.array([1.0, 2], np.float16), np.array([1.0, 2.001], np.float16), {}),
    (np.array([1.0, 2], np.float16), np.array([1.0, 2.01], np.float16), {}),
    (1.0, 1.1, {}),
    (1, 1, {}),
    (1, 2, {}),
    (1, 1.0, {}),
    (np.array([1.0]), 1.0, {}),
    ([np.array([1.0]), np.array([2.0])], [np.array([1.0]), np.array([3.0])], {}),
    ({"a": np.array([1.0])}, {"a": np.array([2.0])}, {}),
    (np.array([1.0]), np.array([2.0]), {"msg": "custom"}),
    (np.array([1.0]), np.array([2.0]), {"msg": lambda m: "prefix " + m}),
]


def to(lib, x):
    if isinstance(x, np.ndarray):
        return lib.tensor(x)
    if isinstance(x, list):
        return [to(lib, e) for e in x]
    if isinstance(x, dict):
        return {k: to(lib, v) for k, v in x.items()}
    return x


def outcome(fn, lib, case):
    a, e, kw = case
    try:
        fn(to(lib, a), to(lib, e), **kw)
    except Exception as err:  # noqa: BLE001  (the error is what is compared)
        text = str(err).replace("torch.Size", "rg.Size").replace("torch.", "")
        return type(err), text
    return None


@pytest.mark.parametrize("k", range(len(CASES)))
def test_assert_close_agrees_with_torch(k):
    ours = outcome(rt.assert_close, rg, CASES[k])
    theirs = outcome(tt.assert_close, torch, CASES[k])
    assert (ours and ours[0]) == (theirs and theirs[0]), (ours, theirs)
    if theirs is not None and theirs[0] is AssertionError:
        assert ours[1] == theirs[1]


def test_numpy_arrays_compare_as_in_torch():
    a = np.array([1.0, 2.0])
    rt.assert_close(a, a.copy())
    tt.assert_close(a, a.copy())
    for fn in (rt.assert_close, tt.assert_close):
        with pytest.raises(AssertionError, match="Mismatched elements: 1 / 2"):
            fn(a, np.array([1.0, 3.0]))


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32", "uint8", "bool",
                                   "complex64"])
@pytest.mark.parametrize(("low", "high"), [(None, None), (-2, 3), (0, 1)])
def test_make_tensor_dtype_shape_and_range_as_torch(dtype, low, high):
    if dtype == "bool" and low is not None:
        return
    rg.manual_seed(0)
    r = rt.make_tensor(40, 30, dtype=np.dtype(dtype), low=low, high=high)
    t = tt.make_tensor(40, 30, dtype=getattr(torch, dtype), device="cpu", low=low, high=high)
    assert str(r.dtype) == str(t.dtype).removeprefix("torch.") and r.shape == tuple(t.shape)
    rv, tv = r.numpy(), t.numpy()
    if dtype == "bool":
        assert rv.any() and not rv.all()
        return
    for part in ((np.real, np.imag) if dtype == "complex64" else (np.asarray,)):
        lo = -9 if low is None else low
        lo = max(lo, 0) if dtype == "uint8" else lo
        hi = (10 if dtype in ("int64", "int32", "uint8") else 9) if high is None else high
        assert part(rv).min() >= lo and part(rv).max() < hi
        assert part(tv).min() >= lo and part(tv).max() < hi


def test_make_tensor_low_equal_to_high_fills_with_a_warning_as_torch():
    with pytest.warns(FutureWarning):
        t = tt.make_tensor(3, dtype=torch.float32, device="cpu", low=3, high=3)
    with pytest.warns(FutureWarning):
        r = rt.make_tensor(3, dtype=rg.float32, low=3, high=3)
    np.testing.assert_array_equal(r.numpy(), t.numpy())
    for f, lib, extra in ((tt.make_tensor, torch, {"device": "cpu"}), (rt.make_tensor, rg, {})):
        with pytest.raises(ValueError):
            f(3, dtype=lib.int64, low=3, high=3, **extra)


def test_make_tensor_requires_grad_and_exclude_zero():
    r = rt.make_tensor((3, 4), dtype=rg.float64, requires_grad=True)
    assert r.requires_grad and r.shape == (3, 4)
    z = rt.make_tensor(200, dtype=rg.int64, low=-1, high=2, exclude_zero=True)
    assert (z.numpy() != 0).all()


@pytest.mark.parametrize("kwargs", [dict(low=2, high=1), dict(low=NAN)])
def test_make_tensor_errors_as_torch(kwargs):
    with pytest.raises(ValueError):
        tt.make_tensor(3, dtype=torch.float32, device="cpu", **kwargs)
    with pytest.raises(ValueError):
        rt.make_tensor(3, dtype=rg.float32, **kwargs)
    with pytest.raises(ValueError):
        tt.make_tensor(3, dtype=torch.int64, device="cpu", requires_grad=True)
    with pytest.raises(ValueError):
        rt.make_tensor(3, dtype=rg.int64, requires_grad=True)


# ---------------------------------------------------------------- rg.Size

def test_size_behaves_as_torch_size():
    for sizes in ([2, 3], [], [4], (1, 2, 3)):
        r, t = rg.Size(sizes), torch.Size(sizes)
        assert r == t == tuple(sizes) and tuple(sizes) == r
        assert hash(r) == hash(t)
        assert repr(r) == repr(t).replace("torch.", "rg.")
        assert r.numel() == t.numel()
        for other in [r[1:], r + (5,), (5,) + r, r * 2, 2 * r]:
            assert isinstance(other, rg.Size)
        assert r[1:] == t[1:] and r + (5,) == t + (5,) and (5,) + r == (5,) + t
        assert r * 2 == t * 2
    assert isinstance(rg.Size([2])[0], int)
    assert rg.Size([np.int64(2), 3]) == torch.Size([np.int64(2), 3])
    assert rg.Size(rg.tensor([2, 3])) == torch.Size(torch.tensor([2, 3]))
    assert pickle.loads(pickle.dumps(rg.Size([2, 3]))) == rg.Size([2, 3])
    assert rg.Size(rg.zeros(2, 3).shape) == rg.zeros(2, 3).shape


@pytest.mark.parametrize("bad", [[2.0], ["a"], 5])
def test_size_refuses_what_torch_refuses(bad):
    with pytest.raises(TypeError):
        torch.Size(bad)
    with pytest.raises(TypeError):
        rg.Size(bad)
