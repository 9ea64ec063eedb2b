"""Gaps found by sweeping PyTorch's three databases about extending autograd, each entry
built the same way in torch and in retrograd and compared (values, dtypes, shapes,
requires_grad, gradients of random cotangents in float64, exception types):

- `autograd_function_db`: its 14 `autograd.Function`s (NumpyCube, NumpyExp_, NumpyMul,
  NumpySort, NumpyTake, Select, the *GenVmap ones, ...) run from torch's own source with
  `torch` bound to `rg`: forward (float64/32/16, int, bool), backward, double backward,
  `func.grad`/`vjp`/`jvp`/`jacrev`/`jacfwd` and their four second-order nestings, and
  `func.vmap` (in_dims 0, 1 and None, over the vmap staticmethod and over
  `generate_vmap_rule`) nested with grad, vjp, jvp, jacfwd, jacrev and vmap;
- `custom_op_db`'s 11 torch.library operators, made with `rg.library` from the same
  source, through the same checks (where torch.func refuses a custom op, against torch's
  autograd instead);
- `hop_db`'s 17 higher-order ops: retrograd has `cond`, `while_loop`, `flex_attention`
  and `Tensor.register_hook`, which matched (values and gradients) with nothing to fix.
"""
from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
import torch
from port_compare import same

import retrograd as rg


def _source(module: str, start: str, end: str) -> str:
    """The text of torch's database module between two markers, read from its file (not
    imported: importing it loads torch's OpInfo machinery, seconds)."""
    src = Path(importlib.util.find_spec(module).origin).read_text()
    return src[src.index(start):src.index(end)]


_AFDB = _source("torch.testing._internal.autograd_function_db", "def to_numpy",
                "autograd_function_db = [")
# custom_op_db's operators under a namespace of this file's own, so that they never meet
# torch's (the module, imported elsewhere, registers `_torch_testing`)
_CODB = _source("torch.testing._internal.custom_op_db", "def to_numpy",
                "custom_op_db = [").replace("_torch_testing", "_rg_port_function_db")


def _build(lib) -> dict:
    """torch's autograd_function_db Functions, from its source, with `torch` bound to `lib`."""
    ns = {"torch": lib, "np": np, "partial": None, "make_tensor": None, "SampleInput": None}
    exec(compile(_AFDB, f"<autograd_function_db for {lib.__name__}>", "exec"), ns)
    return ns


def _build_ops(lib) -> dict:
    """torch's custom_op_db operators, from its source, made with `lib.library`."""
    ns = {"torch": lib, "np": np, "functools": None, "make_tensor": None,
          "SampleInput": None, "Tensor": lib.Tensor, "Number": float, "Sequence": Sequence,
          "List": list}
    exec(compile(_CODB, f"<custom_op_db for {lib.__name__}>", "exec"), ns)
    return ns


T, R = _build(torch), _build(rg)
OPS_T, OPS_R = _build_ops(torch), _build_ops(rg)


def _grad(lib, f, argnums=0):
    """`lib.func.grad(f, argnums)`; for torch built on torch.func.vjp, which gives the same
    numbers without importing torch._dynamo (torch.func.grad/jacrev/jacfwd's first call
    costs seconds)."""
    if lib is not torch:
        return lib.func.grad(f, argnums=argnums)

    def g(*args):
        out, pull = torch.func.vjp(f, *args)
        gs = pull(torch.ones_like(out))
        return gs[argnums] if isinstance(argnums, int) else tuple(gs[i] for i in argnums)
    return g


def _hessian(lib, f, x):
    """The Hessian of scalar `f` at `x`: rg's forward over reverse, torch's autograd."""
    if lib is torch:
        return torch.autograd.functional.hessian(f, x)
    return rg.func.jacfwd(rg.func.jacrev(f))(x)


def _same(a, b, what=""):
    """Same dtype, shape and values (to float64 rounding, a little looser for the
    databases' NumPy-computed kernels)."""
    same(a, b, what, rtol=1e-10)


def _x(lib, *values):
    return lib.tensor(list(values), dtype=lib.float64)


# ------------------------------------------------------------------ forward mode, mark_dirty

