"""NumPy's spellings a scientist's code uses (`rg.swapaxes`, `rg.expand_dims`, `rg.diff`,
`rg.trapezoid`, `rg.convolve`, `rg.interp`, `rg.nanmean`, `rg.vstack`, `rg.rot90`,
`rg.fmax`, ...), with NumPy's arguments and results, differentiable like everything else.

Each is a composition of existing ops (slices, concatenation, where, sums, a 1-d
convolution), so gradients, forward mode and higher order come from those ops' rules.
Where PyTorch has the same function (`diff`, `trapezoid`, `rot90`, `fmax`, `nansum`,
`tensor_split`, ...) the gradient follows PyTorch's; `interp` (no PyTorch twin) is
differentiable in `fp` and, almost everywhere, in `x` and `xp`.
"""

from __future__ import annotations

import builtins
import math
from collections.abc import Sequence

import numpy as np

from .. import ops
from .._values import by_ops
from ..dtypes import get_default_dtype
from ..engine import apply
from ..primitive import ArgumentError, DtypeError
from ..tensor import Tensor
from ._args import _dims, _keep, _t, int_arg, promote
from ._errors import IndexRangeError, ShapeError
from .complex import conj
from .cumulative import argsort, cumsum
from .elementwise import abs as _abs
from .elementwise import clamp, where
from .indexing import flip, index_select, movedim
from .math import isnan, remainder
from .reductions import sum as _sum
from .shape import cat, reshape, transpose, unsqueeze

__all__ = [
    "swapaxes", "swapdims", "expand_dims", "atleast_1d", "atleast_2d", "atleast_3d", "ravel",
    "diff", "trapezoid", "trapz", "cumulative_trapezoid", "polyval", "convolve", "correlate",
    "interp", "nansum", "nanmean", "vstack", "row_stack", "hstack", "dstack",
    "column_stack", "append", "array_split", "tensor_split", "rot90", "deg2rad", "rad2deg",
    "fmax", "fmin", "absolute", "fabs", "degrees", "radians", "conjugate", "mod", "rollaxis",
]


def _axis(axis, ndim: int, fn: str, name: str = "axis") -> int:
    axis = int_arg(axis)
    if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool):
        raise TypeError(f"{fn}(): '{name}' must be an int, got {axis!r}")
    if not -builtins.max(ndim, 1) <= axis < builtins.max(ndim, 1):
        raise IndexError(f"{fn}(): {name} {axis} is out of range for a tensor with {ndim} "
                         "dimension(s)")
    return int(axis) % builtins.max(ndim, 1)


def _take(x: Tensor, axis: int, sl: slice) -> Tensor:
    """x[..., sl, ...] with `sl` on `axis`."""
    return x[(slice(None),) * axis + (sl,)]


def _floating(x: Tensor) -> Tensor:
    return x if x.data.dtype.kind in "fc" else x.to(get_default_dtype())


# ---------------------------------------------------------------- shapes

def swapaxes(input, axis0: int | None = None, axis1: int | None = None, *,  # noqa: A002
             axis2: int | None = None) -> Tensor:
    """`input` with two axes interchanged (a view-like transpose). Like `torch.swapaxes`
    (axes `axis0`, `axis1`), and NumPy's spelling too (`axis1`, `axis2`: with `axis2`
    given, `axis1` is the first axis, as in `np.swapaxes`)."""
    if axis2 is not None:  # NumPy's names
        if axis0 is not None and axis1 is not None:
            raise TypeError("swapaxes(): give two axes: (axis0, axis1) as PyTorch or "
                            "(axis1, axis2) as NumPy, not three")
        axis0, axis1 = (axis1 if axis1 is not None else axis0), axis2
    if axis0 is None or axis1 is None:
        raise TypeError("swapaxes() missing an axis: expected (input, axis0, axis1)")
    x = _t(input)
    if x.ndim == 0:
        return transpose(x, axis0, axis1)  # dims 0 and -1 of a 0-d tensor, as PyTorch
    return transpose(x, _axis(axis0, x.ndim, "swapaxes", "axis0"),
                     _axis(axis1, x.ndim, "swapaxes", "axis1"))


