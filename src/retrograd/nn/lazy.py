"""Lazy layers: `LazyLinear`, `LazyConv1d/2d/3d`, `LazyConvTranspose1d/2d/3d`,
`LazyBatchNorm1d/2d/3d` and `LazyInstanceNorm1d/2d/3d`, whose input size (in_features,
in_channels, num_features) is read from the first input, as in PyTorch.

Until then their weights are `UninitializedParameter`s (and running statistics
`UninitializedBuffer`s): empty placeholders that `materialize(shape)` fills in place,
so an optimizer built beforehand holds the very objects that get trained. The first
call materialises them, initialises them as the eager layer would, and turns the
module into that layer (`LazyLinear` becomes `Linear`). `load_state_dict` on an
uninitialised lazy module takes its shapes from the checkpoint instead.
"""

from __future__ import annotations

import numpy as np

from ..devices import namespace_of
from ..primitive import ArgumentError
from ..tensor import Tensor
from ._utils import _dtype
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .linear import Linear
from .module import Module, Parameter
from .normalization import (
    BatchNorm1d,
    BatchNorm2d,
    BatchNorm3d,
    InstanceNorm1d,
    InstanceNorm2d,
    InstanceNorm3d,
)

__all__ = ["UninitializedParameter", "UninitializedBuffer", "LazyLinear", "LazyConv1d",
           "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d", "LazyConvTranspose2d",
           "LazyConvTranspose3d", "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d",
           "LazyInstanceNorm1d", "LazyInstanceNorm2d", "LazyInstanceNorm3d"]


class _Uninitialized:
    """What the two placeholders share: `materialize`, and a repr without values."""

    __slots__ = ()
    cls_to_become: type = Tensor

    def materialize(self, shape, dtype=None) -> None:
        """Give the placeholder `shape` (uninitialised values) and turn it, in place, into
        the tensor class it stands for."""
        shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(shape)
        xp = namespace_of(self.data)  # on the placeholder's device (after Module.to)
        self.data = xp.empty(shape, dtype=self.data.dtype if dtype is None else dtype)
        self.__class__ = self.cls_to_become

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"



class UninitializedParameter(_Uninitialized, Parameter):
    """A parameter whose shape is not known yet (a lazy layer's weight before its first
    call). Like `torch.nn.UninitializedParameter`."""

    __slots__ = ()
    cls_to_become = Parameter

    def __init__(self, requires_grad: bool = True, dtype=None) -> None:
        Parameter.__init__(self, np.empty(0, dtype=_dtype(dtype)), requires_grad)

    def __deepcopy__(self, memo: dict) -> UninitializedParameter:
        """A new placeholder of the same dtype (and device), so `copy.deepcopy` of a lazy
        layer before its first call works, as torch's (Parameter's copy passes values)."""
        if id(self) in memo:
            return memo[id(self)]
        new = type(self)(self.requires_grad, self.data.dtype)
        new.data = self.data.copy()
        memo[id(self)] = new
        return new


class UninitializedBuffer(_Uninitialized, Tensor):
    """A buffer whose shape is not known yet (a lazy norm layer's running statistics).
    Like `torch.nn.UninitializedBuffer`."""

    __slots__ = ()
    cls_to_become = Tensor

    def __init__(self, requires_grad: bool = False, dtype=None) -> None:
        Tensor.__init__(self, np.empty(0, dtype=_dtype(dtype)))
        if requires_grad:
            self.requires_grad_(True)

    def __deepcopy__(self, memo: dict):
        """Refused, as torch refuses it (a lazy norm layer with running statistics cannot
        be deep-copied before its first call)."""
        raise ValueError("Attempted to deepcopy an UninitializedBuffer: call the lazy "
                         "module with a dummy batch to initialize it first")


def _placeholders(module: Module):
    """(registry, name, tensor) for each of the module's own uninitialised tensors."""
    for registry in (module._parameters, module._buffers):
        for name, t in registry.items():
            if isinstance(t, _Uninitialized):
                yield registry, name, t


