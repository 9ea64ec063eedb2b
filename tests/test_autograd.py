"""Reverse mode, one test (or a few) per rule.

PyTorch serves as the reference where it has the same behaviour; its tensors
are built with an explicit dtype (another test module changes its default).
"""

import gc
import subprocess
import sys
import textwrap
import weakref

import numpy as np
import pytest
import torch

import retrograd as rg
from retrograd import engine, ops
from retrograd.gradcheck import GradcheckError


def _leaf(values, dtype=rg.float64):
    return rg.tensor(values, dtype=dtype, requires_grad=True)


@pytest.fixture
def gc_off():
    """Reference counting alone must free the graph: the cycle collector is off."""
    was = gc.isenabled()
    gc.collect()
    gc.disable()
    yield
    if was:
        gc.enable()


# ---------------------------------------------------------------- backward()

def test_backward_without_gradient_on_a_non_scalar_says_not_a_scalar():
    x = _leaf([1.0, 2.0, 3.0])
    y = x * 2
    with pytest.raises(RuntimeError, match="not a scalar") as e:
        y.backward()
    assert "(3,)" in str(e.value)
    assert x.grad is None
    y.backward(rg.tensor([1.0, 10.0, 100.0], dtype=rg.float64))
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 20.0, 200.0])


def test_backward_on_a_one_element_non_0d_tensor_needs_no_gradient():
    x = _leaf([[3.0]])
    (x * x).backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[6.0]])


def test_backward_with_a_gradient_of_the_wrong_shape_raises():
    x = _leaf([1.0, 2.0])
    with pytest.raises(RuntimeError, match=r"\(3,\).*\(2,\)"):
        (x * 2).backward(rg.tensor([1.0, 1.0, 1.0]))
    assert x.grad is None


@pytest.mark.parametrize("t", [rg.tensor([1.0, 2.0]).sum(), rg.tensor(3.0),
                               rg.tensor([1.0], requires_grad=True).detach() * 2])
def test_backward_on_a_tensor_that_does_not_require_grad_raises(t):
    with pytest.raises(RuntimeError, match="does not require grad"):
        t.backward()


def test_backward_twice_accumulates_without_retain_graph():
    x = _leaf([1.0, 2.0])
    y = (x * x * x).sum()
    y.backward()
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 12.0])
    y.backward()  # the graph stays usable while y is referenced
    np.testing.assert_array_equal(x.grad.numpy(), [6.0, 24.0])
    y.backward(retain_graph=True)  # accepted for compatibility
    np.testing.assert_array_equal(x.grad.numpy(), [9.0, 36.0])
    t = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    ty = (t * t * t).sum()
    for _ in range(3):
        ty.backward(retain_graph=True)
    np.testing.assert_array_equal(x.grad.numpy(), t.grad.numpy())


def test_two_different_outputs_accumulate_into_a_shared_leaf():
    x = _leaf([2.0])
    (x * 3).sum().backward()
    (x * x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [3.0 + 4.0])


def test_setting_grad_to_none_clears_it():
    x = _leaf([1.0, 2.0])
    y = (x * 5).sum()
    y.backward()
    x.grad = None
    assert x.grad is None
    y.backward()
    np.testing.assert_array_equal(x.grad.numpy(), [5.0, 5.0])


def test_reused_value_gets_the_sum_of_its_paths():
    x = _leaf(1.5)
    a = x * x
    y = a * a + a  # x^4 + x^2
    y.backward()
    assert x.grad.item() == pytest.approx(4 * 1.5 ** 3 + 2 * 1.5)


def test_non_leaf_keeps_grad_only_after_retain_grad():
    x = _leaf([1.0, 2.0])
    a = x * 2
    b = x * 3
    b.retain_grad()
    (a * b).sum().backward()
    assert a.grad is None
    np.testing.assert_array_equal(b.grad.numpy(), a.numpy())
    np.testing.assert_array_equal(x.grad.numpy(), 12 * x.numpy())
    (a * b).sum().backward()  # retained grads accumulate too
    np.testing.assert_array_equal(b.grad.numpy(), 2 * a.numpy())


# ---------------------------------------------------------------- create_graph

