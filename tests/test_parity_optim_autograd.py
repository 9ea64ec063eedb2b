"""Optimizers, grad mode and autograd.grad as ported PyTorch code uses them, against torch:
param_groups' defaults and keys (Adam's decoupled_weight_decay, RMSprop's flags), no_grad
on a generator function, autograd.grad(materialize_grads=True), manual_seed's result."""

import numpy as np
import pytest
import torch

import retrograd as rg


def _groups(T, name, **kw):
    w = T.nn.Parameter(T.ones(2))
    opt = getattr(T.optim, name)([w], **kw)
    return {k: v for k, v in opt.param_groups[0].items() if k != "params"}


@pytest.mark.parametrize("name,kw", [("SGD", {"lr": 0.1}), ("Adam", {}), ("AdamW", {}),
                                     ("RMSprop", {}), ("Adam", {"decoupled_weight_decay": True,
                                                                "weight_decay": 0.1})])
def test_param_group_defaults_as_torch(name, kw):
    t, r = _groups(torch, name, **kw), _groups(rg, name, **kw)
    assert list(t) == list(r)
    for k in t:
        assert type(t[k]) is type(r[k]) and t[k] == r[k], k


def test_adam_with_decoupled_weight_decay_steps_as_torch_adamw():
    out = {}
    for T in (torch, rg):
        w = T.nn.Parameter(T.tensor([1.0, -2.0, 3.0]))
        opt = T.optim.Adam([w], lr=0.1, weight_decay=0.5, decoupled_weight_decay=True)
        for _ in range(3):
            opt.zero_grad()
            ((w * T.tensor([1.0, 2.0, 3.0])).sum() ** 2).backward()
            opt.step()
        out[T] = w.detach().numpy()
    np.testing.assert_allclose(out[rg], out[torch], rtol=1e-6)


@pytest.mark.parametrize("deco", ["no_grad", "enable_grad"])
def test_grad_mode_decorator_on_a_generator_function(deco):
    got = {}
    for T in (torch, rg):
        x = T.ones(2, requires_grad=True)

        @getattr(T, deco)()
        def gen(x=x, T=T):
            v = yield (x * 2).requires_grad
            yield T.is_grad_enabled(), v
            return "done"

        with T.set_grad_enabled(deco == "no_grad"):
            it = gen()
            first = next(it)
            between = T.is_grad_enabled()
            second = it.send(7)
            try:
                next(it)
            except StopIteration as stop:
                end = stop.value
            got[T] = (first, between, second, end, T.is_grad_enabled())
    assert got[rg] == got[torch]


def test_autograd_grad_materialize_grads():
    res = {}
    for T in (torch, rg):
        x = T.tensor([2.0], requires_grad=True)
        z = T.ones(3, requires_grad=True)
        gx, gz = T.autograd.grad((x * 2).sum(), [x, z], materialize_grads=True)
        res[T] = (gx.detach().numpy(), gz.detach().numpy())
        with pytest.raises(ValueError):
            T.autograd.grad((x * 2).sum(), [x, z], allow_unused=False, materialize_grads=True)
    for a, b in zip(res[rg], res[torch]):
        np.testing.assert_array_equal(a, b)


def test_manual_seed_returns_the_default_generator():
    g = rg.manual_seed(3)
    assert g is rg.default_generator and isinstance(g, rg.Generator)
    assert isinstance(torch.manual_seed(3), torch.Generator)
    a = rg.randn(2)
    g.manual_seed(3)
    np.testing.assert_array_equal(a.numpy(), rg.randn(2).numpy())
