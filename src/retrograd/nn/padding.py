"""Padding layers: thin wrappers over `F.pad` with PyTorch's names."""

from __future__ import annotations

import numpy as np

from ..primitive import ArgumentError
from . import functional as F
from .module import Module

__all__ = ["ZeroPad1d", "ZeroPad2d", "ZeroPad3d", "ConstantPad1d", "ConstantPad2d",
           "ConstantPad3d", "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d",
           "ReplicationPad1d", "ReplicationPad2d", "ReplicationPad3d", "CircularPad1d",
           "CircularPad2d", "CircularPad3d"]


class _Pad(Module):
    _nd = 1
    _mode = "constant"
    _zero = False

    def __init__(self, padding, value: float = 0.0) -> None:
        super().__init__()
        n = 2 * self._nd
        self.padding = (int(padding),) * n if isinstance(padding, (int, np.integer)) else \
            tuple(int(a) for a in padding)
        if len(self.padding) != n:
            raise ArgumentError(f"{type(self).__name__}: padding must be an int or {n} ints, got "
                                f"{padding!r}")
        self.value = value

    def forward(self, input):
        if self._mode == "circular" and getattr(input, "ndim", None) not in (self._nd + 1,
                                                                              self._nd + 2):
            # PyTorch's CircularPadNd checks the input itself (ValueError), F.pad does not
            raise ArgumentError(f"{type(self).__name__}: expected {self._nd + 1}D or "
                                f"{self._nd + 2}D input (got {getattr(input, 'ndim', None)}D "
                                f"input)")
        if self._mode == "constant":
            return F.pad(input, self.padding, "constant", self.value)
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self) -> str:  # PyTorch's: ZeroPad and the others the padding alone
        if self._mode == "constant" and not self._zero:
            return f"padding={self.padding}, value={self.value}"
        return f"{self.padding}"


def _layer(name, nd, mode, constant_value=None):
    if constant_value is None:
        cls = type(name, (_Pad,), {"_nd": nd, "_mode": mode})
    else:  # ZeroPad: no value argument
        def __init__(self, padding):
            _Pad.__init__(self, padding, constant_value)
        cls = type(name, (_Pad,), {"_nd": nd, "_mode": mode, "_zero": True,
                                   "__init__": __init__})
    cls.__doc__ = f"Pad the last {nd} dimension{'s' * (nd > 1)} ({mode})."
    cls.__module__ = __name__
    return cls


ZeroPad1d = _layer("ZeroPad1d", 1, "constant", 0.0)
ZeroPad2d = _layer("ZeroPad2d", 2, "constant", 0.0)
ZeroPad3d = _layer("ZeroPad3d", 3, "constant", 0.0)
ConstantPad1d = _layer("ConstantPad1d", 1, "constant")
ConstantPad2d = _layer("ConstantPad2d", 2, "constant")
ConstantPad3d = _layer("ConstantPad3d", 3, "constant")
ReflectionPad1d = _layer("ReflectionPad1d", 1, "reflect")
ReflectionPad2d = _layer("ReflectionPad2d", 2, "reflect")
ReflectionPad3d = _layer("ReflectionPad3d", 3, "reflect")
ReplicationPad1d = _layer("ReplicationPad1d", 1, "replicate")
ReplicationPad2d = _layer("ReplicationPad2d", 2, "replicate")
ReplicationPad3d = _layer("ReplicationPad3d", 3, "replicate")
CircularPad1d = _layer("CircularPad1d", 1, "circular")
CircularPad2d = _layer("CircularPad2d", 2, "circular")
CircularPad3d = _layer("CircularPad3d", 3, "circular")
