"""Samples for the window, pooling and resampling families (1, 2 and 3 spatial dimensions)."""

from __future__ import annotations

import numpy as np

from . import _distinct

_WINDOWS = [  # (input shape, kernel, stride, padding, dilation)
    ((2, 2, 5, 6), (2, 3), (1, 2), (1, 0), (1, 1)),
    ((2, 3, 7), (3,), (2,), (1,), (1,)),
    ((1, 2, 9), (2,), (1,), (0,), (3,)),
    ((1, 2, 4, 5, 4), (2, 2, 3), (1, 2, 1), (0, 1, 1), (1, 1, 1)),
    ((1, 1, 7, 7), (3, 2), (2, 1), (1, 1), (2, 2)),
]


def _unfold(rng):
    return [([rng.standard_normal(x)], dict(kernel=k, stride=s, padding=p, dilation=d))
            for x, k, s, p, d in _WINDOWS]


def _unfold_view(rng):
    """Tensor.unfold: overlapping windows, gaps between windows, the last axis, a 1-D input,
    a window as long as its axis."""
    return [([rng.standard_normal((3, 7))], dict(axis=-1, size=3, step=2)),
            ([rng.standard_normal((5, 2, 3))], dict(axis=-3, size=2, step=1)),
            ([rng.standard_normal((2, 6, 4))], dict(axis=-2, size=2, step=3)),
            ([rng.standard_normal((5,))], dict(axis=-1, size=5, step=1))]


def _as_strided_view(rng):
    """Tensor.as_strided: sliding windows (overlapping, so the gradient sums), a transpose
    by strides, a stride of 0 (a broadcast), an offset, and an empty size."""
    return [([rng.standard_normal((3, 4))], dict(size=(4, 3), stride=(2, 1), offset=1)),
            ([rng.standard_normal((2, 3))], dict(size=(3, 2), stride=(1, 3), offset=0)),
            ([rng.standard_normal((5,))], dict(size=(2, 3), stride=(0, 2), offset=0)),
            ([rng.standard_normal((4,))], dict(size=(0, 2), stride=(1, 1), offset=2))]


def _as_strided_add(rng):
    return [([rng.standard_normal((4, 3))], dict(size=(4, 3), stride=(2, 1), offset=1,
                                                 shape=(3, 4))),
            ([rng.standard_normal((2, 3))], dict(size=(2, 3), stride=(0, 2), offset=0,
                                                 shape=(5,)))]


def _fold(rng):
    out = []
    for x, k, s, p, d in _WINDOWS:
        o = tuple((n + 2 * pp - dd * (kk - 1) - 1) // ss + 1
                  for n, kk, ss, pp, dd in zip(x[2:], k, s, p, d))
        out.append(([rng.standard_normal(x[:2] + k + o)],
                    dict(shape=x, kernel=k, stride=s, padding=p, dilation=d)))
    return out


_COLS = [  # (input shape, kernel, dilation, padding): unit stride
    ((2, 3, 7), (3,), (1,), (1,)),
    ((2, 2, 5, 6), (3, 2), (1, 2), (1, 0)),
    ((1, 2, 4, 3, 5), (2, 2, 3), (1, 1, 1), (1, 0, 1)),
]


def _conv_cols(rng):
    return [([rng.standard_normal(x)], dict(kernel=k, dilation=d, padding=p))
            for x, k, d, p in _COLS]


def _conv_cols_t(rng):
    from retrograd.ops.windows import _conv_cols
    return [([rng.standard_normal(_conv_cols(np.zeros(x), kernel=k, dilation=d,
                                             padding=p).shape)],
             dict(shape=x, kernel=k, dilation=d, padding=p)) for x, k, d, p in _COLS]


_UNIT = [  # (input shape, weight shape, dilation, padding, groups)
    ((2, 3, 7), (4, 3, 3), (1,), (1,), 1),
    ((2, 4, 5, 6), (4, 2, 3, 2), (1, 2), (1, 0), 2),
    ((1, 2, 4, 3, 5), (2, 2, 2, 2, 3), (1, 1, 1), (1, 0, 1), 1),
]


def _conv_unit(rng, bias=False):
    return [([rng.standard_normal(x), rng.standard_normal(w)]
             + ([rng.standard_normal(w[0])] if bias else []),
             dict(dilation=d, padding=p, groups=g)) for x, w, d, p, g in _UNIT]


