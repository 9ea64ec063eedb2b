"""Normalisation layers: `LayerNorm`, `RMSNorm`, `GroupNorm`, `BatchNorm1d/2d/3d`,
`InstanceNorm1d/2d/3d`, `LocalResponseNorm`, `CrossMapLRN2d`.

PyTorch's parameter names, initialisation (weight ones, bias zeros) and, for
batch and instance norm, its buffers: `running_mean`, `running_var` and
`num_batches_tracked`, saved in `state_dict` and updated in training mode only.
"""

from __future__ import annotations

import warnings
from functools import lru_cache

import numpy as np

from .. import creation, devices
from ..grad_mode import no_grad
from ..primitive import ArgumentError, DtypeError, ShapeError
from ..tensor import Tensor
from . import functional as F
from ._utils import _dtype
from .module import Module, Parameter

__all__ = ["LayerNorm", "RMSNorm", "GroupNorm", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d",
           "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "LocalResponseNorm",
           "CrossMapLRN2d"]


def _shape(normalized_shape) -> tuple:
    if isinstance(normalized_shape, (int, np.integer)):
        return (int(normalized_shape),)
    return tuple(int(s) for s in normalized_shape)


class LayerNorm(Module):
    """Normalise over the trailing `normalized_shape` dims, then `weight * x + bias`."""

    def __init__(self, normalized_shape, eps: float = 1e-5, elementwise_affine: bool = True,
                 bias: bool = True, device=None, dtype=None) -> None:
        super().__init__()
        self.normalized_shape = _shape(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        dt = _dtype(dtype)
        if elementwise_affine:
            self.weight = Parameter(np.ones(self.normalized_shape, dtype=dt))
            if bias:
                self.bias = Parameter(np.zeros(self.normalized_shape, dtype=dt))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def reset_parameters(self) -> None:
        with no_grad():
            if self.weight is not None:
                self.weight.fill_(1.0)
            if self.bias is not None:
                self.bias.zero_()

    def forward(self, input):
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}")


class RMSNorm(Module):
    """x / sqrt(mean(x^2) + eps) over the trailing dims, times `weight`."""

    def __init__(self, normalized_shape, eps: float | None = None,
                 elementwise_affine: bool = True, device=None, dtype=None) -> None:
        super().__init__()
        self.normalized_shape = _shape(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(np.ones(self.normalized_shape, dtype=_dtype(dtype)))
        else:
            self.register_parameter("weight", None)

    def forward(self, x):
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")


class GroupNorm(Module):
    """Normalise (N, C, *) over groups of channels; a per-channel scale and shift."""

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5,
                 affine: bool = True, device=None, dtype=None, *, bias: bool = True) -> None:
        super().__init__()
        if num_groups <= 0 or num_channels % num_groups:
            raise ArgumentError(f"GroupNorm: num_channels ({num_channels}) must be divisible by "
                                f"num_groups ({num_groups})")
        self.num_groups, self.num_channels = num_groups, num_channels
        self.eps, self.affine = eps, affine
        dt = _dtype(dtype)
        if affine:
            self.weight = Parameter(np.ones(num_channels, dtype=dt))
            if bias:
                self.bias = Parameter(np.zeros(num_channels, dtype=dt))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, input):
        if isinstance(input, Tensor) and input.ndim >= 2 and input.shape[1] != self.num_channels:
            raise ArgumentError(f"GroupNorm: expected input with {self.num_channels} channels "
                                f"(dim 1), got shape {input.shape}")
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")


