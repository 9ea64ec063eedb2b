"""rg.autograd's torch.autograd names (backward, functional, forward_ad, switches, Variable),
the extra Tensor methods and the top-level torch utilities, each against PyTorch."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import retrograd as rg
import retrograd.autograd.forward_ad as fwAD
import retrograd.autograd.functional as AF

RNG = np.random.default_rng(0)


def pair(*shape, requires_grad=False):
    a = RNG.standard_normal(shape)
    return (rg.tensor(a, requires_grad=requires_grad),
            torch.tensor(a, requires_grad=requires_grad))


def close(r, t, tol=1e-10):
    if isinstance(t, (tuple, list)):
        assert isinstance(r, tuple) and len(r) == len(t), (type(r), type(t))
        for a, b in zip(r, t):
            close(a, b, tol)
        return
    assert isinstance(r, rg.Tensor), type(r)
    assert r.shape == tuple(t.shape), (r.shape, t.shape)
    assert str(r.dtype) == str(t.dtype).replace("torch.", ""), (r.dtype, t.dtype)
    np.testing.assert_allclose(r.detach().numpy(), t.detach().numpy(), rtol=tol, atol=tol)


# ---------------------------------------------------------------- functional

def f1(x):
    return x.sin() * x


def f2(x, y):
    return (x * y).exp(), x.sum() * y


def scalar2(x, y):
    return (x.sin() * y ** 2).sum()


@pytest.mark.parametrize("strategy,vec", [("reverse-mode", False), ("reverse-mode", True),
                                          ("forward-mode", True)])
def test_jacobian_structures(strategy, vec):
    (x, tx), (y, ty) = pair(3), pair(3)
    kw = dict(strategy=strategy, vectorize=vec)
    close(AF.jacobian(f1, x, **kw), torch.autograd.functional.jacobian(f1, tx, **kw))
    close(AF.jacobian(f1, (x,), **kw), torch.autograd.functional.jacobian(f1, (tx,), **kw))
    close(AF.jacobian(f2, (x, y), **kw), torch.autograd.functional.jacobian(f2, (tx, ty), **kw))
    g = lambda x: (x.exp(), x.sum())  # noqa: E731
    close(AF.jacobian(g, x, **kw), torch.autograd.functional.jacobian(g, tx, **kw))


def test_jacobian_errors_and_unused():
    (x, tx), (y, ty) = pair(2), pair(2)
    h = lambda a, b: a * 2  # noqa: E731
    close(AF.jacobian(h, (x, y)), torch.autograd.functional.jacobian(h, (tx, ty)))
    for mod, xx, yy in ((AF, x, y), (torch.autograd.functional, tx, ty)):
        with pytest.raises(RuntimeError):
            mod.jacobian(h, (xx, yy), strict=True)
        with pytest.raises(RuntimeError):
            mod.jacobian(h, (xx, yy), strict=True, vectorize=True)
        with pytest.raises(NotImplementedError):
            mod.jacobian(f1, xx, strategy="forward-mode")
        with pytest.raises(TypeError):
            mod.jacobian(f1, [xx])
        with pytest.raises(TypeError):
            mod.jacobian(lambda a: [a], xx)
    with pytest.raises(ValueError):
        AF.jacobian(f1, x, strategy="sideways")


def test_jacobian_create_graph():
    x, tx = pair(3, requires_grad=True)
    j = AF.jacobian(f1, x, create_graph=True)
    tj = torch.autograd.functional.jacobian(f1, tx, create_graph=True)
    assert j.requires_grad and tj.requires_grad
    j.sum().backward()
    tj.sum().backward()
    close(x.grad, tx.grad)
    assert not AF.jacobian(f1, x).requires_grad


def test_hessian():
    (x, tx), (y, ty) = pair(3), pair(3)
    s = lambda x: (x.sin() * x ** 3).sum()  # noqa: E731
    close(AF.hessian(s, x), torch.autograd.functional.hessian(s, tx))
    close(AF.hessian(scalar2, (x, y)), torch.autograd.functional.hessian(scalar2, (tx, ty)))
    for mod, xx in ((AF, x), (torch.autograd.functional, tx)):
        with pytest.raises(RuntimeError):
            mod.hessian(lambda a: a * 2, xx)  # more than one element
        with pytest.raises(RuntimeError):
            mod.hessian(lambda a: (a * 2).sum(), xx, strict=True)  # linear


def test_vjp_jvp():
    (x, tx), (y, ty), (v, tv) = pair(3), pair(3), pair(3)
    close(AF.vjp(f1, x, v), torch.autograd.functional.vjp(f1, tx, tv))
    close(AF.vjp(f2, (x, y), (v, v)), torch.autograd.functional.vjp(f2, (tx, ty), (tv, tv)))
    close(AF.jvp(f1, x, v), torch.autograd.functional.jvp(f1, tx, tv))
    close(AF.jvp(f2, (x, y), (v, v)), torch.autograd.functional.jvp(f2, (tx, ty), (tv, tv)))
    s, ts = pair(1)
    close(AF.vjp(lambda a: a.exp().sum(), x), torch.autograd.functional.vjp(
        lambda a: a.exp().sum(), tx))
    close(AF.jvp(lambda a: a.exp() * 2, s), torch.autograd.functional.jvp(
        lambda a: a.exp() * 2, ts))
    for mod, xx, vv in ((AF, x, v), (torch.autograd.functional, tx, tv)):
        with pytest.raises(RuntimeError):
            mod.vjp(f1, xx)  # v needed
        with pytest.raises(RuntimeError):
            mod.jvp(f1, xx)
        with pytest.raises(RuntimeError):
            mod.vjp(f1, xx, vv[:2])
        with pytest.raises(RuntimeError):
            mod.vjp(lambda a, b: a * 2, (xx, vv), vv, strict=True)


def test_hvp_vhp():
    (x, tx), (y, ty), (v, tv), (w, tw) = pair(3), pair(3), pair(3), pair(3)
    for name in ("hvp", "vhp"):
        ours, theirs = getattr(AF, name), getattr(torch.autograd.functional, name)
        s = lambda a: (a.sin() * a ** 2).sum()  # noqa: E731
        close(ours(s, x, v), theirs(s, tx, tv))
        close(ours(scalar2, (x, y), (v, w)), theirs(scalar2, (tx, ty), (tv, tw)))
        for mod, xx, vv in ((ours, x, v), (theirs, tx, tv)):
            with pytest.raises(RuntimeError):
                mod(lambda a: a * 2, xx, vv)
            with pytest.raises(RuntimeError):
                mod(s, xx)


# ---------------------------------------------------------------- forward_ad

def chain(x, y):
    return ((x * y).sin() + x.exp() / (1 + y ** 2)).tanh().sum(-1) * x.mean()


def test_forward_ad_chain_vs_torch_func_jvp():
    (x, tx), (y, ty), (t, tt), (u, tu) = pair(2, 3), pair(2, 3), pair(2, 3), pair(2, 3)
    with fwAD.dual_level() as level:
        assert level == 0
        dx, dy = fwAD.make_dual(x, t), fwAD.make_dual(y, u)
        out = chain(dx, dy)
        p, tan = fwAD.unpack_dual(out)
        assert isinstance(fwAD.unpack_dual(out), tuple)
        assert fwAD.unpack_dual(p).tangent is None
        assert fwAD.unpack_dual(x).tangent is None  # the primal given is untouched
    ref_p, ref_t = torch.func.jvp(chain, (tx, ty), (tt, tu))
    close(p, ref_p)
    close(tan, ref_t)
    assert fwAD.unpack_dual(out).tangent is None  # tangents go with the level
    tfw = torch.autograd.forward_ad
    with tfw.dual_level():
        tp, ttan = tfw.unpack_dual(chain(tfw.make_dual(tx, tt), tfw.make_dual(ty, tu)))
    close(p, tp)
    close(tan, ttan)


def test_forward_ad_levels_and_errors():
    x, tx = pair(3)
    for mod, xx in ((fwAD, x), (torch.autograd.forward_ad, tx)):
        with pytest.raises(RuntimeError):
            mod.make_dual(xx, xx)  # outside a level
        lv = mod.enter_dual_level()
        assert lv == 0
        with pytest.raises(RuntimeError):
            mod.make_dual(xx, xx[:2])
        d = mod.make_dual(xx, xx * 0 + 1)
        close(fwAD.unpack_dual(d).tangent, torch.ones(3, dtype=torch.float64)) if mod is fwAD \
            else None
        mod.exit_dual_level(level=lv)


def test_forward_ad_reverse_through_primal():
    x, tx = pair(3, requires_grad=True)
    with fwAD.dual_level():
        d = fwAD.make_dual(x, rg.ones(3, dtype=rg.float64))
        fwAD.unpack_dual(d.sin()).primal.sum().backward()
    with torch.autograd.forward_ad.dual_level():
        d = torch.autograd.forward_ad.make_dual(tx, torch.ones(3, dtype=torch.float64))
        torch.autograd.forward_ad.unpack_dual(d.sin()).primal.sum().backward()
    close(x.grad, tx.grad)


# ---------------------------------------------------------------- backward and switches

def test_backward_several_roots_and_inputs():
    (x, tx), (y, ty) = pair(3, requires_grad=True), pair(3, requires_grad=True)
    (g, tg) = pair(3)
    rg.autograd.backward([x.sin() * y, (x * y).sum()], [g, None])
    torch.autograd.backward([tx.sin() * ty, (tx * ty).sum()], [tg, None])
    close(x.grad, tx.grad)
    close(y.grad, ty.grad)
    x.grad = y.grad = None
    tx.grad = ty.grad = None
    rg.autograd.backward((x * y).sum(), inputs=[y])
    torch.autograd.backward((tx * ty).sum(), inputs=[ty])
    assert x.grad is None and tx.grad is None
    close(y.grad, ty.grad)
    for mod, xx in ((rg.autograd, x), (torch.autograd, tx)):
        with pytest.raises(RuntimeError):
            mod.backward(xx * 2)  # not a scalar, no grad_tensors
        with pytest.raises(RuntimeError):
            mod.backward((xx * 2).sum(), inputs=[])
        with pytest.raises(RuntimeError):
            mod.backward(xx.detach().sum())


def test_backward_create_graph():
    x, tx = pair(3, requires_grad=True)
    rg.autograd.backward((x ** 3).sum(), create_graph=True)
    torch.autograd.backward((tx ** 3).sum(), create_graph=True)
    gx, tgx = x.grad, tx.grad
    x.grad, tx.grad = None, None
    gx.sum().backward()
    tgx.sum().backward()
    close(x.grad, tx.grad)


def test_switches_and_aliases():
    x, tx = pair(3, requires_grad=True)
    with rg.autograd.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    with rg.autograd.inference_mode():
        assert not (x * 2).requires_grad
    with rg.autograd.no_grad():
        assert not (x * 2).requires_grad
        with rg.autograd.enable_grad():
            assert (x * 2).requires_grad
    assert rg.autograd.grad_mode.no_grad is rg.no_grad
    assert rg.autograd.gradcheck is rg.gradcheck and rg.autograd.gradgradcheck is rg.gradgradcheck
    assert rg.autograd.gradcheck(lambda a: a.sin(), (x,))
    with rg.autograd.set_detect_anomaly(True):
        assert rg.is_anomaly_enabled()
        bad = (x * 0).sqrt() * 0 + (x - x).log()
        with pytest.raises(RuntimeError):
            bad.sum().backward()
    assert not rg.is_anomaly_enabled()
    with rg.autograd.graph.save_on_cpu():
        (x ** 2).sum().backward()
    with torch.autograd.graph.save_on_cpu():
        (tx ** 2).sum().backward()
    close(x.grad, tx.grad)


def test_variable():
    x, tx = pair(3)
    v, tv = rg.autograd.Variable(x, requires_grad=True), torch.autograd.Variable(tx,
                                                                                 requires_grad=True)
    assert isinstance(v, rg.Tensor) and isinstance(tv, torch.Tensor)
    assert v.requires_grad and tv.requires_grad and v.grad_fn is None
    assert isinstance(x, rg.autograd.Variable) and isinstance(tx, torch.autograd.Variable)
    v.data[0] = 5.0
    assert x.data[0] == 5.0


# ---------------------------------------------------------------- Tensor methods

@pytest.mark.parametrize("name,args", [("squeeze_", ()), ("squeeze_", (1,)), ("unsqueeze_", (0,)),
                                       ("t_", ()), ("transpose_", (0, 1)),
                                       ("swapaxes_", (1, 0)), ("swapdims_", (0, 1))])
def test_inplace_shape_changes(name, args):
    x, tx = pair(3, 1, requires_grad=True)
    w, tw = pair(3, 1)
    y, ty = x * 2, tx * 2
    assert getattr(y, name)(*args) is y and getattr(ty, name)(*args) is ty
    close(y, ty)
    (y * w.reshape(y.shape)).sum().backward()
    (ty * tw.reshape(ty.shape)).sum().backward()
    close(x.grad, tx.grad)
    for xx in (x, tx):
        with pytest.raises(RuntimeError):
            getattr(xx, name)(*args)  # a leaf that requires grad
    for xx in (x, tx):
        z = xx.exp()
        getattr(z, name)(*args)
        with pytest.raises(RuntimeError):
            z.sum().backward()  # exp saved its output, which was changed in place


def test_resize_and_strided():
    for mod in (rg, torch):
        z = mod.arange(6.0)
        assert z.resize_(2, 2) is z
        assert z.shape == (2, 2) and z.tolist() == [[0.0, 1.0], [2.0, 3.0]]
        z.resize_as_(mod.zeros(1, 3))
        assert z.tolist() == [[0.0, 1.0, 2.0]]
        with pytest.raises(RuntimeError):
            mod.ones(2, requires_grad=True).resize_(3)
    x, tx = pair(2, 3, requires_grad=True)
    close(x.as_strided((2, 2), (1, 2), 1), tx.as_strided((2, 2), (1, 2), 1))
    (x.as_strided((3, 2), (1, 1)) ** 2).sum().backward()
    (tx.as_strided((3, 2), (1, 1)) ** 2).sum().backward()
    close(x.grad, tx.grad)
    for xx in (x, tx):
        with pytest.raises(RuntimeError):
            xx.as_strided((3, 3), (3, 1))
    t = torch.zeros(2, 3, dtype=torch.float64).new_empty_strided((2, 4), (4, 1))
    r = rg.zeros(2, 3, dtype=rg.float64).new_empty_strided((2, 4), (4, 1))
    assert r.shape == tuple(t.shape) and str(r.dtype) == "float64"


def test_unsafe_splits_absolute_and_flags():
    x, tx = pair(5, 2)
    close(x.unsafe_chunk(2), tx.unsafe_chunk(2))
    close(x.unsafe_split(2), tx.unsafe_split(2))
    close(x.unsafe_split_with_sizes([1, 4]), tx.unsafe_split_with_sizes([1, 4]))
    close(x.absolute(), tx.absolute())
    close(x.clone().absolute_(), tx.clone().absolute_())
    for name in ("is_inference", "is_conj", "is_neg", "is_shared", "is_pinned"):
        assert getattr(x, name)() == getattr(tx, name)() is False
    assert x.resolve_neg() is x and x.share_memory_() is x and x.pin_memory() is x


def test_apply_and_map():
    x, tx = pair(2, 3)
    x.apply_(lambda v: v * 2 + 1)
    tx.apply_(lambda v: v * 2 + 1)
    close(x, tx)
    y, ty = pair(3)
    x.map_(y, lambda a, b: a - b * b)
    tx.map_(ty, lambda a, b: a - b * b)
    close(x, tx)
    for xx in (rg.ones(2, requires_grad=True), torch.ones(2, requires_grad=True)):
        with pytest.raises(RuntimeError):
            xx.apply_(lambda v: v)


def test_post_accumulate_grad_hook():
    seen = {"rg": [], "torch": []}
    x, tx = pair(3, requires_grad=True)
    hx = x.register_post_accumulate_grad_hook(lambda t: seen["rg"].append(t.grad.clone()))
    tx.register_post_accumulate_grad_hook(lambda t: seen["torch"].append(t.grad.clone()))
    for _ in range(2):
        (x.sin() * x).sum().backward()
        (tx.sin() * tx).sum().backward()
    assert len(seen["rg"]) == len(seen["torch"]) == 2
    for a, b in zip(seen["rg"], seen["torch"]):
        close(a, b)
    rg.autograd.grad((x * 2).sum(), x)
    assert len(seen["rg"]) == 2  # not for autograd.grad
    rg.autograd.backward((x * 3).sum(), inputs=[x])
    torch.autograd.backward((tx * 3).sum(), inputs=[tx])
    assert len(seen["rg"]) == len(seen["torch"]) == 3
    close(seen["rg"][-1], seen["torch"][-1])
    hx.remove()
    (x * 2).sum().backward()
    assert len(seen["rg"]) == 3
    for xx in (x * 2, tx * 2):
        with pytest.raises(RuntimeError):
            xx.register_post_accumulate_grad_hook(lambda t: None)


# ---------------------------------------------------------------- top-level names

def test_vmap_compile_and_settings():
    x, tx = pair(4, 3)
    close(rg.vmap(lambda r: r.sum())(x), torch.vmap(lambda r: r.sum())(tx))

    def f(a):
        return a * 2
    assert rg.compile(f) is f and rg.compile()(f) is f
    assert str(rg.get_default_device()) == str(torch.get_default_device()) == "cpu"
    rg.set_default_device("cpu")
    with pytest.raises(RuntimeError):
        rg.set_default_device("cuda:0")
    rg.use_deterministic_algorithms(True)
    assert rg.are_deterministic_algorithms_enabled()
    rg.use_deterministic_algorithms(False)
    assert not rg.are_deterministic_algorithms_enabled()
    assert rg.get_float32_matmul_precision() == torch.get_float32_matmul_precision()
    rg.set_float32_matmul_precision("high")
    assert rg.get_float32_matmul_precision() == "high"
    rg.set_float32_matmul_precision("highest")
    with pytest.raises(ValueError):
        rg.set_float32_matmul_precision("fastest")
    assert not rg.is_anomaly_enabled()
    rg.set_anomaly_enabled(True)
    assert rg.is_anomaly_enabled()
    rg.set_anomaly_enabled(False)


def test_printoptions():
    x = rg.tensor([1.123456789, 2.5], dtype=rg.float64)
    try:
        rg.set_printoptions(precision=2)
        assert "1.12," in repr(x) and "1.123" not in repr(x)
        rg.set_printoptions(threshold=5, edgeitems=2)
        assert "..." in repr(rg.arange(10.0))
        rg.set_printoptions(sci_mode=True)
        assert "e+00" in repr(x)
    finally:
        rg.set_printoptions(profile="default")
    assert "1.1235" in repr(x) and "..." not in repr(rg.arange(10.0))
    with pytest.raises(ValueError):
        rg.set_printoptions(profile="huge")


def test_unravel_index():
    for idx in ([4, 0, 5, -1], [[1, 2], [3, 4]], 4):
        r = rg.unravel_index(rg.tensor(idx), (2, 3))
        t = torch.unravel_index(torch.tensor(idx), (2, 3))
        assert len(r) == len(t)
        for a, b in zip(r, t):
            assert a.tolist() == b.tolist() and str(a.dtype) == "int64"
    for mod in (rg, torch):
        with pytest.raises(TypeError):
            mod.unravel_index(mod.tensor([1.0]), (2, 3))


@pytest.mark.parametrize("edge_order", [1, 2])
def test_gradient(edge_order):
    x, tx = pair(4, 5, requires_grad=True)
    for kw in ({}, {"spacing": 0.5}, {"dim": 1}, {"spacing": [2.0], "dim": 0},
               {"spacing": (2.0, 3.0)}):
        r = rg.gradient(x, edge_order=edge_order, **kw)
        t = torch.gradient(tx, edge_order=edge_order, **kw)
        close(r, t)
    c = [0.0, 0.5, 1.5, 3.0]
    r = rg.gradient(x, spacing=[rg.tensor(c, dtype=rg.float64)], dim=0, edge_order=edge_order)
    t = torch.gradient(tx, spacing=[torch.tensor(c, dtype=torch.float64)], dim=0,
                       edge_order=edge_order)
    close(r, t)
    sum(g.sin().sum() for g in r).backward()
    sum(g.sin().sum() for g in t).backward()
    close(x.grad, tx.grad)
    assert rg.gradcheck(lambda a: rg.gradient(a, edge_order=edge_order), (x,))
    close(rg.gradient(rg.tensor([1, 4, 9, 16])), torch.gradient(torch.tensor([1, 4, 9, 16])))
    for mod, xx in ((rg, x), (torch, tx)):
        with pytest.raises(RuntimeError):
            mod.gradient(xx[:2], dim=0, edge_order=2)
        with pytest.raises(IndexError):
            mod.gradient(xx, dim=2)


@pytest.mark.parametrize("name", ["hann_window", "hamming_window", "blackman_window",
                                  "bartlett_window", "kaiser_window"])
def test_windows(name):
    for n in (0, 1, 2, 7):
        for periodic in (True, False):
            for dtype in (None, "float64"):
                kw = {} if dtype is None else {"dtype": getattr(torch, dtype)}
                t = getattr(torch, name)(n, periodic, **kw)
                r = getattr(rg, name)(n, periodic, **({} if dtype is None else
                                                       {"dtype": getattr(rg, dtype)}))
                close(r, t, 1e-6)
    close(rg.kaiser_window(6, False, 3.0, dtype=rg.float64),
          torch.kaiser_window(6, False, 3.0, dtype=torch.float64))
    for mod in (rg, torch):
        with pytest.raises(RuntimeError):
            getattr(mod, name)(4, dtype=mod.int64)


def test_creation_utilities():
    r = rg.empty_strided((2, 3), (3, 1), dtype=rg.float64)
    t = torch.empty_strided((2, 3), (3, 1), dtype=torch.float64)
    assert r.shape == tuple(t.shape) and str(r.dtype) == "float64"
    for mod in (rg, torch):
        with pytest.raises(RuntimeError):
            mod.empty_strided((2, 3), (1,))
    buf = bytearray(np.arange(6, dtype=np.int32).tobytes())
    r = rg.frombuffer(buf, dtype=rg.int32, count=3, offset=4)
    t = torch.frombuffer(bytearray(buf), dtype=torch.int32, count=3, offset=4)
    assert r.tolist() == t.tolist() == [1, 2, 3] and str(r.dtype) == "int32"
    r[0] = 9
    assert np.frombuffer(buf, dtype=np.int32)[1] == 9  # shares the buffer, as torch
    for mod in (rg, torch):
        with pytest.raises(ValueError):
            mod.frombuffer(bytearray(8), dtype=mod.int32, count=5)
    x, tx = pair(2, 2)
    v, tv = rg.tensor(3.0, dtype=rg.float64, requires_grad=True), torch.tensor(
        3.0, dtype=torch.float64, requires_grad=True)
    close(rg.fill(x, 2.5), torch.fill(tx, 2.5))
    (rg.fill(x, v) * x).sum().backward()
    (torch.fill(tx, tv) * tx).sum().backward()
    close(v.grad, tv.grad)
    with pytest.warns(UserWarning):
        r = rg.range(1, 2, 0.25)
    with pytest.warns(UserWarning):
        t = torch.range(1, 2, 0.25)
    close(r, t)
    with pytest.warns(UserWarning):
        close(rg.range(0, 5, dtype=rg.int64), torch.range(0, 5, dtype=torch.int64))


def test_predicates():
    for dt in ("float32", "int64", "uint8", "bool", "int8"):
        r = rg.zeros(2, dtype=getattr(rg, dt if dt != "bool" else "bool_"))
        t = torch.zeros(2, dtype=getattr(torch, dt))
        assert rg.is_signed(r) == torch.is_signed(t)
        assert rg.is_conj(r) == torch.is_conj(t)
    assert rg.typename(rg.zeros(2)) == torch.typename(torch.zeros(2))
    assert rg.typename(rg.zeros(2, dtype=rg.int64)) == torch.typename(torch.zeros(2).long())
    assert rg.typename(3) == torch.typename(3)
    assert rg.is_storage(rg.zeros(2)) is torch.is_storage(torch.zeros(2)) is False
    assert rg.get_device(rg.zeros(2)) == torch.get_device(torch.zeros(2)) == -1
