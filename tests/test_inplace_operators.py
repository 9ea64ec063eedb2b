"""`+= -= *= /= **=` change the tensor in place, as in PyTorch: other names for it see the
change, version counters guard values saved for backward, a leaf that requires grad
refuses them while grad is on, and a result that needs a wider dtype is refused."""

import numpy as np
import pytest
import torch

import retrograd as rg
from retrograd import nn

OPS = {
    "+=": lambda a, b: a.__iadd__(b),
    "-=": lambda a, b: a.__isub__(b),
    "*=": lambda a, b: a.__imul__(b),
    "/=": lambda a, b: a.__itruediv__(b),
    "**=": lambda a, b: a.__ipow__(b),
}


def _apply(sym, a, b):
    """`a <sym> b` as a statement, returning the name's new value."""
    if sym == "+=":
        a += b
    elif sym == "-=":
        a -= b
    elif sym == "*=":
        a *= b
    elif sym == "/=":
        a /= b
    elif sym == "**=":
        a **= b
    return a


OPERANDS = {
    "number": (1.5, 1.5),
    "int": (2, 2),
    "tensor": (np.array([0.5, 2.0, -1.0]), None),
    "broadcast": (np.array(0.25), None),
}


@pytest.mark.parametrize("sym", OPS)
@pytest.mark.parametrize("kind", OPERANDS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_operator_changes_the_tensor_in_place_like_torch(sym, kind, dtype):
    base = np.array([1.0, 2.0, 3.0], dtype=dtype)
    other, other_t = OPERANDS[kind]
    if isinstance(other, np.ndarray):
        other = other.astype(dtype)
        other_r, other_t = rg.tensor(other), torch.tensor(other)
    else:
        other_r = other
    a, ta = rg.tensor(base.copy()), torch.tensor(base.copy())
    alias, talias = a, ta
    before = a._version
    a = _apply(sym, a, other_r)
    ta = _apply(sym, ta, other_t)
    assert a is alias and ta is talias
    assert a._version == before + 1
    assert a.dtype == np.dtype(dtype)
    np.testing.assert_allclose(alias.numpy(), talias.numpy(), rtol=1e-6)


@pytest.mark.parametrize("sym", OPS)
def test_operator_on_a_leaf_requiring_grad_raises_and_changes_nothing(sym):
    w = rg.tensor([1.0, 2.0], requires_grad=True)
    tw = torch.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf"):
        _apply(sym, tw, 2.0)
    with pytest.raises(RuntimeError, match="leaf"):
        _apply(sym, w, 2.0)
    np.testing.assert_array_equal(w.numpy(), [1.0, 2.0])
    assert w._version == 0 and w.is_leaf and w.grad_fn is None
    with rg.no_grad(), torch.no_grad():
        alias, talias = w, tw
        w = _apply(sym, w, 2.0)
        tw = _apply(sym, tw, 2.0)
    assert w is alias and w.is_leaf and w.requires_grad
    np.testing.assert_allclose(w.numpy(), talias.detach().numpy())


def _two_layers(seed=0):
    rg.manual_seed(seed)
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
    tmodel = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
    with torch.no_grad():
        for p, tp in zip(model.parameters(), tmodel.parameters()):
            tp.copy_(torch.tensor(p.numpy()))
    return model, tmodel


def test_manual_sgd_update_under_no_grad_changes_the_model_like_torch():
    model, tmodel = _two_layers()
    x = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)
    params = list(model.parameters())
    before = [p.numpy().copy() for p in params]
    lr = 0.1
    for _ in range(3):
        for m in (model, tmodel):
            m.zero_grad()
        (model(rg.tensor(x)) ** 2).mean().backward()
        (tmodel(torch.tensor(x)) ** 2).mean().backward()
        with rg.no_grad():
            for p in model.parameters():
                p -= lr * p.grad
        with torch.no_grad():
            for p in tmodel.parameters():
                p -= lr * p.grad
    after = list(model.parameters())
    assert all(p is q for p, q in zip(params, after))  # the same Parameter objects
    assert all(isinstance(p, nn.Parameter) and p.is_leaf and p.requires_grad for p in after)
    assert all(not np.allclose(b, p.numpy()) for b, p in zip(before, after))
    for p, tp in zip(after, tmodel.parameters()):
        np.testing.assert_allclose(p.numpy(), tp.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_backward_after_an_update_of_a_saved_parameter_raises_like_torch():
    model, tmodel = _two_layers()
    x = np.ones((2, 3), dtype=np.float32)
    loss = model(rg.tensor(x)).sum()
    tloss = tmodel(torch.tensor(x)).sum()
    with rg.no_grad():
        w = model[2].weight  # read by the gradient of the hidden layer
        w -= 0.5
    with torch.no_grad():
        tmodel[2].weight.sub_(0.5)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        tloss.backward()
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        loss.backward()


def test_operator_on_a_non_leaf_gives_torch_gradients():
    v = np.array([0.3, -1.2, 2.0])
    x = rg.tensor(v, requires_grad=True)
    tx = torch.tensor(v, requires_grad=True)
    outs = []
    for t in (x, tx):
        h = t.sin()  # sin's gradient reads its input, not h
        z = h * 3
        h += t * t
        h *= 2.0
        h /= 4.0
        outs.append(z.sum() + (h * h).sum())
    outs[0].backward()
    outs[1].backward()
    np.testing.assert_allclose(outs[0].item(), outs[1].item())
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy())