_PHASE = [  # (input shape, weight kernel, stride, padding, dilation, output_padding)
    ((2, 3, 4), (3,), (2,), (1,), (1,), (1,)),
    ((2, 2, 3, 4), (3, 2), (2, 3), (1, 0), (1, 2), (1, 2)),
    ((1, 2, 2, 3, 2), (2, 2, 3), (1, 2, 2), (0, 1, 1), (1, 1, 1), (0, 1, 0)),
    ((1, 1, 3, 3), (2, 2), (3, 1), (2, 0), (3, 1), (2, 0)),
]


def _phase_geo(x, k, s, p, d, a):
    outs = tuple((n - 1) * ss - 2 * pp + dd * (kk - 1) + aa + 1
                 for n, kk, ss, pp, dd, aa in zip(x[2:], k, s, p, d, a))
    return dict(ins=tuple(x[2:]), outs=outs, kernel=k, stride=s, padding=p, dilation=d)


def _phase_in(rng):
    return [([rng.standard_normal(x)], _phase_geo(x, *rest)) for x, *rest in _PHASE]


def _phase_in_t(rng):
    from retrograd.ops.windows import _phase_in as f
    out = []
    for x, *rest in _PHASE:
        geo = _phase_geo(x, *rest)
        out.append(([rng.standard_normal(f(np.zeros(x), **geo).shape)], geo))
    return out


def _phase_fold(rng, bias=False):
    from retrograd.ops.windows import _phase_in as f
    out = []
    for x, *rest in _PHASE:
        geo = _phase_geo(x, *rest)
        cols = f(np.zeros(x), **geo).shape[1]
        o = 2
        arrays = [rng.standard_normal((o * int(np.prod(geo["kernel"])), cols))]
        out.append((arrays + [rng.standard_normal(o)] * bias, geo))
    return out


def _phase_keep(rng):
    """Columns and a weight (float32, so that no check differentiates it: it only decides):
    finite (the columns as they are), then with an inf (the off-input columns dropped)."""
    from ...tensor import Tensor
    out = []
    for (cols,), geo in _phase_fold(rng):
        w = rng.standard_normal((3, 2) + tuple(geo["kernel"]))
        out.append(([cols, Tensor(w.astype(np.float32))], geo))
        w = w.copy()
        w.flat[1] = np.inf
        out.append(([cols, Tensor(w.astype(np.float32))], geo))
    return out


def _phase_fold_t(rng):
    out = []
    for x, *rest in _PHASE:
        geo = _phase_geo(x, *rest)
        out.append(([rng.standard_normal((x[0], 2) + geo["outs"])], geo))
    return out


_T_UNIT = [  # (input shape, weight shape (C, O/groups, *k), stride, padding, dilation,
    #           output_padding, groups)
    ((2, 3, 4), (3, 2, 3), (2,), (1,), (1,), (1,), 1),
    ((2, 4, 3, 4), (4, 1, 3, 2), (2, 3), (1, 0), (1, 2), (1, 2), 2),
    ((1, 2, 2, 3, 2), (2, 2, 2, 2, 3), (1, 2, 2), (0, 1, 1), (1, 1, 1), (0, 1, 0), 1),
]


def _conv_t_unit(rng, bias=False):
    out = []
    for x, w, s, p, d, a, g in _T_UNIT:
        geo = _phase_geo(x, w[2:], s, p, d, a)
        arrays = [rng.standard_normal(x), rng.standard_normal(w)]
        out.append((arrays + [rng.standard_normal(w[1] * g)] * bias, dict(geo, groups=g)))
    return out


def _pad_constant(rng):
    return [([rng.standard_normal((2, 3, 4))], {"pads": ((1, 2),), "value": 0.5}),
            ([rng.standard_normal((2, 3, 4))], {"pads": ((-1, 2), (0, -1))}),
            ([rng.standard_normal((2, 3, 4, 5))], {"pads": ((1, 0), (2, 1), (0, 3))}),
            ([rng.standard_normal((3,))], {"pads": ((2, -1),)})]


def _taps(rng, n_out, n_in, k):
    return rng.integers(0, n_in, (n_out, k)), rng.uniform(-1, 1, (n_out, k))


def _resample(rng):
    out = []
    for shape, axis, n_out, k in [((2, 5), -1, 7, 1), ((2, 5, 3), -2, 4, 2),
                                  ((3, 4), -2, 6, 4), ((2, 2, 3, 4), -1, 8, 2)]:
        idx, w = _taps(rng, n_out, shape[axis], k)
        out.append(([rng.standard_normal(shape)], {"axis": axis, "index": idx, "weight": w}))
    idx, _ = _taps(rng, 6, 4, 1)
    out.append(([rng.standard_normal((2, 4))], {"axis": -1, "index": idx, "weight": None}))
    return out


