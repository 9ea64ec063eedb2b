"""Gaps found by running PyTorch's OpInfo error inputs (the exception each bad call
raises) and reference inputs (larger samples with extremal values) over ops a-z against
retrograd, each rebuilt here by hand and compared with torch computed in the test."""

import numpy as np
import pytest
import torch
from port_compare import close

import retrograd as rg


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
