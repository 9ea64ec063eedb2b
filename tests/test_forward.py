"""Forward mode: every op's jvp rule, batching, nesting, custom Functions.

The per-op tests are generated from the op table: each op's samples in
`op_samples.SAMPLES`, its PyTorch twin in `test_ops.TORCH`. Every jvp is checked
against central differences (float64) and against `torch.func.jvp`, unbatched and
with a batch of tangents, on the NumPy fast path and on the recorded Tensor path;
forward-over-reverse and reverse-over-forward second derivatives must agree.
"""

import gc
import weakref

import numpy as np
import pytest
import torch

import retrograd as rg
import retrograd.func as F
from retrograd import forward, ops
from retrograd.api import max_pool2d
from retrograd.cli.check import cases
from retrograd.engine import apply
from retrograd.ops.samples import SAMPLES


def _torch_twins():
    """The PyTorch twin of every op, shared with test_ops.py (one table, not two)."""
    try:
        from test_ops import TORCH
    except ImportError:  # pytest's importlib mode does not put tests/ on sys.path
        import importlib.util
        from pathlib import Path

        spec = importlib.util.spec_from_file_location(
            "_test_ops_twins", Path(__file__).with_name("test_ops.py"))
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        TORCH = mod.TORCH
    return TORCH


TORCH = _torch_twins()
EPS = 1e-6


def _is_diff(x):
    return isinstance(x, rg.Tensor) and x.dtype == np.float64


def _fresh_inputs(inputs, requires_grad=False):
    """Copies of the sample inputs, float64 ones requiring grad only if asked."""
    out = []
    for x in inputs:
        if _is_diff(x):
            out.append(rg.Tensor(x.data.copy(), requires_grad=requires_grad))
        else:
            out.append(x)
    return out


def _tangents(inputs, rng, batch=()):
    return [rng.standard_normal(batch + x.shape) if _is_diff(x) else None for x in inputs]


def _push(op, inputs, attrs, tangents, batch=()):
    """The op's output tangent at a fresh level (None: no tangent)."""
    with forward.level(batch) as lv:
        duals = [forward.make_dual(x, rg.Tensor(t), lv) if t is not None else x
                 for x, t in zip(inputs, tangents)]
        out = apply(op, *duals, **attrs)
        t = forward.tangent_of(out, lv)
    return out, t


def _central(op, inputs, attrs, tangents):
    def at(s):
        xs = [rg.Tensor(x.data + s * EPS * t) if t is not None else x
              for x, t in zip(inputs, tangents)]
        with rg.no_grad():
            return apply(op, *xs, **attrs).data
    return (at(1.0) - at(-1.0)) / (2 * EPS)


def _torch_jvp(name, inputs, attrs, tangents):
    diff = [k for k, t in enumerate(tangents) if t is not None]
    t_attrs = dict(attrs, dtype=np.float64) if name == "cast" else attrs
    fixed = [torch.tensor(x.data) if isinstance(x, rg.Tensor) else x for x in inputs]

    def fn(*ds):
        args = list(fixed)
        for k, d in zip(diff, ds):
            args[k] = d
        return TORCH[name](*args, **t_attrs)

    primals = tuple(fixed[k] for k in diff)
    tans = tuple(torch.tensor(tangents[k]) for k in diff)
    return torch.func.jvp(fn, primals, tans)[1].numpy()


JVP_OPS = sorted(n for n in SAMPLES if ops.OPS[n].jvps is not None)
# PyTorch's derivative is an approximation (see test_ops.APPROXIMATE_GRADS): looser there;
# atol too, as the tangents of alpha and alpha0 cancel (each error is relative to its own).
APPROXIMATE_GRADS = {"standard_gamma_reparam": dict(rtol=2e-3, atol=2e-4)}
# torch's own second derivative is approximate here: its binary_cross_entropy double
# backward divides by (x + 1e-12)^2 (1 - x + 1e-12)^2, an error that cancellation in
# the sum of its terms amplifies to ~1e-9 (ours is checked exactly two ways above)
TORCH_SECOND_ORDER = {"binary_cross_entropy": dict(rtol=1e-7, atol=1e-9)}
# Ops whose second derivative is refused (as PyTorch refuses it): both compositions raise.
NO_SECOND_ORDER = {"standard_gamma_reparam": "standard_gamma_grad", "ctc_loglik": "ctc_posterior"}


