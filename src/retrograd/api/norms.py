"""Normalisation and norms: `layer_norm`, `group_norm`, `batch_norm`, `instance_norm`,
`rms_norm`, `local_response_norm`, `normalize`, `norm`, `std_mean`, `var_mean`, and the
distances `cdist`, `pdist`, `pairwise_distance`, `cosine_similarity`.

`layer_norm` is one fused node (`ops.layer_norm`: normalise, scale and shift);
the other normalisations are the `standardize` op (one node for mean, variance and
scaling) followed by the affine scale and shift; the rest are compositions of
recorded ops, so every gradient, forward-mode rule and `rg.jit` replay comes
from the op table.
"""

from __future__ import annotations

import math

import numpy as np

from .. import devices, ops
from .._values import batched
from ..engine import apply
from ..grad_mode import no_grad
from ..tensor import Tensor
from ._args import _dims, _t, dim_alias, keepdim_alias
from ._errors import ArgumentError, ArgumentTypeError, DtypeError, MixedDtypeError, ShapeError
from ._fresh import fresh
from ._opmath import HALF, float16_in_float32
from .elementwise import abs as _abs
from .elementwise import clamp, sqrt, where
from .indexing import index_select
from .output_numbers import number_outputs
from .reductions import _rdims, _welford_in_double, mean, std, sum, var
from .resample import pad
from .torch_names import _into
from .windows import avg_pool2d, avg_pool3d

__all__ = ["layer_norm", "group_norm", "batch_norm", "rms_norm", "normalize", "norm",
           "vector_norm", "std_mean", "var_mean", "cdist", "cosine_similarity",
           "instance_norm", "local_response_norm", "pairwise_distance", "pdist"]


def _floating(x: Tensor, fn: str) -> None:
    if x.dtype.kind != "f":
        raise DtypeError(f"{fn}: expected a floating input, got {x.dtype}")


def check_norm_dtype(x: Tensor, dtype, fn: str) -> None:
    """PyTorch's checks of a norm's input and `dtype=`: a floating or complex input, and a
    dtype of the same kind (complex for complex input) that it converts to without
    narrowing."""
    if x.dtype.kind not in "fc":
        raise DtypeError(f"linalg.{fn}: Expected a floating point or complex tensor as input. "
                         f"Got {x.dtype}")
    if dtype is None:
        return
    d, cplx = np.dtype(dtype), x.dtype.kind == "c"
    if (d.kind == "c") != cplx:
        kind = "complex" if cplx else "real"
        raise DtypeError(f"linalg.{fn}: dtype should be {kind} for {kind} inputs, but got {d}")
    if d.kind not in "fc" or np.result_type(x.dtype, d) != d:
        raise DtypeError(f"linalg.{fn}: the dtype of the input ({x.dtype}) should be "
                         f"convertible without narrowing to the specified dtype ({d})")


def _param(p, shape: tuple, fn: str, name: str):
    """A weight or bias argument: None, or a tensor of exactly `shape`."""
    if p is None:
        return None
    p = _t(p)
    if p.shape != shape:
        raise ShapeError(f"{fn}: {name} must have shape {shape}, got {p.shape}")
    return p


def _shape_arg(normalized_shape) -> tuple:
    if isinstance(normalized_shape, (int, np.integer)):
        return (int(normalized_shape),)
    return tuple(int(s) for s in normalized_shape)


def _check_trailing(x: Tensor, shape: tuple, fn: str) -> None:
    if not shape or x.ndim < len(shape) or x.shape[x.ndim - len(shape):] != shape:
        raise ShapeError(f"{fn}: given normalized_shape={list(shape)}, expected input with "
                         f"shape [*, {', '.join(map(str, shape))}], but got input of size "
                         f"{list(x.shape)}")


def _mixed(fn: str, x: Tensor, **params) -> bool:
    """Whether the parameters' dtypes differ from the input's in the one way PyTorch's CPU
    norms allow (float16 input, float32 parameters: the result stays float16); any other
    difference raises MixedDtypeError naming the dtypes, as PyTorch refuses it."""
    odd = {k: p.dtype for k, p in params.items() if p is not None and p.dtype != x.dtype}
    if not odd:
        return False
    if x.dtype == np.float16 and all(d == np.float32 for d in odd.values()):
        return True
    raise MixedDtypeError(f"{fn}: mixed dtype: input is {x.dtype} but "
                          + ", ".join(f"{k} is {d}" for k, d in odd.items())
                          + f"; convert them to {x.dtype} (or the module: .to(dtype))")


