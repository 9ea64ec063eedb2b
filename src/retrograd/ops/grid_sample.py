"""Sampling an image at arbitrary points: `grid_sample` and its adjoint `grid_sample_t`.

`grid_sample(x, grid)` reads x of shape (*L, N, C, *S) (S: 2 or 3 spatial sizes) at the
points of grid (N, *So, k), coordinates in [-1, 1] (x first, then y, then z), with
PyTorch's interpolation (nearest, bilinear, bicubic) and padding (zeros, border,
reflection): each output is a weighted sum of a few taps of x, 1, 2**k or 4**k of them.
Leading dimensions L of x pass through (tangents with batch dimensions).

The output is linear in x, and its derivative with respect to the grid is the same
kind of weighted sum with the weights differentiated: the attribute `deriv` (one
order per coordinate) selects which derivative of the weights is used, so that
d/dgrid_k of grid_sample(x; deriv) is grid_sample(x; deriv + e_k). With the adjoint
`grid_sample_t` (scatter-add of the weighted values back to the input's pixels) the
two ops close under differentiation: every vjp and jvp, of any order, is one of them
and elementwise ops. The weights are piecewise polynomial in the grid (the padding
folds are piecewise affine), so derivatives past the degree vanish: nearest has
none, bilinear first derivatives, bicubic up to the third.

PyTorch's conventions, which these rules follow: coordinates are unnormalised to
pixels ((g + 1) * size / 2 - 0.5, or (g + 1) * (size - 1) / 2 with align_corners);
border padding clips the coordinate and reflection reflects it (about -0.5 and
size - 0.5, or about the corner pixel centres with align_corners) and clips, a
clipped coordinate having zero slope, borders included; bicubic (Keys' cubic
convolution, A = -0.75) pads each of its 16 taps' positions instead of the
coordinate; taps outside the image read zero. Nearest rounds half to even. A grid
coordinate that is not finite gives NaN (PyTorch's result there differs between 2-D
and 3-D and between modes).
"""

from __future__ import annotations

import itertools

import numpy as np

from ..devices import namespace_of as _ns
from ..primitive import defop

_A = -0.75
_VANISH = {"nearest": 1, "bilinear": 2, "bicubic": 4}  # derivative order past the degree


def _orders(deriv, nd):
    return (0,) * nd if deriv is None else tuple(deriv)


def _bump(deriv, k, nd):
    d = list(_orders(deriv, nd))
    d[k] += 1
    return tuple(d)


def vanishes(mode: str, deriv, nd: int) -> bool:
    """Is this derivative of the weights identically zero?"""
    return any(d >= _VANISH[mode] for d in _orders(deriv, nd))


# ---------------------------------------------------------------- coordinates

def _clip(c, size):
    """Clip to [0, size - 1]; slope 1 strictly inside, 0 on and past the borders."""
    top = size - 1
    inside = (c > 0) & (c < top)
    return np.minimum(np.maximum(c, 0), top), inside


def _reflect(c, size, align):
    """Reflect into the image (about the corner centres with align_corners, else about
    its edges -0.5 and size - 0.5), and the slope, +1 or -1."""
    dt = c.dtype.type
    low, twice = (dt(0), dt(2 * (size - 1))) if align else (dt(-0.5), dt(2 * size))
    if twice <= 0:
        return np.zeros_like(c), np.zeros_like(c, dtype=bool)
    d = c - low
    a = np.abs(d)
    extra = a - np.trunc(a / twice) * twice
    back = twice - extra
    more = extra > back
    return np.where(more, back, extra) + low, more != (d < 0)


def _unnormalise(g, size, align, nd):
    """Pixel coordinate of g in [-1, 1], and its slope. PyTorch's 2-D kernel computes
    (g + 1) * s (- 0.5), its 3-D kernel ((g + 1) * size - 1) / 2: so do we, in the
    grid's dtype, so that floor and rounding fall on the same side."""
    dt = g.dtype.type
    scale = dt((size - 1) / 2) if align else dt(size / 2)
    if nd == 2:
        c = (g + 1) * scale
        if not align:
            c -= dt(0.5)
    elif align:
        c = (g + 1) / 2 * dt(size - 1)
    else:
        c = ((g + 1) * dt(size) - 1) / 2
    return c, scale