def test_grad_of_grad_to_third_order_matches_torch():
    def f(lib, x, y):
        return (lib.sin(x) * y ** 3 + lib.exp(x * y)).sum()

    xs, ys = [0.3, -0.7], [1.1, 0.4]
    x, y = _leaf(xs), _leaf(ys)
    tx = torch.tensor(xs, dtype=torch.float64, requires_grad=True)
    ty = torch.tensor(ys, dtype=torch.float64, requires_grad=True)
    out, tout = f(rg, x, y), f(torch, tx, ty)
    gx, = rg.autograd.grad(out, x, create_graph=True)
    tgx, = torch.autograd.grad(tout, tx, create_graph=True)
    gxy, = rg.autograd.grad(gx.sum(), y, create_graph=True)
    tgxy, = torch.autograd.grad(tgx.sum(), ty, create_graph=True)
    gxyx, = rg.autograd.grad(gxy.sum(), x)
    tgxyx, = torch.autograd.grad(tgxy.sum(), tx)
    for r, t in ((gx, tgx), (gxy, tgxy), (gxyx, tgxyx)):
        np.testing.assert_allclose(r.numpy(), t.detach().numpy(), rtol=1e-12)
    assert gx.requires_grad and gxy.requires_grad and not gxyx.requires_grad


def test_backward_with_create_graph_gives_a_differentiable_grad():
    x = _leaf(0.5)
    (x ** 4).backward(create_graph=True)
    g = x.grad
    assert g.requires_grad and g.item() == pytest.approx(4 * 0.5 ** 3)
    x.grad = None
    g.backward()
    assert x.grad.item() == pytest.approx(12 * 0.5 ** 2)


def test_third_derivative_of_x_to_the_fourth():
    x = _leaf(0.7)
    g1, = rg.autograd.grad(x ** 4, x, create_graph=True)
    g2, = rg.autograd.grad(g1, x, create_graph=True)
    g3, = rg.autograd.grad(g2, x)
    assert (g1.item(), g2.item(), g3.item()) == pytest.approx(
        (4 * 0.7 ** 3, 12 * 0.7 ** 2, 24 * 0.7))


# ---------------------------------------------------------------- rg.autograd.grad

def test_autograd_grad_returns_a_tuple_and_leaves_dot_grad_untouched():
    x, y = _leaf([1.0, 2.0]), _leaf([3.0, 4.0])
    out = (x * y).sum()
    gs = rg.autograd.grad(out, [x, y])
    assert isinstance(gs, tuple) and len(gs) == 2
    np.testing.assert_array_equal(gs[0].numpy(), [3.0, 4.0])
    np.testing.assert_array_equal(gs[1].numpy(), [1.0, 2.0])
    assert x.grad is None and y.grad is None
    x.grad = rg.tensor([7.0, 7.0], dtype=rg.float64)
    rg.autograd.grad(out, x)
    np.testing.assert_array_equal(x.grad.numpy(), [7.0, 7.0])


def test_autograd_grad_of_an_intermediate():
    x = _leaf([1.0, 2.0])
    a = x * x
    out = (a * 3).sum()
    ga, = rg.autograd.grad(out, a)
    np.testing.assert_array_equal(ga.numpy(), [3.0, 3.0])
    assert x.grad is None and a.grad is None


def test_autograd_grad_allow_unused():
    x, unused = _leaf([1.0]), _leaf([2.0])
    out = (x * 2).sum()
    with pytest.raises(RuntimeError, match="allow_unused"):
        rg.autograd.grad(out, [x, unused])
    gx, gu = rg.autograd.grad(out, [x, unused], allow_unused=True)
    np.testing.assert_array_equal(gx.numpy(), [2.0])
    assert gu is None


def test_autograd_grad_with_grad_outputs_matches_torch():
    v = [1.0, -2.0, 0.5]
    w = [3.0, 5.0, 7.0]
    x = _leaf(v)
    g, = rg.autograd.grad(x.sin() * x, x, grad_outputs=rg.tensor(w, dtype=rg.float64))
    tx = torch.tensor(v, dtype=torch.float64, requires_grad=True)
    tg, = torch.autograd.grad(tx.sin() * tx, tx, grad_outputs=torch.tensor(w, dtype=torch.float64))
    np.testing.assert_allclose(g.numpy(), tg.numpy(), rtol=1e-12)
    # several outputs, one grad_output each
    a, b = x * 2, x * x
    g, = rg.autograd.grad([a, b], x, grad_outputs=[rg.ones(3, dtype=rg.float64),
                                                   rg.tensor(w, dtype=rg.float64)])
    np.testing.assert_allclose(g.numpy(), 2 + 2 * np.array(v) * np.array(w))


