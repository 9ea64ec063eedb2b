"""PyTorch's ATen "native" forms of the normalisations and dropout, which return what their
backward saves beside the output: `rg.native_layer_norm` (out, mean, rstd),
`rg.native_group_norm` (out, mean, rstd), `rg.native_batch_norm` (out, save_mean,
save_invstd; running statistics updated in place while training) and `rg.native_dropout`
(out, mask). Decomposed and exported programs call them.

The output is the public function's (`F.layer_norm`, `group_norm`, `batch_norm`), so its
gradients are those; the statistics are computed beside it with no gradient (torch's
backward formulas ignore any gradient that reaches them), rstd = 1 / sqrt(biased var + eps).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..tensor import Tensor
from ._args import _t
from .norms import batch_norm_any_eps, group_norm, layer_norm

__all__ = ["native_layer_norm", "native_group_norm", "native_batch_norm", "native_dropout"]


def _stats(x: Tensor, dims: tuple, eps: float) -> tuple[Tensor, Tensor]:
    """(mean, 1 / sqrt(biased variance + eps)) over `dims`, kept, without gradient."""
    x = x.detach()
    mean = x.mean(dims, keepdim=True)
    var = ((x - mean) ** 2).mean(dims, keepdim=True)
    return mean, (var + eps).rsqrt()


def native_layer_norm(input, normalized_shape: Sequence[int], weight, bias,  # noqa: A002
                      eps: float) -> tuple[Tensor, Tensor, Tensor]:
    """(F.layer_norm(input, ...), mean, rstd), the statistics over the last
    len(normalized_shape) dimensions, kept as size-1 dimensions. Like
    `torch.native_layer_norm`."""
    x = _t(input)
    shape = (int(normalized_shape),) if isinstance(normalized_shape, int) else \
        tuple(int(s) for s in normalized_shape)
    out = layer_norm(x, shape, weight, bias, eps)
    dims = tuple(range(x.ndim - len(shape), x.ndim))
    mean, rstd = _stats(x, dims, eps)
    return out, mean, rstd


def native_group_norm(input, weight, bias, N: int, C: int, HxW: int, group: int,  # noqa: A002, N803
                      eps: float) -> tuple[Tensor, Tensor, Tensor]:
    """(F.group_norm(input, group, ...), mean, rstd), the statistics of shape (N, group),
    differentiable as in PyTorch. Like `torch.native_group_norm` (N, C, HxW must describe
    input's shape)."""
    x = _t(input)
    if x.ndim < 2 or x.shape[0] != N or x.shape[1] != C or x.size != N * C * HxW:
        raise RuntimeError(f"native_group_norm(): N={N}, C={C}, HxW={HxW} do not describe an "
                           f"input of shape {x.shape}")
    if group <= 0 or C % group:
        raise RuntimeError(f"native_group_norm(): expected the number of channels ({C}) to be "
                           f"divisible by the number of groups ({group})")
    out = group_norm(x, group, weight, bias, eps)
    grouped = x.reshape(N, group, (C // group) * HxW)  # explicit: N may be 0
    # unlike the other native norms', these statistics carry a gradient in PyTorch
    mean = grouped.mean(2, keepdim=True)
    rstd = (((grouped - mean) ** 2).mean(2, keepdim=True) + eps).rsqrt()
    return out, mean.reshape(N, group), rstd.reshape(N, group)


def native_batch_norm(input, weight, bias, running_mean, running_var,  # noqa: A002
                      training: bool, momentum: float, eps: float
                      ) -> tuple[Tensor, Tensor, Tensor]:
    """(F.batch_norm(...), save_mean, save_invstd): while training, the batch's per-channel
    mean and 1/sqrt(biased var + eps) (running statistics, if given, updated in place);
    in eval mode, empty tensors. Like `torch.native_batch_norm`."""
    x = _t(input)
    if not training and (running_mean is None or running_var is None):
        raise RuntimeError("native_batch_norm(): running_mean and running_var must be given "
                           "in eval mode (training=False)")
    if x.ndim < 2:
        raise RuntimeError(f"native_batch_norm(): expected an input with at least 2 "
                           f"dimensions (N, C, ...), got shape {x.shape}")
    if training:
        dims = (0,) + tuple(range(2, x.ndim))
        mean, rstd = _stats(x, dims, eps)
        mean, rstd = mean.reshape(-1), rstd.reshape(-1)
    else:
        mean = rstd = x.new_zeros((0,)).detach()
    out = batch_norm_any_eps(x, running_mean, running_var, weight, bias, bool(training),
                             momentum, eps)
    return out, mean, rstd


def native_dropout(input, p: float, train: bool | None  # noqa: A002
                   ) -> tuple[Tensor, Tensor]:
    """(output, mask): each element kept with probability 1 - p (mask True) and scaled by
    1 / (1 - p), zeroed otherwise; not training (train False or None): the input (a copy)
    and an all-True mask. Like `torch.native_dropout`; random numbers are retrograd's."""
    from .. import creation
    x = _t(input)
    if not 0.0 <= float(p) <= 1.0:
        raise RuntimeError(f"native_dropout(): dropout probability has to be between 0 and 1, "
                           f"but got {p}")
    if not train:
        return x.clone(), creation.ones_like(x, dtype=np.bool_)
    mask = creation.rand_like(x.detach(), dtype=x.dtype) >= float(p) if p < 1 else \
        creation.zeros_like(x, dtype=np.bool_)
    scale = 0.0 if p >= 1 else 1.0 / (1.0 - float(p))
    return x * mask * scale, mask
