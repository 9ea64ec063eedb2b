"""Convolution and pooling over 1, 2 or 3 spatial dimensions, PyTorch's names and layouts
(`rg.nn.functional` re-exports them).

Convolution is im2col (`unfold`, a strided view) then one matrix product per
group (unit stride on host float32/float64: `conv_unit`, one op taking a sample's columns
at a time, made of contiguous shifted copies); transposed convolution is its adjoint, a
matrix product then a col2im done phase by phase (`phase_fold`: each output phase a sum
of shifted contiguous column slices; on host float32/float64 with compiled kernels on,
`conv_t_unit`, one op taking a block of samples at a time).
Max pooling is the `max_pool` op (the gradient goes to PyTorch's argmax), average
pooling a sum over the windows divided by PyTorch's divisor. Every argument is
checked, with the shapes in the message, before any array is touched.
"""

from __future__ import annotations

import builtins
import math

import numpy as np

from .. import creation, devices, ops
from .._values import every_value
from ..dtypes import can_cast, result_type
from ..engine import apply
from ..grad_mode import state as _state
from ..ops.pooling import pool_geometry
from ..ops.windows import conv_t_fast, unit_compiled, unit_fast
from ..primitive import ArgumentError, DtypeError
from ..tensor import Tensor
from ._args import _t, int_arg
from ._errors import IndexRangeError, ShapeError
from ._fresh import fresh, row_major
from ._opmath import float16_in_float32
from .elementwise import abs as _abs
from .elementwise import where
from .indexing import flip, gather
from .linalg import matmul
from .math import div as _div
from .reductions import sum
from .shape import cat, permute

__all__ = [
    "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
    "max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d", "avg_pool2d", "avg_pool3d",
    "max_unpool1d", "max_unpool2d", "max_unpool3d", "adaptive_avg_pool1d",
    "adaptive_avg_pool2d", "adaptive_avg_pool3d", "adaptive_max_pool1d", "adaptive_max_pool2d",
    "adaptive_max_pool3d", "lp_pool1d", "lp_pool2d", "lp_pool3d", "max_pool1d_with_indices",
    "max_pool2d_with_indices", "max_pool3d_with_indices", "adaptive_max_pool1d_with_indices",
    "adaptive_max_pool2d_with_indices", "adaptive_max_pool3d_with_indices",
    "fractional_max_pool2d", "fractional_max_pool3d", "fractional_max_pool2d_with_indices",
    "fractional_max_pool3d_with_indices", "conv_tbc",
]

_DIMS = {1: "(N, C, L)", 2: "(N, C, H, W)", 3: "(N, C, D, H, W)"}


def _on(x: Tensor, table):
    """A host table (indices, weights) that an op takes as an attribute, on x's device."""
    return devices.const_like(table, x.data)


def _tuple(v, nd: int, name: str, fn: str) -> tuple:
    """An int or a sequence of `nd` ints as a tuple of `nd` ints."""
    v = int_arg(v)
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        return (int(v),) * nd
    try:
        t = tuple(int(a) for a in v)
    except TypeError:
        raise TypeError(f"{fn}: {name} must be an int or a tuple of {nd} ints, got {v!r}") \
            from None
    if len(t) == 1 and nd > 1:
        t = t * nd
    if len(t) != nd:
        raise ArgumentError(f"{fn}: {name} must be an int or a tuple of {nd} ints, got {v!r}")
    return t


def _batched(x: Tensor, nd: int, fn: str) -> tuple[Tensor, bool]:
    """(N, C, *S) input, and whether it came unbatched as (C, *S)."""
    if x.ndim == nd + 1:
        return x.reshape((1,) + x.shape), True
    if x.ndim != nd + 2:
        raise ArgumentError(f"{fn}: expected a {nd + 1}-D (unbatched) or {nd + 2}-D input "
                            f"{_DIMS[nd]}, got shape {x.shape}")
    return x, False


def _nonempty_planes(x: Tensor, fn: str) -> None:
    """PyTorch's pools take an empty batch but no empty channel or spatial dimension."""
    if 0 in x.shape[1:]:
        raise RuntimeError(f"{fn}: expected an input with non-zero channel and spatial sizes "
                           f"(an empty batch is allowed), got shape {x.shape}")


def _nonempty_or_no_samples(x: Tensor, fn: str) -> None:
    """PyTorch's convolutions take an empty batch or no channels, but refuse an input
    emptied by a spatial dimension (rather than return a result of padding and bias)."""
    if x.size == 0 and x.shape[0] and x.shape[1]:
        raise ArgumentError(f"{fn}: only an empty batch or zero channels are supported in an "
                            f"empty input, got shape {x.shape}")


def _unbatch(out: Tensor, squeeze: bool) -> Tensor:
    return out.reshape(out.shape[1:]) if squeeze else out


def _dense(out: Tensor) -> Tensor:
    """A convolution's result made row-major where its path left it in another order (the
    columns' products come out channel-first): PyTorch returns it contiguous, and ported
    code views it (`y.view(y.size(0), -1)`)."""
    return row_major(out)


# ---------------------------------------------------------------- convolution

