"""`rg.autograd.graph.saved_tensors_hooks`: pack/unpack around what backward saves, as
torch's (the gradient comes from the unpacked values), refused inside rg.jit."""

import numpy as np
import pytest
import torch
from port_compare import as_np

import retrograd as rg

RNG = np.random.default_rng(0)
X = RNG.standard_normal((4, 5))
W = RNG.standard_normal((5, 3))


def _run(lib, f, pack=None, unpack=None, create_graph=False):
    x = lib.tensor(X, requires_grad=True)
    w = lib.tensor(W, requires_grad=True)
    if pack is None:
        y = f(lib, x, w)
    else:
        with lib.autograd.graph.saved_tensors_hooks(pack, unpack):
            y = f(lib, x, w)
    gx, gw = lib.autograd.grad(y, (x, w), create_graph=create_graph)
    if create_graph:
        (ggx,) = lib.autograd.grad(gx.pow(2).sum() + gw.sum(), (x,))
        return gx, gw, ggx
    return gx, gw


# Ops whose saved tensors are the same ones torch saves: any hook gives torch's gradient.
CHAINS = {
    "sin_mul": lambda L, x, w: (x.sin() * x).sum() + w.sum(),
    "exp_tanh": lambda L, x, w: (x.exp().tanh() * 2).sum() + (w * w).sum(),
    "matmul": lambda L, x, w: (x @ w).tanh().pow(2).sum(),
    "sigmoid_div": lambda L, x, w: ((x @ w).sigmoid() / (1.0 + w.abs().sum())).sum(),
}
# Ops that keep more than torch saves (a norm's statistics, a fused activation's tanh):
# identity hooks, which any offloading hook is, give the gradient without hooks.
FUSED = {
    "layer_norm": lambda L, x, w: L.nn.functional.layer_norm(x, (5,)).pow(3).sum()
    + (x @ w).sum(),
    "gelu": lambda L, x, w: L.nn.functional.gelu(x @ w, approximate="tanh").pow(2).sum(),
    "cross_entropy": lambda L, x, w: L.nn.functional.cross_entropy(
        x @ w, L.tensor([0, 2, 1, 1])),
    "softmax": lambda L, x, w: (L.softmax(x @ w, dim=1) ** 2).sum(),
}

LOSSY = (lambda t: t.float().half(), lambda p: p.double())
SHIFT = (lambda t: t * 2, lambda p: p / 2 + 0.125)


@pytest.mark.parametrize("name", sorted(CHAINS))
@pytest.mark.parametrize("hooks", ["lossy", "shift"])
def test_gradients_come_from_the_unpacked_values_as_torchs(name, hooks):
    pack, unpack = LOSSY if hooks == "lossy" else SHIFT
    got = _run(rg, CHAINS[name], pack, unpack)
    want = _run(torch, CHAINS[name], pack, unpack)
    plain = _run(torch, CHAINS[name])
    for g, t in zip(got, want):
        np.testing.assert_allclose(as_np(g), as_np(t), rtol=1e-10, atol=1e-12)
    # the hooks really changed the gradient (so the check above can fail)
    assert any(not np.allclose(as_np(t), as_np(p), rtol=0, atol=1e-6)
               for t, p in zip(want, plain))


@pytest.mark.parametrize("name", sorted(CHAINS) + sorted(FUSED))
def test_identity_hooks_keep_gradients_and_second_derivatives(name):
    f = {**CHAINS, **FUSED}[name]
    seen = []

    def pack(t):
        seen.append(t.shape)
        return t

    got = _run(rg, f, pack, lambda p: p, create_graph=True)
    assert seen, "no saved tensor was packed"
    want = _run(torch, f, lambda t: t, lambda p: p, create_graph=True)
    for g, t in zip(got, want):
        np.testing.assert_allclose(as_np(g), as_np(t), rtol=1e-9, atol=1e-11)


def test_second_derivative_sees_the_unpacked_values_as_torchs():
    f = CHAINS["sin_mul"]
    got = _run(rg, f, *SHIFT, create_graph=True)
    want = _run(torch, f, *SHIFT, create_graph=True)
    for g, t in zip(got, want):
        np.testing.assert_allclose(as_np(g), as_np(t), rtol=1e-10, atol=1e-12)


