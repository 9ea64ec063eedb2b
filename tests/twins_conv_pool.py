"""PyTorch twins of the window, pooling and resampling ops (merged into test_ops.TORCH)."""

import math

import torch
import torch.nn.functional as F

_CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}
_CONV_T = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}
_MAX = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}


def _one_hot_kernels(c, kernel, dtype):
    """Weights (C*K, 1, *kernel) picking each kernel offset: unfold as a grouped conv."""
    k = 1
    for a in kernel:
        k *= a
    eye = torch.eye(k, dtype=dtype).reshape((k, 1) + tuple(kernel))
    return eye.repeat(c, 1, *([1] * len(kernel)))


def _unfold(x, kernel, stride, padding, dilation, pad_value=0.0):
    n, c = x.shape[:2]
    w = _one_hot_kernels(c, kernel, x.dtype)
    cols = _CONV[len(kernel)](x, w, None, stride, padding, dilation, c)
    return cols.reshape((n, c) + tuple(kernel) + cols.shape[2:])


def _fold(cols, shape, kernel, stride, padding, dilation, pad_value=0.0):
    nd = len(kernel)
    n, c = shape[:2]
    outs = cols.shape[-nd:]
    w = _one_hot_kernels(c, kernel, cols.dtype)
    extra = [s - ((o - 1) * st - 2 * p + d * (k - 1) + 1)
             for s, o, st, p, d, k in zip(shape[2:], outs, stride, padding, dilation, kernel)]
    return _CONV_T[nd](cols.reshape((n, -1) + tuple(outs)), w, None, stride, padding, extra, c,
                       dilation)


def _cols_index(shape, kernel, dilation, padding):
    from retrograd.ops.windows import _geometry
    padded, chunk, shifts, tail = _geometry(shape, kernel, dilation, padding)
    idx = torch.as_tensor(shifts).reshape(-1, 1) + torch.arange(chunk)
    return padded, tail, idx


def _conv_cols(x, kernel, dilation, padding):
    n, c = x.shape[:2]
    padded, tail, idx = _cols_index(x.shape, kernel, dilation, padding)
    xp = F.pad(x, _torch_pads(tuple((p, p) for p in padding))).transpose(0, 1)
    flat = F.pad(xp.reshape(c, n, -1), (0, tail))
    cols = flat[:, :, idx]                                  # (C, N, K, chunk)
    return cols.permute(0, 2, 1, 3).reshape(c * idx.shape[0], -1)


def _conv_cols_t(cols, shape, kernel, dilation, padding):
    n, c = shape[:2]
    padded, tail, idx = _cols_index(shape, kernel, dilation, padding)
    k, chunk = idx.shape
    parts = cols.reshape(c, k, n, chunk).permute(0, 2, 1, 3).reshape(c, n, -1)
    size = int(torch.tensor(padded).prod())
    buf = torch.zeros((c, n, size + tail), dtype=cols.dtype)
    buf = torch.index_add(buf, 2, idx.reshape(-1), parts)
    inside = buf[:, :, :size].reshape((c, n) + tuple(padded))
    inside = inside[(slice(None), slice(None)) + tuple(slice(p, p + s) for p, s in
                                                       zip(padding, shape[2:]))]
    return inside.transpose(0, 1)


def _phase_geo(**geo):
    from retrograd.ops.windows import _phases
    return _phases(geo["ins"], geo["outs"], geo["kernel"], geo["stride"], geo["padding"],
                   geo["dilation"])


def _phase_in(x, **geo):
    g = _phase_geo(**geo)
    pads = tuple((lo, f - lo - n) for lo, f, n in zip(g.lo, g.frame, geo["ins"]))
    xp = F.pad(x, _torch_pads(pads)).transpose(0, 1)
    return xp.reshape(x.shape[1], -1)


def _phase_in_t(cols, **geo):
    g = _phase_geo(**geo)
    c = cols.shape[0]
    frames = cols.reshape((c, -1) + g.frame)
    return frames[(slice(None), slice(None)) + g.box()].transpose(0, 1)


