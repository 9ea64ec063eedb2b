"""Winograd's F(2x2, 3x3) convolution transforms, one sample at a time, for the float32
3x3 unit-stride path of `ops.windows` (`conv_unit`).

A 3x3 correlation's 2x2 output tile from a 4x4 input tile d is A^T [(G w G^T) * (B^T d B)] A:
16 products per tile where the direct sum has 36, so the three matrix products of a
convolution's forward and backward shrink to 16 small ones each (one per transform
entry, 2.25x fewer multiply-adds; measured 30 us against 94 for one 16->32 channel
32x32 float32 sample). These kernels are the linear maps around those products and their
adjoints, so the backward is the exact gradient of the forward computed:

    input        (C, H, W)   -> V  (16, C, T)   `transform_input`    B^T d B per tile
    output       (16, O, T)  -> y  (O, Ho, Wo)  `transform_output`   A^T m A (+ bias)
    output^T     g (O, Ho, Wo) -> dM (16, O, T) `transform_output_t`  A g A^T
    input^T      dV (16, C, T) -> dx (C, H, W)  `transform_input_t`  B v B^T, summed

T = th * tw tiles of 2x2 outputs (th = ceil(Ho / 2)); a padded plane of (2 th + 2,
2 tw + 2) holds a channel with its zeros. Each loop stores into one array row only:
LLVM vectorises a loop only while the pairs of pointers it must check for overlap stay
few, and a loop storing four rows of a (16, O, T) block ran 3x slower than four loops
storing one each. Each kernel returns a number that is 0 when every value it wrote was
finite and NaN otherwise, so the caller can redo a sample exactly where an infinity
would have become inf - inf.
"""

from __future__ import annotations

import numpy as np

from . import kernel


@kernel
def transform_input(x, pad_h, pad_w, plane, tmp, stage, v):
    """v[(u, w), c, tile] = (B^T d B)[u, w] for each 4x4 tile d of x's channel c (x: (C, H,
    W), zero-padded by pad_h, pad_w); plane (Hp, Wp), tmp (4, Wp) and stage (16, T) are
    scratch."""
    c_n, h_n, w_n = x.shape
    th = (plane.shape[0] - 2) // 2
    tw = (plane.shape[1] - 2) // 2
    wp = plane.shape[1]
    tn = th * tw
    plane[:, :] = 0
    for c in range(c_n):
        for r in range(h_n):
            for k in range(w_n):
                plane[pad_h + r, pad_w + k] = x[c, r, k]
        for i in range(th):
            a = 2 * i
            for k in range(wp):
                tmp[0, k] = plane[a, k] - plane[a + 2, k]
            for k in range(wp):
                tmp[1, k] = plane[a + 1, k] + plane[a + 2, k]
            for k in range(wp):
                tmp[2, k] = plane[a + 2, k] - plane[a + 1, k]
            for k in range(wp):
                tmp[3, k] = plane[a + 1, k] - plane[a + 3, k]
            q = i * tw
            for u in range(4):  # the tile's columns 2j..2j+3 as four rows of stage
                z = 4 * u
                for j in range(tw):
                    stage[z, q + j] = tmp[u, 2 * j]
                    stage[z + 1, q + j] = tmp[u, 2 * j + 1]
                for j in range(tw):
                    stage[z + 2, q + j] = tmp[u, 2 * j + 2]
                    stage[z + 3, q + j] = tmp[u, 2 * j + 3]
        for u in range(4):
            z = 4 * u
            for k in range(tn):
                v[z, c, k] = stage[z, k] - stage[z + 2, k]
            for k in range(tn):
                v[z + 1, c, k] = stage[z + 1, k] + stage[z + 2, k]
            for k in range(tn):
                v[z + 2, c, k] = stage[z + 2, k] - stage[z + 1, k]
            for k in range(tn):
                v[z + 3, c, k] = stage[z + 1, k] - stage[z + 3, k]
    return 0.0


