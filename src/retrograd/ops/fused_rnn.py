"""Fused recurrences: `lstm_scan`, a whole LSTM sequence as one node, with NumPy fast paths
(a fused file: its rules may ask `m is NUMPY`).

`lstm_scan(xw, h0, c0, w)` runs, for t = 0 .. L-1 and PyTorch's gate order
(input, forget, cell, output),

    i, f, g, o = sigmoid, sigmoid, tanh, sigmoid of (xw[t] + h @ w.T)
    c = f * c + i * g;   h = o * tanh(c)

and returns every step's h and c: shape (L, 2, N, H). `xw` (L, N, 4H) is the
sequence's input projection with both biases, made outside by one matrix
product (as cuDNN and PyTorch do), `w` (4H, H) the hidden weights.

The fast LSTM forward works on negated pre-activations (one matrix product with
-w and one subtraction per step), so its sigmoids are 1 / (1 + exp(-z)) (exp is
cheaper than tanh) and its cell gate tanh(-z) = -g. It saves the gates, gate by
gate, for the backward, which computes the local derivatives of a block of steps
at a time (in cache) on contiguous blocks, then runs a few small products per
step, and the weight gradient as one product after the loop. The four inputs'
rules run one after another on one cotangent: the first computes all four gradients
and each rule takes its own from the saved record.
With compiled kernels on (`retrograd.kernels`, float32/float64 host arrays of one dtype
from its size up) the LSTM's and the GRU's forward and backward time loops are one kernel
call each (`kernels.rnn`), saving the same record (the GRU's with BLAS held to one thread
meanwhile; the LSTM's make their products without BLAS). Both split their batch rows over
`retrograd.threads` when the sequence is large enough (the GRU only where the pieces run
on OpenBLAS's own threads).
The generic path (create_graph, forward mode, other devices) unrolls the same
recurrence with recorded ops, so it differentiates again.
"""

from __future__ import annotations

import functools

import numpy as np

from .. import kernels as _kernels
from .. import threads as _threads
from ..kernels import rnn as _krnn
from ..primitive import NUMPY, defop


class _Saved:
    """What a fast forward keeps for its backward (`arrays`), and the backward's results
    (for the cotangent `g`) until each input's rule has taken its own."""

    __slots__ = ("arrays", "g", "grads")

    def __init__(self, *arrays):
        self.arrays = arrays
        self.g = self.grads = None


def _rules(n: int, fast_backward, generic_vjp) -> tuple:
    """The n inputs' vjp rules of a scan op. On arrays with the forward's saved record, the
    first rule run for a cotangent computes every input's gradient (`fast_backward(g,
    *inputs, *saved, **attrs)`) and each rule hands out its own once; otherwise each runs
    `generic_vjp(m, g, *inputs, which=k, **attrs)`."""
    def make(which):
        def rule(m, g, out, *xs, **attrs):
            if m is NUMPY and out.__class__ is _Saved:
                if out.g is not g or out.grads[which] is None:
                    out.g, out.grads = g, list(fast_backward(g, *xs, *out.arrays, **attrs))
                r = out.grads[which]
                out.grads[which] = None  # handed out once: the caller may own it
                return r
            return generic_vjp(m, g, *xs, which=which, **attrs)
        return rule
    return tuple(make(k) for k in range(n))


def _fast(*arrays) -> bool:
    """Host float arrays of one dtype (None: an absent bias): the NumPy fast path applies."""
    dt = arrays[0].dtype
    return dt.kind == "f" and all(a is None or (a.__class__ is np.ndarray and a.dtype == dt)
                                  for a in arrays)


_KERNEL_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _compiled(*arrays) -> bool:
    """Whether the compiled kernels take these fast-path arrays (the first sized by the
    sequence): float32/float64 host arrays of one dtype, not empty, large enough."""
    a = arrays[0]
    return (a.dtype in _KERNEL_DTYPES and a.size > 0 and _kernels.enabled(a.size)
            and all(b.__class__ is np.ndarray and b.dtype == a.dtype for b in arrays))


def _gru_pieces(L: int, N: int, H: int) -> list:
    """The GRU's batch rows in pieces, as the LSTM's (`_lstm_pieces`), only where they run
    on OpenBLAS's own threads (`threads.lends`): its kernels call BLAS (SciPy's, held to
    one thread) every step, and two pieces on a pool thread of ours were 5x slower
    (measured at batch 32 on two cores: the other BLAS's spinning threads took the
    cores), while on OpenBLAS's the layer's step went from 3.4 to 2.7 ms. Elsewhere one
    piece, BLAS held to one thread."""
    pieces = _threads.chunks(N, L * N * 3 * H * H, _LSTM_MIN_WORK)
    return pieces if len(pieces) == 1 or _threads.lends(len(pieces) - 1) else [(0, N)]


