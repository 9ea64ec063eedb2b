"""Losses found different from torch by sweeping PyTorch's old-style loss databases in
`torch.testing._internal.common_nn`: `criterion_tests` (the 48 `*_no_batch_dim_*` entries)
and the loss entries of `module_tests + get_new_module_tests()` (the 50 `*_no_reduce*`,
`SmoothL1Loss_beta`/`_zero_beta`, `HuberLoss_delta`, NLL/NLL2d/NLLNd with weights and
ignore_index, MultiMargin, MultiLabelMargin, L1 complex, ...). Each entry was run in both
libraries in functional and module form, with each of the three reductions and in float64:
values, dtypes, shapes, the gradient of every floating argument (target included) and
double backward; plus about 550 bad or unusual inputs those entries imply (shapes that do
not fit, target dtypes, classes out of range, 1-D inputs, empty batches) for the
exception types. The entries all matched; what differed was among the bad inputs, below.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import retrograd as rg


def _pair(*arrays, grad=()):
    """The same arrays as torch and rg tensors (those at positions `grad` require grad)."""
    t = [torch.tensor(a, requires_grad=i in grad) for i, a in enumerate(arrays)]
    r = [rg.tensor(a, requires_grad=i in grad) for i, a in enumerate(arrays)]
    return t, r


def _close(r, t, tol=1e-12):
    r, t = r.detach().numpy(), t.detach().numpy()
    assert r.shape == t.shape and r.dtype == t.dtype, (r.shape, t.shape, r.dtype, t.dtype)
    np.testing.assert_allclose(r, t, rtol=tol, atol=tol)


@pytest.mark.parametrize("reduction", ["none", "mean"])  # 'sum' adds up every element
@pytest.mark.parametrize("form", ["fn", "module"])
def test_multilabel_soft_margin_loss_sums_input_class_dim_of_a_broadcast_loss(reduction, form):
    # torch sums dim input.ndim - 1 of the (broadcast) loss, which is not the last dim when
    # the target has more dims; rg summed the last dim (silently other values)
    g = np.random.default_rng(0)
    x, y, w = g.normal(size=(3, 4)), (g.random((2, 3, 4)) > 0.5) * 1.0, g.random(4)
    (tx, ty, tw), (rx, ry, rw) = _pair(x, y, w, grad=(0, 1))
    outs = []
    for L, (a, b, c) in ((torch, (tx, ty, tw)), (rg, (rx, ry, rw))):
        if form == "fn":
            out = L.nn.functional.multilabel_soft_margin_loss(a, b, weight=c,
                                                              reduction=reduction)
        else:
            out = L.nn.MultiLabelSoftMarginLoss(weight=c, reduction=reduction)(a, b)
        outs.append((out, L.autograd.grad(out.sum(), (a, b))))
    (to, tg), (ro, rgr) = outs
    _close(ro, to)
    for r, t in zip(rgr, tg, strict=True):
        _close(r, t)


def test_multilabel_soft_margin_loss_weight_broadcasting_the_loss():
    g = np.random.default_rng(1)
    x, y, w = g.normal(size=(3, 4)), (g.random((3, 4)) > 0.5) * 1.0, g.random((2, 1, 4))
    (tx, ty, tw), (rx, ry, rw) = _pair(x, y, w)
    for red in ("none", "mean"):
        _close(rg.nn.functional.multilabel_soft_margin_loss(rx, ry, rw, reduction=red),
               torch.nn.functional.multilabel_soft_margin_loss(tx, ty, tw, reduction=red))


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("fn", ["nll_loss", "cross_entropy"])
def test_unbatched_input_takes_a_one_element_1d_target(fn, reduction):
    # torch reads target [k] of a (C,) input as the 0-d target k; rg refused it
    x = np.log(np.array([0.1, 0.2, 0.3, 0.4]))
    w = np.array([0.5, 2.0, 1.0, 3.0])
    for k, kw in ((1, {}), (2, {"weight": w}), (3, {"ignore_index": 3})):
        (tx, tk, tk0), (rx, rk, _) = _pair(x, np.array([k]), np.array(k), grad=(0,))
        tkw = {a: torch.tensor(v) if isinstance(v, np.ndarray) else v for a, v in kw.items()}
        rkw = {a: rg.tensor(v) if isinstance(v, np.ndarray) else v for a, v in kw.items()}
        t = getattr(torch.nn.functional, fn)(tx, tk, reduction=reduction, **tkw)
        r = getattr(rg.nn.functional, fn)(rx, rk, reduction=reduction, **rkw)
        np.testing.assert_equal(r.detach().numpy(), t.detach().numpy())  # nan when ignored
        assert r.shape == t.shape == ()
        # torch's own backward refuses this target ("size mismatch"): rg's gradient is
        # the 0-d target's, which torch does give
        t0 = getattr(torch.nn.functional, fn)(tx, tk0, reduction=reduction, **tkw)
        _close(rg.autograd.grad(r, rx)[0], torch.autograd.grad(t0, tx)[0])


@pytest.mark.parametrize("fn", ["nll_loss", "cross_entropy"])
def test_unbatched_input_refuses_longer_or_out_of_range_1d_targets(fn):
    x = np.log(np.array([0.1, 0.2, 0.3, 0.4]))
    for target, err in (([1, 2], ValueError), ([7], IndexError)):
        (tx, ty), (rx, ry) = _pair(x, np.array(target))
        with pytest.raises(err):
            getattr(torch.nn.functional, fn)(tx, ty)
        with pytest.raises(err):
            getattr(rg.nn.functional, fn)(rx, ry)


@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.int16])
def test_margin_losses_take_only_int64_class_indices(dtype):
    # torch: "expected scalar type Long but found Int"; rg accepted any integer dtype
    x = np.random.default_rng(2).normal(size=(3, 4))
    for fn, y in (("multi_margin_loss", np.array([0, 1, 1])),
                  ("multilabel_margin_loss", np.array([[0, 1, -1, 1]] * 3))):
        if dtype == np.uint8:
            y = np.abs(y)
        (tx, ty), (rx, ry) = _pair(x, y.astype(dtype))
        with pytest.raises(RuntimeError):
            getattr(torch.nn.functional, fn)(tx, ty)
        with pytest.raises(RuntimeError):
            getattr(rg.nn.functional, fn)(rx, ry)


_F = np.array([0.2, 0.7, 0.4])
_B = np.array([True, False, True])
_I = np.array([0, 1, 0])


@pytest.mark.parametrize("fn,a,b,err", [
    ("l1_loss", _F, _B, RuntimeError),        # torch: no `-` with a bool tensor
    ("l1_loss", _B, _F, RuntimeError),
    ("huber_loss", _I, _F, RuntimeError),     # torch: Double can't be cast to Long
    ("huber_loss", _B, _F, RuntimeError),
    ("binary_cross_entropy", _I, _F, RuntimeError),  # Found dtype Double, expected Long
    ("binary_cross_entropy", _B, _F, RuntimeError),
    ("binary_cross_entropy_with_logits", _I, _I, NotImplementedError),  # log_sigmoid
    ("binary_cross_entropy_with_logits", _B, _B, NotImplementedError),
])
def test_losses_refuse_the_integer_and_bool_tensors_torch_refuses(fn, a, b, err):
    (ta, tb), (ra, rb) = _pair(a, b)
    with pytest.raises(err):
        getattr(torch.nn.functional, fn)(ta, tb)
    with pytest.raises(err):
        getattr(rg.nn.functional, fn)(ra, rb)

