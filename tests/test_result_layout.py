"""Results PyTorch returns contiguous are contiguous here too, so ported `.view` calls work:
every convolution's output (any path: columns, unit stride, strided, transposed, grouped,
with or without bias) and the gradients `autograd.grad` returns. Values and strides
against torch."""

import itertools

import numpy as np
import pytest
import torch

import retrograd as rg

CASES = list(itertools.product((1, 2, 3), (1, 2), (1, 2), (0, 1), (1, 2), (True, False)))


@pytest.mark.parametrize(("nd", "n", "stride", "pad", "groups", "bias"), CASES)
def test_convolutions_are_row_major_and_view_as_torchs(nd, n, stride, pad, groups, bias):
    rng = np.random.default_rng(nd * 100 + n)
    xs = rng.standard_normal((n, 4) + (6,) * nd)
    ws = rng.standard_normal((6, 4 // groups) + (3,) * nd)
    wt = rng.standard_normal((4, 6 // groups) + (3,) * nd)
    bs = rng.standard_normal(6) if bias else None
    for name, w in ((f"conv{nd}d", ws), (f"conv_transpose{nd}d", wt)):
        outs = []
        for lib in (rg, torch):
            x = lib.tensor(xs, requires_grad=True)
            b = None if bs is None else lib.tensor(bs)
            y = getattr(lib.nn.functional, name)(x, lib.tensor(w), b, stride=stride,
                                                 padding=pad, groups=groups)
            flat = lib.relu(y).view(n, -1)
            (g,) = lib.autograd.grad((flat * flat).sum(), x)
            outs.append((y.is_contiguous(), y.stride(), flat.detach().numpy(),
                         g.is_contiguous(), g.view(n, -1).detach().numpy()))
        (rc, rs, rf, rgc, rgv), (tc, ts, tf, tgc, tgv) = outs
        assert (rc, rs, rgc) == (tc, ts, tgc)
        np.testing.assert_allclose(rf, tf, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(rgv, tgv, rtol=1e-10, atol=1e-12)


def test_autograd_grad_results_are_row_major_with_and_without_create_graph():
    for create in (False, True):
        x = rg.randn(3, 4, dtype=rg.float64, requires_grad=True)
        (g,) = rg.autograd.grad((x.t() * rg.arange(3.0)).sum(), x, create_graph=create)
        assert g.is_contiguous() and g.view(-1).shape == (12,)


def test_strides_of_empty_tensors_are_torchs():
    # NumPy gives new empty memory zero strides; PyTorch's are row-major with a size of 0
    # counted as 1; a slice of non-empty memory keeps its parent's steps in both
    for shape in [(0,), (0, 3), (3, 0), (2, 0, 4), (0, 0)]:
        assert rg.zeros(shape).stride() == torch.zeros(shape).stride()
        assert rg.empty(shape, dtype=rg.int64).stride() == torch.empty(shape).stride()
        assert rg.zeros(shape).stride(-1) == torch.zeros(shape).stride(-1)
    assert rg.zeros(3, 4)[:, :0].stride() == torch.zeros(3, 4)[:, :0].stride()
    assert rg.zeros(3, 4)[1:1].stride() == torch.zeros(3, 4)[1:1].stride()