_LSTM_MIN_WORK = 1 << 22
"""Multiply-adds of the recurrent products (L * rows * 4H * H) below which the LSTM's
kernels run on one thread: a piece must pay for its hand-off (tens of microseconds)."""


def _lstm_pieces(L: int, N: int, H: int) -> list:
    """The batch rows in pieces for the LSTM's kernels, one per thread (`threads.chunks`)
    when the sequence's recurrent products are large enough: each row's recurrence is
    independent, and the kernels make their small products themselves (no BLAS call),
    so the pieces run at once without BLAS's thread pools stalling one another (two
    pieces of 16 rows at batch 32, 64 steps, H 64: each step's products take half as
    long as one piece's of 32). Results do not depend on the split: every row is
    computed the same way in any piece."""
    return _threads.chunks(N, L * N * 4 * H * H, _LSTM_MIN_WORK)


def _lstm_forward_compiled(xw, h0, c0, w):
    """_lstm_forward_np's results from the compiled kernel."""
    L, N, H4 = xw.shape
    H = H4 // 4
    dt = xw.dtype
    xw, h0, c0 = (np.ascontiguousarray(a) for a in (xw, h0, c0))
    wT = np.ascontiguousarray(w.T)
    Y = np.empty((L, 2, N, H), dt)
    S = np.empty((L, 3, N, H), dt)
    G = np.empty((L, N, H), dt)
    TC = np.empty((L, N, H), dt)
    _threads.run(lambda a, b: _krnn.lstm_forward(xw, h0, c0, wT, Y, S, G, TC, a, b),
                 _lstm_pieces(L, N, H))
    return Y, S, G, TC


def _lstm_forward_np(xw, h0, c0, w):
    """(Y, S, G, TC): the output (L, 2, N, H); the sigmoid gates i, f, o step by step and
    gate by gate (L, 3, N, H); minus the cell gate, -g (L, N, H); tanh(c) (L, N, H).

    Each step is one matrix product with the negated weights and one subtraction, giving
    the negated pre-activations -z; the sigmoids are then 1 / (1 + exp(-z)) (exp costs
    less than tanh) and the cell gate tanh(-z) = -g, folded into c = f c_prev - i (-g).
    Every gate of every step lands in a contiguous block, so each later operation runs
    on contiguous rows. One thread: the batch's rows split over two threads were slower
    (measured at batch 32: a dozen small NumPy calls per step share the GIL). With
    compiled kernels on, one kernel call does it all."""
    if _compiled(xw, h0, c0, w):
        return _lstm_forward_compiled(xw, h0, c0, w)
    L, N, H4 = xw.shape
    H = H4 // 4
    dt = xw.dtype
    wn = np.empty((H, H4), dt)
    np.negative(w.T, out=wn)
    S = np.empty((L, 3, N, H), dt)
    G = np.empty((L, N, H), dt)
    Y = np.empty((L, 2, N, H), dt)
    TC = np.empty((L, N, H), dt)
    pre = np.empty((N, H4), dt)
    p4 = pre.reshape(N, 4, H)
    p_if, p_g, p_o = p4[:, :2].transpose(1, 0, 2), p4[:, 2], p4[:, 3]
    ig = np.empty((N, H), dt)
    one = dt.type(1)
    h, c = h0, c0
    steps = zip(xw, S[:, :2], S[:, 2], S, S[:, 0], S[:, 1], G, Y[:, 0], Y[:, 1], TC)
    with np.errstate(over="ignore"):  # exp(-z) = inf for a very negative z: sigmoid 0
        for x, s_if, s_o, s, s_i, s_f, gn, hn, cn, tc in steps:
            np.matmul(h, wn, out=pre)
            np.subtract(pre, x, out=pre)
            np.exp(p_if, out=s_if)
            np.exp(p_o, out=s_o)
            np.add(s, one, out=s)
            np.reciprocal(s, out=s)
            np.tanh(p_g, out=gn)
            np.multiply(s_f, c, out=cn)
            np.multiply(s_i, gn, out=ig)
            np.subtract(cn, ig, out=cn)
            np.tanh(cn, out=tc)
            np.multiply(s_o, tc, out=hn)
            h, c = hn, cn
    return Y, S, G, TC


