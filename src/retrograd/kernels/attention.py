"""Attention's softmax over many short rows, compiled: the NumPy fast path of
`ops.fused_attention` makes the scores and the products with BLAS and hands these loops
the element-wise work between them, which NumPy does in eight passes (a masked fill,
a broadcast subtraction, exp, a division) at 1-2 ns per element for rows of 16.

`softmax_rows_` turns each head's (L, S) scores into the weights in place. Each row is scaled,
the keys its query may not see (causal: key j > query i) set to -inf, and shifted by
one of its own visible scores (the diagonal's, or the last key's) rather than its
maximum, as the NumPy path does: a row's sum is then at least 1, and only a row whose
sum overflows (a score far above that reference) or is NaN takes the maximum after all.
exp is float32's own: n = round(x log2 e), r = x - n ln 2 in two parts, a degree-7
polynomial, and 2^n added into the exponent bits through an int32 view of the same
memory (`bits`), so the loop vectorises (libm's expf does not); 0.9 ulp at most, 0
below -87.3 (so a hidden key's weight is exactly 0), NaN kept. float32 only (float64
stays with NumPy).

`softmax_rows_vjp_` turns dw = g v^T into the scores' cotangent in place:
ds = (dw - rowsum(dw w)) w scale, in the NumPy path's order.
"""

from __future__ import annotations

import numpy as np

from . import kernel

_LOG2E = 1.4426950408889634
_LN2_HI = 0.693359375  # ln 2 in two parts: n * _LN2_HI is exact for |n| < 2^15
_LN2_LO = -2.12194440e-4
_UNDER = -87.3  # exp below is 0 here (float32's smallest normal is exp(-87.34))
_OVER = 88.0  # and inf above (its largest is exp(88.72)): the row then takes its maximum


@kernel
def softmax_rows_(s, bits, L, S, scale, causal, buf, sh, nb):
    """s (A, L * S): per head a, L rows of S scores (query i's row at i * S); `bits` s
    viewed as int32 (float32 only); buf and sh (L * S,) of s's dtype and nb (L * S,)
    int32 scratch (the scaled scores, the shifted ones, 2^n's bits). The exp runs over
    a head's L * S values at once: rows of 16 are too short for the vector loop (LLVM
    would run them in its scalar remainder)."""
    A = s.shape[0]
    N = L * S
    dt = s.dtype.type
    for a in range(A):
        row = s[a]
        for i in range(L):
            lim = min(i + 1, S) if causal else S
            ref = row[i * S + min(i, S - 1)] * scale
            for j in range(S):
                v = row[i * S + j] * scale if j < lim else dt(-np.inf)
                buf[i * S + j] = v
                sh[i * S + j] = v - ref
        for t in range(N):
            x = sh[t]
            low = x < dt(_UNDER)
            high = x > dt(_OVER)
            xc = dt(_UNDER) if low else (dt(_OVER) if high else x)
            k = np.floor(xc * dt(_LOG2E) + dt(0.5))
            f = xc - k * dt(_LN2_HI)
            f = f - k * dt(_LN2_LO)
            p = dt(1 / 5040) * f + dt(1 / 720)
            p = p * f + dt(1 / 120)
            p = p * f + dt(1 / 24)
            p = p * f + dt(1 / 6)
            p = p * f + dt(0.5)
            p = p * f + dt(1.0)
            p = p * f + dt(1.0)
            keep = not low and not high and x == x
            row[t] = p if keep else (dt(0.0) if low else (dt(np.inf) if high else x))
            nb[t] = np.int32(k) << np.int32(23) if keep else np.int32(0)
        rb = bits[a]
        for t in range(N):
            rb[t] += nb[t]
        for i in range(L):
            total = dt(0.0)
            for j in range(S):
                total += row[i * S + j]
            if not total < np.inf:  # overflow or NaN: shift by the row's maximum instead
                lim = min(i + 1, S) if causal else S
                m = -np.inf
                for j in range(lim):
                    m = max(m, buf[i * S + j])
                total = dt(0.0)
                for j in range(S):
                    e = dt(np.exp(np.float64(buf[i * S + j]) - m))
                    row[i * S + j] = e
                    total += e
            for j in range(S):
                row[i * S + j] = row[i * S + j] / total


@kernel
def softmax_rows_vjp_(dw, w, scale):
    """dw (R, S) = g v^T becomes ds = (dw - rowsum(dw w)) w scale in place."""
    R, S = dw.shape
    dt = dw.dtype.type
    for r in range(R):
        t = dt(0.0)
        for j in range(S):
            t += dw[r, j] * w[r, j]
        for j in range(S):
            dw[r, j] = (dw[r, j] - t) * w[r, j] * scale
