"""The LSTM's and the GRU's compiled kernels: a whole sequence's time loop, forward and
backward, for the NumPy fast path of `ops.fused_rnn`. Per step one matrix product with the
hidden weights (the GRU's: `np.dot` on contiguous blocks, BLAS through SciPy, the caller
holding BLAS to one thread; the LSTM's: the module's own loops, `_mm` forward and `_mm_nt`
backward, no BLAS, so its callers may run pieces of rows on several threads), then a few
loops over the step's elements that apply every gate and the state update, so a step
costs one product instead of a dozen NumPy calls. The sequence's input projection stays
outside (one big product), as does the backward's weight gradient (one product over every
step's saved gate gradients).

Each kernel handles a block of batch rows [r0, r1) (the rows' recurrences are
independent). Gate arithmetic runs in float64 whatever the dtype; results are rounded
once into the dtype's arrays. The saved record has the NumPy path's layout, so either
backward reads either forward's.

Without SVML, LLVM calls libm per element (glibc's tanh costs several of its exp, and
no call vectorises). So: sigmoid(z) = (1 or e) / (1 + e) with e = exp(-|z|), and tanh
= +-(1 - e) / (1 + e) with e = exp(-2|x|) for |x| >= 1/2 (no digits lost there) and a
rational form below (Lambert's continued fraction cut at depth 7: relative error under
2e-19). For float32, exp(v) (v <= 0) is (Taylor to degree 7 of v / 1024) squared ten
times, v clamped at -110: no calls, so the loop vectorises; its relative error, under
5e-10, is far below float32's rounding. float64 keeps libm's exp. NaN propagates
through every branch; +-inf gives 0 or 1 and +-1.
"""

from __future__ import annotations

import numpy as np

from . import inline, kernel

# tanh(x) = x P(x^2) / Q(x^2) for |x| < 1/2: Lambert's continued fraction for tanh cut at
# depth 7 (relative error under 2e-19 there; integer coefficients, exact in float64)
_P0, _P1, _P2, _P3 = 2027025.0, 270270.0, 6930.0, 36.0
_Q1, _Q2, _Q3 = 945945.0, 51975.0, 630.0
# exp(u) for |u| <= 110 / 1024: Taylor to degree 7 (relative error under 5e-13 there)
_C3, _C4, _C5, _C6, _C7 = 1 / 6, 1 / 24, 1 / 120, 1 / 720, 1 / 5040


@inline
def _tanh_e(a, ea):
    """tanh(a), given ea = exp(-2|a|): the rational form near 0, else +-(1 - ea) / (1 + ea)
    (see the module's docstring)."""
    if abs(a) < 0.5:
        y = a * a
        return a * (_P0 + y * (_P1 + y * (_P2 + y * _P3))) / (
            _P0 + y * (_Q1 + y * (_Q2 + y * (_Q3 + y))))
    return (1.0 - ea if a >= 0 else ea - 1.0) / (1.0 + ea)


@inline
def _exp_first(e, n, fast):
    """e[:n] = exp(e[:n]) in place, for e <= 0: by squaring when `fast` (float32: no libm
    call, so the loop vectorises; see the module's docstring), else libm's exp."""
    if fast:
        for k in range(n):
            v = e[k]
            u = (-110.0 if v < -110.0 else v) * (1.0 / 1024.0)
            q = 1.0 + u * (1.0 + u * (0.5 + u * (_C3 + u * (_C4 + u * (
                _C5 + u * (_C6 + u * _C7))))))
            for _ in range(10):
                q = q * q
            e[k] = q
    else:
        for k in range(n):
            e[k] = np.exp(e[k])


@inline
def _mm_rows(a, b, out, n0, n1):
    """out[n] = a[n] @ b for the rows n0 <= n < n1 (a (R, K), b (K, J), out (R, J), one
    dtype, accumulated in it as BLAS does): the last rows of `_mm`, one at a time, each
    element's sum grouped as `_mm` groups it (four terms of K at a time, then the rest),
    so a row gives the same bits in either loop."""
    K = a.shape[1]
    J = b.shape[1]
    K4 = K - K % 4
    for n in range(n0, n1):
        o = out[n]
        for j in range(J):
            o[j] = 0.0
        for k in range(0, K4, 4):
            a0, a1, a2, a3 = a[n, k], a[n, k + 1], a[n, k + 2], a[n, k + 3]
            w0, w1, w2, w3 = b[k], b[k + 1], b[k + 2], b[k + 3]
            for j in range(J):
                o[j] += a0 * w0[j] + a1 * w1[j] + a2 * w2[j] + a3 * w3[j]
        for k in range(K4, K):
            a0 = a[n, k]
            w0 = b[k]
            for j in range(J):
                o[j] += a0 * w0[j]


