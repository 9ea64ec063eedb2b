"""`rg.nn.functional`: the stateless layers and losses, PyTorch's names and semantics.

Everything here is built from ops in the op table, so gradients (and higher
derivatives) come for free. Two hot paths have an op of their own because a
composition would cost several graph nodes per call: `linear` (x @ W.T + b)
and `cross_entropy` on plain class indices (log-softmax, pick and reduce in
one node). Less common cases (class weights, `ignore_index`, extra dimensions,
probability targets) are composed from primitives.
"""

from __future__ import annotations

import numpy as np

from .. import api as _f
from .. import ops
from .._values import every_value
from ..api._args import broadcasts_into
from ..api._args import promote as _promote
from ..api._errors import MixedDtypeError, ShapeError
from ..api.activations import (
    _implicit_dim,
    celu,
    elu,
    gelu,
    glu,
    hardsigmoid,
    hardswish,
    hardtanh,
    leaky_relu,
    logsigmoid,
    mish,
    relu6,
    selu,
    silu,
    softmin,
    softplus,
    softsign,
    tanhshrink,
    threshold,
)
from ..api.attention import scaled_dot_product_attention
from ..api.grid import affine_grid, grid_sample
from ..api.resample import interpolate, pad, pixel_shuffle, pixel_unshuffle, upsample
from ..api.windows import (
    adaptive_avg_pool1d,
    adaptive_avg_pool2d,
    adaptive_avg_pool3d,
    adaptive_max_pool1d,
    adaptive_max_pool2d,
    avg_pool1d,
    avg_pool2d,
    avg_pool3d,
    conv1d,
    conv2d,
    conv3d,
    conv_transpose1d,
    conv_transpose2d,
    conv_transpose3d,
    max_pool1d,
    max_pool2d,
    max_pool3d,
    max_unpool1d,
    max_unpool2d,
    max_unpool3d,
)
from ..engine import apply
from ..grad_mode import state
from ..primitive import ArgumentError, DtypeError
from ..tensor import Tensor, as_tensor

__all__ = [
    "linear", "relu", "tanh", "sigmoid", "softmax", "log_softmax", "cross_entropy", "nll_loss",
    "mse_loss", "binary_cross_entropy_with_logits", "conv2d", "max_pool2d", "avg_pool2d",
    "dropout",
]
__all__ += [  # activations
    "celu", "elu", "gelu", "glu", "hardsigmoid", "hardswish", "hardtanh", "leaky_relu",
    "logsigmoid", "mish", "relu6", "selu", "silu", "softmin", "softplus", "softsign",
    "tanhshrink", "threshold"
]

__all__ += [  # convolution, pooling, padding, resampling, attention
    "conv1d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
    "max_pool1d", "max_pool3d", "avg_pool1d", "avg_pool3d", "max_unpool1d", "max_unpool2d",
    "max_unpool3d", "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d",
    "adaptive_max_pool1d", "adaptive_max_pool2d", "pad", "interpolate", "upsample",
    "pixel_shuffle", "pixel_unshuffle", "scaled_dot_product_attention",
]
__all__ += ["grid_sample", "affine_grid"]  # sampling grids

_REDUCTIONS = ("mean", "sum", "none")


def _t(x) -> Tensor:
    return x if isinstance(x, Tensor) else as_tensor(x)


def _check_reduction(reduction: str, name: str) -> None:
    if reduction not in _REDUCTIONS:
        raise ArgumentError(f"{name}: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")


# ---------------------------------------------------------------- layers

