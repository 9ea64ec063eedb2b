"""Reductions: `rg.sum`, `rg.mean`, `rg.var`, `rg.max`, `rg.softmax`, ..."""

from __future__ import annotations

import builtins
from collections import namedtuple

import numpy as np

from .. import ops
from ..dtypes import get_default_dtype
from ..engine import apply
from ..grad_mode import state
from ..ops.elementwise import _real_only
from ..tensor import Tensor
from ._args import _count, _dims, _keep, _t, dim_alias, keepdim_alias
from ._errors import ArgumentError, DtypeError, empty_dim
from ._opmath import HALF, float16_in_float32
from .elementwise import maximum, minimum, sqrt, where
from .output_numbers import number_outputs


def _rdims(dim, axis, ndim, name):
    """`_dims` for a reduction: over a 0-d tensor, dim 0 (or -1) reduces its one element,
    as in PyTorch, which is the reduction over all dims (axis None). An empty `dim`
    (`x.sum(())`, `dim=[]`) is PyTorch's all dims too; an empty NumPy `axis` reduces none."""
    if axis is None and isinstance(dim, (tuple, list)) and not dim:
        dim = None
    ax = _dims(dim, axis, ndim, name)
    return None if ndim == 0 else ax


def _no_out(out, name: str) -> None:
    """NumPy's functions call a tensor's reduction methods with `out=None`: accepted; a
    buffer to write into is not supported."""
    if out is not None:
        raise TypeError(f"{name}(): the 'out' argument is not supported; use the returned tensor")


def sum(input, dim=None, keepdim=False, *, axis=None, keepdims=None, dtype=None,  # noqa: A001
        out=None) -> Tensor:
    """Sum over `dim` (all elements by default; `keepdim` keeps reduced dims as size 1).
    Like `torch.sum`; NumPy's `axis=`/`keepdims=` are accepted too.
    `rg.sum(rg.tensor([[1.0, 2.0], [3.0, 4.0]]), dim=0)` is `tensor([4., 6.])`."""
    _no_out(out, "sum")
    input = _t(input)
    if dtype is not None and np.dtype(dtype) == np.bool_:  # torch: a bool sum is `any`
        return sum(input.to(np.bool_), dim, keepdim, axis=axis, keepdims=keepdims).to(np.bool_)
    if dtype is not None:
        input = input.to(dtype)
    elif input.dtype.kind in "biu":  # PyTorch: int64 for every integer and bool input
        input = input.to(np.int64)
    return apply(ops.sum, input, axis=_rdims(dim, axis, input.ndim, "sum"), keepdims=_keep(keepdim,
                                                                                   keepdims))


def mean(input, dim=None, keepdim=False, *, axis=None, keepdims=None, dtype=None,
         out=None) -> Tensor:
    """Mean over `dim` (all elements by default). Like `torch.mean`; NumPy's `axis=`/`keepdims=`
    are accepted too."""
    _no_out(out, "mean")
    input = _t(input)
    if dtype is not None:
        input = input.to(dtype)
    elif input.data.dtype is HALF:  # in float32, rounded once (torch's opmath; see api/_opmath)
        return mean(input.to(np.float32), dim, keepdim, axis=axis, keepdims=keepdims).to(HALF)
    if input.dtype.kind not in "fc":
        raise DtypeError(f"mean() needs a floating tensor, got {input.dtype}; "
                         "convert with .float()")
    ax = _rdims(dim, axis, input.ndim, "mean")
    total = apply(ops.sum, input, axis=ax, keepdims=_keep(keepdim, keepdims))
    return total / _count(input.shape, ax)


