"""rg.utils.checkpoint against torch.utils.checkpoint and against no checkpoint: the same
outputs and gradients (through `.backward()` and `rg.autograd.grad`), for inputs,
parameters and other tensors the function reads; dropout recomputed with the same masks;
and what cannot be done soundly (double backward, rg.jit, vmap) refused with an error."""

from __future__ import annotations

import gc
import warnings
import weakref

import numpy as np
import pytest
import torch
import torch.utils.checkpoint as tck

import retrograd as rg
from retrograd import nn
from retrograd.jit import JitError
from retrograd.utils.checkpoint import CheckpointError, checkpoint, checkpoint_sequential

RNG = np.random.default_rng(0)
W1, W2, X = RNG.standard_normal((4, 5)), RNG.standard_normal((5, 3)), RNG.standard_normal((6, 4))


def params(lib):
    return [lib.tensor(W1, requires_grad=True), lib.tensor(W2, requires_grad=True)]


def block(lib, w1, w2):
    """A function reading parameters from its closure, and a tensor computed from one."""
    scale = w2 * 0.5  # a non-leaf tensor from outside the checkpointed function

    def f(x, shift=0.0):
        h = lib.tanh(x @ w1 + shift)
        return (h @ w2).sin() + (h @ scale) * h.sum(), h.mean()
    return f


def run(lib, ck, reentrant):
    """Loss, and the gradients of x, w1, w2 with `ck` (a checkpoint function or None)."""
    w1, w2 = params(lib)
    x = lib.tensor(X, requires_grad=True)
    f = block(lib, w1, w2)
    y, m = f(x) if ck is None else ck(f, x, use_reentrant=reentrant)
    loss = (y ** 2).sum() + 3 * m
    loss.backward()
    return [float(loss.detach())] + [t.grad.numpy() for t in (x, w1, w2)]


@pytest.mark.parametrize("reentrant", [False, True])
def test_gradients_equal_torch_and_no_checkpoint(reentrant):
    got = run(rg, checkpoint, reentrant)
    for ref in (run(torch, tck.checkpoint, reentrant), run(torch, None, None),
                run(rg, None, None)):
        for a, b in zip(got, ref):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_autograd_grad_through_checkpoint_equals_no_checkpoint():
    w1, w2 = params(rg)
    x = rg.tensor(X, requires_grad=True)
    f = block(rg, w1, w2)
    plain = rg.autograd.grad(f(x)[0].sum(), [x, w1, w2])
    ck = rg.autograd.grad(checkpoint(f, x, use_reentrant=False)[0].sum(), [x, w1, w2])
    for a, b in zip(ck, plain):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12)
    assert w1.grad is None and x.grad is None
    g = rg.func.grad(lambda v: checkpoint(f, v, use_reentrant=False)[0].sum())(rg.tensor(X))
    np.testing.assert_allclose(g.numpy(), plain[0].numpy(), rtol=1e-12)


def test_keyword_arguments_and_non_tensor_outputs():
    w1, w2 = params(torch)
    rw1, rw2 = params(rg)
    shift = RNG.standard_normal(5)

    def tf(x, shift):
        return {"y": torch.tanh(x @ w1 + shift) @ w2, "n": 3, "i": x.argmax(1)}

    def rf(x, shift):
        return {"y": rg.tanh(x @ rw1 + shift) @ rw2, "n": 3, "i": x.argmax(1)}
    ts, rs = torch.tensor(shift, requires_grad=True), rg.tensor(shift, requires_grad=True)
    tx, rx = torch.tensor(X, requires_grad=True), rg.tensor(X, requires_grad=True)
    t = tck.checkpoint(tf, tx, shift=ts, use_reentrant=False)
    r = checkpoint(rf, rx, shift=rs, use_reentrant=False)
    assert r["n"] == 3 and not r["i"].requires_grad
    np.testing.assert_array_equal(r["i"].numpy(), t["i"].numpy())
    t["y"].sum().backward()
    r["y"].sum().backward()
    for a, b in [(rx, tx), (rs, ts), (rw1, w1), (rw2, w2)]:
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-12)
    with pytest.raises(ValueError, match="Unexpected keyword"):
        tck.checkpoint(tf, tx, shift=ts, use_reentrant=True)
    with pytest.raises(ValueError, match="Unexpected keyword"):
        checkpoint(rf, rx, shift=rs, use_reentrant=True)