def linear(input, weight, bias=None) -> Tensor:
    """`input @ weight.T + bias`, with PyTorch's weight layout (out_features, in_features)."""
    if state.flops is not None:
        return state.flops.run("linear", linear, input, weight, bias)
    x, w = _t(input), _t(weight)
    if w.ndim != 2 and not (w.ndim == 1 and bias is None):  # PyTorch: a 1-d weight is a
        raise ShapeError(f"linear: weight must be 2-D (out_features, in_features), got "  # dot
                         f"shape {w.shape}" + (" (a 1-D weight only without bias)"
                                               if w.ndim == 1 else ""))
    if x.ndim == 0 or x.shape[-1] != w.shape[-1]:
        raise ShapeError(f"linear: input of shape {x.shape} does not fit weight of shape "
                         f"{w.shape} (expected last dimension {w.shape[-1]})")
    if bias is not None:
        bias = _t(bias)
    if x.dtype != w.dtype or (bias is not None and bias.dtype != w.dtype):
        raise MixedDtypeError(
            f"linear: expected input, weight and bias of one dtype, but got input {x.dtype}, "
            f"weight {w.dtype}" + ("" if bias is None else f", bias {bias.dtype}")
            + " (as PyTorch, no promotion here: convert the input or the layer, .to(dtype))")
    if w.ndim == 1:
        return _f.matmul(x, w)
    if bias is not None and bias.shape != (w.shape[0],):
        out = x.shape[:-1] + (w.shape[0],)  # PyTorch adds any bias that broadcasts to the
        if not broadcasts_into(bias.shape, out):  # output without enlarging it
            raise ShapeError(f"linear: bias of shape {bias.shape} does not broadcast to the "
                             f"output's shape {out} (expected ({w.shape[0]},))")
        return apply(ops.linear, x, w, None) + bias
    return apply(ops.linear, x, w, bias)


def relu(input, inplace: bool = False) -> Tensor:
    """max(x, 0) element-wise (written into `input` with `inplace`). Like
    `torch.nn.functional.relu`."""
    return relu_(input) if inplace else _f.relu(input)


def tanh(input) -> Tensor:
    """Hyperbolic tangent element-wise. Like `torch.nn.functional.tanh`."""
    return _f.tanh(input)


def sigmoid(input) -> Tensor:
    """The logistic function element-wise. Like `torch.nn.functional.sigmoid`."""
    return _f.sigmoid(input)


def _softmax_args(input, dim, dtype, name: str) -> tuple:
    """The input (cast to `dtype` first, as PyTorch does) and the dim; no dim is PyTorch's
    deprecated implicit choice (0 for 0-, 1- and 3-D inputs, else 1), with its warning."""
    x = _t(input)
    if dtype is not None:
        x = x.to(dtype)
    return x, _implicit_dim(x.ndim, name) if dim is None else dim


