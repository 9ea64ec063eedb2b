"""Scaled dot-product attention as one node, with a NumPy fast path (a fused file: its
rules may ask `m is NUMPY`).

`attention(q, k, v, scale=s, causal=c)` over (..., L, E) queries, (..., S, E) keys and
(..., S, Ev) values of one batch shape computes

    w = softmax(s * q @ k^T + mask),   out = w @ v

where the mask puts -inf above the diagonal when `causal` (query i sees keys 0..i,
PyTorch's `is_causal`; every row sees key 0, so none is empty when S >= 1). The hidden
scores are set to -inf, not added to: a NaN or inf in a key a query may not see then
leaves that query's row as it is (inf + -inf would be NaN), as in PyTorch.

The composition of ops makes per-row reductions over rows of S entries (max, sum,
the softmax's vjp), which NumPy runs slowly for short rows. The fast forward
shifts each row by one of its own scores instead of its maximum (see
`_weights_np`) and sums rows by a product with ones; it saves the weights w. The
fast backward computes all three gradients on the first rule's call:

    dv = w^T g,  dw = g v^T,  ds = w * (dw - rowsum(dw * w)),  dq = s ds k,  dk = s ds^T q

With the compiled kernels, float32's softmax and its vjp between the products are
one loop each (`kernels.attention`). The generic path (create_graph, forward mode,
other devices) records the same maths with ops, so it differentiates again.
"""

from __future__ import annotations

import functools

import numpy as np

from .. import kernels
from .. import threads as _threads
from ..devices import const_like
from ..kernels import attention as _katt
from ..primitive import NUMPY, defop
from .fused_rnn import _rules, _Saved


@functools.lru_cache(maxsize=32)
def _visible(L: int, S: int) -> np.ndarray:
    """(L, S) bools: True where query i sees key j (j <= i)."""
    table = np.tri(L, S, dtype=bool)
    table.flags.writeable = False
    return table


@functools.lru_cache(maxsize=32)
def _hidden(L: int, S: int) -> np.ndarray:
    """(L, S) bools: True where query i may not see key j (j > i)."""
    table = ~_visible(L, S)
    table.flags.writeable = False
    return table


@functools.lru_cache(maxsize=32)
def _arange(n: int) -> np.ndarray:
    r = np.arange(n)
    r.flags.writeable = False
    return r


@functools.lru_cache(maxsize=32)
def _last(L: int, S: int) -> np.ndarray:
    """Per query, the last key it sees: min(i, S - 1)."""
    r = np.minimum(np.arange(L), S - 1)
    r.flags.writeable = False
    return r


@functools.lru_cache(maxsize=32)
def _ones(n: int, dtype: np.dtype) -> np.ndarray:
    one = np.ones(n, dtype=dtype)
    one.flags.writeable = False
    return one


def _fast(*arrays) -> bool:
    """Host float32/float64 arrays of one dtype: the NumPy fast path applies."""
    dt = arrays[0].dtype
    return dt in (np.float32, np.float64) and all(
        a.__class__ is np.ndarray and a.dtype == dt for a in arrays)


def _swap(a):
    return a.swapaxes(-1, -2)


def _weights_np(q, k, scale, causal):
    """softmax(scale * q k^T + mask) on arrays.

    Each row is shifted by one of its own visible scores (the diagonal's, or the last
    key's for queries past the keys) rather than by its maximum: a maximum over short
    rows is the slowest pass NumPy makes here. The shifted row's sum is then at least 1
    (that entry is exp(0)); only if another score exceeds it so far that the sum
    overflows does the row's maximum take over. A row's weights read that row's scores
    only, so a query's result never depends on the keys it may not see (bit for bit)."""
    s = np.matmul(q, _swap(k))
    L, S = s.shape[-2:]
    if s.dtype == np.float32 and kernels.enabled(s.size) and L * S:  # compiled: in place
        K = _katt
        flat = s.reshape(-1, L * S)
        K.softmax_rows_(flat, flat.view(np.int32), L, S, s.dtype.type(scale), bool(causal),
                        np.empty(L * S, s.dtype), np.empty(L * S, s.dtype),
                        np.empty(L * S, np.int32))
        return s
    s *= scale
    if causal:
        np.copyto(s, -np.inf, where=_hidden(L, S))
    ref = np.diagonal(s, axis1=-2, axis2=-1) if L <= S else s[..., _arange(L), _last(L, S)]
    one = _ones(S, s.dtype)
    with np.errstate(over="ignore"):  # an overflow is caught below
        e = np.exp(s - ref[..., None])
        total = e @ one
    if not np.maximum.reduce(total, axis=None) < np.inf:  # also catches nan
        e = np.exp(s - np.maximum.reduce(s, axis=-1, keepdims=True))
        total = e @ one
    e /= total[..., None]
    return e


