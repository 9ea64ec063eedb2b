"""`rg.segment_reduce`: PyTorch's reduction of consecutive segments along an axis (the
segments given by `lengths` or by `offsets`), as graph and ragged-batch code uses it.

Each segment is a slice of the data reduced by the public reductions (`sum`, `prod`,
`mean`, `amax`, `amin`), so the gradients are theirs: torch's (ties of max/min share the
gradient equally; prod's handles zeros). `initial` joins every segment's reduction (mean:
(sum + initial) / count) and is the value of an empty one; without it an empty segment is
0 (sum), 1 (prod), nan (mean), -inf (max) or inf (min). The lengths are read in Python, so
`rg.jit` and `rg.func.vmap` refuse a traced or batched `lengths`/`offsets`.
"""

from __future__ import annotations

import math

import numpy as np

from .. import devices
from .._values import values_of
from ..tensor import Tensor
from ._args import _t
from .shape import cat, stack

__all__ = ["segment_reduce"]

_REDUCE = {"sum": "sum", "prod": "prod", "mean": "mean", "max": "amax", "amax": "amax",
           "min": "amin", "amin": "amin"}
_EMPTY = {"sum": 0.0, "prod": 1.0, "mean": math.nan, "amax": -math.inf, "amin": math.inf}


def _segment(x: Tensor, how: str, axis: int, initial) -> Tensor:
    """x reduced along `axis` (kept), joined with `initial`; the empty value if x is empty."""
    shape = list(x.shape)
    shape[axis] = 1
    if x.shape[axis] == 0:
        fill = _EMPTY[how] if initial is None else float(initial)
        return x.new_full(tuple(shape), fill)
    if how == "mean" and initial is not None:
        return (x.sum(axis, keepdim=True) + initial) / x.shape[axis]
    r = getattr(x, how)(axis, keepdim=True)
    if initial is None:
        return r
    if how == "sum":
        return r + initial
    if how == "prod":
        return r * initial
    from .elementwise import maximum, minimum
    bound = r.new_full(r.shape, float(initial))
    return maximum(r, bound) if how == "amax" else minimum(r, bound)


def segment_reduce(data, reduce: str, *, lengths=None, indices=None, offsets=None,
                   axis: int = 0, unsafe: bool = False, initial=None) -> Tensor:
    """Reduce (`reduce`: 'sum', 'prod', 'mean', 'max' or 'min') each segment of `data` along
    `axis`, the segments given by `lengths` (their sizes; they must cover the axis unless
    `unsafe`) or `offsets` (their boundaries), of shape data.shape[:axis] + (segments,) for
    lengths/offsets with leading dimensions matching data's. Like `torch.segment_reduce`."""
    x = _t(data)
    if reduce not in _REDUCE:
        raise RuntimeError(f"segment_reduce(): reduce argument must be either sum, prod, mean, "
                           f"amax or amin, got {reduce}")
    how = _REDUCE[reduce]
    if indices is not None:
        raise RuntimeError("segment_reduce(): indices based reduction is not supported yet.")
    if lengths is None and offsets is None:
        raise RuntimeError("segment_reduce(): Either lengths or offsets must be defined.")
    if x.dtype.kind != "f":
        raise NotImplementedError(f"segment_reduce(): not implemented for {x.dtype} data "
                                  "(floating data only, as torch)")
    given = _t(lengths if lengths is not None else offsets)
    if given.dtype.kind not in "iu":
        raise NotImplementedError(f"segment_reduce(): lengths/offsets must be integers, got "
                                  f"{given.dtype}")
    ax = axis + x.ndim if axis < 0 else axis
    if ax != given.ndim - 1:
        raise RuntimeError(f"segment_reduce(): Expected axis to be the last dimension of "
                           f"lengths but got {axis}.")
    if x.shape[:ax] != given.shape[:-1]:
        raise RuntimeError(f"segment_reduce(): lengths/offsets of shape {given.shape} do not "
                           f"match data of shape {x.shape} before axis {ax}")
    vals = devices.host(values_of(given, "segment_reduce()", "pass lengths built outside "
                                  "the function")).astype(np.int64)
    size = x.shape[ax]
    if lengths is not None:
        if (vals < 0).any():
            raise RuntimeError("segment_reduce(): lengths contains negative value!")
        if not unsafe and (vals.sum(-1) != size).any():
            raise RuntimeError("segment_reduce(): Expected all rows of lengths along axis to "
                               "sum to data.size(lengths.dim()-1) when !unsafe.")
        ends = np.cumsum(vals, -1)
        bounds = np.concatenate([np.zeros(vals.shape[:-1] + (1,), np.int64), ends], -1)
    else:
        bounds = vals
        if (np.diff(bounds, axis=-1) < 0).any() or (bounds < 0).any() or (bounds > size).any():
            raise RuntimeError(f"segment_reduce(): offsets must increase within [0, {size}]")
    rows = []
    for lead in np.ndindex(*x.shape[:ax]):
        xr = x[lead] if lead else x
        b = bounds[lead]
        pieces = [_segment(xr.narrow(0, int(s), int(e - s)), how, 0, initial)
                  for s, e in zip(b[:-1], b[1:])]
        if not pieces:
            rows.append(xr.new_zeros((0,) + xr.shape[1:]))
        else:
            rows.append(cat(pieces, 0))
    if not x.shape[:ax]:
        return rows[0]
    return stack(rows, 0).reshape(x.shape[:ax] + rows[0].shape)