def softmax(input, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:
    """Softmax along `dim` (computed in `dtype` when given). Like
    `torch.nn.functional.softmax`."""
    return _f.softmax(*_softmax_args(input, dim, dtype, "softmax"))


def log_softmax(input, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:
    """log(softmax(x)) along `dim`, computed stably. Like
    `torch.nn.functional.log_softmax`; with `nll_loss` it makes `cross_entropy`."""
    return _f.log_softmax(*_softmax_args(input, dim, dtype, "log_softmax"))


# ---------------------------------------------------------------- losses

def _reduce(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return _f.mean(loss)
    if reduction == "sum":
        return _f.sum(loss)
    return loss


import math  # noqa: E402
import warnings  # noqa: E402

from ..api import torch_losses as _torch_losses  # noqa: E402
from ..api._loss_args import (  # noqa: E402
    LossShapeError,
    LossValueError,
    check_reduction,
    float_pair,
    legacy_reduction,
)
from ..api.torch_losses import LossTargetDtypeError  # noqa: E402


def mse_loss(input, target, size_average=None, reduce=None, reduction: str = "mean",
             weight=None) -> Tensor:
    """Mean squared error; where `input` and `target` differ in shape, PyTorch's warning
    and the loss over their broadcast shape. With `weight` (the input's shape), 'mean' is
    sum(w d^2) / sum(w), as in PyTorch. Like `torch.nn.functional.mse_loss`."""
    fn = "mse_loss"
    reduction = check_reduction(legacy_reduction(size_average, reduce, reduction), fn)
    x, y = float_pair(input, target, fn)
    d = x - y
    loss = d * d
    if weight is None:
        return _reduce(loss, reduction)
    w = _t(weight)
    if w.shape != x.shape:
        raise ArgumentError(f"{fn}: weight of shape {tuple(w.shape)} and input of shape "
                            f"{tuple(x.shape)}: weights and input must have the same size")
    loss = loss * w
    return _f.sum(loss) / _f.sum(w) if reduction == "mean" else _reduce(loss, reduction)


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None,
                                     reduce=None, reduction: str = "mean",
                                     pos_weight=None) -> Tensor:
    """Sigmoid and binary cross-entropy in one numerically stable expression:
    (1 - t) x - (1 + (pos_weight - 1) t) log sigmoid(x), times `weight`. `target` must
    have the input's shape; `weight` and `pos_weight` broadcast to it. Like
    `torch.nn.functional.binary_cross_entropy_with_logits` (it shares
    `rg.binary_cross_entropy_with_logits`)."""
    fn = "binary_cross_entropy_with_logits"
    reduction = check_reduction(legacy_reduction(size_average, reduce, reduction), fn)
    x, t = _t(input), _t(target)
    if x.shape != t.shape:
        raise ArgumentError(f"{fn}: target of shape {tuple(t.shape)} must have the same shape as "
                            f"input {tuple(x.shape)}")
    return _torch_losses.binary_cross_entropy_with_logits(x, t, weight, pos_weight, reduction)


def _class_targets(x: Tensor, target: Tensor, name: str, ignore_index: int) -> Tensor:
    """Check integer class targets for (N, C, ...) scores: dtype, shape and (outside
    rg.jit, where the values are an example) the range, ignore_index allowed."""
    y = target.data
    want = (x.shape[0],) + x.shape[2:]
    _same_batch(x, target)
    if y.dtype.kind in "iu" and y.dtype != np.int64 and not (y.dtype == np.uint8 and x.ndim <= 2):
        raise LossTargetDtypeError(  # PyTorch takes int64 (and uint8 for (N, C) inputs) only
            f"{name}: expected target dtype to be int64 (Long), but got {y.dtype}; convert it "
            f"with target.long()")
    if y.dtype.kind not in "iu":
        raise LossTargetDtypeError(
            f"{name}: target must hold integer class indices (int64), got dtype {y.dtype}; for "
            f"class probabilities pass a float target of the input's shape {x.shape}"
            if name == "cross_entropy" else
            f"{name}: target must hold integer class indices (int64), got dtype {y.dtype}")
    if y.shape != want:
        raise ArgumentError(f"{name}: target of shape {y.shape} does not fit input of shape "
                            f"{x.shape}; expected class indices of shape {want}")
    n_classes = x.shape[1]
    y = every_value(target)  # under rg.func.vmap: every batch element's targets
    if state.tracer is None and y.size and (y.min() < 0 or y.max() >= n_classes):
        bad = ((y < 0) | (y >= n_classes)) & (y != ignore_index)
        if bad.any():
            v = int(y[bad].flat[0])
            raise IndexError(f"{name}: target {v} is out of bounds: the input has "
                             f"{n_classes} classes, so targets must be in "
                             f"[0, {n_classes - 1}] (or ignore_index={ignore_index})")
    return target


def _same_batch(x: Tensor, target: Tensor) -> None:
    """PyTorch's first check of class targets (before their dtype): as many as the input's
    batch, else ValueError."""
    if target.ndim and target.shape[0] != x.shape[0]:
        raise LossShapeError(f"target of shape {target.shape} does not fit input of shape "
                             f"{x.shape}: Expected input batch_size ({x.shape[0]}) to match "
                             f"target batch_size ({target.shape[0]}) (class indices of shape "
                             f"{(x.shape[0],) + x.shape[2:]})")


def _classes_last(x: Tensor) -> Tensor:
    """(N, C, d1, ...) -> (N * d1 * ..., C)."""
    if x.ndim == 2:
        return x
    perm = (0,) + tuple(range(2, x.ndim)) + (1,)
    return _f.reshape(_f.permute(x, perm), -1, x.shape[1])


def _one_class_index(target: Tensor, name: str) -> Tensor:
    """The class index of an unbatched (C,) input: PyTorch takes it 0-d or as a 1-D
    target of one element (read as the 0-d one); a longer 1-D target is a ValueError."""
    if target.ndim != 1:
        return target
    if target.shape[0] != 1:
        raise ArgumentError(f"{name}: For 1D input, 1D target must have size 1, but got "
                            f"target size: {target.shape[0]}")
    return _f.reshape(target, ())


def _unbatched(x: Tensor, target: Tensor) -> tuple:
    """A (C,) input and its target given a batch dimension of 1 (ops: the target's
    gradient, for probabilities, comes back through them)."""
    return _f.unsqueeze(x, 0), _f.unsqueeze(target, 0)


def nll_loss(input, target, weight=None, size_average=None, ignore_index: int = -100,
             reduce=None, reduction: str = "mean") -> Tensor:
    """Negative log-likelihood of log-probabilities `input` (N, C, ...) at class `target`.
    Like `torch.nn.functional.nll_loss`."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction, "nll_loss")
    x, target = _t(input), _t(target)
    if x.dtype.kind != "f":  # PyTorch: NotImplementedError ("not implemented for 'Long'")
        raise DtypeError(f"nll_loss: input must hold real floating log-probabilities, got "
                         f"{x.dtype}")
    if x.ndim == 1:  # unbatched (C,) with a 0-d target
        target = _one_class_index(target, "nll_loss")
        out = nll_loss(*_unbatched(x, target), weight, ignore_index=ignore_index,
                       reduction=reduction)
        return _f.reshape(out, ()) if reduction == "none" else out
    if x.ndim < 2:
        raise ArgumentError(f"nll_loss: input must have shape (N, C) or (N, C, d1, ...), got "
                            f"{x.shape}")
    y = _class_targets(x, target, "nll_loss", ignore_index)
    lp2 = _classes_last(x)
    loss, w = _picked(lp2, _f.reshape(y, -1), weight, ignore_index)
    return _weighted_reduce(loss, w, reduction, y.shape)


def _class_weight(weight, n_classes: int, dtype) -> Tensor:
    w = _t(weight)
    if w.shape != (n_classes,):
        raise LossShapeError(f"weight must have shape ({n_classes},) (one per class), got "
                             f"{w.shape}")
    if w.dtype != dtype:  # torch: "expected scalar type Double but found Float"
        raise MixedDtypeError(f"weight of dtype {w.dtype} for an input of dtype {dtype}: "
                              "convert it with .to(input.dtype)")
    return w


def _picked(lp2: Tensor, y: Tensor, weight, ignore_index: int) -> tuple:
    """Per-sample -w_n * lp2[n, y_n] for (M, C) log-probabilities and (M,) targets, and
    the weights w_n (the class weight, 0 where the target is ignored). Ops on the
    targets throughout (no NumPy on their values), so rg.jit replays them per call."""
    valid = y != ignore_index
    yi = _f.where(valid, y, 0)
    # gathered, not summed against a one-hot: -inf or nan in another class (a masked
    # logit, a zero probability) must not reach the sample (0 * -inf is nan)
    picked = _f.reshape(_f.gather(lp2, 1, _f.reshape(yi, (-1, 1))), (-1,))
    w = valid.to(lp2.dtype)
    if weight is not None:
        w = w * _f.index_select(_class_weight(weight, lp2.shape[1], lp2.dtype), 0, yi)
    return _f.where(valid, -(picked * w), 0.0), w


def _weighted_reduce(loss: Tensor, w: Tensor, reduction: str, shape: tuple) -> Tensor:
    """'mean' divides by the total weight (nan if every target is ignored, as in PyTorch)."""
    if reduction == "mean":
        return _mean_by(_f.sum(loss), _f.sum(w))
    if reduction == "sum":
        return _f.sum(loss)
    return _f.reshape(loss, shape)


def _mean_by(total: Tensor, weight_sum: Tensor) -> Tensor:
    """total / weight_sum, as PyTorch's losses give it: nan when the weights sum to 0 (every
    target ignored), with a zero gradient rather than 0 * inf."""
    none = weight_sum == 0
    ratio = total / _f.where(none, 1.0, weight_sum)
    # the nan term in the ratio's dtype: a float32 scalar would widen a float16 loss
    return ratio + _f.where(none, float("nan"), 0.0).to(ratio.dtype)


def cross_entropy(input, target, weight=None, size_average=None, ignore_index: int = -100,
                  reduce=None, reduction: str = "mean", label_smoothing: float = 0.0) -> Tensor:
    """Softmax cross-entropy of scores `input` (N, C, ...) against `target`.

    `target` is either integer class indices of shape (N, ...) or class
    probabilities of the input's shape (float). PyTorch's `weight`,
    `ignore_index`, `reduction` and `label_smoothing` are supported, and its deprecated
    `size_average`/`reduce` (with its warning). Like `torch.nn.functional.cross_entropy`.
    """
    if size_average is not None or reduce is not None:
        reduction = legacy_reduction(size_average, reduce, reduction)
    # Fast path, checked cheaply: (N, C) scores, N class indices, no weights. The op drops
    # the rows labelled ignore_index itself (so a jit replay reads each call's labels).
    if (input.__class__ is Tensor and target.__class__ is Tensor or state.tracer is not None
            and isinstance(input, Tensor) and isinstance(target, Tensor)) and weight is None \
            and reduction in _REDUCTIONS and 0.0 <= label_smoothing <= 1.0:
        z, y = input.data, target.data
        if z.ndim == 2 and y.ndim == 1 and (y.dtype == np.int64 or y.dtype == np.uint8) \
                and z.dtype.kind == "f" \
                and len(y) == len(z) and len(y):
            try:  # the op checks the labels itself (so a jit replay does too)
                return apply(ops.cross_entropy, input, target, reduction=reduction,
                             smoothing=float(label_smoothing), ignore=int(ignore_index))
            except ops.LabelError:
                pass  # out of range: the general path says which
    _check_reduction(reduction, "cross_entropy")
    if not 0.0 <= label_smoothing <= 1.0:
        raise LossValueError(f"cross_entropy: label_smoothing must be in [0, 1], got "
                             f"{label_smoothing}")
    x, target = _t(input), _t(target)
    if x.dtype.kind != "f":  # complex too: PyTorch's log_softmax refuses it
        raise DtypeError(f"cross_entropy: input must hold real floating scores, got {x.dtype}")
    if x.ndim == 1:  # unbatched
        if not (target.dtype.kind == "f" and target.shape == x.shape):  # not probabilities
            target = _one_class_index(target, "cross_entropy")
        out = cross_entropy(*_unbatched(x, target), weight, ignore_index=ignore_index,
                            reduction=reduction, label_smoothing=label_smoothing)
        return _f.reshape(out, ()) if reduction == "none" else out
    if x.ndim == 0:
        raise ArgumentError("cross_entropy: input must have shape (N, C) or (N, C, d1, ...)")
    if target.dtype.kind == "f" and target.shape == x.shape:
        if ignore_index >= 0:  # PyTorch: only a negative ignore_index (none) with probabilities
            raise ArgumentError("cross_entropy: ignore_index is not supported for floating "
                                f"point target, got ignore_index={ignore_index}")
        return _soft_cross_entropy(x, target, weight, reduction, label_smoothing)
    if target.dtype.kind == "f" and target.shape != x.shape:
        _same_batch(x, target)
        raise LossTargetDtypeError(
                        f"cross_entropy: target must hold integer class indices (int64) of "
                        f"shape {(x.shape[0],) + x.shape[2:]}, got dtype {target.dtype} and shape "
                        f"{target.shape}; a float target means class probabilities and must "
                        f"have the input's shape {x.shape}")
    y = _class_targets(x, target, "cross_entropy", ignore_index)
    lp2 = _classes_last(_f.log_softmax(x, 1))
    flat = _f.reshape(y, -1)
    loss, w = _picked(lp2, flat, weight, ignore_index)
    nll = _weighted_reduce(loss, w, reduction, y.shape)
    if not label_smoothing:
        return nll
    n_classes = x.shape[1]
    per_class = lp2 if weight is None else lp2 * _class_weight(weight, n_classes, x.dtype)
    smooth = _f.where(flat != ignore_index, -_f.sum(per_class, 1), 0.0)
    if reduction == "mean":
        smooth = _mean_by(_f.sum(smooth), _f.sum(w))
    elif reduction == "sum":
        smooth = _f.sum(smooth)
    else:
        smooth = _f.reshape(smooth, y.shape)
    return (1.0 - label_smoothing) * nll + smooth * (label_smoothing / n_classes)


def _soft_cross_entropy(x, target, weight, reduction, label_smoothing):
    """Cross-entropy against class probabilities (PyTorch's float-target form)."""
    n_classes = x.shape[1]
    # a float64 target widens float32 scores, as in PyTorch; tensor ops throughout:
    x, q = _promote(x, target)
    if label_smoothing:  # differentiable in the target too, and replayed by rg.jit
        q = q * (1.0 - label_smoothing) + label_smoothing / n_classes
    lp = _f.log_softmax(x, 1)
    if weight is not None:
        w = _t(weight)
        if w.shape != (n_classes,):
            raise LossShapeError(f"weight must have shape ({n_classes},) (one per class), "
                                 f"got {w.shape}")
        q = q * _f.reshape(w.to(x.dtype), (1, n_classes) + (1,) * (x.ndim - 2))
    loss = -_f.sum(lp * q, 1)
    return _reduce(loss, reduction)


def linear_cross_entropy(input, linear_weight, target, *, linear_bias=None, weight=None,
                         reduction: str = "mean", ignore_index: int | None = None,
                         label_smoothing: float = 0.0, options=None) -> Tensor:
    """cross_entropy(linear(input, linear_weight, linear_bias), target, ...), with PyTorch's
    checks: `linear_weight` (C, d1, ..., dK, in_features) gives K-dimensional logits
    (N, C, d1, ..., dK); `ignore_index` None means -100 (and must be None for
    class-probability targets). `options` (PyTorch's chunking, which saves memory and
    gives the same values) is accepted, with PyTorch's warning where it would not apply,
    but the whole batch is computed at once. Like `torch.nn.functional.linear_cross_entropy`."""
    fn = "linear_cross_entropy"
    input, linear_weight, target = _t(input), _t(linear_weight), _t(target)
    if not 1 <= input.ndim <= 2:
        raise LossShapeError(f"{fn}: expected input with dimensionality 1 or 2, got shape "
                             f"{tuple(input.shape)}")
    if linear_weight.ndim < 2:
        raise LossShapeError(f"{fn}: expected linear_weight with dimensionality at least 2, "
                             f"got shape {tuple(linear_weight.shape)}")
    batches, in_features = tuple(input.shape[:-1]), input.shape[-1]
    if in_features != linear_weight.shape[-1]:
        raise LossShapeError(f"{fn}: input {tuple(input.shape)} and linear_weight "
                             f"{tuple(linear_weight.shape)} must have one last dimension "
                             "(in_features)")
    classes, out_features = linear_weight.shape[0], tuple(linear_weight.shape[1:-1])
    if linear_bias is not None:
        linear_bias = _t(linear_bias)
        if tuple(linear_bias.shape) != (classes, *out_features):
            raise LossShapeError(f"{fn}: expected linear_bias of shape "
                                 f"{(classes, *out_features)}, got {tuple(linear_bias.shape)}")
    if out_features and not batches:
        raise LossShapeError(f"{fn}: K-dimensional loss (linear_weight "
                             f"{tuple(linear_weight.shape)}) requires batched input (N, "
                             f"{in_features}), got {tuple(input.shape)}")
    logits_shape = (*batches, classes, *out_features)
    if tuple(target.shape) == logits_shape and ignore_index is not None:
        raise LossValueError(f"{fn}: ignore_index cannot be given when target contains "
                             "probabilities")
    if options is not None and (out_features or reduction not in _REDUCTIONS
                                or label_smoothing != 0.0 or target.dtype != "int64"):
        warnings.warn(f"linear_cross_entropy: ``options`` ignored; chunked path needs "
                      f"reduction in {{'mean','sum','none'}}, label_smoothing == 0, "
                      f"target.dtype == int64, out_features == (). Got reduction={reduction!r}, "
                      f"label_smoothing={label_smoothing}, target.dtype={target.dtype}, "
                      f"out_features={out_features}", stacklevel=2)
    if out_features:
        rows = math.prod(out_features, start=classes)
        linear_weight = linear_weight.reshape(rows, in_features)
        if linear_bias is not None:
            linear_bias = linear_bias.reshape(rows)
    logits = linear(input, linear_weight, linear_bias).reshape(logits_shape)
    return cross_entropy(logits, target, weight=weight, reduction=reduction,
                         ignore_index=-100 if ignore_index is None else ignore_index,
                         label_smoothing=label_smoothing)


__all__ += ["linear_cross_entropy"]


# ---------------------------------------------------------------- im2col

from ..api.indexing import col2im as fold  # noqa: E402
from ..api.indexing import im2col as unfold  # noqa: E402

__all__ += ["unfold", "fold"]

# ---------------------------------------------------------------- normalisation, losses, misc

from ..api.ctc import ctc_loss  # noqa: E402
from ..api.losses import (  # noqa: E402
    binary_cross_entropy,
    gaussian_nll_loss,
    huber_loss,
    kl_div,
    l1_loss,
    one_hot,
    poisson_nll_loss,
    smooth_l1_loss,
)
from ..api.margin_losses import (  # noqa: E402
    cosine_embedding_loss,
    hinge_embedding_loss,
    margin_ranking_loss,
    multi_margin_loss,
    multilabel_margin_loss,
    multilabel_soft_margin_loss,
    soft_margin_loss,
    triplet_margin_loss,
    triplet_margin_with_distance_loss,
)
from ..api.norms import (  # noqa: E402
    batch_norm,
    cdist,
    cosine_similarity,
    group_norm,
    layer_norm,
    normalize,
    rms_norm,
)

__all__ += [
    "binary_cross_entropy", "l1_loss", "smooth_l1_loss", "huber_loss", "kl_div",
    "cosine_embedding_loss", "margin_ranking_loss", "one_hot", "embedding", "dropout1d",
    "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout", "layer_norm",
    "group_norm", "batch_norm", "rms_norm", "normalize", "cdist", "cosine_similarity",
]
__all__ += [  # the other losses
    "gaussian_nll_loss", "poisson_nll_loss", "hinge_embedding_loss", "multi_margin_loss",
    "multilabel_margin_loss", "multilabel_soft_margin_loss", "soft_margin_loss",
    "triplet_margin_loss", "triplet_margin_with_distance_loss", "ctc_loss",
]

# ---------------------------------------------------------------- more layers (torch.nn's)

from ..api.activations import (  # noqa: E402
    celu_,
    elu_,
    gumbel_softmax,
    hardshrink,
    hardtanh_,
    leaky_relu_,
    prelu,
    relu_,
    rrelu,
    rrelu_,
    selu_,
    softshrink,
    threshold_,
)
from ..api.bilinear import bilinear  # noqa: E402
from ..api.dropout import (  # noqa: E402
    alpha_dropout,
    dropout,
    dropout1d,
    dropout2d,
    dropout3d,
    feature_alpha_dropout,
)
from ..api.embedding import embedding, embedding_bag  # noqa: E402
from ..api.norms import (  # noqa: E402
    instance_norm,
    local_response_norm,
    pairwise_distance,
    pdist,
)
from ..api.resample import (  # noqa: E402
    channel_shuffle,
    native_channel_shuffle,
    upsample_bilinear,
    upsample_nearest,
)
from ..api.windows import (  # noqa: E402
    adaptive_max_pool1d_with_indices,
    adaptive_max_pool2d_with_indices,
    adaptive_max_pool3d,
    adaptive_max_pool3d_with_indices,
    conv_tbc,
    fractional_max_pool2d,
    fractional_max_pool2d_with_indices,
    fractional_max_pool3d,
    fractional_max_pool3d_with_indices,
    lp_pool1d,
    lp_pool2d,
    lp_pool3d,
    max_pool1d_with_indices,
    max_pool2d_with_indices,
    max_pool3d_with_indices,
)

__all__ += [
    "prelu", "rrelu", "rrelu_", "hardshrink", "softshrink", "gumbel_softmax", "relu_", "elu_",
    "celu_", "selu_", "leaky_relu_", "hardtanh_", "threshold_", "instance_norm",
    "local_response_norm", "pairwise_distance", "pdist", "adaptive_max_pool3d", "lp_pool1d",
    "lp_pool2d", "lp_pool3d", "max_pool1d_with_indices", "max_pool2d_with_indices",
    "max_pool3d_with_indices", "adaptive_max_pool1d_with_indices",
    "adaptive_max_pool2d_with_indices", "adaptive_max_pool3d_with_indices", "bilinear",
    "channel_shuffle", "native_channel_shuffle", "upsample_nearest", "upsample_bilinear",
    "embedding_bag", "fractional_max_pool2d", "fractional_max_pool3d",
    "fractional_max_pool2d_with_indices", "fractional_max_pool3d_with_indices", "conv_tbc",
]

# ---------------------------------------------------------------- multi-head attention

from ..api.attention import multi_head_attention_forward  # noqa: E402

__all__ += ["multi_head_attention_forward"]

# ---------------------------------------------------------------- grouped products (MoE)

from ..api.grouped_mm import grouped_mm  # noqa: E402

__all__ += ["grouped_mm"]
