"""Generative vision models ported from their PyTorch sources (DDPM/DDIM U-Nets, VAEs,
VQ-VAEs, DCGAN/WGAN-GP/StyleGAN-style GANs, pix2pix, super-resolution, spatial
transformers), built once on torch and once on retrograd from the same class bodies, with
torch's weights loaded into retrograd; outputs, losses, gradients and optimiser steps are
compared in float64. Each gap the ports found has its minimal case here too."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import retrograd as rg


def _np(t):
    return t.detach().numpy() if isinstance(t, torch.Tensor) else np.asarray(t.detach().numpy())


def _close(a, b, rtol=1e-7, atol=1e-9):
    a, b = _np(a), _np(b)
    assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, b.shape, a.dtype, b.dtype)
    np.testing.assert_allclose(b, a, rtol=rtol, atol=atol)


def _strides(t) -> tuple:
    """Element strides of a tensor of either library, size-1 dims left out (they never
    matter to a view)."""
    if isinstance(t, torch.Tensor):
        st = t.stride()
    else:
        st = tuple(s // t.data.itemsize for s in t.data.strides)
    return tuple(s for s, n in zip(st, t.shape) if n > 1)


# ------------------------------------------------- copies of broadcast tensors are row-major
def _broadcast_cases(T):
    return [T.ones(3, 1).expand(3, 4), T.ones(1, 4).expand(3, 4),
            T.ones(4, 1, 2).expand(4, 3, 2).permute(2, 0, 1),
            T.ones(2, 1, 3).permute(2, 1, 0).expand(3, 5, 2),
            T.ones(1, 3, 1, 2).permute(3, 1, 2, 0).expand(2, 3, 4, 5),
            T.ones(2, 1, 3, 1).permute(3, 2, 1, 0).expand(4, 3, 5, 2)]


@pytest.mark.parametrize("k", range(6))
@pytest.mark.parametrize("how", ["clone", "double", "to"])
def test_copy_of_a_broadcast_is_laid_out_as_torch(k, how):
    t = _broadcast_cases(torch)[k].float().requires_grad_()
    r = _broadcast_cases(rg)[k].float().requires_grad_()
    ops = {"clone": lambda x: x.clone(), "double": lambda x: x.double(),
           "to": lambda x, T=None: x.to(torch.float64 if isinstance(x, torch.Tensor)
                                        else rg.float64)}
    assert _strides(ops[how](r)) == _strides(ops[how](t))


def test_repeat_of_a_parameter_views_as_torch():
    # StyleGAN's constant input: const.repeat(batch, 1, 1, 1), then a grouped conv's view
    for T in (torch, rg):
        const = T.nn.Parameter(T.ones(1, 8, 4, 4))
        x = const.repeat(4, 1, 1, 1)
        assert tuple(x.view(1, 32, 4, 4).shape) == (1, 32, 4, 4)
    r = rg.nn.Parameter(rg.ones(1, 3, 2))
    assert _strides(r.repeat(2, 2, 1)) == _strides(torch.ones(1, 3, 2, requires_grad=True)
                                                   .repeat(2, 2, 1))


# --------------------------------------------------------------------- Adam's betas check
@pytest.mark.parametrize("opt", ["Adam", "AdamW"])
def test_adam_refuses_integer_betas_as_torch(opt):
    with pytest.raises(ValueError, match="both floats"):
        getattr(torch.optim, opt)([torch.zeros(2, requires_grad=True)], betas=(0, 0.99))
    with pytest.raises(ValueError, match="both floats"):
        getattr(rg.optim, opt)([rg.zeros(2, requires_grad=True)], betas=(0, 0.99))
    getattr(rg.optim, opt)([rg.zeros(2, requires_grad=True)], betas=(0.0, 0.99))


# ------------------------------------- in-place activations after normalisations (pix2pix)
def _producers(T):
    F = T.nn.functional
    return {
        "instance_norm": lambda x: F.instance_norm(x),
        "batch_norm": lambda x: F.batch_norm(x, None, None, training=True),
        "batch_norm_stats": lambda x: F.batch_norm(x, T.zeros(3, dtype=x.dtype),
                                                   T.ones(3, dtype=x.dtype), training=True),
        "InstanceNorm2d": lambda x: T.nn.InstanceNorm2d(3)(x),
        "group_norm": lambda x: F.group_norm(x, 3),
        "layer_norm": lambda x: F.layer_norm(x, (2, 2)),
    }


_WRITES = {
    "LeakyReLU(0.2, True)": lambda T, h: T.nn.LeakyReLU(0.2, True)(h),
    "ReLU(True)": lambda T, h: T.nn.ReLU(True)(h),
    "mul_": lambda T, h: h.mul_(2.0),
    "sigmoid_": lambda T, h: h.sigmoid_(),
    "view().add_": lambda T, h: h.view(-1).add_(1.0),
    "setitem": lambda T, h: h.__setitem__(0, 1.5),
}


def _inplace_after(T, make, write, inp, w):
    x = inp.clone().requires_grad_(True)
    h = make(x * w)
    write(T, h)
    (h * h.detach().sin()).sum().backward()
    return h, x.grad


@pytest.mark.parametrize("write", list(_WRITES))
@pytest.mark.parametrize("norm", list(_producers(torch)))
def test_inplace_write_into_a_normalisation_output_keeps_the_gradient(norm, write):
    # the normalisation's forward handed its backward xhat, the very array the in-place
    # activation overwrites: the gradient came out silently wrong
    gen = torch.Generator().manual_seed(0)
    inp = torch.randn(2, 3, 2, 2, generator=gen, dtype=torch.float64)
    w = torch.randn(2, 3, 2, 2, generator=gen, dtype=torch.float64)
    ht, gt = _inplace_after(torch, _producers(torch)[norm], _WRITES[write], inp, w)
    hr, gr = _inplace_after(rg, _producers(rg)[norm], _WRITES[write],
                            rg.tensor(inp.numpy()), rg.tensor(w.numpy()))
    _close(ht, hr)
    _close(gt, gr)


@pytest.mark.parametrize("kind", ["GRU", "RNN", "LSTM"])
@pytest.mark.parametrize("batch_first", [True, False])
def test_inplace_write_into_a_recurrent_output_keeps_the_gradient(kind, batch_first):
    torch.manual_seed(0)
    tm = getattr(torch.nn, kind)(4, 5, batch_first=batch_first, dtype=torch.float64)
    rm = getattr(rg.nn, kind)(4, 5, batch_first=batch_first, dtype=rg.float64)
    rm.load_state_dict({k: rg.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    inp = torch.randn(3, 2, 4, dtype=torch.float64)
    outs = []
    for m, x in ((tm, inp.clone().requires_grad_()),
                 (rm, rg.tensor(inp.numpy()).requires_grad_())):
        y = m(x)[0]
        y.mul_(1.5)
        y.relu_()
        (y * y.detach().cos()).sum().backward()
        outs.append((y, x.grad))
    _close(outs[0][0], outs[1][0])
    _close(outs[0][1], outs[1][1])


# ---------------------------------------------------- cdist's compute_mode (VQ-VAE lookups)
@pytest.mark.parametrize("mode", [None, "use_mm_for_euclid_dist_if_necessary",
                                  "use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist"])
@pytest.mark.parametrize("rows", [(3, 4), (30, 8)])
def test_cdist_compute_mode_as_torch(mode, rows):
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(2, rows[0], 5, generator=gen, dtype=torch.float64)
    c = torch.randn(rows[1], 5, generator=gen, dtype=torch.float64)
    w = torch.randn(2, *rows, generator=gen, dtype=torch.float64)
    kw = {} if mode is None else {"compute_mode": mode}
    xt, ct = x.clone().requires_grad_(), c.clone().requires_grad_()
    xr, cr = rg.tensor(x.numpy()).requires_grad_(), rg.tensor(c.numpy()).requires_grad_()
    dt, dr = torch.cdist(xt, ct, **kw), rg.cdist(xr, cr, **kw)
    _close(dt, dr, rtol=1e-12)
    (dt * w).sum().backward()
    (dr * rg.tensor(w.numpy())).sum().backward()
    _close(xt.grad, xr.grad, rtol=1e-10)
    _close(ct.grad, cr.grad, rtol=1e-10)
    assert torch.equal(dt.argmin(-1), torch.from_numpy(dr.argmin(-1).numpy()))


def test_cdist_refuses_bad_arguments_as_torch():
    for T in (torch, rg):
        with pytest.raises(ValueError, match="not a valid value for compute_mode"):
            T.cdist(T.ones(3, 2), T.ones(4, 2), compute_mode="mm")
        with pytest.raises(RuntimeError):
            T.cdist(T.ones(3, 2), T.ones(4, 2, dtype=T.float64))
        with pytest.raises(RuntimeError, match="floating-point"):
            T.cdist(T.ones(3, 2, dtype=T.long), T.ones(4, 2, dtype=T.long))
