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
def lerp_(m, d, f, low):
    """m = torch.lerp(m, d, w) in place, branch for branch: m + w (d - m) when `low`
    (w < 0.5, f = w), else d - (d - m) (1 - w) (f = 1 - w)."""
    if low:
        for i in range(m.size):
            m[i] = m[i] + f * (d[i] - m[i])
    else:
        for i in range(m.size):
            m[i] = d[i] - (d[i] - m[i]) * f


@kernel(exact=True)
def square_avg_(v, d, beta, w):
    """v = v beta + (w d) d in place (Adam's second moment, w = 1 - beta)."""
    for i in range(v.size):
        v[i] = v[i] * beta + (w * d[i]) * d[i]


@kernel(exact=True)
def adam_apply_(x, m, v, decay, scaled, step_size, bc2_sqrt, eps):
    """x = x decay - (m / (sqrt(v) / bc2_sqrt + eps)) step_size in place (x unscaled
    unless `scaled`)."""
    if scaled:
        for i in range(x.size):
            x[i] = x[i] * decay - (m[i] / (np.sqrt(v[i]) / bc2_sqrt + eps)) * step_size
    else:
        for i in range(x.size):
            x[i] = x[i] - (m[i] / (np.sqrt(v[i]) / bc2_sqrt + eps)) * step_size