def _conv_padding(padding, kernel, stride, dilation, nd, fn):
    """Symmetric padding, and (before, after) widths when 'same' needs them uneven."""
    if isinstance(padding, str):
        if padding == "valid":
            return (0,) * nd, None
        if padding == "same":
            if any(s != 1 for s in stride):
                raise ArgumentError(f"{fn}: padding='same' is not supported for strided "
                                    f"convolutions (stride={stride})")
            total = [d * (k - 1) for d, k in zip(dilation, kernel)]
            if all(t % 2 == 0 for t in total):
                return tuple(t // 2 for t in total), None
            return (0,) * nd, tuple((t // 2, t - t // 2) for t in total)
        raise ArgumentError(f"{fn}: padding must be an int, a tuple of ints, 'valid' or 'same', "
                            f"got {padding!r}")
    p = _tuple(padding, nd, "padding", fn)
    if any(a < 0 for a in p):
        raise ArgumentError(f"{fn}: padding must be non-negative, got {p}")
    return p, None


def _check_positive(vals, name, fn):
    if any(a <= 0 for a in vals):
        raise ArgumentError(f"{fn}: {name} must be positive, got {vals}")


def _conv(input, weight, bias, stride, padding, dilation, groups, nd: int, fn: str) -> Tensor:
    if _state.flops is not None:
        return _state.flops.run("conv", _conv, input, weight, bias, stride, padding, dilation,
                                groups, nd, fn)
    x, w = _t(input), _t(weight)
    if w.ndim != nd + 2:
        raise ArgumentError(f"{fn}: weight must have shape (out_channels, in_channels/groups, "
                            f"{', '.join('k' + str(i) for i in range(nd))}), got {w.shape}")
    x, squeeze = _batched(x, nd, fn)
    if x.dtype.kind == "b" or w.dtype.kind == "b":  # PyTorch: not implemented for 'Bool'
        raise DtypeError(f"{fn}: input and weight must not be bool, got {x.dtype} and {w.dtype}")
    if not isinstance(groups, (int, np.integer)) or groups <= 0:
        raise ArgumentError(f"{fn}: groups must be a positive int, got {groups!r}")
    o, cg = w.shape[:2]
    kernel = w.shape[2:]
    n, c = x.shape[:2]
    if c != cg * groups:
        raise ArgumentError(f"{fn}: input of shape {x.shape} has {c} channels, but weight of shape "
                            f"{w.shape} with groups={groups} expects {cg * groups}")
    if o % groups:
        raise ArgumentError(f"{fn}: out_channels ({o}, weight shape {w.shape}) must be divisible "
                            f"by groups ({groups})")
    s = _tuple(stride, nd, "stride", fn)
    d = _tuple(dilation, nd, "dilation", fn)
    _check_positive(s, "stride", fn)
    _check_positive(d, "dilation", fn)
    p, uneven = _conv_padding(padding, kernel, s, d, nd, fn)
    if bias is not None:
        bias = _t(bias)
        if bias.shape != (o,):
            raise ArgumentError(f"{fn}: bias must have shape ({o},), got {bias.shape}")
        if bias.dtype != x.dtype:  # torch adds no promotion here: it refuses
            raise DtypeError(f"{fn}: Input type ({x.dtype}) and bias type ({bias.dtype}) "
                             "should be the same")
    padded = tuple(a + 2 * b for a, b in zip(x.shape[2:], p)) if uneven is None else \
        tuple(a + b + e for a, (b, e) in zip(x.shape[2:], uneven))
    eff = tuple(dd * (k - 1) + 1 for dd, k in zip(d, kernel))
    if any(e > a for e, a in zip(eff, padded)):
        raise ArgumentError(f"{fn}: kernel of size {tuple(kernel)} (dilation {d}, so {eff}) is "
                            f"larger than the padded input {padded} (input shape {x.shape}, "
                            f"padding {p if uneven is None else uneven})")
    _nonempty_or_no_samples(x, fn)
    if uneven is not None:
        x = apply(ops.pad_constant, x, pads=uneven)
    k_total = cg * math.prod(kernel)
    padded = tuple(a + 2 * b for a, b in zip(x.shape[2:], p))
    outs = tuple(a - dd * (k - 1) for a, dd, k in zip(padded, d, kernel))
    if all(a == 1 for a in s) and x.size * math.prod(kernel) >= 1 << 18 \
            and (8 * math.prod(padded[1:]) <= 9 * math.prod(outs[1:])
                 or unit_compiled(x.data, w.data, None if bias is None else bias.data)):
        # unit stride, a large input, few junk columns (none with the compiled columns,
        # which are exact): columns made of contiguous shifted copies beat a strided
        # im2col (on small inputs the extra ops cost more than they save)
        if unit_fast(x.data, w.data, None if bias is None else bias.data):
            # host float arrays: one op, a sample's columns at a time (they stay in cache)
            k = dict(dilation=d, padding=p, groups=groups)
            out = apply(ops.conv_unit, x, w, **k) if bias is None else \
                apply(ops.conv_unit_bias, x, w, bias, **k)
            return _dense(fresh(_unbatch(out, squeeze)))
        cols = apply(ops.conv_cols, x, kernel=tuple(kernel), dilation=d, padding=p)
        if groups == 1:
            out = matmul(w.reshape(o, k_total), cols)
        else:
            out = matmul(w.reshape(groups, o // groups, k_total),
                         cols.reshape(groups, k_total, cols.shape[1]))
        out = out.reshape((o, n, outs[0]) + padded[1:])
        if outs[1:] != padded[1:]:  # drop the columns past each output row
            out = out[(slice(None),) * 3 + tuple(slice(0, a) for a in outs[1:])]
        out = permute(out, (1, 0) + tuple(range(2, 2 + nd)))
        if bias is not None:
            out = out + bias.reshape((1, o) + (1,) * nd)
        return _dense(fresh(_unbatch(out, squeeze)))
    cols = apply(ops.unfold, x, kernel=tuple(kernel), stride=s, padding=p, dilation=d)
    outs = cols.shape[2 + nd:]
    npix = n * math.prod(outs)
    # (N, C, *k, *O) -> (C*K, N*P) or (G, C/G*K, N*P): one matrix product per group
    cols = permute(cols, (1,) + tuple(range(2, 2 + nd)) + (0,) + tuple(range(2 + nd, 2 + 2 * nd)))
    if groups == 1:
        out = matmul(w.reshape(o, k_total), cols.reshape(k_total, npix))
    else:
        out = matmul(w.reshape(groups, o // groups, k_total),
                     cols.reshape(groups, k_total, npix))
    out = permute(out.reshape((o, n) + outs), (1, 0) + tuple(range(2, 2 + nd)))
    if bias is not None:
        out = out + bias.reshape((1, o) + (1,) * nd)
    return _dense(fresh(_unbatch(out, squeeze)))


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups: int = 1) -> Tensor:
    """1-D convolution: input (N, C, L), weight (O, C/groups, k); padding an int, 'same' or
    'valid'."""
    return _conv(input, weight, bias, stride, padding, dilation, groups, 1, "conv1d")


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups: int = 1) -> Tensor:
    """2-D convolution: input (N, C, H, W), weight (O, C/groups, kh, kw)."""
    return _conv(input, weight, bias, stride, padding, dilation, groups, 2, "conv2d")


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups: int = 1) -> Tensor:
    """3-D convolution: input (N, C, D, H, W), weight (O, C/groups, kd, kh, kw)."""
    return _conv(input, weight, bias, stride, padding, dilation, groups, 3, "conv3d")


def _conv_t(input, weight, bias, stride, padding, output_padding, groups, dilation, nd, fn):
    if _state.flops is not None:
        return _state.flops.run("conv_transpose", _conv_t, input, weight, bias, stride,
                                padding, output_padding, groups, dilation, nd, fn)
    if isinstance(input, Tensor) and isinstance(bias, Tensor):  # before float16 -> float32
        _conv_t_bias_dtype(input, bias, input.shape[0] if input.ndim == nd + 2 else 1, fn)
    return _conv_t_float(input, weight, bias, stride, padding, output_padding, groups,
                         dilation, nd, fn)


@float16_in_float32("input", "weight", "bias")  # the phases' sums in float32, as torch
def _conv_t_float(input, weight, bias, stride, padding, output_padding, groups, dilation, nd,
                  fn):
    x, w = _t(input), _t(weight)
    if w.ndim != nd + 2:
        raise ArgumentError(f"{fn}: weight must have shape (in_channels, out_channels/groups, "
                            f"{', '.join('k' + str(i) for i in range(nd))}), got {w.shape}")
    x, squeeze = _batched(x, nd, fn)
    for t in (x, w):  # PyTorch's kernels: floating, complex and int64 only
        if t.dtype.kind in "biu" and t.dtype != np.int64:
            raise DtypeError(f"{fn}: input and weight must be floating point, complex or "
                             f"int64, got {x.dtype} and {w.dtype}")
    if not isinstance(groups, (int, np.integer)) or groups <= 0:
        raise ArgumentError(f"{fn}: groups must be a positive int, got {groups!r}")
    cin, og = w.shape[:2]
    kernel = tuple(w.shape[2:])
    n, c = x.shape[:2]
    if c != cin:
        raise ArgumentError(f"{fn}: input of shape {x.shape} has {c} channels, but weight of shape "
                            f"{w.shape} expects {cin}")
    if cin % groups:
        raise ArgumentError(f"{fn}: in_channels ({cin}, weight shape {w.shape}) must be divisible "
                            f"by groups ({groups})")
    s = _tuple(stride, nd, "stride", fn)
    d = _tuple(dilation, nd, "dilation", fn)
    _check_positive(s, "stride", fn)
    _check_positive(d, "dilation", fn)
    if isinstance(padding, str):
        raise ArgumentError(f"{fn}: padding must be an int or a tuple of ints, got {padding!r}")
    p = _tuple(padding, nd, "padding", fn)
    op_ = _tuple(output_padding, nd, "output_padding", fn)
    if any(a < 0 for a in p) or any(a < 0 for a in op_):
        raise ArgumentError(f"{fn}: padding {p} and output_padding {op_} must be non-negative")
    if any(a >= builtins.max(ss, dd) for a, ss, dd in zip(op_, s, d)):
        raise ArgumentError(f"{fn}: output_padding {op_} must be smaller than either stride {s} "
                            f"or dilation {d}")
    o = og * groups
    if bias is not None:
        bias = _t(bias)
        if bias.shape != (o,):
            raise ArgumentError(f"{fn}: bias must have shape ({o},), got {bias.shape}")
    _nonempty_or_no_samples(x, fn)
    ins = x.shape[2:]
    outs = tuple((i - 1) * ss - 2 * pp + dd * (k - 1) + a + 1
                 for i, ss, pp, dd, k, a in zip(ins, s, p, d, kernel, op_))
    if any(a <= 0 for a in outs):
        raise ArgumentError(f"{fn}: input of shape {x.shape} with kernel {kernel}, stride {s}, "
                            f"padding {p}, dilation {d} gives a non-positive output size {outs}")
    k_prod = math.prod(kernel)
    # the input in per-sample frames (C, N*F), one matrix product to the columns (O*K, N*F),
    # then each output phase (outputs s*a + r) a sum of shifted column slices: no scatter
    geo = dict(ins=tuple(ins), outs=outs, kernel=kernel, stride=s, padding=p, dilation=d)
    if conv_t_fast(x.data, w.data, None if bias is None else bias.data):
        # host float arrays, compiled kernels: one op, a block of samples at a time (their
        # columns stay in cache between the product and the fold)
        if bias is None:
            return _dense(_unbatch(apply(ops.conv_t_unit, x, w, groups=groups, **geo), squeeze))
        return _dense(_unbatch(apply(ops.conv_t_unit_bias, x, w, bias, groups=groups, **geo),
                               squeeze))
    xs = apply(ops.phase_in, x, **geo)
    if groups == 1:
        cols = matmul(permute(w.reshape(cin, og * k_prod), (1, 0)), xs)
    else:
        wt = permute(w.reshape(groups, cin // groups, og * k_prod), (0, 2, 1))
        cols = matmul(wt, xs.reshape(groups, cin // groups, xs.shape[1]))
        cols = cols.reshape(o * k_prod, xs.shape[1])
    cols = apply(ops.phase_keep, cols, w, **geo)  # no 0 * inf from an infinite weight
    if bias is not None and bias.dtype == cols.dtype:
        out = apply(ops.phase_fold_bias, cols, bias, **geo)
    else:
        out = apply(ops.phase_fold, cols, **geo)
        if bias is not None:  # torch's out.add_(bias): computed promoted, kept in x's dtype
            out = (out + bias.reshape((1, o) + (1,) * nd)).to(x.dtype)
    return _dense(_unbatch(out, squeeze))


def _conv_t_bias_dtype(x: Tensor, bias: Tensor, batch: int, fn: str) -> None:
    """A bias of another dtype than the input, as torch's CPU paths: float16, and float32
    with more than one sample (its mkldnn kernel), refuse; the others add the bias in place
    (`out.add_(bias)`: cast into x's dtype, refused from a higher category)."""
    if bias.dtype == x.dtype:
        return
    if x.dtype == np.float16 or (x.dtype == np.float32 and batch > 1):
        raise DtypeError(f"{fn}: Input type ({x.dtype}) and bias type ({bias.dtype}) should "
                         "be the same")
    if not can_cast(result_type(x, bias), x.dtype):
        raise DtypeError(f"{fn}: result type {result_type(x, bias)} can't be cast to the "
                         f"desired output type {x.dtype} (the bias is {bias.dtype})")


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0,
                     groups: int = 1, dilation=1) -> Tensor:
    """Transposed 1-D convolution (the adjoint of conv1d): weight (C, O/groups, k)."""
    return _conv_t(input, weight, bias, stride, padding, output_padding, groups, dilation, 1,
                   "conv_transpose1d")


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0,
                     groups: int = 1, dilation=1) -> Tensor:
    """Transposed 2-D convolution (the adjoint of conv2d): weight (C, O/groups, kh, kw)."""
    return _conv_t(input, weight, bias, stride, padding, output_padding, groups, dilation, 2,
                   "conv_transpose2d")


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0,
                     groups: int = 1, dilation=1) -> Tensor:
    """Transposed 3-D convolution (the adjoint of conv3d): weight (C, O/groups, kd, kh, kw)."""
    return _conv_t(input, weight, bias, stride, padding, output_padding, groups, dilation, 3,
                   "conv_transpose3d")


# ---------------------------------------------------------------- pooling

def _pool_args(x, kernel_size, stride, padding, dilation, ceil_mode, nd, fn):
    """Checked (kernel, stride, padding, dilation) and the output size."""
    k = _tuple(kernel_size, nd, "kernel_size", fn)
    stride = int_arg(stride)
    s = k if stride is None or (not isinstance(stride, int) and len(stride) == 0) else \
        _tuple(stride, nd, "stride", fn)
    p = _tuple(padding, nd, "padding", fn)
    d = _tuple(dilation, nd, "dilation", fn)
    _check_positive(k, "kernel_size", fn)
    _check_positive(s, "stride", fn)
    _check_positive(d, "dilation", fn)
    if any(a < 0 for a in p):
        raise ArgumentError(f"{fn}: padding must be non-negative, got {p}")
    if any(2 * a > kk for a, kk in zip(p, k)):
        raise ArgumentError(f"{fn}: padding {p} should be at most half of kernel_size {k}")
    outs = tuple(pool_geometry(n, kk, ss, pp, dd, ceil_mode)[0]
                 for n, kk, ss, pp, dd in zip(x.shape[2:], k, s, p, d))
    if any(o <= 0 for o in outs):
        raise ArgumentError(f"{fn}: kernel_size {k} (stride {s}, padding {p}, dilation {d}) is "
                            f"larger than the padded input: input shape {x.shape} gives output "
                            f"size {outs}")
    return k, s, p, d


def _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, nd, fn):
    x, squeeze = _batched(_t(input), nd, fn)
    _nonempty_planes(x, fn)
    # PyTorch's CPU kernels also take integer inputs in 2-D and 3-D (say, downsampling a
    # label volume), and in 1-D with return_indices; bool, and integers in 1-D without
    # indices, are NotImplementedError there.
    if x.dtype.kind != "f" and not (x.dtype.kind in "iu" and (nd > 1 or return_indices)):
        raise DtypeError(f"{fn}: input must be floating point, got {x.dtype}")
    k, s, p, d = _pool_args(x, kernel_size, stride, padding, dilation, ceil_mode, nd, fn)
    attrs = dict(kernel=k, stride=s, padding=p, dilation=d, ceil_mode=bool(ceil_mode))
    out = _unbatch(apply(ops.max_pool, x, **attrs), squeeze)
    if return_indices:
        return out, _unbatch(apply(ops.max_pool_indices, x, **attrs), squeeze)
    return out


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """Max over sliding windows of (N, C, L); with return_indices, also where each max sits."""
    return _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices,
                     1, "max_pool1d")


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """Max over sliding windows of (N, C, H, W); indices flat over H*W as in PyTorch."""
    return _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices,
                     2, "max_pool2d")


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """Max over sliding windows of (N, C, D, H, W)."""
    return _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices,
                     3, "max_pool3d")