def test_autograd_grad_on_a_non_scalar_without_grad_outputs_raises():
    x = _leaf([1.0, 2.0])
    with pytest.raises(RuntimeError, match="not a scalar"):
        rg.autograd.grad(x * 2, x)


# ---------------------------------------------------------------- grad mode

def test_no_grad_and_enable_grad_as_context_managers():
    x = _leaf([1.0])
    assert rg.is_grad_enabled()
    with rg.no_grad():
        assert not rg.is_grad_enabled()
        y = x * 2
        assert not y.requires_grad and y.grad_fn is None
        with rg.enable_grad():
            assert rg.is_grad_enabled()
            z = x * 2
            assert z.requires_grad and z.grad_fn.name == "mul"
        assert not rg.is_grad_enabled()
    assert rg.is_grad_enabled()
    assert rg.autograd.no_grad is rg.no_grad and rg.autograd.enable_grad is rg.enable_grad


def test_grad_mode_is_restored_after_an_exception():
    with pytest.raises(ZeroDivisionError):
        with rg.no_grad():
            raise ZeroDivisionError
    assert rg.is_grad_enabled()


def test_no_grad_and_enable_grad_as_decorators():
    x = _leaf([1.0])

    @rg.no_grad()
    def off():
        return x * 2, rg.is_grad_enabled()

    @rg.enable_grad()
    def on():
        return x * 2, rg.is_grad_enabled()

    y, mode = off()
    assert not mode and not y.requires_grad
    assert rg.is_grad_enabled()
    with rg.no_grad():
        y, mode = on()
        assert mode and y.requires_grad
        assert not rg.is_grad_enabled()
    assert off.__name__ == "off"


def test_no_grad_and_enable_grad_as_decorators_without_parentheses():
    x = _leaf([1.0])

    @rg.no_grad
    def off(scale):
        return x * scale, rg.is_grad_enabled()

    @rg.enable_grad
    def on():
        return x * 2, rg.is_grad_enabled()

    y, mode = off(3)
    assert not mode and not y.requires_grad and y.item() == 3
    assert rg.is_grad_enabled() and off.__name__ == "off"
    with rg.no_grad():
        y, mode = on()
        assert mode and y.requires_grad
        assert not rg.is_grad_enabled()
    assert isinstance(rg.no_grad(), rg.no_grad)  # the call form still makes a manager
    with pytest.raises(TypeError, match="decorator"):
        rg.no_grad(3)


# ---------------------------------------------------------------- in-place ops

INPLACE = {
    "setitem": lambda t: t.__setitem__((slice(0, 2),), 5.0),
    "add_": lambda t: t.add_(2.0),
    "sub_": lambda t: t.sub_(rg.tensor([1.0, 2.0, 3.0], dtype=rg.float64)),
    "mul_": lambda t: t.mul_(3.0),
    "div_": lambda t: t.div_(4.0),
    "zero_": lambda t: t.zero_(),
    "fill_": lambda t: t.fill_(1.5),
    "copy_": lambda t: t.copy_(rg.tensor([7.0, 8.0, 9.0], dtype=rg.float64)),
}
INPLACE_VALUES = {"setitem": [5, 5, 3], "add_": [3, 4, 5], "sub_": [0, 0, 0], "mul_": [3, 6, 9],
                  "div_": [0.25, 0.5, 0.75], "zero_": [0, 0, 0], "fill_": [1.5, 1.5, 1.5],
                  "copy_": [7, 8, 9]}


@pytest.mark.parametrize("name", INPLACE)
def test_in_place_ops_change_the_value_and_bump_the_version(name):
    t = rg.tensor([1.0, 2.0, 3.0], dtype=rg.float64)
    before = t._version
    out = INPLACE[name](t)
    assert out is None or out is t
    np.testing.assert_array_equal(t.numpy(), INPLACE_VALUES[name])
    assert t._version == before + 1
    INPLACE[name](t)
    assert t._version == before + 2


@pytest.mark.parametrize("name", INPLACE)
def test_backward_needing_a_value_changed_in_place_raises(name):
    x = _leaf([0.5, 1.0, 2.0])
    h = x * 1  # a non-leaf
    y = (h * h).sum()  # mul saves h
    INPLACE[name](h)
    with pytest.raises(RuntimeError, match="in-place"):
        y.backward()
    assert x.grad is None