def _pad_coordinate(c, size, padding, align):
    """The coordinate after border or reflection padding, and its slope (None: 1)."""
    if padding == "border":
        return _clip(c, size)
    if padding == "reflection":
        c, flipped = _reflect(c, size, align)
        c, inside = _clip(c, size)
        return c, np.where(flipped, -inside.astype(c.dtype), inside.astype(c.dtype))
    return c, None


def _near(x, order):
    """Keys' kernel for |x| <= 1 and its derivatives."""
    a = _A
    if order == 0:
        return ((a + 2) * x - (a + 3)) * x * x + 1
    if order == 1:
        return (3 * (a + 2) * x - 2 * (a + 3)) * x
    if order == 2:
        return 6 * (a + 2) * x - 2 * (a + 3)
    return np.full_like(x, 6 * (a + 2))


def _far(x, order):
    """Keys' kernel for 1 < |x| < 2 and its derivatives."""
    a = _A
    if order == 0:
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    if order == 1:
        return (3 * a * x - 10 * a) * x + 8 * a
    if order == 2:
        return 6 * a * x - 10 * a
    return np.full_like(x, 6 * a)


def _axis_taps(g, size, mode, padding, align, order, nd):
    """Taps along one coordinate: [(pixel index, weight)], each of g's shape, the
    weights differentiated `order` times with respect to g; and the non-finite points."""
    c, scale = _unnormalise(g, size, align, nd)
    bad = ~np.isfinite(c)
    if bad.any():
        c = np.where(bad, 0, c)
    else:
        bad = None
    dt = c.dtype.type
    if mode == "bicubic":
        base = np.floor(c)
        t = c - base
        slope = scale ** order
        sign = (-1) ** order
        ws = [_far(t + 1, order), _near(t, order), sign * _near(1 - t, order),
              sign * _far(2 - t, order)]
        pos = [base + dt(j - 1) for j in range(4)]
        if padding == "border":
            pos = [_clip(p, size)[0] for p in pos]
        elif padding == "reflection":
            pos = [_clip(_reflect(p, size, align)[0], size)[0] for p in pos]
        taps = [(p, w * slope if order else w) for p, w in zip(pos, ws)]
    else:
        c, f = _pad_coordinate(c, size, padding, align)
        if mode == "nearest":
            taps = [(np.rint(c), np.ones_like(c))]
        else:
            base = np.floor(c)
            if order == 0:
                t = c - base
                taps = [(base, 1 - t), (base + 1, t)]
            else:
                s = np.full_like(c, scale) if f is None else f * scale
                taps = [(base, -s), (base + 1, s)]
    out = []
    for p, w in taps:
        valid = (p >= 0) & (p <= size - 1)
        if bad is not None:
            valid &= ~bad
        idx = np.where(valid, p, 0).astype(np.int64)
        out.append((idx, np.where(valid, w, 0)))
    return out, bad


def _taps(grid, sizes, mode, padding, align, deriv):
    """Every tap of the sampling as (flat pixel index, weight), each (N, Po), lazily; and
    the points with a non-finite coordinate (None: none)."""
    nd = grid.shape[-1]
    n = grid.shape[0]
    g = grid.reshape(n, -1, nd)
    per, bad = [], None
    stride = 1
    for k, order in enumerate(deriv):  # k: x (last spatial dimension), y, z
        size = sizes[nd - 1 - k]
        taps, b = _axis_taps(g[..., k], size, mode, padding, align, order, nd)
        per.append([(i * stride, w) for i, w in taps])
        stride *= size
        if b is not None:
            bad = b if bad is None else bad | b
    return _combine(per), bad