def _avg_divisor(sizes, k, s, p, outs, count_include_pad, divisor_override, dtype,
                 count=False):
    """PyTorch's divisor per output position: the window's size clipped to the padded input
    (or to the input, without count_include_pad), or the override; its reciprocal, or
    with `count` the divisor itself (int64, for integer inputs)."""
    if divisor_override is not None:
        return np.int64(divisor_override) if count else 1.0 / divisor_override
    total = np.ones((), dtype=np.float64)
    for n, kk, ss, pp, o in zip(sizes, k, s, p, outs):
        start = np.arange(o) * ss - pp
        end = np.minimum(start + kk, n + pp)
        if count_include_pad:
            size = end - start
        else:
            size = np.minimum(end, n) - np.maximum(start, 0)
        total = np.multiply.outer(total, size)
    if count:
        return total.astype(np.int64)
    if np.all(total == total.flat[0]):
        return 1.0 / float(total.flat[0])
    return (1.0 / total).astype(dtype)


def _avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad,
              divisor_override, nd, fn):
    x, squeeze = _batched(_t(input), nd, fn)
    _nonempty_planes(x, fn)
    # PyTorch's CPU kernels also take int64 (other integers and bool are
    # NotImplementedError there): the window sum divided by the count, rounded toward zero.
    if x.dtype.kind != "f" and x.dtype != np.int64 or (nd == 3 and x.dtype == np.float16):
        raise DtypeError(f"{fn}: input must be floating point (float16 not in 3-D) or int64, "
                         f"got {x.dtype}")  # as PyTorch's CPU kernels, complex refused too
    if divisor_override is not None and (not isinstance(divisor_override, (int, np.integer))
                                         or divisor_override == 0):
        raise ArgumentError(f"{fn}: divisor_override must be a non-zero int, got "
                            f"{divisor_override!r}")
    k, s, p, _ = _pool_args(x, kernel_size, stride, padding, 1, ceil_mode, nd, fn)
    sizes = x.shape[2:]
    geo = [pool_geometry(n, kk, ss, pp, 1, ceil_mode) for n, kk, ss, pp in zip(sizes, k, s, p)]
    outs = tuple(o for o, _ in geo)
    if any(e for _, e in geo):  # ceil mode: windows running past the padding read zeros
        x = apply(ops.pad_constant, x, pads=tuple((pp, pp + e) for pp, (_, e) in zip(p, geo)))
        cols = apply(ops.unfold, x, kernel=k, stride=s, padding=(0,) * nd, dilation=(1,) * nd)
    else:
        cols = apply(ops.unfold, x, kernel=k, stride=s, padding=p, dilation=(1,) * nd)
    total = sum(cols, tuple(range(2, 2 + nd)))
    if x.dtype == np.int64:
        d = _avg_divisor(sizes, k, s, p, outs, count_include_pad, divisor_override, x.dtype,
                         count=True)
        d = Tensor(devices.const_like(np.asarray(d, dtype=np.int64), x.data))
        return _unbatch(_div(total, d, rounding_mode="trunc").to(x.dtype), squeeze)
    return _unbatch(total * _avg_divisor(sizes, k, s, p, outs, count_include_pad,
                                         divisor_override, x.dtype), squeeze)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True) -> Tensor:
    """Average over sliding windows of (N, C, L)."""
    return _avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad, None,
                     1, "avg_pool1d")


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None) -> Tensor:
    """Average over sliding windows of (N, C, H, W), PyTorch's divisor rules."""
    return _avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override, 2, "avg_pool2d")


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None) -> Tensor:
    """Average over sliding windows of (N, C, D, H, W)."""
    return _avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override, 3, "avg_pool3d")


