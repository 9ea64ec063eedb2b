"""`rg.func` against torch.func, nesting, batching and errors."""

import numpy as np
import pytest
import torch

import retrograd as rg
import retrograd.func as F
from retrograd import engine
from retrograd.api import max_pool2d

RNG = np.random.default_rng(0)
W0 = RNG.standard_normal((3, 4))
X0 = RNG.standard_normal(4)
A0 = RNG.standard_normal((4, 4))


def ours(a):
    return rg.tensor(a, dtype=rg.float64)


def theirs(a):
    return torch.tensor(a, dtype=torch.float64)


def close(a, b, tol=1e-10):
    if isinstance(a, (tuple, list)):
        assert isinstance(b, (tuple, list)) and len(a) == len(b)
        for p, q in zip(a, b):
            close(p, q, tol)
        return
    assert isinstance(a, rg.Tensor), type(a)
    b = b.detach().numpy() if isinstance(b, torch.Tensor) else np.asarray(b)
    assert a.shape == b.shape, (a.shape, b.shape)
    np.testing.assert_allclose(a.data, b, rtol=tol, atol=tol)


# the same function written twice: matrix input, vector input, tuple output of aux
def f_rg(w, x):
    h = rg.tanh(w @ x)
    return (h * h).sum() + rg.log1p(rg.exp(w)).sum() * x.sum()


def f_torch(w, x):
    h = torch.tanh(w @ x)
    return (h * h).sum() + torch.log1p(torch.exp(w)).sum() * x.sum()


def g_rg(w, x):  # vector output
    return rg.sin(w @ x) * x[:3]


def g_torch(w, x):
    return torch.sin(w @ x) * x[:3]


def m_rg(a):  # matrix in, matrix out
    return rg.tanh(a @ a.T) + a * 2.0


def m_torch(a):
    return torch.tanh(a @ a.T) + a * 2.0


# ---------------------------------------------------------------- against torch.func

@pytest.mark.parametrize("argnums", [0, 1, (0, 1), (1, 0)])
def test_grad_matches_torch(argnums):
    close(F.grad(f_rg, argnums)(ours(W0), ours(X0)),
          torch.func.grad(f_torch, argnums)(theirs(W0), theirs(X0)))


def test_grad_with_aux_and_value_and_grad():
    def fa(w, x):
        return f_rg(w, x), {"norm": (w * w).sum()}

    g, aux = F.grad(fa, (0, 1), has_aux=True)(ours(W0), ours(X0))
    close(g, torch.func.grad(f_torch, (0, 1))(theirs(W0), theirs(X0)))
    assert np.isclose(aux["norm"].item(), np.sum(W0 * W0))
    (v, aux2), g2 = F.value_and_grad(fa, 1, has_aux=True)(ours(W0), ours(X0))
    tg, tv = torch.func.grad_and_value(f_torch, 1)(theirs(W0), theirs(X0))
    close(v, tv)
    close(g2, tg)
    v, g3 = F.value_and_grad(f_rg)(ours(W0), ours(X0))
    close(v, tv)
    close(g3, torch.func.grad(f_torch)(theirs(W0), theirs(X0)))


def test_vjp_matches_torch():
    c = RNG.standard_normal(3)
    out, fn = F.vjp(g_rg, ours(W0), ours(X0))
    tout, tfn = torch.func.vjp(g_torch, theirs(W0), theirs(X0))
    close(out, tout)
    res = fn(ours(c))
    assert isinstance(res, tuple) and len(res) == 2
    close(res, tfn(theirs(c)))
    close(fn(ours(2 * c)), tfn(theirs(2 * c)))  # vjp_fn can be called again


def test_vjp_with_tuple_outputs_and_aux():
    def two(a):
        return (rg.sin(a), (a * a).sum()), "aux"

    out, fn, aux = F.vjp(two, ours(X0), has_aux=True)
    assert aux == "aux" and isinstance(out, tuple)
    (g,) = fn((ours(np.ones(4)), ours(2.0)))
    np.testing.assert_allclose(g.data, np.cos(X0) + 4 * X0)


def test_jvp_matches_torch():
    tw, tx = RNG.standard_normal((3, 4)), RNG.standard_normal(4)
    out, t = F.jvp(g_rg, (ours(W0), ours(X0)), (ours(tw), ours(tx)))
    tout, tt = torch.func.jvp(g_torch, (theirs(W0), theirs(X0)), (theirs(tw), theirs(tx)))
    close(out, tout)
    close(t, tt)