@inline
def _mm(a, b, out):
    """out = a @ b for small blocks (a (R, K), b (K, J), out (R, J), C-contiguous, one
    dtype), without BLAS: four rows of `a` and four of `b` at a time, so each vector of b
    loaded serves 16 multiply-adds into four output rows. On the recurrences' blocks
    (32 x 64 by 64 x 256, or 256 x 64) as fast as OpenBLAS single-threaded and twice
    as fast on 16 rows; and no BLAS call, so pieces of rows run on several threads
    without BLAS's thread pools stalling one another."""
    R, K = a.shape
    J = b.shape[1]
    R4 = R - R % 4
    K4 = K - K % 4
    for n in range(0, R4, 4):
        o, p, q, s = out[n], out[n + 1], out[n + 2], out[n + 3]
        for j in range(J):
            o[j] = 0.0
            p[j] = 0.0
            q[j] = 0.0
            s[j] = 0.0
        for k in range(0, K4, 4):
            a0, a1, a2, a3 = a[n, k], a[n, k + 1], a[n, k + 2], a[n, k + 3]
            b0, b1, b2, b3 = a[n + 1, k], a[n + 1, k + 1], a[n + 1, k + 2], a[n + 1, k + 3]
            c0, c1, c2, c3 = a[n + 2, k], a[n + 2, k + 1], a[n + 2, k + 2], a[n + 2, k + 3]
            d0, d1, d2, d3 = a[n + 3, k], a[n + 3, k + 1], a[n + 3, k + 2], a[n + 3, k + 3]
            w0, w1, w2, w3 = b[k], b[k + 1], b[k + 2], b[k + 3]
            for j in range(J):
                x0, x1, x2, x3 = w0[j], w1[j], w2[j], w3[j]
                o[j] += a0 * x0 + a1 * x1 + a2 * x2 + a3 * x3
                p[j] += b0 * x0 + b1 * x1 + b2 * x2 + b3 * x3
                q[j] += c0 * x0 + c1 * x1 + c2 * x2 + c3 * x3
                s[j] += d0 * x0 + d1 * x1 + d2 * x2 + d3 * x3
        for k in range(K4, K):
            a0, b0, c0, d0 = a[n, k], a[n + 1, k], a[n + 2, k], a[n + 3, k]
            w0 = b[k]
            for j in range(J):
                x0 = w0[j]
                o[j] += a0 * x0
                p[j] += b0 * x0
                q[j] += c0 * x0
                s[j] += d0 * x0
    _mm_rows(a, b, out, R4, R)


@inline
def _store_tile(out, n, j, R, J, s00, s01, s02, s03, s10, s11, s12, s13):
    """out[n:n+2, j:j+4] = the sums, those of rows >= R or columns >= J dropped."""
    for u in range(2):
        if n + u < R:
            o = out[n + u]
            t0, t1, t2, t3 = (s00, s01, s02, s03) if u == 0 else (s10, s11, s12, s13)
            o[j] = t0
            if j + 1 < J:
                o[j + 1] = t1
            if j + 2 < J:
                o[j + 2] = t2
            if j + 3 < J:
                o[j + 3] = t3


