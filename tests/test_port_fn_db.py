"""Gaps found by sweeping PyTorch's `get_nn_functional_tests()` (torch.testing._internal.
jit_metaprogramming_utils: 170 entries of torch.nn.functional calls with their inputs) on
rg.nn.functional: each entry called in both libraries on the same float64 data (and float32,
and with inputs that need no grad), comparing values, dtypes, shapes, which outputs require
grad, the inputs after the call (running statistics), gradients of every differentiable
input for a random cotangent, second-order gradients, forward-mode jvps, in-place results
and exception types; random ops (dropout*, alpha_dropout, rrelu, gumbel_softmax,
fractional_max_pool) by shapes, dtypes, eval/p=0/p=1 identity and the mask's support. Then
each entry again with its first input changed: float32, float16, integer, bool, complex,
one more or one fewer dim, 0-d, an empty first or last dim, non-contiguous; and parameter
grids around the entries (interpolate, pools, grid_sample, pad, embedding(_bag), norms,
convolutions) and ~190 error cases. Each test rebuilds a failing case by hand and compares
with torch computed here."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from port_compare import close
from port_compare import pair as _pair
from port_compare import raise_alike as _raise_alike

import retrograd as rg


def _grads(e, a, ts, rs, seed: int = 5):
    """Gradients of <out, cot> for a random cotangent, torch's and retrograd's, compared."""
    cot = np.random.default_rng(seed).standard_normal(tuple(e.shape))
    gt = torch.autograd.grad((e * torch.tensor(cot)).sum(), ts, allow_unused=True)
    gr = rg.autograd.grad((a * rg.tensor(cot)).sum(), rs, allow_unused=True)
    for t, r in zip(gt, gr):
        close(r, t)


# --------------------------------------------------- conv_tbc

@pytest.mark.parametrize("t,k,pad", [(0, 5, 2), (0, 1, 0), (2, 3, 0), (0, 5, 3), (1, 2, 1)])
def test_conv_tbc_takes_an_empty_time_axis_and_an_empty_output(t, k, pad):
    """torch.conv_tbc gives time + 2 pad - k + 1 steps, zero included, and takes an empty
    input (the bias alone where the padding reaches past the kernel); was refused."""
    xt, xr = _pair((t, 2, 3))
    wt, wr = _pair((k, 3, 4), 1)
    bt, br = _pair((4,), 2)
    e = torch.nn.functional.conv_tbc(xt, wt, bt, pad)
    a = rg.nn.functional.conv_tbc(xr, wr, br, pad)
    close(a, e)
    assert a.requires_grad
    _grads(e, a, [xt, wt, bt], [xr, wr, br])


def test_conv_tbc_negative_output_length_raises():
    _raise_alike(lambda L: L.nn.functional.conv_tbc(
        L.zeros(1, 2, 3), L.zeros(5, 3, 4), L.zeros(4), 1), RuntimeError)


# --------------------------------------------------- soft_margin_loss dtypes

@pytest.mark.parametrize("xd,yd", [("int64", "float64"), ("int32", "float32"),
                                   ("bool", "float32")])
def test_soft_margin_loss_refuses_an_integer_input_with_a_floating_target(xd, yd):
    """It computes into the input's dtype: an integer input with a floating target raises
    ("result type Double can't be cast to the desired output type Long"); was a float loss."""
    _raise_alike(lambda L: L.nn.functional.soft_margin_loss(
        L.ones(3, 4, dtype=getattr(L, xd)), L.ones(3, 4, dtype=getattr(L, yd)),
        reduction="none"), RuntimeError)


@pytest.mark.parametrize("yd", ["int64", "float64"])
def test_soft_margin_loss_floating_input_keeps_its_dtype(yd):
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    y = np.sign(np.random.default_rng(1).standard_normal((3, 4))).astype(yd)
    e = torch.nn.functional.soft_margin_loss(torch.tensor(x), torch.tensor(y))
    a = rg.nn.functional.soft_margin_loss(rg.tensor(x), rg.tensor(y))
    close(a, e, tol=1e-6)


# --------------------------------------------------- normalize(out=)

def test_normalize_takes_out():
    """F.normalize's `out` (torch.div(input, denom, out=out)): written there and returned,
    cast into a float32 out, refused for an integer out or an input that requires grad."""
    x = np.random.default_rng(0).random((3, 4))
    for dt in ("float64", "float32"):
        ot, orr = torch.zeros(3, 4, dtype=getattr(torch, dt)), rg.zeros(3, 4, dtype=getattr(rg, dt))
        e = torch.nn.functional.normalize(torch.tensor(x), out=ot)
        a = rg.nn.functional.normalize(rg.tensor(x), out=orr)
        assert a is orr and e is ot
        close(orr, ot)
    _raise_alike(lambda L: L.nn.functional.normalize(
        L.tensor(x), out=L.zeros(3, 4, dtype=L.int64)), RuntimeError)
    _raise_alike(lambda L: L.nn.functional.normalize(
        L.tensor(x, requires_grad=True), out=L.zeros(3, 4, dtype=L.float64)), RuntimeError)


# --------------------------------------------------- embedding padding_idx, max_unpool indices

@pytest.mark.parametrize("pi", [5, -6])
def test_embedding_padding_idx_outside_the_table_is_an_assertion_error(pi):
    """torch's F.embedding asserts (AssertionError; was a ShapeError only); its
    embedding_bag raises RuntimeError, which the same error still is."""
    _raise_alike(lambda L: L.nn.functional.embedding(
        L.tensor([1, 2]), L.zeros(5, 3), padding_idx=pi), AssertionError)
    _raise_alike(lambda L: L.nn.functional.embedding_bag(
        L.tensor([1, 2]), L.zeros(5, 3), L.tensor([0]), padding_idx=pi), RuntimeError)


@pytest.mark.parametrize("nd", [1, 2])
@pytest.mark.parametrize("dt", ["int32", "int16", "bool", "float32"])
def test_max_unpool_takes_int64_indices_only(nd, dt):
    """torch: "elements in indices should be type int64" (RuntimeError) for every other
    dtype; int32 indices were taken, a float's error was a TypeError."""
    x, i = [[2.0, 4.0]], [[1, 0]]
    for _ in range(nd):
        x, i = [x], [i]
    _raise_alike(lambda L: getattr(L.nn.functional, f"max_unpool{nd}d")(
        L.tensor(x), L.tensor(i).to(getattr(L, dt)), 2, 2), RuntimeError)