def _count(lib):
    x = lib.tensor(X, requires_grad=True)
    calls = {"pack": 0, "unpack": 0}

    def pack(t):
        calls["pack"] += 1
        return t

    def unpack(p):
        calls["unpack"] += 1
        return p

    with lib.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = (x.sin() * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    return calls


def test_pack_once_unpack_at_each_backward_as_torch():
    assert _count(rg) == _count(torch)


class _Cube:
    @staticmethod
    def forward(ctx, x, k):
        ctx.save_for_backward(x, k)
        return x ** 3 * k

    @staticmethod
    def backward(ctx, g):
        x, k = ctx.saved_tensors
        return g * 3 * x ** 2 * k, None


def _function(lib):
    Cube = type("Cube", (lib.autograd.Function,), dict(vars(_Cube)))
    x = lib.tensor(X, requires_grad=True)
    k = lib.tensor(2.0)
    packed = []

    def pack(t):
        packed.append(tuple(t.shape))
        return t * 2

    with lib.autograd.graph.saved_tensors_hooks(pack, lambda p: p / 2 + 0.125):
        y = Cube.apply(x, k).sum()
    y.backward()
    return x.grad, packed


def test_a_functions_saved_tensors_go_through_the_hooks_as_torchs():
    g, packed = _function(rg)
    gt, packed_t = _function(torch)
    assert packed == packed_t
    np.testing.assert_allclose(as_np(g), as_np(gt), rtol=1e-12)


def test_the_innermost_hooks_apply_as_torchs():
    def run(lib):
        x = lib.tensor(X, requires_grad=True)
        with lib.autograd.graph.saved_tensors_hooks(lambda t: t, lambda p: p * 0):
            with lib.autograd.graph.saved_tensors_hooks(lambda t: t, lambda p: p + 1):
                y = (x.sin()).sum()
            z = (x.cos()).sum()
        (y + z).backward()
        return x.grad

    np.testing.assert_allclose(as_np(run(rg)), as_np(run(torch)), rtol=1e-12)


@pytest.mark.parametrize("lib", [rg, torch], ids=["rg", "torch"])
def test_unpack_must_return_a_tensor(lib):
    x = lib.tensor(X, requires_grad=True)
    with lib.autograd.graph.saved_tensors_hooks(lambda t: 1, lambda p: p):
        y = x.sin().sum()
    with pytest.raises(TypeError, match="unpack_hook"):
        y.backward()


@pytest.mark.parametrize("lib", [rg, torch], ids=["rg", "torch"])
def test_a_pack_hook_changing_its_input_in_place_is_refused(lib):
    x = lib.tensor(X, requires_grad=True).clone()
    with pytest.raises(RuntimeError, match="in place|in-place"):
        with lib.autograd.graph.saved_tensors_hooks(lambda t: t.mul_(2), lambda p: p):
            x.sin()


@pytest.mark.parametrize("lib", [rg, torch], ids=["rg", "torch"])
def test_disable_saved_tensors_hooks_refuses_them_with_its_message(lib):
    with lib.autograd.graph.disable_saved_tensors_hooks("no hooks in this block"):
        with pytest.raises(RuntimeError, match="no hooks in this block"):
            with lib.autograd.graph.saved_tensors_hooks(lambda t: t, lambda p: p):
                pass
    with lib.autograd.graph.saved_tensors_hooks(lambda t: t, lambda p: p):
        pass  # allowed again outside


def test_hooks_outside_a_recorded_op_do_nothing():
    x = rg.tensor(X)
    calls = []
    with rg.autograd.graph.saved_tensors_hooks(lambda t: calls.append(t) or t, lambda p: p):
        with rg.no_grad():
            rg.tensor(X, requires_grad=True).sin()
        x.sin()
    assert calls == []


def test_saved_tensors_hooks_inside_rg_jit_are_refused():
    def step(x):
        with rg.autograd.graph.saved_tensors_hooks(lambda t: t, lambda p: p):
            return (x.sin() * x).sum()

    f = rg.jit(step)
    x = rg.tensor(X, requires_grad=True)
    with pytest.raises(RuntimeError, match="saved_tensors_hooks"):
        f(x)