def test_mark_dirty_output_tangent_under_grad():
    """jvp(grad(f)) through NumpyExp_ (mark_dirty): the dirty output's tangent is its jvp's,
    e^x, not the tangent the input had before the in-place exp (was 1: a wrong Hessian)."""
    res = []
    for lib, ns in ((torch, T), (rg, R)):
        def f(v, ns=ns):
            return ns["NumpyExp_"].apply(v.clone())

        x = _x(lib, 1.3, -0.4)
        one = lib.ones_like(x)
        res.append([lib.func.jvp(_grad(lib, lambda v, f=f: f(v).sum()), (x,), (one,))[1],
                    _hessian(lib, lambda v, f=f: (f(v) * f(v)).sum(), x)])
    for a, b in zip(*res):
        _same(a, b)


def test_saved_output_in_jvp_is_differentiable():
    """NumpyCube's jvp reads an output saved with save_for_forward: differentiating the jvp
    (jacrev(jacfwd), jvp(jvp)) must see how that output depends on the input (it read as a
    constant: wrong second derivatives). torch's own jvp(jvp)/jacfwd(jacfwd) here give 0
    for d2(3x^2) (its nested forward mode misses it), so both are checked against torch's
    jacrev(jacrev), whose NumpyCube backward is right."""
    x_t, x_r = _x(torch, 1.3, 0.7), _x(rg, 1.3, 0.7)

    def s(lib, ns):
        def f(v):
            a, b = ns["NumpyCube"].apply(v)
            return (a * a * 1.5).sum() + (b * b * 2.5).sum()
        return f

    ref = torch.autograd.functional.hessian(s(torch, T), x_t)
    _same(ref, rg.func.jacrev(rg.func.jacfwd(s(rg, R)))(x_r))
    _same(ref, rg.func.jacfwd(rg.func.jacfwd(s(rg, R)))(x_r))
    one = rg.ones_like(x_r)
    d1 = lambda v: rg.func.jvp(lambda u: R["NumpyCube"].apply(u)[1], (v,), (one,))[1]  # noqa: E731
    _same(torch.full((2,), 6.0, dtype=torch.float64), rg.func.jvp(d1, (x_r,), (one,))[1])


# ------------------------------------------------------------------ vmap

_GEN = ["CubeGenVmap", "MulGenVmap", "SortGenVmap", "SelectGenVmap", "ScaleGradGenVmap",
        "ZeroGradientsGenVmap"]


def _gen_case(lib, ns, name):
    """(function of the batched float inputs, batched inputs, in_dims) for a GenVmap entry."""
    g = np.random.default_rng(len(name))
    mk = lambda *s: lib.tensor(g.uniform(0.9, 2, s))  # noqa: E731
    F = ns[name]
    if name in ("CubeGenVmap", "ScaleGradGenVmap"):
        return (lambda x: F.apply(x)), (mk(2, 1),)
    if name in ("MulGenVmap", "ZeroGradientsGenVmap"):
        return (lambda x, y: F.apply(x, y)), (mk(2, 4), mk(2, 3, 4))
    if name == "SortGenVmap":
        return (lambda x: F.apply(x, 1)), (mk(2, 3, 5),)
    return (lambda x: F.apply(x, 2)), (mk(2, 3, 5),)


@pytest.mark.parametrize("name", _GEN)
def test_generate_vmap_rule(name):
    """A Function with generate_vmap_rule = True runs under vmap (it raised), through its own
    forward, backward and jvp: vmap, vmap(grad), grad(vmap) and nested vmap as torch.func."""
    res = []
    for lib, ns in ((torch, T), (rg, R)):
        f, xs = _gen_case(lib, ns, name)

        def loss(*a, f=f, lib=lib):
            out = f(*a)
            out = out if isinstance(out, tuple) else (out,)
            return sum((o * (k + 1.5)).sum() for k, o in enumerate(out) if o.dtype == lib.float64)

        got = list(lib.func.vmap(f)(*xs))
        got += list(lib.func.vmap(_grad(lib, loss, argnums=tuple(range(len(xs)))))(*xs))
        got.append(_grad(lib, lambda x, xs=xs, loss=loss, lib=lib: lib.func.vmap(
            loss)(x, *xs[1:]).sin().sum())(xs[0]))
        nested = [lib.stack([x, x * 0.5]) for x in xs]
        got += list(lib.func.vmap(lib.func.vmap(f))(*nested))
        res.append(got)
    assert len(res[0]) == len(res[1])
    for a, b in zip(*res):
        _same(a, b)