def test_jvp_with_aux():
    out, t, aux = F.jvp(lambda a: (rg.exp(a), a.sum()), (ours(X0),), (ours(np.ones(4)),),
                        has_aux=True)
    np.testing.assert_allclose(t.data, np.exp(X0))
    assert np.isclose(aux.item(), X0.sum())


@pytest.mark.parametrize("argnums", [0, 1, (0, 1)])
@pytest.mark.parametrize("mode", ["jacrev", "jacfwd"])
def test_jacobians_match_torch(mode, argnums):
    ours_fn, theirs_fn = getattr(F, mode), getattr(torch.func, mode)
    close(ours_fn(g_rg, argnums)(ours(W0), ours(X0)),
          theirs_fn(g_torch, argnums)(theirs(W0), theirs(X0)))


@pytest.mark.parametrize("mode", ["jacrev", "jacfwd"])
def test_jacobian_of_matrix_function_and_aux(mode):
    def ma(a):
        return m_rg(a), a.sum()

    j, aux = getattr(F, mode)(ma, has_aux=True)(ours(A0))
    close(j, getattr(torch.func, mode)(m_torch)(theirs(A0)))
    assert j.shape == (4, 4, 4, 4)
    assert np.isclose(aux.item(), A0.sum())


@pytest.mark.parametrize("mode", ["jacrev", "jacfwd"])
def test_jacobian_of_tuple_outputs(mode):
    def two(w, x):
        return g_rg(w, x), f_rg(w, x)

    def ttwo(w, x):
        return g_torch(w, x), f_torch(w, x)

    close(getattr(F, mode)(two, (0, 1))(ours(W0), ours(X0)),
          getattr(torch.func, mode)(ttwo, (0, 1))(theirs(W0), theirs(X0)))


@pytest.mark.parametrize("argnums", [0, 1, (0, 1)])
def test_hessian_matches_torch(argnums):
    close(F.hessian(f_rg, argnums)(ours(W0), ours(X0)),
          torch.func.hessian(f_torch, argnums)(theirs(W0), theirs(X0)))


def test_hessian_of_matrix_input():
    def s(a):
        return (m_rg(a) ** 2).sum()

    def ts(a):
        return (m_torch(a) ** 2).sum()

    h = F.hessian(s)(ours(A0))
    assert h.shape == (4, 4, 4, 4)
    close(h, torch.func.hessian(ts)(theirs(A0)))


def test_hvp_is_hessian_times_v_and_matches_torch():
    v = RNG.standard_normal(4)

    def fx(x):
        return f_rg(ours(W0), x)

    def tfx(x):
        return f_torch(theirs(W0), x)

    hv = F.hvp(fx, ours(X0), ours(v))
    ref = torch.func.jvp(torch.func.grad(tfx), (theirs(X0),), (theirs(v),))[1]
    close(hv, ref)
    close(hv, F.hessian(fx)(ours(X0)).data @ v)
    hw, hx = F.hvp(f_rg, (ours(W0), ours(X0)), (ours(np.ones((3, 4))), ours(v)))
    assert hw.shape == (3, 4) and hx.shape == (4,)


# ---------------------------------------------------------------- composition and order

@pytest.mark.parametrize("fn, d3", [(lambda x: x ** 5, lambda x: 60 * x ** 2),
                                    (rg.sin, lambda x: -np.cos(x))])
def test_third_derivatives_by_nesting(fn, d3):
    for x in (0.7, -1.3):
        assert np.isclose(F.grad(F.grad(F.grad(fn)))(ours(x)).item(), d3(x), rtol=1e-12)
        assert np.isclose(F.jacfwd(F.jacfwd(F.grad(fn)))(ours(x)).item(), d3(x), rtol=1e-12)
        assert np.isclose(F.grad(F.grad(F.grad(fn)))(x).item(), d3(x), rtol=1e-4)  # float32