def _lstm_scan(xw, h0, c0, w):
    if _fast(xw, h0, c0, w):
        return _lstm_forward_np(xw, h0, c0, w)[0]
    steps = _lstm_steps(NUMPY, xw, h0, c0, w)
    return NUMPY.cat(*[_stack_hc(NUMPY, s[8], s[5]) for s in steps], axis=-4)


def _lstm_scan_saving(xw, h0, c0, w):
    if _fast(xw, h0, c0, w) and xw.shape[0]:
        Y, S, G, TC = _lstm_forward_np(xw, h0, c0, w)
        return Y, _Saved(Y, S, G, TC)
    return _lstm_scan(xw, h0, c0, w), None


_BLOCK = 8
"""Steps whose local derivatives the LSTM backward computes together: blocks small enough
to stay in cache, large enough that each NumPy call does real work."""


def _lstm_backward_np(g, xw, h0, c0, w, Y, S, G, TC):
    """(dxw, dh0, dc0, dw) from the saved gates: the loop through time, then the weight
    gradient as one product over every step."""
    L, _, N, H = S.shape
    if _compiled(S, g, c0, w):
        return _lstm_backward_compiled(g, c0, w, Y, S, G, TC, h0)
    dt = S.dtype
    f = S[:, 1]
    GA = np.empty((L, N, 4 * H), dt)
    GA4 = GA.reshape(L, N, 4, H)
    g = g.reshape(L, 2, N, H)
    B = min(_BLOCK, L)
    D = np.empty((B, 3, N, H), dt)
    E = np.empty((B, 4, N, H), dt)
    K = np.empty((B, N, H), dt)
    ghc = np.empty((2, N, H), dt)
    gh, gc = ghc
    tmp = np.empty((N, H), dt)
    t1 = L
    while t1 > 0:
        t0 = max(0, t1 - B)
        s, gn, tc = S[t0:t1], G[t0:t1], TC[t0:t1]
        d, e, k = D[:t1 - t0], E[:t1 - t0], K[:t1 - t0]
        np.subtract(1.0, s, out=d)
        np.multiply(d, s, out=d)                     # s (1 - s)
        np.multiply(gn, d[:, 0], out=e[:, 0])        # i: g i' (gn = -g)
        np.negative(e[:, 0], out=e[:, 0])
        if t0 == 0:                                  # f: c_prev f'
            np.multiply(c0, d[0, 1], out=e[0, 1])
            np.multiply(Y[:t1 - 1, 1], d[1:, 1], out=e[1:, 1])
        else:
            np.multiply(Y[t0 - 1:t1 - 1, 1], d[:, 1], out=e[:, 1])
        np.multiply(gn, gn, out=e[:, 2])             # g: i (1 - g^2)
        np.subtract(1.0, e[:, 2], out=e[:, 2])
        np.multiply(e[:, 2], s[:, 0], out=e[:, 2])
        np.multiply(tc, d[:, 2], out=e[:, 3])        # o: tanh(c) o'
        np.multiply(tc, tc, out=k)                   # K = o (1 - tanh(c)^2)
        np.subtract(1.0, k, out=k)
        np.multiply(k, s[:, 2], out=k)
        for t in range(t1 - 1, t0 - 1, -1):
            j = t - t0
            if t == L - 1:
                ghc[...] = g[t]
            else:
                np.matmul(GA[t + 1], w, out=gh)
                np.multiply(gc, f[t + 1], out=gc)    # the cell state's path through f
                np.add(ghc, g[t], out=ghc)
            np.multiply(gh, k[j], out=tmp)
            np.add(gc, tmp, out=gc)
            ga = GA4[t]
            np.multiply(e[j, :3], gc, out=ga.transpose(1, 0, 2)[:3])
            np.multiply(e[j, 3], gh, out=ga[:, 3])
        t1 = t0
    dh0 = GA[0] @ w
    dc0 = gc * f[0]
    dw = GA[0].T @ h0
    if L > 1:
        dw += GA[1:].reshape(-1, 4 * H).T @ Y[:-1, 0].reshape(-1, H)
    return GA, dh0, dc0, dw


def _lstm_backward_compiled(g, c0, w, Y, S, G, TC, h0):
    """_lstm_backward_np's results from the compiled kernel, then the weight gradient
    as one product over every step."""
    L, _, N, H = S.shape
    dt = S.dtype
    g = np.ascontiguousarray(g.reshape(L, 2, N, H))
    c0, wT = np.ascontiguousarray(c0), np.ascontiguousarray(w.T)
    GA = np.empty((L, N, 4 * H), dt)
    dh0 = np.empty((N, H), dt)
    dc0 = np.empty((N, H), dt)
    _threads.run(lambda a, b: _krnn.lstm_backward(g, c0, wT, Y, S, G, TC, GA, dh0, dc0, a, b),
                 _lstm_pieces(L, N, H))
    dw = GA[0].T @ h0
    if L > 1:
        dw += GA[1:].reshape(-1, 4 * H).T @ Y[:-1, 0].reshape(-1, H)
    return GA, dh0, dc0, dw