@float16_in_float32("input")
def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None, ddof=None, axis=None,
        keepdims=None, dtype=None, out=None) -> Tensor:
    """Variance; `correction=1` (Bessel) by default as in PyTorch. Of complex data the
    mean of |x - mean|^2, real, as in NumPy and PyTorch. Positional arguments as PyTorch's
    overloads: var(x, dim, unbiased, keepdim) and var(x, unbiased)."""
    _no_out(out, "var")
    if isinstance(dim, bool):  # torch.var(x, True): the unbiased flag
        if unbiased is not None:
            raise TypeError("var(): unbiased given twice")
        dim, unbiased = None, dim
    input = _t(input)
    if dtype is not None:
        input = input.to(dtype)
    if input.dtype.kind not in "fc":
        raise DtypeError(f"std and var need a floating or complex tensor, got {input.dtype}; "
                         "convert with .float()")
    given = [c for c in (correction, ddof) if c is not None]
    if unbiased is not None:
        given.append(1 if unbiased else 0)
    if len(given) > 1:
        raise TypeError("var(): pass only one of 'correction', 'unbiased' and 'ddof'")
    corr = given[0] if given else 1
    ax = _rdims(dim, axis, input.ndim, "var")
    n = _count(input.shape, ax)
    if _welford_in_double(input, ax):
        wide = var(input.to(np.float64), dim, keepdim=keepdim, correction=corr, axis=axis,
                   keepdims=keepdims)
        return wide.to(np.float32)
    if _float32_all(input, ax):
        return _var_all_float32(input, ax, corr, _keep(keepdim, keepdims), False)
    centred = input - apply(ops.sum, input, axis=ax, keepdims=True) / n
    if centred.dtype.kind == "c":
        re, im = apply(ops.real, centred), apply(ops.imag, centred)
        sq = re * re + im * im
    else:
        sq = centred * centred
    ss = apply(ops.sum, sq, axis=ax, keepdims=_keep(keepdim, keepdims))
    out = ss / builtins.max(n - corr, 0)
    if input.data.dtype in _WIDER and state.tracer is None and out.data.__class__ is np.ndarray \
            and not np.isfinite(out.data).all() and np.isfinite(input.data).all():
        # squares of finite float32 values overflowed (|x| ~ 1e20 and up): PyTorch
        # accumulates in double, so do it again there
        wide = var(input.to(_WIDER[input.data.dtype]), dim, keepdim=keepdim, correction=corr,
                   axis=axis, keepdims=keepdims)
        return wide.to(out.dtype)  # real (float32) for a complex64 input
    return out


_WIDER = {np.dtype(np.float32): np.float64, np.dtype(np.complex64): np.complex128}


def _welford_in_double(x: Tensor, ax, single: bool = False) -> bool:
    """Whether PyTorch's CPU var/std of float32 `x` over the axes `ax` (resolved) is its
    Welford kernel in double, rounded once: a reduction to more than one value (data far
    from 0 keeps its variance), or to one with `single` (var_mean, std_mean). var and std
    to one value take `_var_all_float32` instead."""
    if x.data.__class__ is not np.ndarray or x.data.dtype != np.float32:
        return False
    n = _count(x.shape, ax)
    return bool(n) and (single or x.size // n > 1)


def _float32_all(x: Tensor, ax) -> bool:
    """A float32 host var/std to one value: PyTorch's `std_var_all_cpu`."""
    if x.data.__class__ is not np.ndarray or x.data.dtype != np.float32:
        return False
    n = _count(x.shape, ax)
    return bool(n) and x.size // n == 1


def _var_all_float32(x: Tensor, ax, corr, keep: bool, take_sqrt: bool) -> Tensor:
    """PyTorch's float32 var/std to one value: the mean as a float32 (PyTorch's cascaded
    sum is close to exact: the double mean rounded), then the squares of x - mean summed in
    double and (their root) rounded once."""
    n = _count(x.shape, ax)
    wide = x.to(np.float64)
    m = (apply(ops.sum, wide, axis=ax, keepdims=True) / n).to(np.float32).to(np.float64)
    c = wide - m
    out = apply(ops.sum, c * c, axis=ax, keepdims=keep) / builtins.max(n - corr, 0)
    if take_sqrt:
        zero = out == 0
        out = where(zero, 0.0, sqrt(where(zero, 1.0, out)))
    return out.to(np.float32)


@float16_in_float32("input")
def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None, ddof=None, axis=None,
        keepdims=None, dtype=None, out=None) -> Tensor:
    """Standard deviation; where it is 0 (one element, constant data) its gradient is 0, as
    in PyTorch, not sqrt's infinite slope times 0. Positional arguments as `var`'s."""
    _no_out(out, "std")
    xt = _t(input)
    if dtype is None and not isinstance(dim, bool):
        ax = _rdims(dim, axis, xt.ndim, "std")
        if _welford_in_double(xt, ax):
            return std(xt.to(np.float64), dim, unbiased, keepdim, correction=correction,
                       ddof=ddof, axis=axis, keepdims=keepdims).to(np.float32)  # one rounding
        if _float32_all(xt, ax):
            given = [c for c in (correction, ddof) if c is not None]
            if unbiased is not None:
                given.append(1 if unbiased else 0)
            if len(given) <= 1:
                return _var_all_float32(xt, ax, given[0] if given else 1,
                                        _keep(keepdim, keepdims), True)
    v = var(input, dim, unbiased, keepdim, correction=correction, ddof=ddof, axis=axis,
            keepdims=keepdims, dtype=dtype)
    if dtype is None and xt.data.dtype in _WIDER and state.tracer is None \
            and v.data.__class__ is np.ndarray and not np.isfinite(v.data).all() \
            and np.isfinite(xt.data).all():  # a variance past float32's range: its root
        return std(xt.to(_WIDER[xt.data.dtype]), dim, unbiased, keepdim,  # may fit (as
                   correction=correction, ddof=ddof, axis=axis,          # torch's double
                   keepdims=keepdims).to(v.dtype)                        # accumulation)
    zero = v == 0
    return where(zero, 0.0, sqrt(where(zero, 1.0, v)))