def _combine(per):
    for combo in itertools.product(*per):
        idx, w = combo[0]
        for i, v in combo[1:]:
            idx = idx + i
            w = w * v
        yield idx, w


def _compute_dtype(dtype):
    return np.dtype(np.float32) if dtype.itemsize < 4 else dtype


def _flat_index(xp, n, lc, p, idx):
    """Positions in a flattened (N, Lc, P) array of each tap index (N, Po), per channel."""
    rows = (xp.arange(n, dtype=np.int64)[:, None, None] * lc
            + xp.arange(lc, dtype=np.int64)[None, :, None]) * p
    return rows + idx[:, None, :]


def _rows(a, nd):
    """(*L, N, C, *S) -> (N, L*C, prod S), and (L, N, C)."""
    lead = a.shape[:-nd - 2]
    n, c = a.shape[-nd - 2], a.shape[-nd - 1]
    lp = int(np.prod(lead, dtype=np.int64))
    p = int(np.prod(a.shape[a.ndim - nd:], dtype=np.int64))
    r = a.reshape((lp, n, c, p))
    if lp != 1:
        r = r.transpose(1, 0, 2, 3)
    return r.reshape((n, lp * c, p)), lead, n, c


def _unrows(r, lead, n, c, spatial):
    lp = int(np.prod(lead, dtype=np.int64))
    if lp != 1:
        r = r.reshape((n, lp, c, r.shape[-1])).transpose(1, 0, 2, 3)
    return r.reshape(tuple(lead) + (n, c) + tuple(spatial))


def _grid_sample(x, grid, *, mode, padding_mode, align_corners, deriv=None):
    """out[..., n, c, p] = sum over taps of weight(grid[n, p]) * x[..., n, c, tap]."""
    nd = grid.shape[-1]
    deriv = _orders(deriv, nd)
    xp = _ns(x)
    dtype = x.dtype
    work = _compute_dtype(dtype)
    spatial = grid.shape[1:-1]
    xr, lead, n, c = _rows(x, nd)
    lc = xr.shape[1]
    po = int(np.prod(spatial, dtype=np.int64))
    if vanishes(mode, deriv, nd) or xr.size == 0 or po == 0 or lc == 0:
        return xp.zeros(tuple(lead) + (n, c) + tuple(spatial), dtype)
    xr = xr.astype(work, copy=False)
    flat = xr.reshape(-1)
    acc = None
    taps, bad = _taps(grid.astype(work, copy=False), x.shape[-nd:], mode, padding_mode,
                      align_corners, deriv)
    for idx, w in taps:
        v = flat[_flat_index(xp, n, lc, xr.shape[2], idx)]
        v *= w[:, None, :]
        acc = v if acc is None else np.add(acc, v, out=acc)
    if bad is not None:
        acc[np.broadcast_to(bad[:, None, :], acc.shape)] = np.nan
    return _unrows(acc, lead, n, c, spatial).astype(dtype, copy=False)


def _grid_sample_t(g, grid, *, mode, padding_mode, align_corners, deriv=None, size):
    """The adjoint in the first input: each output's weighted value added back to its
    taps, into an image of spatial `size`."""
    nd = grid.shape[-1]
    deriv = _orders(deriv, nd)
    xp = _ns(g)
    dtype = g.dtype
    size = tuple(size)
    gr, lead, n, c = _rows(g, nd)
    lc = gr.shape[1]
    pin = int(np.prod(size, dtype=np.int64))
    if vanishes(mode, deriv, nd) or gr.size == 0 or pin == 0:
        return xp.zeros(tuple(lead) + (n, c) + size, dtype)
    gr = gr.astype(_compute_dtype(dtype), copy=False)
    total = n * lc * pin
    acc = None
    taps, _ = _taps(grid.astype(gr.dtype, copy=False), size, mode, padding_mode,
                    align_corners, deriv)
    for idx, w in taps:
        part = np.bincount(_flat_index(xp, n, lc, pin, idx).reshape(-1),
                           (gr * w[:, None, :]).reshape(-1), minlength=total)
        acc = part if acc is None else np.add(acc, part, out=acc)
    return _unrows(acc.reshape(n, lc, pin), lead, n, c, size).astype(dtype, copy=False)