# ---------------------------------------------------------------- the generic path

def _lstm_steps(m, xw, h0, c0, w):
    """The recurrence with `m`'s ops: per step (i, f, g, o, c_prev, c, tanh(c), h_prev, h)."""
    H = w.shape[-1]
    wT = m.permute(w, axes=(1, 0))
    h, c = h0, c0
    steps = []
    for t in range(xw.shape[0]):
        pre = m.getitem(xw, idx=(t,)) + m.matmul(h, wT)
        i, f, g, o = (m.getitem(pre, idx=(Ellipsis, slice(k * H, (k + 1) * H)))
                      for k in range(4))
        i, f, g, o = m.sigmoid(i), m.sigmoid(f), m.tanh(g), m.sigmoid(o)
        cn = f * c + i * g
        tc = m.tanh(cn)
        hn = o * tc
        steps.append((i, f, g, o, c, cn, tc, h, hn))
        h, c = hn, cn
    return steps


def _stack_hc(m, h, c):
    """One step's (1, 2, N, H): h and c stacked, with a time axis of 1 (in front of the
    last two axes, after any leading batch axes)."""
    shape = h.shape[:-2] + (1, 1) + h.shape[-2:]
    return m.cat(m.reshape(h, shape=shape), m.reshape(c, shape=shape), axis=-3)


def _lstm_vjp(m, g, xw, h0, c0, w, *, which):
    steps = _lstm_steps(m, xw, h0, c0, w)
    L = len(steps)
    gas = [None] * L
    gh_c = gc_c = dw = None
    for t in range(L - 1, -1, -1):
        i, f, gg, o, cp, c, tc, hp, h = steps[t]
        gh = m.getitem(g, idx=(t, 0))
        gc = m.getitem(g, idx=(t, 1))
        if gh_c is not None:
            gh = gh + gh_c
            gc = gc + gc_c
        gc = gc + gh * o * (1.0 - tc * tc)
        ga = m.cat(gc * gg * i * (1.0 - i), gc * cp * f * (1.0 - f), gc * i * (1.0 - gg * gg),
                   gh * tc * o * (1.0 - o), axis=-1)
        gc_c = gc * f
        gh_c = m.matmul(ga, w)
        gas[t] = ga
        if which == 3:
            p = m.matmul(m.permute(ga, axes=(1, 0)), hp)
            dw = p if dw is None else dw + p
    if which == 0:
        return m.cat(*[m.reshape(ga, shape=(1,) + ga.shape) for ga in gas], axis=0)
    return (None, gh_c, gc_c, dw)[which]


def _add(a, b):
    return b if a is None else a if b is None else a + b


def _mul(a, b):
    return None if a is None else a * b


def _lstm_jvp(which):
    """The tangent of every step's [h, c] from the tangent `t` of input `which` (with
    leading batch dimensions, if any, kept in front)."""
    def rule(m, t, out, xw, h0, c0, w):
        H = w.shape[-1]
        lead = t.ndim - (xw, h0, c0, w)[which].ndim
        wT = m.permute(w, axes=(1, 0))
        dwT = (m.permute(t, axes=tuple(range(lead)) + (lead + 1, lead)) if which == 3
               else None)
        dh = t if which == 1 else None
        dc = t if which == 2 else None
        outs = []
        for s, (i, f, g, o, cp, _c, tc, hp, _h) in enumerate(_lstm_steps(m, xw, h0, c0, w)):
            dpre = m.getitem(t, idx=(Ellipsis, s, slice(None), slice(None))) \
                if which == 0 else None
            if dh is not None:
                dpre = _add(dpre, m.matmul(dh, wT))
            if dwT is not None:
                dpre = _add(dpre, m.matmul(hp, dwT))
            if dpre is not None:
                di, df, dg, do = (m.getitem(dpre, idx=(Ellipsis, slice(k * H, (k + 1) * H)))
                                  for k in range(4))
                di, df, dg, do = di * i * (1.0 - i), df * f * (1.0 - f), dg * (1.0 - g * g), \
                    do * o * (1.0 - o)
            else:
                di = df = dg = do = None
            dc = _add(_add(_mul(df, cp), _mul(dc, f)), _add(_mul(di, g), _mul(dg, i)))
            dh = _add(_mul(do, tc), dc * o * (1.0 - tc * tc))
            outs.append(_stack_hc(m, dh, dc))
        return m.cat(*outs, axis=-4)
    return rule