def swapdims(input, dim0: int, dim1: int) -> Tensor:  # noqa: A002 - PyTorch's names
    """`input` with two dimensions interchanged. Like `torch.swapdims` (`swapaxes`)."""
    return swapaxes(input, dim0, dim1)


def expand_dims(a, axis) -> Tensor:
    """`a` with new axes of length 1 at the positions `axis` (an int or a tuple) of the
    result."""
    x = _t(a)
    axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    nd = x.ndim + len(axes)
    pos = sorted(_axis(ax, nd, "expand_dims") for ax in axes)
    if len(set(pos)) != len(pos):
        raise ArgumentError(f"expand_dims(): axis {axis} repeats an axis")
    shape = iter(x.shape)
    return reshape(x, tuple(1 if k in pos else next(shape) for k in range(nd)))


def _atleast(arys, n: int, fn: str):
    seq = len(arys) == 1 and isinstance(arys[0], (tuple, list)) and builtins.all(
        isinstance(a, Tensor) for a in arys[0])  # torch's one-sequence form, atleast_1d((x, y))
    if seq:
        arys = tuple(arys[0])
    out = []
    for a in arys:
        x = _t(a)
        if x.ndim < n:
            s = x.shape
            if n == 2:
                s = (1,) * (2 - x.ndim) + s
            elif n == 3:
                s = {0: (1, 1, 1), 1: (1,) + s + (1,), 2: s + (1,)}[x.ndim]
            else:
                s = (1,)
            x = reshape(x, s)
        out.append(x)
    return out[0] if len(out) == 1 and not seq else tuple(out)  # none given: (), as torch


def atleast_1d(*arys):
    """Each input as a tensor with at least 1 dimension (one input: a tensor; several: a
    tuple)."""
    return _atleast(arys, 1, "atleast_1d")


def atleast_2d(*arys):
    """At least 2 dimensions: a vector of length n becomes (1, n)."""
    return _atleast(arys, 2, "atleast_2d")


def atleast_3d(*arys):
    """At least 3 dimensions: (n,) becomes (1, n, 1), (m, n) becomes (m, n, 1)."""
    return _atleast(arys, 3, "atleast_3d")


def ravel(input) -> Tensor:
    """The entries of `a` as a 1-d tensor, in C order."""
    return reshape(_t(input), (-1,))


def vstack(tensors: Sequence) -> Tensor:
    """Concatenate along the first axis, vectors of length n counting as (1, n)."""
    return cat(_as_list(atleast_2d(*_seq(tensors, "vstack"))), 0)


row_stack = vstack


def hstack(tensors: Sequence) -> Tensor:
    """Concatenate along the second axis (the first for vectors)."""
    ts = _as_list(atleast_1d(*_seq(tensors, "hstack")))
    return cat(ts, 0 if ts[0].ndim == 1 else 1)


def dstack(tensors: Sequence) -> Tensor:
    """Concatenate along the third axis, after `atleast_3d`."""
    return cat(_as_list(atleast_3d(*_seq(tensors, "dstack"))), 2)


def column_stack(tensors: Sequence) -> Tensor:
    """Vectors as columns (n, 1), then concatenated along the second axis."""
    ts = [_t(a) for a in _seq(tensors, "column_stack")]
    return cat([reshape(t, (-1, 1)) if t.ndim < 2 else t for t in ts], 1)


def _seq(tup, fn: str) -> list:
    if isinstance(tup, Tensor) or not isinstance(tup, (list, tuple)):
        raise TypeError(f"{fn}(): expects a sequence (list or tuple) of arrays")
    if not tup:
        raise ArgumentError(f"{fn}(): needs at least one array")
    return list(tup)


def _as_list(r) -> list:
    return list(r) if isinstance(r, tuple) else [r]


def append(arr, values, axis: int | None = None) -> Tensor:
    """`values` appended to `arr`: both flattened when `axis` is None, else concatenated
    along `axis` (shapes must match elsewhere)."""
    x, v = _t(arr), _t(values)
    if axis is None:
        return cat([ravel(x), ravel(v)], 0)
    return cat([x, v], _axis(axis, x.ndim, "append"))


