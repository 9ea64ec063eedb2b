"""The layer functions that `torch` itself has, as `rg.*`, with ATen's signatures where
they differ from `torch.nn.functional`'s: `rg.dropout(input, p, train)` and the rest of
the dropout family (`feature_dropout`, the in-place `dropout_`, ...), `rg.batch_norm`
and `rg.instance_norm` (weight and bias first, every argument required),
`rg.layer_norm`/`rg.group_norm` (with the cuDNN flag), `rg.embedding(weight, indices,
padding_idx=-1)` (a negative padding_idx means none), `rg.rrelu` (a `generator`
argument), and the pools that always return their indices (`rg.adaptive_max_pool1d`,
`rg.max_pool1d_with_indices`).

Each one checks what the functional form checks and calls it; the cuDNN flags are
accepted and ignored (there is no cuDNN here). Functions whose signature is the same
in both places (`rg.prelu`, `rg.pdist`, ...) are exported straight from their family.
"""

from __future__ import annotations

from ..tensor import Tensor
from ._args import _t
from .activations import rrelu as _rrelu
from .dropout import _check_p, _drop
from .embedding import embedding as _embedding
from .norms import batch_norm_any_eps as _batch_norm
from .norms import group_norm as _group_norm
from .norms import instance_norm as _instance_norm
from .norms import layer_norm as _layer_norm
from .windows import adaptive_max_pool1d_with_indices, max_pool1d

__all__ = ["dropout", "dropout_", "feature_dropout", "feature_dropout_", "alpha_dropout",
           "alpha_dropout_", "feature_alpha_dropout", "feature_alpha_dropout_", "batch_norm",
           "instance_norm", "layer_norm", "group_norm", "embedding", "rrelu",
           "adaptive_max_pool1d", "max_pool1d_with_indices"]


# ---------------------------------------------------------------- dropout

def dropout(input, p: float, train: bool) -> Tensor:
    """Zero each element with probability p and scale the rest by 1/(1-p), when `train`.
    Like `torch.dropout`."""
    return _drop(_t(input), _check_p(p, "dropout"), train, False, "dropout")


def dropout_(input, p: float, train: bool) -> Tensor:
    """`dropout` written into `input`. Like `torch.dropout_`."""
    return _drop(_t(input), _check_p(p, "dropout_"), train, True, "dropout_")


def feature_dropout(input, p: float, train: bool) -> Tensor:
    """Dropout of whole channels of (N, C, *) (no dimension check). Like
    `torch.feature_dropout`."""
    return _drop(_t(input), _check_p(p, "feature_dropout"), train, False, "feature_dropout",
                 feature=True)


def feature_dropout_(input, p: float, train: bool) -> Tensor:
    """`feature_dropout` written into `input`. Like `torch.feature_dropout_`."""
    return _drop(_t(input), _check_p(p, "feature_dropout_"), train, True, "feature_dropout_",
                 feature=True)


def alpha_dropout(input, p: float, train: bool) -> Tensor:
    """Alpha dropout (keeps a SELU network's mean and variance), when `train`. Like
    `torch.alpha_dropout`."""
    return _drop(_t(input), _check_p(p, "alpha_dropout"), train, False, "alpha_dropout",
                 alpha=True)


def alpha_dropout_(input, p: float, train: bool) -> Tensor:
    """`alpha_dropout` written into `input`. Like `torch.alpha_dropout_`."""
    return _drop(_t(input), _check_p(p, "alpha_dropout_"), train, True, "alpha_dropout_",
                 alpha=True)


def feature_alpha_dropout(input, p: float, train: bool) -> Tensor:
    """Alpha dropout of whole channels of (N, C, *), when `train`. Like
    `torch.feature_alpha_dropout`."""
    return _drop(_t(input), _check_p(p, "feature_alpha_dropout"), train, False,
                 "feature_alpha_dropout", feature=True, alpha=True)


def feature_alpha_dropout_(input, p: float, train: bool) -> Tensor:
    """`feature_alpha_dropout` written into `input`. Like `torch.feature_alpha_dropout_`."""
    return _drop(_t(input), _check_p(p, "feature_alpha_dropout_"), train, True,
                 "feature_alpha_dropout_", feature=True, alpha=True)


# ---------------------------------------------------------------- normalisation

def batch_norm(input, weight, bias, running_mean, running_var, training: bool,
               momentum: float, eps: float, cudnn_enabled: bool) -> Tensor:
    """`F.batch_norm` with ATen's argument order (weight and bias first). Like
    `torch.batch_norm`."""
    return _batch_norm(input, running_mean, running_var, weight, bias, training, momentum,
                       eps)


def instance_norm(input, weight, bias, running_mean, running_var, use_input_stats: bool,
                  momentum: float, eps: float, cudnn_enabled: bool) -> Tensor:
    """`F.instance_norm` with ATen's argument order (weight and bias first). Like
    `torch.instance_norm`."""
    return _instance_norm(input, running_mean, running_var, weight, bias, use_input_stats,
                          momentum, eps)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps: float = 1e-5,
               cudnn_enable: bool = True) -> Tensor:
    """`F.layer_norm` (the cuDNN flag ignored). Like `torch.layer_norm`."""
    return _layer_norm(input, normalized_shape, weight, bias, eps)


def group_norm(input, num_groups: int, weight=None, bias=None, eps: float = 1e-5,
               cudnn_enabled: bool = True) -> Tensor:
    """`F.group_norm` (the cuDNN flag ignored). Like `torch.group_norm`."""
    return _group_norm(input, num_groups, weight, bias, eps)


# ---------------------------------------------------------------- lookups, activations, pools

def embedding(weight, indices, padding_idx: int = -1, scale_grad_by_freq: bool = False,
              sparse: bool = False) -> Tensor:
    """Rows of `weight` at `indices` (weight first; a negative padding_idx means no
    padding row, as ATen has it). Like `torch.embedding`."""
    return _embedding(indices, weight, None if padding_idx < 0 else padding_idx, None, 2.0,
                      scale_grad_by_freq, sparse)


def rrelu(input, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,
          generator=None) -> Tensor:
    """`F.rrelu` with ATen's arguments; the slopes come from the global generator
    (`rg.manual_seed`), so `generator` must be None. Like `torch.rrelu`."""
    if generator is not None:
        raise NotImplementedError("rrelu: a generator object is not supported; seed the "
                                  "global generator with rg.manual_seed instead")
    return _rrelu(input, lower, upper, training)


def adaptive_max_pool1d(input, output_size) -> tuple:
    """Max over adaptive windows of (N, C, L), with the indices (always, as ATen's). Like
    `torch.adaptive_max_pool1d`."""
    return adaptive_max_pool1d_with_indices(input, output_size)


def max_pool1d_with_indices(input, kernel_size, stride=(), padding=0, dilation=1,
                            ceil_mode: bool = False) -> tuple:
    """Max pooling of (N, C, L) and the indices (ATen's signature: an empty stride means
    the kernel size). Like `torch.max_pool1d_with_indices`."""
    return max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)