@float16_in_float32("input", "weight", "bias", follow_input=True)
def layer_norm(input, normalized_shape, weight=None, bias=None, eps: float = 1e-5) -> Tensor:
    """Normalise over the trailing `normalized_shape` dims, then scale by `weight`, shift by
    `bias` (both of that shape, optional)."""
    x = _t(input)
    shape = _shape_arg(normalized_shape)
    _check_trailing(x, shape, "layer_norm")
    _floating(x, "layer_norm")
    w = _param(weight, shape, "layer_norm", "weight")
    b = _param(bias, shape, "layer_norm", "bias")
    axes = tuple(range(-len(shape), 0))
    if not _mixed("layer_norm", x, weight=w, bias=b):
        return apply(ops.layer_norm, x, w, b, axes=axes, eps=float(eps))
    y = apply(ops.standardize, x, axes=axes, eps=float(eps))  # float16 with float32 weights
    if w is not None:
        y = y * w
    if b is not None:
        y = y + b
    return y.to(x.dtype)


@float16_in_float32("input", "weight", follow_input=True)
def rms_norm(input, normalized_shape, weight=None, eps: float | None = None) -> Tensor:
    """x / sqrt(mean(x^2) + eps) over the trailing dims, times `weight`; `eps` defaults to the
    dtype's machine epsilon, as in PyTorch."""
    x = _t(input)
    shape = _shape_arg(normalized_shape)
    _check_trailing(x, shape, "rms_norm")
    if x.dtype.kind != "c":  # complex x as PyTorch: mean(x^2) (not |x|^2), complex rsqrt
        _floating(x, "rms_norm")
    w = _param(weight, shape, "rms_norm", "weight")
    if eps is None:
        eps = float(np.finfo(x.dtype).eps)
    axes = tuple(range(x.ndim - len(shape), x.ndim))
    y = x * apply(ops.rsqrt, mean(x * x, axes, keepdim=True) + eps)
    if w is None:
        return y
    y = y * w
    return y if y.dtype == x.dtype else y.to(x.dtype)  # PyTorch: the input's dtype


def _channel_view(p: Tensor, ndim: int) -> Tensor:
    """A (C,) parameter shaped (C, 1, ..., 1) to broadcast over (N, C, *spatial)."""
    return p.reshape((p.shape[0],) + (1,) * (ndim - 2))


