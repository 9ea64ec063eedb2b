"""layer_norm's compiled kernels (retrograd.kernels.norms) and its NumPy path, each case run
under both (`kernels.use`), against PyTorch in float32 and float64: values and the three
gradients, dense / repeated-row / strided cotangents, affine variants, NaN and infinity,
non-contiguous inputs, edge shapes, rows of large mean (where one-pass statistics
cancel), rows split over threads, the parameters' rules on their own, and the generic
paths (double backward) still right with the kernels on."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import retrograd as rg
from retrograd import kernels, threads
from retrograd.nn import functional as F

MODES = [("numba", 0), ("numpy", None)]  # min_size 0: the kernels take every size


@pytest.fixture(params=MODES, ids=[m for m, _ in MODES])
def mode(request):
    name, size = request.param
    with kernels.use(name, min_size=size):
        yield name


def _run(lib, x, w, b, loss, shape=None, needs=(True, True, True)):
    """Forward and backward of `loss` through layer_norm in `lib`: [y, dx, dw, db] (None
    for an input that is None or wants no gradient)."""
    ts = [None if a is None else lib.tensor(a, requires_grad=k) for a, k in zip((x, w, b), needs)]
    shape = shape or (x.shape[-1],)
    fn = F.layer_norm if lib is rg else torch.nn.functional.layer_norm
    y = fn(ts[0], shape, ts[1], ts[2])
    loss(lib, y).backward()
    ys = y.numpy() if lib is rg else y.detach().numpy()
    return [ys] + [None if t is None or t.grad is None else t.grad.numpy() for t in ts]


def _close(ours, theirs, **tol):
    for a, t in zip(ours, theirs, strict=True):
        assert (a is None) == (t is None)
        if a is not None:
            assert a.dtype == t.dtype and a.shape == t.shape
            torch.testing.assert_close(torch.from_numpy(a), torch.from_numpy(t), equal_nan=True,
                                       **tol)


def _dense(v):
    return lambda lib, y: (y * lib.tensor(v)).sum()


def _arrays(rng, shape, dt, offset=0.0, affine="wb"):
    n = shape[-1]
    x = (rng.standard_normal(shape) * 2 + offset).astype(dt)
    w = rng.standard_normal(n).astype(dt) if "w" in affine else None
    b = rng.standard_normal(n).astype(dt) if "b" in affine else None
    return x, w, b


LOSSES = {
    "dense": lambda v: _dense(v),
    "sum": lambda v: lambda lib, y: y.sum(),  # g: a scalar broadcast over every row
    "row": lambda v: lambda lib, y: (y.sum(0) * lib.tensor(v[0])).sum(),  # one row repeated
    "strided": lambda v: lambda lib, y: (y * lib.tensor(np.ascontiguousarray(v.T)).T).sum(),
}


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("loss", sorted(LOSSES))
@pytest.mark.parametrize("affine", ["wb", "w", "b", ""])
def test_values_and_gradients_match_torch(mode, dt, loss, affine):
    rng = np.random.default_rng(1)
    x, w, b = _arrays(rng, (37, 24), dt, 0.5, affine)
    v = rng.standard_normal((24, 37)).T if loss == "strided" else rng.standard_normal((37, 24))
    fn = LOSSES[loss](v.astype(dt))
    _close(_run(rg, x, w, b, fn), _run(torch, x, w, b, fn))


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_several_normalised_axes_and_a_non_contiguous_input(mode, dt):
    rng = np.random.default_rng(2)
    base = rng.standard_normal((5, 4, 6, 14)).astype(dt)
    x = base[:, :, :, ::2].transpose(1, 0, 2, 3)  # (4, 5, 6, 7), strided
    w, b = rng.standard_normal((6, 7)).astype(dt), rng.standard_normal((6, 7)).astype(dt)
    fn = _dense(rng.standard_normal(x.shape).astype(dt))
    _close(_run(rg, x, w, b, fn, (6, 7)), _run(torch, x, w, b, fn, (6, 7)))


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(1, 9), (11, 1), (1, 1), (0, 5), (3, 0, 4)])
def test_edge_shapes(mode, dt, shape):
    rng = np.random.default_rng(3)
    x, w, b = _arrays(rng, shape, dt)
    fn = _dense(rng.standard_normal(shape).astype(dt))
    # rows of one element: xhat is 0 and the gradients' exact values too; both libraries
    # leave rounding noise there of order 1/sqrt(eps) (rstd) times the dtype's epsilon
    tol = {"atol": 16 * float(np.finfo(dt).eps) / np.sqrt(1e-5), "rtol": 0} if shape[-1] == 1 \
        else {}
    _close(_run(rg, x, w, b, fn), _run(torch, x, w, b, fn), **tol)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("loss", ["dense", "sum"])
def test_nan_and_infinity_propagate_as_in_torch(mode, dt, loss):
    rng = np.random.default_rng(4)
    x, w, b = _arrays(rng, (6, 10), dt)
    x[1, 3], x[3, 0], x[4, 7] = np.nan, np.inf, -np.inf
    fn = LOSSES[loss](rng.standard_normal((6, 10)).astype(dt))
    with np.errstate(invalid="ignore", over="ignore"):
        ours = _run(rg, x, w, b, fn)
    _close(ours, _run(torch, x, w, b, fn))


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_an_infinite_weight_gives_torch_s_output_with_the_kernels(dt):
    """xhat times an infinite weight is +-inf (not NaN) in that column. (The gradients
    are then inf - inf in most places; PyTorch's formula makes them NaN in more places
    than ours, an artefact of the order of its sums, so only the output is compared.)"""
    rng = np.random.default_rng(11)
    x, w, b = _arrays(rng, (6, 10), dt)
    w[5] = np.inf
    with kernels.use("numba", min_size=0):
        y = F.layer_norm(rg.tensor(x), (10,), rg.tensor(w), rg.tensor(b)).numpy()
    yt = torch.nn.functional.layer_norm(torch.tensor(x), (10,), torch.tensor(w), torch.tensor(b))
    _close([y], [yt.numpy()])


@pytest.mark.parametrize("loss", ["dense", "sum"])
def test_rows_of_large_mean_keep_their_precision(mode, loss):
    """Rows of mean 1e3 and spread 2 in float32: within a few float32 roundings of torch's
    float64 answer for the same inputs (statistics of the form E[x^2] - mean^2 would lose
    about a million ulps)."""
    rng = np.random.default_rng(5)
    x, w, b = _arrays(rng, (40, 300), np.float32, 1e3)
    v = rng.standard_normal(x.shape)
    ours = _run(rg, x, w, b, LOSSES[loss](v.astype(np.float32)))
    exact = _run(torch, *(a.astype(np.float64) for a in (x, w, b)), LOSSES[loss](v))
    for a, e in zip(ours, exact, strict=True):
        scale = np.abs(e).max()
        np.testing.assert_allclose(a, e, rtol=0, atol=2e-4 * scale)  # float32 x's own rounding
        # limits this: 1e3 * 2^-24 against a spread of 2 is about 3e-5


@pytest.mark.parametrize("needs", [(False, True, True), (False, True, False),
                                   (False, False, True), (True, False, False)])
@pytest.mark.parametrize("loss", ["dense", "sum"])
def test_parameter_rules_without_the_x_rule(mode, needs, loss):
    rng = np.random.default_rng(6)
    x, w, b = _arrays(rng, (3, 5, 16), np.float64, 40.0)
    fn = LOSSES[loss](rng.standard_normal(x.shape))
    _close(_run(rg, x, w, b, fn, needs=needs), _run(torch, x, w, b, fn, needs=needs))


def test_a_retained_graph_with_two_cotangents_and_then_the_weight_alone(mode):
    rng = np.random.default_rng(7)
    x, w, b = _arrays(rng, (6, 12), np.float64, 5.0)
    ours = [rg.tensor(a, requires_grad=True) for a in (x, w, b)]
    theirs = [torch.tensor(a, requires_grad=True) for a in (x, w, b)]
    y = F.layer_norm(ours[0], (12,), ours[1], ours[2])
    yt = torch.nn.functional.layer_norm(theirs[0], (12,), theirs[1], theirs[2])
    for g in (rng.standard_normal(x.shape), rng.standard_normal(x.shape)):
        got = rg.autograd.grad(y, ours, rg.tensor(g), retain_graph=True)
        want = torch.autograd.grad(yt, theirs, torch.tensor(g), retain_graph=True)
        _close([a.numpy() for a in got], [t.numpy() for t in want])
    for which in (1, 2):  # each parameter's rule on its own, the other's left behind unused
        got = rg.autograd.grad(y, [ours[which]], rg.tensor(g), retain_graph=True)
        want = torch.autograd.grad(yt, [theirs[which]], torch.tensor(g), retain_graph=True)
        _close([got[0].numpy()], [want[0].numpy()])


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_rows_split_over_threads_match_torch(mode, dt, monkeypatch):
    monkeypatch.setattr(threads, "_MIN_WORK", 1)  # small inputs: split them anyway
    old = threads.num_threads()
    threads.set_num_threads(3)
    try:
        assert len(threads.chunks(50, 10.0 * 50 * 20)) == 3
        rng = np.random.default_rng(8)
        x, w, b = _arrays(rng, (50, 20), dt, 3.0)
        for loss in ("dense", "sum"):
            fn = LOSSES[loss](rng.standard_normal(x.shape).astype(dt))
            _close(_run(rg, x, w, b, fn), _run(torch, x, w, b, fn))
    finally:
        threads.set_num_threads(old)


def test_a_forward_by_the_kernels_differentiates_after_they_are_switched_off():
    """The backward follows the forward's saving (rows of large mean stay precise)."""
    rng = np.random.default_rng(9)
    x, w, b = _arrays(rng, (8, 30), np.float64, 1e6)
    ours = [rg.tensor(a, requires_grad=True) for a in (x, w, b)]
    with kernels.use("numba", min_size=0):
        y = F.layer_norm(ours[0], (30,), ours[1], ours[2])
    g = rng.standard_normal(x.shape)
    with kernels.use("numpy"):
        y.backward(rg.tensor(g))
    ts = [torch.tensor(a, requires_grad=True) for a in (x, w, b)]
    torch.nn.functional.layer_norm(ts[0], (30,), ts[1], ts[2]).backward(torch.tensor(g))
    _close([a.grad.numpy() for a in ours], [t.grad.numpy() for t in ts])


def test_double_backward_and_gradcheck_take_the_generic_path(mode):
    rng = np.random.default_rng(10)
    x, w, b = _arrays(rng, (4, 9), np.float64, 1.0)
    v = rng.standard_normal(x.shape)
    ours = [rg.tensor(a, requires_grad=True) for a in (x, w, b)]
    theirs = [torch.tensor(a, requires_grad=True) for a in (x, w, b)]
    y = (F.layer_norm(ours[0], (9,), ours[1], ours[2]) * rg.tensor(v)).sum()
    yt = (torch.nn.functional.layer_norm(theirs[0], (9,), theirs[1], theirs[2])
          * torch.tensor(v)).sum()
    got = rg.autograd.grad(y, ours, create_graph=True)
    want = torch.autograd.grad(yt, theirs, create_graph=True)
    _close([a.numpy() for a in got], [t.detach().numpy() for t in want])
    (got[0] * got[0]).sum().backward()
    (want[0] * want[0]).sum().backward()
    _close([None if a.grad is None else a.grad.numpy() for a in ours],
           [None if t.grad is None else t.grad.numpy() for t in theirs])
    assert rg.autograd.gradcheck(lambda a, c, d: F.layer_norm(a, (9,), c, d), ours)
