"""Comparing a port with its PyTorch original, shared by the porting tests: values of
either library as arrays, closeness relative to the reference's scale, every
parameter's gradient of two models with the same parameter names, the same inputs in
both libraries, and errors raised alike."""

import numpy as np
import pytest


def as_np(t):
    """A tensor of either library (or anything array-like) as a NumPy array."""
    return t.detach().numpy() if hasattr(t, "detach") else np.asarray(t)


def close(a, b, what: str = "", tol: float = 1e-9, scale=None) -> None:
    """`a` (retrograd's) equals `b` (PyTorch's) in shape and dtype, integers exactly and
    floats to `tol` relative to the largest |b| (or `scale`, when larger)."""
    a, b = as_np(a), as_np(b)
    assert a.shape == b.shape, (what, a.shape, b.shape)
    assert a.dtype == b.dtype, (what, a.dtype, b.dtype)
    if a.dtype.kind in "biu":
        np.testing.assert_array_equal(a, b, err_msg=what)
        return
    s = max(np.nanmax(np.abs(b), initial=0.0), scale or 0.0, 1e-30)
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol * s, err_msg=what)


def close_grads(tm, rm, what: str = "", tol: float = 1e-9) -> None:
    """Each parameter's gradient of the retrograd model `rm` equals the torch model `tm`'s
    (the same names, in the same order), to `tol` of the largest torch gradient; a
    parameter torch gives no gradient has none here either."""
    tp, rp = dict(tm.named_parameters()), dict(rm.named_parameters())
    assert list(tp) == list(rp)
    gs = max(float(p.grad.abs().max()) for p in tp.values() if p.grad is not None)
    for k, p in tp.items():
        if p.grad is None:
            assert rp[k].grad is None, k
        else:
            close(rp[k].grad, p.grad, f"grad {k}{what}", tol, gs)


def same(a, b, what: str = "", rtol: float = 1e-12) -> None:
    """Same dtype, shape and values (to float64 rounding) of two tensors of either library."""
    a, b = as_np(a), as_np(b)
    assert a.dtype == b.dtype and a.shape == b.shape, (what, a.dtype, b.dtype, a.shape, b.shape)
    np.testing.assert_allclose(b, a, rtol=rtol, atol=1e-12, err_msg=what)


def pair(shape, seed: int = 0, requires_grad: bool = True):
    """The same float64 values as a torch and a retrograd tensor."""
    import torch

    import retrograd as rg
    x = np.random.default_rng(seed).standard_normal(shape)
    return (torch.tensor(x, requires_grad=requires_grad),
            rg.tensor(x.copy(), requires_grad=requires_grad))


def raise_alike(f, exc) -> None:
    """f(torch) and f(rg) both raise `exc` (torch's type: retrograd's errors subclass it)."""
    import torch

    import retrograd as rg
    for lib in (torch, rg):
        with pytest.raises(exc):
            f(lib)