@inline
def _mm_nt(a, bT, out):
    """out = a @ bT.T (a (R, K), bT (J, K), out (R, J), rows contiguous, one dtype) as
    dot products along K: four rows of a against four of bT at a time, sixteen sums
    kept in vector registers over the whole of K, so nothing is stored inside the loop.
    For a long K (the LSTM backward's 4H) twice as fast as `_mm`'s row updates, whose
    short output rows (H) spend their time loading and storing them. The last rows and
    columns (of R or J not a multiple of four) run in the same four-by-four pass, their
    indices clamped and the extra sums dropped: every element is summed the same way
    wherever it lies, so a block of rows gives the same bits in any split."""
    R, K = a.shape
    J = bT.shape[0]
    z = out.dtype.type(0.0)
    for n in range(0, R, 4):
        a0, a1 = a[n], a[min(n + 1, R - 1)]
        a2, a3 = a[min(n + 2, R - 1)], a[min(n + 3, R - 1)]
        for j in range(0, J, 4):
            w0, w1 = bT[j], bT[min(j + 1, J - 1)]
            w2, w3 = bT[min(j + 2, J - 1)], bT[min(j + 3, J - 1)]
            s00 = s01 = s02 = s03 = s10 = s11 = s12 = s13 = z
            s20 = s21 = s22 = s23 = s30 = s31 = s32 = s33 = z
            for k in range(K):
                x0, x1, x2, x3 = a0[k], a1[k], a2[k], a3[k]
                y0, y1, y2, y3 = w0[k], w1[k], w2[k], w3[k]
                s00 += x0 * y0
                s01 += x0 * y1
                s02 += x0 * y2
                s03 += x0 * y3
                s10 += x1 * y0
                s11 += x1 * y1
                s12 += x1 * y2
                s13 += x1 * y3
                s20 += x2 * y0
                s21 += x2 * y1
                s22 += x2 * y2
                s23 += x2 * y3
                s30 += x3 * y0
                s31 += x3 * y1
                s32 += x3 * y2
                s33 += x3 * y3
            if n + 3 < R and j + 3 < J:
                o = out[n]
                o[j], o[j + 1], o[j + 2], o[j + 3] = s00, s01, s02, s03
                o = out[n + 1]
                o[j], o[j + 1], o[j + 2], o[j + 3] = s10, s11, s12, s13
                o = out[n + 2]
                o[j], o[j + 1], o[j + 2], o[j + 3] = s20, s21, s22, s23
                o = out[n + 3]
                o[j], o[j + 1], o[j + 2], o[j + 3] = s30, s31, s32, s33
            else:
                _store_tile(out, n, j, R, J, s00, s01, s02, s03, s10, s11, s12, s13)
                _store_tile(out, n + 2, j, R, J, s20, s21, s22, s23, s30, s31, s32, s33)

@kernel
def lstm_forward(xw, h0, c0, wT, Y, S, G, TC, r0, r1):
    """Batch rows [r0, r1) of an LSTM sequence: xw (L, N, 4H) the input projections with
    both biases, h0 and c0 (N, H), wT (H, 4H) the hidden weights transposed. Writes
    Y[t] = (h_t, c_t) (L, 2, N, H), the sigmoid gates i, f, o into S (L, 3, N, H), minus
    the cell gate, -g, into G (L, N, H) and tanh(c_t) into TC (L, N, H).

    Per step and row: the pre-activations z in float64, e = exp(-|z|) (exp(-2|z|) for the
    cell gate) in one loop, then sigmoid(z) = (1 or e) / (1 + e) and tanh, the cell
    update, exp(-2|c|) in another loop, and tanh(c) and h."""
    L = xw.shape[0]
    H = wT.shape[0]
    H4 = 4 * H
    nr = r1 - r0
    dt = xw.dtype
    fast = xw.itemsize == 4  # float32: the vectorised exp (float64: libm's)
    hb = np.empty((nr, H), dt)
    cb = np.empty((nr, H), dt)
    pre = np.empty((nr, H4), dt)
    z = np.empty(H4)
    e = np.empty(H4)
    sc = np.ones(H4)
    sc[2 * H:3 * H] = 2.0
    for n in range(nr):
        for j in range(H):
            hb[n, j] = h0[r0 + n, j]
            cb[n, j] = c0[r0 + n, j]
    for t in range(L):
        _mm(hb, wT, pre)
        for n in range(nr):
            r = r0 + n
            x, p, cr = xw[t, r], pre[n], cb[n]
            for k in range(H4):
                zk = float(x[k]) + float(p[k])
                z[k] = zk
                e[k] = -abs(zk) * sc[k]
            _exp_first(e, H4, fast)
            si, sf, so, gn, yc = S[t, 0, r], S[t, 1, r], S[t, 2, r], G[t, r], Y[t, 1, r]
            for j in range(H):
                zi, zf, zo = z[j], z[H + j], z[3 * H + j]
                ei, ef, eo = e[j], e[H + j], e[3 * H + j]
                i = (1.0 if zi >= 0 else ei) / (1.0 + ei)
                f = (1.0 if zf >= 0 else ef) / (1.0 + ef)
                o = (1.0 if zo >= 0 else eo) / (1.0 + eo)
                g = _tanh_e(z[2 * H + j], e[2 * H + j])
                c = f * cr[j] + i * g
                si[j] = i
                sf[j] = f
                so[j] = o
                gn[j] = -g
                yc[j] = c
                cr[j] = c
                z[j] = c
                e[j] = -2.0 * abs(c)
            _exp_first(e, H, fast)
            tcr, yh, hr = TC[t, r], Y[t, 0, r], hb[n]
            for j in range(H):
                c, ec = z[j], e[j]
                y = c * c
                if abs(c) < 0.5:
                    num = c * (_P0 + y * (_P1 + y * (_P2 + y * _P3)))
                    den = _P0 + y * (_Q1 + y * (_Q2 + y * (_Q3 + y)))
                else:
                    num = 1.0 - ec if c >= 0 else ec - 1.0
                    den = 1.0 + ec
                tc = num / den
                h = float(so[j]) * tc
                tcr[j] = tc
                yh[j] = h
                hr[j] = h


