"""Batching rules: how each op runs on inputs that carry an extra leading batch dimension.

`rg.func.vmap` gives each batched input a value at a vmap level (see forward.py):
an array of shape `(B,) + x.shape`. Every op applied while the level is active
computes its output's batched value here, from its inputs' batched values (an
input without one is the same for the whole batch). The rules, most specific
first:

- linear ops (reshape, permute, expand, getitem, scatter, sum, neg, cast) and
  ops linear in the one batched input (mul, div's numerator, matmul, einsum):
  the op's own jvp rule, which already passes leading batch dimensions
  through (a linear op's jvp is the op itself);
- element-wise ops and comparisons: the forward itself, after lining the batch
  dimension up in front of the broadcast dimensions;
- reductions and softmax-like ops: the forward, with the axes moved past the
  batch dimension;
- matmul of two batched operands, cat and unit-stride convolution: rules of their own
  below;
- anything else: the op once per batch element, stacked (correct, not fast).

A rule computes with `m`: NUMPY arrays when nothing records, else the engine's
recorded TENSOR ops, so batched values can themselves be differentiated (grad
of vmap, vmap of grad) and batched again (nested vmap).
"""

from __future__ import annotations

import numpy as np

from .engine import TENSOR
from .primitive import NUMPY
from .tensor import Tensor

# op name -> the inputs in which the op is linear (the others held fixed)
_LINEAR = {"reshape": {0}, "permute": {0}, "expand": {0}, "getitem": {0}, "scatter": {0},
           "sum": {0}, "neg": {0}, "mul": {0, 1}, "div": {0}, "matmul": {0, 1},
           "einsum": None, "conv_cols": {0}, "conv_cols_t": {0},
           "unfold_view": {0}}  # None: every input
_COMPARE = {"eq", "ne", "lt", "le", "gt", "ge", "bitwise_and", "bitwise_or", "bitwise_xor",
            "bitwise_not", "logical_and", "logical_or", "logical_xor", "logical_not", "isnan",
            "isinf", "isfinite", "isclose", "left_shift", "right_shift", "real", "imag",
            "conj", "angle", "cabs", "complex"}  # element-wise ops without shared rules
_REDUCE = {"sum", "max", "min", "prod", "logsumexp", "argmax", "argmin", "prod_others",
           "softmax", "log_softmax", "all", "any", "cumsum", "cumprod", "logcumsumexp",
           "argsort"}  # one input, an `axis` attribute


def batched(op, inputs, attrs, out: Tensor, pairs, lv, fast: bool):
    """The batched value of `out = op(*inputs, **attrs)`, shape `lv.batch + out.shape`."""
    m = NUMPY if fast else TENSOR
    B = lv.batch[0]
    xs = tuple(x.data if fast and isinstance(x, Tensor) else x for x in inputs)
    o = out.data if fast else out
    bv = {j: (t.data if fast else t) for j, t in pairs}
    r = _rule(m, op, xs, o, bv, attrs, B)
    if r is None:
        r = _loop(m, op, xs, bv, attrs, B)
    shape = (B,) + out.shape
    if r.shape != shape:
        r = m.expand(r, shape=shape) if r.ndim <= len(shape) else r
        if r.shape != shape:
            raise RuntimeError(f"rg.func.vmap: the batching rule of '{op.name}' gave shape "
                               f"{r.shape}, expected {shape}")
    if r.dtype != out.dtype:
        r = m.cast(r, dtype=out.dtype)
    return Tensor._wrap(np.asarray(r)) if fast else r


def _rule(m, op, xs, o, bv, attrs, B):
    name = op.name
    if name == "one_hot":  # its one input batched: a class axis added at the end
        return m.one_hot(bv[0], **attrs)
    elementwise = (op.vjps is not None and op.vjps is op.jvps) or name in _COMPARE \
        or name == "cast"
    lin = _LINEAR.get(name, ())
    if len(bv) == 1 and op.jvps is not None and (lin is None or next(iter(bv)) in lin):
        j, t = next(iter(bv.items()))
        rule = op.jvps[0] if op.variadic else op.jvps[j]
        if rule is not None:
            x = xs[j]
            if op.broadcast and np.ndim(x) < o.ndim:
                t = m.reshape(t, shape=(B,) + (1,) * (o.ndim - np.ndim(x)) + tuple(x.shape))
            if op.variadic:
                return rule(m, t, o, *xs, argnum=j, **attrs)
            return rule(m, t, o, *xs, **attrs)
    if elementwise:
        return _elementwise(m, op, xs, o, bv, attrs, B)
    if name in _REDUCE:
        return _reduce(m, op, xs, bv, attrs, B)
    if name == "matmul":
        return _matmul(m, xs, bv, B)
    if name == "cat":
        return _cat(m, xs, bv, attrs, B)
    if name in ("conv_unit", "conv_unit_bias"):
        return _conv_unit(m, op, xs, bv, attrs, B)
    if name == "index_select" and set(bv) == {0}:
        return m.index_select(bv[0], xs[1], axis=_shift(attrs["axis"], np.ndim(xs[0])))
    if name == "linear" and set(bv) == {0} and np.ndim(xs[0]) >= 1:
        return m.linear(bv[0], *xs[1:])
    return None


def _value(m, xs, bv, j):
    return bv[j] if j in bv else xs[j]