@pytest.mark.parametrize("name", INPLACE)
def test_changing_a_saved_output_in_place_raises(name):
    x = _leaf([0.5, 1.0, 2.0])
    e = x.exp()  # exp's rule reads its output
    y = (e * 2).sum()
    INPLACE[name](e)
    with pytest.raises(RuntimeError, match="in-place"):
        y.backward()


@pytest.mark.parametrize("share", ["detach", "view"])
def test_changing_a_saved_output_through_a_detached_or_view_alias_raises(share):
    # The output's version counter is made when first shared; the node must see it.
    x = _leaf([0.5, 1.0, 2.0])
    e = x.exp()
    y = (e * 2).sum()
    alias = e.detach() if share == "detach" else e[1:]
    with rg.no_grad():
        alias.add_(1.0)
    with pytest.raises(RuntimeError, match="its output"):
        y.backward()


@pytest.mark.parametrize("name", INPLACE)
def test_in_place_on_a_leaf_requiring_grad_raises_and_changes_nothing(name):
    x = _leaf([1.0, 2.0, 3.0])
    with pytest.raises(RuntimeError, match="leaf"):
        INPLACE[name](x)
    np.testing.assert_array_equal(x.numpy(), [1.0, 2.0, 3.0])
    assert x._version == 0 and x.is_leaf
    with rg.no_grad():  # allowed without grad mode (an optimizer step)
        INPLACE[name](x)
    np.testing.assert_array_equal(x.numpy(), INPLACE_VALUES[name])
    assert x.is_leaf and x.requires_grad


def _torch_inplace(name, t):
    return {
        "setitem": lambda: t.__setitem__((slice(0, 2),), 5.0),
        "add_": lambda: t.add_(2.0),
        "sub_": lambda: t.sub_(torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)),
        "mul_": lambda: t.mul_(3.0),
        "div_": lambda: t.div_(4.0),
        "zero_": lambda: t.zero_(),
        "fill_": lambda: t.fill_(1.5),
        "copy_": lambda: t.copy_(torch.tensor([7.0, 8.0, 9.0], dtype=torch.float64)),
    }[name]()


@pytest.mark.parametrize("name", INPLACE)
def test_in_place_on_a_non_leaf_gives_the_correct_gradient(name):
    v = [0.5, 1.0, 2.0]
    x, tx = _leaf(v), torch.tensor(v, dtype=torch.float64, requires_grad=True)
    h, th = x.sin(), tx.sin()  # sin's rule reads its input x, not h
    INPLACE[name](h)
    _torch_inplace(name, th)
    (h * h * x).sum().backward()
    (th * th * tx).sum().backward()
    np.testing.assert_allclose(h.numpy(), th.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12)


def _correct_or_raises(build):
    """Run `build(lib)` -> (leaves, loss) for retrograd and torch: equal gradients, or an error."""
    xs, loss = build(rg)
    txs, tloss = build(torch)
    tloss.backward()
    try:
        loss.backward()
    except RuntimeError as e:
        assert "in-place" in str(e) or "view" in str(e)
        return False
    for x, tx in zip(xs, txs):
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12)
    return True


def _pair(lib, a, b):
    t = torch.tensor if lib is torch else rg.tensor
    dt = torch.float64 if lib is torch else rg.float64
    return (t(a, dtype=dt, requires_grad=True), t(b, dtype=dt, requires_grad=True))


def test_in_place_with_an_operand_requiring_grad_is_correct_or_raises():
    def build_mul(lib):
        w, u = _pair(lib, [1.0, 2.0, 3.0], [4.0, 5.0, 6.0])
        h = w * 1
        h.mul_(u)
        return (w, u), (h * h).sum()

    def build_add(lib):
        w, u = _pair(lib, [1.0, 2.0, 3.0], [4.0, 5.0, 6.0])
        h = w * w
        h.add_(u)
        h.sub_(u * w)
        return (w, u), (h * h).sum()

    def build_setitem(lib):
        w, u = _pair(lib, [1.0, 2.0, 3.0], [4.0, 5.0, 6.0])
        h = w.exp()
        h = h * 1
        h[1] = u[0] * u[2]
        return (w, u), (h * w).sum()

    def build_into_constant(lib):
        w, u = _pair(lib, [1.0, 2.0, 3.0], [4.0, 5.0, 6.0])
        z = (torch.zeros(3, dtype=torch.float64) if lib is torch
             else rg.zeros(3, dtype=rg.float64))
        z.copy_(u * w)
        z.add_(w)
        return (w, u), (z * z).sum()

    assert _correct_or_raises(build_add)  # these must work
    assert _correct_or_raises(build_setitem)
    assert _correct_or_raises(build_into_constant)
    _correct_or_raises(build_mul)  # correct or the in-place error, never silently wrong