@kernel
def lstm_backward(g, c0, wT, Y, S, G, TC, GA, dh0, dc0, r0, r1):
    """Batch rows [r0, r1) of the LSTM's backward through time from the forward's record
    (Y, S, G, TC as `lstm_forward` writes them) and the cotangent g (L, 2, N, H) of every
    step's (h, c): GA (L, N, 4H) the gradients of the gate pre-activations (the input
    projections' gradient), dh0 and dc0 (N, H) the initial states'. wT (H, 4H) is the
    hidden weights transposed, as `lstm_forward` takes them (GA[t] @ w = GA[t] @ wT.T,
    dot products along 4H: `_mm_nt`)."""
    L = g.shape[0]
    H = wT.shape[0]
    nr = r1 - r0
    dh = np.zeros((nr, H), GA.dtype)    # the gate gradients of the step after, times w
    gcar = np.zeros((nr, H))            # the cell state's gradient carried through f
    for t in range(L - 1, -1, -1):
        if t < L - 1:
            _mm_nt(GA[t + 1, r0:r1], wT, dh)
        for n in range(nr):
            r = r0 + n
            ghr, gcr, dhr, car = g[t, 0, r], g[t, 1, r], dh[n], gcar[n]
            si, sf, so, gnr, tcr = S[t, 0, r], S[t, 1, r], S[t, 2, r], G[t, r], TC[t, r]
            cpr = c0[r] if t == 0 else Y[t - 1, 1, r]
            ga = GA[t, r]
            for j in range(H):
                gh = float(ghr[j]) + float(dhr[j])
                i, f, o = float(si[j]), float(sf[j]), float(so[j])
                gg, tc = -float(gnr[j]), float(tcr[j])
                gc = float(gcr[j]) + car[j] + gh * o * (1.0 - tc * tc)
                ga[j] = gc * gg * i * (1.0 - i)
                ga[H + j] = gc * float(cpr[j]) * f * (1.0 - f)
                ga[2 * H + j] = gc * i * (1.0 - gg * gg)
                ga[3 * H + j] = gh * tc * o * (1.0 - o)
                car[j] = gc * f
    _mm_nt(GA[0, r0:r1], wT, dh)
    for n in range(nr):
        for j in range(H):
            dh0[r0 + n, j] = dh[n, j]
            dc0[r0 + n, j] = gcar[n, j]


