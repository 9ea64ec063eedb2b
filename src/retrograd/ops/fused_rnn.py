"""Fused recurrences: `lstm_scan`, a whole LSTM sequence as one node, with NumPy fast paths
(a fused file: its rules may ask `m is NUMPY`).

`lstm_scan(xw, h0, c0, w)` runs, for t = 0 .. L-1 and PyTorch's gate order
(input, forget, cell, output),

    i, f, g, o = sigmoid, sigmoid, tanh, sigmoid of (xw[t] + h @ w.T)
    c = f * c + i * g;   h = o * tanh(c)

and returns every step's h and c: shape (L, 2, N, H). `xw` (L, N, 4H) is the
sequence's input projection with both biases, made outside by one matrix
product (as cuDNN and PyTorch do), `w` (4H, H) the hidden weights.

The fast forward takes its sigmoids as 0.5 tanh(x/2) + 0.5, so each step is
one matrix product and one tanh for all four gates. It saves the gates, gate by
gate, for the backward, which computes every local derivative for all steps at
once on contiguous blocks before a loop of a few small products per step, and
the weight gradient as one product after it. The four inputs' rules run one
after another on one cotangent: the first computes all four gradients and each
rule takes its own from the saved record. The generic path (create_graph,
forward mode, other devices) unrolls the same recurrence with recorded ops, so
it differentiates again.
"""

from __future__ import annotations

import numpy as np

from ..primitive import NUMPY, defop


class _Saved:
    """The fast forward's gates for the backward, and the backward's results (for the
    cotangent `g`) until each input's rule has taken its own."""

    __slots__ = ("Y", "T", "S", "TC", "g", "grads")

    def __init__(self, Y, T, S, TC):
        self.Y, self.T, self.S, self.TC = Y, T, S, TC
        self.g = self.grads = None


def _fast(*arrays) -> bool:
    dt = arrays[0].dtype
    return dt.kind == "f" and all(a.__class__ is np.ndarray and a.dtype == dt for a in arrays)


def _forward_np(xw, h0, c0, w):
    """(Y, T, S, TC): the output (L, 2, N, H); step by step and gate by gate (L, 4, N,
    H), tanh of each gate's pre-activation (halved for the sigmoid gates) and 0.5 T + 0.5
    (the sigmoids); tanh(c) (L, N, H). Each gate of each step is a contiguous block, so
    the backward's per-gate work runs on long rows."""
    L, N, H4 = xw.shape
    H = H4 // 4
    dt = xw.dtype
    scale = np.full(H4, 0.5, dt)
    scale[2 * H:3 * H] = 1.0
    xs = xw * scale                 # the pre-activations, halved for the sigmoid gates
    wT = np.ascontiguousarray((w * scale[:, None]).T)
    T = np.empty((L, 4, N, H), dt)
    S = np.empty((L, 4, N, H), dt)
    Y = np.empty((L, 2, N, H), dt)
    TC = np.empty((L, N, H), dt)
    pre = np.empty((N, H4), dt)
    pre_gates = pre.reshape(N, 4, H).transpose(1, 0, 2)
    ig = np.empty((N, H), dt)
    h, c = h0, c0
    for t in range(L):
        np.matmul(h, wT, out=pre)
        pre += xs[t]
        tt, st = T[t], S[t]
        np.tanh(pre_gates, out=tt)
        np.multiply(tt, 0.5, out=st)
        st += 0.5
        h, cp, c, tc = Y[t, 0], c, Y[t, 1], TC[t]
        np.multiply(st[1], cp, out=c)
        np.multiply(st[0], tt[2], out=ig)
        c += ig
        np.tanh(c, out=tc)
        np.multiply(st[3], tc, out=h)
    return Y, T, S, TC


def _lstm_scan(xw, h0, c0, w):
    if _fast(xw, h0, c0, w):
        return _forward_np(xw, h0, c0, w)[0]
    steps = _steps(NUMPY, xw, h0, c0, w)
    return NUMPY.cat(*[_stack_hc(NUMPY, s[8], s[5]) for s in steps], axis=-4)


