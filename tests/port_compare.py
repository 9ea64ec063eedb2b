"""Comparing a port with its PyTorch original, shared by the porting tests: values of
either library as arrays, closeness relative to the reference's scale, and every
parameter's gradient of two models with the same parameter names."""

import numpy as np


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
