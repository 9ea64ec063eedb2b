"""Complex tensors through the engine, with PyTorch's convention for gradients of real losses,
and the fixes that came with them (real leaves get real gradients, std and var)."""

import numpy as np
import pytest
import torch

import retrograd as rg

RNG = np.random.default_rng(0)


def _c(shape):
    return RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)


def _both(z, requires_grad=True):
    return (rg.tensor(z.copy(), requires_grad=requires_grad),
            torch.tensor(z.copy(), requires_grad=requires_grad))


# Real-valued losses of complex intermediates: each function runs on rg or torch alike.
LOSSES = {
    "real": lambda M, z: (M.real(z) ** 2).sum(),
    "imag": lambda M, z: (M.imag(z) * M.real(z)).sum(),
    "conj": lambda M, z: M.real(M.conj(z) * z * z).sum(),
    "abs": lambda M, z: M.abs(z * z + 1).sum(),
    "angle": lambda M, z: (M.angle(z) * M.real(z)).sum(),
    "holomorphic": lambda M, z: M.real(M.exp(z) * M.sin(z) / (z * z + 2)).sum(),
    "matmul": lambda M, z: M.abs(z @ z.T).sum(),
    "view_as_real": lambda M, z: (M.view_as_real(z * 1j) ** 3).sum(),
    "view_as_complex": lambda M, z: M.abs(M.view_as_complex(M.view_as_real(z) ** 2)).sum(),
    "complex": lambda M, z: M.abs(M.complex(M.real(z) * 2, M.imag(z) - 1) * z).sum(),
    "polar": lambda M, z: M.real(M.polar(M.abs(z), M.angle(z) * 2) * z).sum(),
    "mixed_real": lambda M, z: M.real((z + M.real(z) * M.imag(z)) * z).sum(),
}


