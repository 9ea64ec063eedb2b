"""Activations through the public API and nn modules against PyTorch: every function with
its arguments, large |x| without overflow, gradients at the kinks, errors, modules.

(The op rows' values and first/second derivatives on their samples are covered by the
generated tests in test_ops.py, test_forward.py and test_jit.py.)
"""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import retrograd as rg
import retrograd.nn.functional as F

RNG = np.random.default_rng(0)

# (name, kwargs): the public functions with PyTorch's arguments.
CALLS = [
    ("gelu", {}), ("gelu", {"approximate": "tanh"}), ("silu", {}), ("mish", {}),
    ("softplus", {}), ("softplus", {"beta": 2.0, "threshold": 3.0}), ("elu", {}),
    ("elu", {"alpha": 0.5}), ("celu", {}), ("celu", {"alpha": 2.0}), ("selu", {}),
    ("leaky_relu", {}), ("leaky_relu", {"negative_slope": 0.3}), ("relu6", {}),
    ("hardtanh", {}), ("hardtanh", {"min_val": -0.5, "max_val": 2.0}), ("hardswish", {}),
    ("hardsigmoid", {}), ("softsign", {}), ("logsigmoid", {}), ("softmin", {"dim": 1}),
    ("glu", {}), ("glu", {"dim": 0}), ("tanhshrink", {}),
    ("threshold", {"threshold": 0.5, "value": -2.0}),
]


def _both(x, requires_grad=True):
    return (rg.tensor(x, dtype=rg.float64, requires_grad=requires_grad),
            torch.tensor(x, requires_grad=requires_grad))