def _max_unpool(input, indices, kernel_size, stride, padding, output_size, nd, fn):
    x, squeeze = _batched(_t(input), nd, fn)
    idx = _t(indices)
    if squeeze:
        idx = idx.reshape((1,) + idx.shape)
    if idx.dtype != np.int64:  # PyTorch: RuntimeError, the narrower integers included
        raise DtypeError(f"{fn}: elements in indices should be type int64 but got "
                         f"{idx.dtype}")
    if x.dtype.kind != "f":  # PyTorch's kernels: floating types only
        raise DtypeError(f"{fn}: input must be floating point, got {x.dtype}")
    if idx.shape != x.shape:
        raise ArgumentError(f"{fn}: indices of shape {idx.shape} must have the input's shape "
                            f"{x.shape}")
    k = _tuple(kernel_size, nd, "kernel_size", fn)
    s = k if stride is None else _tuple(stride, nd, "stride", fn)
    p = _tuple(padding, nd, "padding", fn)
    default = tuple((i - 1) * ss - 2 * pp + kk for i, ss, pp, kk in zip(x.shape[2:], s, p, k))
    if output_size is None:
        outs = default
    else:
        outs = tuple(int(a) for a in output_size)
        if len(outs) == nd + 2:
            outs = outs[2:]
        if len(outs) != nd:
            raise ArgumentError(f"{fn}: output_size must have {nd} (or {nd + 2}) elements, got "
                                f"{output_size}")
        for o, dflt, ss in zip(outs, default, s):
            if not dflt - ss < o < dflt + ss:
                raise ArgumentError(f"{fn}: output_size {outs} is not between "
                                    f"{tuple(a - b for a, b in zip(default, s))} and "
                                    f"{tuple(a + b for a, b in zip(default, s))} (exclusive)")
    total = math.prod(outs)
    data = every_value(idx)
    if data.size and (data.min() < 0 or data.max() >= total):
        # PyTorch's RuntimeError ('Found an invalid max index'); also an IndexError.
        raise IndexRangeError(f"{fn}: indices must lie in [0, {total}) for output size {outs}; got "
                         f"values from {data.min()} to {data.max()}")
    return _unbatch(apply(ops.unpool, x, idx, shape=x.shape[:2] + outs, assign=True), squeeze)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0,
                 output_size=None) -> Tensor:
    """Inverse of max_pool1d: each value put back where its index says, zeros elsewhere."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 1,
                       "max_unpool1d")


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0,
                 output_size=None) -> Tensor:
    """Inverse of max_pool2d: each value put back where its index says, zeros elsewhere."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 2,
                       "max_unpool2d")


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0,
                 output_size=None) -> Tensor:
    """Inverse of max_pool3d."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 3,
                       "max_unpool3d")


# ---------------------------------------------------------------- adaptive pooling

def _adaptive_sizes(x, output_size, nd, fn):
    if isinstance(output_size, (int, np.integer)):
        outs = (int(output_size),) * nd
    else:
        outs = tuple(output_size)
        if len(outs) != nd:
            raise ArgumentError(f"{fn}: output_size must be an int or {nd} ints, got "
                                f"{output_size!r}")
        outs = tuple(n if o is None else int(o) for o, n in zip(outs, x.shape[2:]))
    if any(o < 0 for o in outs):
        raise ArgumentError(f"{fn}: output_size must be non-negative, got {outs}")
    if any(n == 0 for n in x.shape[2:]):
        raise ArgumentError(f"{fn}: input of shape {x.shape} has an empty spatial dimension")
    return outs


def _no_empty_channels(x, squeeze: bool, fn: str) -> None:
    """PyTorch's adaptive max pools (and its 3-D average pool, but for a plain mean) refuse
    a batched input with no channels; an unbatched one's first dim counts as its batch."""
    if not squeeze and x.shape[1] == 0:
        raise ArgumentError(f"{fn}(): Expected input to have non-zero size for non-batch "
                            f"dimensions, but input has sizes {list(x.shape)} with dimension 1 "
                            "being empty")


