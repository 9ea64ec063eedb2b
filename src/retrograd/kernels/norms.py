"""Layer norm's compiled kernels: the forward and the backward over a block of rows, each
a few loops per row while the row sits in cache, for the NumPy fast path of
`ops.fused_norms` (which splits the rows over `retrograd.threads`).

The statistics are cancellation-safe: the mean first, then the variance of the row
centred on it (never E[x^2] - mean^2). The mean's sum runs in float64 (in float32, a row
of mean 1e3 lost four ulps of it, and every centred value with them). The other per-row
sums (the variance's, the backward's two) run in the dtype, as PyTorch's do: they
vectorise twice as wide (the backward took 0.2 ms instead of 0.3 on (2048, 256) float32;
summing blocks of a row into a float64 total cost 20%), and LLVM splits each over
several vector lanes, so the rounding grows slowly with the row's length (rows of 1e5
float32 came within 2.3e-7 of float64, as PyTorch's 1.1e-7). The per-column sums of the
backward (dweight, dbias) run in the dtype, one partial array per thread piece, as
PyTorch's do.
"""

from __future__ import annotations

import numpy as np

from . import kernel


@kernel
def layer_norm_forward(x, w, b, eps, y, mu, rstd):
    """For each row i of x (r, n): mu[i] its mean, rstd[i] = 1 / sqrt(var + eps) (the
    biased variance), y[i] = (x[i] - mu[i]) rstd[i] w + b."""
    r, n = x.shape
    zero = x.dtype.type(0)
    for i in range(r):
        row = x[i]
        total = 0.0
        for k in range(n):
            total += row[k]
        mu[i] = total / n
        m = mu[i]  # the mean rounded to the dtype, as the backward reads it
        s = zero
        for k in range(n):
            d = row[k] - m
            s += d * d
        rstd[i] = 1.0 / np.sqrt(s / n + eps)
        rs = rstd[i]
        out = y[i]
        for k in range(n):
            out[k] = (row[k] - m) * rs * w[k] + b[k]


@kernel
def layer_norm_backward(x, mu, rstd, w, g, gstep, dx, pw, pb):
    """For rows i of x (r, n), with xhat = (x[i] - mu[i]) rstd[i] and gw = g[i gstep] w:
    adds g xhat to pw and g to pb (this piece's dweight and dbias) and, when dx has
    rows, sets dx[i] = rstd[i] (gw - mean(gw) - xhat mean(gw xhat)). gstep 0 reads g's
    one row for every row (a cotangent broadcast over the rows)."""
    r, n = x.shape
    zero = x.dtype.type(0)
    want_dx = dx.shape[0] > 0
    for i in range(r):
        row, gr, m, rs = x[i], g[i * gstep], mu[i], rstd[i]
        if want_dx:
            u = zero
            v = zero
            for k in range(n):
                gw = gr[k] * w[k]
                u += gw
                v += gw * (row[k] - m)
            a = x.dtype.type(rs * (u / n))  # in the dtype (u / n is float64 in Numba),
            c = x.dtype.type(rs * rs * rs * (v / n))  # so the row's loop stays in it
            out = dx[i]
            for k in range(n):
                gk = gr[k]
                xc = row[k] - m
                pw[k] += gk * xc * rs
                pb[k] += gk
                out[k] = rs * gk * w[k] - a - xc * c
        else:
            for k in range(n):
                gk = gr[k]
                pw[k] += gk * (row[k] - m) * rs
                pb[k] += gk