def test_every_differentiable_op_has_a_jvp_rule_beside_its_vjp():
    for name, op in ops.OPS.items():
        if op.vjps is None:
            continue
        assert op.jvps is not None, f"op '{name}' has vjp rules but no jvp rules"
        assert len(op.jvps) == len(op.vjps), name
        for i, (v, j) in enumerate(zip(op.vjps, op.jvps)):
            assert (v is None) == (j is None), f"op '{name}' input {i}: vjp and jvp disagree"
    missing = [n for n, op in ops.OPS.items() if op.vjps is not None and n not in SAMPLES
               and any(r is not None for r in op.vjps)]
    assert not missing, f"ops without samples (add them to op_samples.py): {missing}"


@pytest.mark.parametrize("name", JVP_OPS)
def test_jvp_matches_central_differences_and_torch(name):
    op = ops.OPS[name]
    rng = np.random.default_rng(10)
    n = 0
    for inputs, attrs in cases(name, seed=10):
        xs = _fresh_inputs(inputs)
        ts = _tangents(xs, rng)
        out, t = _push(op, xs, attrs, ts)
        assert t is not None and t.shape == out.shape and t.dtype == out.dtype
        num = _central(op, xs, attrs, ts)
        np.testing.assert_allclose(t.data, num, rtol=1e-5, atol=1e-6,
                                   err_msg=f"{name} {attrs} vs central differences")
        ref = _torch_jvp(name, xs, attrs, ts)
        np.testing.assert_allclose(t.data, ref, **APPROXIMATE_GRADS.get(
            name, dict(rtol=1e-10, atol=1e-12)), err_msg=f"{name} {attrs} vs torch.func.jvp")
        # the recorded (Tensor) path gives the same numbers as the NumPy fast path
        _, t2 = _push(op, _fresh_inputs(inputs, requires_grad=True), attrs, ts)
        np.testing.assert_allclose(t2.data, t.data, rtol=1e-12, atol=1e-14)
        n += 1
    assert n > 0


@pytest.mark.parametrize("recorded", [False, True], ids=["numpy", "tensor"])
@pytest.mark.parametrize("name", JVP_OPS)
def test_batched_jvp_equals_one_jvp_per_tangent(name, recorded):
    op = ops.OPS[name]
    rng = np.random.default_rng(11)
    for inputs, attrs in list(cases(name, seed=11)) + EXTRA.get(name, []):
        xs = _fresh_inputs(inputs, requires_grad=recorded)
        ts = _tangents(xs, rng, batch=(3,))
        _, tb = _push(op, xs, attrs, ts, batch=(3,))
        for b in range(3):
            _, t1 = _push(op, xs, attrs, [t[b] if t is not None else None for t in ts])
            np.testing.assert_allclose(tb.data[b], t1.data, rtol=1e-12, atol=1e-14,
                                       err_msg=f"{name} {attrs} batch element {b}")


def _extra_cases():
    rng = np.random.default_rng(12)
    x3 = rng.standard_normal((3, 4, 5))
    T = rg.Tensor
    return {  # shapes and indices the batched rules must treat specially
        "getitem": [([T(x3)], {"idx": (np.array([0, 2]), slice(None), np.array([1, 3]))}),
                    ([T(x3)], {"idx": (Ellipsis, np.array([0, 4]))}),
                    ([T(x3)], {"idx": (1, slice(None), np.array([0, 0, 2]))}),
                    ([T(x3)], {"idx": (None, x3[:, :, 0] > 0)})],
        "setitem": [([T(x3), T(rng.standard_normal((2, 4)))],
                     {"idx": (np.array([0, 2]), slice(None), np.array([1, 3]))}),
                    ([T(x3), T(rng.standard_normal((5,)))], {"idx": (0, 1)}),
                    ([T(x3), T(rng.standard_normal(()))], {"idx": x3 > 0})],
        "scatter": [([T(rng.standard_normal((2, 4)))],
                     {"idx": (np.array([0, 2]), slice(None), np.array([1, 1])),
                      "shape": (3, 4, 5)})],
        "matmul": [([T(rng.standard_normal((2, 1, 3, 4))), T(rng.standard_normal((5, 4, 2)))],
                    {}),
                   ([T(rng.standard_normal((4,))), T(rng.standard_normal((3, 2, 4, 5)))], {})],
        "einsum": [([T(rng.standard_normal((2, 3, 4))), T(rng.standard_normal((4,)))],
                    {"spec": "...j,j->..."}),
                   ([T(rng.standard_normal((3, 3)))], {"spec": "ii->"})],
        "expand": [([T(rng.standard_normal((4,)))], {"shape": (2, 3, 4)})],
        "linear": [([T(rng.standard_normal((2, 3, 4))), T(rng.standard_normal((5, 4))),
                     T(rng.standard_normal((5,)))], {})],
        "where": [([rng.random((2, 3, 4)) > 0.5, T(rng.standard_normal((4,))),
                    T(rng.standard_normal((3, 1)))], {})],
    }


