"""`rg.fake_quantize_per_tensor_affine` and `rg.fake_quantize_per_channel_affine`:
quantisation-aware training's fake quantisation, with PyTorch's arguments, checks,
values (to the bit; the rows are in `ops/quantize.py`) and straight-through gradient.

The gradient passes `g` where the element's quantised level lies in
[quant_min, quant_max] and 0 where it was clamped, as PyTorch's cachemask backward
does; it is composed as `values - (kept.detach() - kept)` with `kept = where(mask, x, 0)`, which
keeps the values exactly (signed zeros, and the levels NaN and infinities go to) and gives
forward mode, vmap and second derivatives (zero, and not connected to x) for free. The
scale and zero point get no gradient (PyTorch refuses them with requires_grad).
"""

from __future__ import annotations

import numpy as np

from .. import ops
from ..engine import apply
from ..grad_mode import is_grad_enabled
from ..tensor import Tensor
from ._args import _t
from ._errors import ArgumentError, DtypeError
from .elementwise import where

__all__ = ["fake_quantize_per_tensor_affine", "fake_quantize_per_channel_affine"]


def _int_arg(v, what: str, name: str) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise TypeError(f"{name}(): argument '{what}' must be int, not {type(v).__name__}")
    return int(v)


def _as_number(v, what: str, kinds: str, name: str):
    """A 0-d tensor (no gradient; of `kinds`, or any real kind for a float) as a number."""
    if not isinstance(v, Tensor):
        return v
    if v.ndim != 0 or v.requires_grad or v.dtype.kind not in (kinds if kinds != "f" else
                                                                "fiub"):
        raise TypeError(f"{name}(): received an invalid combination of arguments: '{what}' "
                        f"must be a number or a 0-d tensor without gradient, as with the "
                        f"other qparam a number, got a tensor of shape {tuple(v.shape)} and "
                        f"dtype {v.dtype}")
    return v.item()


def _float_input(input, name: str) -> Tensor:  # noqa: A002 - torch's name
    x = _t(input)
    if x.dtype.kind != "f":
        raise DtypeError(f"{name}(): not implemented for {x.dtype} (a floating input is "
                         "needed)")
    return x


def _no_grad_qparam(t: Tensor, what: str, name: str) -> None:
    if t.requires_grad and is_grad_enabled():
        raise RuntimeError(f"{name}(): not differentiable with respect to argument '{what}'. "
                           "This input cannot have requires_grad True.")


def _with_ste(x: Tensor, scale: Tensor, zero_point: Tensor, attrs: dict) -> Tensor:
    """The fake-quantised values, with the straight-through gradient (and tangent)."""
    xd = x.detach()
    values = apply(ops.fake_quantize, xd, scale, zero_point, **attrs)
    mask = apply(ops.fake_quantize_mask, xd, scale, zero_point, **attrs)
    kept = where(mask, x, 0.0)  # finite: the clamped (and non-finite) elements are 0
    return values - (kept.detach() - kept)