def test_generate_vmap_rule_with_vmap_staticmethod_raises():
    """Both generate_vmap_rule = True and a vmap staticmethod: torch's RuntimeError."""
    for lib in (torch, rg):
        class Both(lib.autograd.Function):
            generate_vmap_rule = True

            @staticmethod
            def forward(x):
                return x * 2

            @staticmethod
            def setup_context(ctx, inputs, output):
                pass

            @staticmethod
            def backward(ctx, g):
                return g * 2

            @staticmethod
            def vmap(info, in_dims, x):
                return x * 2, in_dims[0]

        with pytest.raises(RuntimeError, match="both generate_vmap_rule=True"):
            lib.func.vmap(Both.apply)(lib.ones(2, 3))


def _two_outputs(lib):
    """CubeGenVmap's shape with a vmap staticmethod: its backward adds 6 * dinput, a term
    that does not scale with the cotangents."""
    class Cube(lib.autograd.Function):
        @staticmethod
        def forward(x):
            return x ** 3, 3 * x ** 2

        @staticmethod
        def setup_context(ctx, inputs, outputs):
            ctx.save_for_backward(inputs[0], outputs[1])

        @staticmethod
        def backward(ctx, grad_output, grad_saved):
            _, dinput = ctx.saved_tensors
            return grad_output * dinput + 6 * dinput + grad_saved

        @staticmethod
        def vmap(info, in_dims, x):
            return Cube.apply(x), (in_dims[0], in_dims[0])

    return Cube


def test_grad_inside_vmap_calls_backward_once_with_every_cotangent():
    """vmap(grad(f)) through a two-output Function: its backward gets both cotangents in
    one call, as torch (it was called once per output with a zero for the other, which
    counted the term that does not scale with the cotangents twice)."""
    res = []
    for lib in (torch, rg):
        F = _two_outputs(lib)

        def loss(v, F=F):
            a, b = F.apply(v)
            return (a * 1.5).sum() + (b * 2.5).sum()

        res.append(lib.func.vmap(_grad(lib, loss))(_x(lib, 1.3, 0.9).reshape(2, 1)))
    _same(*res)


# ------------------------------------------------------------------ rg.library (custom_op_db)

def _grads(lib, f, xs, seed=0):
    """Gradients of f(*xs)'s floating outputs against fixed random cotangents."""
    xs = [lib.tensor(np.asarray(x)).requires_grad_() for x in xs]
    out = f(*xs)
    outs = [o for o in (out if isinstance(out, (tuple, list)) else (out,))]
    cots = [lib.tensor(np.random.default_rng(seed + k).standard_normal(tuple(o.shape)))
            for k, o in enumerate(outs)]
    return [*outs, *lib.autograd.grad(outs, xs, cots)]


_R3 = np.random.default_rng(5)


@pytest.mark.parametrize("case", ["mul_scalar", "cat", "split_copy", "split_copy_with_int"])
def test_custom_op_structured_arguments_backward(case):
    """Keyword-only arguments (setup_context(ctx, inputs, keyword_only_inputs, output): it
    was called with three arguments), a list of tensors as input (numpy_cat: refused) and
    as output (numpy_split_copy: a ValueError; its backward gets a list of gradients), as
    torch.library."""
    a, b, c = (_R3.uniform(0.9, 2, s) for s in ((2, 3), (4, 3), (1, 3)))
    fs = {
        "mul_scalar": (lambda o: (lambda x: o["numpy_mul_scalar"](x, scalar=3.14)), [a]),
        "cat": (lambda o: (lambda x, y, z: o["numpy_cat"]([x, y, z], 0)), [a, b, c]),
        "split_copy": (lambda o: (lambda x: tuple(o["numpy_split_copy"](x, [1, 2], 1))), [a]),
        "split_copy_with_int": (
            lambda o: (lambda x: tuple(o["numpy_split_copy_with_int"](x, [1], 0)[0])), [b]),
    }
    make, xs = fs[case]
    for want, got in zip(_grads(torch, make(OPS_T), xs), _grads(rg, make(OPS_R), xs),
                         strict=True):
        _same(want, got)
    n = OPS_R["numpy_split_copy_with_int"](rg.tensor(b), [1], 0)[1]
    assert n == 1 and type(n) is int