def _adaptive_windows(n, o):
    """PyTorch's windows [floor(i n / o), ceil((i + 1) n / o)): gather indices (o, kmax), each
    row padded by repeating its last index, and the window lengths."""
    if o == 0:  # an empty output (PyTorch allows it)
        return np.zeros((0, 1), dtype=np.int64), np.ones(0, dtype=np.int64)
    i = np.arange(o)
    start = (i * n) // o
    end = -((-(i + 1) * n) // o)
    length = end - start
    kmax = int(length.max())
    idx = np.minimum(start[:, None] + np.arange(kmax), end[:, None] - 1)
    return idx, length


def _adaptive_avg(input, output_size, nd, fn):
    x, squeeze = _batched(_t(input), nd, fn)
    if x.dtype.kind not in "fc":
        raise DtypeError(f"{fn}: input must be floating point, got {x.dtype}")
    outs = _adaptive_sizes(x, output_size, nd, fn)
    if x.dtype.kind == "c" and any(o != 1 for o in outs):  # PyTorch: only its mean path
        raise DtypeError(f"{fn}: complex input only with output size 1 (a mean), got {outs}")
    if nd == 3 and any(o != 1 for o in outs):
        _no_empty_channels(x, squeeze, fn)
    for i, (n, o) in enumerate(zip(x.shape[2:], outs)):
        if n == o:
            continue
        idx, length = _adaptive_windows(n, o)
        w = (np.arange(idx.shape[1]) < length[:, None]) / length[:, None]
        x = apply(ops.resample, x, axis=i - nd, index=_on(x, idx), weight=_on(x, w))
    return _unbatch(x, squeeze)


def adaptive_avg_pool1d(input, output_size) -> Tensor:
    """Average over PyTorch's adaptive windows so that (N, C, L) becomes (N, C, output_size)."""
    return _adaptive_avg(input, output_size, 1, "adaptive_avg_pool1d")


def adaptive_avg_pool2d(input, output_size) -> Tensor:
    """Average over adaptive windows: (N, C, H, W) to (N, C, *output_size)."""
    return _adaptive_avg(input, output_size, 2, "adaptive_avg_pool2d")


def adaptive_avg_pool3d(input, output_size) -> Tensor:
    """Average over adaptive windows: (N, C, D, H, W) to (N, C, *output_size)."""
    return _adaptive_avg(input, output_size, 3, "adaptive_avg_pool3d")


def _adaptive_max(input, output_size, return_indices, nd, fn):
    x, squeeze = _batched(_t(input), nd, fn)
    if x.dtype.kind != "f":
        raise DtypeError(f"{fn}: input must be floating point, got {x.dtype}")
    outs = _adaptive_sizes(x, output_size, nd, fn)
    _no_empty_channels(x, squeeze, fn)
    if 0 in outs:  # an empty output (PyTorch allows it), still on the graph
        for i, o in enumerate(outs):
            x = apply(ops.resample, x, axis=i - nd, index=_on(x, np.zeros((o, 1), np.int64)))
        out = _unbatch(x, squeeze)
        if not return_indices:
            return out
        return out, Tensor(devices.const_like(np.zeros(out.shape, np.int64), x.data))
    sizes = x.shape[2:]
    tables = []
    g = x
    for i, (n, o) in enumerate(zip(sizes, outs)):
        idx, _ = _adaptive_windows(n, o)
        tables.append(idx.reshape(-1))
        if idx.shape[1] * o != n or not np.array_equal(idx.reshape(-1), np.arange(n)):
            g = apply(ops.resample, g, axis=i - nd, index=_on(g, idx.reshape(-1, 1)))
    k = tuple(len(t) // o for t, o in zip(tables, outs))
    attrs = dict(kernel=k, stride=k, padding=(0,) * nd, dilation=(1,) * nd, ceil_mode=False)
    out = _unbatch(apply(ops.max_pool, g, **attrs), squeeze)
    if not return_indices:
        return out
    # Indices into the gathered array, mapped back to the input's with ops (so that rg.jit
    # replays them for new values): unravel, look each coordinate up in its table, ravel.
    flat = apply(ops.max_pool_indices, g, **attrs)
    lens = [len(t) for t in tables]
    orig = None
    for d, (t, n) in enumerate(zip(tables, sizes)):
        c = apply(ops.remainder, apply(ops.floor_divide, flat, math.prod(lens[d + 1:])), lens[d])
        table = Tensor(devices.const_like(t.astype(np.int64), g))
        o = apply(ops.index_select, table, c, axis=-1)
        orig = o if orig is None else orig * n + o
    return out, _unbatch(orig, squeeze)


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """Max over adaptive windows of (N, C, L); with return_indices, also where each max sits."""
    return _adaptive_max(input, output_size, return_indices, 1, "adaptive_max_pool1d")


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """Max over adaptive windows of (N, C, H, W); indices flat over H*W as in PyTorch."""
    return _adaptive_max(input, output_size, return_indices, 2, "adaptive_max_pool2d")


def adaptive_max_pool3d(input, output_size, return_indices=False):
    """Max over adaptive windows of (N, C, D, H, W); indices flat over D*H*W as in PyTorch."""
    return _adaptive_max(input, output_size, return_indices, 3, "adaptive_max_pool3d")


# ---------------------------------------------------------------- with indices, always

def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=False) -> tuple:
    """`max_pool1d` and its indices (whatever `return_indices` says), as PyTorch's."""
    return max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=False) -> tuple:
    """`max_pool2d` and its indices (whatever `return_indices` says), as PyTorch's."""
    return max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=False) -> tuple:
    """`max_pool3d` and its indices (whatever `return_indices` says), as PyTorch's."""
    return max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=False) -> tuple:
    """`adaptive_max_pool1d` and its indices, as PyTorch's."""
    return adaptive_max_pool1d(input, output_size, True)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=False) -> tuple:
    """`adaptive_max_pool2d` and its indices, as PyTorch's."""
    return adaptive_max_pool2d(input, output_size, True)