lstm_scan = defop(
    "lstm_scan", _lstm_scan, _rules(4, _lstm_backward_np, _lstm_vjp),
    tuple(_lstm_jvp(k) for k in range(4)),
    saving=_lstm_scan_saving, fresh=True, tuned=True, fresh_vjps=True)


# ---------------------------------------------------------------- GRU

def _gru_forward_np(xw, h0, w, b):
    """(Y, RZ, NN, GH): the output (L, N, H); the reset and update gates (L, 2, N, H);
    the new gate n (L, N, H); the hidden products, negated, -(h @ w.T + b) (L, N, 3H).
    As the LSTM's: a product with the negated weights gives the negated pre-activations of
    r and z, whose sigmoids are 1 / (1 + exp(-z)). With compiled kernels on, one kernel
    call does it all."""
    if _compiled(xw, h0, w, *(() if b is None else (b,))):
        return _gru_forward_compiled(xw, h0, w, b)
    L, N, H3 = xw.shape
    H = H3 // 3
    dt = xw.dtype
    wn = np.empty((H, H3), dt)
    np.negative(w.T, out=wn)
    bn = None if b is None else np.negative(b)
    Y = np.empty((L, N, H), dt)
    RZ = np.empty((L, 2, N, H), dt)
    NN = np.empty((L, N, H), dt)
    GH = np.empty((L, N, H3), dt)
    tmp = np.empty((N, H), dt)
    h = h0
    with np.errstate(over="ignore"):  # exp(-z) = inf for a very negative z: sigmoid 0
        for t in range(L):
            gh, rz, n = GH[t], RZ[t], NN[t]
            np.matmul(h, wn, out=gh)
            if bn is not None:
                np.add(gh, bn, out=gh)
            np.subtract(gh[:, :2 * H].reshape(N, 2, H).transpose(1, 0, 2),
                        xw[t, :, :2 * H].reshape(N, 2, H).transpose(1, 0, 2), out=rz)
            np.exp(rz, out=rz)
            np.add(rz, 1.0, out=rz)
            np.reciprocal(rz, out=rz)
            np.multiply(rz[0], gh[:, 2 * H:], out=n)       # -(r * (h w_n + b_n))
            np.subtract(xw[t, :, 2 * H:], n, out=n)
            np.tanh(n, out=n)
            np.subtract(h, n, out=tmp)
            np.multiply(tmp, rz[1], out=tmp)
            h = Y[t]
            np.add(n, tmp, out=h)
    return Y, RZ, NN, GH


def _gru_forward_compiled(xw, h0, w, b):
    """_gru_forward_np's results from the compiled kernel (an absent bias passed as zeros)."""
    L, N, H3 = xw.shape
    H = H3 // 3
    dt = xw.dtype
    xw, h0 = np.ascontiguousarray(xw), np.ascontiguousarray(h0)
    wT = np.ascontiguousarray(w.T)
    b = np.zeros(H3, dt) if b is None else np.ascontiguousarray(b)
    Y = np.empty((L, N, H), dt)
    RZ = np.empty((L, 2, N, H), dt)
    NN = np.empty((L, N, H), dt)
    GH = np.empty((L, N, H3), dt)
    _threads.run_one_blas(
        lambda a, c: _krnn.gru_forward(xw, h0, wT, b, Y, RZ, NN, GH, a, c),
        _gru_pieces(L, N, H))
    return Y, RZ, NN, GH


def _gru_scan(xw, h0, w, b):
    if _fast(xw, h0, w, b):
        return _gru_forward_np(xw, h0, w, b)[0]
    return _time_stack(NUMPY, [s[-1] for s in _gru_steps(NUMPY, xw, h0, w, b)])


def _gru_scan_saving(xw, h0, w, b):
    if _fast(xw, h0, w, b) and xw.shape[0]:
        Y, RZ, NN, GH = _gru_forward_np(xw, h0, w, b)
        return Y, _Saved(Y, RZ, NN, GH)
    return _gru_scan(xw, h0, w, b), None