max_result = namedtuple("max", ["values", "indices"])
"""What `max(x, dim)` returns, as `torch.return_types.max`: `values`, `indices`."""
min_result = namedtuple("min", ["values", "indices"])
"""What `min(x, dim)` returns, as `torch.return_types.min`: `values`, `indices`."""


def _extreme(name, x, dim, keepdim, axis, keepdims):
    if isinstance(dim, Tensor):  # torch.max(a, b) is the element-wise maximum
        if keepdim or axis is not None or keepdims is not None:
            raise TypeError(f"{name}(input, other): the element-wise form takes no keepdim/axis")
        return (maximum if name == "max" else minimum)(x, dim)
    x = _t(x)
    ax = _rdims(dim, axis, x.ndim, name)
    if x.size == 0 and (ax is None or builtins.any(
            x.shape[a] == 0 for a in (ax if isinstance(ax, tuple) else (ax,)))):
        if ax is not None:
            raise empty_dim(name, dim, x.shape)
        raise RuntimeError(f"{name}(): cannot reduce an empty tensor of shape {x.shape} over "
                           "all dims (a dim of size 0)")
    keep = _keep(keepdim, keepdims)
    _real_only(x.data, name)  # before any NumPy call (argmax would order complex numbers)
    op, arg, pair = ((ops.max, ops.argmax, max_result) if name == "max" else
                     (ops.min, ops.argmin, min_result))
    if dim is None or isinstance(ax, tuple):  # ties share the gradient
        if ax is None:  # the whole tensor: PyTorch's evenly_distribute_backward
            return apply(op, x, axis=None, keepdims=keep, evenly=True)
        return apply(op, x, axis=ax, keepdims=keep)
    if ax is None:  # a 0-d tensor's dim 0: its value, at index 0
        return pair(apply(op, x, axis=None, keepdims=keep), apply(arg, x, axis=None))
    # along one dim, as PyTorch: the values picked at the indices, so the gradient goes to
    # the returned index alone
    xd, st = x.data, state
    if (xd.__class__ is np.ndarray and st.tracer is None and st.forward is None
            and not (x.requires_grad and st.enabled)):  # nothing records: the same two
        idx = arg.forward(xd, axis=ax, keepdims=True)  # forwards without four tensors
        vals = np.take_along_axis(xd, idx, axis=ax)
        if not keep:
            idx, vals = idx.squeeze(ax), vals.squeeze(ax)
        return pair(Tensor._wrap(vals), Tensor._wrap(idx))
    indices = apply(arg, x, axis=ax, keepdims=True)
    values = apply(ops.gather, x, indices, axis=ax)
    if not keep:
        shape = x.shape[:ax] + x.shape[ax + 1:]
        indices = apply(ops.reshape, indices, shape=shape)
        values = apply(ops.reshape, values, shape=shape)
    return pair(values, indices)