@pytest.mark.parametrize("name", ["numpy_cube", "numpy_mul", "numpy_sort", "numpy_view_copy"])
def test_custom_op_register_vmap_is_used(name):
    """rg.func.vmap runs a custom op through the rule given to register_vmap (it ran the
    NumPy kernel on a batched tensor and refused)."""
    x = _R3.uniform(0.9, 2, (3, 2, 4))
    res = []
    for lib, o in ((torch, OPS_T), (rg, OPS_R)):
        f = {"numpy_cube": lambda v, o=o: o["numpy_cube"](v),
             "numpy_mul": lambda v, o=o: o["numpy_mul"](v, v[0]),
             "numpy_sort": lambda v, o=o: o["numpy_sort"](v, 1),
             "numpy_view_copy": lambda v, o=o: o["numpy_view_copy"](v, [8])}[name]
        out = lib.func.vmap(f)(lib.tensor(x))
        res.append(out if isinstance(out, tuple) else (out,))
    for a, b in zip(*res, strict=True):
        _same(a, b)


def test_custom_op_forward_mode_without_rule_raises():
    """Forward mode through a custom op has no rule (torch.library registers none here):
    retrograd raises NotImplementedError. torch.func.jvp returns a zero tangent (silently
    wrong); retrograd used to as well, its NumPy kernel dropping the tangent."""
    x = rg.tensor([1.3, 0.5])
    for f in (lambda v: OPS_R["numpy_mul"](v, v), lambda v: OPS_R["numpy_cube"](v)[0]):
        with pytest.raises(NotImplementedError, match="_rg_port_function_db::numpy_.*no jvp"):
            rg.func.jvp(f, (x,), (rg.ones_like(x),))
        with pytest.raises(NotImplementedError, match="through a custom op"):
            rg.func.jacfwd(f)(x)


@pytest.mark.parametrize("name", ["NumpyCube", "NumpyMul", "NumpySort", "NumpyExp_", "Select",
                                  "CubeGenVmap", "MulGenVmap", "SortGenVmap"])
def test_jvp_inside_vmap_through_function(name):
    """vmap(jvp(f)) through a Function: its batching rule gives the outputs' batched values
    and its jvp, run batched, the tangents (it raised: the vmap level reached the jvp)."""
    g = np.random.default_rng(3)
    x, y = g.uniform(0.9, 2, (2, 3, 4)), g.uniform(0.9, 2, (2, 3, 4))
    res = []
    for lib, ns in ((torch, T), (rg, R)):
        F = ns[name]
        f = {"NumpyCube": lambda v, F=F: F.apply(v),
             "CubeGenVmap": lambda v, F=F: F.apply(v),
             "NumpyMul": lambda v, F=F: F.apply(v, v * 2),
             "MulGenVmap": lambda v, F=F: F.apply(v, v * 2),
             "NumpySort": lambda v, F=F: F.apply(v, 1)[0],
             "SortGenVmap": lambda v, F=F: F.apply(v, 1)[0],
             "NumpyExp_": lambda v, F=F: F.apply(v.clone()),
             "Select": lambda v, F=F: F.apply(v, 2)}[name]
        j = lambda a, t, f=f, lib=lib: lib.func.jvp(f, (a,), (t,))  # noqa: E731
        out, tan = lib.func.vmap(j)(lib.tensor(x), lib.tensor(y))
        res.append([*(out if isinstance(out, tuple) else (out,)),
                    *(tan if isinstance(tan, tuple) else (tan,))])
    for a, b in zip(*res, strict=True):
        _same(a, b)