@kernel
def transform_output(m, bias, y, stage):
    """y[o] = A^T m A per tile (+ bias[o]), cropped to y's (Ho, Wo); m (16, O, T), stage
    (16, T) scratch. Returns 0.0 if every output is finite, else NaN."""
    o_n, h_n, w_n = y.shape
    th = (h_n + 1) // 2
    tw = (w_n + 1) // 2
    tn = th * tw
    chk = np.float32(0)
    zero = np.float32(0)
    for o in range(o_n):
        bo = bias[o]
        for k in range(tn):
            stage[0, k] = (m[0, o, k] + m[4, o, k] + m[8, o, k]) \
                + (m[1, o, k] + m[5, o, k] + m[9, o, k]) \
                + (m[2, o, k] + m[6, o, k] + m[10, o, k]) + bo
        for k in range(tn):
            stage[1, k] = (m[1, o, k] + m[5, o, k] + m[9, o, k]) \
                - (m[2, o, k] + m[6, o, k] + m[10, o, k]) \
                - (m[3, o, k] + m[7, o, k] + m[11, o, k]) + bo
        for k in range(tn):
            stage[2, k] = (m[4, o, k] - m[8, o, k] - m[12, o, k]) \
                + (m[5, o, k] - m[9, o, k] - m[13, o, k]) \
                + (m[6, o, k] - m[10, o, k] - m[14, o, k]) + bo
        for k in range(tn):
            stage[3, k] = (m[5, o, k] - m[9, o, k] - m[13, o, k]) \
                - (m[6, o, k] - m[10, o, k] - m[14, o, k]) \
                - (m[7, o, k] - m[11, o, k] - m[15, o, k]) + bo
        for k in range(tn):
            chk += (stage[0, k] + stage[1, k] + stage[2, k] + stage[3, k]) * zero
        for i in range(th):
            q = i * tw
            for r in range(2):
                if 2 * i + r < h_n:
                    for j in range(w_n // 2):
                        y[o, 2 * i + r, 2 * j] = stage[2 * r, q + j]
                        y[o, 2 * i + r, 2 * j + 1] = stage[2 * r + 1, q + j]
                    if w_n % 2:
                        y[o, 2 * i + r, w_n - 1] = stage[2 * r, q + tw - 1]
    return chk


@kernel
def transform_output_t(g, dm, stage, db):
    """dm[:, o] = A g A^T per 2x2 tile of g[o] (g: (O, Ho, Wo), zero past its edges), the
    adjoint of `transform_output`; db[o] += the sum of g[o]. stage (16, T) scratch.
    Returns 0.0 if g is finite, else NaN."""
    o_n, h_n, w_n = g.shape
    th = (h_n + 1) // 2
    tw = (w_n + 1) // 2
    tn = th * tw
    chk = np.float32(0)
    zero = np.float32(0)
    stage[:4, :] = 0  # entries past the edges stay 0
    for o in range(o_n):
        for i in range(th):
            q = i * tw
            for r in range(2):
                if 2 * i + r < h_n:
                    for j in range(w_n // 2):
                        stage[2 * r, q + j] = g[o, 2 * i + r, 2 * j]
                        stage[2 * r + 1, q + j] = g[o, 2 * i + r, 2 * j + 1]
                    if w_n % 2:
                        stage[2 * r, q + tw - 1] = g[o, 2 * i + r, w_n - 1]
        s = np.float32(0)
        for k in range(tn):
            s += (stage[0, k] + stage[1, k]) + (stage[2, k] + stage[3, k])
        # rows 0, 1 of the tile (q) and (p) give columns c_b = (q0, q0 + q1, q0 - q1, -q1)
        for k in range(tn):
            dm[0, o, k] = stage[0, k]
        for k in range(tn):
            dm[1, o, k] = stage[0, k] + stage[1, k]
        for k in range(tn):
            dm[2, o, k] = stage[0, k] - stage[1, k]
        for k in range(tn):
            dm[3, o, k] = -stage[1, k]
        for k in range(tn):
            dm[4, o, k] = stage[0, k] + stage[2, k]
        for k in range(tn):
            dm[5, o, k] = (stage[0, k] + stage[1, k]) + (stage[2, k] + stage[3, k])
        for k in range(tn):
            dm[6, o, k] = (stage[0, k] - stage[1, k]) + (stage[2, k] - stage[3, k])
        for k in range(tn):
            dm[7, o, k] = -stage[1, k] - stage[3, k]
        for k in range(tn):
            dm[8, o, k] = stage[0, k] - stage[2, k]
        for k in range(tn):
            dm[9, o, k] = (stage[0, k] + stage[1, k]) - (stage[2, k] + stage[3, k])
        for k in range(tn):
            dm[10, o, k] = (stage[0, k] - stage[1, k]) - (stage[2, k] - stage[3, k])
        for k in range(tn):
            dm[11, o, k] = stage[3, k] - stage[1, k]
        for k in range(tn):
            dm[12, o, k] = -stage[2, k]
        for k in range(tn):
            dm[13, o, k] = -(stage[2, k] + stage[3, k])
        for k in range(tn):
            dm[14, o, k] = stage[3, k] - stage[2, k]
        for k in range(tn):
            dm[15, o, k] = stage[3, k]
        db[o] += s
        chk += s * zero
    return chk


@kernel
def transform_input_t(dv, pad_h, pad_w, plane, tmp, stage, dx):
    """dx[c] = the sum of B v B^T over the tiles of dv[:, c], cropped from the padded plane
    to dx's (H, W): the adjoint of `transform_input`. plane (Hp, Wp), tmp (4, Wp) and
    stage (16, T) scratch. Returns 0.0 if dx is finite, else NaN."""
    c_n, h_n, w_n = dx.shape
    th = (plane.shape[0] - 2) // 2
    tw = (plane.shape[1] - 2) // 2
    wp = plane.shape[1]
    tn = th * tw
    chk = np.float32(0)
    zero = np.float32(0)
    for c in range(c_n):
        for u in range(4):  # each tile's columns 0..3, from its row u of dv
            z = 4 * u
            for k in range(tn):
                stage[z, k] = dv[z, c, k]
            for k in range(tn):
                stage[z + 1, k] = dv[z + 1, c, k] - dv[z + 2, c, k] + dv[z + 3, c, k]
            for k in range(tn):
                stage[z + 2, k] = dv[z + 1, c, k] + dv[z + 2, c, k] - dv[z, c, k]
            for k in range(tn):
                stage[z + 3, k] = -dv[z + 3, c, k]
        plane[:, :] = 0
        for i in range(th):
            q = i * tw
            for u in range(4):  # tile j's columns land at 2j..2j+3, overlapping the next's
                z = 4 * u
                tmp[u, 0] = stage[z, q]
                tmp[u, 1] = stage[z + 1, q]
                for j in range(1, tw):
                    tmp[u, 2 * j] = stage[z, q + j] + stage[z + 2, q + j - 1]
                    tmp[u, 2 * j + 1] = stage[z + 1, q + j] + stage[z + 3, q + j - 1]
                tmp[u, 2 * tw] = stage[z + 2, q + tw - 1]
                tmp[u, 2 * tw + 1] = stage[z + 3, q + tw - 1]
            a = 2 * i
            for k in range(wp):
                plane[a, k] += tmp[0, k]
            for k in range(wp):
                plane[a + 1, k] += tmp[1, k] - tmp[2, k] + tmp[3, k]
            for k in range(wp):
                plane[a + 2, k] += tmp[1, k] + tmp[2, k] - tmp[0, k]
            for k in range(wp):
                plane[a + 3, k] -= tmp[3, k]
        for r in range(h_n):
            for k in range(w_n):
                dx[c, r, k] = plane[pad_h + r, pad_w + k]
        flat = plane.reshape(-1)  # padding's entries too: a stray non-finite one only redoes
        for k in range(flat.size):
            chk += flat[k] * zero
    return chk