# --------------------------------------------------- instance_norm running statistics' dtype

@pytest.mark.parametrize("use_input_stats", [True, False])
@pytest.mark.parametrize("xd,rd", [("float64", "float32"), ("float32", "float64")])
def test_instance_norm_takes_running_stats_of_another_dtype(xd, rd, use_input_stats):
    """torch copies the running statistics: another floating dtype than the input's is taken
    (the result in the input's dtype, the statistics updated in their own); was a
    MixedDtypeError. A weight of another dtype is still refused, as torch does."""
    xv = np.random.default_rng(0).standard_normal((3, 4, 5))
    mv, vv = np.random.default_rng(1).random(4), np.random.default_rng(2).random(4) + 0.5
    cot = np.random.default_rng(3).standard_normal((3, 4, 5))
    res = []
    for L in (torch, rg):
        x = L.tensor(xv).to(getattr(L, xd)).requires_grad_()
        rm, rv = L.tensor(mv).to(getattr(L, rd)), L.tensor(vv).to(getattr(L, rd))
        y = L.nn.functional.instance_norm(x, rm, rv, use_input_stats=use_input_stats)
        g, = L.autograd.grad((y * L.tensor(cot).to(y.dtype)).sum(), x)
        res.append((y, g, rm, rv))
    for a, e in zip(res[1], res[0]):
        close(a, e, tol=1e-5)
    _raise_alike(lambda L: L.nn.functional.instance_norm(
        L.tensor(xv).to(getattr(L, xd)), L.tensor(mv).to(getattr(L, rd)),
        L.tensor(vv).to(getattr(L, rd)), L.ones(4, dtype=getattr(L, rd)),
        use_input_stats=use_input_stats), RuntimeError)


# --------------------------------------------------- complex inputs torch's kernels refuse

_C = np.random.default_rng(0).standard_normal((2, 3, 4, 4)) * (1 + 0.5j)

_COMPLEX_REFUSED = {
    "softmax": lambda L, x: L.nn.functional.softmax(x, 1),
    "log_softmax": lambda L, x: L.nn.functional.log_softmax(x, 1),
    "Tensor.softmax": lambda L, x: x.softmax(-1),
    "dropout": lambda L, x: L.nn.functional.dropout(x, 0.5),
    "dropout2d": lambda L, x: L.nn.functional.dropout2d(x, 0.5),
    "alpha_dropout": lambda L, x: L.nn.functional.alpha_dropout(x, 0.5, True),
    "nll_loss": lambda L, x: L.nn.functional.nll_loss(x[:, :, 0, 0], L.tensor([0, 2])),
    "cross_entropy": lambda L, x: L.nn.functional.cross_entropy(x[:, :, 0, 0],
                                                                L.tensor([0, 2])),
    "adaptive_avg_pool2d": lambda L, x: L.nn.functional.adaptive_avg_pool2d(x, 2),
    "adaptive_avg_pool1d": lambda L, x: L.nn.functional.adaptive_avg_pool1d(x[0], 3),
}