def adaptive_max_pool3d_with_indices(input, output_size, return_indices=False) -> tuple:
    """`adaptive_max_pool3d` and its indices, as PyTorch's."""
    return adaptive_max_pool3d(input, output_size, True)


# ---------------------------------------------------------------- power-average pooling

def _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, nd: int, fn: str) -> Tensor:
    """PyTorch's composition: (sum over the window of x^p)^(1/p) as an average pool of x^p
    times the window size; p = inf / -inf are max / -max pools of |x| / -|x|."""
    x = _t(input)
    k = _tuple(kernel_size, nd, "kernel_size", fn)
    if isinstance(norm_type, bool) or not isinstance(norm_type, (int, float, np.integer,
                                                                   np.floating)):
        raise TypeError(f"{fn}: norm_type must be a number, got {norm_type!r}")
    pools = {1: (max_pool1d, avg_pool1d), 2: (max_pool2d, avg_pool2d),
             3: (max_pool3d, avg_pool3d)}
    max_pool, avg_pool = pools[nd]
    if norm_type == math.inf:
        return max_pool(_abs(x), kernel_size, stride, 0, 1, ceil_mode)
    if norm_type == -math.inf:
        return -max_pool(-_abs(x), kernel_size, stride, 0, 1, ceil_mode)
    out = avg_pool(x ** norm_type, kernel_size, stride, 0, ceil_mode)
    # PyTorch's sign(out) * relu(|out|) is `out` with a zero gradient where out = 0 (where
    # the root's derivative is infinite): the same, with that point routed around the root
    zero = out.detach() == 0
    root = where(zero, 1.0, out * math.prod(k)) ** (1.0 / norm_type)
    return where(zero, 0.0 if norm_type > 0 else math.inf, root)