def _gru_backward_np(g, xw, h0, w, b, Y, RZ, NN, GH):
    """(dxw, dh0, dw, db) from the saved gates."""
    L, _, N, H = RZ.shape
    if _compiled(RZ, g, h0, w):
        return _gru_backward_compiled(g, h0, w, b, Y, RZ, NN, GH)
    r, z = RZ[:, 0], RZ[:, 1]
    # every step's local derivatives at once: E[t] * a_t (a_t = dL/dh_t) is the gradient of
    # the hidden products' [r, z, n] parts; En * a_t that of the new gate's pre-activation
    D = RZ * RZ
    np.subtract(RZ, D, out=D)                 # s (1 - s)
    En = NN * NN
    np.subtract(1.0, En, out=En)
    zc = 1.0 - z
    En *= zc                                  # (1 - z)(1 - n^2)
    E = np.empty((L, 3, N, H), RZ.dtype)
    np.multiply(En, r, out=E[:, 2])                            # hidden n part: r (1-z) n'
    np.multiply(En, GH[:, :, 2 * H:], out=E[:, 0])             # r: (h W_n + b_n) r' ...
    E[:, 0] *= D[:, 0]
    np.negative(E[:, 0], out=E[:, 0])                          # (GH holds -(h W + b))
    np.subtract(h0, NN[0], out=E[0, 1])                        # z: (h_prev - n) z'
    np.subtract(Y[:-1], NN[1:], out=E[1:, 1])
    E[:, 1] *= D[:, 1]
    DG = np.empty((L, N, 3 * H), RZ.dtype)     # d(hidden products)
    DG3 = DG.reshape(L, N, 3, H).transpose(0, 2, 1, 3)
    A = np.empty((L, N, H), RZ.dtype)          # dL/dh_t
    tmp = np.empty((N, H), RZ.dtype)
    for t in range(L - 1, -1, -1):
        a = A[t]
        if t == L - 1:
            a[...] = g[t]
        else:
            np.matmul(DG[t + 1], w, out=a)
            np.multiply(A[t + 1], z[t + 1], out=tmp)   # h's direct path through z
            a += tmp
            a += g[t]
        np.multiply(E[t], a, out=DG3[t])
    dh0 = DG[0] @ w
    np.multiply(A[0], z[0], out=tmp)
    dh0 += tmp
    dw = DG[0].T @ h0
    if L > 1:
        dw += DG[1:].reshape(-1, 3 * H).T @ Y[:-1].reshape(-1, H)
    db = None if b is None else np.ones(L * N, RZ.dtype) @ DG.reshape(-1, 3 * H)
    dxw = DG.copy()
    np.multiply(A, En, out=dxw[:, :, 2 * H:])
    return dxw, dh0, dw, db


def _gru_backward_compiled(g, h0, w, b, Y, RZ, NN, GH):
    """_gru_backward_np's results from the compiled kernel, then the weight and bias
    gradients as one product each over every step."""
    L, _, N, H = RZ.shape
    dt = RZ.dtype
    g = np.ascontiguousarray(g.reshape(L, N, H))
    h0, w = np.ascontiguousarray(h0), np.ascontiguousarray(w)
    DG = np.empty((L, N, 3 * H), dt)
    dxw = np.empty((L, N, 3 * H), dt)
    dh0 = np.empty((N, H), dt)
    _threads.run_one_blas(
        lambda a, c: _krnn.gru_backward(g, h0, w, Y, RZ, NN, GH, DG, dxw, dh0, a, c),
        _gru_pieces(L, N, H))
    dw = DG[0].T @ h0
    if L > 1:
        dw += DG[1:].reshape(-1, 3 * H).T @ Y[:-1].reshape(-1, H)
    db = None if b is None else np.ones(L * N, dt) @ DG.reshape(-1, 3 * H)
    return dxw, dh0, dw, db


def _gru_steps(m, xw, h0, w, b):
    """The recurrence with `m`'s ops: per step (r, z, n, hidden n part, h_prev, h)."""
    H = w.shape[-1]
    wT = m.permute(w, axes=(1, 0))
    h = h0
    steps = []
    for t in range(xw.shape[0]):
        gh = m.matmul(h, wT)
        if b is not None:
            gh = gh + b
        x = m.getitem(xw, idx=(t,))
        xr, xz, xn = (m.getitem(x, idx=(Ellipsis, slice(k * H, (k + 1) * H))) for k in range(3))
        hr, hz, hn = (m.getitem(gh, idx=(Ellipsis, slice(k * H, (k + 1) * H)))
                      for k in range(3))
        r, z = m.sigmoid(xr + hr), m.sigmoid(xz + hz)
        n = m.tanh(xn + r * hn)
        hnew = n + z * (h - n)
        steps.append((r, z, n, hn, h, hnew))
        h = hnew
    return steps