def test_in_place_on_a_view_of_a_non_leaf_is_correct_or_raises():
    def view_then_modify_view(lib):
        w = _pair(lib, [1.0, 2.0], [0.0])[0]
        h = w * 1
        v = h[0:1]
        v.mul_(3)  # changes h through the view
        return (w,), (h * h).sum()

    def view_then_modify_base(lib):
        w = _pair(lib, [1.0, 2.0], [0.0])[0]
        h = w * 1
        v = h[0:1]
        h.mul_(2)  # changes v through its base
        return (w,), v.sum()

    def reshape_then_modify_base(lib):
        w = _pair(lib, [1.0, 2.0], [0.0])[0]
        h = w * 1
        v = h.reshape(2, 1)
        h.add_(1.0)
        return (w,), (v * v).sum()

    for build in (view_then_modify_base, reshape_then_modify_base):
        _correct_or_raises(build)
    try:
        _correct_or_raises(view_then_modify_view)
    except RuntimeError as e:  # refused at the in-place op itself
        assert "in-place" in str(e)


def test_in_place_on_a_view_of_a_leaf_requiring_grad_raises_and_changes_nothing():
    w = _leaf([1.0, 2.0])
    v = w[0:1]
    with pytest.raises(RuntimeError, match="in-place"):
        v.mul_(5.0)
    np.testing.assert_array_equal(w.numpy(), [1.0, 2.0])


# ---------------------------------------------------------------- detect_anomaly

def test_detect_anomaly_names_the_op_that_made_inf_in_backward():
    x = _leaf([0.0, 4.0])
    y = x.sqrt()
    assert y.grad_fn.name == "sqrt"
    with np.errstate(divide="ignore"):
        with rg.autograd.detect_anomaly():
            with pytest.raises(RuntimeError, match="sqrt") as e:
                (y * 2).sum().backward()
        assert "inf" in str(e.value)
        x.grad = None
        (y * 2).sum().backward()  # without anomaly mode: no error, inf in the gradient
    assert np.isinf(x.grad.numpy()[0])


def test_detect_anomaly_names_the_op_that_made_nan_in_backward():
    x = _leaf([0.0, 2.0])
    with np.errstate(divide="ignore", invalid="ignore"):
        z = (x.log() * 0.0).sum()  # mul's rule gives 0 (finite); log's rule gives 0 / 0
        with rg.autograd.detect_anomaly():
            with pytest.raises(RuntimeError, match="'log'") as e:
                z.backward()
    assert "nan" in str(e.value)
    assert x.grad is None


def test_detect_anomaly_restores_the_previous_mode():
    with rg.autograd.detect_anomaly():
        pass
    x = _leaf([0.0])
    with np.errstate(divide="ignore"):
        x.sqrt().sum().backward()
    assert np.isinf(x.grad.numpy()[0])


# ---------------------------------------------------------------- Function

class Cube(rg.autograd.Function):
    @staticmethod
    def forward(ctx, x, scale):
        ctx.save_for_backward(x)
        ctx.scale = scale
        return x * x * x * scale

    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        return g * 3 * x * x * ctx.scale, None


class WrongCube(Cube):
    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        return g * 2 * x * x * ctx.scale, None  # 2 instead of 3


def test_function_forward_backward_and_saved_tensors():
    x = _leaf([1.0, 2.0])
    y = Cube.apply(x, 2.0)
    np.testing.assert_array_equal(y.numpy(), [2.0, 16.0])
    assert y.requires_grad and y.grad_fn.name == "Cube"
    (y * rg.tensor([1.0, 10.0], dtype=rg.float64)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [6.0, 240.0])


def test_function_without_grad_records_nothing():
    y = Cube.apply(rg.tensor([1.0, 2.0]), 1.0)
    assert not y.requires_grad and y.grad_fn is None
    with rg.no_grad():
        y = Cube.apply(_leaf([1.0]), 1.0)
    assert not y.requires_grad