def lp_pool1d(input, norm_type: float, kernel_size, stride=None,
              ceil_mode: bool = False) -> Tensor:
    """Power-average pooling over (N, C, L): (sum of x^p over each window)^(1/p). Like
    `torch.nn.functional.lp_pool1d`."""
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 1, "lp_pool1d")


def lp_pool2d(input, norm_type: float, kernel_size, stride=None,
              ceil_mode: bool = False) -> Tensor:
    """Power-average pooling over (N, C, H, W). Like `torch.nn.functional.lp_pool2d`."""
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 2, "lp_pool2d")


def lp_pool3d(input, norm_type: float, kernel_size, stride=None,
              ceil_mode: bool = False) -> Tensor:
    """Power-average pooling over (N, C, D, H, W). Like `torch.nn.functional.lp_pool3d`."""
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 3, "lp_pool3d")


# ---------------------------------------------------------------- fractional max pooling

def _fractional_starts(samples: Tensor, n: int, out: int, k: int) -> Tensor:
    """PyTorch's pseudo-random window starts along one dimension, one row per (sample,
    channel): start_i = int((i + u) * alpha) - int(u * alpha), alpha = (n - k) / (out - 1),
    and the last window ends the input; computed in the samples' dtype with ops (so rg.jit
    replays them for new samples)."""
    dt = samples.dtype
    lead = samples.shape
    last = Tensor(devices.const_like(np.full(lead + (1,), n - k, dtype=np.int64),
                                     samples.data))
    if out == 1:
        return last
    alpha = float(np.asarray(n - k, dt) / np.asarray(out - 1, dt))
    i = Tensor(devices.const_like(np.arange(out - 1, dtype=dt), samples.data))
    u = samples.unsqueeze(-1)
    starts = ((i + u) * alpha).to(np.int64) - (u * alpha).to(np.int64)
    return cat([starts, last], -1)