def _resample_t(rng):
    out = []
    for shape, axis, size, k in [((2, 7), -1, 5, 1), ((2, 4, 3), -2, 5, 2),
                                 ((6, 4), -2, 3, 4)]:
        idx, w = _taps(rng, shape[axis], size, k)
        out.append(([rng.standard_normal(shape)],
                    {"axis": axis, "index": idx, "weight": w, "size": size}))
    idx, _ = _taps(rng, 6, 4, 1)
    out.append(([rng.standard_normal((2, 6))],
                {"axis": -1, "index": idx, "weight": None, "size": 4}))
    return out


_POOLS = [  # (input shape, kernel, stride, padding, dilation, ceil_mode)
    ((2, 3, 4, 6), (2, 2), (2, 2), (0, 0), (1, 1), False),
    ((1, 2, 5, 7), (3, 2), (2, 1), (1, 1), (1, 1), True),
    ((2, 2, 9), (3,), (2,), (1,), (1,), False),
    ((1, 2, 8), (2,), (3,), (0,), (2,), True),
    ((1, 1, 4, 5, 4), (2, 2, 2), (2, 1, 2), (1, 0, 0), (1, 2, 1), False),
]


def _max_pool(rng):
    return [([_distinct(rng, x)], dict(kernel=k, stride=s, padding=p, dilation=d, ceil_mode=c))
            for x, k, s, p, d, c in _POOLS]


def _arg(rng, shape, kernel, outs):
    return rng.integers(0, int(np.prod(kernel)), shape[:2] + outs)


def _pool_scatter(rng):
    from retrograd.ops.pooling import pool_geometry
    out = []
    for x, k, s, p, d, c in _POOLS:
        outs = tuple(pool_geometry(n, kk, ss, pp, dd, c)[0]
                     for n, kk, ss, pp, dd in zip(x[2:], k, s, p, d))
        out.append(([rng.standard_normal(x[:2] + outs), _arg(rng, x, k, outs)],
                    dict(shape=x, kernel=k, stride=s, padding=p, dilation=d, ceil_mode=c)))
    return out


def _pool_gather(rng):
    return [([rng.standard_normal(a["shape"]), arg], {k: v for k, v in a.items() if k != "shape"})
            for (_, arg), a in _pool_scatter(rng)]


def _unpool(rng):
    out = []
    for shape, o in [((2, 3, 4, 5), (2, 3)), ((2, 2, 7), (4,)), ((1, 2, 3, 2, 4), (2, 2, 1))]:
        idx = rng.integers(0, int(np.prod(shape[2:])), shape[:2] + o)
        out.append(([rng.standard_normal(shape[:2] + o), idx], {"shape": shape}))
    return out


def _gather_flat(rng):
    out = []
    for shape, o in [((2, 3, 4, 5), (2, 3)), ((2, 2, 7), (4,)), ((1, 2, 3, 2, 4), (2, 2, 1))]:
        idx = rng.integers(0, int(np.prod(shape[2:])), shape[:2] + o)
        out.append(([rng.standard_normal(shape), idx], {}))
    return out


SAMPLES = {
    "unfold": _unfold, "fold": _fold, "unfold_view": _unfold_view,
    "as_strided_view": _as_strided_view, "as_strided_add": _as_strided_add,
    "conv_cols": _conv_cols, "conv_cols_t": _conv_cols_t,
    "conv_unit": _conv_unit, "conv_unit_bias": lambda rng: _conv_unit(rng, True),
    "pad_constant": _pad_constant, "phase_in": _phase_in, "phase_in_t": _phase_in_t,
    "phase_fold": _phase_fold, "phase_fold_bias": lambda rng: _phase_fold(rng, True),
    "phase_fold_t": _phase_fold_t, "phase_keep": _phase_keep, "conv_t_unit": _conv_t_unit,
    "conv_t_unit_bias": lambda rng: _conv_t_unit(rng, True),
    "resample": _resample, "resample_t": _resample_t, "max_pool": _max_pool,
    "pool_scatter": _pool_scatter, "pool_gather": _pool_gather, "unpool": _unpool,
    "gather_flat": _gather_flat,
}
