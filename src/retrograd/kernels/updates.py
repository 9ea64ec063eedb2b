"""Optimizer update kernels: Adam's moments and its parameter update, each one pass over
a parameter's arrays instead of three or six NumPy passes and their temporaries.

The loops are compiled `exact` (no float flags): every operation rounds to the arrays'
dtype in NumPy's order, so the compiled path gives the NumPy path's results bit for bit
(the callers pass the factors as scalars of that dtype, as NumPy rounds a Python float).
Arrays are flat and contiguous; `out` may be one of the inputs.
"""

from __future__ import annotations

import numpy as np

from . import kernel


@kernel(exact=True)
def lerp_(m, d, weight):
    """m = torch.lerp(m, d, weight) in place, branch for branch: m + w (d - m) for
    w < 0.5, else d - (d - m) (1 - w) (w a float, rounded to the dtype as NumPy does)."""
    m = m.reshape(m.size)
    d = d.reshape(d.size)
    dt = m.dtype.type
    if weight < 0.5:
        f = dt(weight)
        for i in range(m.size):
            m[i] = m[i] + f * (d[i] - m[i])
    else:
        f = dt(1.0 - weight)
        for i in range(m.size):
            m[i] = d[i] - (d[i] - m[i]) * f


@kernel(exact=True)
def square_avg_(v, d, beta):
    """v = v beta + ((1 - beta) d) d in place (Adam's second moment)."""
    v = v.reshape(v.size)
    d = d.reshape(d.size)
    dt = v.dtype.type
    b = dt(beta)
    w = dt(1.0 - beta)
    for i in range(v.size):
        v[i] = v[i] * b + (w * d[i]) * d[i]


@kernel(exact=True)
def adam_apply_(x, m, v, t, lr, beta1, beta2, eps, decay):
    """x = x decay - (m / (sqrt(v) / sqrt(1 - beta2^t) + eps)) lr / (1 - beta1^t) in
    place (x unscaled when decay is 1); the factors in double precision, as PyTorch's."""
    x = x.reshape(x.size)
    m = m.reshape(m.size)
    v = v.reshape(v.size)
    dt = x.dtype.type
    ss = dt(lr / (1.0 - beta1 ** t))
    bc = dt(np.sqrt(1.0 - beta2 ** t))
    e = dt(eps)
    if decay != 1.0:
        dc = dt(decay)
        for i in range(x.size):
            x[i] = x[i] * dc - (m[i] / (np.sqrt(v[i]) / bc + e)) * ss
    else:
        for i in range(x.size):
            x[i] = x[i] - (m[i] / (np.sqrt(v[i]) / bc + e)) * ss


@kernel(exact=True)
def adam_step_(x, d, m, v, t, lr, beta1, beta2, eps, decay):
    """One Adam step in place on x, m and v, with gradient d: `lerp_` (weight 1 - beta1),
    `square_avg_` and `adam_apply_` in one pass, each value rounded as they round it."""
    x = x.reshape(x.size)
    d = d.reshape(d.size)
    m = m.reshape(m.size)
    v = v.reshape(v.size)
    dt = x.dtype.type
    w1 = 1.0 - beta1
    low = w1 < 0.5
    f = dt(w1) if low else dt(1.0 - w1)
    b2 = dt(beta2)
    w2 = dt(1.0 - beta2)
    ss = dt(lr / (1.0 - beta1 ** t))
    bc = dt(np.sqrt(1.0 - beta2 ** t))
    e = dt(eps)
    dc = dt(decay)  # x * 1 is x exactly: no branch for decay == 1
    if low:
        for i in range(x.size):
            di = d[i]
            mi = m[i] + f * (di - m[i])
            vi = v[i] * b2 + (w2 * di) * di
            m[i] = mi
            v[i] = vi
            x[i] = x[i] * dc - (mi / (np.sqrt(vi) / bc + e)) * ss
    else:
        for i in range(x.size):
            di = d[i]
            mi = di - (di - m[i]) * f
            vi = v[i] * b2 + (w2 * di) * di
            m[i] = mi
            v[i] = vi
            x[i] = x[i] * dc - (mi / (np.sqrt(vi) / bc + e)) * ss
