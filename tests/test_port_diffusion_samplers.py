"""Diffusion-model training and sampling code as its reference repos write it
(denoising-diffusion-pytorch's GaussianDiffusion, improved-diffusion's losses, diffusers'
scheduler steps, k-diffusion's samplers and EDM preconditioning, EMA of parameters), run
on torch and on retrograd from the same inputs and weights and compared."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from port_compare import close

import retrograd as rg

# --------------------------------------------------------------- scans accumulate wide


@pytest.mark.parametrize("dtype", ["float32", "float16", "complex64"])
@pytest.mark.parametrize("fn", ["cumsum", "cumprod"])
def test_scans_accumulate_in_the_wider_type_as_torch(fn, dtype):
    """torch's CPU cumsum/cumprod keep the running value in double for float32 (float for
    half, complex128 for complex64) and round each output once: diffusers'
    alphas_cumprod = torch.cumprod(1 - betas, 0) of float32 betas must be the same bits."""
    rs = np.random.RandomState(0)
    x = 1 - rs.uniform(0, 0.02, (3, 400))
    if dtype == "complex64":
        x = x + 1j * rs.uniform(-0.01, 0.01, x.shape)
    x = x.astype(dtype)
    for dim in (0, 1, -1):
        want = getattr(torch, fn)(torch.tensor(x), dim).numpy()
        got = getattr(rg, fn)(rg.tensor(x), dim).numpy()
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


def test_float32_alphas_cumprod_and_its_gradient_match_torch():
    """The scheduler's float32 schedule (scaled-linear betas, their cumulative product and
    the sigmas from it) and the backward of a float32 cumsum/cumprod/logcumsumexp."""
    betas = (np.linspace(0.00085 ** 0.5, 0.012 ** 0.5, 1000) ** 2).astype(np.float32)
    out = {}
    for T in (torch, rg):
        b = T.tensor(betas, requires_grad=True)
        ac = T.cumprod(1.0 - b, dim=0)
        sig = ((1 - ac) / ac) ** 0.5
        lse = T.logcumsumexp(b * 100, 0)
        (sig.sum() + T.cumsum(b, 0).sum() + lse.sum()).backward()
        out[T] = (ac, sig, lse, b.grad)
    np.testing.assert_array_equal(out[rg][0].detach().numpy(), out[torch][0].detach().numpy())
    np.testing.assert_array_equal(out[rg][2].detach().numpy(), out[torch][2].detach().numpy())
    close(out[rg][1], out[torch][1], "sigmas", 1e-6)
    close(out[rg][3], out[torch][3], "grad", 1e-5)


# --------------------------------------------------------------- error types


@pytest.mark.parametrize("fn", ["trapezoid", "trapz", "cumulative_trapezoid"])
def test_trapezoid_of_a_0d_tensor_is_index_error(fn):
    """A scipy-free LMS coefficient that integrates a constant 0-d tensor: torch raises
    IndexError (no dimension to integrate along), so must retrograd."""
    for T in (torch, rg):
        with pytest.raises(IndexError):
            getattr(T, fn)(T.tensor(1.0), T.arange(3.0))
        with pytest.raises(IndexError):
            getattr(T, fn)(T.tensor(1.0))
