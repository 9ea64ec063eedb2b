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


# --------------------------------------------------------------- torch._utils


def _fp16_util_program(T, U, W, G):
    """improved-diffusion's fp16_util: a flat float32 master copy of the parameters, the
    model's gradients flattened onto it, an optimizer step on the master, and the result
    unflattened and copied back into the model."""
    model = T.nn.Sequential(T.nn.Linear(3, 4), T.nn.Tanh(), T.nn.Linear(4, 2)).double()
    with T.no_grad():
        for p, w in zip(model.parameters(), W):
            p.copy_(T.tensor(w))
    model_params = list(model.parameters())
    master = T.nn.Parameter(U._flatten_dense_tensors([p.detach().float() for p in model_params]))
    master.requires_grad = True
    opt = T.optim.Adam([master], lr=1e-2)
    for g in G:
        model.zero_grad()
        (model(T.tensor(g)) ** 2).mean().backward()
        master.grad = U._flatten_dense_tensors([p.grad.detach().float() for p in model_params])
        opt.step()
        for p, mp in zip(model_params, U._unflatten_dense_tensors(master.detach(), model_params)):
            p.detach().copy_(mp)
    one = U._flatten_dense_tensors([model_params[0]])
    return master, [p.detach().clone() for p in model_params], one


def test_torch_utils_flatten_dense_tensors_as_fp16_util_uses_them():
    """`from torch._utils import _flatten_dense_tensors, _unflatten_dense_tensors` (old
    mixed-precision utilities): the same flat master, steps and unflattened views."""
    import torch._utils as tu

    import retrograd._utils as ru

    rs = np.random.RandomState(0)
    W = [rs.randn(4, 3), rs.randn(4), rs.randn(2, 4), rs.randn(2)]
    G = [rs.randn(5, 3) for _ in range(3)]
    want = _fp16_util_program(torch, tu, W, G)
    got = _fp16_util_program(rg, ru, W, G)
    close(got[0], want[0], "master", 1e-6)
    for a, b in zip(got[1], want[1]):
        close(a, b, "param", 1e-6)
    close(got[2], want[2], "one tensor flattened", 0.0)
    assert rg._utils is ru
    views = ru._unflatten_dense_tensors(rg.arange(5.0), [rg.ones(2), rg.ones(3)])
    assert isinstance(views, tuple) and [tuple(v.shape) for v in views] == [(2,), (3,)]
    with pytest.raises(RuntimeError):
        ru._unflatten_dense_tensors(rg.arange(5.0), [rg.ones(2), rg.ones(4)])
    with pytest.raises(RuntimeError):
        tu._unflatten_dense_tensors(torch.arange(5.0), [torch.ones(2), torch.ones(4)])
    x = rg.ones(2, 3, requires_grad=True)
    (ru._flatten_dense_tensors([x, rg.ones(2)]) * rg.arange(8.0)).sum().backward()
    close(x.grad, torch.arange(6.0).reshape(2, 3), "grad through the flattening", 0.0)
