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
