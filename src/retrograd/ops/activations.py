"""Activation functions, one node each: `gelu` (its row is in `fused_activations.py`),
`silu`, `mish`, `softplus`, `logsigmoid`, `elu` (also `celu` and `selu`, by its
attributes), `leaky_relu`, `hardtanh` (also `relu6`), `hardsigmoid`, `hardswish`,
`softsign`, `threshold`; `prelu` (two inputs) with its backward as two ops of its own,
`_prelu_gx` and `_prelu_gw`, so that derivatives of its gradient are PyTorch's.

The forwards are numerically stable: `softplus`, `logsigmoid` and `mish` go
through `logaddexp`, so they neither overflow nor lose the tail for large |x|.
Gradients at the kinks are PyTorch's: `hardtanh` (and so `relu6`) and
`hardsigmoid` pass nothing at their bounds, `hardswish` passes 0 at -3 and `g`
at 3, `leaky_relu` and `elu` take their negative side at 0, `threshold` passes
nothing at the threshold, `softplus` switches to the identity where
`beta * x > threshold`. `prelu` is PyTorch's `_prelu_kernel`: its first reverse-mode
derivative takes the negative side at 0 (x > 0), but its forward mode and the derivatives
of its backward (`_prelu_kernel_backward`'s) take the positive side there (x >= 0).
"""

from __future__ import annotations

import math

import numpy as np

from ..primitive import NUMPY, defop, elementwise
from ._special import erfc as _erfc
from .elementwise import _sigmoid

_SQRT1_2 = math.sqrt(0.5)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_TANH_BETA = math.sqrt(2.0 / math.pi)
_TANH_KAPPA = 0.044715
_ONE_SIXTH = float(np.float32(1.0 / 6.0))  # PyTorch's hardsigmoid gradient, in every dtype


def _gelu(x, *, approximate="none"):
    if approximate == "tanh":
        inner = _TANH_BETA * (x + _TANH_KAPPA * x * x * x)
        return 0.5 * x * (1.0 + np.tanh(inner))
    return 0.5 * x * _erfc(x * -_SQRT1_2)  # = x * Phi(x), accurate in the left tail


def _gelu_d(m, g, out, x, *, approximate="none"):
    if approximate == "tanh":
        x2 = x * x
        t = m.tanh((x + x2 * x * _TANH_KAPPA) * _TANH_BETA)
        inner_d = (x2 * (3.0 * _TANH_KAPPA) + 1.0) * _TANH_BETA
        return g * ((t + 1.0) * 0.5 + x * 0.5 * (1.0 - t * t) * inner_d)
    return g * (m.erfc(x * -_SQRT1_2) * 0.5 + x * m.exp(x * x * -0.5) * _INV_SQRT_2PI)


def _silu(x):
    return x * _sigmoid(x)


def _silu_d(m, g, out, x):
    s = m.sigmoid(x)
    return g * s * (x * (1.0 - s) + 1.0)


def _mish(x):
    return x * np.tanh(np.logaddexp(0, x))


def _mish_d(m, g, out, x):
    t = m.tanh(m.softplus(x, beta=1.0, threshold=20.0))
    return g * (t + x * m.sigmoid(x) * (1.0 - t * t))


def _softplus(x, *, beta=1.0, threshold=20.0):
    bx = x * beta
    return np.where(bx > threshold, x, np.logaddexp(0, bx) / beta)


def _softplus_d(m, g, out, x, *, beta=1.0, threshold=20.0):
    # sigmoid's argument held at the threshold from there up: the value is unchanged and the
    # second derivative is 0 at bx == threshold too (PyTorch's mask bx < threshold); a NaN
    # input passes to the sigmoid, so its gradient is NaN as in PyTorch
    bx = x * beta
    return m.where(bx > threshold, g, g * m.sigmoid(m.where(bx >= threshold, threshold, bx)))


def _logsigmoid(x):
    return -np.logaddexp(0, -x)


def _elu(x, *, alpha=1.0, scale=1.0, input_scale=1.0):
    with np.errstate(over="ignore"):  # exp of the positive side, not selected
        neg = np.expm1(x * input_scale) * (alpha * scale)
    return np.where(x > 0, x * scale, neg)


def _elu_d(m, g, out, x, *, alpha=1.0, scale=1.0, input_scale=1.0):
    # input_scale * alpha * scale * exp(input_scale * x) on the negative side, its exp
    # taken of 0 from 0 up (no overflow there, nor NaN in a second derivative; the second
    # derivative at 0 is then 0, PyTorch's elu_double_backward mask x < 0).
    neg = m.exp(m.where(x < 0, x, 0.0) * input_scale) * (alpha * scale * input_scale)
    return m.where(x > 0, g * scale, g * neg)


def _leaky_relu(x, *, negative_slope=0.01):
    return np.where(x > 0, x, x * negative_slope)


def _hardtanh(x, *, min_val=-1.0, max_val=1.0):
    return np.minimum(np.maximum(x, min_val), max_val)


def _zero_of(m, x):
    """Zeros that depend on x (derivative 0), finite wherever x is not: added to a recorded
    piecewise-constant derivative (create_graph), it keeps the gradient connected to x with
    a zero second derivative, as PyTorch's backward ops are, instead of cut off."""
    return m.where(m.isfinite(x), x * 0.0, 0.0)