def _elementwise(m, op, xs, o, bv, attrs, B):
    """The forward on the batched arrays, each lined up to (B, 1.., *shape)."""
    args = []
    for j, x in enumerate(xs):
        if j in bv:
            v = bv[j]
            nd = v.ndim - 1
            if nd < o.ndim:
                v = m.reshape(v, shape=(B,) + (1,) * (o.ndim - nd) + tuple(v.shape[1:]))
            args.append(v)
        else:
            args.append(x)
    return getattr(m, op.name)(*args, **attrs)


def _shift(axis, nd: int):
    if axis is None:
        return tuple(range(1, nd + 1))
    if isinstance(axis, (tuple, list)):
        return tuple(_shift(a, nd) for a in axis)
    a = int(axis)
    if not -nd <= a < max(nd, 1):
        raise np.exceptions.AxisError(a, nd)
    return a % max(nd, 1) + 1


def _reduce(m, op, xs, bv, attrs, B):
    if set(bv) != {0}:
        return None
    v = bv[0]
    nd = v.ndim - 1
    attrs = dict(attrs)
    axis = attrs.get("axis")
    if axis is None and op.name in ("argmax", "argmin"):
        if attrs.get("keepdims"):
            return None
        v = m.reshape(v, shape=(B, -1 if nd else 1))
        attrs["axis"] = 1
        return getattr(m, op.name)(v, **attrs)
    if axis is None and op.name not in ("sum", "max", "min", "prod", "logsumexp", "all", "any"):
        return None
    attrs["axis"] = _shift(axis, nd)
    return getattr(m, op.name)(v, **attrs)


def _matmul(m, xs, bv, B):
    """Any two operands, either or both batched: vectors become one-row or one-column
    matrices, ranks are lined up behind the batch dimension, and the added unit
    dimensions are dropped again."""
    x, y = _value(m, xs, bv, 0), _value(m, xs, bv, 1)
    xl = x.ndim - (0 in bv)
    yl = y.ndim - (1 in bv)
    if xl == 0 or yl == 0:
        return None
    xs_ = tuple(x.shape[1:] if 0 in bv else x.shape)
    ys_ = tuple(y.shape[1:] if 1 in bv else y.shape)
    x2 = xs_ if xl >= 2 else (1,) + xs_
    y2 = ys_ if yl >= 2 else ys_ + (1,)
    n = max(len(x2), len(y2))
    if 0 in bv:
        x = m.reshape(x, shape=(B,) + (1,) * (n - len(x2)) + x2)
    elif xl == 1:
        x = m.reshape(x, shape=x2)
    if 1 in bv:
        y = m.reshape(y, shape=(B,) + (1,) * (n - len(y2)) + y2)
    elif yl == 1:
        y = m.reshape(y, shape=y2)
    r = m.matmul(x, y)
    shape = tuple(r.shape)
    if yl == 1:
        shape = shape[:-1]
    if xl == 1:
        shape = shape[:-2] + shape[-1:] if yl != 1 else shape[:-1]
    if len(shape) == r.ndim:
        return r
    return m.reshape(r, shape=shape)


def _conv_unit(m, op, xs, bv, attrs, B):
    """Unit-stride convolution, one call for any batched inputs: linear in x and in the
    weight apart (their jvp rules fold the batch into the samples or the output channels);
    both batched, a grouped convolution with the batch folded into the channels; then the
    bias, batched or not."""
    x, w = xs[0], xs[1]
    nd = len(w.shape) - 2
    spatial = tuple(range(2, nd + 3))
    if 0 in bv and 1 in bv:
        n, c = x.shape[:2]
        r = m.reshape(m.permute(bv[0], axes=(1, 0) + spatial),
                      shape=(n, B * c) + tuple(x.shape[2:]))
        wb = m.reshape(bv[1], shape=(B * w.shape[0],) + tuple(w.shape[1:]))
        r = m.conv_unit(r, wb, dilation=attrs["dilation"], padding=attrs["padding"],
                        groups=B * attrs["groups"])
        r = m.reshape(r, shape=(n, B, w.shape[0]) + tuple(r.shape[2:]))
        r = m.permute(r, axes=(1, 0) + spatial)
    elif 0 in bv or 1 in bv:
        j = 0 if 0 in bv else 1
        r = op.jvps[j](m, bv[j], None, x, w, **attrs)
    else:
        r = m.conv_unit(x, w, **attrs)
        r = m.reshape(r, shape=(1,) + tuple(r.shape))
    if len(xs) > 2:
        b = xs[2]
        b = m.reshape(bv[2], shape=(B, 1, b.shape[0]) + (1,) * nd) if 2 in bv else \
            m.reshape(b, shape=(b.shape[0],) + (1,) * nd)
        r = r + b
    return r


def _cat(m, xs, bv, attrs, B):
    nd = np.ndim(xs[0])
    args = []
    for j, x in enumerate(xs):
        if j in bv:
            args.append(bv[j])
        else:
            shape = tuple(np.shape(x))
            args.append(m.expand(m.reshape(x, shape=(1,) + shape), shape=(B,) + shape))
    return m.cat(*args, axis=_shift(attrs["axis"], nd))


def _loop(m, op, xs, bv, attrs, B):
    """The op once per batch element, stacked: for ops without a rule of their own."""
    rows = []
    for b in range(B):
        args = [m.getitem(bv[j], idx=b) if j in bv else x for j, x in enumerate(xs)]
        r = getattr(m, op.name)(*args, **attrs)
        rows.append(m.reshape(r, shape=(1,) + tuple(r.shape)))
    if not rows:
        raise RuntimeError(f"rg.func.vmap: cannot batch '{op.name}' over an empty batch")
    return rows[0] if B == 1 else m.cat(*rows, axis=0)