def test_operator_that_changes_a_saved_non_leaf_raises():
    x = rg.tensor([0.5, 1.0], requires_grad=True)
    h = x.exp()  # exp saves its output
    y = (h * h).sum()  # mul reads h
    h += 1
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        y.backward()


@pytest.mark.parametrize("dtype,sym,other", [
    ("int64", "+=", 0.5), ("int64", "/=", 2), ("int64", "*=", 1.5), ("int64", "-=", 0.5),
    ("int32", "+=", np.array([0.5, 0.5])), ("bool", "+=", 1), ("float32", "+=", 1j),
])
def test_result_that_needs_a_wider_dtype_raises_like_torch(dtype, sym, other):
    a = rg.tensor(np.array([1, 2]).astype(dtype))
    ta = torch.tensor(np.array([1, 2]).astype(dtype))
    o = rg.tensor(other) if isinstance(other, np.ndarray) else other
    to = torch.tensor(other) if isinstance(other, np.ndarray) else other
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type"):
        _apply(sym, ta, to)
    with pytest.raises(RuntimeError, match=f"can't be cast to the desired output type {dtype}"):
        _apply(sym, a, o)
    np.testing.assert_array_equal(a.numpy(), np.array([1, 2]).astype(dtype))
    assert a._version == 0


def test_int_result_type_names_the_float_it_would_need():
    a = rg.tensor([1, 2])
    with pytest.raises(RuntimeError, match="result type float32 can't be cast .* int64"):
        a += 0.5


def test_operands_that_would_grow_the_tensor_raise_like_torch():
    a, ta = rg.ones(2), torch.ones(2)
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        ta += torch.ones(3, 2)
    with pytest.raises(RuntimeError, match=r"doesn't match the broadcast shape \(3, 2\)"):
        a += rg.ones(3, 2)
    np.testing.assert_array_equal(a.numpy(), [1.0, 1.0])


def test_matmul_assign_rebinds_like_torch():
    m = np.arange(4.0).reshape(2, 2)
    a, ta = rg.tensor(m), torch.tensor(m)
    alias, talias = a, ta
    a @= rg.tensor(m)
    ta @= torch.tensor(m)
    assert (a is alias) == (ta is talias) is False
    np.testing.assert_array_equal(alias.numpy(), m)
    np.testing.assert_array_equal(a.numpy(), ta.numpy())


def test_inplace_mul_keeps_the_value_it_overwrote_as_pytorch_does():
    """x.mul_(w) needs the old x for w's gradient: later in-place changes of x must not
    invalidate it (PyTorch saves the original; we used to raise a version error)."""
    import torch

    def run(lib, **kw):
        a = lib.tensor([1.0, 2.0, 3.0], **kw, requires_grad=True)
        b = lib.tensor([2.0, 3.0, 4.0], **kw, requires_grad=True)
        x = a * 2
        x.mul_(b)
        x.add_(1)
        x.mul_(b)
        x *= b
        x.sum().backward()
        return a.grad.detach().numpy() if lib is torch else a.grad.numpy(), \
            b.grad.detach().numpy() if lib is torch else b.grad.numpy()

    got, want = run(rg, dtype=rg.float64), run(torch, dtype=torch.float64)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12)