def _hardtanh_d(m, g, out, x, *, min_val=-1.0, max_val=1.0):
    d = m.where(m.logical_or(x <= min_val, x >= max_val), 0.0, g)  # NaN: passes, as torch
    return d if m is NUMPY else d + _zero_of(m, x)


def _leaky_relu_d(m, g, out, x, *, negative_slope=0.01):
    d = m.where(x > 0, g, g * negative_slope)
    return d if m is NUMPY else d + _zero_of(m, x)


def _hardsigmoid(x):
    return np.minimum(np.maximum(x + 3.0, 0.0), 6.0) / 6.0


def _hardswish(x):
    return x * np.minimum(np.maximum(x + 3.0, 0.0), 6.0) / 6.0


def _hardswish_d(m, g, out, x):
    return m.where(x <= -3.0, 0.0, m.where(x < 3.0, g * (x / 3.0 + 0.5), g))


def _softsign_d(m, g, out, x):
    # 1 / (|x| + 1)^2, and NaN at +-inf as PyTorch's (its softsign is x / (|x| + 1) written
    # out, whose gradient there is 0 - inf / inf)
    d = m.abs(x) + 1.0
    return m.where(m.isinf(x), np.nan, g / (d * d))


def _threshold(x, *, threshold, value):
    """PyTorch's `x <= threshold ? value : x`: NaN is not <= anything, so it stays NaN."""
    return np.where(x <= threshold, x.dtype.type(value), x)


silu = elementwise("silu", _silu, _silu_d, fresh=True)
mish = elementwise("mish", _mish, _mish_d, fresh=True)
softplus = elementwise("softplus", _softplus, _softplus_d, fresh=True)
logsigmoid = elementwise("logsigmoid", _logsigmoid, lambda m, g, out, x: g * m.sigmoid(-x),
                         fresh=True)
elu = elementwise("elu", _elu, _elu_d, fresh=True)
leaky_relu = elementwise("leaky_relu", _leaky_relu, _leaky_relu_d, smooth=False, fresh=True)
hardtanh = elementwise("hardtanh", _hardtanh, _hardtanh_d, smooth=False, fresh=True)
hardsigmoid = elementwise("hardsigmoid", _hardsigmoid, lambda m, g, out, x: m.where(
    m.logical_and(x > -3.0, x < 3.0), g * _ONE_SIXTH, 0.0), smooth=False, fresh=True)
hardswish = elementwise("hardswish", _hardswish, _hardswish_d, fresh=True)
softsign = elementwise("softsign", lambda x: x / (np.abs(x) + 1.0), _softsign_d, fresh=True)
threshold = elementwise("threshold", _threshold, lambda m, g, out, x, *, threshold, value:
                        m.where(x <= threshold, 0.0, g), smooth=False, fresh=True)


def _prelu(x, w):
    return np.where(x > 0, x, x * w)


def _prelu_gx(g, x, w):
    """PyTorch's prelu backward, grad_input: g where x > 0, else w * g."""
    return np.where(x > 0, g, g * w)


def _prelu_gw(g, x, w):
    """PyTorch's prelu backward, grad_weight (before the sum to w's shape): 0 where x > 0,
    else x * g."""
    return np.where(x > 0, np.result_type(g, x).type(0), x * g)


def _zeros(m, x):
    """Zeros of x's shape: a connected but zero derivative (PyTorch's zeros_like(self) in
    `_prelu_kernel_backward`'s derivative), not None."""
    return m.zeros_like(x)


def _neg_side(m, x, v):
    """v where x < 0 (or NaN), 0 where x >= 0: PyTorch's where(self >= 0, 0, v)."""
    return m.where(x >= 0, 0.0, v)


prelu = defop(
    "prelu", _prelu,
    (lambda m, g, out, x, w: m._prelu_gx(g, x, w),
     lambda m, g, out, x, w: m._prelu_gw(g, x, w)),
    (lambda m, t, out, x, w: m.where(x >= 0, t, t * w),
     lambda m, t, out, x, w: _neg_side(m, x, t * x)),
    broadcast=True, smooth=False, fresh=True)
_prelu_gx_op = defop(
    "_prelu_gx", _prelu_gx,
    (lambda m, g, out, go, x, w: m.where(x >= 0, g, g * w),
     lambda m, g, out, go, x, w: _zeros(m, x),
     lambda m, g, out, go, x, w: _neg_side(m, x, go * g)),
    (lambda m, t, out, go, x, w: m.where(x >= 0, t, t * w),
     lambda m, t, out, go, x, w: _zeros(m, go),
     lambda m, t, out, go, x, w: _neg_side(m, x, go * t)),
    broadcast=True, smooth=False, fresh=True)
_prelu_gw_op = defop(
    "_prelu_gw", _prelu_gw,
    (lambda m, g, out, go, x, w: _neg_side(m, x, g * x),
     lambda m, g, out, go, x, w: _neg_side(m, x, go * g),
     lambda m, g, out, go, x, w: _zeros(m, w)),
    (lambda m, t, out, go, x, w: _neg_side(m, x, t * x),
     lambda m, t, out, go, x, w: _neg_side(m, x, go * t),
     lambda m, t, out, go, x, w: _zeros(m, go)),
    broadcast=True, smooth=False, fresh=True)
