"""rg.jit runs `x + scatter(g)` (a slice's gradient added onto a dying array) in x's
buffer: a split's backward adds each piece onto one array instead of making a full-size
array per piece and summing them; when the pieces tile the array exactly, the first is
made without zeroing and the others written in (a concatenation). Same gradients as eager
mode and as PyTorch."""

import numpy as np
import pytest
import torch

import retrograd as rg
from retrograd.primitive import OPS


def _jit_source(jitted) -> str:
    return jitted.graph.source  # the last traced program


def _split_loss(x, w):
    a, b, c = x.split(4, dim=-1)
    return (a * w).sum() + b.tanh().sum() + (c * c).sum()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_split_backward_matches_eager_and_torch(dtype):
    rng = np.random.default_rng(0)
    xv = rng.standard_normal((3, 5, 12)).astype(dtype)
    wv = rng.standard_normal((3, 5, 4)).astype(dtype)

    def grads(fn):
        x, w = rg.tensor(xv, requires_grad=True), rg.tensor(wv, requires_grad=True)
        fn(x, w).backward()
        return x.grad.numpy(), w.grad.numpy()

    def step(x, w):
        loss = _split_loss(x, w)
        loss.backward()
        return loss

    eager = grads(_split_loss)
    jitted = rg.jit(step)
    for _ in range(3):  # trace, then replays
        x, w = rg.tensor(xv, requires_grad=True), rg.tensor(wv, requires_grad=True)
        jitted(x, w)
        np.testing.assert_array_equal(x.grad.numpy(), eager[0])
        np.testing.assert_array_equal(w.grad.numpy(), eager[1])
    src = _jit_source(jitted)
    assert "_tile_scatter" in src and src.count("_setto_scatter") == 2
    assert "_addto_scatter" not in src

    xt = torch.tensor(xv, requires_grad=True)
    wt = torch.tensor(wv, requires_grad=True)
    a, b, c = xt.split(4, dim=-1)
    ((a * wt).sum() + b.tanh().sum() + (c * c).sum()).backward()
    torch.testing.assert_close(torch.from_numpy(eager[0]), xt.grad)


def test_advanced_index_with_repeats_sums_as_eager():
    rng = np.random.default_rng(1)
    xv = rng.standard_normal((6, 3))
    idx = np.array([0, 2, 2, 5, 0])

    def loss_of(x):
        return (x[idx] * 3.0).sum() + (x[1:4] ** 2).sum() + x.sin().sum()

    def step(x):
        loss = loss_of(x)
        loss.backward()
        return loss

    x = rg.tensor(xv, requires_grad=True)
    loss_of(x).backward()
    eager = x.grad.numpy()
    jitted = rg.jit(step)
    for _ in range(2):
        x = rg.tensor(xv, requires_grad=True)
        jitted(x)
        np.testing.assert_array_equal(x.grad.numpy(), eager)

    xt = torch.tensor(xv, requires_grad=True)
    ((xt[torch.from_numpy(idx)] * 3.0).sum() + (xt[1:4] ** 2).sum() + xt.sin().sum()).backward()
    torch.testing.assert_close(torch.from_numpy(eager), xt.grad)


def test_same_result_without_the_rewrite(monkeypatch):
    rng = np.random.default_rng(2)
    xv = rng.standard_normal((4, 12)).astype(np.float32)
    wv = rng.standard_normal((4, 4)).astype(np.float32)

    def run():
        def step(x, w):
            loss = _split_loss(x.reshape(4, 1, 12).expand(4, 2, 12) * 1.0, w.reshape(4, 1, 4))
            loss.backward()
            return loss
        jitted = rg.jit(step)
        out = []
        for _ in range(2):
            x, w = rg.tensor(xv, requires_grad=True), rg.tensor(wv, requires_grad=True)
            jitted(x, w)
            out.append((x.grad.numpy(), w.grad.numpy()))
        return out, _jit_source(jitted)

    with_rewrite, src = run()
    assert "_setto_scatter" in src
    monkeypatch.setattr(OPS["scatter"], "tile", None)
    added, src1 = run()
    assert "_addto_scatter" in src1 and "_setto_scatter" not in src1
    monkeypatch.setattr(OPS["scatter"], "add_into", None)
    without, src2 = run()
    assert "_addto_scatter" not in src2
    for (a1, b1), (a2, b2) in zip(added, without):
        np.testing.assert_array_equal(a1, a2)
        np.testing.assert_array_equal(b1, b2)
    for (a1, b1), (a2, b2) in zip(with_rewrite, without):
        np.testing.assert_array_equal(a1, a2)
        np.testing.assert_array_equal(b1, b2)


@pytest.mark.parametrize("case", ["two_of_three", "overlap"])
def test_pieces_that_do_not_tile_are_added_onto_zeros(case):
    """Two of three pieces of a split (the third's gradient is zero) or overlapping
    slices: not a tiling, so the sum starts from zeros and adds (as eager and torch)."""
    rng = np.random.default_rng(3)
    xv = rng.standard_normal((4, 12))

    def loss_of(x):
        if case == "two_of_three":
            a, b, _ = x.split(4, dim=-1)
            return (a * a).sum() + b.sin().sum()
        return (x[:, :7] * 2.0).sum() + x[:, 5:].cos().sum()

    def step(x):
        loss = loss_of(x)
        loss.backward()
        return loss

    x = rg.tensor(xv, requires_grad=True)
    loss_of(x).backward()
    eager = x.grad.numpy()
    jitted = rg.jit(step)
    for _ in range(3):
        x = rg.tensor(xv, requires_grad=True)
        jitted(x)
        np.testing.assert_array_equal(x.grad.numpy(), eager)
    assert "_tile_scatter" not in _jit_source(jitted)
    xt = torch.tensor(xv, requires_grad=True)
    if case == "two_of_three":
        a, b, _ = xt.split(4, dim=-1)
        ((a * a).sum() + b.sin().sum()).backward()
    else:
        ((xt[:, :7] * 2.0).sum() + xt[:, 5:].cos().sum()).backward()
    torch.testing.assert_close(torch.from_numpy(eager), xt.grad)