# ---------------------------------------------------------------- rules

def _attrs(k):
    return {a: k[a] for a in ("mode", "padding_mode", "align_corners")}


def _against_grid(m, a, x, grid, k):
    """d/dgrid of <a, grid_sample(x, grid; deriv)>: per coordinate, the sum over channels
    (and leading dimensions) of a * grid_sample(x; deriv + e_j). Written out even where
    that derivative vanishes (nearest), so that, as in PyTorch, the zero gradient still
    depends on a and x."""
    nd = grid.shape[-1]
    deriv = _orders(k.get("deriv"), nd)
    ndim = max(a.ndim, x.ndim)
    axes = tuple(range(ndim - nd - 2)) + (ndim - nd - 1,)
    cols = []
    for j in range(nd):
        s = m.grid_sample(x, grid, deriv=_bump(deriv, j, nd), **_attrs(k))
        col = m.sum(a * s, axis=axes)
        cols.append(m.reshape(col, shape=tuple(col.shape) + (1,)))
    return cols[0] if nd == 1 else m.cat(*cols, axis=-1)


def _coordinate(m, t, j, grid, lead):
    """Tangent of coordinate j, (*B, N, *So, k) -> (*B, *1s, N, 1, *So): to broadcast over
    the `lead` dimensions before (N, C) and over the channels."""
    tj = m.getitem(t, idx=(Ellipsis, j))
    shape = tuple(tj.shape)
    nb = len(shape) - (len(grid.shape) - 1)
    return m.reshape(tj, shape=shape[:nb] + (1,) * lead + shape[nb:nb + 1] + (1,)
                     + shape[nb + 1:])


def _sample_grid_jvp(m, t, out, x, grid, **k):
    nd = grid.shape[-1]
    deriv = _orders(k.get("deriv"), nd)
    acc = None
    for j in range(nd):
        d = _bump(deriv, j, nd)
        if vanishes(k["mode"], d, nd):
            continue
        lead = x.ndim - nd - 2
        r = m.grid_sample(x, grid, deriv=d, **_attrs(k)) * _coordinate(m, t, j, grid, lead)
        acc = r if acc is None else acc + r
    return m.zeros_like(out) if acc is None else acc


def _adjoint_grid_jvp(m, t, out, g, grid, **k):
    nd = grid.shape[-1]
    deriv = _orders(k.get("deriv"), nd)
    acc = None
    for j in range(nd):
        d = _bump(deriv, j, nd)
        if vanishes(k["mode"], d, nd):
            continue
        tj = _coordinate(m, t, j, grid, g.ndim - nd - 2)
        r = m.grid_sample_t(g * tj, grid, deriv=d, size=k["size"], **_attrs(k))
        acc = r if acc is None else acc + r
    return m.zeros_like(out) if acc is None else acc


grid_sample = defop(
    "grid_sample", _grid_sample,
    (lambda m, g, out, x, grid, **k: m.grid_sample_t(
        g, grid, deriv=k.get("deriv"), size=tuple(x.shape[x.ndim - grid.shape[-1]:]),
        **_attrs(k)),
     lambda m, g, out, x, grid, **k: _against_grid(m, g, x, grid, k)),
    (lambda m, t, out, x, grid, **k: m.grid_sample(t, grid, **k),
     _sample_grid_jvp),
    fresh=True)

grid_sample_t = defop(
    "grid_sample_t", _grid_sample_t,
    (lambda m, h, out, g, grid, **k: m.grid_sample(h, grid, deriv=k.get("deriv"),
                                                   **_attrs(k)),
     lambda m, h, out, g, grid, **k: _against_grid(m, g, h, grid, k)),
    (lambda m, t, out, g, grid, **k: m.grid_sample_t(t, grid, **k),
     _adjoint_grid_jvp),
    fresh=True)
