"""nn as ported PyTorch code uses it, against torch: Linear refuses an input of another
width with torch's RuntimeError, requires_grad on an integer tensor raises what
`except RuntimeError` catches, Sequential/ModuleList extend, insert, pop and `+`."""

import numpy as np
import pytest
import torch

import retrograd as rg


def _linear(T, x):
    T.manual_seed(0)
    return T.nn.Linear(3, 2)(x(T))


@pytest.mark.parametrize("x", [
    lambda T: T.ones(4, 2),
    lambda T: T.tensor(1.0),
])
def test_linear_refuses_what_torch_refuses(x):
    with pytest.raises(RuntimeError):
        _linear(torch, x)
    with pytest.raises(RuntimeError):
        _linear(rg, x)


def test_linear_in_float64_after_double():
    w = np.arange(6.0).reshape(2, 3)
    for T in (torch, rg):
        lin = T.nn.Linear(3, 2).double()
        with T.no_grad():
            lin.weight.copy_(T.tensor(w))
            lin.bias.zero_()
        y = lin(T.ones(4, 3, dtype=T.float64))
        assert str(y.dtype).endswith("float64")
        np.testing.assert_allclose(y.detach().numpy(), np.ones((4, 3)) @ w.T)


@pytest.mark.parametrize("make", [
    lambda T: T.nn.Parameter(T.ones(2, dtype=T.int64)),
    lambda T: T.tensor([1, 2], requires_grad=True),
    lambda T: T.tensor([1, 2]).requires_grad_(),
])
def test_requires_grad_on_integers_is_a_runtime_error(make):
    with pytest.raises(RuntimeError):
        make(torch)
    with pytest.raises(RuntimeError):
        make(rg)
    with pytest.raises(TypeError):  # the contract's TypeError too
        make(rg)


def _names(seq):
    return [type(m).__name__ for m in seq]


@pytest.mark.parametrize("code", [
    "s = nn.Sequential(nn.Linear(2, 3)); s.extend([nn.ReLU(), nn.Tanh()])",
    "s = nn.Sequential(nn.Linear(2, 3), nn.Tanh()); s.insert(1, nn.ReLU())",
    "s = nn.Sequential(nn.Linear(2, 3), nn.Tanh()); s.pop(0)",
    "s = nn.Sequential(nn.Linear(2, 3)) + nn.Sequential(nn.ReLU())",
    "s = nn.Sequential(nn.Linear(2, 3)); s += nn.Sequential(nn.ReLU())",
    "s = nn.ModuleList([nn.ReLU()]) + nn.ModuleList([nn.Tanh(), nn.Linear(1, 1)])",
    "s = nn.ModuleList([nn.ReLU()]); s += [nn.Tanh()]",
    "s = nn.ModuleList([nn.ReLU(), nn.Tanh()]); s.pop(0)",
])
def test_container_edits_as_torch(code):
    got = {}
    for T in (torch, rg):
        ns = {"nn": T.nn}
        exec(code, ns)
        s = ns["s"]
        got[T] = (type(s).__name__, _names(s), list(s.state_dict()))
    assert got[torch] == got[rg]


@pytest.mark.parametrize("name", ["linear", "conv2d", "sigmoid", "tanh", "relu", "selu",
                                  "leaky_relu"])
def test_calculate_gain_as_torch(name):
    t, r = torch.nn.init.calculate_gain(name), rg.nn.init.calculate_gain(name)
    assert type(t) is type(r) and t == r


@pytest.mark.parametrize("args,kw", [((), {"copy": True}), (("float32",), {"copy": True}),
                                     (("cpu",), {"copy": True}), (("float32",), {})])
def test_to_with_copy_makes_a_new_tensor_as_torch(args, kw):
    got = {}
    for T in (torch, rg):
        x = T.ones(2, requires_grad=True)
        a = tuple(getattr(T, s) if s == "float32" else s for s in args)
        y = x.to(*a, **kw)
        got[T] = (y is x, y.requires_grad, y.is_leaf)
    assert got[rg] == got[torch]
