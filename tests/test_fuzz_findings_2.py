"""More mismatches with PyTorch found by differential fuzzing, each reduced to a small
program and checked against torch (values, dtypes, gradients and errors)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import retrograd as rg

NAN = float("nan")
INF = float("inf")


def _both(f):
    return f(torch), f(rg)


def _same(t, r, **kw):
    assert tuple(np.shape(r)) == tuple(np.shape(t))
    np.testing.assert_allclose(np.asarray(r), np.asarray(t), **kw)


def test_maximum_minimum_gradients_at_nan_and_ties():
    def f(m, name):
        a = m.tensor([NAN, 1.0, 2.0, NAN, 3.0, INF, -INF], requires_grad=True)
        b = m.tensor([1.0, NAN, 2.0, NAN, 1.0, INF, 0.0], requires_grad=True)
        g = m.tensor([1.0, 2.0, 3.0, 4.0, INF, 6.0, 7.0])
        getattr(m, name)(a, b).backward(g)
        return np.concatenate([a.grad.numpy(), b.grad.numpy()])
    for name in ("maximum", "minimum"):
        _same(f(torch, name), f(rg, name))


def test_logcumsumexp_gradient_with_infinite_inputs():
    def f(m, x):
        a = m.tensor(x, dtype=m.float64, requires_grad=True)
        m.logcumsumexp(a, 0).backward(m.tensor([1.0, -2.0, 3.0, 0.5], dtype=m.float64))
        return a.grad.numpy()
    for x in ([1.0, INF, 2.0, 3.0], [-INF, 1.0, INF, 0.0], [1000.0, -1000.0, 3.0, -INF]):
        _same(f(torch, x), f(rg, x), rtol=1e-12)


def test_complex_logcumsumexp_of_large_magnitudes_and_its_gradient():
    def f(m):
        a = m.tensor([1000 + 1j, 1001 + 2j, -5 + 0j, -1000 + 3j], requires_grad=True)
        y = m.logcumsumexp(a, 0)
        y.backward(m.tensor([1 + 1j, -2.0, 0.5j, 1.0], dtype=y.dtype))
        return np.concatenate([y.detach().resolve_conj().numpy(), a.grad.resolve_conj().numpy()])
    _same(*_both(f), rtol=1e-5)


def _raises_like_torch(f, **kw):
    """f(torch) raises RuntimeError; f(rg) raises a RuntimeError too (never a value)."""
    with pytest.raises(RuntimeError, **kw):
        f(torch)
    with pytest.raises(RuntimeError, **kw):
        f(rg)


def test_masked_fill_refuses_a_value_the_dtype_cannot_hold():
    mask = [True, False]
    for x, value in [([1.0, 2.0], 1 + 2j), ([1.0, 2.0], "t(1+2j)"), ([1, 2], float("nan")),
                     ([1.0, 2.0], 1e300), ([1, 2], 1e30)]:
        def f(m, x=x, value=value):
            v = m.tensor(1 + 2j) if value == "t(1+2j)" else value
            return m.tensor(x).masked_fill(m.tensor(mask), v)
        _raises_like_torch(f, match="without overflow")
    for value in (1 + 0j, 1.5):  # what fits is taken: the real part, truncated toward zero
        t, r = _both(lambda m, v=value: m.tensor([7, 2]).masked_fill(m.tensor(mask), v))
        assert r.tolist() == t.tolist()


def test_index_fill_refuses_a_complex_value_for_a_real_input():
    _raises_like_torch(lambda m: m.tensor([1.0, 2.0]).index_fill(0, m.tensor([0]), 1 + 0j),
                       match="omplex")


def test_masked_fill_with_a_mask_larger_than_the_input():
    def f(m):
        x = m.tensor([1.0, 2.0], requires_grad=True)
        v = m.tensor(3.0, requires_grad=True)
        y = x.masked_fill(m.tensor([[True, False], [False, True]]), v)
        (y * m.tensor([[1.0, 2.0], [3.0, 4.0]])).sum().backward()
        return np.concatenate([y.detach().numpy().ravel(), x.grad.numpy(), [v.grad.item()]])
    _same(*_both(f))
    _raises_like_torch(lambda m: m.tensor([1.0, 2.0]).masked_fill_(
        m.tensor([[True, False], [False, True]]), 0.0))


def test_integer_tensor_copying_a_float_that_requires_grad_holds_no_gradient():
    def f(m):
        x = m.zeros(3, dtype=m.int64)
        src = m.tensor([1.5, 2.5], requires_grad=True)
        x.copy_(m.tensor([0.5, 1.5, 2.5], requires_grad=True))
        x[1:].copy_(src)
        b = m.zeros(2, dtype=m.bool).copy_(src)
        return x.requires_grad, x.grad_fn is None, x.is_leaf, x.tolist(), b.requires_grad
    t, r = _both(f)
    assert r == t


def test_einsum_of_integer_and_bool_operands_has_torchs_dtype():
    cases = [("ii", [(3, 3)], "int32"), ("ij->j", [(2, 3)], "uint8"), ("ij->", [(2, 3)], "bool"),
             ("ij->ji", [(2, 3)], "int8"), ("ij,jk->ik", [(2, 3), (3, 4)], "int32"),
             ("ij,k->ik", [(2, 3), (4,)], "int32"), ("i,i->i", [(3,), (3,)], "bool"),
             ("i,j->ij", [(2,), (3,)], "int16")]
    rng = np.random.default_rng(0)
    for spec, shapes, dt in cases:
        arrays = [rng.integers(0, 3, s) for s in shapes]
        t, r = (m.einsum(spec, *[m.tensor(a).to(getattr(m, dt)) for a in arrays])
                for m in (torch, rg))
        assert str(r.dtype) == str(t.dtype).removeprefix("torch."), spec
        assert r.tolist() == t.tolist(), spec
    # where PyTorch's pairwise contraction meets two dtypes (a label summed in one operand
    # first, to int64) or bool in a batched matrix product, it refuses, and so does rg
    for spec, dt in [("ij,jk->i", "int32"), ("ij,jk->ik", "bool")]:
        _raises_like_torch(lambda m, spec=spec, dt=dt: m.einsum(
            spec, m.ones(2, 3, dtype=getattr(m, dt)), m.ones(3, 4, dtype=getattr(m, dt))))


def test_index_add_converts_alpha_to_the_input_dtype():
    def f(m, alpha, inplace):
        x = m.zeros(3, dtype=m.int64)
        args = (0, m.tensor([0, 1]), m.tensor([3, 5]))
        return (x.index_add_(*args, alpha=alpha) if inplace
                else x.index_add(*args, alpha=alpha)).tolist()
    for alpha in (1.5, 2.5, -1.5, 0.5):
        for inplace in (False, True):
            assert f(rg, alpha, inplace) == f(torch, alpha, inplace)
    for alpha in (1e30, float("nan")):
        _raises_like_torch(lambda m, alpha=alpha: f(m, alpha, False), match="overflow")


def test_an_inplace_op_on_a_quotient_keeps_the_division_differentiable():
    def f(m):
        a = m.tensor([1.0, 2.0, -3.0], dtype=m.float64, requires_grad=True)
        b = m.tensor([0.5, 4.0, 2.0], dtype=m.float64, requires_grad=True)
        y = a / b
        y.clamp_(-1, 1)
        w = m.tensor([0.3, -1.0, 2.0], dtype=m.float64)
        ga, gb = m.autograd.grad((y * w).sum(), (a, b), create_graph=True)
        ((ga * ga).sum() + (gb * gb * gb).sum()).backward()  # second derivatives too
        return np.concatenate([ga.detach().numpy(), gb.detach().numpy(), a.grad.numpy(),
                               b.grad.numpy()])
    _same(*_both(f), rtol=1e-12)


def test_all_any_of_a_0d_tensor_over_a_tuple_of_dims():
    for value in (1.0, 0.0):
        for kw in ({"dim": (0,)}, {"dim": [-1]}, {"dim": (0,), "keepdim": True}):
            for fn in ("all", "any"):
                t, r = (getattr(m.tensor(value), fn)(**kw) for m in (torch, rg))
                assert (r.item(), tuple(r.shape), r.dtype == rg.bool) == (
                    t.item(), tuple(t.shape), t.dtype == torch.bool)


def test_clamp_bounds_converted_to_the_dtype_as_torch_does():
    for dt, kw in [("uint8", {"min": -1}), ("uint8", {"max": -1}), ("uint8", {"min": -255}),
                   ("int8", {"min": -3, "max": 100})]:
        t, r = (m.tensor([0, 5, 100], dtype=getattr(m, dt)).clamp(**kw) for m in (torch, rg))
        assert (r.tolist(), str(r.dtype)) == (t.tolist(), dt)
    for dt, kw in [("uint8", {"min": -256}), ("int8", {"max": 200}),
                   ("float16", {"max": 1e10})]:
        _raises_like_torch(lambda m, dt=dt, kw=kw: m.tensor([1], dtype=getattr(m, dt)).clamp(
            **kw), match="overflow")
    with pytest.raises(NotImplementedError):
        torch.tensor([True]).clamp(min=False, max=True)
    with pytest.raises(NotImplementedError):
        rg.tensor([True]).clamp(min=False, max=True)


def test_integer_division_by_zero_of_an_empty_tensor_is_empty():
    def f(m):
        a = m.zeros(0, dtype=m.int64)
        rs = [a // a, a % a, a // 0, m.fmod(a, 0), m.remainder(a, 0),
              m.div(a, a, rounding_mode="trunc"), m.div(a, 0, rounding_mode="floor"),
              m.zeros(0, 2, dtype=m.int64) // m.tensor([0, 0])]
        b = m.zeros(0, dtype=m.int64)
        b //= 0
        return [(tuple(r.shape), str(r.dtype).removeprefix("torch.")) for r in rs + [b]]
    t, r = _both(f)
    assert r == t
    _raises_like_torch(lambda m: m.tensor([1]) // 0)


def test_bool_add_inplace_with_an_integer_alpha():
    for x, o, alpha in [([True, False], [True, True], -2), ([False, False], [False, True], -2),
                        ([False, False], [True, True], 0), ([True, False], [False, True], 3)]:
        t, r = (m.tensor(x).add_(m.tensor(o), alpha=alpha).tolist() for m in (torch, rg))
        assert r == t
    _raises_like_torch(lambda m: m.tensor([False]).add_(m.tensor([True]), alpha=0.5),
                       match="(?i)floating point")


def test_median_of_an_empty_tensor():
    for fn in ("median", "nanmedian"):
        for dt in ("float32", "float16", "int64", "int32", "uint8", "bool"):
            t, r = (getattr(m, fn)(m.zeros(0, 2, dtype=getattr(m, dt))) for m in (torch, rg))
            assert (r.tolist(), str(r.dtype), tuple(r.shape)) == (
                t.tolist(), dt, ()) or (dt.startswith("float") and np.isnan(r.item())
                                        and np.isnan(t.item()) and str(r.dtype) == dt)

        def g(m, fn=fn):
            x = m.zeros(2, 0, requires_grad=True)
            getattr(m, fn)(x).backward()
            return x.grad.numpy()
        _same(*_both(g))


def test_where_with_a_uint8_condition_warns_and_works():
    def f(m):
        return m.where(m.tensor([1, 0, 2], dtype=m.uint8), m.tensor([1.0, 2.0, 3.0]), 0.0)
    with warnings.catch_warnings():  # PyTorch warns once per process
        warnings.simplefilter("ignore")
        t = f(torch)
    with pytest.warns(UserWarning, match="uint8 condition"):
        r = f(rg)
    _same(t.numpy(), r.numpy())
    _raises_like_torch(lambda m: m.where(m.tensor([1, 0]), m.tensor([1.0, 2.0]), 0.0))


def test_reductions_and_scans_of_a_permuted_expanded_tensor_are_row_major():
    def f(m):
        x = m.ones(2, 1, 3).expand(2, 4, 3).permute(2, 0, 1) * m.arange(1.0, 5.0)
        outs = [x.prod(1), x.sum(-1, keepdim=True), x.amax(1), x.cumsum(1), x.softmax(1),
                m.logsumexp(x, 1), x.cumprod(0)]
        return [o.view(-1).tolist() for o in outs]
    t, r = _both(f)
    for a, b in zip(r, t):
        np.testing.assert_allclose(a, b, rtol=1e-6)


@pytest.mark.parametrize("call", [
    lambda m, x: m.median(x, 0), lambda m, x: m.nanmedian(x, 0), lambda m, x: m.mode(x, 0),
    lambda m, x: m.kthvalue(x, 1, 0), lambda m, x: x.max(0), lambda m, x: x.min(dim=0),
    lambda m, x: x.argmax(0), lambda m, x: x.argmin(0), lambda m, x: x.amax(0)])
def test_reducing_an_empty_dim_raises_torchs_index_error(call):
    with pytest.raises(IndexError):
        call(torch, torch.zeros(0, 3))
    with pytest.raises(IndexError, match="reduction dim"):
        call(rg, rg.zeros(0, 3))
    assert call(rg, rg.zeros(3, 0)) is not None  # the other dim reduces to an empty result
