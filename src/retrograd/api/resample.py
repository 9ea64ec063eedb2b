"""Padding, interpolation, pixel and channel shuffling, PyTorch's names and semantics
(`rg.nn.functional` re-exports them).

Constant padding is the `pad_constant` op; reflect, replicate and circular
padding and every interpolation mode are `resample` ops, one per resized
dimension, with the source indices and weights PyTorch uses.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from .. import devices, ops
from ..engine import apply
from ..tensor import Tensor
from ._args import _t
from ._errors import ArgumentError, DtypeError, ShapeError, UnsupportedArgumentError
from ._fresh import fresh
from .shape import permute

__all__ = ["pad", "interpolate", "upsample", "pixel_shuffle", "pixel_unshuffle",
           "upsample_nearest", "upsample_bilinear", "channel_shuffle", "native_channel_shuffle"]

_PAD_MODES = ("constant", "reflect", "replicate", "circular")


def _on(x: Tensor, table):
    """A host table (indices, weights) that an op takes as an attribute, on x's device (the
    op's forward gathers with it there)."""
    return devices.const_like(table, x.data)


def _pad_index(n: int, before: int, after: int, mode: str) -> np.ndarray:
    """Source index of each output position along one dimension, as (n + before + after, 1),
    as PyTorch pads with negative widths: reflect and replicate pad the whole dimension and
    then crop; circular crops first and wraps what is left."""
    start = 0
    if mode == "circular":
        start = max(-before, 0)
        n = n - start - max(-after, 0)
        before, after = max(before, 0), max(after, 0)
    u = np.arange(-before, n + after)
    if mode == "reflect":
        period = 2 * (n - 1)
        u = np.abs(u) % period if period else np.zeros_like(u)
        u = np.where(u >= n, period - u, u)
    elif mode == "replicate":
        u = np.clip(u, 0, n - 1)
    else:
        u = u % n
    return (u + start).reshape(-1, 1)


def pad(input, pad, mode: str = "constant", value=None) -> Tensor:
    """Pad the last len(pad) // 2 dimensions; `pad` lists (left, right) widths starting from the
    last dimension, as in PyTorch. Negative widths crop. Modes: constant, reflect, replicate,
    circular (the last three pad 1 to 3 dimensions after a batch and a channel dimension)."""
    x = _t(input)
    try:
        widths = [int(a) for a in pad]
    except TypeError:
        raise TypeError(f"pad: pad must be a sequence of ints, got {pad!r}") from None
    if len(widths) % 2:
        raise ArgumentError(f"pad: pad must have an even number of elements, got {len(widths)}")
    nd = len(widths) // 2
    if mode not in _PAD_MODES:  # torch: NotImplementedError("Unrecognised padding mode")
        raise UnsupportedArgumentError(f"pad: mode must be one of {', '.join(_PAD_MODES)}, got "
                                       f"{mode!r}")
    if nd > x.ndim:
        raise ArgumentError(f"pad: padding of length {len(widths)} pads {nd} dimensions, but the "
                            f"input of shape {x.shape} has only {x.ndim}")
    pads = tuple((widths[2 * i], widths[2 * i + 1]) for i in reversed(range(nd)))
    sizes = x.shape[x.ndim - nd:]
    new = tuple(n + b + a for n, (b, a) in zip(sizes, pads))
    if any(s < 0 for s in new):
        raise ArgumentError(f"pad: padding {tuple(widths)} of input of shape {x.shape} gives a "
                            f"negative size {new}")
    if mode == "constant":
        for n, (b, a) in zip(sizes, pads):
            if n - max(-b, 0) - max(-a, 0) < 0:
                raise ArgumentError(f"pad: the negative paddings of {tuple(widths)} crop more than "
                                    f"the input of shape {x.shape} has")
        if not nd:
            return apply(ops.pad_constant, x, pads=())
        return apply(ops.pad_constant, x, pads=pads, value=0.0 if value is None else value)
    if value is not None and value != 0:
        raise ArgumentError(f"pad: value is only used with mode='constant', got mode={mode!r}")
    if mode != "circular" and x.dtype.kind == "b":  # PyTorch: not implemented for 'Bool'
        raise DtypeError(f"pad: mode {mode!r} does not take a bool input")
    if not 1 <= nd <= 3 or x.ndim not in (nd + 1, nd + 2):
        raise NotImplementedError(
            f"pad: mode {mode!r} pads the last 1 to 3 dimensions of a ({nd + 1})-D or "
            f"({nd + 2})-D input; got padding of length {len(widths)} for input of shape "
            f"{x.shape}")
    for n, (b, a) in zip(sizes, pads):
        if mode == "reflect" and (b >= n or a >= n):
            raise ArgumentError(f"pad: with mode='reflect' each padding must be smaller than its "
                                f"dimension: padding {tuple(widths)}, input shape {x.shape}")
        left = n - max(-b, 0) - max(-a, 0)  # what circular wraps, after its crops
        if mode == "circular" and (b > left or a > left):
            raise ArgumentError(f"pad: with mode='circular' each padding must be at most its "
                                f"dimension after the negative paddings' crops ({left}): "
                                f"padding {tuple(widths)}, input shape {x.shape}")
        if mode != "circular" and (b or a) and n + b + a < 1:
            raise ArgumentError(f"pad: with mode={mode!r} the padded size must be at least 1, "
                                f"got {n + b + a} from padding {tuple(widths)} of input of shape "
                                f"{x.shape}")
        if n == 0 and (b > 0 or a > 0):
            raise ArgumentError(f"pad: cannot pad an empty dimension with mode={mode!r} (input "
                                f"shape {x.shape})")
    for i, (n, (b, a)) in enumerate(zip(sizes, pads)):
        if b or a:
            x = apply(ops.resample, x, axis=i - nd, index=_on(x, _pad_index(n, b, a, mode)))
    return x


