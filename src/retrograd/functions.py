"""The public functional API (`rg.exp`, `rg.sum`, ...), each a thin call into the op table.

These functions normalise PyTorch-style and NumPy-style arguments (`dim` or
`axis`, `keepdim` or `keepdims`) and apply a primitive from `ops.py`; a few
(`mean`, `var`, `stack`, `split`, `conv2d`, ...) are compositions of
primitives and so need no derivative of their own.
"""

from __future__ import annotations

import builtins
import math
from collections.abc import Sequence

import numpy as np

from . import ops
from .engine import apply, apply1
from .tensor import Tensor, as_tensor


def _t(x) -> Tensor:
    return x if isinstance(x, Tensor) else as_tensor(x)


def _dims(dim, axis, ndim, name):
    if dim is not None and axis is not None:
        raise TypeError(f"{name}() got both 'dim' and 'axis'; pass one of them")
    d = dim if dim is not None else axis
    if d is None:
        return None
    items = tuple(d) if isinstance(d, (tuple, list)) else (d,)
    out = []
    for a in items:
        if not isinstance(a, (int, np.integer)):
            raise TypeError(f"{name}(): dim must be an int or a tuple of ints, got {a!r}")
        if not -builtins.max(ndim, 1) <= a < builtins.max(ndim, 1):
            raise IndexError(f"{name}(): dim {a} is out of range for a tensor with {ndim} "
                             "dimension(s)")
        out.append(int(a) % builtins.max(ndim, 1))
    if len(set(out)) != len(out):
        raise ValueError(f"{name}(): dim {d} repeats a dimension")
    return out[0] if isinstance(d, (int, np.integer)) else tuple(out)


def _keep(keepdim, keepdims):
    return bool(keepdims) if keepdims is not None else bool(keepdim)


# ---------------------------------------------------------------- element-wise

def exp(x) -> Tensor:
    return apply1(ops.exp, x if x.__class__ is Tensor else _t(x))


def log(x) -> Tensor:
    return apply1(ops.log, x if x.__class__ is Tensor else _t(x))


def log1p(x) -> Tensor:
    return apply1(ops.log1p, x if x.__class__ is Tensor else _t(x))


def sqrt(x) -> Tensor:
    return apply1(ops.sqrt, x if x.__class__ is Tensor else _t(x))


def abs(x) -> Tensor:  # noqa: A001 - the NumPy/PyTorch name
    return apply1(ops.abs_, x if x.__class__ is Tensor else _t(x))


def sin(x) -> Tensor:
    return apply1(ops.sin, x if x.__class__ is Tensor else _t(x))


def cos(x) -> Tensor:
    return apply1(ops.cos, x if x.__class__ is Tensor else _t(x))


def tan(x) -> Tensor:
    return apply1(ops.tan, x if x.__class__ is Tensor else _t(x))


def tanh(x) -> Tensor:
    return apply1(ops.tanh, x if x.__class__ is Tensor else _t(x))


def sigmoid(x) -> Tensor:
    return apply1(ops.sigmoid, x if x.__class__ is Tensor else _t(x))


def relu(x) -> Tensor:
    return apply1(ops.relu, x if x.__class__ is Tensor else _t(x))


def sign(x) -> Tensor:
    return apply1(ops.sign, x if x.__class__ is Tensor else _t(x))


def maximum(x, y) -> Tensor:
    return apply(ops.maximum, _t(x), _t(y))


def minimum(x, y) -> Tensor:
    return apply(ops.minimum, _t(x), _t(y))


def clamp(x, min=None, max=None) -> Tensor:  # noqa: A002 - PyTorch's names
    """Limit values to [min, max]; the gradient passes at the bounds themselves."""
    if min is None and max is None:
        raise ValueError("clamp() needs at least one of 'min' and 'max'")
    if min is not None and max is not None and min > max:
        raise ValueError(f"clamp(): min ({min}) is greater than max ({max})")
    return apply(ops.clamp, _t(x), lo=min, hi=max)


clip = clamp