class _BatchNorm(Module):
    """Per-channel normalisation over the batch (training) or by running statistics (eval)."""

    _dims: tuple = ()

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True, device=None, dtype=None, *,
                 bias: bool = True) -> None:
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        dt = _dtype(dtype)
        if affine:
            self.weight = Parameter(np.ones(num_features, dtype=dt))
            if bias:
                self.bias = Parameter(np.zeros(num_features, dtype=dt))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", Tensor(np.zeros(num_features, dtype=dt)))
            self.register_buffer("running_var", Tensor(np.ones(num_features, dtype=dt)))
            self.register_buffer("num_batches_tracked", Tensor(np.array(0, dtype=np.int64)))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)

    _version = 2  # PyTorch's: version 2 added num_batches_tracked

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs) -> None:
        """A state_dict from before `num_batches_tracked` (no version recorded, or version 1:
        older checkpoints, or one rebuilt key by key from another library's) keeps this
        layer's count instead of reporting the key missing, as PyTorch does."""
        version = local_metadata.get("version", None)
        key = prefix + "num_batches_tracked"
        if ((version is None or version < 2) and self.track_running_stats
                and key not in state_dict):
            state_dict[key] = self.num_batches_tracked
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys,
                                      unexpected_keys, error_msgs)

    def reset_running_stats(self) -> None:
        if self.track_running_stats:
            with no_grad():
                self.running_mean.zero_()
                self.running_var.fill_(1.0)
                self.num_batches_tracked.zero_()

    def reset_parameters(self) -> None:
        self.reset_running_stats()
        if self.affine:
            with no_grad():
                self.weight.fill_(1.0)
                if self.bias is not None:
                    self.bias.zero_()

    def _check_input(self, x) -> None:
        if not isinstance(x, Tensor) or x.ndim not in self._dims:
            shape = getattr(x, "shape", None)
            raise ArgumentError(f"{type(self).__name__}: expected a "
                                f"{' or '.join(f'{d}-D' for d in self._dims)} input, got shape "
                                f"{shape}")
        if x.shape[1] != self.num_features:
            raise ArgumentError(f"{type(self).__name__}: expected {self.num_features} features "
                                f"(channels, dim 1), got input of shape {x.shape}")

    def forward(self, input):
        self._check_input(input)
        momentum = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            with no_grad():
                self.num_batches_tracked.add_(1)
            if self.momentum is None:  # a cumulative moving average: 1 / batches seen,
                # as a tensor op on the buffer (rg.jit replays it rather than freezing it)
                momentum = 1.0 / self.num_batches_tracked.to(np.float64)
        # batch statistics in training, and always when no running statistics are kept
        use_batch = self.training or not self.track_running_stats
        return F.batch_norm(input, self.running_mean, self.running_var, self.weight, self.bias,
                            use_batch, momentum, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, bias={self.bias is not None}, "
                f"track_running_stats={self.track_running_stats}")


class BatchNorm1d(_BatchNorm):
    """Batch norm over (N, C) or (N, C, L)."""

    _dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch norm over (N, C, H, W)."""

    _dims = (4,)


class BatchNorm3d(_BatchNorm):
    """Batch norm over (N, C, D, H, W)."""

    _dims = (5,)


class SyncBatchNorm(_BatchNorm):
    """BatchNorm whose batch statistics, in PyTorch, are taken over every process's batch
    (any input with channels at dim 1). In one process it is BatchNorm exactly, as in
    PyTorch without a process group; training it under a launcher of several ranks is
    refused (each rank would normalise by its own batch: a different result, silently)."""

    _dims = (2, 3, 4, 5)

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True, process_group=None,
                 device=None, dtype=None) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device,
                         dtype)
        self.process_group = process_group

    def forward(self, input):
        if self.training:
            from ..distributed.world import launcher_size
            if launcher_size()[1] > 1:
                raise NotImplementedError(
                    "SyncBatchNorm: statistics synchronised across ranks are not supported; "
                    "use BatchNorm (each rank normalises its own batch) or train in one "
                    "process")
        return super().forward(input)

    @classmethod
    def convert_sync_batchnorm(cls, module: Module, process_group=None) -> Module:
        """`module` with every BatchNorm1d/2d/3d replaced by a SyncBatchNorm holding the
        same parameters, buffers and mode (the module itself if it is one)."""
        out = module
        if isinstance(module, _BatchNorm) and not isinstance(module, _InstanceNorm):
            out = cls(module.num_features, module.eps, module.momentum, module.affine,
                      module.track_running_stats, process_group)
            if module.affine:
                out.weight, out.bias = module.weight, module.bias
            if module.track_running_stats:
                out.running_mean = module.running_mean
                out.running_var = module.running_var
                out.num_batches_tracked = module.num_batches_tracked
            out.training = module.training
        for name, child in module.named_children():
            out.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return out


class _InstanceNorm(_BatchNorm):
    """Per-(sample, channel) normalisation over the positions; running statistics only with
    `track_running_stats` (then used in eval mode). As in PyTorch, `num_batches_tracked`
    is kept but never counted, and momentum=None means 0."""

    _nd = 1

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = False, track_running_stats: bool = False, device=None,
                 dtype=None, *,
                 bias: bool = True) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats,
                         dtype=dtype, bias=bias)

    def forward(self, input):
        name, nd = type(self).__name__, self._nd
        if not isinstance(input, Tensor) or input.ndim not in (nd + 1, nd + 2):
            raise ArgumentError(f"{name}: expected {nd + 1}D or {nd + 2}D input (got "
                                f"{getattr(input, 'ndim', None)}D input of shape "
                                f"{getattr(input, 'shape', None)})")
        d = input.ndim - nd - 1  # the channel dimension
        if input.shape[d] != self.num_features:
            if self.affine:
                raise ArgumentError(f"{name}: expected input's size at dim={d} to match "
                                    f"num_features ({self.num_features}), but got: "
                                    f"{input.shape[d]} (input of shape {input.shape})")
            warnings.warn(f"input's size at dim={d} does not match num_features. You can "
                          "silence this warning by not passing in num_features, which is not "
                          "used because affine=False", UserWarning, stacklevel=2)
        unbatched = input.ndim == nd + 1
        if unbatched:
            input = input.unsqueeze(0)
        y = F.instance_norm(input, self.running_mean, self.running_var, self.weight, self.bias,
                            self.training or not self.track_running_stats,
                            0.0 if self.momentum is None else self.momentum, self.eps)
        return y.squeeze(0) if unbatched else y


class InstanceNorm1d(_InstanceNorm):
    """Instance norm over (N, C, L) or (C, L). Like `torch.nn.InstanceNorm1d`."""

    _nd = 1


class InstanceNorm2d(_InstanceNorm):
    """Instance norm over (N, C, H, W) or (C, H, W). Like `torch.nn.InstanceNorm2d`."""

    _nd = 2


class InstanceNorm3d(_InstanceNorm):
    """Instance norm over (N, C, D, H, W) or (C, D, H, W). Like `torch.nn.InstanceNorm3d`."""

    _nd = 3


class LocalResponseNorm(Module):
    """Each value divided by (k + alpha * mean of squares over `size` neighbouring
    channels)^beta (`F.local_response_norm`). Like `torch.nn.LocalResponseNorm`."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75,
                 k: float = 1.0) -> None:
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


