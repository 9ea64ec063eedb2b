"""The op table: every primitive's forward, vjp and jvp rules, side by side.

A rule is `rule(m, g, out, *inputs, **attrs)`: `m` is the array namespace the
rule computes with, `g` the incoming cotangent (vjp) or an input's tangent
(jvp), `out` the op's output, then the op's inputs and attributes. A rule
returns that input's contribution. vjp and jvp rules take the same arguments.

`m` is `NUMPY` for a plain backward (rules run on arrays, fast) and `TENSOR`
when the backward itself is recorded (`create_graph=True`): the same rule then
builds a differentiable graph, so higher derivatives need nothing extra.
Both namespaces are generated from this table, so a rule may call any op
here as `m.<name>(...)` (inputs positional, attributes by keyword).

Broadcasting is undone once, in `Op.backward`, never inside a rule.

Conventions at non-differentiable points (documented in the README):
abs'(0) = 0, relu'(0) = 0, sqrt'(0) = inf, clamp passes the gradient at its
bounds, and ties in max/min/maximum/minimum share the gradient equally.
"""

from __future__ import annotations

import functools
import weakref
from types import SimpleNamespace

import numpy as np

from . import engine

OPS: dict[str, Op] = {}


class Op:
    """A primitive: NumPy forward plus per-input vjp and jvp rules."""

    __slots__ = ("name", "forward", "vjps", "jvps", "broadcast", "save_out", "reads", "view",
                 "variadic", "smooth", "tuned", "traced_vjps", "read_cache", "simple")

    def __init__(self, name, forward, vjps=None, jvps=None, *, broadcast=False, save_out=False,
                 reads=None, view=False, variadic=False, smooth=True, tuned=False):
        self.name = name
        self.forward = forward
        self.vjps = vjps            # tuple: one rule per input (None: not differentiable)
        self.jvps = jvps            # tuple: one rule per input, same arguments
        self.broadcast = broadcast  # inputs broadcast against each other
        self.save_out = save_out    # rules read `out`
        if reads is None and vjps is not None and not variadic:
            reads = tuple(range(len(vjps)))
        if view:  # shares input 0's memory: its history is stale once that changes in place
            reads = (0,)
        self.reads = reads          # input indices rules read (None: all; "others")
        self.view = view            # output shares memory with input 0
        self.variadic = variadic    # any number of inputs; one rule, told `argnum`
        self.smooth = smooth        # twice differentiable almost everywhere
        self.tuned = tuned          # vjp rules have a NumPy fast path (`m is NUMPY`)
        self.traced_vjps = None     # tuned: each vjp rule as an op of its own (see below)
        self.read_cache = {}
        # One or two inputs, a rule for each: the backward walk calls the rule itself.
        self.simple = vjps is not None and len(vjps) <= 2 and None not in vjps and not variadic

    def backward(self, node, g, m):
        """Cotangents for the inputs in `node.needs`, reduced to their shapes."""
        rules = self.vjps
        if rules is None:
            raise RuntimeError(f"op '{self.name}' is not differentiable")
        attrs = node.attrs
        if m is NUMPY:
            xs = node.datas
            out = node.out
        else:
            if self.tuned and not engine.state.enabled and engine.state.tracer is not None:
                return self._traced_backward(node, g)
            xs = node.inputs
            out = engine.apply(self, *xs, **attrs) if self.save_out else None
        needs = node.needs
        if len(needs) == 1 and not self.variadic:  # the common case, unrolled
            i = needs[0]
            rule = rules[i]
            if rule is None:
                return (None,)
            if attrs:
                r = rule(m, g, out, *xs, **attrs)
            elif len(xs) == 1:  # called without * and **, which cost three times the call
                r = rule(m, g, out, xs[0])
            elif len(xs) == 2:
                r = rule(m, g, out, xs[0], xs[1])
            else:
                r = rule(m, g, out, *xs)
            if self.broadcast and r.shape != xs[i].shape:
                r = sum_to(m, r, xs[i].shape)
            return (r,)
        results = []
        for i in needs:
            if self.variadic:
                r = rules[0](m, g, out, *xs, argnum=i, **attrs)
            else:
                rule = rules[i]
                if rule is None:
                    results.append(None)
                    continue
                r = rule(m, g, out, *xs, **attrs)
            if self.broadcast and r.shape != xs[i].shape:
                r = sum_to(m, r, xs[i].shape)
            results.append(r)
        return results

    def _traced_backward(self, node, g):
        """A first-order backward traced by rg.jit: each input's rule is one recorded
        op running the NumPy fast path, rather than the generic ops it is built from."""
        xs = node.inputs
        out = engine.apply(self, *xs, **node.attrs) if self.save_out else None
        return tuple(None if self.traced_vjps[i] is None
                     else engine.apply(self.traced_vjps[i], g, out, *xs, **node.attrs)
                     for i in node.needs)

    def __repr__(self) -> str:
        return f"Op({self.name})"


def defop(name, forward, vjps=None, jvps=None, **kw) -> Op:
    op = Op(name, forward, vjps, jvps, **kw)
    OPS[name] = op
    return op


def elementwise(name, forward, *derivs, **kw) -> Op:
    """An element-wise op: g * (local derivative) serves as both vjp and jvp."""
    return defop(name, forward, derivs, derivs, broadcast=len(derivs) > 1, **kw)


# ---------------------------------------------------------------- helpers

def sum_to(m, g, shape):
    """Sum a broadcast gradient back down to `shape`."""
    lead = g.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(
        i + lead for i, s in enumerate(shape) if s == 1 and g.shape[i + lead] != 1)
    if axes:
        g = m.sum(g, axis=axes, keepdims=True)
    if lead or g.shape != tuple(shape):
        g = m.reshape(g, shape=tuple(shape))
    return g


def _axes(axis, ndim):
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, int):
        axis = (axis,)
    return tuple(a % ndim if ndim else a for a in axis)


def _kept_shape(shape, axis):
    axes = _axes(axis, len(shape))
    return tuple(1 if i in axes else s for i, s in enumerate(shape))


