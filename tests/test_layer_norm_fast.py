"""layer_norm's fast backward paths against PyTorch in float64: a cotangent that is one row
repeated (from sum, mean or a row-vector product), a strided one, the parameters' gradients
the x rule hands to the weight's and bias's rules (and the rules on their own when x needs
no gradient), and a graph run backward twice with different cotangents."""

import numpy as np
import pytest
import torch

import retrograd as rg
from retrograd.nn import functional as F

RNG = np.random.default_rng(23)


def _both(x, w, b, needs=(True, True, True)):
    ours = [None if a is None else rg.tensor(a, requires_grad=k) for a, k in zip((x, w, b), needs)]
    theirs = [None if a is None else torch.tensor(a, requires_grad=k)
              for a, k in zip((x, w, b), needs)]
    return ours, theirs


def _grads(ts):
    return [None if t is None or t.grad is None else np.asarray(t.grad.numpy()) for t in ts]


def _close(ours, theirs):
    for a, t in zip(ours, theirs, strict=True):
        assert (a is None) == (t is None)
        if a is not None:
            np.testing.assert_allclose(a, t, rtol=1e-10, atol=1e-11)


LOSSES = {
    "sum": lambda lib, y, v: y.sum(),
    "mean": lambda lib, y, v: y.mean(),
    "row": lambda lib, y, v: (y.sum(0) * lib.tensor(v[0])).sum(),  # one row repeated
    "dense": lambda lib, y, v: (y * lib.tensor(v)).sum(),
    "strided": lambda lib, y, v: (y * lib.tensor(np.ascontiguousarray(v.T)).T).sum(),
}


@pytest.mark.parametrize("loss", sorted(LOSSES))
@pytest.mark.parametrize("offset", [0.0, 1e3])  # one-pass and centred statistics
@pytest.mark.parametrize("affine", ["wb", "w", "b", ""])
def test_backward_matches_torch(loss, offset, affine):
    x = RNG.standard_normal((40, 24)) + offset
    w = RNG.standard_normal(24) if "w" in affine else None
    b = RNG.standard_normal(24) if "b" in affine else None
    v = RNG.standard_normal((24, 40)).T if loss == "strided" else RNG.standard_normal((40, 24))
    ours, theirs = _both(x, w, b)
    y = F.layer_norm(ours[0], (24,), ours[1], ours[2])
    yt = torch.nn.functional.layer_norm(theirs[0], (24,), theirs[1], theirs[2])
    LOSSES[loss](rg, y, v).backward()
    LOSSES[loss](torch, yt, v).backward()
    _close([y.numpy()] + _grads(ours), [yt.detach().numpy()] + _grads(theirs))


@pytest.mark.parametrize("needs", [(False, True, True), (False, True, False),
                                   (False, False, True), (True, False, False)])
@pytest.mark.parametrize("loss", ["sum", "dense"])
def test_parameter_rules_without_the_x_rule(needs, loss):
    """Whichever inputs want gradients, each rule gives torch's (the weight's and bias's
    rules compute their own when the x rule did not run)."""
    x, w, b = RNG.standard_normal((3, 5, 16)), RNG.standard_normal(16), RNG.standard_normal(16)
    v = RNG.standard_normal(x.shape)
    ours, theirs = _both(x, w, b, needs)
    y = F.layer_norm(ours[0], (16,), ours[1], ours[2])
    yt = torch.nn.functional.layer_norm(theirs[0], (16,), theirs[1], theirs[2])
    LOSSES[loss](rg, y, v).backward()
    LOSSES[loss](torch, yt, v).backward()
    _close(_grads(ours), _grads(theirs))


def test_a_retained_graph_run_backward_with_two_cotangents():
    """The parameters' gradients the x rule leaves belong to its cotangent: a second
    backward through the same graph with another one gets its own."""
    x, w, b = RNG.standard_normal((6, 12)), RNG.standard_normal(12), RNG.standard_normal(12)
    ours, theirs = _both(x, w, b)
    y = F.layer_norm(ours[0], (12,), ours[1], ours[2])
    yt = torch.nn.functional.layer_norm(theirs[0], (12,), theirs[1], theirs[2])
    for g in (RNG.standard_normal(x.shape), RNG.standard_normal(x.shape)):
        got = rg.autograd.grad(y, ours, rg.tensor(g), retain_graph=True)
        want = torch.autograd.grad(yt, theirs, torch.tensor(g), retain_graph=True)
        _close([a.numpy() for a in got], [t.numpy() for t in want])
    # only the weight this time: its rule runs without the x rule's hand-off
    got = rg.autograd.grad(y, [ours[1]], rg.tensor(g), retain_graph=True)
    want = torch.autograd.grad(yt, [theirs[1]], torch.tensor(g), retain_graph=True)
    _close([got[0].numpy()], [want[0].numpy()])


def test_float32_repeated_row_cotangent_is_as_accurate_as_torch():
    x = RNG.standard_normal((64, 32)) * 2 + 1
    w, b = RNG.standard_normal(32), RNG.standard_normal(32)
    ref = [torch.tensor(a, requires_grad=True) for a in (x, w, b)]
    torch.nn.functional.layer_norm(ref[0], (32,), ref[1], ref[2]).mean().backward()
    expect = [t.grad.numpy() for t in ref]
    ours, theirs = _both(*(a.astype(np.float32) for a in (x, w, b)))
    F.layer_norm(ours[0], (32,), ours[1], ours[2]).mean().backward()
    torch.nn.functional.layer_norm(theirs[0], (32,), theirs[1], theirs[2]).mean().backward()
    for o, t, e in zip(_grads(ours), _grads(theirs), expect, strict=True):
        assert np.abs(o - e).max() <= 4 * np.abs(t - e).max() + 1e-6 * np.abs(e).max()