EXTRA = {k: [([rg.Tensor(x.data) if isinstance(x, rg.Tensor) else (
    rg.Tensor(x) if isinstance(x, np.ndarray) else x) for x in xs], a) for xs, a in v]
    for k, v in _extra_cases().items()}


def _float_positions(inputs):
    return [k for k, x in enumerate(inputs) if _is_diff(x)]


@pytest.mark.parametrize("name", JVP_OPS)
def test_forward_over_reverse_equals_reverse_over_forward(name):
    """H u two ways for g(x) = sum(w * op(x)), and against torch.func."""
    op = ops.OPS[name]
    rng = np.random.default_rng(13)
    for inputs, attrs in cases(name, seed=13):
        xs = _fresh_inputs(inputs)
        pos = _float_positions(xs)
        w = rng.standard_normal(apply(op, *xs, **attrs).shape)
        us = tuple(rg.Tensor(rng.standard_normal(xs[k].shape)) for k in pos)

        def g(*d, xs=xs, pos=pos, w=w, attrs=attrs):
            args = list(xs)
            for k, v in zip(pos, d):
                args[k] = v
            return rg.real((apply(op, *args, **attrs) * rg.Tensor(w)).sum())  # complex: Re

        prim = tuple(xs[k] for k in pos)
        argn = tuple(range(len(pos)))
        if name in NO_SECOND_ORDER:
            with pytest.raises(RuntimeError, match=NO_SECOND_ORDER[name]):
                F.jvp(F.grad(g, argnums=argn), prim, us)
            with pytest.raises(RuntimeError, match=NO_SECOND_ORDER[name]):
                F.grad(lambda *d, g=g, us=us: F.jvp(g, d, us)[1], argnums=argn)(*prim)
            continue
        fwd_rev = F.jvp(F.grad(g, argnums=argn), prim, us)[1]
        rev_fwd = F.grad(lambda *d, g=g, us=us: F.jvp(g, d, us)[1], argnums=argn)(*prim)
        for a, b in zip(fwd_rev, rev_fwd):
            np.testing.assert_allclose(a.data, b.data, rtol=1e-9, atol=1e-11, err_msg=name)
        if not op.smooth:
            continue
        t_attrs = dict(attrs, dtype=np.float64) if name == "cast" else attrs
        fixed = [torch.tensor(x.data) if isinstance(x, rg.Tensor) else x for x in xs]

        def tg(*d, fixed=fixed, pos=pos, w=w, t_attrs=t_attrs):
            args = list(fixed)
            for k, v in zip(pos, d):
                args[k] = v
            return torch.real((TORCH[name](*args, **t_attrs) * torch.tensor(w)).sum())

        ref = torch.func.jvp(torch.func.grad(tg, argnums=argn),
                             tuple(fixed[k] for k in pos),
                             tuple(torch.tensor(u.data) for u in us))[1]
        for a, r in zip(fwd_rev, ref):
            np.testing.assert_allclose(a.data, r.numpy(), err_msg=name, **TORCH_SECOND_ORDER.get(
                name, dict(rtol=1e-9, atol=1e-11)))


# ---------------------------------------------------------------- nesting

def _derivative(f, x):
    return F.jvp(f, (x,), (1.0,))[1]


def test_jvp_of_jvp_gives_higher_derivatives_of_ops_that_read_their_output():
    x = rg.tensor(0.7, dtype=rg.float64)
    d2 = _derivative(lambda a: _derivative(rg.exp, a), x)
    assert np.isclose(d2.item(), np.exp(0.7))
    d3 = _derivative(lambda a: _derivative(lambda b: _derivative(rg.tanh, b), a), x)
    t = np.tanh(0.7)
    assert np.isclose(d3.item(), -2 * (1 - t * t) * (1 - 3 * t * t))
    d2 = _derivative(lambda a: _derivative(rg.sqrt, a), x)
    assert np.isclose(d2.item(), -0.25 * 0.7 ** -1.5)


def test_forward_perturbations_stay_apart():
    # jvp(lambda x: x * d/dy (x + y)) = 1, not 2
    out, t = F.jvp(lambda x: x * _derivative(lambda y: x + y, x), (5.0,), (1.0,))
    assert t.item() == 1.0 and out.item() == 5.0
    # Autodidax: f(x) = x * derivative(lambda y: x, 0.0) has derivative 0
    assert _derivative(lambda x: x * _derivative(lambda y: x, 0.0), 3.0).item() == 0.0