def array_split(ary, indices_or_sections, axis: int = 0) -> list:
    """NumPy's array_split: an int N gives N pieces (the first L % N one longer); a list
    of indices splits before each. Returns a list of tensors."""
    x = _t(ary)
    ax = _axis(axis, x.ndim, "array_split")
    n = x.shape[ax] if x.ndim else 1
    if isinstance(indices_or_sections, (int, np.integer)) and \
            not isinstance(indices_or_sections, bool):
        k = int(indices_or_sections)
        if k <= 0:
            raise ArgumentError(f"array_split(): number of sections must be larger than 0, "
                                f"got {k}")
        each, extra = divmod(n, k)
        sizes = [each + 1] * extra + [each] * (k - extra)
        bounds = [0] + list(np.cumsum(sizes))
    else:
        idx = [int(i) for i in indices_or_sections]
        bounds = [0] + idx + [n]
    out = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        lo, hi = _clip_index(lo, n), _clip_index(hi, n)
        out.append(_take(x, ax, slice(lo, builtins.max(lo, hi))))
    return out


def _clip_index(i: int, n: int) -> int:
    return builtins.min(builtins.max(i + n if i < 0 else i, 0), n)


def one_split_spec(fn: str, given, **named):
    """The one split spec a call gives: positionally, or as one of PyTorch's keywords
    (`sections=`, `indices=`, `tensor_indices_or_sections=`)."""
    spelled = [(k, v) for k, v in named.items() if v is not None]
    if given is not None:
        spelled.insert(0, ("indices_or_sections", given))
    if len(spelled) != 1:
        raise TypeError(f"{fn}(): expected one of indices_or_sections, "
                        f"{', '.join(named)}; got {[k for k, _ in spelled] or 'none'}")
    return spelled[0][1]


def tensor_split(input, indices_or_sections=None, dim: int = 0, *, sections=None,  # noqa: A002
                 indices=None, tensor_indices_or_sections=None) -> tuple:
    """PyTorch's tensor_split: `array_split` returning a tuple."""
    spec = one_split_spec("tensor_split", indices_or_sections, sections=sections,
                          indices=indices, tensor_indices_or_sections=tensor_indices_or_sections)
    if isinstance(spec, Tensor):  # a 0-d int64 tensor: sections; a 1-d one: indices
        if spec.dtype != np.int64 or spec.ndim > 1:
            raise RuntimeError("tensor_split expected tensor_indices_or_sections to be a "
                               f"zero-dimensional or one-dimensional tensor of dtype int64, "
                               f"but got a tensor with {spec.ndim} dims and dtype {spec.dtype}")
        spec = int(spec.item()) if spec.ndim == 0 else [int(i) for i in spec.tolist()]
    if _t(input).ndim == 0:
        raise ShapeError("tensor_split expected at least a 1-dimensional tensor, but got a "
                         "tensor with 0 dims")
    return tuple(array_split(input, spec, dim))


def rot90(input, k: int = 1, axes=(0, 1), *, dims=None) -> Tensor:
    """`m` rotated by 90 degrees k times in the plane of `axes` (PyTorch: `dims`), from the
    first axis towards the second."""
    x = _t(input)
    axes = tuple(dims if dims is not None else axes)
    if len(axes) != 2:
        raise ArgumentError(f"rot90(): 'axes' must name exactly 2 axes, got {axes}")
    if x.ndim < 2:
        raise ArgumentError(f"rot90(): the input needs at least 2 dimensions, got {x.shape}")
    a0, a1 = (_axis(a, x.ndim, "rot90", "axes") for a in axes)
    if a0 == a1:
        raise ArgumentError(f"rot90(): 'axes' must be different, got {axes}")
    if not isinstance(k, (int, np.integer)) or isinstance(k, bool):
        raise TypeError(f"rot90(): 'k' must be an int, got {k!r}")
    k = int(k) % 4
    if k == 0:
        return x.clone()
    if k == 2:
        return flip(x, (a0, a1))
    if k == 1:
        return transpose(flip(x, a1), a0, a1)
    return flip(transpose(x, a0, a1), a1)


