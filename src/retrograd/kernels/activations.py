"""GELU kernels: the forward and its backward each one pass over memory.

Tanh form. 0.5 (1 + tanh(z)) = sigmoid(2 z), so with z = sqrt(2/pi) (x + 0.044715 x^3)

    gelu(x) = x s,   s = 1 / (1 + exp(-2 z)),
    gelu'(x) = s + x s (1 - s) 2 z'(x),   z'(x) = sqrt(2/pi) (1 + 3 * 0.044715 x^2);

the forward saves s (not the output) for the backward. Without Intel's SVML, LLVM
calls libm's exp once per element and never vectorises it (slower than NumPy's SIMD
tanh), so the float32 kernel computes its own exp, vectorised: -2 z is formed in
float64 (exp's relative error is the absolute error of its argument, which float32
cannot hold down the left tail) and everything after the range reduction runs in
float32, eight lanes at a time. s and out are within 2 float32 ulps of x sigmoid(2 z)
computed in float64 (1.8 measured over [-20, 20]). Below x = -9.5, where s leaves
float32's normal range, such x are computed again in float64 (in a block of 1024 that
holds a few, with libm's exp each; one that holds more, the whole block with a slower
vectorised exp, p(y / 1024)^1024, p a degree-7 Taylor polynomial, under float32's half
ulp), so the left tail stays accurate relative to its values: large negative x gives
-0 and x = -inf gives nan, as the tanh form does; +inf gives inf and NaN propagates.
float64 inputs need exp to the last bit: those kernels call libm's exp.

Exact form. gelu(x) = x Phi(x), Phi(x) = erfc(-x / sqrt 2) / 2 (accurate in the left
tail), gelu'(x) = Phi(x) + x exp(-x^2 / 2) / sqrt(2 pi); the forward saves Phi.
libm's erfc and exp per element, in float64.

Every kernel takes flat contiguous arrays (the caller reshapes and splits them).
"""

from __future__ import annotations

import math

import numpy as np

from . import kernel

_BETA = math.sqrt(2.0 / math.pi)
_KAPPA = 0.044715
_BK = _BETA * _KAPPA
_BK3 = 3.0 * _BETA * _KAPPA
_SQRT1_2 = math.sqrt(0.5)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)

# tanh_forward_f32's constants (float32 where its lanes are float32)
_LOG2E = 1.0 / math.log(2.0)
_LN2 = math.log(2.0)
_E0, _E1, _E2, _E3, _E4 = (np.float32(c) for c in (  # exp(r) - 1 - r = r^2 (E0 + ... E4 r^4)
    0.49999993449456, 0.16666520683170497, 0.04166838814934362,  # on |r| <= ln2/2, fitted
    0.008368710790525027, 0.0013814558479780786))  # in float64: rel. error 3e-9
_ONE, _F0 = np.float32(1.0), np.float32(0.0)
_F127, _F2P23 = np.float32(127.0), np.float32(2.0 ** 23)
_I254 = np.int32(254 << 23)  # bits(2^n) + bits(2^-n)
_F32_CLIP = np.float32(10.0)
_TAIL = np.float32(-9.5)
_TAIL_BITS = np.float32(-9.5).view(np.uint32)  # x < -9.5 <=> bits above (as uint32)
_U0 = np.uint32(0)
_BLOCK = 1024


@kernel
def tanh_forward_f32(x, out, s):
    """out = gelu(x), s = sigmoid(2 z(x)) for float32 x (exp(-2 z) = 2^n exp(r): n and r
    from a float64 -2 z, the rest in float32; a block with an x < -9.5 again in float64)."""
    m = x.size
    rb = np.empty(_BLOCK, np.float32)
    nb = np.empty(_BLOCK, np.float32)
    for a in range(0, m, _BLOCK):
        xs = x[a:min(a + _BLOCK, m)]
        os_ = out[a:a + xs.size]
        ss = s[a:a + xs.size]
        top = _U0  # largest bit pattern of x as uint32: above _TAIL_BITS, some x < -9.5
        for j in range(xs.size):  # float64: y = -2 z, n = round(y / ln 2), r = y - n ln 2
            xf = xs[j]
            top = max(top, np.float32(xf).view(np.uint32))
            v = float(min(xf, _F32_CLIP))  # s(10) is 1 in float32; keeps 2^n normal
            y = v * (-2.0 * _BETA - 2.0 * _BK * v * v)
            n = np.rint(y * _LOG2E)
            rb[j] = np.float32(y - n * _LN2)
            nb[j] = np.float32(n)
        for j in range(xs.size):  # float32: d = 1 + 2^n exp(r) with one rounding
            r = rb[j]
            nf = nb[j]
            bits = np.int32((_F127 + nf) * _F2P23)
            sc = bits.view(np.float32)  # 2^n
            inv = np.int32(_I254 - bits).view(np.float32)  # 2^-n
            r2 = r * r
            t = r + r2 * ((_E0 + _E1 * r) + r2 * ((_E2 + _E3 * r) + r2 * _E4))  # exp(r) - 1
            up = nf > _F0
            d = sc * (t + inv if up else t) + (sc if up else _ONE + sc)
            ss[j] = _ONE / d
            os_[j] = xs[j] / d
        if top > _TAIL_BITS:  # (or a -NaN): x < -9.5 again in float64
            k = 0
            for j in range(xs.size):
                k += xs[j] < _TAIL
            if k * 8 < xs.size:  # a few: libm's exp for each
                for j in range(xs.size):
                    if xs[j] < _TAIL:
                        v = float(xs[j])
                        q = 1.0 / (1.0 + math.exp(v * (-2.0 * _BETA - 2.0 * _BK * v * v)))
                        ss[j] = q
                        os_[j] = v * q
                continue
            for j in range(xs.size):  # many: the whole block, exp(y) = p(y / 1024)^1024
                v = float(xs[j])
                y = v * (-2.0 * _BETA - 2.0 * _BK * v * v)
                big = y > 110.0  # exp(-110) x 10 is under half float32's least subnormal
                r = min(max(y, -150.0), 110.0) * (1.0 / 1024.0)
                p = 1.0 + r * (1.0 + r * (0.5 + r * (1.0 / 6.0 + r * (1.0 / 24.0 + r * (
                    1.0 / 120.0 + r * (1.0 / 720.0 + r * (1.0 / 5040.0)))))))
                for _ in range(10):
                    p = p * p
                q = 1.0 / (1.0 + (math.inf if big else p))
                ss[j] = q
                os_[j] = v * q


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
    """dx = g gelu'(x) from the forward's s, in x's dtype (float32: eight lanes; s is
    stored rounded, so 1 - s is exact where it matters, and the few products keep the
    result within a few ulps)."""
    dt = x.dtype.type
    beta = dt(_BETA)
    bk3 = dt(_BK3)
    for i in range(x.size):
        v = x[i]
        q = s[i]
        dx[i] = g[i] * (q + (q * (dt(1.0) - q)) * (v * dt(2.0) * (beta + bk3 * v * v)))


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