def where(condition, x, y) -> Tensor:
    c = _t(condition)
    if c.dtype != np.bool_:
        raise TypeError(f"where(): condition must be a bool tensor, got {c.dtype}")
    return apply(ops.where, c, *_pair(x, y))


def _pair(x, y):
    """Two operands as tensors or Python numbers (numbers do not upcast a tensor)."""
    if not isinstance(x, Tensor) and not isinstance(y, Tensor):
        x = as_tensor(x)
    return (x if isinstance(x, (Tensor, int, float, complex)) else as_tensor(x),
            y if isinstance(y, (Tensor, int, float, complex)) else as_tensor(y))


# ---------------------------------------------------------------- reductions

def sum(x, dim=None, keepdim=False, *, axis=None, keepdims=None, dtype=None) -> Tensor:  # noqa: A001
    x = _t(x)
    if dtype is not None:
        x = x.to(dtype)
    elif x.dtype.kind in "bi":
        x = x.to(np.int64)
    return apply(ops.sum_, x, axis=_dims(dim, axis, x.ndim, "sum"), keepdims=_keep(keepdim,
                                                                                   keepdims))


def _count(shape, axis):
    if axis is None:
        return math.prod(shape)
    axes = axis if isinstance(axis, tuple) else (axis,)
    return math.prod(shape[a] for a in axes)


def mean(x, dim=None, keepdim=False, *, axis=None, keepdims=None) -> Tensor:
    x = _t(x)
    if x.dtype.kind not in "fc":
        raise TypeError(f"mean() needs a floating tensor, got {x.dtype}; convert with .float()")
    ax = _dims(dim, axis, x.ndim, "mean")
    return apply(ops.sum_, x, axis=ax, keepdims=_keep(keepdim, keepdims)) / _count(x.shape, ax)


def var(x, dim=None, keepdim=False, *, correction=None, unbiased=None, ddof=None, axis=None,
        keepdims=None) -> Tensor:
    """Variance; `correction=1` (Bessel) by default as in PyTorch."""
    x = _t(x)
    given = [c for c in (correction, ddof) if c is not None]
    if unbiased is not None:
        given.append(1 if unbiased else 0)
    if len(given) > 1:
        raise TypeError("var(): pass only one of 'correction', 'unbiased' and 'ddof'")
    corr = given[0] if given else 1
    ax = _dims(dim, axis, x.ndim, "var")
    n = _count(x.shape, ax)
    centred = x - apply(ops.sum_, x, axis=ax, keepdims=True) / n
    ss = apply(ops.sum_, centred * centred, axis=ax, keepdims=_keep(keepdim, keepdims))
    return ss / builtins.max(n - corr, 0)


def std(x, dim=None, keepdim=False, *, correction=None, unbiased=None, ddof=None, axis=None,
        keepdims=None) -> Tensor:
    return sqrt(var(x, dim, keepdim, correction=correction, unbiased=unbiased, ddof=ddof,
                    axis=axis, keepdims=keepdims))


def _extreme(op, name, x, dim, keepdim, axis, keepdims):
    if isinstance(dim, Tensor):  # torch.max(a, b) is the element-wise maximum
        return (maximum if name == "max" else minimum)(x, dim)
    x = _t(x)
    ax = _dims(dim, axis, x.ndim, name)
    if x.size == 0:
        raise RuntimeError(f"{name}(): cannot reduce an empty tensor of shape {x.shape}")
    return apply(op, x, axis=ax, keepdims=_keep(keepdim, keepdims))


def max(x, dim=None, keepdim=False, *, axis=None, keepdims=None) -> Tensor:  # noqa: A001
    """Largest value (over `dim`); values only, use `argmax` for indices."""
    return _extreme(ops.max_, "max", x, dim, keepdim, axis, keepdims)


def min(x, dim=None, keepdim=False, *, axis=None, keepdims=None) -> Tensor:  # noqa: A001
    return _extreme(ops.min_, "min", x, dim, keepdim, axis, keepdims)


