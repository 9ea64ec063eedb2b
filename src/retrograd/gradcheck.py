"""Compare analytic derivatives with numerical ones, in float64.

`gradcheck` builds the full Jacobian both ways (or, with `fast=True`, compares
v^T J u for random u and v, falling back to the full Jacobian to name the
culprit). Numbers come from central differences, or from the complex-step
derivative Im f(x + ih) / h, which is exact to rounding for analytic code.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import contextmanager

import numpy as np

from . import forward, ops
from .autograd._core import grad
from .engine import apply
from .grad_mode import no_grad, state
from .primitive import ArgumentError
from .tensor import Tensor


class GradcheckError(RuntimeError):
    """Analytic and numerical derivatives disagree."""


def _outputs(fn, inputs) -> list:
    """fn's tensor outputs; a complex one that carries a gradient as its real and imaginary
    parts (`view_as_real`), so both are checked."""
    out = fn(*inputs)
    outs = [out] if isinstance(out, Tensor) else list(out)
    return [apply(ops.view_as_real, o) if o.dtype.kind == "c" and o.requires_grad else o
            for o in outs if isinstance(o, Tensor)]


@contextmanager
def _complex_step():
    """Mark a complex-step evaluation, so that non-analytic ops refuse complex data."""
    prev = state.complex_step
    state.complex_step = True
    try:
        yield
    finally:
        state.complex_step = prev


def _check_inputs(inputs) -> list:
    diff = [k for k, t in enumerate(inputs) if isinstance(t, Tensor) and t.requires_grad]
    if not diff:
        raise ArgumentError("gradcheck: no input requires grad")
    for k in diff:
        if inputs[k].dtype != np.float64:
            raise TypeError(f"gradcheck: input {k} has dtype {inputs[k].dtype}; use float64 "
                            "inputs (finite differences are meaningless in lower precision)")
    return diff


def _numerical(fn, inputs, k, eps, method) -> np.ndarray:
    """Jacobian block d(outputs)/d(input k), one column per element of input k."""
    x = inputs[k]
    base = x.data
    cols = []
    for j in range(base.size):  # not under no_grad: fn may differentiate (gradgradcheck)
        if method == "complex_step":
            z = base.astype(np.complex128)
            z.reshape(-1)[j] += 1j * eps
            args = list(inputs)
            args[k] = Tensor._wrap(z)
            with no_grad(), _complex_step():  # complex data is forward-only
                outs = _outputs(fn, args)
            cols.append(np.concatenate([o.data.imag.reshape(-1) / eps for o in outs]))
            continue
        plus, minus = base.copy(), base.copy()
        plus.reshape(-1)[j] += eps
        minus.reshape(-1)[j] -= eps
        fp = _flat(fn, inputs, k, plus)
        fm = _flat(fn, inputs, k, minus)
        cols.append((fp - fm) / (2 * eps))
    return np.stack(cols, axis=1) if cols else np.zeros((0, 0))


def _flat(fn, inputs, k, value) -> np.ndarray:
    args = list(inputs)
    args[k] = _like(inputs[k], value)
    return np.concatenate([o.data.astype(np.float64).reshape(-1) for o in _outputs(fn, args)])


def _like(x: Tensor, value: np.ndarray) -> Tensor:
    """A new leaf holding `value`, requiring grad as `x` does."""
    t = Tensor._wrap(value)
    t.requires_grad = x.requires_grad
    return t


def _analytic(fn, inputs, diff) -> dict:
    """Jacobian blocks from reverse mode, one row per output element."""
    outs = _outputs(fn, inputs)
    sizes = [o.data.size for o in outs]
    total = sum(sizes)
    blocks = {k: np.zeros((total, inputs[k].data.size)) for k in diff}
    row = 0
    for o, n in zip(outs, sizes):
        for j in range(n):
            if not o.requires_grad:
                row += 1
                continue
            seed = np.zeros(o.shape, dtype=o.dtype)
            seed.reshape(-1)[j] = 1
            gs = grad([o], [inputs[k] for k in diff], [Tensor._wrap(seed)], allow_unused=True)
            for k, g in zip(diff, gs):
                if g is not None:
                    blocks[k][row] = g.data.reshape(-1)
            row += 1
    return blocks


def _analytic_forward(fn, inputs, diff) -> dict:
    """Jacobian blocks from forward mode, one column per input element (one jvp each)."""
    blocks = {}
    for k in diff:
        x = inputs[k]
        cols = []
        for j in range(x.data.size):
            seed = np.zeros(x.shape, dtype=x.dtype)
            seed.reshape(-1)[j] = 1
            args = list(inputs)
            with forward.level() as lv:
                args[k] = forward.make_dual(x, Tensor._wrap(seed), lv)
                outs = _outputs(fn, args)
                ts = [forward.tangent_of(o, lv) for o in outs]
            cols.append(np.concatenate([
                np.zeros(o.data.size) if t is None else t.data.astype(np.float64).reshape(-1)
                for o, t in zip(outs, ts)]) if outs else np.zeros(0))
        blocks[k] = np.stack(cols, axis=1) if cols else np.zeros((0, 0))
    return blocks


def _fail(k, idx, shape, a, n, what="derivative") -> GradcheckError:
    return GradcheckError(
        f"gradcheck failed for input {k} (shape {shape}), element {idx}: analytic {what} "
        f"{a:.10g} but numerical {n:.10g} (difference {abs(a - n):.3g})")


def gradcheck(fn: Callable, inputs: Sequence, eps: float = 1e-6, atol: float = 1e-5,
              rtol: float = 1e-3, method: str = "central", fast: bool = False,
              raise_exception: bool = True, *, nondet_tol: float = 0.0,
              check_undefined_grad: bool = True, check_grad_dtypes: bool = False,
              check_batched_grad: bool = False, check_batched_forward_grad: bool = False,
              check_forward_ad: bool = False, check_backward_ad: bool = True,
              fast_mode: bool = False, masked: bool | None = None) -> bool:
    """True if reverse-mode derivatives of `fn` at `inputs` (and forward-mode ones, with
    `check_forward_ad=True`; `check_backward_ad=False` skips reverse mode) match
    numerical ones. Otherwise raise `GradcheckError` naming the input and element that
    disagree most. PyTorch's keywords are taken: `fast_mode` is `fast`; the checks of
    undefined gradients and gradient dtypes hold by construction here (no undefined
    gradients; gradients take their input's dtype); the batched checks are refused.
    """
    if check_batched_grad or check_batched_forward_grad or masked:
        raise NotImplementedError("gradcheck: check_batched_grad, check_batched_forward_grad "
                                  "and masked are not supported")
    fast = fast or fast_mode
    inputs = [inputs] if isinstance(inputs, Tensor) else list(inputs)
    if method not in ("central", "complex_step"):
        raise ArgumentError(f"gradcheck: unknown method {method!r}; use 'central' or "
                            f"'complex_step'")
    diff = _check_inputs(inputs)
    try:
        modes = ([_analytic] if check_backward_ad else []) + (
            [_analytic_forward] if check_forward_ad else [])
        if fast and check_backward_ad and not check_forward_ad and _fast_ok(
                fn, inputs, diff, eps, atol, rtol, method):
            return True
        for mode in modes:
            _compare(fn, inputs, diff, mode(fn, inputs, diff), eps, atol, rtol, method)
    except GradcheckError:
        if raise_exception:
            raise
        return False
    return True


def _compare(fn, inputs, diff, analytic, eps, atol, rtol, method) -> None:
    """Raise GradcheckError at the worst element where `analytic` and numerical differ."""
    worst = None
    for k in diff:
        num = _numerical(fn, inputs, k, eps, method)
        ana = analytic[k]
        if num.shape != ana.shape:
            num = num.reshape(ana.shape)
        err = np.abs(ana - num) - (atol + rtol * np.abs(num))
        bad = ~np.isfinite(ana) & np.isfinite(num) | (err > 0)
        if np.any(bad):
            score = np.where(bad, np.nan_to_num(err, nan=np.inf, posinf=np.inf), -np.inf)
            r, c = np.unravel_index(np.argmax(score), score.shape)
            if worst is None or score[r, c] > worst[0]:
                idx = np.unravel_index(c, inputs[k].shape) if inputs[k].ndim else ()
                worst = (score[r, c], k, idx, ana[r, c], num[r, c])
    if worst is not None:
        _, k, idx, a, n = worst
        raise _fail(k, tuple(int(i) for i in idx), inputs[k].shape, a, n)


def _fast_ok(fn, inputs, diff, eps, atol, rtol, method) -> bool:
    """Compare v^T J u for one random u (over all inputs) and v."""
    rng = np.random.default_rng(0)
    us = {k: rng.standard_normal(inputs[k].shape) for k in diff}
    outs = _outputs(fn, inputs)
    vs = [rng.standard_normal(o.shape) for o in outs]
    live = [(o, v) for o, v in zip(outs, vs) if o.requires_grad]
    if not live:
        return False
    gs = grad([o for o, _ in live], [inputs[k] for k in diff],
              [Tensor._wrap(v.astype(o.dtype)) for o, v in live], allow_unused=True)
    analytic = sum(float(np.sum(g.data * us[k])) for k, g in zip(diff, gs) if g is not None)
    if method == "complex_step":
        args = list(inputs)
        for k in diff:
            args[k] = Tensor._wrap(inputs[k].data + 1j * eps * us[k])
        with no_grad(), _complex_step():  # complex data is forward-only
            numerical = sum(float(np.sum(o.data.imag / eps * v))
                            for o, v in zip(_outputs(fn, args), vs))
    else:
        plus, minus = list(inputs), list(inputs)
        for k in diff:
            plus[k] = _like(inputs[k], inputs[k].data + eps * us[k])
            minus[k] = _like(inputs[k], inputs[k].data - eps * us[k])
        numerical = sum(float(np.sum((p.data - q.data) / (2 * eps) * v))
                        for p, q, v in zip(_outputs(fn, plus), _outputs(fn, minus), vs))
    return abs(analytic - numerical) <= atol + rtol * abs(numerical)


def gradgradcheck(fn: Callable, inputs: Sequence, grad_outputs=None, eps: float = 1e-6,
                  atol: float = 1e-5, rtol: float = 1e-3, method: str = "central",
                  fast: bool = False, raise_exception: bool = True, *,
                  gen_non_contig_grad_outputs: bool = False, nondet_tol: float = 0.0,
                  check_undefined_grad: bool = True, check_grad_dtypes: bool = False,
                  check_batched_grad: bool = False, check_fwd_over_rev: bool = False,
                  check_rev_over_rev: bool = True, fast_mode: bool = False,
                  masked: bool = False) -> bool:
    """Check second derivatives: gradcheck of the vector-Jacobian product of `fn` (in
    reverse mode, and in forward mode over it with `check_fwd_over_rev=True`). PyTorch's
    keywords are taken as in `gradcheck`."""
    if check_batched_grad or masked:
        raise NotImplementedError("gradgradcheck: check_batched_grad and masked are not "
                                  "supported")
    fast = fast or fast_mode
    inputs = [inputs] if isinstance(inputs, Tensor) else list(inputs)
    diff = _check_inputs(inputs)
    outs = _outputs(fn, inputs)
    rng = np.random.default_rng(1)
    if grad_outputs is None:
        grad_outputs = [Tensor(rng.standard_normal(o.shape), requires_grad=True) for o in outs]
    else:
        grad_outputs = [grad_outputs] if isinstance(grad_outputs, Tensor) else list(grad_outputs)
    n = len(inputs)

    def vjp(*args):
        xs, vs = list(args[:n]), list(args[n:])
        ys = _outputs(fn, xs)
        live = [(y, v) for y, v in zip(ys, vs) if y.requires_grad]
        gs = grad([y for y, _ in live], [xs[k] for k in diff], [v for _, v in live],
                  create_graph=True, allow_unused=True)
        return tuple(g for g in gs if g is not None)

    return gradcheck(vjp, inputs + grad_outputs, eps=eps, atol=atol, rtol=rtol, method=method,
                     fast=fast, raise_exception=raise_exception,
                     check_forward_ad=check_fwd_over_rev, check_backward_ad=check_rev_over_rev)