@float16_in_float32("input", "weight", "bias", follow_input=True)
def group_norm(input, num_groups: int, weight=None, bias=None, eps: float = 1e-5) -> Tensor:
    """Normalise (N, C, *) over each group of C // num_groups channels (and all positions),
    then a per-channel scale and shift."""
    x = _t(input)
    _floating(x, "group_norm")
    if x.ndim < 2:
        raise ShapeError(f"group_norm: expected an input of shape (N, C, *), got {x.shape}")
    n, c = x.shape[0], x.shape[1]
    if not isinstance(num_groups, (int, np.integer)) or num_groups <= 0 or c % num_groups:
        raise ShapeError(f"group_norm: expected the number of channels in input to be "
                         f"divisible by num_groups, but got input of shape {list(x.shape)} "
                         f"and num_groups={num_groups}")
    w = _param(weight, (c,), "group_norm", "weight")
    b = _param(bias, (c,), "group_norm", "bias")
    mixed = _mixed("group_norm", x, weight=w, bias=b)
    per_group = (c // num_groups) * math.prod(x.shape[2:])  # not -1: an empty batch has none
    y = apply(ops.standardize, x.reshape(n, num_groups, per_group), axes=(-1,), eps=float(eps))
    y = y.reshape(x.shape)
    if w is not None:
        y = y * _channel_view(w, x.ndim)
    if b is not None:
        y = y + _channel_view(b, x.ndim)
    return fresh(y.to(x.dtype) if mixed else y)


def batch_norm(input, running_mean, running_var, weight=None, bias=None,
               training: bool = False, momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalise (N, C, *) per channel: over the batch in training (updating the running
    statistics in place, when given, with the unbiased variance:
    running = (1 - momentum) * running + momentum * batch), by the running statistics
    otherwise."""
    if training and eps <= 0.0:  # PyTorch's F.batch_norm refuses these (torch.batch_norm not)
        raise ArgumentError(f"batch_norm eps must be positive during training, but got {eps}")
    if eps < 0.0:
        raise ArgumentError(f"batch_norm eps must be non-negative, but got {eps}")
    return batch_norm_any_eps(input, running_mean, running_var, weight, bias, training,
                              momentum, eps)


def batch_norm_any_eps(input, running_mean, running_var, weight=None, bias=None,
                       training: bool = False, momentum: float = 0.1,
                       eps: float = 1e-5) -> Tensor:
    """`batch_norm` without F.batch_norm's eps checks: ATen's `torch.batch_norm` and
    `torch.native_batch_norm` take any eps."""
    x = _t(input)
    _floating(x, "batch_norm")
    if x.size == 0:  # PyTorch: a copy (times weight[0], plus bias[0]), statistics untouched
        y = x.clone()
        if weight is not None:
            y = y * _t(weight)[0]
        if bias is not None:
            y = y + _t(bias)[0]
        return y
    if x.ndim < 2:
        raise ShapeError(f"batch_norm: expected an input of shape (N, C, *), got {x.shape}")
    c = x.shape[1]
    rm = _param(running_mean, (c,), "batch_norm", "running_mean")
    rv = _param(running_var, (c,), "batch_norm", "running_var")
    w = _param(weight, (c,), "batch_norm", "weight")
    b = _param(bias, (c,), "batch_norm", "bias")
    mixed = _mixed("batch_norm", x, weight=w, bias=b, running_mean=rm, running_var=rv)
    if x.dtype == HALF:  # in float32, as torch's kernel (the running statistics stay as they are)
        w, b = (v if v is None or v.dtype != HALF else v.to(np.float32) for v in (w, b))
        return _batch_norm(x.to(np.float32), rm, rv, w, b, training, momentum, eps).to(HALF)
    if mixed:
        return _batch_norm(x, rm, rv, w, b, training, momentum, eps).to(x.dtype)
    return _batch_norm(x, rm, rv, w, b, training, momentum, eps)


def _batch_norm(x, rm, rv, w, b, training, momentum, eps) -> Tensor:
    c = x.shape[1]
    if training:
        count = x.size // c if c else 0
        if count <= 1:
            raise ArgumentError(f"batch_norm: expected more than 1 value per channel when "
                                f"training, got input of size {list(x.shape)}")
        axes = tuple(a - x.ndim for a in range(x.ndim) if a != 1)
        y = apply(ops.standardize, x, axes=axes, eps=float(eps), **_zero_rstd(eps))
        if rm is not None or rv is not None:
            if batched(x, rm, rv):
                raise RuntimeError(
                    "rg.func.vmap: batch_norm in training mode updates running_mean and "
                    "running_var in-place with statistics that differ per batch element, "
                    "which vmap cannot batch; pass running_mean=None and running_var=None (a "
                    "layer: track_running_stats=False), or use eval mode")
            _update_running(x, rm, rv, momentum, count)
    else:
        if rm is None or rv is None:
            raise ArgumentError("batch_norm: running_mean and running_var are needed when not "
                                "training")
        scale = apply(ops.rsqrt, rv + eps)
        if w is not None:
            scale = scale * w
        shift = -rm * scale
        if b is not None:
            shift = shift + b
        return x * _channel_view(scale, x.ndim) + _channel_view(shift, x.ndim)
    if w is not None:
        y = y * _channel_view(w, x.ndim)
    if b is not None:
        y = y + _channel_view(b, x.ndim)
    return y


def _zero_rstd(eps) -> dict:
    """The batch-norm kernel's attribute for `ops.standardize`: with eps <= 0 a constant
    channel gives 0 (and a zero gradient), as PyTorch's, not NaN; otherwise none, so the
    common case's node is the plain one."""
    return {"zero": True} if eps <= 0 else {}


def _update_running(x: Tensor, rm, rv, momentum, count: int) -> None:
    """running = (1 - momentum) * running + momentum * batch statistic, in place (tensor ops,
    so `rg.jit` replays the update)."""
    dims = tuple(a for a in range(x.ndim) if a != 1)
    f = momentum if isinstance(momentum, Tensor) else float(momentum)
    keep = 1.0 - f

    def to(v, dtype):  # a 0-d float64 tensor rounds to `dtype` as a Python float would
        return v.to(dtype) if isinstance(v, Tensor) else v

    with no_grad():
        xd = x.detach()
        if rm is not None:
            rm.mul_(to(keep, rm.dtype))
            rm.add_(mean(xd, dims) * to(f, x.dtype))
        if rv is not None:
            rv.mul_(to(keep, rv.dtype))
            rv.add_(var(xd, dims, correction=1) * to(f, x.dtype))


def _p_arg(p, fn: str) -> float:
    if p == "fro":
        return 2.0
    if isinstance(p, str):
        raise ArgumentError(f"{fn}: p={p!r} is not supported here (vector norms only: a number, "
                            "inf or 'fro')")
    return float(p)


@float16_in_float32("x")
def vector_norm(x, ord=2, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:  # noqa: A002
    """(sum |x|^ord)^(1/ord) over `dim` (all by default), for negative ord too; ord inf/-inf
    are max/min |x|, ord 0 counts non-zeros. The gradient at a zero vector is 0, as in PyTorch.
    Complex input gives the real norm of its moduli."""
    x = _t(x)
    check_norm_dtype(x, dtype, "vector_norm")
    if dtype is not None:
        x = x.to(dtype)
    if x.dtype.kind == "c":  # the norm of the moduli, a real number (as PyTorch)
        x = _abs(x)
    p = _p_arg(ord, "norm")
    if isinstance(dim, (tuple, list)) and not dim:
        dim = None  # PyTorch: an empty dim list reduces every dimension, as sum's does
    ax = _dims(dim, None, x.ndim, "norm")
    if x.ndim == 0:
        ax = None
    if p in (math.inf, -math.inf):  # ties share the gradient equally, as in PyTorch
        empty = [a for a in (range(x.ndim) if ax is None else
                             ax if isinstance(ax, tuple) else (ax,)) if x.shape[a] == 0]
        if empty:
            raise ArgumentError(f"linalg.vector_norm cannot compute the {ord} norm on the "
                                f"dimension {empty[0]} because this dimension is empty and "
                                f"the operation does not have an identity (shape {x.shape})")
        return apply(ops.max if p > 0 else ops.min, _abs(x), axis=ax, keepdims=bool(keepdim))
    if p == 0:
        count = sum((x != 0).to(x.dtype), ax, keepdim)
        if not x.requires_grad:
            return count
        # PyTorch's count is recorded (requires_grad, a grad_fn) but its backward returns
        # no gradient (undefined, not zeros): `.grad` stays None, autograd.grad calls x
        # unused. A recorded zeros_like of x (no vjp rule) does the same here.
        return count + sum(apply(ops.zeros_like, x), ax, keepdim)
    if p < 0:  # (sum |x|^p)^(1/p), a "norm" PyTorch computes too (0 where any x is 0)
        reduced = range(x.ndim) if ax is None else ax if isinstance(ax, tuple) else (ax,)
        if any(x.shape[a] == 0 for a in reduced):
            raise ArgumentError(f"linalg.vector_norm cannot compute the {ord} norm on an "
                                f"empty dimension (shape {x.shape}): it has no identity")
        a = _abs(x)
        zero = a == 0
        r = sum(where(zero, 1.0, a) ** p, ax, keepdim) ** (1.0 / p)
        return where(sum(zero.to(x.dtype), ax, keepdim) > 0, 0.0, r)  # zero gradient there
    if p == 1:
        return sum(_abs(x), ax, keepdim)
    return apply(ops.pnorm, x, p=p, axis=ax, keepdims=bool(keepdim))


MATRIX_NORM: list = [None]
"""`rg.linalg.matrix_norm`, set when rg.linalg is imported (it imports this module, so
this one cannot import it)."""


def norm(input, p="fro", dim=None, keepdim: bool = False, dtype=None) -> Tensor:
    """PyTorch's `torch.norm`: `p` a number, inf or 'fro' (= 2) over `dim` is a vector norm;
    'nuc' (or 'fro' over more than two dims) goes to `rg.linalg.matrix_norm` over `dim`
    (every dim by default), which takes exactly two, as torch."""
    if isinstance(p, str) and not (p == "fro" and (dim is None or isinstance(dim, int)
                                                   or len(dim) <= 2)):
        matrix_norm = MATRIX_NORM[0]  # rg.linalg's, which builds on this module
        x = _t(input)
        dims = tuple(range(x.ndim)) if dim is None else dim
        if isinstance(dims, int) or len(dims) != 2:
            raise ArgumentError(f"linalg.matrix_norm: dim must be a 2-tuple, got {dims}")
        return matrix_norm(x, p, tuple(dims), keepdim, dtype=dtype)
    return _vector_norm16(input, p, dim, keepdim, dtype=dtype)


@float16_in_float32("input")
def _vector_norm16(input, p="fro", dim=None, keepdim: bool = False, dtype=None) -> Tensor:
    return vector_norm(input, p, dim, keepdim, dtype=dtype)


@float16_in_float32("input")
def var_mean(input, dim=None, unbiased=None, keepdim: bool = False, *, correction=None,
             axis=None, keepdims=None) -> tuple:
    """(var, mean) over `dim`, as `torch.var_mean` (Bessel's correction by default; its
    positional overloads: var_mean(x, dim, unbiased, keepdim), var_mean(x, unbiased))."""
    x = _t(input)
    dim = dim_alias(dim, axis, "var_mean")
    keepdim = keepdim_alias(keepdim, keepdims, "var_mean")
    if isinstance(dim, bool):
        dim, unbiased = None, dim
    if _welford_in_double(x, _rdims(dim, None, x.ndim, "var_mean"), single=True):
        # both from torch's double Welford, rounded once
        v, m = var_mean(x.to(np.float64), dim, unbiased, keepdim, correction=correction)
        return number_outputs((v.to(np.float32), m.to(np.float32)))
    return number_outputs((var(x, dim, unbiased, keepdim, correction=correction),
                           mean(x, dim, keepdim)))


@float16_in_float32("input")
def std_mean(input, dim=None, unbiased=None, keepdim: bool = False, *, correction=None,
             axis=None, keepdims=None) -> tuple:
    """(std, mean) over `dim`, as `torch.std_mean`; the std part is `std`'s, so where it
    is 0 (constant data) its gradient is 0, as in PyTorch."""
    x = _t(input)
    d = dim_alias(dim, axis, "std_mean")
    if not isinstance(d, bool) and _welford_in_double(x, _rdims(d, None, x.ndim, "std_mean"),
                                                      single=True):
        s, m = std_mean(x.to(np.float64), dim, unbiased, keepdim, correction=correction,
                        axis=axis, keepdims=keepdims)
        # the root rounded once, as torch's
        return number_outputs((s.to(np.float32), m.to(np.float32)))
    keepdim = keepdim_alias(keepdim, keepdims, "std_mean")
    if isinstance(d, bool):
        d, unbiased = None, d
    return number_outputs((std(x, d, unbiased, keepdim, correction=correction),
                           mean(x, d, keepdim)))


@float16_in_float32("input")
def normalize(input, p: float = 2.0, dim: int = 1, eps: float = 1e-12, out=None) -> Tensor:
    """x / max(||x||_p, eps) along `dim`; with `out`, written there as torch's
    `torch.div(input, denom, out=out)` (so refused for inputs that require grad)."""
    x = _t(input)
    return _into("normalize", x / clamp(vector_norm(x, p, dim, keepdim=True), min=eps), out)


def _clamped_norm(x: Tensor, d: int, eps: float) -> Tensor:
    """||x|| along `d` (kept), at least `eps`; as PyTorch clamps it without recording the
    clamp, the gradient flows through the norm even where the clamp holds."""
    n = vector_norm(x, 2, d, keepdim=True)
    nd = n.detach()
    return where(nd < eps, (n - nd) + eps, n)


@float16_in_float32("x1", "x2")
def cosine_similarity(x1, x2, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """sum(x1 / max(||x1||, eps) * x2 / max(||x2||, eps)) along `dim` (broadcast first).
    Like `torch.nn.functional.cosine_similarity`."""
    a, b = _t(x1), _t(x2)
    try:
        shape = np.broadcast_shapes(a.shape, b.shape)
    except ValueError:
        raise ShapeError(f"cosine_similarity: x1 of shape {a.shape} and x2 of shape {b.shape} "
                         "do not broadcast") from None
    dt = np.result_type(a.dtype, b.dtype)
    if dt.kind != "f":
        raise DtypeError(f"cosine_similarity: expected floating inputs, got {a.dtype} and "
                         f"{b.dtype}")
    d = _dims(dim, None, len(shape), "cosine_similarity")
    a, b = (t if t.dtype == dt else t.to(dt) for t in (a, b))
    if a.shape != shape:
        a = a.expand(shape)
    if b.shape != shape:
        b = b.expand(shape)
    return sum((a / _clamped_norm(a, d, eps)) * (b / _clamped_norm(b, d, eps)), d)


@float16_in_float32("x1", "x2")
def pairwise_distance(x1, x2, p: float = 2.0, eps: float = 1e-6,
                      keepdim: bool = False) -> Tensor:
    """The p-norm of x1 - x2 + eps along the last dimension (broadcast first). Like
    `torch.nn.functional.pairwise_distance`."""
    a, b = _t(x1), _t(x2)
    try:
        np.broadcast_shapes(a.shape, b.shape)
    except ValueError:
        raise ShapeError(f"pairwise_distance: x1 of shape {a.shape} and x2 of shape "
                         f"{b.shape} do not broadcast") from None
    return vector_norm(a - b + eps, p, -1, keepdim)


def _count_with_zero_gradient(diff: Tensor) -> Tensor:
    """The number of nonzero coordinates of each row of `diff`, with a zero gradient: the
    0-"distance" of pdist and cdist, whose backward in PyTorch gives zeros (vector_norm's
    0-norm gives none)."""
    count = sum((diff.detach() != 0).to(diff.dtype), -1)
    if not diff.requires_grad:
        return count
    never = apply(ops.zeros_like, diff.detach()) != 0
    return count + sum(where(never, diff, 0.0), -1)


def pdist(input, p: float = 2.0) -> Tensor:
    """The p-norm distance between every pair of rows of a 2-D input (N, M): the upper
    triangle of `cdist(input, input)` row by row, N * (N - 1) / 2 values. Like
    `torch.nn.functional.pdist` (a zero distance has a zero gradient; for p = inf every
    tied coordinate gets the full gradient, as PyTorch's backward gives it)."""
    x = _t(input)
    if x.ndim != 2:
        raise ShapeError(f"pdist: only supports 2-D tensors (N, M), got shape {x.shape}")
    if x.dtype.kind != "f" or x.dtype == HALF:  # PyTorch: "not implemented for 'Half'"
        raise DtypeError(f"pdist: only supports floating-point dtypes float32 and float64, "
                         f"got {x.dtype}")
    if not p >= 0:
        raise ArgumentError(f"pdist: only supports non-negative p values, got {p}")
    i, j = np.triu_indices(x.shape[0], 1)
    rows = (Tensor(devices.const_like(k.astype(np.int64), x.data)) for k in (i, j))
    diff = index_select(x, 0, next(rows)) - index_select(x, 0, next(rows))
    if p == 0:
        return _count_with_zero_gradient(diff)
    if p != math.inf:
        return vector_norm(diff, p, -1)
    mag = _abs(diff)
    dist = apply(ops.max, mag.detach(), axis=-1, keepdims=True) if diff.shape[-1] else \
        sum(mag.detach(), -1, keepdim=True)
    tied = (mag.detach() == dist).to(x.dtype)
    return (dist + sum((mag - mag.detach()) * tied, -1, keepdim=True)).reshape(-1)


_CDIST_MODES = ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist",
                "donot_use_mm_for_euclid_dist")


def cdist(x1, x2, p: float = 2.0,
          compute_mode: str = "use_mm_for_euclid_dist_if_necessary") -> Tensor:
    """Pairwise p-norm distances between the rows of x1 (..., P, M) and x2 (..., R, M):
    (..., P, R). The gradient at a zero distance is 0, as in PyTorch. For p = 2 with more
    than 25 rows on either side (or `compute_mode='use_mm_for_euclid_dist'`) the distances
    come from one product, |a|^2 - 2 a.b + |b|^2, as PyTorch computes them: faster, and
    with PyTorch's rounding (less accurate for near points)."""
    if compute_mode not in _CDIST_MODES:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    a, b = _t(x1), _t(x2)
    if a.ndim < 2 or b.ndim < 2 or a.shape[-1] != b.shape[-1]:
        raise ArgumentError(f"cdist: x1 (..., P, M) and x2 (..., R, M) need at least 2 dims and "
                            f"the same M; got shapes {a.shape} and {b.shape}")
    for x, name in ((a, "X1"), (b, "X2")):
        if x.dtype.kind not in "fc":
            raise ArgumentTypeError(f"cdist only supports floating-point dtypes, {name} got: "
                                    f"{x.dtype}")
    if a.dtype != b.dtype:  # torch refuses the mix rather than promote
        raise MixedDtypeError(f"cdist: x1 is {a.dtype} but x2 is {b.dtype}; convert one with "
                              ".to(dtype)")
    if p < 0:
        raise ArgumentError(f"cdist: p must be non-negative, got {p}")
    if a.shape[-1] == 0 or a.shape[-2] == 0 or b.shape[-2] == 0:
        # no features: every distance is 0, for every p (as torch)
        return _abs(a.unsqueeze(-2) - b.unsqueeze(-3)).sum(-1)
    mode = _CDIST_MODES.index(compute_mode)
    if p == 2 and (mode == 1 or (mode == 0 and (a.shape[-2] > 25 or b.shape[-2] > 25))):
        return _euclidean_by_product(a, b)
    if p == math.inf:
        return _chebyshev(a, b)
    diff = a.unsqueeze(-2) - b.unsqueeze(-3)
    if p == 0:  # torch's kernel sums min(ceil(|d|), 1): a NaN coordinate makes it NaN
        return where(diff.detach().isnan().any(-1), math.nan, _count_with_zero_gradient(diff))
    return vector_norm(diff, p, -1)


def _chebyshev(a: Tensor, b: Tensor) -> Tensor:
    """cdist for p = inf with PyTorch's gradient: every coordinate tied for the largest
    |difference| gets the whole gradient (amax would split it among them); none at a finite
    zero distance, nor at an infinite or NaN one. A NaN coordinate is skipped, as by
    torch's running max."""
    d = _abs(a.unsqueeze(-2) - b.unsqueeze(-3))
    d = where(d.detach().isnan(), 0.0, d)  # torch's running max skips NaN (from 0)
    top = d.detach().amax(-1, keepdim=True)
    tie = (d.detach() == top) & top.isfinite()  # recorded ops, so rg.jit and vmap see them
    return (top + sum(where(tie, d - top, 0.0), -1, keepdim=True)).squeeze(-1)


def _euclidean_by_product(a: Tensor, b: Tensor) -> Tensor:
    """sqrt(max(|a|^2 - 2 a.b + |b|^2, 0)) from one (padded) product, PyTorch's terms in its
    order; the gradient at a zero distance is 0."""
    na, nb = sum(a * a, -1, keepdim=True), sum(b * b, -1, keepdim=True)
    ones_a, ones_b = Tensor(np.ones(na.shape, na.dtype)), Tensor(np.ones(nb.shape, nb.dtype))
    left = apply(ops.cat, a * -2.0, na, ones_a, axis=-1)
    right = apply(ops.cat, b, ones_b, nb, axis=-1)
    sq = left @ right.mT
    positive = sq > 0
    return where(positive, sqrt(where(positive, sq, 1.0)), 0.0)


# ---------------------------------------------------------------- instance and response norms

def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,
                  use_input_stats: bool = True, momentum: float = 0.1,
                  eps: float = 1e-5) -> Tensor:
    """Normalise each (sample, channel) of (N, C, *) over its positions, then a per-channel
    scale and shift. With `use_input_stats` the running statistics, when given, move
    towards the batch's average instance mean and (unbiased) variance, in place; without
    it they normalise instead. Like `torch.nn.functional.instance_norm`."""
    x = _t(input)
    _floating(x, "instance_norm")
    if x.ndim < 2:
        raise ShapeError(f"instance_norm: expected an input of shape (N, C, *), got {x.shape}")
    c = x.shape[1]
    rm = _param(running_mean, (c,), "instance_norm", "running_mean")
    rv = _param(running_var, (c,), "instance_norm", "running_var")
    w = _param(weight, (c,), "instance_norm", "weight")
    b = _param(bias, (c,), "instance_norm", "bias")
    if x.dtype == HALF:  # in float32, as torch's kernel (the running statistics stay as they are)
        _mixed("instance_norm", x, weight=w, bias=b, running_mean=rm, running_var=rv)
        x32 = x.to(np.float32)
        w, b = (None if v is None else v.to(np.float32) for v in (w, b))
        if not use_input_stats:
            rm, rv = (None if v is None else v.to(np.float32) for v in (rm, rv))
            return instance_norm(x32, rm, rv, w, b, False, momentum, eps).to(HALF)
        y = instance_norm(x32, None, None, w, b, True, momentum, eps)
        if (rm is not None or rv is not None) and _updates_stats(x):
            _update_instance_stats(x32, rm, rv, momentum, tuple(range(2 - x.ndim, 0)))
        return y.to(HALF)
    # running statistics of another floating dtype are taken, as PyTorch's (which copies
    # them): they normalise in x's dtype and are updated in their own
    _mixed("instance_norm", x, weight=w, bias=b)
    spatial = tuple(range(2 - x.ndim, 0))
    if use_input_stats:
        if math.prod(x.shape[2:]) == 1:
            raise ArgumentError(f"instance_norm: expected more than 1 spatial element when "
                                f"training, got input of size {list(x.shape)}")
        y = apply(ops.standardize, x, axes=spatial, eps=float(eps), **_zero_rstd(eps))
        if (rm is not None or rv is not None) and _updates_stats(x):
            if batched(x, rm, rv):
                raise RuntimeError(
                    "rg.func.vmap: instance_norm with use_input_stats updates running_mean and "
                    "running_var in-place with statistics that differ per batch element, "
                    "which vmap cannot batch; pass running_mean=None and running_var=None (a "
                    "layer: track_running_stats=False), or use eval mode")
            _update_instance_stats(x, rm, rv, momentum, spatial)
    else:
        if rm is None or rv is None:
            raise ArgumentError("instance_norm: expected running_mean and running_var to be "
                                "defined when use_input_stats is false")
        rm, rv = rm.to(x.dtype), rv.to(x.dtype)
        y = (x - _channel_view(rm, x.ndim)) * _channel_view(apply(ops.rsqrt, rv + eps), x.ndim)
    if w is not None:
        y = y * _channel_view(w, x.ndim)
    if b is not None:
        y = y + _channel_view(b, x.ndim)
    return y


def _updates_stats(x: Tensor) -> bool:
    """Whether PyTorch's instance_norm moves the running statistics: not for empty instances
    of a non-empty batch (its batch norm skips an empty input); an empty batch does, to
    NaN (the mean over no instances), in PyTorch as here."""
    return bool(x.size) or x.shape[0] == 0


def _update_instance_stats(x: Tensor, rm, rv, momentum, spatial: tuple) -> None:
    """running = (1 - momentum) * running + momentum * (the batch's mean of the instance
    statistics), in place, as PyTorch (which runs batch norm on (1, N * C, *) and averages
    the N updated copies)."""
    f = float(momentum)
    with no_grad():
        xd = x.detach()
        if rm is not None:
            rm.mul_(1.0 - f)
            rm.add_((mean(mean(xd, spatial), 0) * f).to(rm.dtype))
        if rv is not None:
            rv.mul_(1.0 - f)
            rv.add_((mean(var(xd, spatial, correction=1), 0) * f).to(rv.dtype))


def local_response_norm(input, size: int, alpha: float = 1e-4, beta: float = 0.75,
                        k: float = 1.0) -> Tensor:
    """x / (k + alpha * mean of x^2 over `size` neighbouring channels)^beta, the window
    zero-padded at the channel ends (size // 2 before, (size - 1) // 2 after), for
    (N, C, *) inputs. Like `torch.nn.functional.local_response_norm`; an int64 input
    averages its squares with integer division, as torch's, and gives the default float."""
    x = _t(input)
    if x.ndim < 3:
        raise ShapeError(f"local_response_norm: expected 3D or higher dimensionality input "
                         f"(N, C, *), got {x.ndim} dimensions (shape {x.shape})")
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size <= 0:
        raise ArgumentError(f"local_response_norm: size must be a positive int, got {size!r}")
    if x.size == 0:
        return x
    if x.dtype.kind != "f" and x.dtype != np.int64:  # torch's avg_pool takes int64 too
        raise DtypeError(f"local_response_norm: expected a floating or int64 input, got "
                         f"{x.dtype} (convert with .float())")
    sq = x * x
    before, after = size // 2, (size - 1) // 2
    if x.ndim == 3:
        div = pad(sq.unsqueeze(1), (0, 0, before, after))
        div = avg_pool2d(div, (size, 1), stride=1).squeeze(1)
    else:
        n, c = x.shape[:2]
        div = pad(sq.reshape(n, 1, c, x.shape[2], -1), (0, 0, 0, 0, before, after))
        div = avg_pool3d(div, (size, 1, 1), stride=1).squeeze(1).reshape(x.shape)
    return x / (div * alpha + k) ** beta