def test_reverse_over_forward_and_forward_over_reverse():
    x = rg.tensor([0.3, -1.2, 2.0], dtype=rg.float64)
    v = rg.tensor([1.0, 0.5, -2.0], dtype=rg.float64)

    def f(a):
        return (rg.sin(a) * rg.exp(a)).sum()

    hv1 = F.grad(lambda a: F.jvp(f, (a,), (v,))[1])(x)
    hv2 = F.jvp(F.grad(f), (x,), (v,))[1]
    d2 = 2 * np.cos(x.data) * np.exp(x.data)  # (sin e^x)'' = 2 cos(x) e^x
    np.testing.assert_allclose(hv1.data, d2 * v.data, rtol=1e-12)
    np.testing.assert_allclose(hv2.data, d2 * v.data, rtol=1e-12)


def test_gradient_flows_into_the_tangent_itself():
    x = rg.tensor([1.0, 2.0], dtype=rg.float64)
    v = rg.tensor([3.0, -1.0], dtype=rg.float64, requires_grad=True)
    _, t = F.jvp(lambda a: (a * a).sum(), (x,), (v,))
    t.backward()
    np.testing.assert_allclose(v.grad.data, 2 * x.data)


def test_forward_mode_works_under_no_grad_and_records_nothing():
    x = rg.tensor([1.0, 2.0], dtype=rg.float64, requires_grad=True)
    with rg.no_grad():
        out, t = F.jvp(rg.exp, (x,), (rg.ones(2, dtype=rg.float64),))
    np.testing.assert_allclose(t.data, np.exp([1.0, 2.0]))
    assert not out.requires_grad and not t.requires_grad


def test_tangents_are_removed_when_the_level_ends_and_leave_no_cycles():
    x = rg.tensor([0.5, 1.5], dtype=rg.float64, requires_grad=True)
    kept = []

    def f(a):
        y = rg.exp(a) * a
        kept.append(weakref.ref(y))
        return y.sum()

    gc.disable()
    try:
        g = F.grad(lambda a: F.jvp(f, (a,), (rg.ones_like(a),))[1])(x)
        out, t = F.jvp(f, (x,), (rg.ones_like(x),))
        assert out._fw is None and t._fw is None
        del out, t
        assert all(r() is None for r in kept), "intermediates kept alive by a cycle"
    finally:
        gc.enable()
    np.testing.assert_allclose(g.data, np.exp(x.data) * (x.data + 2))
    assert x._fw is None


def test_one_tangent_computation_per_op_whatever_the_size(monkeypatch):
    calls = []
    real = forward._tangent

    def counting(*args):
        calls.append(args[0].name)
        return real(*args)

    monkeypatch.setattr(forward, "_tangent", counting)

    def f(a):
        return rg.tanh(a * 2.0 + 1.0).exp()

    counts = []
    for n in (10, 1000):
        calls.clear()
        x = rg.zeros(n, dtype=rg.float64)
        F.jvp(f, (x,), (rg.ones(n, dtype=rg.float64),))
        counts.append(len(calls))
    assert counts[0] == counts[1] == 4  # mul, add, tanh, exp


def test_non_float_outputs_get_no_tangent():
    def f(a):
        m = a > 0.0
        i = rg.argmax(a)
        assert m._fw is None and i._fw is None
        return rg.where(m, a, -a)

    _, t = F.jvp(f, (rg.tensor([1.0, -2.0]),), (rg.tensor([1.0, 1.0]),))
    np.testing.assert_allclose(t.data, [1.0, -1.0])