@pytest.mark.parametrize("name,kw", CALLS, ids=[f"{n}-{k}" for n, k in CALLS])
def test_functional_values_and_gradients_equal_torch(name, kw):
    # the kinks themselves included: PyTorch's conventions there
    x = np.concatenate([RNG.uniform(-8, 8, 36), [0.0, 6.0, -3.0, 3.0, 1.0, -1.0, 0.5, -0.5, 2.0,
                                                  -0.0, 20.0, 1.5]]).reshape(4, 12)
    t, q = _both(x)
    out, ref = getattr(F, name)(t, **kw), getattr(TF, name)(q, **kw)
    np.testing.assert_allclose(out.data, ref.detach().numpy(), rtol=1e-13, atol=1e-15)
    w = RNG.standard_normal(out.shape)
    (out * rg.tensor(w)).sum().backward()
    (ref * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(t.grad.data, q.grad.numpy(), rtol=1e-13, atol=1e-15)
    # float32 in, float32 out
    t32 = rg.tensor(x.astype(np.float32))
    out32 = getattr(F, name)(t32, **kw)
    assert out32.dtype == np.float32
    np.testing.assert_allclose(out32.data, getattr(TF, name)(torch.tensor(
        x.astype(np.float32)), **kw).numpy(), rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("name", ["softplus", "logsigmoid", "mish", "silu", "gelu", "elu",
                                  "selu", "softsign"])
def test_large_inputs_neither_overflow_nor_lose_the_tail(name):
    x = np.array([-1000.0, -745.0, -100.0, -30.0, 30.0, 100.0, 710.0, 1000.0])
    t, q = _both(x)
    with np.errstate(over="raise", invalid="raise", divide="raise"):  # none inside
        out = getattr(F, name)(t)
        out.sum().backward()
    ref = getattr(TF, name)(q)
    ref.sum().backward()
    assert np.all(np.isfinite(out.data)) and np.all(np.isfinite(t.grad.data))
    # atol: in the far left tail PyTorch's values underflow (or cancel) to 0 before ours
    np.testing.assert_allclose(out.data, ref.detach().numpy(), rtol=1e-13, atol=1e-150)
    np.testing.assert_allclose(t.grad.data, q.grad.numpy(), rtol=1e-13, atol=1e-150)
    if name == "softplus":  # the exact tail, where log1p(exp(x)) is exp(x)
        np.testing.assert_allclose(F.softplus(rg.tensor([-50.0], dtype=rg.float64)).data,
                                   [np.exp(-50.0)], rtol=1e-15)


def test_softplus_threshold_switch_matches_torch():
    x = np.array([1.0, 1.5, 1.5000001, 2.0])
    for beta, threshold in ((2.0, 3.0), (1.0, 1.5), (-1.0, 0.5)):
        t, q = _both(x)
        out = F.softplus(t, beta, threshold)
        ref = TF.softplus(q, beta, threshold)
        np.testing.assert_allclose(out.data, ref.detach().numpy(), rtol=1e-14)
        out.sum().backward()
        ref.sum().backward()
        np.testing.assert_allclose(t.grad.data, q.grad.numpy(), rtol=1e-14)


@pytest.mark.parametrize("name,kw", [("gelu", {}), ("gelu", {"approximate": "tanh"}),
                                     ("silu", {}), ("mish", {}), ("softplus", {}),
                                     ("elu", {"alpha": 0.7}), ("selu", {}), ("logsigmoid", {}),
                                     ("hardswish", {}), ("softsign", {}), ("tanhshrink", {}),
                                     ("glu", {})])
def test_second_derivatives_equal_torch(name, kw):
    x = RNG.uniform(-4, 4, (3, 4))
    x = np.where(np.abs(np.abs(x) - 3) < 0.1, x + 0.3, x)  # hardswish's kinks
    t, q = _both(x)
    (g,) = rg.autograd.grad(getattr(F, name)(t, **kw).sum(), [t], create_graph=True)
    (h,) = rg.autograd.grad((g * g).sum(), [t])
    (tg,) = torch.autograd.grad(getattr(TF, name)(q, **kw).sum(), q, create_graph=True)
    (th,) = torch.autograd.grad((tg * tg).sum(), q)
    np.testing.assert_allclose(h.data, th.numpy(), rtol=1e-11, atol=1e-13)


def test_rg_namespace_has_what_torch_has():
    x = RNG.uniform(-2, 2, 6)
    np.testing.assert_allclose(rg.celu(rg.tensor(x), 1.5).data,
                               torch.celu(torch.tensor(x), 1.5).numpy(), rtol=1e-14)
    np.testing.assert_allclose(rg.selu(rg.tensor(x)).data, torch.selu(torch.tensor(x)).numpy(),
                               rtol=1e-14)
    np.testing.assert_allclose(rg.threshold(rg.tensor(x), 0.1, 5.0).data,
                               torch.threshold(torch.tensor(x), 0.1, 5.0).numpy())


def test_inplace_writes_into_the_input_and_keeps_the_graph():
    x = RNG.uniform(-2, 2, 5)
    a, b = _both(x)
    ya, yb = a * 2, b * 2
    assert F.elu(ya, inplace=True) is ya
    TF.elu(yb, inplace=True)
    np.testing.assert_allclose(ya.data, yb.detach().numpy(), rtol=1e-14)
    (ya * ya).sum().backward()
    (yb * yb).sum().backward()
    np.testing.assert_allclose(a.grad.data, b.grad.numpy(), rtol=1e-13)
    leaf = rg.tensor(x, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf"):
        F.relu6(leaf, inplace=True)


def test_bad_arguments_name_the_argument():
    x = rg.tensor([1.0, -1.0])
    with pytest.raises(ValueError, match="approximate"):
        F.gelu(x, approximate="foo")
    with pytest.raises(ValueError, match="min_val"):
        F.hardtanh(x, 2.0, 1.0)
    with pytest.raises(ValueError, match="alpha"):
        F.celu(x, alpha=0.0)
    with pytest.raises(ValueError, match="beta"):
        F.softplus(x, beta=0)
    with pytest.raises(TypeError, match="negative_slope"):
        F.leaky_relu(x, negative_slope="a lot")
    with pytest.raises(ValueError, match="even"):
        F.glu(rg.tensor(np.ones((2, 3))))
    with pytest.raises(TypeError, match="floating"):
        F.gelu(rg.tensor([1, 2]))
    with pytest.raises(ValueError, match="approximate"):
        rg.nn.GELU("exact")


def test_softmin_implicit_dim_warns_like_torch():
    x = RNG.standard_normal((2, 3))
    with pytest.warns(UserWarning, match="Implicit dimension"):
        out = F.softmin(rg.tensor(x))
    with pytest.warns(UserWarning):
        ref = TF.softmin(torch.tensor(x))
    np.testing.assert_allclose(out.data, ref.numpy(), rtol=1e-14)


MODULES = [
    ("GELU", (), {}), ("GELU", ("tanh",), {}), ("SiLU", (), {}), ("Mish", (), {}),
    ("Softplus", (2.0, 5.0), {}), ("ELU", (0.5,), {}), ("CELU", (1.5,), {}), ("SELU", (), {}),
    ("LeakyReLU", (0.1,), {}), ("ReLU6", (), {}), ("Hardtanh", (-2.0, 0.5), {}),
    ("Hardswish", (), {}), ("Hardsigmoid", (), {}), ("Softsign", (), {}),
    ("LogSigmoid", (), {}), ("Softmin", (), {"dim": 1}), ("Softmax", (), {"dim": 0}),
    ("LogSoftmax", (), {"dim": 1}), ("GLU", (), {}), ("Tanhshrink", (), {}),
    ("Threshold", (0.2, -1.0), {}), ("ReLU", (), {}), ("Tanh", (), {}), ("Sigmoid", (), {}),
]


@pytest.mark.parametrize("name,args,kw", MODULES, ids=[m[0] for m in MODULES])
def test_modules_equal_torch(name, args, kw):
    x = RNG.uniform(-4, 4, (3, 4))
    t, q = _both(x)
    ours, theirs = getattr(rg.nn, name)(*args, **kw), getattr(torch.nn, name)(*args, **kw)
    out, ref = ours(t), theirs(q)
    np.testing.assert_allclose(out.data, ref.detach().numpy(), rtol=1e-13, atol=1e-15)
    out.sum().backward()
    ref.sum().backward()
    np.testing.assert_allclose(t.grad.data, q.grad.numpy(), rtol=1e-13, atol=1e-15)
    assert ours.state_dict() == {} and name in repr(ours)


def test_activations_replay_under_jit_and_vectorise_under_jvp():
    def f(x):
        return (F.gelu(x) + F.softplus(x, 2.0, 1.0) * F.hardswish(x) - F.logsigmoid(x)).sum()

    g = rg.jit(rg.func.grad(f))
    for _ in range(2):
        x = RNG.uniform(-4, 4, (5,))
        q = torch.tensor(x, requires_grad=True)
        ((TF.gelu(q) + TF.softplus(q, 2.0, 1.0) * TF.hardswish(q) - TF.logsigmoid(q)).sum()
         ).backward()
        np.testing.assert_allclose(g(rg.tensor(x, dtype=rg.float64)).data, q.grad.numpy(),
                                   rtol=1e-13)
    x, u = RNG.uniform(-2, 2, 4), RNG.standard_normal(4)
    _, t = rg.func.jvp(lambda v: F.mish(v), (rg.tensor(x, dtype=rg.float64),),
                       (rg.tensor(u, dtype=rg.float64),))
    _, tref = torch.func.jvp(TF.mish, (torch.tensor(x),), (torch.tensor(u),))
    np.testing.assert_allclose(t.data, tref.numpy(), rtol=1e-13)