def test_backward_recomputes_the_function_once():
    calls = []
    w = rg.tensor(W1, requires_grad=True)

    def f(x):
        calls.append(1)
        return (x @ w).exp()
    y = checkpoint(f, rg.tensor(X), use_reentrant=False)
    assert len(calls) == 1
    # the caller's graph holds one node for the whole function, reading w only
    nexts = [f[0] if isinstance(f, tuple) else f for f in y.grad_fn.next_functions]
    assert len([f for f in nexts if f is not None]) == 1
    y.sum().backward()
    assert len(calls) == 2
    np.testing.assert_allclose(w.grad.numpy(), X.T @ np.exp(X @ W1), rtol=1e-12)


def test_intermediate_values_are_not_kept_until_backward():
    kept = []
    w = rg.tensor(W1, requires_grad=True)

    def f(x):
        h = rg.tanh(x @ w)
        kept.append(weakref.ref(h))
        return (h * h).sum()
    plain = f(rg.tensor(X))
    assert kept[-1]() is not None  # without checkpoint the graph holds h
    y = checkpoint(f, rg.tensor(X), use_reentrant=False)
    gc.collect()
    assert kept[-1]() is None
    y.backward()
    g = w.grad.numpy().copy()
    w.grad = None
    plain.backward()
    np.testing.assert_allclose(g, w.grad.numpy(), rtol=1e-12)


def test_hooks_on_outside_tensors_run_once():
    seen = {"leaf": 0, "inner": 0}
    w = rg.tensor(W1, requires_grad=True)
    w.register_hook(lambda g: seen.__setitem__("leaf", seen["leaf"] + 1) or g * 2)
    v = w * 1.0
    v.register_hook(lambda g: seen.__setitem__("inner", seen["inner"] + 1))
    checkpoint(lambda x: (x @ v).sum(), rg.tensor(X), use_reentrant=False).backward()
    assert seen == {"leaf": 1, "inner": 1}
    np.testing.assert_allclose(w.grad.numpy(), 2 * X.sum(0)[:, None] * np.ones((4, 5)))


def test_dropout_is_recomputed_with_the_same_mask_and_the_random_state_kept():
    def grads(use_ck):
        rg.manual_seed(5)
        m = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.5), nn.Linear(8, 2)).double()
        x = rg.tensor(X, requires_grad=True)
        y = checkpoint(m, x, use_reentrant=False) if use_ck else m(x)
        y.sum().backward()
        return [x.grad.numpy()] + [p.grad.numpy() for p in m.parameters()], rg.rand(3).numpy()
    (ck, after_ck), (plain, after) = grads(True), grads(False)
    for a, b in zip(ck, plain):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(after_ck, after)  # the recomputation draws from a copy


@pytest.mark.parametrize("segments", [1, 2, 3])
def test_checkpoint_sequential_equals_torch(segments):
    sizes = [4, 6, 5, 3, 2]
    tl = [torch.nn.Linear(a, b).double() for a, b in zip(sizes, sizes[1:])]
    rl = [nn.Linear(a, b) for a, b in zip(sizes, sizes[1:])]
    for t, r in zip(tl, rl):
        r.weight = nn.Parameter(rg.tensor(t.weight.detach().numpy()))
        r.bias = nn.Parameter(rg.tensor(t.bias.detach().numpy()))
    tm = torch.nn.Sequential(*[m for t in tl for m in (t, torch.nn.Tanh())])
    rm = nn.Sequential(*[m for r in rl for m in (r, nn.Tanh())])
    tx, rx = torch.tensor(X, requires_grad=True), rg.tensor(X, requires_grad=True)
    ty = tck.checkpoint_sequential(tm, segments, tx, use_reentrant=False)
    ry = checkpoint_sequential(rm, segments, rx, use_reentrant=False)
    np.testing.assert_allclose(ry.detach().numpy(), ty.detach().numpy(), rtol=1e-12)
    (ty ** 2).sum().backward()
    (ry ** 2).sum().backward()
    np.testing.assert_allclose(rx.grad.numpy(), tx.grad.numpy(), rtol=1e-10)
    for t, r in zip(tl, rl):
        np.testing.assert_allclose(r.weight.grad.numpy(), t.weight.grad.numpy(), rtol=1e-10)


