"""The old hook form of weight norm: `weight_norm(module)` replaces `weight` by the
parameters `weight_g` and `weight_v` and recomputes `weight = g * v / ||v||` before each
forward (PyTorch's state_dict keys `weight_g`, `weight_v`). Deprecated in PyTorch in favour
of `parametrizations.weight_norm`, and so it warns."""

from __future__ import annotations

import warnings

from ...primitive import ArgumentError
from ..module import Module, Parameter
from . import _hooks
from ._norms import norm_except_dim
from ._norms import weight_norm as _weight_norm

__all__ = ["weight_norm", "remove_weight_norm", "WeightNorm"]


class WeightNorm:
    """The pre-forward hook that recomputes `module.<name>` from `<name>_g`, `<name>_v`."""

    def __init__(self, name: str, dim: int) -> None:
        self.name = name
        self.dim = -1 if dim is None else dim

    def compute_weight(self, module: Module):
        return _weight_norm(getattr(module, self.name + "_v"), getattr(module, self.name + "_g"),
                            self.dim)

    @staticmethod
    def apply(module: Module, name: str, dim: int) -> WeightNorm:
        if name in _hooks.hooks(module):
            raise RuntimeError(f"Cannot register two weight_norm hooks on the same parameter "
                               f"{name}")
        fn = WeightNorm(name, dim)
        weight = getattr(module, name)
        delattr(module, name)
        module.register_parameter(name + "_g", Parameter(norm_except_dim(weight, fn.dim).detach()))
        module.register_parameter(name + "_v", Parameter(weight.detach()))
        object.__setattr__(module, name, fn.compute_weight(module))
        _hooks.add_hook(module, name, fn)
        return fn

    def remove(self, module: Module) -> None:
        weight = self.compute_weight(module)
        delattr(module, self.name)
        delattr(module, self.name + "_g")
        delattr(module, self.name + "_v")
        module.register_parameter(self.name, Parameter(weight.detach()))

    def __call__(self, module: Module, inputs) -> None:
        object.__setattr__(module, self.name, self.compute_weight(module))


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Split `module.<name>` into magnitude `<name>_g` and direction `<name>_v` (deprecated:
    use `parametrizations.weight_norm`)."""
    warnings.warn("`torch.nn.utils.weight_norm` is deprecated in favor of "
                  "`torch.nn.utils.parametrizations.weight_norm`.", FutureWarning, stacklevel=2)
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module: Module, name: str = "weight") -> Module:
    """Undo `weight_norm`: `<name>` becomes a plain parameter again."""
    fn = _hooks.hooks(module).get(name)
    if not isinstance(fn, WeightNorm):
        raise ArgumentError(f"weight_norm of '{name}' not found in {module}")
    fn.remove(module)
    _hooks.remove_hook(module, name)
    return module