@lru_cache(maxsize=64)
def _cross_map_window(channels: int, size: int) -> np.ndarray:
    """(channels, channels) 0/1 matrix: row c marks the channels whose squares make up
    CrossMapLRN2d's scale for channel c. Built by replaying PyTorch's running-sum loop
    (torch.nn.modules._functions.CrossMapLRN2d), so the windows are PyTorch's exactly:
    c - size // 2 ... c + size // 2 for odd sizes, and, from channel (size + 1) // 2 on,
    channel 0 as well (that loop never subtracts channel 0's square again)."""
    pre_pad = int((size - 1) / 2 + 1)
    w = np.zeros((channels, channels))
    w[0, :min(pre_pad, channels)] = 1.0
    for c in range(1, channels):
        w[c] = w[c - 1]
        if c < channels - pre_pad + 1:
            w[c, c + pre_pad - 1] += 1.0
        if c > pre_pad:
            w[c, c - pre_pad] -= 1.0
    w.flags.writeable = False
    return w


def _cross_map_lrn2d(x: Tensor, size: int, alpha: float, beta: float, k: float) -> Tensor:
    """x / (k + alpha / size * sum of x^2 over the channel window)^beta for (N, C, H, W),
    from differentiable ops: the gradient (and its own gradients) is the exact one of
    these values. PyTorch's hand-written backward is not (it fails gradcheck)."""
    if x.ndim != 4:
        raise ShapeError(f"CrossMapLRN2d: Expected input to be 4D, got {x.ndim}D instead.")
    if x.dtype.kind not in "fc":
        raise DtypeError(f"CrossMapLRN2d: expected a floating input, got {x.dtype} "
                         f"(convert with .float())")
    n, c, h, w = x.shape
    if c == 0:
        raise IndexError("CrossMapLRN2d: the input has no channels (shape "
                         f"{tuple(x.shape)})")
    # on the input's device before wrapping (rg.tensor(device=) assigns .data, which rg.jit
    # refuses while tracing)
    win = creation.tensor(devices.to(_cross_map_window(c, size).astype(x.dtype), x.device))
    sums = (win @ (x * x).reshape(n, c, h * w)).reshape(n, c, h, w)
    return (sums * (alpha / size) + k) ** -beta * x


class CrossMapLRN2d(Module):
    """Local response normalisation across channels of (N, C, H, W) inputs, Lua Torch's
    SpatialCrossMapLRN as PyTorch keeps it: each value divided by (k + alpha / size *
    sum of squares over its channel window)^beta. Like `torch.nn.CrossMapLRN2d`, whose
    values it matches; its gradient is the exact one, where PyTorch's is not."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75,
                 k: float = 1) -> None:
        super().__init__()
        if isinstance(size, bool) or not isinstance(size, (int, np.integer)):
            raise ArgumentError(f"CrossMapLRN2d: size must be an int, got {size!r}")
        if size == 0:  # PyTorch divides alpha by it
            raise ZeroDivisionError("CrossMapLRN2d: size must be positive, got 0")
        if size < 0:
            raise ArgumentError(f"CrossMapLRN2d: size must be positive, got {size}")
        self.size, self.alpha, self.beta, self.k = int(size), alpha, beta, k

    def forward(self, input: Tensor) -> Tensor:
        return _cross_map_lrn2d(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"