# ---------------------------------------------------------------- interpolation

_MODES = {"nearest": None, "nearest-exact": None, "area": None, "linear": 1, "bilinear": 2,
          "bicubic": 2, "trilinear": 3, "lanczos": 2}


def _nearest(n_in, n_out, scale, exact):
    """PyTorch's nearest source indices (computed in float32, as it does)."""
    s = np.float32(1.0 / scale) if scale is not None and scale > 0 else \
        np.float32(n_in) / np.float32(n_out)
    dst = np.arange(n_out, dtype=np.float32)
    if exact:
        dst = dst + np.float32(0.5)
    src = np.floor(dst * s).astype(np.int64)
    return np.minimum(src, n_in - 1).reshape(-1, 1)


def _source(n_in, n_out, scale, align_corners, cubic):
    """Source coordinate of each output position (PyTorch's area_pixel_compute_source_index)."""
    dst = np.arange(n_out, dtype=np.float64)
    if align_corners:
        s = (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
        return s * dst
    s = 1.0 / scale if scale is not None and scale > 0 else n_in / n_out
    src = s * (dst + 0.5) - 0.5
    return src if cubic else np.maximum(src, 0.0)


def _source32(n_in, n_out, scale, align_corners):
    """`_source` in float32 arithmetic, as PyTorch's CPU kernels compute it for float32
    input (its opmath type), with its fused multiply-add (one rounding of s * (d + 0.5) -
    0.5, emulated exactly in float64): on large sizes the rounded coordinates move the
    weights by up to 1e-4 relative."""
    f = np.float32
    dst = np.arange(n_out, dtype=f)
    if align_corners:
        s = f(n_in - 1) / f(n_out - 1) if n_out > 1 else f(0.0)
        return s * dst
    s = f(1.0 / scale) if scale is not None and scale > 0 else f(n_in) / f(n_out)
    src = (np.float64(s) * (dst + f(0.5)).astype(np.float64) - 0.5).astype(f)
    return np.maximum(src, f(0.0))


def _linear_taps(n_in, n_out, scale, align_corners, single: bool = False):
    """Indices and weights of linear interpolation; `single`: float32 coordinates."""
    src = (_source32 if single else
           lambda *a: _source(*a, False))(n_in, n_out, scale, align_corners)
    i0 = np.minimum(np.floor(src).astype(np.int64), n_in - 1)
    lam = src - i0.astype(src.dtype)
    i1 = np.minimum(i0 + 1, n_in - 1)
    return np.stack([i0, i1], 1), np.stack([1.0 - lam, lam], 1)


def _cubic_taps(n_in, n_out, scale, align_corners):
    a = -0.75
    src = _source(n_in, n_out, scale, align_corners, True)
    i = np.floor(src).astype(np.int64)
    t = src - i

    def near(x):  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    w = np.stack([far(t + 1), near(t), near(1 - t), far(2 - t)], 1)
    idx = np.clip(i[:, None] + np.arange(-1, 3), 0, n_in - 1)
    return idx, w


def _aa_filter(mode: str):
    """(support of the filter at unit scale, the filter) of PyTorch's (and PIL's) antialiased
    modes: a triangle, Keys' cubic with a = -0.5, Lanczos with a = 3."""
    if mode == "bilinear":
        return 1.0, lambda x: np.maximum(1.0 - np.abs(x), 0.0)
    if mode == "bicubic":
        def cubic(x, a=-0.5):
            x = np.abs(x)
            return np.where(x < 1, ((a + 2) * x - (a + 3)) * x * x + 1,
                            np.where(x < 2, (((x - 5) * x + 8) * x - 4) * a, 0.0))
        return 2.0, cubic
    return 3.0, lambda x: np.where(np.abs(x) < 3, np.sinc(x) * np.sinc(x / 3), 0.0)


def _aa_taps(n_in, n_out, scale, align_corners, mode):
    """PyTorch's antialiased taps along one dimension: each output reads the inputs within
    the filter's support, widened by the scale when shrinking, weights normalised to sum
    to 1 (indices (n_out, K), weights (n_out, K), unused taps weighted 0)."""
    if align_corners:
        s = (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
    else:
        s = 1.0 / scale if scale is not None and scale > 0 else n_in / n_out
    half, filt = _aa_filter(mode)
    support = half * s if s >= 1.0 else half
    inv = 1.0 / s if s >= 1.0 else 1.0
    k = int(math.ceil(support)) * 2 + 1
    center = s * (np.arange(n_out) + 0.5)
    lo = np.maximum((center - support + 0.5).astype(np.int64), 0)  # C++ truncation
    size = np.clip(np.minimum((center + support + 0.5).astype(np.int64), n_in) - lo, 0, k)
    j = np.arange(k)
    w = np.where(j < size[:, None], filt((j + lo[:, None] - center[:, None] + 0.5) * inv), 0.0)
    total = w.sum(axis=1, keepdims=True)
    w = np.divide(w, total, out=np.zeros_like(w), where=total != 0)
    idx = np.minimum(lo[:, None] + j, n_in - 1)
    return idx, w


def _u8_filter(mode: str, antialias: bool):
    """PyTorch's uint8 filters: a triangle; Keys' cubic with a = -0.5 (antialiased, as PIL)
    or a = -0.75 (not antialiased, as OpenCV)."""
    if mode == "bilinear":
        return 2, lambda x: max(1.0 - abs(x), 0.0)
    a = -0.5 if antialias else -0.75

    def cubic(x):
        x = abs(x)
        if x < 1.0:
            return ((a + 2) * x - (a + 3)) * x * x + 1
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a if x < 2.0 else 0.0
    return 4, cubic


def _u8_taps(n_in, n_out, scale, align_corners, antialias, mode):
    """PyTorch's fixed-point taps of uint8 bilinear/bicubic resizing along one dimension
    (`_compute_index_ranges_int16_weights`): (first index (n_out,), weights as ints
    (n_out, K), precision in bits). Not antialiased, taps beyond an edge add onto the
    edge pixel's weight; antialiased, the window is cut at the edges and renormalised."""
    k, filt = _u8_filter(mode, antialias)
    if align_corners:
        s = (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
    else:
        s = 1.0 / scale if scale is not None and scale > 0 else n_in / n_out
    w = np.zeros((n_out, k if not antialias else 1), np.float64)
    lo = np.zeros(n_out, np.int64)
    w_max = 0.0
    if antialias:
        support = k * 0.5 * s if s >= 1.0 else k * 0.5
        k = int(math.ceil(support)) * 2 + 1
        w = np.zeros((n_out, k), np.float64)
        inv = 1.0 / s if s >= 1.0 else 1.0
        for i in range(n_out):
            center = s * (i + 0.5)
            lo[i] = max(int(center - support + 0.5), 0)
            size = min(max(min(int(center + support + 0.5), n_in) - lo[i], 0), k)
            row = [filt((j + lo[i] - center + 0.5) * inv) for j in range(size)]
            total = sum(row)
            if total != 0.0:
                w[i, :size] = [v / total for v in row]
                w_max = max(w_max, max(w[i, :size]))
    else:
        half = k // 2
        for i in range(n_out):
            src = s * i if align_corners else s * (i + 0.5) - 0.5
            if not align_corners and k == 2 and src < 0:
                src = 0.0
            idx = min(int(math.floor(src)), n_in - 1)
            lam = min(max(src - idx, 0.0), 1.0)
            first = idx - half + 1
            lo[i] = max(first, 0)
            size = min(max(min(idx + half + 1, n_in) - lo[i], 0), k)
            at = 0
            for j in range(k):
                if first + j <= 0:
                    at = 0
                elif first + j >= n_in - 1:
                    at = size - 1
                w[i, at] += filt((j + 1 - half) - lam)
                w_max = max(w_max, w[i, at])
                at += 1
    bits = 0
    while bits < 22 and int(0.5 + w_max * (1 << (bits + 1))) < (1 << 15):
        bits += 1
    v = w * (1 << bits)
    return lo, np.trunc(np.where(v < 0, v - 0.5, v + 0.5)).astype(np.int64), bits


def _u8_resize(x: Tensor, outs, scales, align_corners, antialias, mode) -> Tensor:
    """uint8 bilinear/bicubic resizing as PyTorch's CPU kernels do it: separable, the last
    dimension first, each pass in fixed point (int16 weights, rounding, clamping to 0..255
    into a uint8 intermediate); a dimension whose size stays is skipped. Integer images
    carry no gradient, so this runs on the host outside the graph."""
    a = devices.host(x.data)
    for axis in (-1, -2):
        n, o = a.shape[axis], outs[axis]
        if n == o:
            continue
        lo, w, bits = _u8_taps(n, o, scales[axis], align_corners, antialias, mode)
        shape = (o,) + (1,) * (-1 - axis)  # the weights along `axis`, broadcast
        acc = np.full(a.shape[:a.ndim + axis] + (o,) + a.shape[a.ndim + axis + 1:],
                      1 << (bits - 1), np.int64)
        for j in range(w.shape[1]):  # one tap at a time: memory of one output
            taken = np.take(a, np.minimum(lo + j, n - 1), axis=a.ndim + axis)
            acc += taken.astype(np.int64) * w[:, j].reshape(shape)
        a = np.clip(acc >> bits, 0, 255).astype(np.uint8)
    return Tensor(devices.const_like(np.ascontiguousarray(a), x.data))


def interpolate(input, size=None, scale_factor=None, mode: str = "nearest", align_corners=None,
                recompute_scale_factor=None, antialias: bool = False) -> Tensor:
    """Resize the spatial dimensions of (N, C, *S) to `size` or by `scale_factor`, with
    PyTorch's modes (nearest, nearest-exact, linear, bilinear, bicubic, trilinear, area,
    and lanczos, which is antialiased only); `antialias` (bilinear, bicubic) widens the
    filter when shrinking, as PIL does."""
    x = _t(input)
    if mode not in _MODES:  # PyTorch's NotImplementedError for these three, as its
        raise UnsupportedArgumentError(  # interpolate falls through to "Input Error"
            f"interpolate: mode must be one of {', '.join(_MODES)}, got {mode!r}")
    nd = x.ndim - 2
    if nd < 1 or nd > 3:
        raise UnsupportedArgumentError(f"interpolate: expected a 3-D, 4-D or 5-D input (N, C, "
                                       f"*spatial), got shape {x.shape}")
    want = _MODES[mode]
    if want is not None and want != nd:
        raise UnsupportedArgumentError(f"interpolate: mode {mode!r} needs a {want + 2}-D input, "
                                       f"got shape {x.shape}")
    if align_corners is not None and mode not in ("linear", "bilinear", "bicubic", "trilinear") \
            and not (mode == "lanczos" and not align_corners):
        raise ArgumentError("interpolate: align_corners option can only be set with the "
                            "interpolating modes: linear | bilinear | bicubic | trilinear")
    if antialias and mode not in ("bilinear", "bicubic", "lanczos"):
        raise ValueError("interpolate: antialias=True is restricted to the bilinear, bicubic "
                         f"and lanczos modes with a 4-D input, got mode {mode!r}")
    if mode == "lanczos" and (align_corners or not antialias):
        raise ValueError("interpolate: mode 'lanczos' needs antialias=True and does not "
                         f"support align_corners=True, got antialias={antialias}, "
                         f"align_corners={align_corners}")
    if x.dtype.kind not in "fc" and not (x.dtype == np.uint8 and mode in (
            "nearest", "nearest-exact", "bilinear", "bicubic")):
        raise DtypeError(f"interpolate: input must be floating point (or uint8 with a nearest, "
                         f"bilinear or bicubic mode, as images are resized), got {x.dtype} with "
                         f"mode {mode!r}")
    if x.dtype.kind == "c" and mode != "area" or antialias and x.dtype == np.float16:
        raise DtypeError(f"interpolate: mode {mode!r}{' with antialias' if antialias else ''} "
                         f"does not take a {x.dtype} input (as PyTorch's CPU kernels)")
    if (size is None) == (scale_factor is None):
        raise ArgumentError("interpolate: give exactly one of size and scale_factor")
    if recompute_scale_factor and size is not None:
        raise ArgumentError("interpolate: recompute_scale_factor is not meaningful with an "
                            "explicit size")
    sizes = x.shape[2:]
    scales = [None] * nd
    if size is not None:
        outs = (int(size),) * nd if isinstance(size, (int, np.integer)) else \
            tuple(int(a) for a in size)
        if len(outs) != nd:
            raise ArgumentError(f"interpolate: size must be an int or {nd} ints for input of shape "
                                f"{x.shape}, got {size!r}")
    else:
        sf = (float(scale_factor),) * nd if isinstance(scale_factor, (int, float, np.number)) \
            else tuple(float(a) for a in scale_factor)
        if len(sf) != nd:
            raise ArgumentError(f"interpolate: scale_factor must be a number or {nd} numbers for "
                                f"input of shape {x.shape}, got {scale_factor!r}")
        if any(not (f > 0) or math.isinf(f) for f in sf):
            raise ArgumentError(f"interpolate: scale_factor must be positive, got {scale_factor!r}")
        outs = tuple(int(math.floor(n * f)) for n, f in zip(sizes, sf))
        if not recompute_scale_factor:
            scales = list(sf)
    if any(o < 0 for o in outs) or (mode != "area" and any(o == 0 for o in outs)):
        raise ArgumentError(f"interpolate: output size {outs} must be positive (input shape "
                            f"{x.shape})")
    if mode == "area":  # as PyTorch's adaptive average pooling, an empty output is allowed
        from .windows import _adaptive_avg
        return _adaptive_avg(x, outs, nd, "interpolate")
    if any(n == 0 for n in sizes):
        raise ArgumentError(f"interpolate: input of shape {x.shape} has an empty spatial dimension")
    if x.size == 0 and 0 in x.shape[1:]:  # PyTorch's upsampling kernels take an empty batch only
        raise ArgumentError(f"interpolate: expected a non-empty {x.ndim}-D input (an empty batch "
                            f"is allowed), got shape {x.shape}")
    if x.dtype == np.uint8 and mode in ("bilinear", "bicubic"):
        return _u8_resize(x, outs, scales, bool(align_corners), antialias, mode)
    for i, (n, o, sc) in enumerate(zip(sizes, outs, scales)):
        axis = i - nd
        if mode in ("nearest", "nearest-exact"):
            if n == o and (sc in (None, 1.0) or (mode == "nearest" and nd == 2)):
                continue  # PyTorch's 2-d nearest copies a dimension whose size stays
            if mode == "nearest" and nd == 2 and o == 2 * n:  # and halves the index of one
                index = (np.arange(o) >> 1).reshape(-1, 1)   # that doubles, whatever the scale
            else:
                index = _nearest(n, o, sc, mode != "nearest")
            x = apply(ops.resample, x, axis=axis, index=_on(x, index))
        elif antialias:
            if n == o:  # PyTorch's separable kernel skips a dimension whose size stays,
                continue  # whatever its scale_factor
            idx, w = _aa_taps(n, o, sc, bool(align_corners), mode)
            x = apply(ops.resample, x, axis=axis, index=_on(x, idx), weight=_on(x, w))
        elif mode == "bicubic":
            idx, w = _cubic_taps(n, o, sc, bool(align_corners))
            x = apply(ops.resample, x, axis=axis, index=_on(x, idx), weight=_on(x, w))
        else:
            if n == o:  # as PyTorch: a dimension whose size stays is copied, whatever
                continue  # its scale_factor
            idx, w = _linear_taps(n, o, sc, bool(align_corners), x.dtype == np.float32)
            x = apply(ops.resample, x, axis=axis, index=_on(x, idx), weight=_on(x, w))
    return x


def upsample(input, size=None, scale_factor=None, mode: str = "nearest",
             align_corners=None) -> Tensor:
    """`interpolate` under its older, deprecated name (with PyTorch's warning)."""
    warnings.warn("`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` "
                  "instead.", UserWarning, stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None) -> Tensor:
    """`interpolate(..., mode='nearest')` under its deprecated name (with PyTorch's
    warning). Like `torch.nn.functional.upsample_nearest`."""
    warnings.warn("`nn.functional.upsample_nearest` is deprecated. Use "
                  "`nn.functional.interpolate` instead.", UserWarning, stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None) -> Tensor:
    """`interpolate(..., mode='bilinear', align_corners=True)` under its deprecated name
    (with PyTorch's warning). Like `torch.nn.functional.upsample_bilinear`."""
    warnings.warn("`nn.functional.upsample_bilinear` is deprecated. Use "
                  "`nn.functional.interpolate` instead.", UserWarning, stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


# ---------------------------------------------------------------- pixel shuffle

def pixel_shuffle(input, upscale_factor: int) -> Tensor:
    """(*, C r^2, H, W) -> (*, C, H r, W r): channels moved into space."""
    x = _t(input)
    r = int(upscale_factor)
    if x.ndim < 3:
        raise ArgumentError(f"pixel_shuffle: expected an input of at least 3 dimensions "
                            f"(*, C r^2, H, W), got shape {x.shape}")
    if r <= 0:
        raise ArgumentError(f"pixel_shuffle: upscale_factor must be positive, got {r}")
    *lead, c, h, w = x.shape
    if c % (r * r):
        raise ArgumentError(f"pixel_shuffle: channels ({c}, input shape {x.shape}) must be "
                            f"divisible by upscale_factor**2 = {r * r}")
    k = len(lead)
    y = x.reshape(tuple(lead) + (c // (r * r), r, r, h, w))
    y = permute(y, tuple(range(k + 1)) + (k + 3, k + 1, k + 4, k + 2))
    return fresh(y.reshape(tuple(lead) + (c // (r * r), h * r, w * r)))


def pixel_unshuffle(input, downscale_factor: int) -> Tensor:
    """(*, C, H r, W r) -> (*, C r^2, H, W): the inverse of pixel_shuffle."""
    x = _t(input)
    r = int(downscale_factor)
    if x.ndim < 3:
        raise ArgumentError(f"pixel_unshuffle: expected an input of at least 3 dimensions "
                            f"(*, C, H, W), got shape {x.shape}")
    if r <= 0:
        raise ArgumentError(f"pixel_unshuffle: downscale_factor must be positive, got {r}")
    *lead, c, h, w = x.shape
    if h % r or w % r:
        raise ArgumentError(f"pixel_unshuffle: height and width ({h}, {w}; input shape {x.shape}) "
                            f"must be divisible by downscale_factor {r}")
    k = len(lead)
    y = x.reshape(tuple(lead) + (c, h // r, r, w // r, r))
    y = permute(y, tuple(range(k + 1)) + (k + 2, k + 4, k + 1, k + 3))
    return fresh(y.reshape(tuple(lead) + (c * r * r, h // r, w // r)))


# ---------------------------------------------------------------- channel shuffle

def channel_shuffle(input, groups: int) -> Tensor:
    """(N, C, *) with its C channels, seen as `groups` groups of C // groups, interleaved:
    channel g * (C // groups) + k moves to k * groups + g. Like
    `torch.nn.functional.channel_shuffle`."""
    x = _t(input)
    if x.ndim <= 2:
        raise ShapeError(f"channel_shuffle: expects input with > 2 dims (N, C, *), but got "
                         f"input of shape {x.shape}")
    if isinstance(groups, bool) or not isinstance(groups, (int, np.integer)) or groups <= 0:
        raise ArgumentError(f"channel_shuffle: the number of groups to divide channels in "
                            f"must be a positive int, got groups={groups!r}")
    n, c = x.shape[:2]
    if c % groups:
        raise ShapeError(f"channel_shuffle: number of channels must be divisible by groups, "
                         f"got {c} channels (input of shape {x.shape}) and {groups} groups")
    rest = x.shape[2:]
    y = permute(x.reshape((n, int(groups), c // groups) + rest),
                (0, 2, 1) + tuple(range(3, x.ndim + 1)))
    return y.reshape(x.shape)


def native_channel_shuffle(input, groups: int) -> Tensor:
    """`channel_shuffle` (PyTorch's kernel-level spelling; same result)."""
    return channel_shuffle(input, groups)
