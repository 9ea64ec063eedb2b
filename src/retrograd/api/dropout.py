"""Dropout, `torch.nn.functional`'s whole family: `dropout`, `dropout1d/2d/3d` (whole
channels), `alpha_dropout` and `feature_alpha_dropout` (for SELU networks), with
`inplace` (the `torch.*` spellings, `rg.dropout(input, p, train)`, `rg.feature_dropout`,
`rg.dropout_`, ..., are in `torch_layers.py`).

One rule serves them all, as in ATen's `_dropout_impl`: nothing happens outside
training, for p = 0 or an empty input; p = 1 multiplies by zero; otherwise a mask
of keep-draws (one per element, or per (sample, channel) for the feature forms) is
scaled by 1 / (1 - p), or for alpha dropout mapped to `a * keep` and shifted by
`b = a * alpha' * (p - 1 + keep)` so that a SELU network keeps its mean and variance.
The draws come from the global generator (`rg.manual_seed` makes them reproducible);
the input's gradient is the mask, so everything else comes from the op table.
"""

from __future__ import annotations

import warnings

from .. import creation
from ..tensor import Tensor
from ._args import _t
from ._errors import ArgumentError, DtypeError, ShapeError

__all__ = ["dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout",
           "feature_alpha_dropout"]

_ALPHA = 1.7580993408473766  # -SELU(-inf): SELU's scale * alpha


def _check_p(p, fn: str) -> float:
    if not 0.0 <= p <= 1.0:
        raise ArgumentError(f"{fn}: dropout probability has to be between 0 and 1, "
                                      f"but got {p}")
    return float(p)


def _drop(x: Tensor, p: float, train: bool, inplace: bool, fn: str, feature: bool = False,
          alpha: bool = False, unbatched: bool = False) -> Tensor:
    """ATen's rule. `feature`: one draw per (sample, channel) of (N, C, *) (with
    `unbatched`, of (C, *) as if it had a batch of one)."""
    if p == 0.0 or not train or x.size == 0:
        return x
    if p == 1.0:
        zero = creation.zeros((), dtype=x.dtype, device=x.device)
        return x.mul_(zero) if inplace else x * zero
    if feature and x.ndim < 2 - unbatched:
        raise ShapeError(f"{fn}: feature dropout requires at least 2 dimensions in the "
                           f"input, got shape {x.shape}")
    if x.dtype.kind != "f":  # complex too: PyTorch draws the mask in x's dtype (bernoulli_)
        raise DtypeError(f"{fn}: needs a real floating input in training (the kept values "
                         f"are rescaled), got {x.dtype}")
    if not feature:
        shape = x.shape
    elif unbatched:
        shape = x.shape[:1] + (1,) * (x.ndim - 1)
    else:
        shape = x.shape[:2] + (1,) * (x.ndim - 2)
    keep = creation.generator(like=x.data).random(shape) >= p
    if not alpha:
        mask = keep.astype(x.dtype)
        mask *= 1.0 / (1.0 - p)
        return x.mul_(mask) if inplace else x * mask
    a = 1.0 / ((_ALPHA * _ALPHA * p + 1.0) * (1.0 - p)) ** 0.5
    b = ((keep - 1.0) * (_ALPHA * a) + _ALPHA * a * p).astype(x.dtype)
    scale = (keep * a).astype(x.dtype)
    return x.mul_(scale).add_(b) if inplace else x * scale + b


def dropout(input, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero each element with probability `p` and scale the rest by 1/(1-p) (training only).
    Like `torch.nn.functional.dropout`."""
    return _drop(_t(input), _check_p(p, "dropout"), training, inplace, "dropout")


def _warn_dims(fn: str, ndim: int, want: tuple) -> None:
    warnings.warn(f"{fn}: Received a {ndim}-D input to {fn}, which is deprecated and will "
                  f"result in an error in a future release. To retain the behavior and silence "
                  f"this warning, please use dropout instead. Note that {fn} exists to provide "
                  f"channel-wise dropout on inputs with {want[0] - 1} spatial dimensions, a "
                  f"channel dimension, and an optional batch dimension (i.e. {want[0]}D or "
                  f"{want[1]}D inputs).", UserWarning, stacklevel=3)


def dropout1d(input, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels of (N, C, L) or (C, L) with probability p; scale the rest.
    Like `torch.nn.functional.dropout1d`."""
    p = _check_p(p, "dropout1d")
    x = _t(input)
    if x.ndim not in (2, 3):
        raise ShapeError(f"dropout1d: Expected 2D or 3D input, but received a {x.ndim}D "
                           f"input of shape {x.shape} (channel-wise dropout over 1 spatial "
                           "dimension, a channel dimension and an optional batch dimension)")
    return _drop(x, p, training, inplace, "dropout1d", feature=True, unbatched=x.ndim == 2)


def dropout2d(input, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels of (N, C, H, W) with probability p; scale the rest. As in
    PyTorch, a 3-D input is taken as (N, C, L) (with its warning), not as unbatched.
    Like `torch.nn.functional.dropout2d`."""
    p = _check_p(p, "dropout2d")
    x = _t(input)
    if x.ndim not in (3, 4):
        _warn_dims("dropout2d", x.ndim, (3, 4))
    if x.ndim == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that "
                      "channel-wise 1D dropout behavior is desired - input is interpreted as "
                      "shape (N, C, L), where C is the channel dim. This behavior will change "
                      "in a future release to interpret the input as one without a batch "
                      "dimension, i.e. shape (C, H, W). To maintain the 1D channel-wise "
                      "dropout behavior, please switch to using dropout1d instead.",
                      UserWarning, stacklevel=2)
    return _drop(x, p, training, inplace, "dropout2d", feature=True)


def dropout3d(input, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels of (N, C, D, H, W) or (C, D, H, W) with probability p; scale the
    rest. Like `torch.nn.functional.dropout3d`."""
    p = _check_p(p, "dropout3d")
    x = _t(input)
    if x.ndim not in (4, 5):
        _warn_dims("dropout3d", x.ndim, (4, 5))
    return _drop(x, p, training, inplace, "dropout3d", feature=True, unbatched=x.ndim != 5)


def alpha_dropout(input, p: float = 0.5, training: bool = False,
                  inplace: bool = False) -> Tensor:
    """Dropout that keeps a SELU network's mean and variance: dropped values are set to
    SELU's negative saturation, then an affine map restores the statistics. Like
    `torch.nn.functional.alpha_dropout` (off unless `training`)."""
    return _drop(_t(input), _check_p(p, "alpha_dropout"), training, inplace, "alpha_dropout",
                 alpha=True)


def feature_alpha_dropout(input, p: float = 0.5, training: bool = False,
                          inplace: bool = False) -> Tensor:
    """`alpha_dropout` of whole channels of (N, C, *). Like
    `torch.nn.functional.feature_alpha_dropout`."""
    return _drop(_t(input), _check_p(p, "feature_alpha_dropout"), training, inplace,
                 "feature_alpha_dropout", feature=True, alpha=True)
