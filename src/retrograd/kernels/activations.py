"""GELU kernels: the forward and its backward each one pass over memory.

Tanh form. 0.5 (1 + tanh(z)) = sigmoid(2 z), so with z = sqrt(2/pi) (x + 0.044715 x^3)

    gelu(x) = x s,   s = 1 / (1 + exp(-2 z)),
    gelu'(x) = s + x s (1 - s) 2 z'(x),   z'(x) = sqrt(2/pi) (1 + 3 * 0.044715 x^2);

the forward saves s (not the output) for the backward. Without Intel's SVML, LLVM
calls libm's exp once per element and never vectorises it, which is slower than
NumPy's SIMD tanh; the float32 kernels therefore work in float64 and take exp(y) as
p(y / 1024)^1024, p a degree-7 Taylor polynomial (truncation below 6e-12 on the
range used, 1e-8 after the ten squarings: under float32's half ulp), which vectorises.
y is clamped to [-150, 100] (exp beyond is 0 or past float32's range) and exp set to
inf above 100, so that x = -inf gives nan and large negative x gives -0 as the tanh
form does. float64 inputs need exp to the last bit: those kernels call libm's exp.

Exact form. gelu(x) = x Phi(x), Phi(x) = erfc(-x / sqrt 2) / 2 (accurate in the left
tail), gelu'(x) = Phi(x) + x exp(-x^2 / 2) / sqrt(2 pi); the forward saves Phi.
libm's erfc and exp per element, in float64.

Every kernel takes flat contiguous arrays (the caller reshapes and splits them).
"""

from __future__ import annotations

import math

from . import kernel

_BETA = math.sqrt(2.0 / math.pi)
_KAPPA = 0.044715
_BK = _BETA * _KAPPA
_BK3 = 3.0 * _BETA * _KAPPA
_SQRT1_2 = math.sqrt(0.5)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


@kernel
def tanh_forward_f32(x, out, s):
    """out = gelu(x), s = sigmoid(2 z(x)) for float32 x (polynomial exp in float64)."""
    for i in range(x.size):
        v = float(x[i])
        y = -2.0 * v * (_BETA + _BK * v * v)
        big = y > 100.0
        y = min(max(y, -150.0), 100.0)
        r = y * (1.0 / 1024.0)
        p = 1.0 + r * (1.0 + r * (0.5 + r * (1.0 / 6.0 + r * (1.0 / 24.0 + r * (
            1.0 / 120.0 + r * (1.0 / 720.0 + r * (1.0 / 5040.0)))))))
        for _ in range(10):
            p = p * p
        e = math.inf if big else p
        q = 1.0 / (1.0 + e)
        s[i] = q
        out[i] = v * q


@kernel
def tanh_forward_f64(x, out, s):
    """out = gelu(x), s = sigmoid(2 z(x)) for float64 x (libm's exp)."""
    for i in range(x.size):
        v = x[i]
        q = 1.0 / (1.0 + math.exp(-2.0 * v * (_BETA + _BK * v * v)))
        s[i] = q
        out[i] = v * q


@kernel
def tanh_backward(g, x, s, dx):
    """dx = g gelu'(x) from the forward's s (float64 arithmetic)."""
    for i in range(x.size):
        v = float(x[i])
        q = float(s[i])
        dx[i] = g[i] * (q + (q * (1.0 - q)) * (v * 2.0 * (_BETA + _BK3 * v * v)))


@kernel
def exact_forward(x, out, c):
    """out = gelu(x), c = Phi(x) (libm's erfc in float64)."""
    for i in range(x.size):
        v = float(x[i])
        q = 0.5 * math.erfc(v * -_SQRT1_2)
        c[i] = q
        out[i] = v * q


@kernel
def exact_backward(g, x, c, dx):
    """dx = g gelu'(x) from the forward's c = Phi(x)."""
    for i in range(x.size):
        v = float(x[i])
        dx[i] = g[i] * (float(c[i]) + v * math.exp(-0.5 * v * v) * _INV_SQRT_2PI)