class LazyModuleMixin:
    """Infer the missing sizes from the first input (`initialize_parameters`), then become
    `cls_to_become`. Mixed in before the layer class, as in PyTorch."""

    cls_to_become: type = None

    def has_uninitialized_params(self) -> bool:
        """Whether a parameter or buffer still waits for its shape."""
        return any(True for _ in _placeholders(self))

    def initialize_parameters(self, *args, **kwargs) -> None:
        """Materialise the placeholders from the first input (each lazy layer's own)."""
        raise NotImplementedError

    def __call__(self, *args, **kwargs):
        if self.has_uninitialized_params():
            self.initialize_parameters(*args, **kwargs)
        if not self.has_uninitialized_params():
            self.__class__ = self.cls_to_become
        return self.forward(*args, **kwargs)

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        """Materialise the placeholders with the checkpoint's shapes, then load as usual."""
        for _, name, t in list(_placeholders(self)):
            if name in state_dict:
                t.materialize(np.shape(getattr(state_dict[name], "data", state_dict[name])))
        self._lazy_sizes()
        return super().load_state_dict(state_dict, strict, assign)

    def _lazy_sizes(self) -> None:
        """Set the inferred size attribute from materialised weights (after a load)."""


# ---------------------------------------------------------------- linear

class LazyLinear(LazyModuleMixin, Linear):
    """A `Linear` whose in_features is the last dimension of its first input. Like
    `torch.nn.LazyLinear`."""

    cls_to_become = Linear

    def __init__(self, out_features: int, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__(0, 0, False, dtype=dtype)
        self.out_features = out_features
        self.weight = UninitializedParameter(dtype=dtype)
        if bias:
            self.bias = UninitializedParameter(dtype=dtype)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input, *args, **kwargs) -> None:
        if self.has_uninitialized_params():
            self.in_features = int(input.shape[-1])
            self.weight.materialize((self.out_features, self.in_features))
            if isinstance(self.bias, _Uninitialized):
                self.bias.materialize((self.out_features,))
            self.reset_parameters()

    def _lazy_sizes(self) -> None:
        if not isinstance(self.weight, _Uninitialized) and self.weight.ndim == 2:
            self.in_features = self.weight.shape[1]


# ---------------------------------------------------------------- convolution