def test_function_backward_passes_gradcheck_and_a_wrong_one_fails():
    x = _leaf([0.3, -1.2, 2.0])
    assert rg.gradcheck(lambda t: Cube.apply(t, 1.5), [x])
    with pytest.raises(GradcheckError, match="input 0"):
        rg.gradcheck(lambda t: WrongCube.apply(t, 1.5), [x])


def test_function_composes_with_create_graph():
    x = _leaf(0.5)
    g, = rg.autograd.grad(Cube.apply(x, 1.0), x, create_graph=True)
    g2, = rg.autograd.grad(g, x)
    assert g.item() == pytest.approx(0.75) and g2.item() == pytest.approx(3.0)


class Scale(rg.autograd.Function):
    """y = 2 x, whose backward (deliberately) reads the saved x: g * x."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * 2

    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        return g * x


class Exp(rg.autograd.Function):
    """Saves its output, as torch's exp does."""

    @staticmethod
    def forward(ctx, x):
        y = x.exp()
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        y, = ctx.saved_tensors
        return g * y


def _torch_fns():
    class TScale(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return g * x

    class TExp(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            y, = ctx.saved_tensors
            return g * y

    return TScale, TExp


CHANGES = {
    "add_": lambda t: t.add_(1.0),
    "setitem": lambda t: t.__setitem__(0, 5.0),
    "+=": lambda t: t.__iadd__(1.0),
    "view": lambda t: _no_grad_of(t)(lambda: t[1:].mul_(3.0)),
    "detach": lambda t: t.detach().zero_(),
}


def _no_grad_of(t):
    """Run a thunk under the no_grad of `t`'s library."""
    def run(thunk):
        with (torch.no_grad() if isinstance(t, torch.Tensor) else rg.no_grad()):
            return thunk()
    return run


@pytest.mark.parametrize("change", CHANGES)
def test_function_saved_input_changed_in_place_raises_naming_it(change):
    TScale, _ = _torch_fns()
    x, tx = _leaf([0.5, 1.0]), torch.tensor([0.5, 1.0], dtype=torch.float64,
                                            requires_grad=True)
    h, th = x * 1, tx * 1
    y, ty = Scale.apply(h), TScale.apply(th)
    CHANGES[change](h)
    CHANGES[change](th)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        ty.sum().backward()
    with pytest.raises(RuntimeError, match=r"modified by an in-place operation: saved tensor 0 "
                       r"\(shape \(2,\)\) of 'Scale' is at version 1; expected version 0"):
        y.sum().backward()


def test_function_saved_output_changed_in_place_raises():
    _, TExp = _torch_fns()
    x, tx = _leaf([0.5, 1.0]), torch.tensor([0.5, 1.0], dtype=torch.float64,
                                            requires_grad=True)
    y, ty = Exp.apply(x), TExp.apply(tx)
    with rg.no_grad(), torch.no_grad():
        y.mul_(2)
        ty.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        ty.sum().backward()
    with pytest.raises(RuntimeError, match="saved tensor 0 .* of 'Exp' is at version 1"):
        y.sum().backward()


def test_function_saved_tensor_changed_before_apply_is_fine_like_torch():
    TScale, _ = _torch_fns()
    x, tx = _leaf([0.5, 1.0]), torch.tensor([0.5, 1.0], dtype=torch.float64,
                                            requires_grad=True)
    for lib, t in ((Scale, x), (TScale, tx)):
        h = t * 1
        h.add_(1.0)  # before apply: the saved value is the changed one
        lib.apply(h).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy())


def test_function_saved_output_is_differentiated_under_create_graph_like_torch():
    _, TExp = _torch_fns()
    v = [0.5, -1.0, 2.0]
    x, tx = _leaf(v), torch.tensor(v, dtype=torch.float64, requires_grad=True)
    g, = rg.autograd.grad((Exp.apply(x) * 3).sum(), x, create_graph=True)
    tg, = torch.autograd.grad((TExp.apply(tx) * 3).sum(), tx, create_graph=True)
    g2, = rg.autograd.grad((g * g).sum(), x)
    tg2, = torch.autograd.grad((tg * tg).sum(), tx)
    np.testing.assert_allclose(g.detach().numpy(), tg.detach().numpy())
    np.testing.assert_allclose(g2.numpy(), tg2.numpy())


class Ident(rg.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x

    @staticmethod
    def backward(ctx, g):
        return g


class Head(rg.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x[:2]  # a view of the input

    @staticmethod
    def backward(ctx, g):
        out = rg.zeros(3, dtype=g.dtype)
        out[:2] = g
        return out


@pytest.mark.parametrize("fn", [Ident, Head])
def test_function_output_sharing_an_input_refuses_in_place_like_torch(fn):
    class TIdent(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x if fn is Ident else x[:2]

        @staticmethod
        def backward(ctx, g):
            return g if fn is Ident else torch.cat([g, g.new_zeros(1)])

    x, tx = _leaf([1.0, 2.0, 3.0]), torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64,
                                                 requires_grad=True)
    y, ty = fn.apply(x * 1), TIdent.apply(tx * 1)
    with pytest.raises(RuntimeError, match="inplace"):
        ty.mul_(2)
    with pytest.raises(RuntimeError, match="in-place"):
        y.mul_(2)
    (y * y).sum().backward()
    (ty * ty).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy())


def test_function_output_sharing_an_input_shares_its_version():
    a = rg.tensor([1.0, 2.0, 3.0], dtype=rg.float64)
    x = _leaf([0.5, 0.5, 0.5])
    z = x * a  # mul saves a
    y = Ident.apply(a)
    y.add_(1.0)  # a changes too, as in torch
    np.testing.assert_array_equal(a.numpy(), [2.0, 3.0, 4.0])
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        z.sum().backward()


def test_function_ctx_needs_input_grad_matches_torch():
    seen = {}

    def make(lib):
        base = rg.autograd.Function if lib == "rg" else torch.autograd.Function

        class Mul(base):
            @staticmethod
            def forward(ctx, x, y, k):
                seen[lib] = tuple(ctx.needs_input_grad)
                return x * y * k

            @staticmethod
            def backward(ctx, g):
                return g, g, None
        return Mul

    make("rg").apply(_leaf([1.0]), rg.tensor([2.0], dtype=rg.float64), 3.0)
    make("torch").apply(torch.ones(1, requires_grad=True), torch.ones(1), 3.0)
    assert seen["rg"] == seen["torch"] == (True, False, False)


def test_function_mark_non_differentiable_and_materialize_grads_like_torch():
    got = {}

    def make(lib, materialize):
        base = rg.autograd.Function if lib == "rg" else torch.autograd.Function

        class SortLike(base):
            @staticmethod
            def forward(ctx, x):
                ctx.set_materialize_grads(materialize)
                idx = x > 0
                ctx.mark_non_differentiable(idx)
                return x * 2, x * 3, idx

            @staticmethod
            def backward(ctx, g2, g3, gidx):
                got[(lib, materialize)] = (g2 is None, g3 is None)
                out = 0
                if g2 is not None:
                    out = out + 2 * g2
                if g3 is not None:
                    out = out + 3 * g3
                return out
        return SortLike

    for materialize in (True, False):
        x, tx = _leaf([1.0, -2.0]), torch.tensor([1.0, -2.0], dtype=torch.float64,
                                                  requires_grad=True)
        a, _, idx = make("rg", materialize).apply(x)
        ta, _, tidx = make("torch", materialize).apply(tx)
        assert not idx.requires_grad and not tidx.requires_grad
        a.sum().backward()
        ta.sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())
        assert got[("rg", materialize)] == got[("torch", materialize)]


# ---------------------------------------------------------------- gradcheck

def test_gradcheck_passes_in_both_modes_and_methods():
    x, y = _leaf([[0.2, -0.4], [1.3, 0.7]]), _leaf([0.5, -1.5])

    def fn(a, b):
        return (a @ b).tanh() * a.sum(dim=1).exp() + (a * b).sin()

    assert rg.gradcheck(fn, [x, y])
    assert rg.gradcheck(fn, [x, y], fast=True)
    assert rg.gradcheck(fn, [x, y], method="complex_step")
    assert rg.gradcheck(fn, [x, y], method="complex_step", fast=True)
    assert rg.gradgradcheck(fn, [x, y])


WRONG_SIN = ops.Op(
    "wrong_sin", np.sin,
    # the right rule, except the element at flat index 2 gets twice the derivative
    (lambda m, g, out, x: g * m.cos(x) * (1.0 + (np.arange(x.size).reshape(x.shape) == 2)),),
)


def test_gradcheck_catches_a_wrong_rule_naming_the_input_and_element():
    a = _leaf([0.1, 0.2])
    b = _leaf([[0.3, -0.5], [0.8, 1.1]])

    def fn(p, q):
        return p.sum() * engine.apply(WRONG_SIN, q)

    with pytest.raises(GradcheckError) as e:
        rg.gradcheck(fn, [a, b])
    msg = str(e.value)
    assert "input 1" in msg and "(1, 0)" in msg
    assert rg.gradcheck(fn, [a, b], raise_exception=False) is False


def test_gradcheck_fast_mode_catches_a_wrong_rule():
    b = _leaf([[0.3, -0.5], [0.8, 1.1]])
    with pytest.raises(GradcheckError, match="input 0"):
        rg.gradcheck(lambda q: engine.apply(WRONG_SIN, q), [b], fast=True)
    with pytest.raises(GradcheckError, match="input 0"):
        rg.gradcheck(lambda q: engine.apply(WRONG_SIN, q), [b], method="complex_step")


def test_gradcheck_wants_float64():
    with pytest.raises(TypeError, match="float64"):
        rg.gradcheck(lambda t: t * 2, [rg.tensor([1.0], requires_grad=True)])


@pytest.mark.parametrize("fn", [
    lambda t: t.abs(), lambda t: t.relu(), lambda t: t.max(), lambda t: t.min(dim=0),
    lambda t: rg.maximum(t, t * 2), lambda t: t.clamp(-1.0, 1.0),
], ids=["abs", "relu", "max", "min", "maximum", "clamp"])
def test_complex_step_on_a_non_analytic_op_raises_a_clear_error(fn):
    x = _leaf([0.5, -0.25, 2.0])
    assert rg.gradcheck(fn, [x])  # fine with central differences
    with pytest.raises(TypeError, match="analytic"):
        rg.gradcheck(fn, [x], method="complex_step")


# ---------------------------------------------------------------- deep graphs, no cycles

def test_a_200k_op_chain_backwards_and_frees_without_recursion():
    """In a fresh process with a tiny recursion limit and gc off: a recursive walk would raise
    RecursionError, a recursive free would overflow the C stack, a cycle would leak.

    (A 1,000,000-op chain takes 6-20 s here to build, so the test uses 200,000.)
    """
    code = textwrap.dedent("""
        import gc, sys, weakref
        import retrograd as rg
        gc.disable()
        x = rg.tensor(1.0, dtype=rg.float64, requires_grad=True)
        y = x * 1.0
        first = weakref.ref(y.grad_fn)
        for _ in range(100_000):
            y = y + 0.5
            y = y * 1.0
        sys.setrecursionlimit(100)
        y.backward()
        assert x.grad.item() == 1.0, x.grad
        assert y.item() == 1.0 + 0.5 * 100_000
        del y
        assert first() is None, "the chain outlived its output"
        print("ok")
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip() == "ok"


def _chain(x):
    a = x * 2
    b = a.sin()
    c = b * a
    return a, b, c.sum()


@pytest.mark.parametrize("run", ["none", "backward", "create_graph_false", "autograd_grad"])
def test_intermediates_die_with_the_output_without_gc(gc_off, run):
    x = _leaf([0.5, 1.5])
    a, b, out = _chain(x)
    refs = [weakref.ref(a), weakref.ref(b), weakref.ref(a.grad_fn), weakref.ref(b.grad_fn),
            weakref.ref(out.grad_fn)]
    if run == "backward":
        out.backward()
    elif run == "create_graph_false":
        out.backward(create_graph=False)
    elif run == "autograd_grad":
        g, = rg.autograd.grad(out, x)
        del g
    del a, b
    assert all(r() is not None for r in refs)  # held by the output's graph
    del out
    assert [r() for r in refs] == [None] * len(refs)
    if run != "none" and run != "autograd_grad":
        assert x.grad is not None and x.grad.grad_fn is None


def test_graph_from_create_graph_dies_once_grad_is_cleared(gc_off):
    x = _leaf([0.5, 1.5])
    a, b, out = _chain(x)
    refs = [weakref.ref(a), weakref.ref(a.grad_fn), weakref.ref(b.grad_fn)]
    out.backward(create_graph=True)
    assert x.grad.requires_grad
    gref = weakref.ref(x.grad.grad_fn)
    del a, b, out
    x.grad = None
    assert [r() for r in refs] == [None] * len(refs) and gref() is None