def expand_back(m, g, shape, axis, keepdims):
    """Broadcast a reduction's cotangent back over the reduced axes."""
    if not keepdims:
        g = m.reshape(g, shape=_kept_shape(shape, axis))
    return m.expand(g, shape=tuple(shape))


def keep(m, y, shape, axis, keepdims):
    """A reduction's output reshaped with the reduced axes kept (size 1)."""
    return y if keepdims else m.reshape(y, shape=_kept_shape(shape, axis))


def _real_only(x, name):
    if isinstance(x, np.ndarray) and x.dtype.kind == "c":
        raise TypeError(f"'{name}' is not analytic (complex-differentiable), so it cannot be "
                        "used with complex data (method='complex_step')")


# ---------------------------------------------------------------- forwards

def _sigmoid(x):
    if x.dtype.kind == "c":
        return 1.0 / (1.0 + np.exp(-x))
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def _relu(x):
    _real_only(x, "relu")
    return np.maximum(x, 0, dtype=x.dtype) if x.dtype.kind in "fc" else np.maximum(x, 0)


def _abs(x):
    _real_only(x, "abs")
    return np.abs(x)


def _sign(x):
    _real_only(x, "sign")
    return np.sign(x)


def _maximum(x, y):
    _real_only(x, "maximum")
    _real_only(y, "maximum")
    return np.maximum(x, y)


def _minimum(x, y):
    _real_only(x, "minimum")
    _real_only(y, "minimum")
    return np.minimum(x, y)


def _clamp(x, *, lo, hi):
    _real_only(x, "clamp")
    if lo is not None:
        x = np.maximum(x, lo)
    if hi is not None:
        x = np.minimum(x, hi)
    return x


def _tie_share(x, y, winner):
    """Mask for maximum/minimum: 1 where x wins, 1/2 on ties, 0 elsewhere."""
    return winner + 0.5 * (x == y)


def _reduce_max(x, *, axis=None, keepdims=False):
    _real_only(x, "max")
    return np.max(x, axis=axis, keepdims=keepdims)


def _reduce_min(x, *, axis=None, keepdims=False):
    _real_only(x, "min")
    return np.min(x, axis=axis, keepdims=keepdims)


def _extreme_mask(m, out, x, axis, keepdims):
    """Where x attains the max/min, each tie weighted 1/count."""
    hit = m.cast(x == keep(m, out, x.shape, axis, keepdims), dtype=x.dtype)
    return hit / m.sum(hit, axis=axis, keepdims=True)


def _logsumexp(x, *, axis=None, keepdims=False):
    if x.size == 0:
        return np.log(np.sum(np.exp(x), axis=axis, keepdims=keepdims))
    shift = np.max(x.real, axis=axis, keepdims=True)
    shift = np.where(np.isfinite(shift), shift, 0)
    s = np.log(np.sum(np.exp(x - shift), axis=axis, keepdims=True)) + shift
    return s if keepdims else np.squeeze(s, axis=axis)


def _softmax(x, *, axis):
    e = np.exp(x - np.max(x.real, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


@functools.lru_cache(maxsize=64)
def _ones(n: int, dtype: np.dtype) -> np.ndarray:
    one = np.ones(n, dtype=dtype)
    one.flags.writeable = False
    return one


@functools.lru_cache(maxsize=64)
def _arange(n: int) -> np.ndarray:
    r = np.arange(n)
    r.flags.writeable = False
    return r


def _sum_axis(a, axis):
    """Sum of a 1-D or 2-D array over `axis` (0, or 1 for 2-D): for floats a BLAS product
    with ones, several times faster than a ufunc reduction over a short axis, and no
    less exact (both add in order along the axis)."""
    if a.dtype.kind == "f" and a.ndim <= 2:
        return _ones(a.shape[0], a.dtype) @ a if axis == 0 else a @ _ones(a.shape[-1], a.dtype)
    return np.add.reduce(a, axis=axis)


def _sum(x, *, axis=None, keepdims=False):
    if x.dtype.kind in "fc":  # np.sum's wrapper costs more than a small sum itself
        return np.add.reduce(x, axis=axis, keepdims=keepdims)
    return np.sum(x, axis=axis, keepdims=keepdims)


def _log_softmax(x, *, axis):
    s = x - np.max(x.real, axis=axis, keepdims=True)
    return s - np.log(np.sum(np.exp(s), axis=axis, keepdims=True))


def _prod_others(x, axis):
    """Product of all other elements along `axis` (correct with zeros)."""
    if axis is None:
        flat = x.reshape(-1)
        return _prod_others(flat, 0).reshape(x.shape)
    axes = _axes(axis, x.ndim)
    if len(axes) > 1:
        moved = np.moveaxis(x, axes, range(-len(axes), 0))
        lead = moved.shape[:-len(axes)]
        flat = moved.reshape(lead + (-1,))
        r = _prod_others(flat, -1).reshape(moved.shape)
        return np.moveaxis(r, range(-len(axes), 0), axes)
    ax = axes[0]
    ones_shape = list(x.shape)
    ones_shape[ax] = 1
    one = np.ones(ones_shape, dtype=x.dtype)
    left = np.cumprod(np.concatenate([one, np.take(x, range(x.shape[ax] - 1), axis=ax)], ax),
                      axis=ax)
    rev = np.flip(x, ax)
    right = np.cumprod(np.concatenate([one, np.take(rev, range(x.shape[ax] - 1), axis=ax)],
                                      ax), axis=ax)
    return left * np.flip(right, ax)


def _prod_vjp(m, g, out, x, *, axis=None, keepdims=False):
    g = expand_back(m, g, x.shape, axis, keepdims)
    if m is NUMPY:
        return g * _prod_others(x, axis)
    # out / x is undefined at zeros; prod_others is first-order only. A jit trace
    # must not bake in what this call's data says, so it always takes the safe path.
    if engine.state.tracer is not None or np.any(x.data == 0):
        return g * m.prod_others(x, axis=axis)
    return g * keep(m, out, x.shape, axis, keepdims) / x


def _is_basic(idx) -> bool:
    items = idx if isinstance(idx, tuple) else (idx,)
    return all(i is None or i is Ellipsis or isinstance(i, (int, slice, np.integer))
               for i in items)


def _scatter(g, *, idx, shape):
    """Zeros of `shape` with `g` added at `idx` (repeated indices accumulate)."""
    z = np.zeros(shape, dtype=g.dtype)
    if _is_basic(idx):
        z[idx] = g
    else:
        np.add.at(z, idx, g)
    return z


def _setitem(x, v, *, idx):
    y = x.copy()
    y[idx] = v
    return y


def _windows(x, kh, kw, stride, padding, dilation, pad_value):
    sh, sw = stride
    ph, pw = padding
    dh, dw = dilation
    if ph or pw:
        x = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)), constant_values=pad_value)
    n, c, h, w = x.shape
    oh = (h - dh * (kh - 1) - 1) // sh + 1
    ow = (w - dw * (kw - 1) - 1) // sw + 1
    s = x.strides
    return np.lib.stride_tricks.as_strided(
        x, (n, c, kh, kw, oh, ow),
        (s[0], s[1], s[2] * dh, s[3] * dw, s[2] * sh, s[3] * sw), writeable=False)


