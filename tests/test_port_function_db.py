"""Gaps found by sweeping PyTorch's databases about extending autograd, each entry built the
same way in torch and in retrograd and compared (values, dtypes, shapes, gradients):

- `autograd_function_db`: its 14 `autograd.Function`s (NumpyCube, NumpyExp_, NumpyMul,
  NumpySort, NumpyTake, Select, the *GenVmap ones, ...) run from torch's own source with
  `torch` bound to `rg`; forward, backward, double backward, `func.grad`/`vjp`/`jvp`/
  `jacrev`/`jacfwd` and their nestings, and `func.vmap` (over the vmap staticmethod and
  over `generate_vmap_rule`), nested with grad, jvp and vmap;
- `custom_op_db` (torch.library custom ops) through `rg.library`;
- `hop_db` (higher-order ops) where retrograd has the op.
"""

from __future__ import annotations

import inspect

import numpy as np
import torch
import torch.testing._internal.autograd_function_db as _afdb

import retrograd as rg


def _build(lib) -> dict:
    """torch's autograd_function_db Functions, from its source, with `torch` bound to `lib`."""
    src = inspect.getsource(_afdb)
    body = src[src.index("def to_numpy"):src.index("autograd_function_db = [")]
    ns = {"torch": lib, "np": np, "partial": None, "make_tensor": None, "SampleInput": None}
    exec(compile(body, f"<autograd_function_db for {lib.__name__}>", "exec"), ns)
    return ns


T, R = _build(torch), _build(rg)


def _np(t):
    return np.asarray(t.detach().numpy())


def _same(a, b, what=""):
    """Same dtype, shape and values (to float64 rounding)."""
    a, b = _np(a), _np(b)
    assert a.dtype == b.dtype and a.shape == b.shape, (what, a.dtype, b.dtype, a.shape, b.shape)
    np.testing.assert_allclose(b, a, rtol=1e-10, atol=1e-12, err_msg=what)


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
        res.append([lib.func.jvp(lib.func.grad(lambda v, f=f: f(v).sum()), (x,), (one,))[1],
                    lib.func.jacfwd(lib.func.jacrev(lambda v, f=f: (f(v) * f(v)).sum()))(x)])
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

    ref = torch.func.jacrev(torch.func.jacrev(s(torch, T)))(x_t)
    _same(ref, rg.func.jacrev(rg.func.jacfwd(s(rg, R)))(x_r))
    _same(ref, rg.func.jacfwd(rg.func.jacfwd(s(rg, R)))(x_r))
    one = rg.ones_like(x_r)
    d1 = lambda v: rg.func.jvp(lambda u: R["NumpyCube"].apply(u)[1], (v,), (one,))[1]  # noqa: E731
    _same(torch.full((2,), 6.0, dtype=torch.float64), rg.func.jvp(d1, (x_r,), (one,))[1])