def max(input, dim=None, keepdim=False, *, axis=None, keepdims=None, out=None,  # noqa: A001,A002
        other=None):
    """Largest value; with an int `dim`, PyTorch's pair `(values, indices)` along it.

    Without `dim` (or with NumPy's `axis`, or several dims) the values alone.
    `max(a, b)` with a tensor `b` is the element-wise `maximum`. As in PyTorch, the
    gradient of the pair's values goes to the returned index; where several elements
    tie for the maximum of a whole tensor (or of `axis`) it is shared equally.
    """
    _no_out(out, "max")
    if other is not None:
        return _elementwise_extreme("max", input, other, dim, axis)
    return _extreme("max", input, dim, keepdim, axis, keepdims)


def min(input, dim=None, keepdim=False, *, axis=None, keepdims=None, out=None,  # noqa: A001,A002
        other=None):
    """Smallest value; with an int `dim`, the pair `(values, indices)`; see `max`."""
    _no_out(out, "min")
    if other is not None:
        return _elementwise_extreme("min", input, other, dim, axis)
    return _extreme("min", input, dim, keepdim, axis, keepdims)


def _elementwise_extreme(fn: str, input, other, dim, axis) -> Tensor:  # noqa: A002
    """`max(input, other=b)`: PyTorch's element-wise overload, which takes no dim."""
    if dim is not None or axis is not None:
        raise TypeError(f"{fn}(): `other` (the element-wise {fn}) takes no dim")
    if not isinstance(other, Tensor):
        raise TypeError(f"{fn}(): argument 'other' must be Tensor, not {type(other).__name__}")
    return (maximum if fn == "max" else minimum)(input, other)


def prod(input, dim=None, keepdim=False, *, axis=None, keepdims=None, dtype=None,
         out=None) -> Tensor:
    """Product over `dim`; integer and bool inputs give int64 unless `dtype` says otherwise."""
    _no_out(out, "prod")
    input = _t(input)
    if dtype is not None and np.dtype(dtype) == np.bool_:  # torch: a bool product is `all`
        return prod(input.to(np.bool_), dim, keepdim, axis=axis, keepdims=keepdims).to(np.bool_)
    if dtype is not None:
        input = input.to(dtype)
    elif input.dtype.kind in "biu":  # PyTorch: int64 for every integer and bool input
        input = input.to(np.int64)
    return apply(ops.prod, input, axis=_rdims(dim, axis, input.ndim, "prod"),
                 keepdims=_keep(keepdim, keepdims))


def logsumexp(input, dim=None, keepdim=False, *, axis=None, keepdims=None) -> Tensor:
    """log(sum(exp(x))) over `dim`, computed stably (the max is subtracted first).
    Like `torch.logsumexp`."""
    input = _t(input)
    if input.dtype.kind in "biu":  # PyTorch: the default float dtype (NumPy would give float64)
        input = input.to(get_default_dtype())
    return apply(ops.logsumexp, input, axis=_rdims(dim, axis, input.ndim, "logsumexp"),
                 keepdims=_keep(keepdim, keepdims))


def _softmax_input(x, dtype, name: str) -> Tensor:
    """`x` cast to `dtype` when given; an integer, bool or complex input is refused, as
    PyTorch's kernels do (NumPy would give float64, or garbage in float16 for uint8)."""
    x = _t(x)
    if dtype is not None:
        x = x.to(dtype)
    if x.dtype.kind != "f":
        raise DtypeError(f"{name}() needs a real floating tensor, got {x.dtype}; pass dtype= "
                         "or convert with .float()")
    return x


