"""Ops with no gradient whose results are counts, positions, memberships or integer
arithmetic: gcd/lcm, frexp's exponent, searchsorted, isin and the histogram
counts; and nextafter (one ulp away: x's gradient passes through, as PyTorch's).

They are rows of the table (not NumPy calls in the public functions) so that
`rg.jit` traces them and replays them on each call's values, and `rg.func.vmap`
runs them per batch element. Each forward follows PyTorch's CPU arithmetic where
it decides a result (the histogram's bin of an element is computed in the input's
dtype as PyTorch computes it).
"""

from __future__ import annotations

import numpy as np

from ..devices import namespace_of as _ns
from ..primitive import defop, elementwise
from .elementwise import zero_grad

gcd = defop("gcd", np.gcd, fresh=True)


def _lcm(a, b):
    """|a / gcd(a, b) * b| as PyTorch computes it (the product wraps around before the
    absolute value is taken), 0 where gcd is 0."""
    g = np.gcd(a, b)
    zero = g == 0
    with np.errstate(over="ignore"):
        return np.abs(np.where(zero, 0, a // np.where(zero, 1, g) * b))


lcm = defop("lcm", _lcm, fresh=True)
# nextafter moves x by one ulp: PyTorch passes the gradient to x unchanged and gives y zeros.
nextafter = elementwise("nextafter", np.nextafter, lambda m, g, out, x, y: g, zero_grad,
                        reads=(), fresh=True)
frexp_exponent = defop("frexp_exponent", lambda x: np.frexp(x)[1].astype(np.int32),
                       fresh=True)


def _searchsorted(seq, values, *, right=False, int32=False):
    """Insertion positions of `values` in the sorted last dimension of `seq` (1-d: one
    sequence for all values; else one per row, leading dimensions equal)."""
    side = "right" if right else "left"
    dt = np.int32 if int32 else np.int64
    if seq.ndim == 1:
        return np.searchsorted(seq, values, side=side).astype(dt)
    out = _ns(values).empty(values.shape, dtype=dt)
    for row in np.ndindex(*seq.shape[:-1]):
        out[row] = np.searchsorted(seq[row], values[row], side=side)
    return out


searchsorted = defop("searchsorted", _searchsorted, fresh=True)
isin = defop("isin", lambda elements, test, *, invert=False: np.isin(
    elements, test, invert=invert), fresh=True)


def _histc(x, *, bins, lo, hi):
    """PyTorch's histc: `bins` equal bins over [lo, hi] (the data's own range when lo ==
    hi), elements outside (and NaN) left out, the last bin closed on the right."""
    dt = x.dtype
    if lo == hi and x.size:
        lo, hi = float(np.min(x)), float(np.max(x))
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if not (np.isfinite(lo) and np.isfinite(hi)):
        raise RuntimeError(f"histc(): range of [{lo}, {hi}] is not finite")
    if not lo < hi:
        raise RuntimeError(f"histc(): max ({hi}) must be larger than min ({lo})")
    left, right = dt.type(lo), dt.type(hi)
    flat = x.reshape(-1)
    flat = flat[(flat >= left) & (flat <= right)]
    pos = ((flat - left) * dt.type(bins) / (right - left)).astype(np.int64)
    pos[pos == bins] = bins - 1
    return np.bincount(pos, minlength=bins).astype(dt)


histc = defop("histc", _histc, fresh=True)


def _linspace(lo, hi, steps, dt, xp=np):
    """PyTorch's CPU linspace in `dt`: the first half counted up from `lo`, the second
    down from `hi`, each value `lo + step * i` rounded once (a fused multiply-add, done
    here in a wider dtype), so the edges equal PyTorch's bit for bit."""
    lo, hi = dt.type(lo), dt.type(hi)
    step = (hi - lo) / dt.type(steps - 1)
    wide = np.float64 if dt.itemsize < 8 or xp is not np else np.longdouble
    i = xp.arange(steps)
    up = wide(lo) + wide(step) * i.astype(wide)
    down = wide(hi) - wide(step) * (steps - i - 1).astype(wide)
    return np.where(i < steps // 2, up, down).astype(dt)


def _histogram_edges(x, *, bins, lo=None, hi=None):
    """The `bins + 1` edges of equal bins over [lo, hi], or over the data's range (a range
    of one point widened by 1/2 each way, an empty input's range [0, 1])."""
    if lo is None:
        lo, hi = (float(np.min(x)), float(np.max(x))) if x.size else (0.0, 1.0)
    if not (np.isfinite(lo) and np.isfinite(hi)):
        raise RuntimeError(f"histogram(): the range [{lo}, {hi}] is not finite")
    if lo > hi:
        raise RuntimeError(f"histogram(): min should not exceed max, but got min {lo} max {hi}")
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    return _linspace(lo, hi, bins + 1, x.dtype, _ns(x))


histogram_edges = defop("histogram_edges", _histogram_edges, fresh=True)


def _histogram(x, edges, weight, *, density=False, local=False):
    """Counts (or summed weights) of `x` in the bins between `edges`; as PyTorch, an
    element's bin is found by binary search among the edges, or (`local`, for equal
    bins) by interpolation corrected by a search of its neighbours."""
    flat, w = x.reshape(-1), weight.reshape(-1)
    nb = edges.shape[0] - 1
    keep = (flat >= edges[0]) & (flat <= edges[-1])
    flat, w = flat[keep], w[keep]
    hist = _ns(x).zeros(nb, dtype=x.dtype)
    np.add.at(hist, _bin_of(flat, edges, local, x.dtype), w)
    if density:
        hist = hist / hist.sum() / np.diff(edges)
    return hist.astype(x.dtype)


def _bin_of(flat, edges, local, dtype):
    """The bin of each entry of `flat` (all inside [edges[0], edges[-1]])."""
    nb = edges.shape[0] - 1
    left, right = edges[0], edges[-1]
    if local:
        guess = ((flat - left) * dtype.type(nb) / (right - left)).astype(np.int64)
        a, b = np.maximum(guess - 1, 0), np.minimum(guess + 2, nb + 1)
        pos = a - 1  # + the number of edges in [a, b) not above the element (upper bound)
        for j in range(3):
            k = a + j
            pos += (k < b) & (edges[np.minimum(k, nb)] <= flat)
    else:
        pos = np.searchsorted(edges, flat, side="right") - 1
    pos[pos == nb] = nb - 1
    return pos


histogram = defop("histogram", _histogram, fresh=True)


def _histogramdd(x, weight, *edges, density=False, local=False):
    """The joint histogram of the rows of `x` (N, D) over the bins between `edges` (one
    array per column), each column's bin found as in `histogram`."""
    xp = _ns(x)
    keep = xp.ones(x.shape[0], bool)
    for d, e in enumerate(edges):
        keep &= (x[:, d] >= e[0]) & (x[:, d] <= e[-1])
    rows, w = x[keep], weight.reshape(-1)[keep]
    shape = tuple(e.shape[0] - 1 for e in edges)
    pos = tuple(_bin_of(rows[:, d], e, local, x.dtype) for d, e in enumerate(edges))
    hist = xp.zeros(shape, dtype=x.dtype)
    np.add.at(hist, pos, w)
    if density:
        volume = xp.ones((), x.dtype)
        for e in edges:
            volume = volume[..., None] * np.diff(e)
        hist = hist / hist.sum() / volume
    return hist.astype(x.dtype)


histogramdd = defop("histogramdd", _histogramdd, fresh=True)