def _phase_fold(cols, bias=None, **geo):
    g = _phase_geo(**geo)
    kk = 1
    for k in geo["kernel"]:
        kk *= k
    o, total = cols.shape[0] // kk, cols.shape[1]
    n = total // g.size
    c3 = F.pad(cols.reshape(o, kk, total), (0, g.size))  # room for every shift
    y = torch.zeros((n, o) + tuple(geo["outs"]), dtype=cols.dtype)
    for r, counts, taps in g.phases:
        idx = (slice(None), slice(None)) + tuple(slice(a, None, s) for a, s in
                                                 zip(r, geo["stride"]))
        if not taps:
            continue
        acc = sum(c3[:, t, st:st + total] for t, st in taps).reshape((o, n) + g.frame)
        y[idx] = acc[(slice(None), slice(None)) + tuple(slice(0, k) for k in counts)
                     ].transpose(0, 1)
    if bias is not None:
        y = y + bias.reshape((1, o) + (1,) * len(geo["kernel"]))
    return y


def _phase_fold_t(y, **geo):
    g = _phase_geo(**geo)
    n, o = y.shape[:2]
    kk = 1
    for k in geo["kernel"]:
        kk *= k
    rows = [None] * kk
    for r, counts, taps in g.phases:
        part = y[(slice(None), slice(None)) + tuple(slice(a, None, s) for a, s in
                                                   zip(r, geo["stride"]))].transpose(0, 1)
        pads = tuple((0, f - c) for f, c in zip(g.frame, counts))
        flat = F.pad(F.pad(part, _torch_pads(pads)).reshape(o, -1), (g.size, 0))
        for t, st in taps:
            rows[t] = flat[:, g.size - st:g.size - st + n * g.size]
    return torch.stack(rows, 1).reshape(o * kk, n * g.size)


