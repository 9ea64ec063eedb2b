"""Idioms of ported PyTorch programs (pytorch/examples, the official tutorials) that
retrograd got wrong or refused: `repeat`/`tile`/`repeat_interleave` results are copies,
`param.data = tensor` swaps a parameter's values, and backward accumulates into the
existing `.grad` object (a reference held to it sees the sum). Each against torch."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import retrograd as rg


@pytest.mark.parametrize("make", [
    lambda m, x: x.repeat(4, 1), lambda m, x: x.repeat(2, 1, 1),
    lambda m, x: m.tile(x, (3, 1)), lambda m, x: x.repeat_interleave(1),
    lambda m, x: x.repeat_interleave(2, dim=0), lambda m, x: x.repeat(1, 1)])
def test_repeats_are_copies(make):
    """A repeat along a size-1 dim used to be a read-only view of its input: a later write
    to the input changed it, and a write to it was refused."""
    res = []
    for m in (torch, rg):
        x = m.zeros(1, 3)
        y = make(m, x)
        x.add_(1)
        y.div_(2)  # writable
        res.append(y.numpy().copy())
    np.testing.assert_array_equal(res[1], res[0])


def test_repeat_under_autograd_matches_torch():
    res = []
    for m in (torch, rg):
        x = m.tensor(np.arange(3.0).reshape(1, 3), requires_grad=True)
        z = x * 1
        y = z.repeat(4, 1)
        y.div_(2)
        (y * z).sum().backward()
        res.append(x.grad.numpy())
    np.testing.assert_allclose(res[1], res[0])


def test_parameter_data_takes_a_tensor():
    lin = rg.nn.Linear(3, 2)
    tl = torch.nn.Linear(3, 2)
    lin.load_state_dict({k: v.detach().numpy() for k, v in tl.state_dict().items()})
    lin.weight.data = lin.weight.data - 0.1 * rg.ones(2, 3)
    with torch.no_grad():
        tl.weight.data = tl.weight.data - 0.1 * torch.ones(2, 3)
    x = np.arange(3.0, dtype=np.float32)
    np.testing.assert_allclose(lin(rg.tensor(x)).detach().numpy(),
                               tl(torch.tensor(x)).detach().numpy(), rtol=1e-6)
    assert isinstance(lin.weight.data, np.ndarray)
    with pytest.raises(TypeError, match="list"):
        lin.weight.data = [1.0, 2.0]


def test_backward_accumulates_into_the_same_grad_object():
    res = []
    for m in (torch, rg):
        w = m.ones(3, requires_grad=True)
        (w * 2).sum().backward()
        g = w.grad
        (w * 3).sum().backward()
        assert w.grad is g
        seed = m.ones(3)
        v = m.ones(3, requires_grad=True)
        v.backward(seed)
        v.backward(seed)  # the seed itself is not the accumulator
        res.append((g.numpy().copy(), seed.numpy().copy(), v.grad.numpy().copy()))
    for a, b in zip(res[1], res[0]):
        np.testing.assert_array_equal(a, b)


def test_old_alpha_first_add_and_sub():
    res = []
    for m in (torch, rg):  # (torch warns once a process)
        x, g = m.ones(3), m.full((3,), 2.0)
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            x.add_(-0.1, g)
            x.sub_(0.5, g)
        assert m is torch or len(seen) == 2
        res.append(x.numpy())
    np.testing.assert_allclose(res[1], res[0], rtol=1e-6)


def test_grad_fn_name_is_callable():
    w = rg.ones(2, requires_grad=True)
    y = (w * 2).sum()
    assert y.grad_fn.name() == y.grad_fn.name == "sum"
    acc = y.grad_fn.next_functions[0][0].next_functions[0][0]
    assert acc.name() == "AccumulateGrad"


def test_expand_that_repeats_nothing_is_writable():
    res = []
    for m in (torch, rg):
        x = m.arange(3.0)
        x.expand(1, 3).mul_(2)
        z = m.tensor(2.0).expand(1)
        z.add_(1)
        res.append(np.concatenate([x.numpy(), z.numpy()]))
    np.testing.assert_array_equal(res[1], res[0])
    with pytest.raises(RuntimeError, match="read-only"):
        rg.zeros(1, 3).expand(2, 3).add_(1)


def test_sdpa_kernel_selects_nothing_that_changes_results():
    from retrograd.nn.attention import SDPBackend, sdpa_kernel
    q = rg.randn(1, 2, 4, 8)
    ref = rg.nn.functional.scaled_dot_product_attention(q, q, q)
    with sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.MATH]):
        out = rg.nn.functional.scaled_dot_product_attention(q, q, q)
    np.testing.assert_array_equal(out.numpy(), ref.numpy())
    with pytest.raises(TypeError):
        with sdpa_kernel("math"):
            pass