def test_transforms_compose():
    x = ours(X0)
    h = F.hessian(lambda a: f_rg(ours(W0), a))(x)
    for other in (F.jacfwd(F.jacrev(lambda a: f_rg(ours(W0), a))),
                  F.jacrev(F.jacrev(lambda a: f_rg(ours(W0), a))),
                  F.jacfwd(F.jacfwd(lambda a: f_rg(ours(W0), a))),
                  F.jacrev(F.jacfwd(lambda a: f_rg(ours(W0), a))),
                  F.jacrev(F.grad(lambda a: f_rg(ours(W0), a)))):
        close(other(x), h.data)
    v = ours(RNG.standard_normal(4))
    close(F.jvp(F.grad(lambda a: f_rg(ours(W0), a)), (x,), (v,))[1], h.data @ v.data)
    # a Jacobian of a Jacobian: third-order tensor of g
    j2 = F.jacfwd(F.jacrev(g_rg, 1), 1)(ours(W0), x)
    ref = torch.func.jacfwd(torch.func.jacrev(g_torch, 1), 1)(theirs(W0), theirs(X0))
    close(j2, ref)


def test_perturbation_confusion():
    assert F.grad(lambda x: x * F.grad(lambda y: x + y)(x))(5.0).item() == 1.0
    # HIPS autograd's nested-closure case
    assert F.grad(lambda x: x * F.grad(lambda y: x * y)(3.0))(2.0).item() == 4.0

    def derivative(f, x):
        return F.jvp(f, (x,), (1.0,))[1]

    # Autodidax: f(x) = x * derivative(lambda y: x, 0.0) has derivative 0
    assert derivative(lambda x: x * derivative(lambda y: x, 0.0), 3.0).item() == 0.0
    assert F.grad(lambda x: x * F.grad(lambda y: x)(0.0))(3.0).item() == 0.0
    # mixing modes
    assert F.grad(lambda x: x * derivative(lambda y: x + y, x))(5.0).item() == 1.0
    assert derivative(lambda x: x * F.grad(lambda y: x * y)(3.0), 2.0).item() == 4.0


def test_closed_over_tensors_that_require_grad_stay_differentiable():
    w = rg.tensor([1.0, 2.0], dtype=rg.float64, requires_grad=True)
    g = F.grad(lambda x: (w * x * x).sum())(ours([3.0, 4.0]))  # 2 w x
    g.sum().backward()
    np.testing.assert_allclose(w.grad.data, [6.0, 8.0])
    x = rg.tensor([3.0, 4.0], dtype=rg.float64, requires_grad=True)
    F.grad(lambda a: (a ** 3).sum())(x).sum().backward()  # d/dx sum(3 x^2)
    np.testing.assert_allclose(x.grad.data, [18.0, 24.0])


def test_top_level_results_carry_no_graph():
    x = ours(X0)
    assert not F.grad(lambda a: (a * a).sum())(x).requires_grad
    assert not F.jacrev(rg.exp)(x).requires_grad
    out, fn = F.vjp(rg.exp, x)
    assert not out.requires_grad and not fn(ours(np.ones(4)))[0].requires_grad
    assert not F.hessian(lambda a: (a ** 3).sum())(x).requires_grad


def test_inputs_may_be_tensors_arrays_or_floats():
    def sq(a):
        return (a * a).sum()

    for x in (ours([1.5, 2.0]), np.array([1.5, 2.0]), [1.5, 2.0]):
        g = F.grad(sq)(x)
        assert isinstance(g, rg.Tensor)
        np.testing.assert_allclose(g.data, [3.0, 4.0])
    g = F.grad(sq)(1.5)
    assert isinstance(g, rg.Tensor) and g.item() == 3.0
    out, t = F.jvp(sq, (np.array([1.0, 2.0]),), (np.array([1.0, 1.0]),))
    assert isinstance(out, rg.Tensor) and t.item() == 6.0
    assert isinstance(F.jacfwd(rg.sin)(0.5), rg.Tensor)
    assert isinstance(F.hvp(lambda a: a ** 3, 2.0, 1.0), rg.Tensor)


def test_constant_and_unused_arguments_give_zero_gradients():
    assert F.grad(lambda x: rg.tensor(3.0))(2.0).item() == 0.0
    gx, gy = F.grad(lambda x, y: (x * 2.0).sum(), (0, 1))(ours([1.0]), ours([2.0]))
    assert gx.item() == 2.0 and gy.item() == 0.0
    j = F.jacrev(lambda x, y: x * 2.0, 1)(ours([1.0, 2.0]), ours([3.0]))
    np.testing.assert_allclose(j.data, np.zeros((2, 1)))
    _, t = F.jvp(lambda x: rg.tensor([1.0, 2.0]), (ours(1.0),), (ours(1.0),))
    np.testing.assert_allclose(t.data, [0.0, 0.0])


