"""Cumulative ops (cumsum, cumprod, logcumsumexp) and the integer orderings behind sorting.

`axis` is counted from the end, so a tangent with leading batch dimensions
goes through the same forward. Sorting, top-k, k-th value, median, mode and
cummax/cummin are an integer index from a non-differentiable op here, then
`gather` (`ops/indexing.py`): their gradients go to the selected positions.
"""

from __future__ import annotations

import numpy as np

from ..devices import namespace_of as _ns
from ..primitive import defop
from . import _stl_sort
from .reductions import _acc

# PyTorch's CPU scans accumulate in a wider type and round each running value once:
# half in float32, float32 in float64, complex64 in complex128 (a float32 cumprod of
# 1 - betas in NumPy's own precision drifts an ulp or more from torch's alphas_cumprod)
_WIDER = {np.dtype(np.float16): np.float32, np.dtype(np.float32): np.float64,
          np.dtype(np.complex64): np.complex128}


def _scan(fn, x, axis):
    """fn(x, axis) (a NumPy scan) in PyTorch's accumulation type, cast back to x's dtype."""
    wide = _WIDER.get(x.dtype)
    if wide is None:
        return fn(x, axis, _acc(x))
    return fn(x, axis, wide).astype(x.dtype)


def _cumsum(x, *, axis, reverse=False):
    if reverse:
        return np.flip(_scan(lambda v, a, d: np.cumsum(v, axis=a, dtype=d), np.flip(x, axis),
                             axis), axis)
    return _scan(lambda v, a, d: np.cumsum(v, axis=a, dtype=d), x, axis)  # int32 stays


cumsum = defop(
    "cumsum", _cumsum,
    (lambda m, g, out, x, *, axis, reverse=False: m.cumsum(g, axis=axis, reverse=not reverse),),
    (lambda m, t, out, x, *, axis, reverse=False: m.cumsum(t, axis=axis, reverse=reverse),),
    reads=(), fresh=True)


def _zero_masks(m, x, axis):
    """(before, first, x_safe, x_first_as_one) along `axis`: 1 before the first zero,
    1 at the first zero, x with its zeros read as 1, x with its first zero read as 1."""
    z = m.cast(x == 0, dtype=x.dtype)
    seen = m.cumsum(z, axis=axis)
    before = m.cast(seen == 0, dtype=x.dtype)
    first = z * m.cast(seen == 1, dtype=x.dtype)
    return before, first, x * (1.0 - z) + z, x * (1.0 - first) + first


def _cumprod_vjp(m, g, out, x, *, axis):
    # d out_k / d x_i = prod_{j <= k, j != i} x_j, never divided by a zero: out_k / x_i
    # before the first zero z; the product with x_z read as 1 at z; after z, x_z times that
    # same derivative of the lifted product (zero in value, but its derivative in x_z is
    # right, so second derivatives are too)
    before, first, safe, lifted = _zero_masks(m, x, axis)
    lifted_out = m.cumprod(lifted, axis=axis)
    r = before * m.cumsum(g * out, axis=axis, reverse=True) / safe
    r = r + first * m.cumsum(g * lifted_out, axis=axis, reverse=True)
    before2, first2, safe2, lifted2 = _zero_masks(m, lifted, axis)
    h = before2 * m.cumsum(g * lifted_out, axis=axis, reverse=True) / safe2
    h = h + first2 * m.cumsum(g * m.cumprod(lifted2, axis=axis), axis=axis, reverse=True)
    xz = m.sum(x * first, axis=axis, keepdims=True)
    return r + (1.0 - before - first) * xz * h


def _cumprod_jvp(m, t, out, x, *, axis):
    before, first, safe, lifted = _zero_masks(m, x, axis)
    lifted_out = m.cumprod(lifted, axis=axis)
    r = out * m.cumsum(t * before / safe, axis=axis)
    r = r + lifted_out * m.cumsum(t * first, axis=axis)
    before2, first2, safe2, lifted2 = _zero_masks(m, lifted, axis)
    ta = t * (1.0 - before - first)
    j = lifted_out * m.cumsum(ta * before2 / safe2, axis=axis)
    j = j + m.cumprod(lifted2, axis=axis) * m.cumsum(ta * first2, axis=axis)
    return r + m.sum(x * first, axis=axis, keepdims=True) * j


cumprod = defop(
    "cumprod", lambda x, *, axis: _scan(lambda v, a, d: np.cumprod(v, axis=a, dtype=d), x, axis),
    (_cumprod_vjp,), (_cumprod_jvp,), save_out=True, fresh=True)


