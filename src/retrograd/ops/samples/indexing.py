"""Samples for the indexing family: gather, the scatters, index_select/index_add, diagonals.

Index arrays are inputs (int64); sources have the index's shape (PyTorch's own
backward fails for a larger source, which ours pads). scatter_dim's targets never repeat (which
source wins a repeated target is unspecified, in PyTorch too); amax/amin draw
values without ties, prod values away from zero.
"""

from __future__ import annotations

import numpy as np

from . import _distinct


def _index(rng, shape, size):
    return rng.integers(0, size, shape)


def _distinct_rows(rng, rows, k, size):
    """Indices with no repeat within a row: k of range(size) for each of `rows`."""
    return np.stack([rng.permutation(size)[:k] for _ in range(rows)])


def _gather(rng):
    return [([rng.standard_normal((3, 4)), _index(rng, (3, 2), 4)], {"axis": -1}),
            ([rng.standard_normal((3, 4)), _index(rng, (2, 4), 3)], {"axis": -2}),
            ([rng.standard_normal((4,)), _index(rng, (6,), 4)], {"axis": -1}),
            ([rng.standard_normal((2, 3, 4)), _index(rng, (2, 2, 3), 3)], {"axis": -2})]


def _scatter_add(rng):
    return [([rng.standard_normal((3, 4)), _index(rng, (3, 3), 4),
              rng.standard_normal((3, 3))], {"axis": -1}),
            ([rng.standard_normal((3, 4)), _index(rng, (2, 2), 3),
              rng.standard_normal((2, 2))], {"axis": -2}),
            ([rng.standard_normal((5,)), _index(rng, (4,), 5), rng.standard_normal((4,))],
             {"axis": -1})]


def _scatter(rng):
    return [([rng.standard_normal((3, 4)), _distinct_rows(rng, 3, 2, 4),
              rng.standard_normal((3, 2))], {"axis": -1}),
            ([rng.standard_normal((3, 4)), _distinct_rows(rng, 4, 2, 3).T,
              rng.standard_normal((2, 4))], {"axis": -2}),
            ([rng.standard_normal((5,)), rng.permutation(5)[:3], rng.standard_normal((3,))],
             {"axis": -1})]


def _scatter_reduce(rng):
    out = []
    for reduce in ("sum", "mean", "prod", "amax", "amin"):
        for include_self in (True, False):
            attrs = {"axis": -1, "reduce": reduce, "include_self": include_self}
            if reduce in ("amax", "amin"):
                v = _distinct(rng, (3, 9))
                x, src = v[:, :4].copy(), v[:, 4:].copy()
            elif reduce == "prod":
                v = rng.uniform(0.5, 1.5, (3, 9)) * rng.choice([-1.0, 1.0], (3, 9))
                x, src = v[:, :4].copy(), v[:, 4:].copy()
            else:
                x, src = rng.standard_normal((3, 4)), rng.standard_normal((3, 5))
            out.append(([x, _index(rng, (3, 5), 4), src], attrs))
            out.append(([x, _index(rng, (2, 3), 4), src[:2, :3].copy()], attrs))
    return out


def _index_select(rng):
    return [([rng.standard_normal((3, 4)), np.array([0, 2, 0, 3, 3])], {"axis": -1}),
            ([rng.standard_normal((3, 4)), np.array([2, 1])], {"axis": -2}),
            ([rng.standard_normal((4,)), np.array([3, 0, 3])], {"axis": -1})]


def _index_add(rng):
    return [([rng.standard_normal((3, 4)), np.array([0, 2, 0, 3, 3]),
              rng.standard_normal((3, 5))], {"axis": -1}),
            ([rng.standard_normal((3, 4)), np.array([2, 2]), rng.standard_normal((2, 4))],
             {"axis": -2})]


def _diagonal(rng):
    return [([rng.standard_normal((3, 4))], {"offset": o, "axis1": -2, "axis2": -1})
            for o in (0, 1, -1, 3)] + [
        ([rng.standard_normal((2, 3, 4))], {"offset": 1, "axis1": -1, "axis2": -3}),
        ([rng.standard_normal((2, 3, 4))], {"offset": -1, "axis1": -3, "axis2": -2})]


def _diag_scatter(rng):
    return [([rng.standard_normal((2, 3))], {"offset": 0, "axis1": -2, "axis2": -1,
                                             "shape": (2, 3, 3)}),
            ([rng.standard_normal((3,))], {"offset": 1, "axis1": -2, "axis2": -1,
                                           "shape": (3, 4)}),
            ([rng.standard_normal((4, 2))], {"offset": -1, "axis1": -1, "axis2": -3,
                                             "shape": (2, 4, 3)})]


SAMPLES = {
    "gather": _gather, "scatter_add_dim": _scatter_add, "scatter_dim": _scatter,
    "scatter_reduce": _scatter_reduce, "index_select": _index_select, "index_add": _index_add,
    "diagonal": _diagonal, "diag_scatter": _diag_scatter,
}