def _pieces(q, k, v, g=None) -> list | None:
    """The split of the leading axis over threads for the compiled float32 path: q, k, v
    (and g) of one batch shape and at least one batch axis; None where it does not
    apply, a single piece where splitting does not pay. Each piece runs the same loops
    and products on its own matrices, so the results do not depend on the split."""
    if q.dtype != np.float32 or q.ndim < 3:
        return None
    lead = q.shape[:-2]
    if k.shape[:-2] != lead or v.shape[:-2] != lead or (g is not None and g.shape[:-2] != lead):
        return None
    L, S, E = q.shape[-2], k.shape[-2], q.shape[-1]
    if not (L and S and E and v.shape[-1]) or not kernels.enabled(q.size // E * S):
        return None  # as `_weights_np`'s and `_fast_backward`'s test of the scores' size
    n = q.shape[0]
    return _threads.chunks(n, 2.0 * (q.size // q.shape[-1]) * S * (E + v.shape[-1]))


def _attention_saving(q, k, v, *, scale, causal):
    if not _fast(q, k, v):
        return _attention(q, k, v, scale=scale, causal=causal), None
    pieces = _pieces(q, k, v)
    if pieces is not None:
        return _split_forward(q, k, v, scale, causal, pieces)
    w = _weights_np(q, k, scale, causal)
    return _product(w, v, q), _Saved(w)


def _contiguous(a):
    """`a` itself where C-contiguous, else an empty C-contiguous array of its shape."""
    return a if a.flags.c_contiguous else np.empty(a.shape, a.dtype)


def _split_forward(q, k, v, scale, causal, pieces):
    """The compiled float32 forward, the leading axis split over threads where it pays.
    Heads split from (B, T, H * E) rows arrive as strided views, each head's matrix
    spread over T rows of the larger array: a product over many such small matrices
    misses the cache on nearly every row when they are not already there (as in a
    training step), so each piece first copies its q, k, v into contiguous arrays (one
    pass the prefetcher follows), which the backward reuses (measured on (64, 4, 16, 16)
    views of a (64, 16, 192) array, caches cold: forward 551 -> 363 us with the copies,
    backward 591 -> 360 us; in the names transformer's jitted step, where they are
    partly warm, 0.1-0.45 ms of about 18 per step, one thread)."""
    L, S = q.shape[-2], k.shape[-2]
    w = np.empty(q.shape[:-1] + (S,), q.dtype)
    out = np.empty_like(q, shape=q.shape[:-1] + v.shape[-1:])
    sc = q.dtype.type(scale)
    qc, kc, vc = _contiguous(q), _contiguous(k), _contiguous(v)

    def piece(a, b):
        for c, x in ((qc, q), (kc, k), (vc, v)):
            if c is not x:
                np.copyto(c[a:b], x[a:b])
        s = np.matmul(qc[a:b], _swap(kc[a:b]), out=w[a:b])
        flat = s.reshape(-1, L * S)
        _katt.softmax_rows_(flat, flat.view(np.int32), L, S, sc, bool(causal),
                            np.empty(L * S, s.dtype), np.empty(L * S, s.dtype),
                            np.empty(L * S, np.int32))
        np.matmul(s, vc[a:b], out=out[a:b])

    _threads.run(piece, pieces)
    return out, _Saved(w, qc, kc, vc)


def _product(a, b, like):
    """a @ b in an array whose axes lie in memory in the order of `like`'s (as PyTorch's
    kernels lay out results): heads split from (B, T, H * d) stay in that order, so
    merging them back after a transpose is a view rather than a copy."""
    shape = np.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + (a.shape[-2], b.shape[-1])
    return np.matmul(a, b, out=np.empty_like(like, shape=shape))


def _attention(q, k, v, *, scale, causal):
    if _fast(q, k, v):
        return _product(_weights_np(q, k, scale, causal), v, q)
    return NUMPY.matmul(_weights(NUMPY, q, k, scale, causal), v)


def _fast_backward(g, q, k, v, w, qc=None, kc=None, vc=None, *, scale, causal):
    """All three gradients; qc, kc, vc: `_split_forward`'s contiguous q, k, v."""
    if qc is not None and g.dtype == w.dtype:
        pieces = _pieces(qc, kc, vc, g)
        if pieces is not None:
            return _split_backward(g, q, k, v, w, qc, kc, vc, scale, pieces)
    dv = _product(_swap(w), g, v)
    ds = np.matmul(g, _swap(v))
    S = w.shape[-1]
    if (ds.dtype == np.float32 and w.dtype == ds.dtype and kernels.enabled(ds.size) and S
            and w.flags.c_contiguous and ds.shape == w.shape):
        K = _katt
        K.softmax_rows_vjp_(ds.reshape(-1, S), w.reshape(-1, S), ds.dtype.type(scale))
    else:
        ds -= ((ds * w) @ _ones(S, w.dtype))[..., None]
        ds *= w
        ds *= scale
    return _product(ds, k, q), _product(_swap(ds), q, k), dv


def _split_backward(g, q, k, v, w, qc, kc, vc, scale, pieces):
    """The compiled float32 backward, the leading axis split over threads where it pays,
    on the forward's contiguous q, k, v (`qc, kc, vc`); the gradients are laid out as
    q, k and v are."""
    S = w.shape[-1]
    dq = np.empty_like(q, shape=q.shape)
    dk = np.empty_like(k, shape=k.shape)
    dv = np.empty_like(v, shape=v.shape)
    ds = np.empty(w.shape, w.dtype)
    sc = w.dtype.type(scale)

    def piece(a, b):
        np.matmul(_swap(w[a:b]), g[a:b], out=dv[a:b])
        d = np.matmul(g[a:b], _swap(vc[a:b]), out=ds[a:b])
        _katt.softmax_rows_vjp_(d.reshape(-1, S), w[a:b].reshape(-1, S), sc)
        np.matmul(d, kc[a:b], out=dq[a:b])
        np.matmul(_swap(d), qc[a:b], out=dk[a:b])

    _threads.run(piece, pieces)
    return dq, dk, dv


# ---------------------------------------------------------------- generic rules (ops)

def _swap_axes(nd: int) -> tuple:
    return tuple(range(nd - 2)) + (nd - 1, nd - 2)


def _t(m, a):
    return m.permute(a, axes=_swap_axes(a.ndim))


def _weights(m, q, k, scale, causal):
    s = m.matmul(q, _t(m, k)) * scale
    if causal:
        s = m.where(const_like(_visible(q.shape[-2], k.shape[-2]), q), s, -np.inf)
    return m.softmax(s, axis=-1)


def _generic_vjp(m, g, q, k, v, *, scale, causal, which):
    w = _weights(m, q, k, scale, causal)
    if which == 2:
        return m.matmul(_t(m, w), g)
    dw = m.matmul(g, _t(m, v))
    ds = w * (dw - m.sum(dw * w, axis=-1, keepdims=True)) * scale
    return m.matmul(ds, k) if which == 0 else m.matmul(_t(m, ds), q)


def _jvp(which):
    """Input `which`'s jvp: batchable (matrix products broadcast a tangent's leading
    dimensions; the row sums count axes from the end)."""
    def rule(m, t, out, q, k, v, *, scale, causal):
        w = _weights(m, q, k, scale, causal)
        if which == 2:
            return m.matmul(w, t)
        ds = m.matmul(t, _t(m, k)) if which == 0 else m.matmul(q, _t(m, t))
        ds = ds * scale
        return m.matmul(w * (ds - m.sum(ds * w, axis=-1, keepdims=True)), v)
    return rule


attention = defop(
    "attention", _attention,
    _rules(3, _fast_backward, _generic_vjp), tuple(_jvp(i) for i in range(3)),
    saving=_attention_saving, tuned=True, fresh=True, fresh_vjps=True)