def prod(x, dim=None, keepdim=False, *, axis=None, keepdims=None) -> Tensor:
    x = _t(x)
    return apply(ops.prod, x, axis=_dims(dim, axis, x.ndim, "prod"),
                 keepdims=_keep(keepdim, keepdims))


def logsumexp(x, dim=None, keepdim=False, *, axis=None, keepdims=None) -> Tensor:
    x = _t(x)
    return apply(ops.logsumexp, x, axis=_dims(dim, axis, x.ndim, "logsumexp"),
                 keepdims=_keep(keepdim, keepdims))


def softmax(x, dim=-1, *, axis=None) -> Tensor:
    x = _t(x)
    return apply(ops.softmax, x, axis=_dims(dim if axis is None else None, axis, x.ndim,
                                            "softmax"))


def log_softmax(x, dim=-1, *, axis=None) -> Tensor:
    x = _t(x)
    return apply(ops.log_softmax, x, axis=_dims(dim if axis is None else None, axis, x.ndim,
                                                "log_softmax"))


def argmax(x, dim=None, keepdim=False, *, axis=None, keepdims=None) -> Tensor:
    x = _t(x)
    return apply(ops.OPS["argmax"], x, axis=_dims(dim, axis, x.ndim, "argmax"),
                 keepdims=_keep(keepdim, keepdims))


def argmin(x, dim=None, keepdim=False, *, axis=None, keepdims=None) -> Tensor:
    x = _t(x)
    return apply(ops.OPS["argmin"], x, axis=_dims(dim, axis, x.ndim, "argmin"),
                 keepdims=_keep(keepdim, keepdims))


# ---------------------------------------------------------------- shapes

def _shape_args(shape):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    return tuple(int(s) for s in shape)