# ---------------------------------------------------------------- differences and integrals

def diff(input, n: int = 1, axis: int = -1, prepend=None, append=None, *, dim=None) -> Tensor:
    """The n-th discrete difference along `axis` (PyTorch: `dim`), after concatenating
    `prepend` and `append` (scalars are broadcast to length-1 slices). Bool inputs give
    `!=` of neighbours, as NumPy and PyTorch do."""
    x = _t(input)
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool):
        raise TypeError(f"diff(): 'n' must be an int, got {n!r}")
    if n < 0:
        raise ArgumentError(f"diff(): order 'n' must be non-negative, got {n}")
    if x.ndim == 0:
        raise ShapeError("diff(): the input needs at least 1 dimension")
    ax = _axis(dim if dim is not None else axis, x.ndim, "diff")
    parts = []
    for name, extra in (("prepend", prepend), ("append", append)):
        if extra is None:
            parts.append(None)
            continue
        e = _t(extra)
        if e.ndim == 0:
            shape = x.shape[:ax] + (1,) + x.shape[ax + 1:]
            e = e.expand(*shape)
        elif e.ndim != x.ndim:
            raise ArgumentError(f"diff(): '{name}' must be a scalar or have {x.ndim} dimensions, "
                                f"got shape {e.shape}")
        parts.append(e)
    if n == 0:  # PyTorch checks prepend/append but returns a copy of the input alone
        return x.clone()
    if parts[0] is not None or parts[1] is not None:
        x = cat([p for p in (parts[0], x, parts[1]) if p is not None], ax)
    for _ in range(n):
        hi, lo = _take(x, ax, slice(1, None)), _take(x, ax, slice(None, -1))
        x = (hi != lo) if x.data.dtype == np.bool_ else hi - lo
    return x


def _trapezoid_widths(x, dx, y: Tensor, ax: int, fn: str):
    """The widths between samples: a tensor broadcastable against the pairs of `y`, or dx."""
    if x is None:
        if not isinstance(dx, (int, float, np.integer, np.floating, Tensor)):
            raise TypeError(f"{fn}(): 'dx' must be a number, got {dx!r}")
        return dx
    xs = _t(x)
    if xs.ndim == 1:
        if xs.shape[0] != y.shape[ax]:
            raise ArgumentError(f"{fn}(): 'x' has {xs.shape[0]} samples but y has {y.shape[ax]} "
                                f"along axis {ax}")
        d = xs[1:] - xs[:-1]
        return reshape(d, (-1,) + (1,) * (y.ndim - 1 - ax))
    if xs.ndim != y.ndim:
        raise ArgumentError(f"{fn}(): 'x' must be 1-d or have y's {y.ndim} dimensions, got shape "
                            f"{xs.shape}")
    return diff(xs, axis=ax)


def trapezoid(y, x=None, dx: float = 1.0, axis: int = -1, *, dim=None) -> Tensor:
    """The integral of y along `axis` (PyTorch: `dim`) by the trapezoidal rule, at sample
    points `x` (1-d, or y's shape) or with spacing `dx`."""
    y = _t(y)
    if y.data.dtype == np.bool_:
        raise DtypeError("trapezoid: received a bool input for `y`, but bool is not supported")
    y = _floating(y)
    if y.ndim == 0:
        raise IndexRangeError("trapezoid(): 'y' needs at least 1 dimension")
    ax = _axis(dim if dim is not None else axis, y.ndim, "trapezoid")
    d = _trapezoid_widths(x, dx, y, ax, "trapezoid")
    if x is None:  # torch's formula for even spacing (so infinities give its NaNs)
        ends = _take(y, ax, slice(0, 1)) + _take(y, ax, slice(-1, None))
        if y.shape[ax] == 0:
            return _sum(y, ax) * d
        return (_sum(y, ax) - _sum(ends, ax) * 0.5) * d
    mids = (_take(y, ax, slice(1, None)) + _take(y, ax, slice(None, -1))) * 0.5
    return _sum(mids * d, ax)