def _time_stack(m, hs):
    """Steps' (..., N, H) stacked on a time axis in front of the last two."""
    return m.cat(*[m.reshape(h, shape=h.shape[:-2] + (1,) + h.shape[-2:]) for h in hs],
                 axis=-3)


def _gru_vjp(m, g, xw, h0, w, b, *, which):
    steps = _gru_steps(m, xw, h0, w, b)
    L = len(steps)
    dxs = [None] * L
    carry = dw = db = None
    for t in range(L - 1, -1, -1):
        r, z, n, hn, hp, _h = steps[t]
        a = m.getitem(g, idx=(t,))
        if carry is not None:
            a = a + carry
        dn = a * (1.0 - z) * (1.0 - n * n)
        dr = dn * hn * r * (1.0 - r)
        dz = a * (hp - n) * z * (1.0 - z)
        dgh = m.cat(dr, dz, dn * r, axis=-1)
        dxs[t] = m.cat(dr, dz, dn, axis=-1)
        carry = a * z + m.matmul(dgh, w)
        if which == 2:
            p = m.matmul(m.permute(dgh, axes=(1, 0)), hp)
            dw = p if dw is None else dw + p
        if which == 3:
            p = m.sum(dgh, axis=(0,))
            db = p if db is None else db + p
    if which == 0:
        return m.cat(*[m.reshape(d, shape=(1,) + d.shape) for d in dxs], axis=0)
    return (None, carry, dw, db)[which]


def _gru_jvp(which):
    """The tangent of every step's h from the tangent `t` of input `which` (leading batch
    dimensions, if any, kept in front)."""
    def rule(m, t, out, xw, h0, w, b):
        H = w.shape[-1]
        lead = t.ndim - (xw, h0, w, b)[which].ndim
        wT = m.permute(w, axes=(1, 0))
        dwT = (m.permute(t, axes=tuple(range(lead)) + (lead + 1, lead)) if which == 2
               else None)
        dh = t if which == 1 else None
        outs = []
        for s, (r, z, n, hn, hp, _h) in enumerate(_gru_steps(m, xw, h0, w, b)):
            dx = m.getitem(t, idx=(Ellipsis, s, slice(None), slice(None))) \
                if which == 0 else None
            dgh = None if dh is None else m.matmul(dh, wT)
            if dwT is not None:
                dgh = _add(dgh, m.matmul(hp, dwT))
            if which == 3:  # the bias's tangent, lined up with the batch rows
                dgh = _add(dgh, m.reshape(t, shape=t.shape[:lead] + (1,) + t.shape[lead:])
                           if lead else t)
            parts = [[None if d is None else
                      m.getitem(d, idx=(Ellipsis, slice(k * H, (k + 1) * H))) for k in range(3)]
                     for d in (dx, dgh)]
            (xr, xz, xn), (hr, hz, hn_) = parts
            dr = _mul(_add(xr, hr), r * (1.0 - r))
            dz = _mul(_add(xz, hz), z * (1.0 - z))
            dn = _mul(_add(xn, _add(_mul(dr, hn), _mul(hn_, r))), 1.0 - n * n)
            # h' = n + z (h - n): dh' = dn + dz (h - n) + z (dh - dn)
            dnew = _add(_add(dn, _mul(dz, hp - n)), _mul(_add(dh, None if dn is None else -dn), z))
            outs.append(dnew)
            dh = dnew
        return _time_stack(m, outs)
    return rule


gru_scan = defop(
    "gru_scan", _gru_scan, _rules(4, _gru_backward_np, _gru_vjp),
    tuple(_gru_jvp(k) for k in range(4)),
    saving=_gru_scan_saving, fresh=True, tuned=True, fresh_vjps=True)


# ---------------------------------------------------------------- Elman RNN

def _act_np(nonlinearity):
    return np.tanh if nonlinearity == "tanh" else (lambda a, out: np.maximum(a, 0.0, out=out))


def _rnn_forward_np(xw, h0, w, nonlinearity):
    L, N, H = xw.shape
    Y = np.empty((L, N, H), xw.dtype)
    wT = np.ascontiguousarray(w.T)
    act = _act_np(nonlinearity)
    for t in range(L):
        h = Y[t]
        np.matmul(h0 if t == 0 else Y[t - 1], wT, out=h)
        h += xw[t]
        act(h, out=h)
    return Y