@kernel
def gru_forward(xw, h0, wT, b, Y, RZ, NN, GH, r0, r1):
    """Batch rows [r0, r1) of a GRU sequence: xw (L, N, 3H) the input projections with
    the input bias, h0 (N, H), wT (H, 3H) the hidden weights transposed, b (3H,) the
    hidden bias (zeros when absent). Writes the NumPy path's record: Y[t] = h_t (L, N, H),
    the reset and update gates r, z into RZ (L, 2, N, H), the new gate n into NN
    (L, N, H) and the hidden products negated, -(h_prev @ w.T + b), into GH (L, N, 3H).

    Per step and row: the pre-activations of r and z in float64 and e = exp(-|.|) in one
    loop, then the sigmoids and n's pre-activation x_n + r (h w_n + b_n), exp(-2|.|) in
    another loop, and tanh and h = n + z (h_prev - n)."""
    L = xw.shape[0]
    H = wT.shape[0]
    H2 = 2 * H
    H3 = 3 * H
    nr = r1 - r0
    dt = xw.dtype
    fast = xw.itemsize == 4  # float32: the vectorised exp (float64: libm's)
    hb = np.empty((nr, H), dt)
    pre = np.empty((nr, H3), dt)
    z = np.empty(H3)
    e = np.empty(H2)
    zs = np.empty(H)
    for n in range(nr):
        for j in range(H):
            hb[n, j] = h0[r0 + n, j]
    for t in range(L):
        np.dot(hb, wT, pre)
        for n in range(nr):
            r = r0 + n
            x, p, gh = xw[t, r], pre[n], GH[t, r]
            for k in range(H3):
                hk = float(p[k]) + float(b[k])
                gh[k] = -hk
                z[k] = hk
            for k in range(H2):
                zk = float(x[k]) + z[k]
                z[k] = zk
                e[k] = -abs(zk)
            _exp_first(e, H2, fast)
            sr, sz = RZ[t, 0, r], RZ[t, 1, r]
            for j in range(H):
                zr, zu = z[j], z[H + j]
                er, eu = e[j], e[H + j]
                rg = (1.0 if zr >= 0 else er) / (1.0 + er)
                ug = (1.0 if zu >= 0 else eu) / (1.0 + eu)
                sr[j] = rg
                sz[j] = ug
                zs[j] = ug
                a = float(x[H2 + j]) + rg * z[H2 + j]
                z[j] = a
                e[j] = -2.0 * abs(a)
            _exp_first(e, H, fast)
            nn, yh, hr = NN[t, r], Y[t, r], hb[n]
            for j in range(H):
                nv = _tanh_e(z[j], e[j])
                h = nv + zs[j] * (float(hr[j]) - nv)
                nn[j] = nv
                yh[j] = h
                hr[j] = h


@kernel
def gru_backward(g, h0, w, Y, RZ, NN, GH, DG, DX, dh0, r0, r1):
    """Batch rows [r0, r1) of the GRU's backward through time from the forward's record
    (Y, RZ, NN, GH as `gru_forward` writes them) and the cotangent g (L, N, H) of every
    step's h: DG (L, N, 3H) the gradients of the hidden products h_prev @ w.T + b, DX
    (L, N, 3H) those of the input projections, dh0 (N, H) the initial state's. w is
    (3H, H). The gradient reaching h_t directly (through z) is carried in float64."""
    L = g.shape[0]
    H = w.shape[1]
    H2 = 2 * H
    nr = r1 - r0
    dh = np.zeros((nr, H), DG.dtype)    # the hidden products' gradients after, times w
    acar = np.zeros((nr, H))            # dL/dh of the step after, times its z
    for t in range(L - 1, -1, -1):
        if t < L - 1:
            np.dot(DG[t + 1, r0:r1], w, dh)
        for n in range(nr):
            r = r0 + n
            gr, dhr, car = g[t, r], dh[n], acar[n]
            sr, sz, nn, ghr = RZ[t, 0, r], RZ[t, 1, r], NN[t, r], GH[t, r]
            hp = h0[r] if t == 0 else Y[t - 1, r]
            dg, dx = DG[t, r], DX[t, r]
            for j in range(H):
                a = float(gr[j]) + float(dhr[j]) + car[j]
                rv, zv, nv = float(sr[j]), float(sz[j]), float(nn[j])
                dn = a * (1.0 - zv) * (1.0 - nv * nv)
                dr = -dn * float(ghr[H2 + j]) * rv * (1.0 - rv)
                dz = a * (float(hp[j]) - nv) * zv * (1.0 - zv)
                dg[j] = dr
                dg[H + j] = dz
                dg[H2 + j] = dn * rv
                dx[j] = dr
                dx[H + j] = dz
                dx[H2 + j] = dn
                car[j] = a * zv
    np.dot(DG[0, r0:r1], w, dh)
    for n in range(nr):
        for j in range(H):
            dh0[r0 + n, j] = dh[n, j] + acar[n, j]