trapz = trapezoid


def cumulative_trapezoid(y, x=None, dx: float = 1.0, axis: int = -1, *, dim=None) -> Tensor:
    """The running trapezoidal integral (one entry fewer than y along `axis`), as
    `torch.cumulative_trapezoid` and SciPy's without `initial`."""
    y = _t(y)
    if y.data.dtype == np.bool_:
        raise DtypeError("cumulative_trapezoid: received a bool input for `y`, but bool is "
                         "not supported")
    y = _floating(y)
    if y.ndim == 0:
        raise IndexRangeError("cumulative_trapezoid(): 'y' needs at least 1 dimension")
    ax = _axis(dim if dim is not None else axis, y.ndim, "cumulative_trapezoid")
    d = _trapezoid_widths(x, dx, y, ax, "cumulative_trapezoid")
    mids = (_take(y, ax, slice(1, None)) + _take(y, ax, slice(None, -1))) * 0.5
    return cumsum(mids * d, ax)


def polyval(p, x) -> Tensor:
    """The polynomial with coefficients `p` (highest power first) at `x`, by Horner's rule;
    differentiable in both."""
    c, v = _t(p), _t(x)
    if c.ndim != 1:
        raise ArgumentError(f"polyval(): 'p' must be 1-d, got shape {c.shape}")
    c, v = promote(c, v)
    if c.shape[0] == 0:
        return v * 0
    out = c[0] + v * 0
    for i in range(1, c.shape[0]):
        out = out * v + c[i]
    return out


# ---------------------------------------------------------------- 1-d convolution

_MODES = ("full", "same", "valid")


def _conv_args(a, v, mode: str, fn: str):
    if mode not in _MODES:
        raise ArgumentError(f"{fn}(): 'mode' must be 'full', 'same' or 'valid', got {mode!r}")
    a, v = _t(a), _t(v)
    for name, t in (("a", a), ("v", v)):
        if t.ndim > 1:
            raise ArgumentError(f"{fn}(): '{name}' must be 1-d, got shape {t.shape}")
        if t.data.dtype.kind == "c":
            raise TypeError(f"{fn}() supports real inputs only, got a complex '{name}'")
    a, v = (reshape(t, (-1,)) for t in promote(a, v, floating=True))
    for name, t in (("a", a), ("v", v)):
        if t.shape[0] == 0:
            raise ArgumentError(f"{fn}(): '{name}' cannot be empty")
    return a, v


def _full_convolution(a: Tensor, v: Tensor) -> Tensor:
    """sum_i a[i] v[k - i] for every k: a cross-correlation of `a` with `v` reversed, as a
    one-channel conv1d with padding len(v) - 1."""
    from .windows import conv1d

    m = v.shape[0]
    w = reshape(flip(v, 0), (1, 1, m))
    return reshape(conv1d(reshape(a, (1, 1, -1)), w, padding=m - 1), (-1,))


def _mode_slice(full: Tensor, n: int, m: int, mode: str) -> Tensor:
    lo, hi = builtins.min(n, m), builtins.max(n, m)
    if mode == "full":
        return full
    if mode == "same":
        start = (lo - 1) // 2
        return full[start:start + hi]
    return full[lo - 1:hi]


def convolve(a, v, mode: str = "full") -> Tensor:
    """The discrete 1-d convolution of `a` and `v` (NumPy's modes 'full', 'same', 'valid');
    differentiable in both."""
    a, v = _conv_args(a, v, mode, "convolve")
    return _mode_slice(_full_convolution(a, v), a.shape[0], v.shape[0], mode)


def correlate(a, v, mode: str = "valid") -> Tensor:
    """The 1-d cross-correlation sum_n a[n + k] v[n] (NumPy's; default mode 'valid')."""
    a, v = _conv_args(a, v, mode, "correlate")
    return _mode_slice(_full_convolution(a, flip(v, 0)), a.shape[0], v.shape[0], mode)