def _unfold(x, *, kernel, stride, padding, dilation, pad_value=0.0):
    """Sliding windows (N, C, kh, kw, OH, OW) of an NCHW array (im2col, as a view)."""
    return _windows(x, kernel[0], kernel[1], stride, padding, dilation, pad_value)


def _fold(cols, *, shape, kernel, stride, padding, dilation, pad_value=0.0):
    """Adjoint of unfold: add each window back onto an NCHW array of `shape`."""
    n, c, h, w = shape
    kh, kw = kernel
    sh, sw = stride
    ph, pw = padding
    dh, dw = dilation
    oh, ow = cols.shape[-2:]
    z = np.zeros((n, c, h + 2 * ph, w + 2 * pw), dtype=cols.dtype)
    for i in range(kh):  # a loop over kernel offsets, never over pixels
        for j in range(kw):
            z[:, :, i * dh:i * dh + sh * (oh - 1) + 1:sh,
              j * dw:j * dw + sw * (ow - 1) + 1:sw] += cols[:, :, i, j]
    return z[:, :, ph:ph + h, pw:pw + w]


def _einsum_parse(spec, shapes):
    """Explicit subscripts for every operand and the output ('...' expanded)."""
    spec = spec.replace(" ", "")
    if "->" in spec:
        ins, out = spec.split("->")
    else:
        ins, out = spec, None
    terms = ins.split(",")
    if len(terms) != len(shapes):
        raise ValueError(f"einsum '{spec}' names {len(terms)} operands but got {len(shapes)}")
    used = set(c for c in spec if c.isalpha())
    spare = [c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz" if c not in used]
    ell = ""
    if "..." in spec:
        nd = max(len(s) - (len(t) - 3) for t, s in zip(terms, shapes) if "..." in t)
        ell = "".join(spare[:nd])
        terms = [t.replace("...", ell[nd - (len(s) - (len(t) - 3)):]) if "..." in t else t
                 for t, s in zip(terms, shapes)]
        if out is not None:
            out = out.replace("...", ell)
    if out is None:
        counts = {}
        for t in terms:
            for c in t:
                counts[c] = counts.get(c, 0) + 1
        out = ell + "".join(sorted(c for c, k in counts.items() if k == 1 and c not in ell))
    for t, s in zip(terms, shapes):
        if len(t) != len(s):
            raise ValueError(f"einsum '{spec}': operand with subscripts '{t}' has shape {s}")
    return terms, out


def _einsum(*xs, spec):
    terms, out = _einsum_parse(spec, [x.shape for x in xs])
    return np.einsum(",".join(terms) + "->" + out, *xs, optimize=len(xs) > 2)


def _einsum_vjp(m, g, out, *xs, spec, argnum):
    terms, o = _einsum_parse(spec, [x.shape for x in xs])
    mine = terms[argnum]
    if len(set(mine)) != len(mine):
        raise NotImplementedError(
            f"einsum '{spec}': gradient for an operand with a repeated index ('{mine}')")
    others = [t for k, t in enumerate(terms) if k != argnum]
    avail = set(o).union(*others) if others else set(o)
    reduced = "".join(c for c in mine if c in avail)
    sub = ",".join([o] + others) + "->" + reduced
    r = m.einsum(g, *[x for k, x in enumerate(xs) if k != argnum], spec=sub)
    if reduced != mine:
        shape = tuple(xs[argnum].shape[mine.index(c)] if c in reduced else 1 for c in mine)
        r = m.reshape(m.einsum(r, spec=f"{reduced}->{''.join(c for c in mine if c in reduced)}"),
                      shape=shape)
        r = m.expand(r, shape=xs[argnum].shape)
    return r


def _einsum_jvp(m, t, out, *xs, spec, argnum):
    args = list(xs)
    args[argnum] = t
    lead = t.ndim - xs[argnum].ndim
    if not lead:
        return m.einsum(*args, spec=spec)
    terms, o = _einsum_parse(spec, [x.shape for x in xs])
    used = set("".join(terms) + o)
    batch = "".join([c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                     if c not in used][:lead])
    terms[argnum] = batch + terms[argnum]
    return m.einsum(*args, spec=",".join(terms) + "->" + batch + o)


def _mT(m, a):
    axes = tuple(range(a.ndim - 2)) + (a.ndim - 1, a.ndim - 2)
    return m.permute(a, axes=axes)


def _matmul_vjp_x(m, g, out, x, y):
    if x.ndim == 1 and y.ndim == 1:
        return g * y
    if y.ndim == 1:   # (..., n, k) @ (k,) -> (..., n)
        gx = m.reshape(g, shape=g.shape + (1,)) * y
    elif x.ndim == 1:  # (k,) @ (..., k, n) -> (..., n)
        gx = m.matmul(y, m.reshape(g, shape=g.shape + (1,)))
        gx = m.reshape(gx, shape=gx.shape[:-1])
    else:
        gx = m.matmul(g, _mT(m, y))
    return sum_to(m, gx, x.shape) if gx.shape != x.shape else gx


def _matmul_vjp_y(m, g, out, x, y):
    if x.ndim == 1 and y.ndim == 1:
        return g * x
    if x.ndim == 1:   # (k,) @ (..., k, n)
        gy = m.reshape(x, shape=x.shape + (1,)) * m.reshape(g, shape=g.shape[:-1] + (1,)
                                                            + g.shape[-1:])
    elif y.ndim == 1:  # (..., n, k) @ (k,)
        gy = m.matmul(_mT(m, x), m.reshape(g, shape=g.shape + (1,)))
        gy = m.reshape(gy, shape=gy.shape[:-1])
    else:
        gy = m.matmul(_mT(m, x), g)
    return sum_to(m, gy, y.shape) if gy.shape != y.shape else gy


def _inverse(axes):
    inv = [0] * len(axes)
    for i, a in enumerate(axes):
        inv[a] = i
    return tuple(inv)


def _cast(x, *, dtype):
    return x.astype(dtype)


def _cat(*xs, axis):
    return np.concatenate(xs, axis=axis)


def _cat_vjp(m, g, out, *xs, axis, argnum):
    start = sum(x.shape[axis] for x in xs[:argnum])
    idx = (slice(None),) * (axis % g.ndim) + (slice(start, start + xs[argnum].shape[axis]),)
    return m.getitem(g, idx=idx)


def _zeros_like(x):
    return np.zeros_like(x)


# ---------------------------------------------------------------- jvp helpers
#
# A jvp rule's tangent may carry leading batch dimensions beyond its primal's
# shape (jacfwd, jacrev and hessian push a whole basis of tangents at once).
# Rules are written so that such dimensions pass through untouched: `lead` is
# their count, reductions use axes counted from the end, and shapes and
# indices get the batch prefixed. With no batch (lead 0) each rule is the plain one.

def _neg_axes(axis, ndim):
    """Reduction axes counted from the end, so leading batch dimensions are left alone."""
    return tuple(a - ndim for a in _axes(axis, ndim))


def _reduce_jvp(local):
    """jvp of a reduction: sum of the tangent times the local derivative over `axis`."""
    def rule(m, t, out, x, *, axis=None, keepdims=False):
        return m.sum(t * local(m, out, x, axis, keepdims), axis=_neg_axes(axis, x.ndim),
                     keepdims=keepdims)
    return rule


def _reshape_jvp(m, t, out, x, *, shape):
    return m.reshape(t, shape=t.shape[:t.ndim - x.ndim] + tuple(shape))


def _permute_jvp(m, t, out, x, *, axes):
    lead = t.ndim - x.ndim
    return m.permute(t, axes=tuple(range(lead)) + tuple(a % x.ndim + lead for a in axes))


def _expand_jvp(m, t, out, x, *, shape):
    lead = t.ndim - x.ndim
    if lead and len(shape) > x.ndim:
        t = m.reshape(t, shape=t.shape[:lead] + (1,) * (len(shape) - x.ndim) + x.shape)
    return m.expand(t, shape=t.shape[:lead] + tuple(shape))


def _batch_idx(idx, lead):
    """`idx` for an array with `lead` more leading dimensions; None where NumPy would move
    separated advanced indices to the front (the batch then goes last instead)."""
    if lead == 0:
        return idx
    items = idx if isinstance(idx, tuple) else (idx,)
    adv = [k for k, i in enumerate(items)
           if not (i is None or i is Ellipsis or isinstance(i, slice))]
    if any(isinstance(items[k], np.ndarray) for k in adv) and adv[-1] - adv[0] + 1 != len(adv):
        return None
    return (slice(None),) * lead + items


def _no_ellipsis(idx, ndim):
    """`idx` with its Ellipsis spelled out, so extra trailing dimensions are left alone."""
    items = idx if isinstance(idx, tuple) else (idx,)
    if not any(i is Ellipsis for i in items):
        return items
    used = sum(i.ndim if isinstance(i, np.ndarray) and i.dtype == np.bool_ else 1
               for i in items if i is not None and i is not Ellipsis)
    k = next(k for k, i in enumerate(items) if i is Ellipsis)
    return items[:k] + (slice(None),) * (ndim - used) + items[k + 1:]


def _batch_last(m, t, lead):
    return m.permute(t, axes=tuple(range(lead, t.ndim)) + tuple(range(lead)))


def _batch_first(m, r, lead):
    n = r.ndim
    return m.permute(r, axes=tuple(range(n - lead, n)) + tuple(range(n - lead)))


def _getitem_jvp(m, t, out, x, *, idx):
    lead = t.ndim - x.ndim
    b = _batch_idx(idx, lead)
    if b is not None:
        return m.getitem(t, idx=b)
    r = m.getitem(_batch_last(m, t, lead), idx=_no_ellipsis(idx, x.ndim))
    return _batch_first(m, r, lead)


def _scatter_jvp(m, t, out, g, *, idx, shape):
    lead = t.ndim - g.ndim
    b = _batch_idx(idx, lead)
    if b is not None:
        return m.scatter(t, idx=b, shape=t.shape[:lead] + tuple(shape))
    r = m.scatter(_batch_last(m, t, lead), idx=_no_ellipsis(idx, len(shape)),
                  shape=tuple(shape) + t.shape[:lead])
    return _batch_first(m, r, lead)


def _setitem_jvp_x(m, t, out, x, v, *, idx):
    lead = t.ndim - x.ndim
    b = _batch_idx(idx, lead)
    if b is not None:
        return m.setitem(t, 0.0, idx=b)
    r = m.setitem(_batch_last(m, t, lead), 0.0, idx=_no_ellipsis(idx, x.ndim))
    return _batch_first(m, r, lead)


def _setitem_jvp_v(m, t, out, x, v, *, idx):
    lead = t.ndim - np.ndim(v)
    zeros = m.zeros_like(out)
    if not lead:
        return m.setitem(zeros, t, idx=idx)
    batch = t.shape[:lead]
    region = np.empty(out.shape, dtype=np.bool_)[idx].shape
    t = m.reshape(t, shape=batch + (1,) * (len(region) - np.ndim(v)) + t.shape[lead:])
    t = m.expand(t, shape=batch + region)
    zeros = m.expand(zeros, shape=batch + out.shape)
    b = _batch_idx(idx, lead)
    if b is not None:
        return m.setitem(zeros, t, idx=b)
    r = m.setitem(_batch_last(m, zeros, lead), _batch_last(m, t, lead),
                  idx=_no_ellipsis(idx, out.ndim))
    return _batch_first(m, r, lead)


def _cat_jvp(m, t, out, *xs, axis, argnum):
    x = xs[argnum]
    lead = t.ndim - x.ndim
    ax = axis % x.ndim
    start = sum(y.shape[ax] for y in xs[:argnum])
    idx = (slice(None),) * (lead + ax) + (slice(start, start + x.shape[ax]),)
    return m.scatter(t, idx=idx, shape=t.shape[:lead] + out.shape)


def _mm_flat(m, t, y):
    """t (..., k) @ y (k, n) as one matrix product over all leading dimensions."""
    rows = int(np.prod(t.shape[:-1]))
    r = m.matmul(m.reshape(t, shape=(rows, t.shape[-1])), y)
    return m.reshape(r, shape=t.shape[:-1] + (y.shape[-1],))


def _matmul_jvp_x(m, t, out, x, y):
    lead = t.ndim - x.ndim
    if not lead:
        return m.matmul(t, y)
    batch = t.shape[:lead]
    if y.ndim == 2:  # (batch..., x..., k) @ (k, n): one matrix product
        return _mm_flat(m, t, y)
    y2 = y if y.ndim > 1 else m.reshape(y, shape=y.shape + (1,))
    x2 = x.shape if x.ndim > 1 else (1,) + x.shape  # a vector is a one-row matrix
    nb = max(len(x2), y2.ndim) - 2                   # matmul's own broadcast dimensions
    r = m.matmul(m.reshape(t, shape=batch + (1,) * (nb - len(x2) + 2) + x2), y2)
    return r if r.shape == batch + out.shape else m.reshape(r, shape=batch + out.shape)


def _matmul_jvp_y(m, t, out, x, y):
    lead = t.ndim - y.ndim
    if not lead:
        return m.matmul(x, t)
    batch = t.shape[:lead]
    if x.ndim == 2:  # x @ t_b for every b, as (t_b^T @ x^T)^T: one matrix product
        if y.ndim == 1:
            return _mm_flat(m, t, _mT(m, x))
        return _mT(m, _mm_flat(m, _mT(m, t), _mT(m, x)))
    x2 = x if x.ndim > 1 else m.reshape(x, shape=(1,) + x.shape)
    y2 = y.shape if y.ndim > 1 else y.shape + (1,)   # a vector is a one-column matrix
    nb = max(x2.ndim, len(y2)) - 2
    r = m.matmul(x2, m.reshape(t, shape=batch + (1,) * (nb - len(y2) + 2) + y2))
    return r if r.shape == batch + out.shape else m.reshape(r, shape=batch + out.shape)


def _unfold_jvp(m, t, out, x, *, pad_value=0.0, **k):
    # the padding holds a constant (-inf for max pooling): its tangent is 0
    lead = t.ndim - x.ndim
    if not lead:
        return m.unfold(t, pad_value=0.0, **k)
    batch = t.shape[:lead]
    t = m.reshape(t, shape=(int(np.prod(batch)) * x.shape[0],) + x.shape[1:])
    return m.reshape(m.unfold(t, pad_value=0.0, **k), shape=batch + out.shape)


def _fold_jvp(m, t, out, cols, *, shape, **k):
    lead = t.ndim - cols.ndim
    if not lead:
        return m.fold(t, shape=shape, **k)
    batch = t.shape[:lead]
    n = int(np.prod(batch)) * shape[0]
    r = m.fold(m.reshape(t, shape=(n,) + cols.shape[1:]), shape=(n,) + tuple(shape[1:]), **k)
    return m.reshape(r, shape=batch + tuple(shape))


# ---------------------------------------------------------------- the table

# Element-wise, one input. The rule is g times the local derivative.
neg = elementwise("neg", np.negative, lambda m, g, out, x: -g)
exp = elementwise("exp", np.exp, lambda m, g, out, x: g * out, save_out=True, reads=())
log = elementwise("log", np.log, lambda m, g, out, x: g / x)
log1p = elementwise("log1p", np.log1p, lambda m, g, out, x: g / (x + 1.0))
sqrt = elementwise("sqrt", np.sqrt, lambda m, g, out, x: g * 0.5 / out, save_out=True,
                   reads=())
sin = elementwise("sin", np.sin, lambda m, g, out, x: g * m.cos(x))
cos = elementwise("cos", np.cos, lambda m, g, out, x: -g * m.sin(x))
# tan and tanh: g + g*y*y rather than g * (1 + y*y): a Python number costs NumPy more
# than a whole small array does.
tan = elementwise("tan", np.tan, lambda m, g, out, x: g + g * out * out, save_out=True,
                  reads=())
tanh = elementwise("tanh", np.tanh, lambda m, g, out, x: g - g * out * out, save_out=True,
                   reads=())
sigmoid = elementwise("sigmoid", _sigmoid, lambda m, g, out, x: g * out * (1.0 - out),
                      save_out=True, reads=())
relu = elementwise("relu", _relu, lambda m, g, out, x: g * (out > 0), save_out=True, reads=(),
                   smooth=False)
abs_ = elementwise("abs", _abs, lambda m, g, out, x: g * m.sign(x), smooth=False)
sign = defop("sign", _sign, (lambda m, g, out, x: g * 0.0,), (lambda m, g, out, x: g * 0.0,),
             smooth=False)
clamp = elementwise("clamp", _clamp,
                    lambda m, g, out, x, lo, hi: g * (out == x), save_out=True,
                    smooth=False)

# Element-wise, two inputs (broadcasting undone by Op.backward).
add = elementwise("add", np.add, lambda m, g, out, x, y: g, lambda m, g, out, x, y: g, reads=())
sub = elementwise("sub", np.subtract, lambda m, g, out, x, y: g, lambda m, g, out, x, y: -g,
                  reads=())
mul = elementwise("mul", np.multiply, lambda m, g, out, x, y: g * y,
                  lambda m, g, out, x, y: g * x, reads="others")
div = elementwise("div", np.true_divide, lambda m, g, out, x, y: g / y,
                  lambda m, g, out, x, y: -g * out / y, save_out=True, reads=(1,))
pow_ = elementwise("pow", np.power,
                   lambda m, g, out, x, y: g * y * x ** (y - 1),
                   lambda m, g, out, x, y: g * m.where(x == 0, 0.0, out * m.log(
                       m.where(x == 0, 1.0, x))),
                   save_out=True)
maximum = elementwise("maximum", _maximum,
                      lambda m, g, out, x, y: g * _tie_share(x, y, x > y),
                      lambda m, g, out, x, y: g * _tie_share(x, y, y > x),
                      smooth=False)
minimum = elementwise("minimum", _minimum,
                      lambda m, g, out, x, y: g * _tie_share(x, y, x < y),
                      lambda m, g, out, x, y: g * _tie_share(x, y, y < x),
                      smooth=False)
where = elementwise("where", np.where, None,
                    lambda m, g, out, c, x, y: m.where(c, g, 0.0),
                    lambda m, g, out, c, x, y: m.where(c, 0.0, g), reads=(0,))

# Reductions.
sum_ = defop(
    "sum", _sum,
    (lambda m, g, out, x, *, axis=None, keepdims=False: expand_back(m, g, x.shape, axis,
                                                                    keepdims),),
    (lambda m, t, out, x, *, axis=None, keepdims=False: m.sum(
        t, axis=_neg_axes(axis, x.ndim), keepdims=keepdims),),
    reads=())
prod = defop(
    "prod", lambda x, *, axis=None, keepdims=False: np.prod(x, axis=axis, keepdims=keepdims),
    (_prod_vjp,),
    (_reduce_jvp(lambda m, out, x, axis, keepdims: _prod_vjp(
        m, m.ones_like(out), out, x, axis=axis, keepdims=keepdims)),), save_out=True, tuned=True)
prod_others = defop(
    "prod_others", lambda x, *, axis=None: _prod_others(x, axis), None)
max_ = defop(
    "max", _reduce_max,
    (lambda m, g, out, x, *, axis=None, keepdims=False: expand_back(
        m, g, x.shape, axis, keepdims) * _extreme_mask(m, out, x, axis, keepdims),),
    (_reduce_jvp(_extreme_mask),),
    save_out=True, smooth=False)
min_ = defop("min", _reduce_min, max_.vjps, max_.jvps, save_out=True, smooth=False)
logsumexp = defop(
    "logsumexp", _logsumexp,
    (lambda m, g, out, x, *, axis=None, keepdims=False: expand_back(
        m, g, x.shape, axis, keepdims) * m.exp(x - keep(m, out, x.shape, axis, keepdims)),),
    (_reduce_jvp(lambda m, out, x, axis, keepdims: m.exp(
        x - keep(m, out, x.shape, axis, keepdims))),),
    save_out=True)
softmax = defop(
    "softmax", _softmax,
    (lambda m, g, out, x, *, axis: out * (g - m.sum(g * out, axis=axis, keepdims=True)),),
    (lambda m, t, out, x, *, axis: out * (t - m.sum(t * out, axis=_neg_axes(axis, x.ndim),
                                                    keepdims=True)),),
    save_out=True, reads=())
log_softmax = defop(
    "log_softmax", _log_softmax,
    (lambda m, g, out, x, *, axis: g - m.exp(out) * m.sum(g, axis=axis, keepdims=True),),
    (lambda m, t, out, x, *, axis: t - m.sum(m.exp(out) * t, axis=_neg_axes(axis, x.ndim),
                                                keepdims=True),),
    save_out=True, reads=())

# Shape and indexing: linear, so each jvp is the op applied to the tangent.
reshape = defop(
    "reshape", lambda x, *, shape: np.reshape(x, shape),
    (lambda m, g, out, x, *, shape: m.reshape(g, shape=x.shape),),
    (_reshape_jvp,), reads=(), view=True)
permute = defop(
    "permute", lambda x, *, axes: np.transpose(x, axes),
    (lambda m, g, out, x, *, axes: m.permute(g, axes=_inverse(axes)),),
    (_permute_jvp,), reads=(), view=True)
broadcast_to = defop(
    "expand", lambda x, *, shape: np.broadcast_to(x, shape),
    (lambda m, g, out, x, *, shape: sum_to(m, g, x.shape),),
    (_expand_jvp,), reads=(), view=True)
getitem = defop(
    "getitem", lambda x, *, idx: x[idx],
    (lambda m, g, out, x, *, idx: m.scatter(g, idx=idx, shape=x.shape),),
    (_getitem_jvp,), reads=(), view=True)
scatter = defop(
    "scatter", _scatter,
    (lambda m, g, out, x, *, idx, shape: m.getitem(g, idx=idx),),
    (_scatter_jvp,), reads=())
setitem = defop(
    "setitem", _setitem,
    (lambda m, g, out, x, v, *, idx: m.setitem(g, 0.0, idx=idx),
     lambda m, g, out, x, v, *, idx: sum_to(m, m.getitem(g, idx=idx), v.shape)),
    (_setitem_jvp_x, _setitem_jvp_v),
    reads=(), save_out=False)
cat = defop("cat", _cat, (_cat_vjp,), (_cat_jvp,), reads=(), variadic=True)
cast = defop("cast", _cast,
             (lambda m, g, out, x, *, dtype: m.cast(g, dtype=x.dtype),),
             (lambda m, t, out, x, *, dtype: m.cast(t, dtype=dtype),), reads=())
zeros_like = defop("zeros_like", _zeros_like, (None,), (None,), reads=())
ones_like = defop("ones_like", np.ones_like, (None,), (None,), reads=())

# Linear algebra.
matmul = defop("matmul", np.matmul, (_matmul_vjp_x, _matmul_vjp_y),
               (_matmul_jvp_x, _matmul_jvp_y))
einsum = defop("einsum", _einsum, (_einsum_vjp,), (_einsum_jvp,), variadic=True)

# Sliding windows for convolution and pooling (im2col and its adjoint).
unfold = defop(
    "unfold", _unfold,
    (lambda m, g, out, x, **k: m.fold(g, shape=x.shape, **k),),
    (_unfold_jvp,), reads=())
fold = defop(
    "fold", _fold,
    (lambda m, g, out, x, *, shape, pad_value=0.0, **k: m.unfold(g, **k),),  # pad: zeros
    (_fold_jvp,), reads=())

# Layers: fused for speed (one node instead of three or more); rules in table ops.
def _linear(x, w, b):
    out = np.matmul(x, w.T)
    if b is not None:
        if b.dtype == out.dtype or out.dtype == np.result_type(out, b):
            out += b
        else:
            out = out + b
    return out


def _as_rows(m, a):
    """An (..., k) operand as (rows, k); a 1-D one as one row."""
    return a if a.ndim == 2 else m.reshape(a, shape=(-1, a.shape[-1]))


def _linear_vjp_w(m, g, out, x, w, b):
    if m is NUMPY and g.ndim == 2 and x.ndim == 2:
        return np.matmul(g.T, x)  # the hot path, without the namespace's wrappers
    return m.matmul(m.permute(_as_rows(m, g), axes=(1, 0)), _as_rows(m, x))


def _linear_vjp_b(m, g, out, x, w, b):
    if g.ndim == 1:
        return g
    if m is NUMPY and g.ndim == 2:
        return _sum_axis(g, 0)  # the hot path
    return m.sum(g, axis=tuple(range(g.ndim - 1)))


def _labels(y):
    return y if isinstance(y, np.ndarray) else y.data


# The last forward's softmax, kept for its backward: (weak reference to z, softmax(z)).
# Recomputing it costs as much as the forward itself (per-row reductions over few
# classes are slow in NumPy). A backward takes it only for the very array the forward
# saw, and only once; otherwise it recomputes.
_xent_saved = None


class LabelError(IndexError):
    """A class label outside [0, classes)."""


def _check_labels(y, classes, name):
    if y.size and (np.minimum.reduce(y, axis=None) < 0
                   or np.maximum.reduce(y, axis=None) >= classes):
        v = int(y[(y < 0) | (y >= classes)][0])
        raise LabelError(f"{name}: target {v} is out of bounds: the input has {classes} "
                         f"classes, so targets must be in [0, {classes - 1}]")


def _cross_entropy(z, y, *, reduction, smoothing):
    global _xent_saved
    _check_labels(y, z.shape[1], "cross_entropy")
    # ufunc reductions directly: np.sum/np.mean wrappers cost more than the maths here
    e = None
    if z.dtype.kind == "f" and z.size:
        # One shift for all rows (one max over the array costs far less than one per
        # row). Exact unless a row's exponentials all but vanish: then shift per row.
        shift = z - np.maximum.reduce(z, axis=None)
        e = np.exp(shift)
        total = _sum_axis(e, 1)
        if not np.minimum.reduce(total) >= 2e-9:  # also catches inf and nan
            e = None
    if e is None:
        shift = z - np.maximum.reduce(z.real, axis=1, keepdims=True)
        e = np.exp(shift)
        total = _sum_axis(e, 1)
    loss = np.log(total)
    total = total[:, None]
    picked = shift[_arange(len(y)), y]
    if smoothing:
        loss -= (1.0 - smoothing) * picked + (smoothing / z.shape[1]) * np.add.reduce(shift, 1)
    else:
        loss -= picked
    e /= total
    _xent_saved = (weakref.ref(z), e)
    if reduction == "none":
        return loss
    total = _sum_axis(loss, 0)
    return total / len(y) if reduction == "mean" else total


def _xent_residual(m, z, y, smoothing, saved=None):
    """softmax(z) - q, q the (smoothed) one-hot targets: d(loss_n)/d(z_n)."""
    if m is NUMPY:
        y = _labels(y)
        rows = _arange(len(y))
        if saved is not None and saved[0]() is z:
            r = saved[1]
        else:
            r = np.exp(z - np.maximum.reduce(z.real, axis=1, keepdims=True))
            r /= _sum_axis(r, 1)[:, None]
        r[rows, y] -= 1.0 - smoothing
        if smoothing:
            r -= smoothing / z.shape[1]
        return r
    # the targets as an op on `y`, not an array made from y's values: a traced
    # (rg.jit) backward must read the labels of each call, not the first call's
    q = m.one_hot(y, classes=z.shape[1], dtype=z.dtype)
    if smoothing:
        q = q * (1.0 - smoothing) + smoothing / z.shape[1]
    return m.softmax(z, axis=1) - q


def _xent_vjp(m, g, out, z, y, *, reduction, smoothing):
    global _xent_saved
    saved = None
    if m is NUMPY:
        saved, _xent_saved = _xent_saved, None  # used once: this backward owns it now
    r = _xent_residual(m, z, y, smoothing, saved)
    if reduction == "none":
        return r * m.reshape(g, shape=(z.shape[0], 1))
    if reduction == "mean":
        g = g / z.shape[0]
    if m is NUMPY:
        r *= g
        return r
    return r * g


def _xent_jvp(m, t, out, z, y, *, reduction, smoothing):
    d = m.sum(_xent_residual(m, z, y, smoothing) * t, axis=-1)  # axes from the end: batchable
    if reduction == "none":
        return d
    return m.sum(d, axis=-1) / z.shape[0] if reduction == "mean" else m.sum(d, axis=-1)


def _linear_jvp_w(m, t, out, x, w, b):
    lead = t.ndim - 2
    tT = m.permute(t, axes=tuple(range(lead)) + (lead + 1, lead))
    if lead and x.ndim > 2:  # keep x's own leading dimensions apart from the batch
        tT = m.reshape(tT, shape=t.shape[:lead] + (1,) * (x.ndim - 2) + tT.shape[lead:])
    return m.matmul(x, tT)


linear = defop(
    "linear", _linear,
    (lambda m, g, out, x, w, b: m.matmul(g, w), _linear_vjp_w, _linear_vjp_b),
    (lambda m, t, out, x, w, b: m.matmul(t, m.permute(w, axes=(1, 0))), _linear_jvp_w,
     lambda m, t, out, x, w, b: _expand_jvp(m, t, out, b, shape=out.shape)), tuned=True)


def _one_hot(y, *, classes, dtype):
    _check_labels(y, classes, "one_hot")
    q = np.zeros(y.shape + (classes,), dtype=dtype)
    np.put_along_axis(q, y[..., None], 1, axis=-1)
    return q


one_hot = defop("one_hot", _one_hot, None)
cross_entropy = defop("cross_entropy", _cross_entropy, (_xent_vjp, None), (_xent_jvp, None),
                      tuned=True)

def _pool_view(x, kernel):
    """Non-overlapping windows of an NCHW array as (N, C, OH, kh, OW, kw); a view, any strides."""
    n, c, h, w = x.shape[-4:]
    kh, kw = kernel
    oh, ow = h // kh, w // kw
    if oh * kh != h or ow * kw != w:  # PyTorch's floor mode: the remainder is dropped
        x = x[..., :oh * kh, :ow * kw]
    return x.reshape(x.shape[:-4] + (n, c, oh, kh, ow, kw))


def _max_pool2d(x, *, kernel):
    _real_only(x, "max_pool2d")
    win = _pool_view(x, kernel)
    out = win[..., 0, :, 0].copy()
    for i in range(kernel[0]):  # one maximum per window offset: multi-axis reductions over
        for j in range(kernel[1]):  # strided middle axes are far slower in NumPy
            if i or j:
                np.maximum(out, win[..., i, :, j], out=out)
    return out


def _pool_share(m, x, out, kernel):
    """Where each window attains its max, ties weighted 1/count: (N, C, OH, kh, OW, kw)."""
    n, c, oh, ow = out.shape
    win = _pool_view(x, kernel) if m is NUMPY else m.reshape(
        _pool_trim(m, x, kernel, oh, ow), shape=(n, c, oh, kernel[0], ow, kernel[1]))
    hit = m.cast(m.eq(win, m.reshape(out, shape=(n, c, oh, 1, ow, 1))), dtype=x.dtype)
    return hit / m.sum(hit, axis=(3, 5), keepdims=True)


def _pool_trim(m, a, kernel, oh, ow):
    h, w = oh * kernel[0], ow * kernel[1]
    if a.shape[-2:] == (h, w):
        return a
    return m.getitem(a, idx=(Ellipsis, slice(0, h), slice(0, w)))


def _max_pool2d_vjp(m, g, out, x, *, kernel):
    kh, kw = kernel
    if m is NUMPY:  # per-offset loops again; same result as the general rule below
        win = _pool_view(x, kernel)
        hits = [win[..., i, :, j] == out for i in range(kh) for j in range(kw)]
        count = hits[0].astype(g.dtype)
        for hit in hits[1:]:
            count += hit
        share = g / count
        gx = np.zeros(x.shape, dtype=share.dtype)
        gwin = _pool_view(gx, kernel)
        for k, hit in enumerate(hits):
            np.multiply(hit, share, out=gwin[..., k // kw, :, k % kw])
        return gx
    n, c, oh, ow = out.shape
    r = _pool_share(m, x, out, kernel) * m.reshape(g, shape=(n, c, oh, 1, ow, 1))
    r = m.reshape(r, shape=(n, c, oh * kh, ow * kw))
    if r.shape != x.shape:
        r = m.scatter(r, idx=(Ellipsis, slice(0, oh * kh), slice(0, ow * kw)), shape=x.shape)
    return r


def _max_pool2d_jvp(m, t, out, x, *, kernel):
    n, c, oh, ow = out.shape[-4:]
    tw = _pool_trim(m, t, kernel, oh, ow)
    tw = m.reshape(tw, shape=tw.shape[:-4] + (n, c, oh, kernel[0], ow, kernel[1]))
    return m.sum(_pool_share(m, x, out, kernel) * tw, axis=(-3, -1))


max_pool2d = defop("max_pool2d", _max_pool2d, (_max_pool2d_vjp,), (_max_pool2d_jvp,),
                   save_out=True, smooth=False, tuned=True)

# Not differentiable: results carry no gradient.
for _name, _fn in [("eq", np.equal), ("ne", np.not_equal), ("lt", np.less),
                   ("le", np.less_equal), ("gt", np.greater), ("ge", np.greater_equal)]:
    defop(_name, _fn, None, None)
defop("argmax", lambda x, *, axis=None, keepdims=False: np.argmax(x, axis=axis,
                                                                  keepdims=keepdims),
      None, None)
defop("argmin", lambda x, *, axis=None, keepdims=False: np.argmin(x, axis=axis,
                                                                  keepdims=keepdims),
      None, None)


def _vjp_as_op(op: Op, i: int) -> Op | None:
    """Input `i`'s vjp of a tuned op as an op `(g, out, *inputs) -> cotangent`."""
    rule = op.vjps[0] if op.variadic else op.vjps[i]
    if rule is None:
        return None
    if not op.variadic and not op.broadcast:  # the rule itself, with m bound: no wrapper
        return defop(f"{op.name}_vjp{i}", functools.partial(rule, NUMPY))

    def forward(g, out, *xs, **attrs):
        if op.variadic:
            attrs["argnum"] = i
        r = rule(NUMPY, g, out, *xs, **attrs)
        if op.broadcast and r.shape != xs[i].shape:
            r = sum_to(NUMPY, r, xs[i].shape)
        return r

    return defop(f"{op.name}_vjp{i}", forward)


# ---------------------------------------------------------------- namespaces

def _namespace(make) -> SimpleNamespace:
    return SimpleNamespace(**{name: make(op) for name, op in OPS.items()})


NUMPY = _namespace(lambda op: op.forward)
"""Rules computing on arrays: each op's NumPy forward."""

for _op in [o for o in OPS.values() if o.tuned]:
    _op.traced_vjps = tuple(_vjp_as_op(_op, i) for i in range(len(_op.vjps)))


def _tensor_fn(op):
    def fn(*inputs, **attrs):
        return engine.apply(op, *inputs, **attrs)

    fn.__name__ = op.name
    return fn


TENSOR = _namespace(_tensor_fn)
"""Rules computing on tensors: each op recorded, so the backward is differentiable."""