def test_grad_under_no_grad_still_works():
    with rg.no_grad():
        g = F.grad(lambda a: (a ** 2).sum())(ours([3.0]))
    assert g.item() == 6.0 and not g.requires_grad


# ---------------------------------------------------------------- batching

def _wide(n, m, rng):
    a = rg.tensor(rng.standard_normal((m, n)) / np.sqrt(n), dtype=rg.float64)

    def fn(x):
        return rg.tanh(a @ rg.sin(x)) * 2.0 + (a @ x) ** 2
    return fn


@pytest.mark.parametrize("n, m", [(30, 3), (3, 30)])
@pytest.mark.parametrize("mode", ["jacrev", "jacfwd"])
def test_batched_jacobian_equals_the_row_by_row_loop(mode, n, m):
    rng = np.random.default_rng(5)
    fn = _wide(n, m, rng)
    x = ours(rng.standard_normal(n))
    jac = getattr(F, mode)
    full = jac(fn)(x)
    close(jac(fn, chunk_size=1)(x), full.data)
    close(jac(fn, chunk_size=7)(x), full.data)
    other = F.jacfwd if mode == "jacrev" else F.jacrev
    close(other(fn)(x), full.data)


def test_jacobians_use_one_pass_not_one_per_row(monkeypatch):
    """jacrev: one forward and one backward; jacfwd: one forward, whatever the size."""
    calls = {"f": 0, "backward": 0}
    real = engine.backward

    def counting_backward(*a, **k):
        calls["backward"] += 1
        return real(*a, **k)

    monkeypatch.setattr(engine, "backward", counting_backward)
    fn = _wide(100, 100, np.random.default_rng(6))

    def counted(x):
        calls["f"] += 1
        return fn(x)

    x = ours(np.random.default_rng(7).standard_normal(100))
    j1 = F.jacrev(counted)(x)
    assert calls == {"f": 1, "backward": 1}
    calls.update(f=0, backward=0)
    j2 = F.jacfwd(counted)(x)
    assert calls == {"f": 1, "backward": 0}
    close(j1, j2.data)
    calls.update(f=0, backward=0)
    F.jacrev(counted, chunk_size=1)(x)
    assert calls == {"f": 1, "backward": 100}


def test_second_derivative_of_padded_max_pool_matches_torch():
    # reverse over reverse passes fold's vjp, whose padding must be zeros, not -inf
    rng = np.random.default_rng(8)
    x = rng.standard_normal((1, 1, 4, 4))
    w = rng.standard_normal((1, 1, 2, 2))

    def p(a):
        return (max_pool2d(a, 3, stride=2, padding=1) ** 2 * ours(w)).sum()

    def tp(a):
        return (torch.nn.functional.max_pool2d(a, 3, 2, 1) ** 2 * theirs(w)).sum()

    close(F.jacrev(F.grad(p))(ours(x)), torch.func.hessian(tp)(theirs(x)))
    close(F.hessian(p)(ours(x)), torch.func.hessian(tp)(theirs(x)))


# ---------------------------------------------------------------- errors

def test_grad_of_a_non_scalar_function_raises():
    with pytest.raises(RuntimeError, match=r"not a scalar \(shape \(4,\)\)"):
        F.grad(rg.exp)(ours(X0))


def test_mismatched_tangents_raise():
    with pytest.raises(ValueError, match=r"tangent 0 has shape \(3,\) but primal 0 has shape "
                                         r"\(4,\)"):
        F.jvp(rg.exp, (ours(X0),), (ours(np.ones(3)),))
    with pytest.raises(ValueError, match="2 primals but 1 tangents"):
        F.jvp(f_rg, (ours(W0), ours(X0)), (ours(W0),))
    with pytest.raises(TypeError, match="must be tuples"):
        F.jvp(rg.exp, ours(X0), ours(X0))
    with pytest.raises(ValueError, match="v must be a tuple"):
        F.hvp(f_rg, (ours(W0), ours(X0)), ours(X0))


def test_bad_argnums_raise():
    with pytest.raises(ValueError, match="argnums 2 is out of range.*2 positional"):
        F.grad(f_rg, 2)(ours(W0), ours(X0))
    with pytest.raises(ValueError, match="argnums -3 is out of range"):
        F.jacrev(g_rg, (0, -3))(ours(W0), ours(X0))
    with pytest.raises(TypeError, match="argnums must be an int or a tuple of ints"):
        F.grad(f_rg, "x")(ours(W0), ours(X0))
    with pytest.raises(ValueError, match="repeats"):
        F.grad(f_rg, (0, 0))(ours(W0), ours(X0))
    with pytest.raises(ValueError, match="empty"):
        F.jacfwd(g_rg, ())(ours(W0), ours(X0))