def test_grad_inside_vmap_through_mark_dirty_function():
    """vmap(grad(f)) and vmap(vjp(f)) through NumpyExp_ (writes its input in place, with a
    vmap staticmethod): the per-element reruns get copies of the batched values from
    before the rule wrote them (a view of the batch was refused with mark_dirty)."""
    x = np.random.default_rng(4).uniform(0.1, 1.5, (3, 2))
    res = []
    for lib, ns in ((torch, T), (rg, R)):
        F = ns["NumpyExp_"]

        def loss(v, F=F):
            return (F.apply(v.clone()) * 1.5).sum()

        def vjp(v, F=F, lib=lib):
            o, fn = lib.func.vjp(lambda u: F.apply(u.clone()), v)
            return fn(o * 0 + 2.0)[0]

        res.append([lib.func.vmap(_grad(lib, loss))(lib.tensor(x)),
                    lib.func.vmap(vjp)(lib.tensor(x))])
    for a, b in zip(*res, strict=True):
        _same(a, b)


def test_grad_inside_vmap_result_has_no_graph():
    """vmap(grad(f)) through a Function with a vmap staticmethod: the per-sample gradients
    carry no graph where nothing outside differentiates them (torch's requires_grad False;
    they had a grad_fn), and keep one where the batched input requires grad."""
    x = np.random.default_rng(6).uniform(0.5, 1.5, (3, 4))
    for leaf in (False, True):
        flags = []
        for lib, ns in ((torch, T), (rg, R)):
            F = ns["NumpyMul"]
            g = lib.func.vmap(_grad(lib, lambda v, F=F: F.apply(v, v).sum()))
            flags.append(g(lib.tensor(x).requires_grad_(leaf)).requires_grad)
        assert flags[0] == flags[1] == leaf


def _square_op(lib, name: str):
    """A custom op with a NumPy kernel and a gradient but no vmap rule."""
    def kernel(x):
        return lib.tensor(x.numpy() ** 2)

    kernel.__annotations__ = {"x": lib.Tensor, "return": lib.Tensor}  # resolved, per library
    square = lib.library.custom_op(f"_rg_port_function_db::{name}", mutates_args=())(kernel)

    def backward(ctx, g):
        return 2 * g * ctx.saved_tensors[0]

    square.register_autograd(backward, setup_context=lambda ctx, inputs, output:
                             ctx.save_for_backward(inputs[0]))
    return square


def test_custom_op_without_vmap_rule_runs_per_element():
    """A custom op without register_vmap runs under vmap once per batch element, as
    torch's fallback loop (it refused); vmap(grad) through it uses its gradient (torch
    refuses that one: checked against torch's autograd, element by element)."""
    x = np.random.default_rng(7).uniform(0.5, 1.5, (3, 4))
    sq_t, sq_r = _square_op(torch, "square_t"), _square_op(rg, "square_r")
    _same(torch.func.vmap(sq_t)(torch.tensor(x)), rg.func.vmap(sq_r)(rg.tensor(x)))
    want = []
    for row in torch.tensor(x):
        v = row.clone().requires_grad_()
        want.append(torch.autograd.grad(sq_t(v).sin().sum(), v)[0])
    got = rg.func.vmap(rg.func.grad(lambda v: sq_r(v).sin().sum()))(rg.tensor(x))
    _same(torch.stack(want), got)


def test_custom_op_returning_none_with_grad_input():
    """A mutating custom op that returns None, called on an input that requires grad,
    returns None and writes its output argument, as torch's (a TypeError: None was made
    a tensor)."""
    res = []
    for lib in (torch, rg):
        def kernel(x, out):
            out.copy_(x * 2)

        kernel.__annotations__ = {"x": lib.Tensor, "out": lib.Tensor, "return": None}
        op = lib.library.custom_op(f"_rg_port_function_db::write_{lib.__name__}",
                                   mutates_args=("out",))(kernel)
        out = lib.zeros(3, dtype=lib.float64)
        assert op(lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64).requires_grad_(), out) is None
        res.append(out)
    _same(*res)