@pytest.mark.parametrize("name", sorted(_COMPLEX_REFUSED))
def test_complex_inputs_torch_refuses_are_refused(name):
    """NotImplementedError in torch ("... not implemented for 'ComplexDouble'"); each gave a
    complex result."""
    _raise_alike(lambda L: _COMPLEX_REFUSED[name](L, L.tensor(_C)), NotImplementedError)


@pytest.mark.parametrize("name", ["eval dropout", "p=1 dropout", "adaptive_avg_pool2d 1"])
def test_complex_inputs_torch_takes_still_work(name):
    """Eval and p = 1 dropout draw no mask; an adaptive average to size 1 is a mean."""
    f = {"eval dropout": lambda L, x: L.nn.functional.dropout(x, 0.5, False),
         "p=1 dropout": lambda L, x: L.nn.functional.dropout(x, 1.0),
         "adaptive_avg_pool2d 1": lambda L, x: L.nn.functional.adaptive_avg_pool2d(x, 1)}[name]
    close(f(rg, rg.tensor(_C)), f(torch, torch.tensor(_C)))


# --------------------------------------------------- float16 inputs torch's kernels refuse

_HALF_REFUSED = {
    "pdist": lambda L: L.nn.functional.pdist(L.ones(3, 2, dtype=L.float16)),
    "multilabel_margin_loss": lambda L: L.nn.functional.multilabel_margin_loss(
        L.ones(1, 3, dtype=L.float16), L.tensor([[0, 1, -1]])),
    "multi_margin_loss": lambda L: L.nn.functional.multi_margin_loss(
        L.ones(2, 3, dtype=L.float16), L.tensor([0, 1])),
    "ctc_loss": lambda L: L.nn.functional.ctc_loss(
        L.zeros(4, 1, 3, dtype=L.float16), L.tensor([[1, 2]]), L.tensor([4]), L.tensor([2])),
}


@pytest.mark.parametrize("name", sorted(_HALF_REFUSED))
def test_float16_inputs_torch_refuses_are_refused(name):
    """NotImplementedError in torch ("... not implemented for 'Half'", a dispatch refusal
    on every CPU); each gave a float16 result."""
    _raise_alike(_HALF_REFUSED[name], NotImplementedError)


@pytest.mark.parametrize("shape", [(5, 3, 0), (0, 3, 4), (2, 3, 0, 2)])
@pytest.mark.parametrize("dt", ["float64", "float16"])
def test_instance_norm_of_an_empty_input_keeps_the_running_stats(shape, dt):
    """PyTorch's batch norm skips empty instances: the running statistics stay as they are
    (they became NaN here, the mean of nothing); an empty batch gives NaN in both."""
    res = []
    for L in (torch, rg):
        rm, rv = L.full((3,), 0.5, dtype=L.float32), L.full((3,), 2.0, dtype=L.float32)
        y = L.nn.functional.instance_norm(L.zeros(*shape, dtype=getattr(L, dt)), rm, rv)
        res.append((y, rm, rv))
    for a, e in zip(res[1], res[0]):
        close(a, e)


@pytest.mark.parametrize(("name", "shape", "out"), [
    ("adaptive_max_pool1d", (2, 0, 4), 2), ("adaptive_max_pool2d", (2, 0, 4, 4), (2, 2)),
    ("adaptive_max_pool3d", (2, 0, 4, 4, 4), 2), ("adaptive_avg_pool3d", (2, 0, 4, 4, 4), 2),
    ("adaptive_avg_pool3d", (2, 0, 4, 4, 4), 1), ("adaptive_avg_pool2d", (2, 0, 4, 4), 2),
    ("adaptive_max_pool2d", (0, 4, 4), 2), ("adaptive_avg_pool3d", (0, 4, 4, 4), 2),
    ("adaptive_max_pool2d", (0, 0, 4, 4), 2)])
def test_adaptive_pools_with_no_channels_as_torch(name, shape, out):
    """A batched input with no channels: torch's max pools and its 3-D average pool (but
    for a plain mean) refuse it; an unbatched input's first dim counts as its batch."""
    x = torch.zeros(shape)
    try:
        want = getattr(torch.nn.functional, name)(x, out)
    except RuntimeError:
        with pytest.raises(RuntimeError, match="non-zero size"):
            getattr(rg.nn.functional, name)(rg.zeros(*shape), out)
        return
    got = getattr(rg.nn.functional, name)(rg.zeros(*shape), out)
    assert tuple(got.shape) == tuple(want.shape)
