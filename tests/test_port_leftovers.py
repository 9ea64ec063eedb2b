"""Loose ends from earlier porting rounds, each checked against torch: one-element integer
tensors where an int is expected (dims, chunk counts, split sizes, pool windows, sizes),
the refusal of floats and bools there, the warning on reading a non-leaf's `.grad`, zero
categorical samples, `_standard_gamma`/`_sample_dirichlet`, NumPy arrays with negative
strides, and argument errors of `autograd.functional` and `func`."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import retrograd as rg
from retrograd.jit import JitError

F = rg.nn.functional


def _fns(L):
    return TF if L is torch else F


def _x(L):
    return L.tensor(np.linspace(-1, 1, 24).reshape(2, 3, 4), dtype=L.float64)


def _np(v):
    if isinstance(v, (tuple, list)):
        return [_np(a) for a in v]
    if isinstance(v, (torch.Tensor, rg.Tensor)):
        return np.asarray(v.detach().numpy())
    return v


def _same(a, b):
    if isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b)
        for p, q in zip(a, b):
            _same(p, q)
        return
    if isinstance(a, np.ndarray):
        assert a.shape == b.shape and a.dtype == b.dtype
        np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-12)
    else:
        assert a == b


TENSOR_INT_ARGS = {
    "sum": lambda L, x: x.sum(L.tensor(1)),
    "sum_one_element": lambda L, x: x.sum(L.tensor([1])),
    "sum_bool_tensor": lambda L, x: x.sum(L.tensor(True)),
    "sum_tuple": lambda L, x: x.sum((L.tensor(0), 2)),
    "mean": lambda L, x: x.mean(L.tensor(0), keepdim=True),
    "chunk": lambda L, x: x.chunk(L.tensor(2), 2),
    "select": lambda L, x: x.select(L.tensor(0), L.tensor(1)),
    "flatten": lambda L, x: x.flatten(L.tensor(1)),
    "split": lambda L, x: x.split(L.tensor(2), -1),
    "transpose": lambda L, x: x.transpose(L.tensor(0), 1),
    "softmax": lambda L, x: x.softmax(L.tensor(-1)),
    "cat": lambda L, x: L.cat([x, x], L.tensor(1)),
    "stack": lambda L, x: L.stack([x, x], dim=L.tensor(1)),
    "squeeze": lambda L, x: x[:1].squeeze(L.tensor(0)),
    "argmax": lambda L, x: x.argmax(L.tensor(1)),
    "cumsum": lambda L, x: x.cumsum(L.tensor(2)),
    "gather": lambda L, x: x.gather(L.tensor(2), L.zeros(2, 3, 1, dtype=L.long)),
    "index_select": lambda L, x: x.index_select(L.tensor(1), L.tensor([0, 2])),
    "unbind": lambda L, x: x.unbind(L.tensor(1)),
    "movedim": lambda L, x: x.movedim(L.tensor(0), 2),
    "swapaxes": lambda L, x: x.swapaxes(L.tensor(0), 1),
    "flip": lambda L, x: x.flip(L.tensor(1)),
    "roll": lambda L, x: x.roll(L.tensor(1), L.tensor(2)),
    "unflatten": lambda L, x: x.flatten().unflatten(L.tensor(0), (4, 6)),
    "logsumexp": lambda L, x: x.logsumexp(L.tensor(2)),
    "std": lambda L, x: x.std(L.tensor(2)),
    "narrow": lambda L, x: x.narrow(0, L.tensor(0), L.tensor(1)),
    "view": lambda L, x: x.view(L.tensor(24)),
    "reshape": lambda L, x: x.reshape(L.tensor(4), -1),
    "permute": lambda L, x: x.permute(L.tensor(2), 0, 1),
    "expand": lambda L, x: x[:1].expand(L.tensor(3), -1, -1),
    "unsqueeze": lambda L, x: x.unsqueeze(L.tensor(0)),
    "max_pool2d": lambda L, x: _fns(L).max_pool2d(x, kernel_size=L.tensor(2)),
    "ones": lambda L, x: L.ones(L.tensor(2), 3),
    "index_and_range": lambda L, x: (x[L.tensor(1)], list(range(L.tensor(3)))),
}


@pytest.mark.parametrize("name", sorted(TENSOR_INT_ARGS))
def test_one_element_integer_tensor_where_an_int_is_expected(name):
    fn = TENSOR_INT_ARGS[name]
    _same(_np(fn(torch, _x(torch))), _np(fn(rg, _x(rg))))


REFUSED = {
    "float_tensor_dim": lambda L, x: x.sum(L.tensor(1.0)),
    "many_element_dim": lambda L, x: x.sum(L.tensor([0, 1])),
    "python_bool_dim": lambda L, x: x.sum(True),
    "python_bool_transpose": lambda L, x: x.transpose(True, 0),
    "float_tensor_chunk": lambda L, x: x.chunk(L.tensor(2.0)),
    "float_size_reshape": lambda L, x: x.reshape(4.0, 6),
    "bool_size_view": lambda L, x: x.view(True, 24),
    "float_tensor_view": lambda L, x: x.view(L.tensor(24.0)),
    "float_size_expand": lambda L, x: x[:1].expand(2.0, 3, 4),
    "float_permute": lambda L, x: x.permute(2.0, 0, 1),
    "float_repeat": lambda L, x: x.repeat(2.0, 1, 1),
    "bool_zeros": lambda L, x: L.zeros(True),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_float_and_bool_refused_where_an_int_is_expected(name):
    fn = REFUSED[name]
    with pytest.raises(TypeError):
        fn(torch, _x(torch))
    with pytest.raises(TypeError):
        fn(rg, _x(rg))


def test_tensor_int_argument_under_jit():
    """A constant made inside the trace is read; a traced argument is refused, not frozen."""
    g = rg.jit(lambda x: x.sum(rg.tensor(1)) + x.chunk(rg.tensor(3), 1)[0].sum(1))
    for k in (1.0, 2.0):
        t = torch.full((2, 3), k)
        want = t.sum(1) + t.chunk(3, 1)[0].sum(1)
        np.testing.assert_allclose(g(rg.full((2, 3), k)).numpy(), want.numpy())
    f = rg.jit(lambda x, n: x.sum(n))
    with pytest.raises(JitError):
        f(rg.ones(2, 3), rg.tensor(1))


def test_non_leaf_grad_read_warns_and_gives_none():
    for L in (torch, rg):
        x = L.ones(2, requires_grad=True)
        y = x * 2
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            assert y.grad is None
            assert x.grad is None
        assert [type(m.message) for m in w] == [UserWarning]
        assert "not a leaf Tensor" in str(w[0].message)
        y.retain_grad()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert y.grad is None
            y.sum().backward()
            np.testing.assert_allclose(np.asarray(y.grad.numpy()), [1.0, 1.0])


@pytest.mark.parametrize("make", [
    lambda D, p: D.Categorical(p).sample((0,)),
    lambda D, p: D.Categorical(p).sample((2, 0)),
    lambda D, p: D.OneHotCategorical(p).sample((0,)),
    lambda D, p: D.Multinomial(5, p).sample((0,)),
    lambda D, p: D.Multinomial(0, p).sample(),
])
def test_categorical_draws_refuse_zero_samples(make):
    with pytest.raises(RuntimeError):
        make(torch.distributions, torch.tensor([0.2, 0.3, 0.5]))
    with pytest.raises(RuntimeError):
        make(rg.distributions, rg.tensor([0.2, 0.3, 0.5]))
    assert tuple(rg.distributions.Normal(rg.zeros(3), 1.0).sample((0,)).shape) == \
        tuple(torch.distributions.Normal(torch.zeros(3), 1.0).sample((0,)).shape)


def test_private_gamma_and_dirichlet_samplers():
    rg.manual_seed(0)
    conc = [[1.0, 2.0, 3.0]] * 4000
    a_t = torch.tensor([0.5, 2.0], dtype=torch.float64, requires_grad=True)
    a_r = rg.tensor([0.5, 2.0], dtype=rg.float64, requires_grad=True)
    g_t, g_r = torch._standard_gamma(a_t), rg._standard_gamma(a_r)
    assert g_r.shape == g_t.shape and g_r.dtype == rg.float64 and g_r.requires_grad
    g_r.sum().backward()
    assert a_r.grad.shape == (2,) and bool((a_r.grad > 0).all())
    big = rg._standard_gamma(rg.full((20000,), 3.0, dtype=rg.float64))
    assert abs(float(big.mean()) - 3.0) < 0.1
    d_t = torch._sample_dirichlet(torch.tensor(conc, dtype=torch.float64))
    d_r = rg._sample_dirichlet(rg.tensor(conc, dtype=rg.float64))
    assert d_r.shape == d_t.shape and d_r.dtype == rg.float64
    np.testing.assert_allclose(d_r.sum(-1).numpy(), 1.0)
    np.testing.assert_allclose(d_r.mean(0).numpy(), d_t.mean(0).numpy(), atol=0.02)
    for L in (torch, rg):
        with pytest.raises(RuntimeError):
            L._sample_dirichlet(L.tensor([1.0, 2.0], requires_grad=True))[0].backward()
        with pytest.raises(NotImplementedError):
            L._standard_gamma(L.tensor([1, 2]))


@pytest.mark.parametrize("fn", ["from_numpy", "as_tensor", "tensor", "asarray"])
def test_numpy_array_with_negative_strides_refused(fn):
    a = np.arange(6.0).reshape(2, 3)
    for arr in (a[::-1], a[:, ::-1]):
        for L in (torch, rg):
            with pytest.raises(ValueError, match="negative"):
                getattr(L, fn)(arr)
    for arr in (a[:, ::2], a.T):
        np.testing.assert_array_equal(getattr(rg, fn)(arr).numpy(), getattr(torch, fn)(arr))
    np.testing.assert_array_equal(rg.asarray(a[::-1], copy=True).numpy(), a[::-1])


def test_default_collate_of_arrays_with_negative_strides_refused():
    a = np.arange(6.0).reshape(2, 3)
    for collate in (torch.utils.data.default_collate, rg.utils.data.default_collate):
        with pytest.raises(ValueError, match="negative"):
            collate([a[::-1], a])
    np.testing.assert_array_equal(rg.utils.data.default_collate([a, a.T.T]).numpy(),
                                  torch.utils.data.default_collate([a, a.T.T]).numpy())


def test_functional_strategy_and_argnums_errors():
    for L in (torch, rg):
        AF = L.autograd.functional
        x = L.ones(3, dtype=L.float64)
        with pytest.raises(AssertionError):
            AF.jacobian(lambda a: a ** 2, x, strategy="bad")
        with pytest.raises(AssertionError):
            AF.hessian(lambda a: (a ** 2).sum(), x, outer_jacobian_strategy="bad")
        for argnums in (1.0, (0, "a"), [0], True):
            with pytest.raises(RuntimeError):
                L.func.grad(lambda a: (a ** 2).sum(), argnums=argnums)(x)


def _mlp_program(L, w1, w2, xb, yb):
    """A small classifier whose sizes come from tensors (`n = mask.sum()`-style), trained
    three SGD steps; returns losses and final weights."""
    nn = L.nn
    model = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 3)).double()
    with L.no_grad():
        model[0].weight.copy_(L.tensor(w1[:, :4]))
        model[0].bias.copy_(L.tensor(w1[:, 4]))
        model[2].weight.copy_(L.tensor(w2[:, :6]))
        model[2].bias.copy_(L.tensor(w2[:, 6]))
    opt = L.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x, y = L.tensor(xb), L.tensor(yb)
    n_chunks = (y >= 0).sum() // 4  # a 0-d tensor
    losses = []
    for _ in range(3):
        opt.zero_grad()
        feats = x.view(L.tensor(8), -1)
        logits = L.cat([model(c) for c in feats.chunk(n_chunks)], dim=L.tensor(0))
        loss = _fns(L).cross_entropy(logits, y) + logits.logsumexp(L.tensor(1)).mean() * 0.01
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, [p.detach() for p in model.parameters()]


def test_whole_program_tensor_sizes_mlp():
    r = np.random.default_rng(0)
    w1, w2 = r.normal(size=(6, 5)) * 0.5, r.normal(size=(3, 7)) * 0.5
    xb, yb = r.normal(size=(8, 4)), r.integers(0, 3, size=8)
    lt, pt = _mlp_program(torch, w1, w2, xb, yb)
    lr, pr = _mlp_program(rg, w1, w2, xb, yb)
    np.testing.assert_allclose(lr, lt, rtol=1e-10)
    for a, b in zip(pt, pr):
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-9, atol=1e-12)


def _conv_program(L, w, xb):
    """A conv + pool block with window sizes and dims given as tensors, one backward."""
    x = L.tensor(xb, requires_grad=True)
    wt = L.tensor(w, requires_grad=True)
    k = L.tensor(2)
    h = _fns(L).conv2d(x, wt, padding=1).relu()
    h = _fns(L).max_pool2d(h, kernel_size=k, stride=k)
    out = h.flatten(L.tensor(1)).softmax(L.tensor(-1)).split(L.tensor(3), 1)[0].sum()
    out.backward()
    return [out.detach(), x.grad, wt.grad]


def test_whole_program_tensor_windows_conv():
    r = np.random.default_rng(1)
    w, xb = r.normal(size=(2, 1, 3, 3)), r.normal(size=(2, 1, 4, 4))
    _same(_np(_conv_program(torch, w, xb)), _np(_conv_program(rg, w, xb)))
