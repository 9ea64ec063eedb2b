"""PyTorch's legacy tensor types: `rg.FloatTensor`, `rg.LongTensor`, ... as older tutorials
use them (`torch.LongTensor([1])`, `torch.FloatTensor(2, 3)`, `isinstance(x,
torch.FloatTensor)`, `x.type(torch.LongTensor)`).

Calling one makes an ordinary `Tensor` of its dtype: from sizes (zero-filled, where
PyTorch leaves the memory uninitialized), from data (converted, floats truncated
toward zero for the integer types, as PyTorch does), or from a tensor of that same
dtype (returned as is; another dtype is refused, as in PyTorch). `isinstance` is true
for host tensors of that dtype.
"""

from __future__ import annotations

import numpy as np

from .. import creation
from ..dtypes import as_array
from ..size import Size
from ..tensor import Tensor

__all__ = ["FloatTensor", "DoubleTensor", "HalfTensor", "LongTensor", "IntTensor",
           "ShortTensor", "CharTensor", "ByteTensor", "BoolTensor"]


class _LegacyType(type):
    """Metaclass: calling the class builds a Tensor; isinstance checks the dtype."""

    legacy_dtype: np.dtype

    def __instancecheck__(cls, obj) -> bool:
        return (isinstance(obj, Tensor) and obj.data.dtype == cls.legacy_dtype
                and obj.data.__class__ is np.ndarray)

    def __call__(cls, *args, device=None) -> Tensor:
        dt = cls.legacy_dtype
        name = cls.__name__
        if device is not None and str(device) != "cpu":
            raise RuntimeError(f"{name}(): legacy constructor expects device type cpu, got "
                               f"{device!r}; use rg.tensor(..., device=...)")
        if not args:
            return creation.zeros(0, dtype=dt)
        if all(isinstance(a, (int, np.integer)) and not isinstance(a, bool) for a in args):
            return creation.zeros(*(int(a) for a in args), dtype=dt)
        if len(args) != 1:
            raise TypeError(f"{name}(): expected sizes (ints) or one sequence of data, got "
                            f"{len(args)} arguments")
        data = args[0]
        if isinstance(data, Size):  # FloatTensor(w.size()): a shape, as in PyTorch
            return creation.zeros(*data, dtype=dt)
        if isinstance(data, Tensor):
            if data.data.dtype != dt:
                raise TypeError(f"{name}(): expected a tensor of dtype {dt}, got dtype "
                                f"{data.dtype}; use .to({dt}) to convert")
            return data
        return Tensor(as_array(data, dt))


def _make(name: str, dtype) -> type:
    return _LegacyType(name, (), {"legacy_dtype": np.dtype(dtype),
                                  "__doc__": f"PyTorch's legacy `torch.{name}` ({dtype})."})


FloatTensor = _make("FloatTensor", np.float32)
DoubleTensor = _make("DoubleTensor", np.float64)
HalfTensor = _make("HalfTensor", np.float16)
LongTensor = _make("LongTensor", np.int64)
IntTensor = _make("IntTensor", np.int32)
ShortTensor = _make("ShortTensor", np.int16)
CharTensor = _make("CharTensor", np.int8)
ByteTensor = _make("ByteTensor", np.uint8)
BoolTensor = _make("BoolTensor", np.bool_)