def _fractional_max_pool(input, kernel_size, output_size, output_ratio, _random_samples,
                         nd: int, fn: str) -> tuple:
    x, squeeze = _batched(_t(input), nd, fn)
    if x.dtype.kind != "f":
        raise DtypeError(f"{fn}: input must be floating point, got {x.dtype}")
    if output_size is None and output_ratio is None:
        raise ArgumentError(f"{fn} requires specifying either an output_size or an output_ratio")
    k = _tuple(kernel_size, nd, "kernel_size", fn)
    sizes = x.shape[2:]
    if output_size is None:
        ratio = (float(output_ratio),) * nd if isinstance(output_ratio, (int, float)) else \
            tuple(float(r) for r in output_ratio)
        if len(ratio) != nd:
            raise ArgumentError(f"{fn}: output_ratio must be a number or {nd} numbers, got "
                                f"{output_ratio!r}")
        outs = tuple(int(n * r) for n, r in zip(sizes, ratio))
    else:
        outs = _tuple(output_size, nd, "output_size", fn)
    strict = nd == 3  # PyTorch's 3-D kernel wants output + kernel - 1 < input, the 2-D <=
    for n, o, kk in zip(sizes, outs, k):
        if kk <= 0 or o <= 0 or o + kk - 1 > n - strict:
            raise ShapeError(f"{fn}: pool size {k} and output size {outs} do not fit input "
                             f"of shape {tuple(sizes)} (need output + kernel - 1 "
                             f"{'<' if strict else '<='} input, all positive)")
    batch, channels = x.shape[:2]
    if _random_samples is None:
        u = creation.generator(like=x.data).random((batch, channels, nd)).astype(x.dtype)
        samples = Tensor(u)
    else:
        samples = _t(_random_samples)
        # as PyTorch: at least `batch` rows (the first `batch` are used; an unbatched
        # input is a batch of one)
        if (samples.ndim != 3 or samples.shape[0] < batch or samples.shape[1:] != (channels, nd)
                or samples.dtype != x.dtype):
            raise ShapeError(f"{fn}: _random_samples must have shape (>= {batch}, {channels}, "
                             f"{nd}) and the input's dtype {x.dtype}, got {samples.shape} "
                             f"{samples.dtype}")
        if samples.shape[0] != batch:
            samples = samples[:batch]
    # the samples run over the dimensions last to first for 2-D, first to last for 3-D,
    # as in PyTorch's kernels
    order = (1, 0) if nd == 2 else (0, 1, 2)
    flat = None  # (N, C, *outs, *k): each window element's flat index into the positions
    for d in range(nd):
        s = _fractional_starts(samples[..., order[d]], sizes[d], outs[d], k[d])
        pos = s.reshape((batch, channels) + (1,) * d + (outs[d],) + (1,) * (nd - 1 - d)
                        + (1,) * nd)
        off = Tensor(devices.const_like(
            np.arange(k[d], dtype=np.int64).reshape((1,) * (2 + nd + d) + (k[d],)
                                                    + (1,) * (nd - 1 - d)), x.data))
        coord = pos + off
        flat = coord if flat is None else flat * sizes[d] + coord
    kk, p = math.prod(k), math.prod(outs)
    flat = flat.reshape(batch, channels, p * kk)
    rows = x.reshape(batch, channels, math.prod(sizes))  # not -1: the batch may be empty
    cols = gather(rows, -1, flat).reshape(batch, channels, p, kk)
    flat = flat.reshape(batch, channels, p, kk)
    # the element PyTorch keeps: the first maximum, or the last NaN (a NaN replaces it)
    v = cols.detach()
    nan = v != v
    last_nan = (kk - 1) - flip(nan.to(np.int64), (-1,)).argmax(-1)
    pick = where(nan.to(np.int64).sum(-1) > 0, last_nan, v.argmax(-1)).unsqueeze(-1)
    out = gather(cols, -1, pick).reshape((batch, channels) + outs)
    idx = gather(flat, -1, pick).reshape((batch, channels) + outs)
    return _unbatch(out, squeeze), _unbatch(idx, squeeze)


def fractional_max_pool2d_with_indices(input, kernel_size, output_size=None,
                                       output_ratio=None, return_indices=False,
                                       _random_samples=None) -> tuple:
    """`fractional_max_pool2d` and its indices (always), as PyTorch's."""
    return _fractional_max_pool(input, kernel_size, output_size, output_ratio, _random_samples,
                                2, "fractional_max_pool2d")


def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None,
                          return_indices=False, _random_samples=None):
    """Max pooling of (N, C, H, W) over pseudo-random overlapping windows of `kernel_size`
    giving `output_size` (or `output_ratio` of the input), the windows drawn from
    `_random_samples` (uniform [0, 1), (N, C, 2); drawn from the global generator when
    None). Like `torch.nn.functional.fractional_max_pool2d`."""
    out, idx = fractional_max_pool2d_with_indices(input, kernel_size, output_size,
                                                  output_ratio, True, _random_samples)
    return (out, idx) if return_indices else out


def fractional_max_pool3d_with_indices(input, kernel_size, output_size=None,
                                       output_ratio=None, return_indices=False,
                                       _random_samples=None) -> tuple:
    """`fractional_max_pool3d` and its indices (always), as PyTorch's."""
    return _fractional_max_pool(input, kernel_size, output_size, output_ratio, _random_samples,
                                3, "fractional_max_pool3d")


def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None,
                          return_indices=False, _random_samples=None):
    """Fractional max pooling of (N, C, D, H, W) (`_random_samples` (N, C, 3)). Like
    `torch.nn.functional.fractional_max_pool3d`."""
    out, idx = fractional_max_pool3d_with_indices(input, kernel_size, output_size,
                                                  output_ratio, True, _random_samples)
    return (out, idx) if return_indices else out


# ---------------------------------------------------------------- time-batch-channel layout

def conv_tbc(input, weight, bias, pad: int = 0) -> Tensor:
    """1-D convolution of a (time, batch, in_channels) sequence with weight (kernel_width,
    in_channels, out_channels) and bias (out_channels,), `pad` zeros at both ends of time (a
    negative pad crops): output (time + 2 pad - kernel_width + 1, batch, out_channels). Like
    `torch.conv_tbc`; it is `conv1d` with the axes moved."""
    x, w, b = _t(input), _t(weight), _t(bias)
    if x.ndim != 3:
        raise ShapeError(f"conv_tbc: input must have 3 dims (time, batch, in_channels), got "
                         f"shape {x.shape}")
    if w.ndim != 3 or w.shape[1] != x.shape[2]:
        raise ShapeError(f"conv_tbc: weight (kernel_width, in_channels, out_channels) of "
                         f"shape {w.shape} does not fit input of shape {x.shape}: dim 1 must "
                         f"be {x.shape[2]}")
    if b.shape != (w.shape[2],):
        raise ShapeError(f"conv_tbc: bias size must equal dim 2 of the weight (output "
                         f"channels, {w.shape[2]}), got shape {b.shape}")
    pad = int(pad)
    if pad < 0:
        x = x[-pad:x.shape[0] + pad]
        pad = 0
    steps = x.shape[0] + 2 * pad - w.shape[0] + 1
    if steps < 0:
        raise ShapeError(f"conv_tbc: kernel width {w.shape[0]} is longer than the padded "
                         f"input plus one ({x.shape[0]} steps, pad {pad})")
    # the zeros padded here, not by conv1d, which takes neither an empty time axis nor an
    # empty output as torch.conv_tbc does: one more step for an empty output, dropped after
    xs = apply(ops.pad_constant, permute(x, (1, 2, 0)), pads=((pad, pad + (steps == 0)),))
    out = conv1d(xs, permute(w, (2, 1, 0)), b)
    return permute(out[..., :steps], (2, 0, 1))