def _log_add_exp(x, acc):
    """log(exp(x) + exp(acc)) for complex arrays, as PyTorch's scan step: shifted by the
    larger real part (log1p(exp(lo - hi)) + hi), NaN if either holds one, and two equal
    infinite real parts added directly (their difference would be NaN)."""
    x_lower = x.real < acc.real
    lo, hi = np.where(x_lower, x, acc), np.where(x_lower, acc, x)
    with np.errstate(all="ignore"):
        r = np.log1p(np.exp(lo - hi)) + hi
        both_inf = ~np.isfinite(lo.real) & (lo.real == hi.real)
        if both_inf.any():
            r = np.where(both_inf, np.where(lo.real < 0, lo, np.log(np.exp(lo) + np.exp(hi))), r)
    return np.where(np.isnan(x) | np.isnan(acc), complex(np.nan, np.nan), r)


def _complex_logcumsumexp(x, axis):
    """A step at a time along `axis` (PyTorch's scan, accumulated in complex128), so large
    magnitudes do not overflow as exp-then-cumsum would."""
    xs = np.moveaxis(x.astype(np.complex128), axis, 0)
    out = np.empty_like(xs)
    acc = np.full(xs.shape[1:], complex(-np.inf, 0.0))
    for k in range(xs.shape[0]):
        acc = out[k] = _log_add_exp(xs[k], acc)
    return np.moveaxis(out, 0, axis).astype(x.dtype)


def _logcumsumexp(x, *, axis):
    if x.dtype.kind == "c":
        return _complex_logcumsumexp(x, axis)
    wide = _WIDER.get(x.dtype)
    if wide is None:
        return np.logaddexp.accumulate(x, axis=axis)
    return np.logaddexp.accumulate(x.astype(wide), axis=axis).astype(x.dtype)


def _reverse_logcumsumexp(m, x, axis):
    """logcumsumexp from the end of `axis` back to each position."""
    flip = (Ellipsis, slice(None, None, -1)) + (slice(None),) * (-axis - 1)
    return m.getitem(m.logcumsumexp(m.getitem(x, idx=flip), axis=axis), idx=flip)


def _through_logs(m, v, before, after, scan):
    """exp(scan(log v + before) + after): sums of v times exponentials, taken in log space so
    no exponential overflows (a real v split into its positive and negative parts; a
    complex one needs no split)."""
    if v.dtype.kind == "c":
        return m.exp(scan(m.log(v) + before) + after)
    lowest = np.finfo(np.dtype(v.dtype)).min
    log_abs = m.log(m.abs(v))
    pos, neg = (m.exp(scan(m.where(side, log_abs, lowest) + before) + after)
                for side in (v > 0, v < 0))
    return pos - neg


def _logcumsumexp_vjp(m, g, out, x, *, axis):
    """sum_{k >= i} g_k exp(x_i - out_k), PyTorch's formula: infinite inputs give its values
    (NaN only where x_i is infinite) and no term overflows. Rules here take no conjugates
    (the engine does)."""
    if x.shape[axis] == 0:
        return g
    return _through_logs(m, g, -out, x, lambda v: _reverse_logcumsumexp(m, v, axis))


def _logcumsumexp_jvp(m, t, out, x, *, axis):
    """sum_{j <= k} t_j exp(x_j - out_k), in log space: an early prefix far below the total
    does not overflow (exp(out_n - out_k) would). 0 where the prefix is all -inf (out_k =
    -inf stays so under any finite tangent; PyTorch's value there, not inf - inf)."""
    if x.shape[axis] == 0:
        return t
    r = _through_logs(m, t, x, -out, lambda v: m.logcumsumexp(v, axis=axis))
    if out.dtype.kind == "c":
        return r
    return m.where(out == -np.inf, 0.0, r)


logcumsumexp = defop(
    "logcumsumexp", _logcumsumexp, (_logcumsumexp_vjp,), (_logcumsumexp_jvp,),
    save_out=True, fresh=True)


# ----------------------------------------------------------------- integer orderings

def _argsort(x, *, axis, descending=False):
    """Stable: equal elements keep their order; NaN sorts above everything (as torch)."""
    if not descending:
        return np.argsort(x, axis=axis, kind="stable")
    # reversed, sorted stably, reversed back: descending with ties in their original order
    n = x.shape[axis]
    order = np.argsort(np.flip(x, axis), axis=axis, kind="stable")
    return np.flip(n - 1 - order, axis)


