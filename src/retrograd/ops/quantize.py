"""Fake quantisation's forward rows, with no gradient: the quantised-then-dequantised
values and the mask of elements inside the quantised range (quantisation-aware training's
`torch.fake_quantize_per_tensor_affine` / `fake_quantize_per_channel_affine`).

The straight-through gradient (g where the mask holds, 0 elsewhere) is not the derivative of
this step function, so it is composed in `api/fake_quant.py` from these two rows and
recorded ones, not given as a vjp rule here (finite differences would contradict it).

The arithmetic is PyTorch's CPU kernels', so the results agree to the bit: the scale is
float32 and the input is multiplied by its float32 reciprocal (in float32 for float16 and
float32 inputs, in float64 for float64), rounded half to even, offset by the zero point
(rounded after the offset when the zero point is floating, per channel), clamped, and
dequantised in float32 per tensor, float64 per channel, then cast to the input's dtype.
A NaN quantises to quant_min; an infinite or huge value saturates per tensor and goes to
quant_min per channel (the int64 conversion's overflow there), as in PyTorch.
"""

from __future__ import annotations

import numpy as np

from ..primitive import defop

_INT64_MIN = -(2.0 ** 63)


def _levels(x, scale, zero_point, per_channel: bool):
    """The unclamped integer levels, as float64."""
    cd = np.result_type(x.dtype, np.float32)
    with np.errstate(all="ignore"):
        inv = (np.float32(1.0) / scale.astype(np.float32)).astype(cd)
        v = x.astype(cd) * inv
        if zero_point.dtype.kind == "f":
            q = np.rint(zero_point.astype(cd) + v)
        else:
            q = zero_point.astype(cd) + np.rint(v)
        q = q.astype(np.float64)
        bad = np.isnan(q)
        if per_channel:
            bad |= ~(np.abs(q) < 2.0 ** 63)
        return np.where(bad, _INT64_MIN, q)


def _fake_quantize(x, scale, zero_point, *, quant_min, quant_max, per_channel=False):
    q = np.clip(_levels(x, scale, zero_point, per_channel), quant_min, quant_max)
    with np.errstate(all="ignore"):
        if per_channel:
            out = (q - zero_point.astype(np.float64)) * scale.astype(np.float64)
        else:
            out = (q - zero_point.astype(np.float64)).astype(np.float32) * \
                scale.astype(np.float32)
    return np.asarray(out.astype(x.dtype))


def _fake_quantize_mask(x, scale, zero_point, *, quant_min, quant_max, per_channel=False):
    q = _levels(x, scale, zero_point, per_channel)
    return np.asarray((q >= quant_min) & (q <= quant_max))


fake_quantize = defop("fake_quantize", _fake_quantize, fresh=True)
fake_quantize_mask = defop("fake_quantize_mask", _fake_quantize_mask, fresh=True)