def test_use_reentrant_unspecified_warns_as_torch():
    for ck, lib in ((tck.checkpoint, torch), (checkpoint, rg)):
        x = lib.tensor(X, requires_grad=True)
        with pytest.warns(UserWarning, match="use_reentrant"):
            ck(lambda v: v * 2, x)


def test_reentrant_without_inputs_requiring_grad_gives_no_graph_as_torch():
    for ck, lib in ((tck.checkpoint, torch), (checkpoint, rg)):
        w = lib.tensor(W1, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            y = ck(lambda v, w=w: v @ w, lib.tensor(X), use_reentrant=True)
        assert not y.requires_grad
        y2 = ck(lambda v, w=w: v @ w, lib.tensor(X), use_reentrant=False)
        assert y2.requires_grad


def test_no_grad_mode_just_runs_the_function():
    w = rg.tensor(W1, requires_grad=True)
    with rg.no_grad():
        y = checkpoint(lambda v: v @ w, rg.tensor(X), use_reentrant=False)
    assert not y.requires_grad
    np.testing.assert_allclose(y.numpy(), X @ W1)


def test_double_backward_equals_torch():
    def second(lib, ck):
        w1, w2 = params(lib)
        x = lib.tensor(X, requires_grad=True)
        f = block(lib, w1, w2)
        y, m = f(x) if ck is None else ck(f, x, use_reentrant=False)
        gx, gw = (lib.autograd.grad((y ** 2).sum() + m, [x, w1], create_graph=True))
        (gx.sin().sum() + (gw ** 2).sum()).backward()
        return [t.grad.numpy() for t in (x, w1, w2)]
    got = second(rg, checkpoint)
    for ref in (second(torch, tck.checkpoint), second(rg, None)):
        for a, b in zip(got, ref):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_jit_and_vmap_refuse():
    def f(x):
        return checkpoint(lambda v: v.sin(), x, use_reentrant=False).sum()
    with pytest.raises(JitError, match="checkpoint"):
        rg.jit(f)(rg.tensor(X))
    with pytest.raises(RuntimeError, match="checkpoint"):
        rg.func.vmap(f)(rg.tensor(X))
    with pytest.raises(RuntimeError, match="checkpoint"):
        rg.func.jvp(f, (rg.tensor(X),), (rg.tensor(X),))


def test_changing_an_input_in_place_before_backward_is_caught():
    x = rg.tensor(X, requires_grad=True)
    h = x * 1.0
    y = checkpoint(lambda v: v.exp(), h, use_reentrant=False)
    with rg.no_grad():
        h.add_(1.0)
    with pytest.raises(RuntimeError, match="in-place"):
        y.sum().backward()


def test_a_recomputation_that_differs_is_refused():
    calls = []

    def f(v):
        calls.append(1)
        return v[: len(calls)] * 2
    y = checkpoint(f, rg.tensor(X, requires_grad=True), use_reentrant=False)
    with pytest.raises(CheckpointError, match="same"):
        y.sum().backward()


def test_nested_func_grad_through_checkpoint_equals_no_checkpoint():
    w = rg.tensor(W1, requires_grad=True)

    def f(v):
        return (rg.tanh(v @ w) ** 2).sum()

    def outer(ck):
        inner = rg.func.grad(lambda v: checkpoint(f, v, use_reentrant=False) if ck else f(v))
        return rg.func.grad(lambda v: (inner(v) ** 2).sum())(rg.tensor(X))
    np.testing.assert_allclose(outer(True).numpy(), outer(False).numpy(), rtol=1e-10)


def test_a_function_changing_its_inputs_in_place_is_refused():
    x = rg.tensor(X)
    with pytest.raises(RuntimeError, match="in place"):
        checkpoint(lambda v: v.mul_(2) * rg.tensor(W1[0, 0], requires_grad=True), x,
                   use_reentrant=False)
    w = rg.tensor(W1, requires_grad=True)
    h = w * 1.0
    y = checkpoint(lambda v: v @ h.mul_(2), rg.tensor(X), use_reentrant=False)
    with pytest.raises(CheckpointError, match="in place"):
        y.sum().backward()