def _positions(x, axis):
    shape = [1] * x.ndim
    shape[axis] = x.shape[axis]
    return _ns(x).arange(x.shape[axis]).reshape(shape)


def _cum_extreme_index(x, *, axis, largest):
    """Index of the running max (min); on ties the latest, and a NaN sticks (as torch)."""
    acc = (np.maximum if largest else np.minimum).accumulate(x, axis=axis)
    hit = x == acc
    if x.dtype.kind in "fc":
        hit |= np.isnan(x)
    pos = np.where(hit, _positions(x, axis), 0)
    return np.maximum.accumulate(pos, axis=axis)


def _median_index(x, *, axis):
    """Index of the lower median along `axis` (kept as size 1); the first NaN if any."""
    n = x.shape[axis]
    order = np.argsort(x, axis=axis, kind="stable")
    k = (n - 1) // 2
    idx = order[(slice(None),) * (axis % x.ndim) + (slice(k, k + 1),)]
    if x.dtype.kind in "fc":
        nan = np.isnan(x)
        has = np.any(nan, axis=axis, keepdims=True)
        idx = np.where(has, np.argmax(nan, axis=axis, keepdims=True), idx)
    return idx


_TIE_REPLAY_LIMIT = 1 << 15
"""At most this many entries (tied rows times their length) are replayed in Python for
topk's and kthvalue's choice among ties (about 40 ms at worst: a 60-fold slowdown of a
large integer topk is too much to pay for the order of equal values); past it, tied
entries keep their original order, as a stable sort's."""