def _lstm_scan_saving(xw, h0, c0, w):
    if _fast(xw, h0, c0, w) and xw.shape[0]:
        Y, T, S, TC = _forward_np(xw, h0, c0, w)
        return Y, _Saved(Y, T, S, TC)
    return _lstm_scan(xw, h0, c0, w), None


def _backward_np(g, h0, c0, w, sv):
    """(dxw, dh0, dc0, dw) from the saved gates."""
    Y, T, S, TC = sv.Y, sv.T, sv.S, sv.TC
    L, _, N, H = S.shape
    i, f, o, gg = S[:, 0], S[:, 1], S[:, 3], T[:, 2]
    # every step's local derivatives at once: E[t] * [gc, gc, gc, gh] is d(pre-activations)
    D = S * S
    np.subtract(S, D, out=D)                   # s (1 - s) in the sigmoid slots
    E = np.empty_like(S)
    np.multiply(gg, D[:, 0], out=E[:, 0])                      # i: g i'
    np.multiply(c0, D[0, 1], out=E[0, 1])                      # f: c_prev f'
    np.multiply(Y[:-1, 1], D[1:, 1], out=E[1:, 1])
    dg = gg * gg
    np.subtract(1.0, dg, out=dg)
    np.multiply(i, dg, out=E[:, 2])                            # g: i g'
    np.multiply(TC, D[:, 3], out=E[:, 3])                      # o: tanh(c) o'
    K = TC * TC                                 # d c / d h through h = o tanh(c)
    np.subtract(1.0, K, out=K)
    K *= o
    GA = np.empty((L, N, 4 * H), S.dtype)
    GA4 = GA.reshape(L, N, 4, H)
    ghc = np.empty((2, N, H), S.dtype)
    gh, gc = ghc
    tmp = np.empty((N, H), S.dtype)
    g = g.reshape(L, 2, N, H)
    for t in range(L - 1, -1, -1):
        if t == L - 1:
            ghc[...] = g[t]
        else:
            np.matmul(GA[t + 1], w, out=gh)
            gc *= f[t + 1]                      # the cell state's path through f
            ghc += g[t]
        np.multiply(gh, K[t], out=tmp)
        gc += tmp
        ga = GA4[t]
        np.multiply(E[t, :3], gc, out=ga.transpose(1, 0, 2)[:3])
        np.multiply(E[t, 3], gh, out=ga[:, 3])
    dh0 = GA[0] @ w
    dc0 = gc * f[0]
    dw = GA[0].T @ h0
    if L > 1:
        dw += GA[1:].reshape(-1, 4 * H).T @ Y[:-1, 0].reshape(-1, H)
    return GA, dh0, dc0, dw


# ---------------------------------------------------------------- the generic path

def _steps(m, xw, h0, c0, w):
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


def _vjp_generic(m, g, xw, h0, c0, w, which):
    steps = _steps(m, xw, h0, c0, w)
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


def _rule(which):
    def rule(m, g, out, xw, h0, c0, w):
        if m is NUMPY and out.__class__ is _Saved:
            if out.g is not g or out.grads[which] is None:
                out.g, out.grads = g, list(_backward_np(g, h0, c0, w, out))
            r = out.grads[which]
            out.grads[which] = None  # handed out once: the caller may own it
            return r
        return _vjp_generic(m, g, xw, h0, c0, w, which)
    return rule


def _add(a, b):
    return b if a is None else a if b is None else a + b


def _mul(a, b):
    return None if a is None else a * b


def _jvp(which):
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
        for s, (i, f, g, o, cp, _c, tc, hp, _h) in enumerate(_steps(m, xw, h0, c0, w)):
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
    "lstm_scan", _lstm_scan, tuple(_rule(k) for k in range(4)), tuple(_jvp(k) for k in range(4)),
    saving=_lstm_scan_saving, fresh=True, tuned=True, fresh_vjps=True)