def softmax(input, dim=-1, dtype=None, *, axis=None) -> Tensor:
    """exp(x) / sum(exp(x)) along `dim` (computed in `dtype` when given), stably. Like
    `torch.softmax`: `rg.softmax(rg.tensor([0.0, 0.0]), dim=0)` is `tensor([0.5, 0.5])`."""
    input = _softmax_input(input, dtype, "softmax")
    return apply(ops.softmax, input, axis=_rdims(dim if axis is None else None, axis, input.ndim,
                                            "softmax"))


def log_softmax(input, dim=-1, dtype=None, *, axis=None) -> Tensor:
    """log(softmax(x)) along `dim` (computed in `dtype` when given), stably (better than
    `softmax(x).log()`). Like `torch.log_softmax`."""
    input = _softmax_input(input, dtype, "log_softmax")
    ax = _rdims(dim if axis is None else None, axis, input.ndim, "log_softmax")
    return apply(ops.log_softmax, input, axis=ax)


def argmax(input, dim=None, keepdim=False, *, axis=None, keepdims=None, out=None) -> Tensor:
    """Index of the largest value (over all elements, or along `dim`); first one on ties.
    Like `torch.argmax`: `rg.argmax(rg.tensor([1.0, 5.0, 2.0]))` is `tensor(1)`."""
    _no_out(out, "argmax")
    input = _t(input)
    if input.dtype.kind in "bc":
        raise DtypeError(f"argmax(): does not support {input.dtype} input (as in PyTorch)")
    if input.size == 0 and dim is None and axis is None:
        raise IndexError("argmax(): an empty input needs a dim to reduce over (as in PyTorch)")
    ax = _rdims(dim, axis, input.ndim, "argmax")
    if input.size == 0 and ax is not None and input.shape[ax] == 0:
        raise empty_dim("argmax", dim if axis is None else axis, input.shape)
    return apply(ops.argmax, input, axis=ax, keepdims=_keep(keepdim, keepdims))


def argmin(input, dim=None, keepdim=False, *, axis=None, keepdims=None, out=None) -> Tensor:
    """Index of the smallest value (over all elements, or along `dim`); first one on ties.
    Like `torch.argmin`."""
    _no_out(out, "argmin")
    input = _t(input)
    if input.dtype.kind in "bc":
        raise DtypeError(f"argmin(): does not support {input.dtype} input (as in PyTorch)")
    if input.size == 0 and dim is None and axis is None:
        raise IndexError("argmin(): an empty input needs a dim to reduce over (as in PyTorch)")
    ax = _rdims(dim, axis, input.ndim, "argmin")
    if input.size == 0 and ax is not None and input.shape[ax] == 0:
        raise empty_dim("argmin", dim if axis is None else axis, input.shape)
    return apply(ops.argmin, input, axis=ax, keepdims=_keep(keepdim, keepdims))




# ----------------------------------------------------------------- amax, amin, aminmax


def _reduce_dims(dim, ndim: int, fn: str):
    """`dim` of amax/amin/count_nonzero: None or an empty tuple for every dim, an int, or
    a tuple/list of ints (a repeated one refused as PyTorch does, RuntimeError)."""
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        return None
    try:
        return _rdims(dim, None, ndim, fn)
    except ValueError as e:
        raise ArgumentError(str(e)) from None


def _check_extreme_input(x: Tensor, ax, fn: str) -> None:
    if x.dtype.kind == "c":
        raise DtypeError(f"{fn}(): complex tensors have no order (got {x.dtype})")
    if x.size == 0:
        if ax is None:
            raise ArgumentError(
                f"{fn}(): input of shape {x.shape} is empty; name the reduction dim with the "
                "'dim' argument (a reduction over every element has no identity)")
        for a in (ax if isinstance(ax, tuple) else (ax,)):
            if x.shape[a] == 0:
                raise IndexError(f"{fn}(): reduction dim {a} of shape {x.shape} has size 0 "
                                 "(the reduction has no identity)")


