"""split/chunk/unbind pieces: their gradients are joined in one buffer by the first piece
backward reaches; every way of using the pieces gives torch's gradients."""

import numpy as np
import pytest
import torch
from port_compare import as_np

import retrograd as rg

X = np.random.default_rng(0).standard_normal((4, 6, 9))


def _pieces(lib, t, how):
    if how == "split":
        return t.split(3, dim=2)
    if how == "split_sizes":
        return lib.split(t, [3, 3, 3], dim=2)
    if how == "chunk":
        return t.chunk(3, dim=1)
    return t.unbind(0)


USES = {
    "all": lambda p: sum(((i + 1) * q.sin()).sum() for i, q in enumerate(p)),
    "some_unused": lambda p: (p[0] * p[-1]).sum(),
    "one_only": lambda p: p[1].pow(2).sum(),
    "reused": lambda p: (p[0] * p[0]).sum() + (p[0] + p[1]).exp().sum() * 0.1,
    "through_each_other": lambda p: (p[0] @ p[1].transpose(-1, -2)).tanh().sum()
    if p[0].ndim == 2 and p[0].shape == p[1].shape else (p[0] * p[1]).sum(),
}


def _grad(lib, how, use, create_graph=False):
    t = lib.tensor(X, requires_grad=True)
    y = lib.tensor(X * 0.5, requires_grad=True)
    p = _pieces(lib, t * y, how)
    loss = USES[use](p)
    (g,) = lib.autograd.grad(loss, (t,), create_graph=create_graph)
    if not create_graph:
        return g
    (gg,) = lib.autograd.grad((g * g).sum(), (y,))
    return g, gg


@pytest.mark.parametrize("how", ["split", "split_sizes", "chunk", "unbind"])
@pytest.mark.parametrize("use", sorted(USES))
def test_gradients_as_torchs(how, use):
    np.testing.assert_allclose(as_np(_grad(rg, how, use)), as_np(_grad(torch, how, use)),
                               rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("how", ["split", "unbind"])
def test_second_derivatives_as_torchs(how):
    got = _grad(rg, how, "all", create_graph=True)
    want = _grad(torch, how, "all", create_graph=True)
    for a, b in zip(got, want):
        np.testing.assert_allclose(as_np(a), as_np(b), rtol=1e-12, atol=1e-12)


def _hooked(lib):
    t = lib.tensor(X, requires_grad=True)
    q, k, v = (t * 2).split(3, dim=2)
    k.retain_grad()
    q.register_hook(lambda g: g * 10)  # changes the gradient q sends
    seen = []
    v.grad_fn.register_hook(lambda gi, go: seen.append(1))  # a node hook on one piece
    ((q * k).sum() + v.pow(2).sum()).backward()
    return t.grad, k.grad, len(seen)


def test_tensor_and_node_hooks_on_pieces_as_torchs():
    g, kg, n = _hooked(rg)
    gt, kgt, nt = _hooked(torch)
    np.testing.assert_allclose(as_np(g), as_np(gt), rtol=1e-12)
    np.testing.assert_allclose(as_np(kg), as_np(kgt), rtol=1e-12)
    assert n == nt == 1


def _targets(lib):
    t = lib.tensor(X, requires_grad=True)
    q, k, v = (t.exp()).split(3, dim=2)
    loss = (q * k * v).sum()
    return lib.autograd.grad(loss, (k, t), retain_graph=True) + \
        lib.autograd.grad(loss * 2, (t,))


def test_gradients_to_a_piece_and_a_second_backward_as_torchs():
    for a, b in zip(_targets(rg), _targets(torch)):
        np.testing.assert_allclose(as_np(a), as_np(b), rtol=1e-12)


WRITES = {
    "split": lambda t: t.split(3, dim=1)[0].mul_(2),
    "split_one_piece": lambda t: t.split(6, dim=1)[0].add_(1),
    "chunk": lambda t: t.chunk(2, dim=1)[1].copy_(t.new_ones(4, 3)),
    "unbind": lambda t: t.unbind(0)[2].zero_(),
    "view_of_a_piece": lambda t: t.split(3, dim=1)[0][1].mul_(2),
    "setitem": lambda t: t.split(3, dim=1)[1].__setitem__(0, 5.0),
}


@pytest.mark.parametrize("lib", [rg, torch], ids=["rg", "torch"])
@pytest.mark.parametrize("name", sorted(WRITES))
def test_writing_into_a_piece_while_recording_is_refused_as_torch(lib, name):
    t = lib.tensor(X[:, :, 0], requires_grad=True)
    with pytest.raises(RuntimeError, match="multiple views"):
        WRITES[name](t * 1)


def _written_unrecorded(lib, name):
    t = lib.tensor(X[:, :, 0], requires_grad=True)
    base = t * 1
    with lib.no_grad():
        WRITES[name](base)  # allowed without recording, as in torch
    plain = lib.tensor(X[:, :, 0])
    WRITES[name](plain)  # and on a tensor that does not require grad
    (base * base).sum().backward()
    return base.detach(), plain, t.grad


@pytest.mark.parametrize("name", sorted(WRITES))
def test_writing_into_a_piece_without_recording_as_torch(name):
    for a, b in zip(_written_unrecorded(rg, name), _written_unrecorded(torch, name)):
        np.testing.assert_allclose(as_np(a), as_np(b), rtol=1e-12)


def test_float32_pieces_keep_float32_gradients():
    t = rg.tensor(X.astype(np.float32), requires_grad=True)
    q, k, v = t.split(3, dim=2)
    (q * k + v).sum().backward()
    assert t.grad.dtype == rg.float32
    tt = torch.tensor(X.astype(np.float32), requires_grad=True)
    qt, kt, vt = tt.split(3, dim=2)
    (qt * kt + vt).sum().backward()
    np.testing.assert_allclose(as_np(t.grad), as_np(tt.grad), rtol=1e-6)