def fake_quantize_per_tensor_affine(input, scale, zero_point, quant_min: int,  # noqa: A002
                                    quant_max: int) -> Tensor:
    """`(clamp(round(input / scale) + zero_point, quant_min, quant_max) - zero_point) *
    scale` in input's dtype, with the straight-through gradient (passed inside the range,
    0 where clamped). `scale` and `zero_point` are a float and an int, or one-element
    tensors (then the zero point is truncated to an integer and not range-checked, as in
    PyTorch). Like `torch.fake_quantize_per_tensor_affine`."""
    name = "fake_quantize_per_tensor_affine"
    qmin = _int_arg(quant_min, "quant_min", name)
    qmax = _int_arg(quant_max, "quant_max", name)
    if isinstance(scale, Tensor) != isinstance(zero_point, Tensor):
        # one tensor: PyTorch binds the (float, int) overload, which takes a 0-d tensor
        # without a gradient as the number
        scale, zero_point = (_as_number(scale, "scale", "f", name),
                             _as_number(zero_point, "zero_point", "iu", name))
    if isinstance(scale, Tensor):
        for t, what in ((scale, "scale"), (zero_point, "zero_point")):
            if t.numel() != 1:
                raise ArgumentError(f"a Tensor with {t.numel()} elements cannot be converted "
                                    f"to Scalar ({name}'s {what})")
            _no_grad_qparam(t, what, name)
        sc = np.float32(scale.detach().numpy().reshape(()))
        zp = int(np.trunc(zero_point.detach().numpy().reshape(()).astype(np.float64)))
    else:
        if isinstance(scale, bool) or not isinstance(scale, (int, float, np.number)):
            raise TypeError(f"{name}(): argument 'scale' must be float, not "
                            f"{type(scale).__name__}")
        sc = np.float32(scale)
        zp = _int_arg(zero_point, "zero_point", name)
        if qmin <= qmax and not qmin <= zp <= qmax:
            raise ArgumentError("`zero_point` must be between `quant_min` and `quant_max`.")
    if qmin > qmax:
        raise ArgumentError("`quant_min` should be less than or equal to `quant_max`.")
    x = _float_input(input, name)
    attrs = dict(quant_min=qmin, quant_max=qmax, per_channel=False)
    return _with_ste(x, Tensor(np.asarray(sc)), Tensor(np.asarray(zp, np.int64)), attrs)


def fake_quantize_per_channel_affine(input, scale: Tensor, zero_point: Tensor,  # noqa: A002
                                     axis: int, quant_min: int, quant_max: int) -> Tensor:
    """Fake quantisation along `axis` with one scale (float32, 1-D) and zero point (int32,
    float32 or float16) per slice, and the straight-through gradient. Like
    `torch.fake_quantize_per_channel_affine`."""
    name = "fake_quantize_per_channel_affine"
    for t, what in ((scale, "scale"), (zero_point, "zero_point")):
        if not isinstance(t, Tensor):
            raise TypeError(f"{name}(): argument '{what}' must be Tensor, not "
                            f"{type(t).__name__}")
    axis = _int_arg(axis, "axis", name)
    qmin = _int_arg(quant_min, "quant_min", name)
    qmax = _int_arg(quant_max, "quant_max", name)
    x = _t(input)
    if scale.dtype != np.float32:
        raise ArgumentError(f"Scale must be Float, found {scale.dtype}")
    if zero_point.dtype not in (np.int32, np.float32, np.float16):
        raise ArgumentError(f"Zero-point must be Int32, Float or Half, found {zero_point.dtype}")
    if scale.ndim != 1:
        raise ArgumentError("scale should be a 1-D tensor")
    if zero_point.ndim != 1:
        raise ArgumentError("zero point should be a 1-D tensor")
    if scale.numel() != zero_point.numel():
        raise ArgumentError("scale and zero-point need to have the same dimensions")
    if x.ndim == 0 or not -x.ndim <= axis < x.ndim:
        raise IndexError(f"Dimension out of range (expected to be in range of "
                         f"[{-max(x.ndim, 1)}, {max(x.ndim, 1) - 1}], but got {axis})")
    if scale.numel() != x.shape[axis]:
        raise ArgumentError("dimensions of scale and zero-point are not consistent with "
                            "input tensor")
    if qmin > qmax:
        raise ArgumentError("`quant_min` should be less than or equal to `quant_max`.")
    zps = zero_point.detach().numpy().astype(np.float64)
    if zps.size and not (np.trunc(zps.min()) >= qmin and np.trunc(zps.max()) <= qmax):
        raise ArgumentError("`zero_point` must be between `quant_min` and `quant_max`.")
    if axis < 0:
        raise ArgumentError("`axis` must be between 0 and number of dimensions of input")
    x = _float_input(x, name)
    for t, what in ((scale, "scale"), (zero_point, "zero_point")):
        _no_grad_qparam(t, what, name)
    shape = [1] * x.ndim
    shape[axis] = -1
    attrs = dict(quant_min=qmin, quant_max=qmax, per_channel=True)
    return _with_ste(x, scale.detach().reshape(shape), zero_point.detach().reshape(shape),
                     attrs)