def _phase_keep(cols, w, **geo):
    """cols, or (a weight with an inf or NaN) the columns off the input zeroed by a mask."""
    if bool(torch.isfinite(w).all()):
        return cols
    g = _phase_geo(**geo)
    keep = torch.zeros((cols.shape[-1] // g.size,) + g.frame, dtype=torch.bool)
    keep[(slice(None),) + g.box()] = True
    return torch.where(keep.reshape(-1), cols, torch.zeros((), dtype=cols.dtype))


def _conv_t_unit(x, w, b=None, *, ins, outs, kernel, stride, padding, dilation, groups):
    extra = [o - ((n - 1) * s - 2 * p + d * (k - 1) + 1)
             for o, n, s, p, d, k in zip(outs, ins, stride, padding, dilation, kernel)]
    return _CONV_T[len(kernel)](x, w, b, stride, padding, extra, groups, dilation)


def _torch_pads(pads):
    flat = []
    for b, a in reversed(pads):
        flat += [b, a]
    return flat


def _view(w, axis, ndim):
    return w.reshape((-1,) + (1,) * (-axis - 1))


def _resample(x, axis, index, weight=None, size=None):
    if weight is None:
        return torch.index_select(x, axis, torch.as_tensor(index[:, 0]))
    w = torch.as_tensor(weight, dtype=x.dtype)
    return sum(torch.index_select(x, axis, torch.as_tensor(index[:, j]))
               * _view(w[:, j], axis, x.ndim) for j in range(index.shape[1]))


def _resample_t(g, axis, index, size, weight=None):
    shape = list(g.shape)
    shape[axis] = size
    out = torch.zeros(shape, dtype=g.dtype)
    for j in range(index.shape[1]):
        part = g if weight is None else g * _view(
            torch.as_tensor(weight[:, j], dtype=g.dtype), axis, g.ndim)
        out = torch.index_add(out, axis % g.ndim, torch.as_tensor(index[:, j]), part)
    return out


def _unpool(g, idx, shape):
    n, c = shape[:2]
    z = torch.zeros((n, c, int(torch.tensor(shape[2:]).prod())), dtype=g.dtype)
    return z.scatter_add(2, idx.reshape(n, c, -1), g.reshape(n, c, -1)).reshape(shape)


def _gather_flat(x, idx):
    n, c = idx.shape[:2]
    return torch.gather(x.reshape(n, c, -1), 2, idx.reshape(n, c, -1)).reshape(idx.shape)


def _positions(shape, kernel, stride, padding, dilation, ceil_mode):
    """Padded spatial size, and per kernel offset the flat padded positions it reads."""
    import itertools

    import numpy as np

    from retrograd.ops.pooling import pool_geometry
    geo = [pool_geometry(n, k, s, p, d, ceil_mode)
           for n, k, s, p, d in zip(shape, kernel, stride, padding, dilation)]
    padded = tuple(n + 2 * p + e for n, p, (_, e) in zip(shape, padding, geo))
    outs = tuple(o for o, _ in geo)
    grids = np.meshgrid(*(np.arange(o) for o in outs), indexing="ij")
    for off in itertools.product(*(range(k) for k in kernel)):
        coords = [g * s + o * d for g, s, o, d in zip(grids, stride, off, dilation)]
        yield padded, torch.as_tensor(np.ravel_multi_index(coords, padded).ravel())


def _crop(z, shape, padding):
    idx = (Ellipsis,) + tuple(slice(p, p + n) for p, n in zip(padding, shape))
    return z[idx]


def _pool_scatter(g, arg, shape, kernel, stride, padding, dilation, ceil_mode=False):
    nd = len(kernel)
    out = None
    for j, (padded, pos) in enumerate(_positions(shape[2:], kernel, stride, padding, dilation,
                                                 ceil_mode)):
        if out is None:
            out = torch.zeros(tuple(shape[:2]) + (int(torch.tensor(padded).prod()),),
                              dtype=g.dtype)
        part = torch.where(arg == j, g, torch.zeros((), dtype=g.dtype)).flatten(-nd)
        out = torch.index_add(out, 2, pos, part)
    return _crop(out.reshape(tuple(shape[:2]) + padded), shape[2:], padding)


def _pool_gather(x, arg, kernel, stride, padding, dilation, ceil_mode=False):
    nd = len(kernel)
    out = torch.zeros(arg.shape, dtype=x.dtype)
    for j, (padded, pos) in enumerate(_positions(x.shape[2:], kernel, stride, padding,
                                                 dilation, ceil_mode)):
        pads = []
        for p, n, q in reversed(list(zip(padding, x.shape[2:], padded))):
            pads += [p, q - n - p]
        xp = F.pad(x, pads).flatten(-nd)
        out = torch.where(arg == j, torch.index_select(xp, 2, pos).reshape(arg.shape), out)
    return out


def _strided_positions(size, stride, offset):
    pos = torch.full(tuple(size), offset, dtype=torch.int64)
    for k, (n, st) in enumerate(zip(size, stride)):
        shape = [1] * len(size)
        shape[k] = n
        pos = pos + (torch.arange(n) * st).reshape(shape)
    return pos


TWINS = {
    "unfold": _unfold,
    "fold": _fold,
    "unfold_view": lambda x, axis, size, step: x.unfold(axis, size, step),
    "as_strided_view": lambda x, size, stride, offset: x.contiguous().as_strided(
        size, stride, offset),
    "as_strided_add": lambda v, size, stride, offset, shape: torch.zeros(
        math.prod(shape), dtype=v.dtype).index_add(
        0, _strided_positions(size, stride, offset).reshape(-1), v.reshape(-1)).reshape(shape),
    "conv_cols": _conv_cols,
    "conv_cols_t": _conv_cols_t,
    "conv_unit": lambda x, w, b=None, *, dilation, padding, groups: _CONV[w.ndim - 2](
        x, w, b, 1, padding, dilation, groups),
    "conv_unit_bias": lambda x, w, b, *, dilation, padding, groups: _CONV[w.ndim - 2](
        x, w, b, 1, padding, dilation, groups),
    "phase_in": _phase_in,
    "phase_in_t": _phase_in_t,
    "phase_fold": _phase_fold,
    "phase_fold_bias": _phase_fold,
    "phase_fold_t": _phase_fold_t,
    "phase_keep": _phase_keep,
    "conv_t_unit": _conv_t_unit,
    "conv_t_unit_bias": _conv_t_unit,
    "pad_constant": lambda x, pads, value=0.0: F.pad(x, _torch_pads(pads), value=value),
    "resample": _resample,
    "resample_t": _resample_t,
    "max_pool": lambda x, kernel, stride, padding, dilation, ceil_mode=False: _MAX[len(kernel)](
        x, kernel, stride, padding, dilation, ceil_mode),
    "pool_scatter": _pool_scatter,
    "pool_gather": _pool_gather,
    "unpool": _unpool,
    "gather_flat": _gather_flat,
}