@pytest.mark.parametrize("name", sorted(LOSSES))
@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_gradient_of_a_real_loss_matches_pytorch(name, dtype):
    z0 = _c((3, 3)).astype(dtype)
    ours, theirs = _both(z0)
    a = LOSSES[name](rg, ours)
    b = LOSSES[name](torch, theirs)
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == np.complex64 else dict(rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(a.data, b.detach().numpy(), **tol)
    a.backward()
    b.backward()
    assert ours.grad.dtype == dtype
    np.testing.assert_allclose(ours.grad.data, theirs.grad.numpy(), **tol)


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_second_order_through_complex_matches_pytorch(name):
    """The gradient's own gradient (create_graph), contracted with a random direction."""
    z0 = _c((3, 3))
    w = _c((3, 3))
    ours, theirs = _both(z0)
    (g,) = rg.autograd.grad(LOSSES[name](rg, ours), [ours], create_graph=True)
    (tg,) = torch.autograd.grad(LOSSES[name](torch, theirs), [theirs], create_graph=True)
    np.testing.assert_allclose(g.data, tg.detach().numpy(), rtol=1e-10, atol=1e-10)
    s = rg.real(g * rg.tensor(w)).sum()
    ts = torch.real(tg * torch.tensor(w)).sum()
    (h,) = rg.autograd.grad(s, [ours])
    (th,) = torch.autograd.grad(ts, [theirs])
    np.testing.assert_allclose(h.data, th.numpy(), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_real_parametrisation_passes_gradcheck(name):
    """z = view_as_complex(x) with x real: gradcheck against finite differences, to second
    order, checks the rules independently of PyTorch."""
    x = rg.tensor(RNG.standard_normal((3, 3, 2)), requires_grad=True)

    def f(x):
        return LOSSES[name](rg, rg.view_as_complex(x))
    assert rg.gradcheck(f, [x])
    assert rg.gradgradcheck(f, [x])


def test_complex_outputs_are_gradchecked_in_both_parts():
    x = rg.tensor(RNG.standard_normal(4), requires_grad=True)
    assert rg.gradcheck(lambda x: rg.complex(x * x, rg.sin(x)) * (1 + 2j), [x])
    bad = rg.autograd.Function

    class WrongImag(bad):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return rg.complex(x, x * 3)

        @staticmethod
        def backward(ctx, g):
            return rg.real(g)  # misses the imaginary part's -3 imag(g)

    with pytest.raises(rg.GradcheckError):
        rg.gradcheck(WrongImag.apply, [x])


def test_jvp_through_complex_matches_torch():
    z0, t0 = _c((4,)), _c((4,))

    def f(M):
        return lambda z: M.real(z * M.conj(z) * M.exp(z)) + M.angle(z) + M.abs(z)
    _, ours = rg.func.jvp(f(rg), (rg.tensor(z0),), (rg.tensor(t0),))
    _, theirs = torch.func.jvp(f(torch), (torch.tensor(z0),), (torch.tensor(t0),))
    assert ours.dtype == np.float64
    np.testing.assert_allclose(ours.data, theirs.numpy(), rtol=1e-10)


# ---------------------------------------------------------------- the wrong results

def test_real_input_gets_a_real_gradient_with_create_graph():
    x = rg.tensor(np.array([1 + 2j, 3 - 1j]))
    v = np.array([0.2 + 0.5j, 1 - 1j])
    for f in (lambda M, x, y: x + y, lambda M, x, y: x * y, lambda M, x, y: y / x,
              lambda M, x, y: (x * y).sum(), lambda M, x, y: M.exp(x * y)):
        tx = torch.tensor(x.data)
        ty = torch.tensor([1.5, -2.0], dtype=torch.float64, requires_grad=True)
        tout = f(torch, tx, ty)
        tv = torch.tensor(v if tout.ndim else v[0]).detach()
        (ref,) = torch.autograd.grad(tout, [ty], tv)
        for cg in (False, True):
            y = rg.tensor([1.5, -2.0], dtype=rg.float64, requires_grad=True)
            out = f(rg, x, y)
            (g,) = rg.autograd.grad(out, [y], rg.tensor(tv.numpy()), create_graph=cg)
            assert g.dtype == np.float64
            np.testing.assert_allclose(g.data, ref.numpy(), rtol=1e-12)


def test_real_input_gets_a_real_gradient_inside_func_transforms():
    c = rg.tensor(np.array([1 + 2j, 3 - 1j]))

    def f(y):
        return rg.real((c + y) * (c * y)).sum()
    y0 = np.array([0.3, -0.7])
    ours = rg.func.grad(f)(rg.tensor(y0))
    tc = torch.tensor(c.data)
    theirs = torch.func.grad(lambda y: torch.real((tc + y) * (tc * y)).sum())(torch.tensor(y0))
    assert ours.dtype == np.float64
    np.testing.assert_allclose(ours.data, theirs.numpy(), rtol=1e-12)
    h = rg.func.hessian(f)(rg.tensor(y0))
    th = torch.func.hessian(lambda y: torch.real((tc + y) * (tc * y)).sum())(torch.tensor(y0))
    assert h.dtype == np.float64
    np.testing.assert_allclose(h.data, th.numpy(), rtol=1e-12)


def test_tangent_of_a_real_part_is_real():
    v = rg.tensor(np.array([0.5 + 1.0j]))
    _, t = rg.func.jvp(lambda z: rg.real(z * 1j), (v,), (rg.tensor(np.array([1.0 + 0j])),))
    assert t.dtype == np.float64
    np.testing.assert_allclose(t.data, [0.0])
    y = rg.tensor([2.0], dtype=rg.float64)
    _, t = rg.func.jvp(lambda y: rg.real(v * y), (y,), (rg.tensor([1.0], dtype=rg.float64),))
    assert t.dtype == np.float64
    np.testing.assert_allclose(t.data, [0.5])


def test_std_of_one_element_has_a_zero_gradient():
    g = rg.func.grad(lambda a: rg.std(a, ddof=0))(np.array([3.5]))
    np.testing.assert_array_equal(g.data, [0.0])
    x = rg.tensor([2.0, 2.0, 2.0], dtype=rg.float64, requires_grad=True)
    rg.std(x).backward()
    tx = torch.tensor([2.0, 2.0, 2.0], dtype=torch.float64, requires_grad=True)
    torch.std(tx).backward()
    np.testing.assert_array_equal(x.grad.data, tx.grad.numpy())
    y0 = RNG.standard_normal((3, 4))
    y, ty = rg.tensor(y0, requires_grad=True), torch.tensor(y0, requires_grad=True)
    rg.std(y, dim=1).sum().backward()
    torch.std(ty, dim=1).sum().backward()
    np.testing.assert_allclose(y.grad.data, ty.grad.numpy(), rtol=1e-12)


def test_var_of_complex_data_is_real_like_numpy_and_torch():
    z = np.array([1 + 1j, 2 - 1j, 0.5j])
    v = rg.var(rg.tensor(z), ddof=0)
    assert v.dtype == np.float64
    np.testing.assert_allclose(v.data, np.var(z))
    np.testing.assert_allclose(rg.var(rg.tensor(z)).data, torch.var(torch.tensor(z)).numpy())
    ours, theirs = _both(_c((2, 5)))
    rg.std(ours, dim=1).sum().backward()
    torch.std(theirs, dim=1).sum().backward()
    np.testing.assert_allclose(ours.grad.data, theirs.grad.numpy(), rtol=1e-12)


def test_abs_max_min_of_complex_data():
    z = rg.tensor(np.array([3 + 4j, -1j]))
    np.testing.assert_allclose(rg.abs(z).data, [5.0, 1.0])
    np.testing.assert_allclose(abs(z).data, [5.0, 1.0])
    assert rg.abs(z).dtype == np.float64
    for f in (rg.max, rg.min, lambda t: t.max(0), rg.argmax):
        with pytest.raises(TypeError, match="complex"):
            f(z)


def test_abs_refuses_complex_step_but_not_complex_data():
    x = rg.tensor([0.5, -0.25], dtype=rg.float64, requires_grad=True)
    with pytest.raises(TypeError, match="complex_step"):
        rg.gradcheck(rg.abs, [x], method="complex_step")
    assert rg.abs(rg.tensor(np.array([1j]))).item() == 1.0


def test_abs_gradient_at_zero_is_zero_like_torch():
    ours, theirs = _both(np.array([0j, 3 + 4j]))
    rg.abs(ours).sum().backward()
    torch.abs(theirs).sum().backward()
    np.testing.assert_allclose(ours.grad.data, theirs.grad.numpy())


@pytest.mark.parametrize("fn", ["sum", "mean", "std", "var", "max", "min", "prod",
                                "argmax", "argmin"])
def test_numpy_functions_dispatch_to_tensor_methods(fn):
    x0 = RNG.standard_normal((3, 4))
    t = rg.tensor(x0)
    got = getattr(np, fn)(t)
    assert isinstance(got, rg.Tensor)
    np.testing.assert_allclose(got.data, getattr(np, fn)(x0), rtol=1e-12)
    got = getattr(np, fn)(t, axis=1)
    np.testing.assert_allclose(got.data, getattr(np, fn)(x0, axis=1), rtol=1e-12)
    with pytest.raises(TypeError, match="out"):
        getattr(t, fn)(out=rg.zeros(1))


def test_complex_api_errors():
    with pytest.raises(RuntimeError, match="non-complex"):
        rg.imag(rg.tensor([1.0]))
    with pytest.raises(RuntimeError, match="last dimension of size 2"):
        rg.view_as_complex(rg.zeros(3, 3))
    with pytest.raises(TypeError, match="same dtype"):
        rg.complex(rg.zeros(2, dtype=rg.float32), rg.zeros(2, dtype=rg.float64))
    with pytest.raises(ValueError, match=r"\(2,\) and \(3,\)"):
        rg.complex(rg.zeros(2), rg.zeros(3))
    x = rg.tensor([1.0, -2.0])
    assert rg.real(x) is x and rg.conj(x) is x
    np.testing.assert_allclose(rg.angle(x).data, torch.angle(torch.tensor([1.0, -2.0])).numpy())


def test_tensor_attributes():
    z = rg.tensor(np.array([1 + 2j]))
    assert z.real.item() == 1.0 and z.imag.item() == 2.0
    assert z.conj().item() == 1 - 2j and z.is_complex()
    assert rg.view_as_real(z).shape == (1, 2)


def test_hooks_and_retain_grad_see_pytorch_convention():
    z0 = _c(3)
    ours, theirs = _both(z0)
    seen = []
    w = ours * 2
    w.retain_grad()
    w.register_hook(lambda g: seen.append(g.data.copy()))
    tw = theirs * 2
    tw.retain_grad()
    rg.abs(w * w).sum().backward()
    torch.abs(tw * tw).sum().backward()
    np.testing.assert_allclose(seen[0], tw.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(w.grad.data, tw.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(ours.grad.data, theirs.grad.numpy(), rtol=1e-12)
