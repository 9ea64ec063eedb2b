"""Gaps found by running PyTorch's OpInfo error inputs (the exception each bad call
raises) and reference inputs (larger samples with extremal values) over ops a-z against
retrograd, each rebuilt here by hand and compared with torch computed in the test."""

import numpy as np
import pytest
import torch
from port_compare import as_np

import retrograd as rg


def close(a, b, tol: float = 1e-10) -> None:
    """retrograd's `a` equals torch's `b`: shape, dtype, NaN and inf places exactly, the
    finite values to `tol` relative to the largest finite |b|."""
    a, b = as_np(a), as_np(b)
    assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, a.dtype, b.shape, b.dtype)
    if a.dtype.kind in "biu":
        np.testing.assert_array_equal(a, b)
        return
    fin = np.isfinite(b)
    np.testing.assert_array_equal(a[~fin], b[~fin])  # NaN equals NaN here
    s = max(np.abs(b[fin]).max(initial=0.0), 1e-30)
    np.testing.assert_allclose(a[fin], b[fin], rtol=tol, atol=tol * s)


def _r(t: torch.Tensor) -> rg.Tensor:
    """The same values in retrograd, requiring grad when `t` does."""
    out = rg.tensor(t.detach().numpy().copy())
    return out.requires_grad_(True) if t.requires_grad else out


# ---------------------------------------------------------------- mvlgamma

@pytest.mark.parametrize("p", [1, 3])
def test_mvlgamma_takes_x_below_its_old_domain(p):
    """torch 2.13 computes sum lgamma(x - j/2) for any x (inf at the poles, NaN for NaN)
    where it used to refuse x <= (p - 1) / 2; values and gradients as torch's."""
    x = torch.tensor([-2.5, -0.7, 0.0, 0.3, 0.9, 1.0, 2.6, float("nan")], dtype=torch.float64,
                     requires_grad=True)
    e = torch.mvlgamma(x, p)
    a = rg.mvlgamma(_r(x), p)
    close(a, e)
    close(rg.special.multigammaln(_r(x), p), torch.special.multigammaln(x, p))
    g = torch.linspace(-1, 1, 8, dtype=torch.float64)
    (ge,) = torch.autograd.grad(e, x, g)
    rx = _r(x)
    (ga,) = rg.autograd.grad(rg.mvlgamma(rx, p), rx, _r(g))
    close(ga, ge)


# ---------------------------------------------------------------- local_response_norm

@pytest.mark.parametrize("shape", [(2, 6, 3), (1, 5, 3, 4)])
def test_local_response_norm_of_int64_as_torch(shape):
    """torch takes an int64 input (its avg_pool averages the integer squares with integer
    division) and gives the default float dtype; retrograd refused it."""
    x = torch.randint(-9, 10, shape, generator=torch.Generator().manual_seed(0))
    for size in (2, 3):
        e = torch.nn.functional.local_response_norm(x, size, alpha=0.3, beta=0.6, k=1.5)
        a = rg.nn.functional.local_response_norm(_r(x), size, alpha=0.3, beta=0.6, k=1.5)
        close(a, e, 1e-6)
    xi = torch.ones(1, 3, 2, dtype=torch.int32)
    with pytest.raises(NotImplementedError):
        torch.nn.functional.local_response_norm(xi, 2)
    with pytest.raises(NotImplementedError):
        rg.nn.functional.local_response_norm(_r(xi), 2)