def test_in_place_ops_with_tangents_match_torch():
    """In-place writes of or into tensors that carry tangents (not views of others): the
    tangent follows the write, as torch.func.jvp (they used to be refused)."""
    def f(m, a):
        b = a * 1.0
        b.mul_(2.0)
        return b

    def g(m, a):
        z = m.zeros(2, dtype=a.dtype)
        z[0] = a[0]
        return z

    for fn in (f, g):
        want = torch.func.jvp(lambda a, fn=fn: fn(torch, a), (torch.tensor([1.0, 2.0]),),
                              (torch.tensor([1.0, 3.0]),))
        got = F.jvp(lambda a, fn=fn: fn(rg, a), (rg.tensor([1.0, 2.0]),), (rg.tensor([1.0, 3.0]),))
        for a, b in zip(got, want):
            np.testing.assert_allclose(a.data, b.numpy())

    def v(m, a):  # a write into a view of a tensor with tangents: through its root
        b = a * 1.0
        b[:1].mul_(2.0)
        return b

    want = torch.func.jvp(lambda a: v(torch, a), (torch.tensor([1.0, 2.0]),),
                          (torch.tensor([1.0, 1.0]),))
    got = F.jvp(lambda a: v(rg, a), (rg.tensor([1.0, 2.0]),), (rg.tensor([1.0, 1.0]),))
    for a, b in zip(got, want):
        np.testing.assert_allclose(a.data, b.numpy())
    # a write into a view of a primal itself (torch.func.jvp lets f mutate its inputs)
    want = torch.func.jvp(lambda a: (a[:1].mul_(2.0), a * 1), (torch.tensor([1.0, 2.0]),),
                          (torch.tensor([1.0, 1.0]),))
    got = F.jvp(lambda a: (a[:1].mul_(2.0), a * 1), (rg.tensor([1.0, 2.0]),),
                (rg.tensor([1.0, 1.0]),))
    for a, b in zip(got, want):
        for x, y in zip(a, b):
            np.testing.assert_allclose(x.data, y.numpy())

    def h(a):  # in place on tensors without tangents is fine
        z = rg.zeros(2)
        z[0] = 3.0
        return a * z

    _, t = F.jvp(h, (rg.tensor([1.0, 2.0]),), (rg.tensor([1.0, 1.0]),))
    np.testing.assert_allclose(t.data, [3.0, 0.0])


def test_clone_keeps_the_tangent():
    _, t = F.jvp(lambda a: a.clone() * 3.0, (rg.tensor([1.0, 2.0]),), (rg.tensor([1.0, 0.5]),))
    np.testing.assert_allclose(t.data, [3.0, 1.5])


def test_detach_drops_the_tangent():
    _, t = F.jvp(lambda a: a.detach() * a, (rg.tensor([2.0]),), (rg.tensor([1.0]),))
    np.testing.assert_allclose(t.data, [2.0])


def test_max_pool_with_padding_has_finite_tangents():
    # the padding is -inf: its tangent must be 0, not -inf (which would give nan)
    rng = np.random.default_rng(0)
    x = rg.tensor(rng.standard_normal((1, 2, 5, 5)))
    v = rg.tensor(rng.standard_normal((1, 2, 5, 5)))
    _, t = F.jvp(lambda a: max_pool2d(a, 3, stride=2, padding=1), (x,), (v,))
    tx, tv = torch.tensor(x.data), torch.tensor(v.data)
    ref = torch.func.jvp(lambda a: torch.nn.functional.max_pool2d(a, 3, 2, 1), (tx,), (tv,))[1]
    np.testing.assert_allclose(t.data, ref.numpy(), rtol=1e-6)


# ---------------------------------------------------------------- custom Functions

class Cube(rg.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return rg.Tensor(x.data ** 3)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3 * x * x

    @staticmethod
    def jvp(ctx, t):
        (x,) = ctx.saved_tensors
        return t * 3 * x * x


class CubeNoJvp(rg.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return rg.Tensor(x.data ** 3)

    @staticmethod
    def backward(ctx, g):
        return g


def test_function_jvp_is_used_by_forward_mode_and_batches():
    x = rg.tensor([1.0, 2.0, -1.0], dtype=rg.float64)
    _, t = F.jvp(Cube.apply, (x,), (rg.ones_like(x),))
    np.testing.assert_allclose(t.data, 3 * x.data ** 2)
    np.testing.assert_allclose(F.jacfwd(Cube.apply)(x).data, np.diag(3 * x.data ** 2))


def test_function_without_jvp_raises_a_clear_error():
    with pytest.raises(RuntimeError, match="CubeNoJvp.*defines no jvp"):
        F.jvp(CubeNoJvp.apply, (rg.tensor([1.0]),), (rg.tensor([1.0]),))
    # without a tangent reaching it, forward mode does not care
    out, t = F.jvp(lambda a: a * CubeNoJvp.apply(rg.tensor([2.0])), (rg.tensor([1.0]),),
                   (rg.tensor([1.0]),))
    assert t.item() == 8.0


def test_op_without_a_jvp_rule_raises():
    op = ops.Op("nojvp", np.sin)
    with pytest.raises(RuntimeError, match="'nojvp' has no forward-mode"):
        F.jvp(lambda a: apply(op, a), (rg.tensor([1.0]),), (rg.tensor([1.0]),))