def _quick_select(row, k: int) -> int:
    """PyTorch's CPU quick_select_template (median-of-three Hoare partitions, NaN largest)
    on one row: the index of its k-th (0-based) smallest entry, which among equal entries
    is the one PyTorch's kthvalue reports."""
    v, ix = list(row), list(range(len(row)))

    def gt(a, b):
        return (a != a and b == b) or a > b

    def swap(i, j):
        v[i], v[j] = v[j], v[i]
        ix[i], ix[j] = ix[j], ix[i]

    lo, hi = 0, len(v) - 1
    while hi > lo:
        if hi == lo + 1:
            if gt(v[lo], v[hi]):
                swap(lo, hi)
            break
        swap(lo + (hi - lo) // 2, lo + 1)
        if gt(v[lo + 1], v[hi]):
            swap(lo + 1, hi)
        if gt(v[lo], v[hi]):
            swap(lo, hi)
        if gt(v[lo + 1], v[lo]):
            swap(lo + 1, lo)
        i, j, piv = lo + 1, hi, v[lo]
        while True:
            i += 1
            while gt(piv, v[i]):
                i += 1
            j -= 1
            while gt(v[j], piv):
                j -= 1
            if j < i:
                break
            swap(i, j)
        swap(lo, j)
        if j <= k:
            lo = i
        if j >= k:
            hi = j - 1
    return ix[k]


def _kth_index(x, *, axis, k):
    """Index of the k-th (1-based) smallest entry along `axis` (kept as size 1). Where that
    value is unique in its row any sort finds it; where it is tied, PyTorch's choice among
    the equal entries, from its quickselect (run here on those rows only)."""
    xs = np.moveaxis(x, axis, -1)
    idx = np.argsort(xs, axis=-1, kind="stable")[..., k - 1:k]
    val = np.take_along_axis(xs, idx, axis=-1)
    tied = np.sum(xs == val, axis=-1) > 1
    if xs.dtype.kind in "fc":
        nan = np.isnan(xs)
        tied |= np.isnan(val[..., 0]) & (np.sum(nan, axis=-1) > 1)
    tied = tied.reshape(-1)
    if tied.any() and int(tied.sum()) * xs.shape[-1] <= _TIE_REPLAY_LIMIT:
        rows, flat = xs.reshape(-1, xs.shape[-1]), idx.reshape(-1).copy()
        for r in np.flatnonzero(tied):
            flat[r] = _quick_select(rows[r].tolist(), k - 1)
        idx = flat.reshape(idx.shape)
    return np.moveaxis(idx, -1, axis)


_UNSORTED_REPLAY_LIMIT = _TIE_REPLAY_LIMIT
"""Most elements `topk(sorted=False)` replays PyTorch's selection on (the ties' bound, about
40 ms); beyond, the sorted order."""


def _topk_index(x, *, axis, k, largest, sorted=True):  # noqa: A002 - PyTorch's name
    """Indices of the k largest (smallest) entries along `axis`, in order; among equal
    entries in PyTorch's order (its libstdc++ selection, replayed on the rows where a tie
    within the first k + 1 makes the order ambiguous). Not `sorted`: PyTorch's CPU order,
    which is sorted where k * 64 <= n (a partial sort) and otherwise the order its
    nth_element leaves (replayed, up to `_UNSORTED_REPLAY_LIMIT` elements)."""
    xs = np.moveaxis(x, axis, -1)
    n = xs.shape[-1]
    if not sorted and 0 < k and k * 64 > n and xs.size <= _UNSORTED_REPLAY_LIMIT \
            and isinstance(xs, np.ndarray):
        rows = xs.reshape(-1, n)
        flat = np.array([_stl_sort.topk_row(r.tolist(), k, largest, sorted_=False)
                         for r in rows], dtype=np.int64).reshape(xs.shape[:-1] + (k,))
        return np.moveaxis(flat, -1, axis)
    order = _argsort(xs, axis=-1, descending=largest)
    idx = np.ascontiguousarray(order[..., :k])
    if 0 < k and n > 1:
        head = np.take_along_axis(xs, order[..., :min(k + 1, n)], axis=-1)
        same = head[..., 1:] == head[..., :-1]
        if xs.dtype.kind in "fc":
            same |= np.isnan(head[..., 1:]) & np.isnan(head[..., :-1])
        tied = np.any(same, axis=-1).reshape(-1)
        if tied.any() and int(tied.sum()) * n <= _TIE_REPLAY_LIMIT:
            rows, flat = xs.reshape(-1, n), idx.reshape(-1, k)
            for r in np.flatnonzero(tied):
                flat[r] = _stl_sort.topk_row(rows[r].tolist(), k, largest)
            idx = flat.reshape(idx.shape)
    return np.moveaxis(idx, -1, axis)


def _mode_index(x, *, axis):
    """Index of the most frequent value along `axis` (the smallest such value, at its last
    occurrence), kept as size 1."""
    xs = np.moveaxis(x, axis, -1)
    n = xs.shape[-1]
    order = np.argsort(xs, axis=-1, kind="stable")
    s = np.take_along_axis(xs, order, axis=-1)
    pos = _ns(x).arange(n)
    new = np.ones_like(s, dtype=bool)
    new[..., 1:] = s[..., 1:] != s[..., :-1]
    start = np.maximum.accumulate(np.where(new, pos, 0), axis=-1)
    last = np.ones_like(s, dtype=bool)
    last[..., :-1] = new[..., 1:]
    end = np.flip(np.minimum.accumulate(np.flip(np.where(last, pos, n), -1), axis=-1), -1)
    best = np.argmax(end - start, axis=-1)[..., None]
    at = np.take_along_axis(end, best, axis=-1)
    idx = np.take_along_axis(order, at, axis=-1)
    if n > 16 and idx.size * n <= _TIE_REPLAY_LIMIT and xs.__class__ is np.ndarray:
        # past 16 entries PyTorch's std::sort is not stable: its choice among the mode's
        # occurrences replayed (rows with a NaN, where its comparison is no order, kept)
        rows, flat = xs.reshape(-1, n), idx.reshape(-1)
        for r in range(rows.shape[0]):
            if xs.dtype.kind not in "fc" or not np.isnan(rows[r]).any():
                flat[r] = _stl_sort.mode_row(rows[r].tolist())
        idx = flat.reshape(idx.shape)
    return np.moveaxis(idx, -1, axis)


argsort = defop("argsort", lambda x, *, axis, descending=False: _argsort(
    x, axis=axis, descending=descending).astype(np.int64))
cum_extreme_index = defop("cum_extreme_index", lambda x, *, axis, largest: _cum_extreme_index(
    x, axis=axis, largest=largest).astype(np.int64))
median_index = defop("median_index", lambda x, *, axis: _median_index(
    x, axis=axis).astype(np.int64))
topk_index = defop("topk_index", lambda x, *, axis, k, largest, sorted=True: _topk_index(  # noqa: A006
    x, axis=axis, k=k, largest=largest, sorted=sorted).astype(np.int64))
kth_index = defop("kth_index", lambda x, *, axis, k: _kth_index(
    x, axis=axis, k=k).astype(np.int64))
mode_index = defop("mode_index", lambda x, *, axis: _mode_index(x, axis=axis).astype(np.int64))