def test_other_bad_calls_raise():
    with pytest.raises(TypeError, match="only floating inputs"):
        F.grad(lambda a: a.sum())(rg.tensor([1, 2]))
    with pytest.raises(TypeError, match="has_aux=True the function must return a pair"):
        F.grad(lambda a: a.sum(), has_aux=True)(ours(X0))
    _, fn = F.vjp(rg.exp, ours(X0))
    with pytest.raises(ValueError, match=r"cotangent 0 has shape \(3,\) but the output has "
                                         r"shape \(4,\)"):
        fn(ours(np.ones(3)))
    with pytest.raises(ValueError, match="chunk_size"):
        F.jacrev(rg.exp, chunk_size=0)(ours(X0))
    with pytest.raises(TypeError, match="expected a Tensor, NumPy array or number"):
        F.grad(lambda a: a)("x")


def _arrays(x):
    return tuple(_arrays(t) for t in x) if isinstance(x, tuple) else x.data


def test_transforms_compose_with_jit():
    """Replays give the eager results: no top-level result is baked in as a constant."""
    from retrograd.jit import jit

    w = ours(W0)

    def loss(x):
        return rg.tanh(w @ x).sum()

    cases = [(F.value_and_grad(loss), 1), (F.hessian(loss), 1),
             (F.jacrev(lambda x: rg.sin(w @ x)), 1), (F.jacfwd(lambda x: rg.sin(w @ x)), 1),
             (lambda x, v: F.jvp(loss, (x,), (v,)), 2), (lambda x, v: F.hvp(loss, x, v), 2)]
    for fn, nargs in cases:
        jitted = jit(fn)
        for k in range(3):  # trace, then replay on new values
            args = (ours(X0 * (k + 1)), ours(np.full(4, k - 0.5)))[:nargs]
            close(jitted(*args), _arrays(fn(*args)))


def test_hessians_through_layers_match_torch():
    import torch.nn.functional as TF

    import retrograd.nn.functional as RF

    rng = np.random.default_rng(9)
    x, y = rng.standard_normal((5, 4)), np.array([0, 2, 1, 2, 0])
    w, b = rng.standard_normal((3, 4)), rng.standard_normal(3)

    def loss(w_, b_):
        return RF.cross_entropy(RF.linear(ours(x), w_, b_), rg.tensor(y))

    def tloss(w_, b_):
        return TF.cross_entropy(TF.linear(theirs(x), w_, b_), torch.tensor(y))

    close(F.hessian(loss, (0, 1))(ours(w), ours(b)),
          torch.func.hessian(tloss, (0, 1))(theirs(w), theirs(b)))
    xi, k = rng.standard_normal((2, 2, 5, 5)), rng.standard_normal((3, 2, 3, 3))

    def conv(k_):
        return (RF.conv2d(ours(xi), k_, padding=1) ** 2).sum()

    def tconv(k_):
        return (TF.conv2d(theirs(xi), k_, padding=1) ** 2).sum()

    close(F.hessian(conv)(ours(k)), torch.func.hessian(tconv)(theirs(k)), 1e-9)

    def pool(x_):
        return RF.max_pool2d(RF.conv2d(x_, ours(k), padding=1), 2)

    ref = torch.func.jacrev(lambda x_: TF.max_pool2d(TF.conv2d(x_, theirs(k), padding=1), 2))(
        theirs(xi))
    close(F.jacfwd(pool)(ours(xi)), ref)
    close(F.jacrev(pool)(ours(xi)), ref)


def test_number_to_a_tensor_power_differentiates_twice():
    """d/de 2**e under rg.func (the rule takes log of the number base: a bare array)."""
    import torch
    e = np.array([0.5, 1.0, -2.0])
    got = rg.func.hessian(lambda e: (2.0 ** e).sum())(rg.tensor(e)).numpy()
    want = torch.func.hessian(lambda e: (2.0 ** e).sum())(torch.tensor(e)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-12)
    g = rg.func.grad(lambda e: rg.pow(3.0, e).sum())(rg.tensor(e)).numpy()
    np.testing.assert_allclose(g, 3.0 ** e * np.log(3.0), rtol=1e-12)