# ---------------------------------------------------------------- interpolation

def interp(x, xp, fp, left=None, right=None, period=None) -> Tensor:
    """NumPy's piecewise-linear interpolation of the points (xp, fp) at x; `left`/`right`
    beyond the ends (default fp[0], fp[-1]); `period` for periodic xp. Differentiable in
    `fp` (and, between the knots, in `x` and `xp`)."""
    x, xp, fp = _t(x), _t(xp), _t(fp)
    for name, t in (("xp", xp), ("fp", fp)):
        if t.ndim != 1:
            raise ArgumentError(f"interp(): '{name}' must be 1-d, got shape {t.shape}")
    if xp.shape[0] != fp.shape[0]:
        raise ArgumentError(f"interp(): 'xp' and 'fp' must have the same length, got "
                            f"{xp.shape[0]} and {fp.shape[0]}")
    if xp.shape[0] == 0:
        raise ArgumentError("interp(): 'xp' and 'fp' cannot be empty")
    if fp.data.dtype.kind == "c" or x.data.dtype.kind == "c":
        raise TypeError("interp() supports real inputs only")
    x, xp, fp = promote(x, xp, fp, floating=True)
    if period is not None:
        if period == 0:
            raise ArgumentError("interp(): 'period' must be non-zero")
        period = builtins.abs(float(period))
        x = x - (x.detach() // period) * period  # x mod period, with x's own gradient
        xp = xp - (xp.detach() // period) * period
        order = argsort(xp.detach(), stable=True)  # an op: rg.jit replays it
        xp, fp = index_select(xp, 0, order), index_select(fp, 0, order)
        xp = cat([xp[-1:] - period, xp, xp[:1] + period], 0)
        fp = cat([fp[-1:], fp, fp[:1]], 0)
        left = right = None
    n = xp.shape[0]
    if n == 1:
        out = fp[0] + x * 0
    else:
        if by_ops(xp, x):  # the knot index from ops: rg.jit replays it, vmap batches it
            below_x = _sum(xp.detach() <= unsqueeze(x.detach(), -1), -1)
            j = clamp(below_x - 1, 0, n - 2)
        else:  # the same index, in O(len(x) log n)
            j = Tensor(np.clip(np.searchsorted(xp.data, x.data, side="right") - 1, 0, n - 2))
        x0, x1, f0, f1 = _at(xp, j), _at(xp, j + 1), _at(fp, j), _at(fp, j + 1)
        out = f0 + (x - x0) * ((f1 - f0) / (x1 - x0))
        out = where(x == x1, f1, out)  # exactly fp[-1] at the last knot, as NumPy
    below = x < xp[0]
    above = x > xp[-1]
    out = where(below, fp[0] if left is None else _like(left, out), out)
    return where(above, fp[-1] if right is None else _like(right, out), out)


def _at(t: Tensor, j: Tensor) -> Tensor:
    """t[j] for a 1-d `t` and integer indices `j` of any shape, as a recorded op."""
    return reshape(index_select(t, 0, reshape(j, (-1,))), j.shape)


def _like(v, ref: Tensor):
    return v if isinstance(v, Tensor) else np.asarray(v, ref.data.dtype)


# ---------------------------------------------------------------- NaN-ignoring reductions

def nansum(input, dim=None, keepdim: bool = False, *, axis=None, keepdims=None,
           dtype=None) -> Tensor:
    """The sum treating NaNs as zero (their gradient is zero)."""
    x = _t(input)
    d = _dims(dim, axis, x.ndim, "nansum")
    clean = where(isnan(x), 0.0, x) if x.data.dtype.kind in "fc" else x
    # the dtype cast after the NaNs are dropped (an int cast would keep them)
    return _sum(clean, d, _keep(keepdim, keepdims), dtype=dtype)


def nanmean(input, dim=None, keepdim: bool = False, *, axis=None, keepdims=None,
            dtype=None) -> Tensor:
    """The mean over the entries that are not NaN (NaN where all are); NaNs get a zero
    gradient (PyTorch's is NaN at the NaNs of an all-NaN slice, whose mean does not depend
    on them)."""
    x = _t(input)
    if x.data.dtype.kind not in "fc":  # the input itself, before any dtype= cast (torch)
        raise DtypeError(f"nanmean(): expected a floating tensor, got {x.dtype}")
    if dtype is not None and np.dtype(dtype).kind not in "fc":
        raise DtypeError(f"nanmean(): dtype must be a floating point or complex dtype, got "
                         f"{np.dtype(dtype)}")
    if dtype is not None:
        x = x.to(dtype)
    d = _dims(dim, axis, x.ndim, "nanmean")
    keep = _keep(keepdim, keepdims)
    nan = isnan(x)
    count = _sum((~nan).to(x.data.dtype), d, keep)
    return _sum(where(nan, 0.0, x), d, keep) / count


# ---------------------------------------------------------------- element-wise

def deg2rad(input) -> Tensor:
    """Degrees to radians (integers give the default float dtype)."""
    return _floating(_t(input)) * (math.pi / 180.0)


def rad2deg(input) -> Tensor:
    """Radians to degrees."""
    return _floating(_t(input)) * (180.0 / math.pi)


def degrees(x) -> Tensor:
    """NumPy's name for `rad2deg`."""
    return rad2deg(x)


def radians(x) -> Tensor:
    """NumPy's name for `deg2rad`."""
    return deg2rad(x)


def absolute(input) -> Tensor:
    """NumPy's and PyTorch's alias of `abs`."""
    return _abs(input)


def fabs(x) -> Tensor:
    """NumPy's `fabs`: the absolute value of real numbers (complex input is refused, as in
    NumPy); integers give the default float dtype."""
    x = _t(x)
    if x.data.dtype.kind == "c":
        raise TypeError("fabs() is not defined for complex tensors; use abs()")
    return _abs(_floating(x))


def conjugate(x) -> Tensor:
    """NumPy's name for `conj`."""
    return conj(x)


def mod(x1, x2) -> Tensor:
    """NumPy's name for `remainder` (the result takes the divisor's sign)."""
    return remainder(x1, x2)


def rollaxis(a, axis: int, start: int = 0) -> Tensor:
    """NumPy's `rollaxis`: move `axis` so that it lands before position `start`
    (`start` may be `ndim`, meaning last); prefer `moveaxis` in new code."""
    x = _t(a)
    n = x.ndim
    ax = _axis(axis, n, "rollaxis")
    if not isinstance(start, (int, np.integer)) or isinstance(start, bool):
        raise TypeError(f"rollaxis(): 'start' must be an int, got {start!r}")
    if not -n <= start <= n:
        raise IndexError(f"rollaxis(): start {start} is out of range for a tensor with {n} "
                         "dimension(s)")
    start = int(start) + n if start < 0 else int(start)
    if ax < start:
        start -= 1
    if ax == start:
        return x[...]
    return movedim(x, ax, start)


def _nan_ignoring(a, b, fn: str, greater: bool) -> Tensor:
    x, y = (t if isinstance(t, Tensor) else Tensor(t) for t in promote(a, b))
    if x.data.dtype.kind == "c":
        raise DtypeError(f"{fn}() is not supported for complex tensors")
    keep_x = ((x >= y) if greater else (x <= y)) | isnan(y)
    return where(keep_x, x, y)


def fmax(input, other) -> Tensor:
    """The element-wise maximum ignoring NaNs (NaN only where both are); the gradient goes
    to `input` where it is kept (ties included) and to `other` elsewhere, as in PyTorch,
    whose forward mode takes `other`'s tangent at a tie (op `fmax`)."""
    x, y = (t if isinstance(t, Tensor) else Tensor(t) for t in promote(input, other))
    if x.data.dtype.kind == "c":
        raise DtypeError("fmax() is not supported for complex tensors")
    return apply(ops.fmax, x, y)


def fmin(input, other) -> Tensor:
    """The element-wise minimum ignoring NaNs; gradients as `fmax`."""
    return _nan_ignoring(input, other, "fmin", False)