def _amax_amin(op, fn, input, dim, keepdim) -> Tensor:
    x = _t(input)
    ax = _reduce_dims(dim, x.ndim, fn)
    _check_extreme_input(x, ax, fn)
    return apply(op, x, axis=ax, keepdims=bool(keepdim))


def amax(input, dim=(), keepdim: bool = False, *, axis=None, keepdims=None) -> Tensor:
    """The largest value over `dim` (an int or a tuple; all dims by default).

    Like `torch.amax`: unlike `max(x, dim)` it returns the values alone and its
    gradient is shared equally among the elements that tie for the maximum."""
    return _amax_amin(ops.max, "amax", input, dim_alias(dim, axis, "amax", ()),
                      keepdim_alias(keepdim, keepdims, "amax"))


def amin(input, dim=(), keepdim: bool = False, *, axis=None, keepdims=None) -> Tensor:
    """The smallest value over `dim` (an int or a tuple; all dims by default); the
    gradient is shared equally among ties. Like `torch.amin`."""
    return _amax_amin(ops.min, "amin", input, dim_alias(dim, axis, "amin", ()),
                      keepdim_alias(keepdim, keepdims, "amin"))


aminmax_result = namedtuple("aminmax", ["min", "max"])
"""What `aminmax` returns, as `torch.return_types.aminmax`: `min`, `max`."""


def aminmax(input, *, dim: int | None = None, keepdim: bool = False, axis=None, keepdims=None):
    """`(min, max)` over all elements or along the int `dim`, as a named pair; each
    gradient is shared equally among ties (as `amin`/`amax`). Like `torch.aminmax`."""
    dim = dim_alias(dim, axis, "aminmax")
    keepdim = keepdim_alias(keepdim, keepdims, "aminmax")
    x = _t(input)
    if dim is not None and (isinstance(dim, bool) or not isinstance(dim, (int, np.integer))):
        raise TypeError(f"aminmax(): argument 'dim' must be an int, got {dim!r}")
    ax = None if dim is None else _rdims(int(dim), None, x.ndim, "aminmax")
    if x.size == 0 and dim is None:
        raise ArgumentError(f"aminmax(): cannot reduce the empty tensor of shape "
                                 f"{x.shape} (the operation has no identity)")
    _check_extreme_input(x, ax, "aminmax")
    keep = bool(keepdim)
    return number_outputs(aminmax_result(apply(ops.min, x, axis=ax, keepdims=keep),
                                         apply(ops.max, x, axis=ax, keepdims=keep)))


def count_nonzero(input, dim=None, *, axis=None) -> Tensor:
    """The number of nonzero entries over `dim` (an int or a tuple; all by default), as
    int64. Like `torch.count_nonzero`."""
    dim = dim_alias(dim, axis, "count_nonzero")
    x = _t(input)
    ax = _reduce_dims(dim, x.ndim, "count_nonzero")
    nz = x != 0
    return apply(ops.sum, nz.to(np.int64), axis=ax, keepdims=False)


def sum_to_size(input, *size) -> Tensor:
    """Tensor.sum_to_size: `input` summed down to `size`, which must broadcast to input's
    shape (the reverse of `expand`: leading dims summed away, size-1 dims kept)."""
    x = _t(input)
    if not size:
        raise TypeError("sum_to_size() missing the argument 'size'")
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    size = tuple(int(s) for s in size)
    if not size:
        # PyTorch's sum_to: an empty size is a full sum (a new tensor; bool and ints -> int64)
        return sum(x)
    lead = x.ndim - len(size)
    if lead < 0 or any(s not in (1, n) for s, n in zip(size, x.shape[lead:])):
        raise ArgumentError(f"sum_to_size(): size {size} is not expandable to the input's "
                            f"size {x.shape}")
    axes = tuple(range(lead)) + tuple(lead + k for k, (s, n) in enumerate(
        zip(size, x.shape[lead:])) if s == 1 and n != 1)
    if not axes:
        return x
    out = sum(x, axes, keepdim=True)  # torch.sum's dtype: bool and every int -> int64
    return apply(ops.reshape, out, shape=size) if lead else out