def reshape(x, *shape) -> Tensor:
    x = _t(x)
    shape = _shape_args(shape)
    known = math.prod(s for s in shape if s != -1)
    target = shape
    if shape.count(-1) == 1 and known and x.size % known == 0:
        target = tuple(x.size // known if s == -1 else s for s in shape)
    if shape.count(-1) > 1 or any(s < -1 for s in shape) or math.prod(target) != x.size:
        raise ValueError(f"cannot reshape a tensor of shape {x.shape} (size {x.size}) into "
                         f"shape {shape}")
    return apply(ops.reshape, x, shape=target)


def flatten(x, start_dim=0, end_dim=-1) -> Tensor:
    x = _t(x)
    if x.ndim == 0:
        return reshape(x, 1)
    s, e = _dims(start_dim, None, x.ndim, "flatten"), _dims(end_dim, None, x.ndim, "flatten")
    if s > e:
        raise ValueError(f"flatten(): start_dim {start_dim} comes after end_dim {end_dim} for a "
                         f"tensor of shape {x.shape}")
    shape = x.shape[:s] + (math.prod(x.shape[s:e + 1]),) + x.shape[e + 1:]
    return reshape(x, shape)


def permute(x, *dims) -> Tensor:
    x = _t(x)
    dims = _shape_args(dims)
    if sorted(d % builtins.max(x.ndim, 1) for d in dims) != list(range(x.ndim)):
        raise ValueError(f"permute(): dims {dims} are not a permutation of the {x.ndim} "
                         f"dimensions of shape {x.shape}")
    return apply(ops.permute, x, axes=tuple(d % x.ndim for d in dims))


def transpose(x, dim0=None, dim1=None) -> Tensor:
    """Swap two dimensions (PyTorch); with none given, reverse them all (NumPy)."""
    x = _t(x)
    if dim0 is None and dim1 is None:
        return apply(ops.permute, x, axes=tuple(reversed(range(x.ndim))))
    if dim0 is None or dim1 is None:
        raise TypeError("transpose() takes both dim0 and dim1, or neither")
    axes = list(range(x.ndim))
    d0, d1 = _dims(dim0, None, x.ndim, "transpose"), _dims(dim1, None, x.ndim, "transpose")
    axes[d0], axes[d1] = axes[d1], axes[d0]
    return apply(ops.permute, x, axes=tuple(axes))


def expand(x, *sizes) -> Tensor:
    x = _t(x)
    sizes = _shape_args(sizes)
    lead = len(sizes) - x.ndim
    if lead < 0:
        raise ValueError(f"expand(): cannot expand shape {x.shape} to fewer dimensions {sizes}")
    shape = tuple(x.shape[i - lead] if s == -1 and i >= lead else s for i, s in enumerate(sizes))
    try:
        np.broadcast_shapes(x.shape, shape)
        if np.broadcast_shapes(x.shape, shape) != shape:
            raise ValueError
    except ValueError:
        raise ValueError(f"expand(): cannot expand shape {x.shape} to {sizes}") from None
    return apply(ops.broadcast_to, x, shape=shape)


def broadcast_to(x, shape) -> Tensor:
    return expand(x, *tuple(shape))


def squeeze(x, dim=None) -> Tensor:
    x = _t(x)
    if dim is None:
        shape = tuple(s for s in x.shape if s != 1)
    else:
        d = _dims(dim, None, x.ndim, "squeeze")
        ds = d if isinstance(d, tuple) else (d,)
        shape = tuple(s for i, s in enumerate(x.shape) if not (i in ds and s == 1))
    return reshape(x, shape)


def unsqueeze(x, dim) -> Tensor:
    x = _t(x)
    if not -(x.ndim + 1) <= dim <= x.ndim:
        raise IndexError(f"unsqueeze(): dim {dim} is out of range for a tensor with {x.ndim} "
                         "dimension(s)")
    d = dim % (x.ndim + 1)
    return reshape(x, x.shape[:d] + (1,) + x.shape[d:])


def cat(tensors: Sequence, dim=0, *, axis=None) -> Tensor:
    ts = [_t(t) for t in tensors]
    if not ts:
        raise ValueError("cat() needs at least one tensor")
    d = _dims(dim if axis is None else None, axis, ts[0].ndim, "cat")
    for t in ts[1:]:
        if t.ndim != ts[0].ndim or any(a != b for i, (a, b) in enumerate(zip(t.shape,
                                                                           ts[0].shape))
                                       if i != d):
            raise ValueError(f"cat(): shapes {[u.shape for u in ts]} do not match outside "
                             f"dimension {d}")
    return apply(ops.cat, *ts, axis=d)


concatenate = cat


def stack(tensors: Sequence, dim=0, *, axis=None) -> Tensor:
    ts = [_t(t) for t in tensors]
    if not ts:
        raise ValueError("stack() needs at least one tensor")
    if any(t.shape != ts[0].shape for t in ts):
        raise ValueError(f"stack(): all tensors must have the same shape, got "
                         f"{[t.shape for t in ts]}")
    d = dim if axis is None else axis
    return cat([unsqueeze(t, d) for t in ts], d)


def split(x, split_size_or_sections, dim=0) -> tuple:
    """PyTorch's split: a chunk size (the last may be smaller) or a list of sizes."""
    x = _t(x)
    d = _dims(dim, None, x.ndim, "split")
    n = x.shape[d]
    if isinstance(split_size_or_sections, (int, np.integer)):
        k = int(split_size_or_sections)
        if k <= 0:
            raise ValueError(f"split(): chunk size must be positive, got {k}")
        sizes = [builtins.min(k, n - i) for i in range(0, n, k)] or [0]
    else:
        sizes = [int(s) for s in split_size_or_sections]
        if builtins.sum(sizes) != n:
            raise ValueError(f"split(): sizes {sizes} do not add up to {n}, the length of "
                             f"dimension {d}")
    out, start = [], 0
    for s in sizes:
        idx = (slice(None),) * d + (slice(start, start + s),)
        out.append(x[idx])
        start += s
    return tuple(out)


def einsum(spec: str, *operands) -> Tensor:
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    ts = [_t(t) for t in operands]
    ops._einsum_parse(spec, [t.shape for t in ts])  # validate before recording
    return apply(ops.einsum, *ts, spec=spec)


def matmul(x, y) -> Tensor:
    x, y = _t(x), _t(y)
    if x.ndim == 0 or y.ndim == 0:
        raise ValueError(f"matmul(): both operands need at least one dimension, got shapes "
                         f"{x.shape} and {y.shape}")
    kx = x.shape[-1]
    ky = y.shape[-2] if y.ndim > 1 else y.shape[0]
    if kx != ky:
        raise ValueError(f"matmul(): shapes {x.shape} and {y.shape} do not align "
                         f"({kx} != {ky})")
    return apply(ops.matmul, x, y)


# ---------------------------------------------------------------- convolution and pooling

def _pair_arg(v, name):
    if isinstance(v, (int, np.integer)):
        return (int(v), int(v))
    v = tuple(int(a) for a in v)
    if len(v) != 2:
        raise ValueError(f"{name} must be an int or a pair of ints, got {v}")
    return v


def _windows(x, kernel, stride, padding, dilation, name, pad_value=0.0):
    x = _t(x)
    if x.ndim != 4:
        raise ValueError(f"{name}: expected input of shape (N, C, H, W), got {x.shape}")
    k = _pair_arg(kernel, "kernel_size")
    s = _pair_arg(stride if stride is not None else k, "stride")
    p = _pair_arg(padding, "padding")
    d = _pair_arg(dilation, "dilation")
    h, w = x.shape[2] + 2 * p[0], x.shape[3] + 2 * p[1]
    oh = (h - d[0] * (k[0] - 1) - 1) // s[0] + 1
    ow = (w - d[1] * (k[1] - 1) - 1) // s[1] + 1
    if oh <= 0 or ow <= 0 or builtins.min(s) <= 0:
        raise ValueError(f"{name}: kernel {k} (stride {s}, padding {p}, dilation {d}) does not "
                         f"fit input of shape {x.shape}")
    cols = apply(ops.unfold, x, kernel=k, stride=s, padding=p, dilation=d, pad_value=pad_value)
    return cols, oh, ow


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1) -> Tensor:
    """2-D convolution with PyTorch's layouts: input (N, C, H, W), weight (O, C/groups, kh, kw)."""
    x, w = _t(input), _t(weight)
    if w.ndim != 4:
        raise ValueError(f"conv2d: weight must have shape (O, C/groups, kh, kw), got {w.shape}")
    if x.ndim != 4:
        raise ValueError(f"conv2d: expected input of shape (N, C, H, W), got {x.shape}")
    o, cg, kh, kw = w.shape
    n, c = x.shape[:2]
    if c != cg * groups or o % groups:
        raise ValueError(f"conv2d: input has {c} channels but weight {w.shape} with groups="
                         f"{groups} expects {cg * groups}")
    cols, oh, ow = _windows(x, (kh, kw), stride, padding, dilation, "conv2d")
    # (N, C, kh, kw, OH, OW) -> (G, C/G*kh*kw, N*OH*OW): one matrix product per group
    cols = permute(cols, 1, 2, 3, 0, 4, 5).reshape(groups, cg * kh * kw, n * oh * ow)
    out = matmul(w.reshape(groups, o // groups, cg * kh * kw), cols)
    out = permute(out.reshape(o, n, oh, ow), 1, 0, 2, 3)
    if bias is not None:
        out = out + _t(bias).reshape(1, o, 1, 1)
    return out


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1) -> Tensor:
    x = _t(input)
    cols, oh, ow = _windows(x, kernel_size, stride, padding, dilation, "max_pool2d",
                            pad_value=-np.inf)
    n, c = x.shape[:2]
    return max(cols.reshape(n, c, -1, oh, ow), 2)


def avg_pool2d(input, kernel_size, stride=None, padding=0) -> Tensor:
    """Average over windows, padding counted as zeros (PyTorch's count_include_pad=True)."""
    x = _t(input)
    cols, oh, ow = _windows(x, kernel_size, stride, padding, 1, "avg_pool2d")
    n, c = x.shape[:2]
    return mean(cols.reshape(n, c, -1, oh, ow), 2)
