"""Matrices built from tensors, and statistics over them, with PyTorch's names:
`rg.block_diag`, `rg.cartesian_prod`, `rg.combinations`, `rg.tril_indices`,
`rg.triu_indices`, `rg.vander`, `rg.diagflat`, `rg.logspace`; `rg.cov`, `rg.corrcoef`,
`rg.dist`, `rg.renorm`.

Each is a composition of differentiable functions (concatenation, indexing, cumulative
products, norms, matrix products), so gradients, forward mode, vmap and `rg.jit` come
from those; the index builders and `logspace` make constants.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from .. import creation, ops
from .._values import batched, by_ops, per_element
from ..engine import apply
from ..ops.checks import check_within
from ..tensor import Tensor
from ._args import _t, promote
from ._errors import DtypeError
from ._opmath import float16_in_float32

__all__ = ["block_diag", "cartesian_prod", "combinations", "tril_indices", "triu_indices",
           "vander", "diagflat", "logspace", "cov", "corrcoef", "dist", "renorm"]


# ---------------------------------------------------------------- building matrices

def block_diag(*tensors) -> Tensor:
    """The tensors (0-d, 1-d as a row, or 2-d) placed along the diagonal of one matrix,
    zeros elsewhere, in their promoted dtype, as `torch.block_diag`."""
    from .shape import cat
    ts = [_t(t) for t in tensors]
    for k, t in enumerate(ts):
        if t.ndim > 2:
            raise RuntimeError(f"block_diag(): input tensors must have 2 or fewer dimensions, "
                               f"input {k} has shape {t.shape}")
    if not ts:
        return Tensor(np.zeros((1, 0), creation.get_default_dtype()))
    ts = list(promote(*ts)) if len(ts) > 1 else ts
    blocks = [apply(ops.reshape, t, shape=(1, 1) if t.ndim == 0 else (1, t.shape[0]))
              if t.ndim < 2 else t for t in ts]
    dt = blocks[0].dtype
    width = sum(b.shape[1] for b in blocks)
    rows, left = [], 0
    for b in blocks:
        r, c = b.shape
        parts = [Tensor(np.zeros((r, left), dt))] if left else []
        parts.append(b)
        if width - left - c:
            parts.append(Tensor(np.zeros((r, width - left - c), dt)))
        rows.append(cat(parts, 1) if len(parts) > 1 else b)
        left += c
    return cat(rows, 0) if len(rows) > 1 else rows[0]


def _vector(name: str, t: Tensor) -> None:
    if t.ndim != 1:
        raise RuntimeError(f"{name}(): expected a 1-D vector, got shape {t.shape}")


def cartesian_prod(*tensors) -> Tensor:
    """Every combination of one entry from each vector, as rows (N, k) in
    `itertools.product`'s order; one vector comes back as it is. Like `torch.cartesian_prod`
    (the vectors share one dtype)."""
    from .indexing import meshgrid
    from .shape import reshape, stack
    ts = [_t(t) for t in tensors]
    if not ts:
        raise RuntimeError("cartesian_prod(): expected at least one tensor")
    for t in ts:
        _vector("cartesian_prod", t)
    if len({t.dtype for t in ts}) > 1:
        raise RuntimeError(f"cartesian_prod(): expected tensors of one dtype, got "
                           f"{', '.join(str(t.dtype) for t in ts)}")
    if len(ts) == 1:
        return ts[0]
    grids = meshgrid(*ts, indexing="ij")
    return stack([reshape(g, (-1,)) for g in grids], 1)


def combinations(input, r: int = 2, with_replacement: bool = False) -> Tensor:  # noqa: A002
    """The length-`r` combinations of a vector's entries as rows, in `itertools`' order
    (`with_replacement` as `combinations_with_replacement`), as `torch.combinations`."""
    x = _t(input)
    _vector("combinations", x)
    if isinstance(r, bool) or not isinstance(r, (int, np.integer)) or r < 0:
        raise RuntimeError(f"combinations(): r must be a non-negative int, got {r!r}")
    if r == 0:
        return Tensor(np.zeros((0,), x.dtype))
    make = itertools.combinations_with_replacement if with_replacement else \
        itertools.combinations
    idx = np.array(list(make(range(x.shape[0]), int(r))), np.int64).reshape(-1, int(r))
    return apply(ops.getitem, x, idx=(idx,))


def _indices(name: str, row: int, col: int, offset: int, dtype, lower: bool) -> Tensor:
    for what, v in (("row", row), ("col", col)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
            raise RuntimeError(f"{name}(): {what} must be a non-negative int, got {v!r}")
    dt = np.dtype(np.int64 if dtype is None else dtype)
    if dt.kind not in "iu":
        raise NotImplementedError(f"{name}(): not implemented for dtype {dt} (an integer "
                                  "dtype, as in PyTorch)")
    make = np.tril_indices if lower else np.triu_indices
    rows, cols = make(int(row), int(offset), int(col))
    return Tensor(np.stack([rows, cols]).astype(dt).reshape(2, -1))


def tril_indices(row: int, col: int, offset: int = 0, *, dtype=None, device=None) -> Tensor:
    """(2, N) row and column indices of the lower triangle (on and below the `offset`
    diagonal) of a row x col matrix, row by row, as `torch.tril_indices`."""
    out = _indices("tril_indices", row, col, offset, dtype, True)
    return out if device is None else out.to(device)


def triu_indices(row: int, col: int, offset: int = 0, *, dtype=None, device=None) -> Tensor:
    """(2, N) row and column indices of the upper triangle (on and above the `offset`
    diagonal) of a row x col matrix, row by row, as `torch.triu_indices`."""
    out = _indices("triu_indices", row, col, offset, dtype, False)
    return out if device is None else out.to(device)


def vander(x, N: int | None = None, increasing: bool = False) -> Tensor:  # noqa: N803
    """The Vandermonde matrix of a vector: columns x^(N-1), ..., x, 1 (x^0 first with
    `increasing`); N defaults to its length. Integers and bools give int64, as in
    `torch.vander`; made by a cumulative product, so the gradient is right at x = 0."""
    from .cumulative import cumprod
    from .indexing import flip
    from .shape import cat
    x = _t(x)
    if x.ndim != 1:
        raise RuntimeError(f"vander(): x must be a one-dimensional tensor, got shape {x.shape}")
    N = x.shape[0] if N is None else N
    if isinstance(N, bool) or not isinstance(N, (int, np.integer)) or N < 0:
        raise RuntimeError(f"vander(): N must be a non-negative int, got {N!r}")
    if x.dtype.kind in "biu":
        x = x.to(np.int64)
    col = apply(ops.reshape, x, shape=(x.shape[0], 1))
    if N == 0:
        return Tensor(np.zeros((x.shape[0], 0), x.dtype))
    ones = apply(ops.ones_like, col)
    if N == 1:
        return ones
    powers = cumprod(cat([ones, apply(ops.expand, col, shape=(x.shape[0], int(N) - 1))], 1), 1)
    return powers if increasing else flip(powers, (1,))


def diagflat(input, offset: int = 0) -> Tensor:  # noqa: A002
    """A square matrix with the flattened input on its `offset` diagonal, as
    `torch.diagflat`."""
    from .indexing import diag
    x = _t(input)
    return diag(apply(ops.reshape, x, shape=(x.size,)), offset)


def logspace(start, end, steps: int, base: float = 10.0, *, dtype=None,
             requires_grad: bool = False, device=None) -> Tensor:
    """`steps` values base^e, e evenly spaced from `start` to `end` (both included), as
    `torch.logspace`; computed in float64, then cast (truncated for an integer dtype)."""
    steps = creation._index_size(steps, zero_d=True)  # a 0-d integer tensor counts, as in torch
    creation._check_space_args("logspace", start, end, steps)
    dt = creation.get_default_dtype() if dtype is None else np.dtype(dtype)
    if dt.kind == "b":
        raise TypeError("logspace() does not support dtype bool")
    if batched(start, end):  # tensor ends batched by vmap: each element's, as torch's
        r = per_element(lambda s, e: logspace(s, e, steps, base, dtype=dt, device=device,
                                              requires_grad=requires_grad), start, end)
        if r is not None:
            return r
    lo, hi = (float(v.item() if isinstance(v, Tensor) else v) for v in (start, end))
    if dt.kind in "iu" and steps != 1:
        # PyTorch truncates start and end to integers first, then steps in float64 from
        # each end (the first half from start, the rest from end), as linspace does
        lo, hi = float(math.trunc(lo)), float(math.trunc(hi))
        step = (hi - lo) / (steps - 1) if steps > 1 else 0.0
        i = np.arange(steps, dtype=np.float64)
        exps = np.where(i < steps // 2, lo + step * i, hi - step * (steps - 1 - i))
    else:
        exps = np.linspace(lo, hi, steps) if steps != 1 else np.array([lo])
    vals = np.power(float(base), exps)
    if dt.kind in "iu":
        vals = np.trunc(vals)
    return creation.tensor(vals.astype(dt), requires_grad=requires_grad, device=device)


# ---------------------------------------------------------------- statistics

def _weights(name: str, w, n: int, integral: bool) -> Tensor:
    w = _t(w)
    kinds, kind = ("iu", "integral") if integral else ("f", "floating point")
    if w.dtype.kind not in kinds:
        raise RuntimeError(f"cov(): expected {name} to have {kind} dtype, got {w.dtype}")
    if w.ndim > 1:
        raise RuntimeError(f"cov(): expected {name} to have one or fewer dimensions, got shape "
                           f"{w.shape}")
    if w.size != n:
        raise RuntimeError(f"cov(): expected {name} to have as many entries as there are "
                           f"observations in the input, got {w.size} != {n}")
    message = f"cov(): {name} cannot be negative"
    if by_ops(w):
        return w * apply(check_within, w.detach(), lo=0, hi=math.inf, open_lo=False,
                         message=message)
    if w.size and bool((w.data < 0).any()):
        raise RuntimeError(message)
    return w


def cov(input, *, correction: int = 1, fweights=None, aweights=None) -> Tensor:  # noqa: A002
    """The covariance matrix of the variables in the rows of `input` (observations in its
    columns; a vector is one variable), as `torch.cov`: `correction` 1 (Bessel) by default,
    integer frequency weights `fweights` and floating observation weights `aweights`; a
    non-positive normaliser gives inf or nan, as in PyTorch."""
    from .elementwise import where
    from .reductions import mean, sum
    x = _t(input)
    if x.ndim > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions, got shape "
                           f"{x.shape}")
    if isinstance(correction, bool) or not isinstance(correction, (int, np.integer)):
        raise TypeError(f"cov(): correction must be an int, got {correction!r}")
    if x.dtype.kind == "b":
        raise DtypeError("cov(): bool dtype is not supported for input")
    if x.dtype.kind in "iu":
        x = x.to(creation.get_default_dtype())
    x = x if x.ndim == 2 else apply(ops.reshape, x, shape=(1, x.size))
    n = x.shape[1]
    w = None if fweights is None else _weights("fweights", fweights, n, True)
    aw = None if aweights is None else _weights("aweights", aweights, n, False)
    if aw is not None:
        w = aw if w is None else w * aw
    if w is None:
        avg = mean(x, 1)
        norm = float(n - correction)
        norm = Tensor(np.asarray(max(norm, 0.0), x.dtype))
    else:
        if w.dtype.kind in "iu":  # real weights for complex input too (the norm is compared)
            w = w.to(x.dtype if x.dtype.kind != "c" else np.dtype(x.dtype.char.lower()))
        w_sum = sum(w)
        avg = sum(x * w, 1) / w_sum
        if correction == 0:
            norm = w_sum
        elif aw is not None:
            norm = w_sum - correction * sum(w * aw) / w_sum
        else:
            norm = w_sum - correction
        norm = where(norm <= 0, 0.0, norm)
    x = x - apply(ops.reshape, avg, shape=(x.shape[0], 1))
    xw = x if w is None else x * w
    if xw.dtype.kind == "c":
        xw = apply(ops.conj, xw)
    c = apply(ops.matmul, x, apply(ops.permute, xw, axes=(1, 0))) / norm
    return apply(ops.reshape, c, shape=()) if c.shape == (1, 1) else c


def corrcoef(input) -> Tensor:  # noqa: A002
    """Pearson correlation coefficients of the variables in the rows of `input`: cov scaled
    by the standard deviations and clipped to [-1, 1], as `torch.corrcoef`."""
    from .elementwise import clamp, sqrt
    from .indexing import diagonal
    c = cov(input)
    if c.ndim == 0:
        return c / c
    s = sqrt(diagonal(c, 0, 0, 1))
    c = c / apply(ops.reshape, s, shape=(s.shape[0], 1))
    c = c / apply(ops.reshape, s, shape=(1, s.shape[0]))
    if c.dtype.kind == "c":  # as torch: the real and imaginary parts clipped separately
        from .complex import complex as _complex
        from .complex import imag, real
        return _complex(clamp(real(c), -1.0, 1.0), clamp(imag(c), -1.0, 1.0))
    return clamp(c, -1.0, 1.0)


@float16_in_float32("input", "other")
def dist(input, other, p: float = 2) -> Tensor:  # noqa: A002
    """The p-norm of input - other (broadcast, promoted; floating result), as `torch.dist`."""
    from .norms import vector_norm
    a, b = promote(_t(input), _t(other))
    if a.dtype.kind not in "fc":
        raise RuntimeError(f"dist(): expected floating or complex tensors, got {a.dtype}")
    return vector_norm(a - b, p)


def renorm(input, p: float, dim: int, maxnorm: float) -> Tensor:  # noqa: A002
    """Each slice along `dim` whose p-norm exceeds `maxnorm` scaled down to norm maxnorm
    (by maxnorm / (norm + 1e-7), as PyTorch), the others unchanged; as `torch.renorm`."""
    from .elementwise import where
    from .norms import vector_norm
    x = _t(input)
    if x.ndim < 2:
        raise RuntimeError(f"renorm(): input needs at least 2 dimensions, got shape {x.shape}")
    if x.dtype.kind not in "fc":
        raise RuntimeError(f"renorm(): expected a floating point tensor, got {x.dtype}")
    if not p > 0:
        raise RuntimeError(f"renorm(): p must be positive (non-positive norms are not "
                           f"supported), got p={p}")
    if not maxnorm >= 0:
        raise RuntimeError(f"renorm(): expected maxnorm >= 0, got {maxnorm}")
    if not -x.ndim <= dim < x.ndim:
        raise IndexError(f"renorm(): dim {dim} is out of range for shape {x.shape}")
    d = dim % x.ndim
    norms = vector_norm(x, p, tuple(k for k in range(x.ndim) if k != d), True)
    return x * where(norms > maxnorm, maxnorm / (norms + 1e-7), 1.0)