def _rnn_scan(xw, h0, w, *, nonlinearity):
    if _fast(xw, h0, w):
        return _rnn_forward_np(xw, h0, w, nonlinearity)
    return _time_stack(NUMPY, _rnn_steps(NUMPY, xw, h0, w, nonlinearity))


def _rnn_scan_saving(xw, h0, w, *, nonlinearity):
    if _fast(xw, h0, w) and xw.shape[0]:
        Y = _rnn_forward_np(xw, h0, w, nonlinearity)
        return Y, _Saved(Y)
    return _rnn_scan(xw, h0, w, nonlinearity=nonlinearity), None


def _rnn_backward_np(g, xw, h0, w, Y, *, nonlinearity):
    """(dxw, dh0, dw) from the saved outputs."""
    L = Y.shape[0]
    if nonlinearity == "tanh":
        D = Y * Y
        np.subtract(1.0, D, out=D)
    else:
        D = (Y > 0).astype(Y.dtype)
    DP = np.empty_like(Y)                   # d(pre-activations)
    for t in range(L - 1, -1, -1):
        dp = DP[t]
        if t == L - 1:
            np.multiply(g[t], D[t], out=dp)
        else:
            np.matmul(DP[t + 1], w, out=dp)
            dp += g[t]
            dp *= D[t]
    H = Y.shape[-1]
    dw = DP[0].T @ h0
    if L > 1:
        dw += DP[1:].reshape(-1, H).T @ Y[:-1].reshape(-1, H)
    return DP, DP[0] @ w, dw


def _rnn_act(m, pre, nonlinearity):
    return m.tanh(pre) if nonlinearity == "tanh" else m.relu(pre)


def _rnn_steps(m, xw, h0, w, nonlinearity):
    """The recurrence with `m`'s ops: every step's h."""
    wT = m.permute(w, axes=(1, 0))
    hs = []
    h = h0
    for t in range(xw.shape[0]):
        h = _rnn_act(m, m.getitem(xw, idx=(t,)) + m.matmul(h, wT), nonlinearity)
        hs.append(h)
    return hs


def _rnn_local(h, nonlinearity):
    """d act / d pre-activation, from the output."""
    return 1.0 - h * h if nonlinearity == "tanh" else h > 0


def _rnn_vjp(m, g, xw, h0, w, *, which, nonlinearity):
    hs = _rnn_steps(m, xw, h0, w, nonlinearity)
    L = len(hs)
    dps = [None] * L
    carry = dw = None
    for t in range(L - 1, -1, -1):
        a = m.getitem(g, idx=(t,))
        if carry is not None:
            a = a + carry
        dp = a * _rnn_local(hs[t], nonlinearity)
        dps[t] = dp
        carry = m.matmul(dp, w)
        if which == 2:
            p = m.matmul(m.permute(dp, axes=(1, 0)), h0 if t == 0 else hs[t - 1])
            dw = p if dw is None else dw + p
    if which == 0:
        return m.cat(*[m.reshape(d, shape=(1,) + d.shape) for d in dps], axis=0)
    return (None, carry, dw)[which]


def _rnn_jvp(which, nonlinearity):
    def rule(m, t, out, xw, h0, w):
        lead = t.ndim - (xw, h0, w)[which].ndim
        wT = m.permute(w, axes=(1, 0))
        dwT = (m.permute(t, axes=tuple(range(lead)) + (lead + 1, lead)) if which == 2
               else None)
        dh = t if which == 1 else None
        outs = []
        hp = h0
        for s, h in enumerate(_rnn_steps(m, xw, h0, w, nonlinearity)):
            dp = m.getitem(t, idx=(Ellipsis, s, slice(None), slice(None))) \
                if which == 0 else None
            if dh is not None:
                dp = _add(dp, m.matmul(dh, wT))
            if dwT is not None:
                dp = _add(dp, m.matmul(hp, dwT))
            dh = dp * _rnn_local(h, nonlinearity)
            outs.append(dh)
            hp = h
        return _time_stack(m, outs)
    return rule


def _rnn_row(nonlinearity: str, **flags):
    def bind(f):
        return functools.partial(f, nonlinearity=nonlinearity)
    return defop(
        f"rnn_{nonlinearity}_scan", bind(_rnn_scan),
        _rules(3, bind(_rnn_backward_np), bind(_rnn_vjp)),
        tuple(_rnn_jvp(k, nonlinearity) for k in range(3)),
        saving=bind(_rnn_scan_saving), fresh=True, tuned=True, fresh_vjps=True, **flags)


rnn_tanh_scan = _rnn_row("tanh")
rnn_relu_scan = _rnn_row("relu", smooth=False)  # relu's kink, as the relu row
