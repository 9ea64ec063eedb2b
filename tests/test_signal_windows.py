"""rg.signal.windows against torch.signal.windows: every window over lengths 0..11,
symmetric and periodic, float32 and float64 (values, dtypes, shapes), their parameters,
requires_grad, and torch's refusals."""

import numpy as np
import pytest
import torch
import torch.signal.windows as TW

import retrograd as rg
import retrograd.signal.windows as RW

NAMES = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine",
         "general_hamming", "hamming", "hann", "kaiser", "nuttall"]


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_windows_match_torch(name, dtype):
    kw = {"a": [0.5, 0.3, 0.2]} if name == "general_cosine" else {}
    tol = 2e-6 if dtype == "float32" else 1e-12
    for M in (0, 1, 2, 5, 10, 11):
        for sym in (True, False):
            want = getattr(TW, name)(M, sym=sym, dtype=getattr(torch, dtype), **kw).numpy()
            got = getattr(RW, name)(M, sym=sym, dtype=getattr(rg, dtype), **kw).numpy()
            assert got.shape == want.shape and got.dtype == want.dtype
            np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    assert getattr(RW, name)(4, **kw).dtype == rg.get_default_dtype()


@pytest.mark.parametrize("name,kw", [
    ("exponential", {"center": 2.0, "sym": False}), ("exponential", {"tau": 3.0}),
    ("gaussian", {"std": 2.5, "sym": False}), ("kaiser", {"beta": 5.0}),
    ("kaiser", {"beta": 0.0}), ("general_hamming", {"alpha": 0.6}),
])
def test_window_parameters_match_torch(name, kw):
    want = getattr(TW, name)(9, dtype=torch.float64, **kw).numpy()
    got = getattr(RW, name)(9, dtype=rg.float64, **kw).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


def test_requires_grad_is_set():
    w = RW.hann(5, requires_grad=True)
    assert w.requires_grad and w.is_leaf


@pytest.mark.parametrize("name,args,kw", [
    ("hann", (-1,), {}), ("hann", (4,), {"dtype": "int64"}),
    ("exponential", (4,), {"tau": 0.0}), ("exponential", (4,), {"center": 1.0}),
    ("gaussian", (4,), {"std": -1.0}), ("kaiser", (4,), {"beta": -1.0}),
    ("general_cosine", (4,), {"a": []}),
])
def test_bad_arguments_raise_as_torch(name, args, kw):
    kw_t = {k: (getattr(torch, v) if k == "dtype" else v) for k, v in kw.items()}
    kw_r = {k: (getattr(rg, v) if k == "dtype" else v) for k, v in kw.items()}
    with pytest.raises(ValueError):
        getattr(TW, name)(*args, **kw_t)
    with pytest.raises(ValueError):
        getattr(RW, name)(*args, **kw_r)