class _LazyConv(LazyModuleMixin):
    """in_channels from dim 1 of a batched input (dim 0 unbatched)."""

    def _lazy_init(self, out_channels: int, bias: bool, dtype) -> None:
        self.out_channels = out_channels
        self.weight = UninitializedParameter(dtype=dtype)
        if bias:
            self.bias = UninitializedParameter(dtype=dtype)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def _weight_shape(self) -> tuple:
        g = self.groups
        pair = (self.in_channels, self.out_channels // g) if self._transposed else \
            (self.out_channels, self.in_channels // g)
        return pair + self.kernel_size

    def initialize_parameters(self, input, *args, **kwargs) -> None:
        if not self.has_uninitialized_params():
            return
        nd = self._nd
        shape = getattr(input, "shape", ())
        if len(shape) not in (nd + 1, nd + 2):
            raise RuntimeError(f"{type(self).__name__}: expected {nd + 1}D (unbatched) or "
                               f"{nd + 2}D (batched) input, but got input of size "
                               f"{list(shape)}")
        self.in_channels = int(shape[1] if len(shape) == nd + 2 else shape[0])
        if self.in_channels % self.groups:
            raise ArgumentError(f"{type(self).__name__}: in_channels ({self.in_channels}) must "
                                f"be divisible by groups ({self.groups})")
        self.weight.materialize(self._weight_shape())
        if isinstance(self.bias, _Uninitialized):
            self.bias.materialize((self.out_channels,))
        self.reset_parameters()

    def _lazy_sizes(self) -> None:
        w = self.weight
        if not isinstance(w, _Uninitialized) and w.ndim == self._nd + 2:
            self.in_channels = w.shape[0] if self._transposed else w.shape[1] * self.groups


def _lazy_conv(base: type, doc: str) -> type:
    def __init__(self, out_channels: int, kernel_size, stride=1, padding=0, dilation=1,
                 groups: int = 1, bias: bool = True, padding_mode: str = "zeros",
                 device=None, dtype=None) -> None:
        base.__init__(self, 0, 0, kernel_size, stride, padding, dilation, groups, False,
                      padding_mode, dtype=dtype)
        self._lazy_init(out_channels, bias, dtype)

    def __init_t__(self, out_channels: int, kernel_size, stride=1, padding=0,
                   output_padding=0, groups: int = 1, bias: bool = True, dilation=1,
                   padding_mode: str = "zeros", device=None, dtype=None) -> None:
        base.__init__(self, 0, 0, kernel_size, stride, padding, output_padding, groups, False,
                      dilation, padding_mode, dtype=dtype)
        self._lazy_init(out_channels, bias, dtype)

    init = __init_t__ if base._transposed else __init__
    init.__doc__ = None
    return type(f"Lazy{base.__name__}", (_LazyConv, base),
                {"__init__": init, "cls_to_become": base, "__doc__": doc,
                 "__module__": __name__})


LazyConv1d = _lazy_conv(Conv1d, "A `Conv1d` whose in_channels comes from its first input. "
                        "Like `torch.nn.LazyConv1d`.")
LazyConv2d = _lazy_conv(Conv2d, "A `Conv2d` whose in_channels comes from its first input. "
                        "Like `torch.nn.LazyConv2d`.")
LazyConv3d = _lazy_conv(Conv3d, "A `Conv3d` whose in_channels comes from its first input. "
                        "Like `torch.nn.LazyConv3d`.")
LazyConvTranspose1d = _lazy_conv(ConvTranspose1d, "A `ConvTranspose1d` whose in_channels "
                                 "comes from its first input. Like "
                                 "`torch.nn.LazyConvTranspose1d`.")
LazyConvTranspose2d = _lazy_conv(ConvTranspose2d, "A `ConvTranspose2d` whose in_channels "
                                 "comes from its first input. Like "
                                 "`torch.nn.LazyConvTranspose2d`.")
LazyConvTranspose3d = _lazy_conv(ConvTranspose3d, "A `ConvTranspose3d` whose in_channels "
                                 "comes from its first input. Like "
                                 "`torch.nn.LazyConvTranspose3d`.")


# ---------------------------------------------------------------- normalisation

class _LazyNorm(LazyModuleMixin):
    """num_features from dim 1 of the first input (as PyTorch, also for an unbatched
    instance-norm input)."""

    def _lazy_init(self, dtype) -> None:
        if self.affine:
            self.weight = UninitializedParameter(dtype=dtype)
            if self.bias is not None:
                self.bias = UninitializedParameter(dtype=dtype)
        if self.track_running_stats:
            self.register_buffer("running_mean", UninitializedBuffer(dtype=dtype))
            self.register_buffer("running_var", UninitializedBuffer(dtype=dtype))

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input, *args, **kwargs) -> None:
        if not self.has_uninitialized_params():
            return
        shape = getattr(input, "shape", ())
        if len(shape) < 2:
            raise ArgumentError(f"{type(self).__name__}: expected an input of at least 2 "
                                f"dimensions (N, C, *), got shape {tuple(shape)}")
        self.num_features = int(shape[1])
        for _, _, t in list(_placeholders(self)):
            t.materialize((self.num_features,))
        self.reset_parameters()

    def _lazy_sizes(self) -> None:
        for t in (self.weight, self.running_mean):
            if t is not None and not isinstance(t, _Uninitialized):
                self.num_features = t.shape[0]


def _lazy_norm(base: type, doc: str) -> type:
    # affine and track_running_stats default to True for every lazy norm, the instance
    # norms included (unlike InstanceNorm's own defaults), as in PyTorch
    def __init__(self, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device=None, dtype=None, *,
                 bias: bool = True) -> None:
        base.__init__(self, 0, eps, momentum, affine, track_running_stats, dtype=dtype,
                      bias=bias)
        self._lazy_init(dtype)

    return type(f"Lazy{base.__name__}", (_LazyNorm, base),
                {"__init__": __init__, "cls_to_become": base, "__doc__": doc,
                 "__module__": __name__})


_BN = ("A `{0}` whose num_features is dim 1 of its first input. Like `torch.nn.Lazy{0}`.")
LazyBatchNorm1d = _lazy_norm(BatchNorm1d, _BN.format("BatchNorm1d"))
LazyBatchNorm2d = _lazy_norm(BatchNorm2d, _BN.format("BatchNorm2d"))
LazyBatchNorm3d = _lazy_norm(BatchNorm3d, _BN.format("BatchNorm3d"))
LazyInstanceNorm1d = _lazy_norm(InstanceNorm1d, _BN.format("InstanceNorm1d"))
LazyInstanceNorm2d = _lazy_norm(InstanceNorm2d, _BN.format("InstanceNorm2d"))
LazyInstanceNorm3d = _lazy_norm(InstanceNorm3d, _BN.format("InstanceNorm3d"))
