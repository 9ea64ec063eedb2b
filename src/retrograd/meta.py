"""The "meta" device: tensors with a shape and a dtype but no data, as PyTorch's.

Code such as the `torch.func` model-ensembling recipe moves a module to "meta"
(`copy.deepcopy(model).to("meta")`) only to keep its structure, then runs it with
`functional_call` on real parameters; `rg.empty(n, device="meta")` and layers built with
`device="meta"` describe shapes without allocating. Shapes, dtypes, `.to(dtype)` and
creation work; anything that needs values (an op, `.numpy()`, copying to the CPU) is
refused with `MetaDataError` naming what was asked. PyTorch would compute a meta result
there (shape inference); retrograd refuses instead, so no value is ever made up.
"""

from __future__ import annotations

import math

import numpy as np

from . import devices

__all__ = ["MetaArray", "MetaDataError"]


class MetaDataError(NotImplementedError):
    """An operation needed the values of a meta tensor, which has none."""


def _refuse(what: str):
    raise MetaDataError(f"{what}: meta tensors have a shape and a dtype but no data, so "
                        "retrograd cannot compute on them; move the module or tensor to a real "
                        "device first (module.to_empty(device='cpu') then initialise it), or "
                        "pass real parameters with rg.func.functional_call")


class MetaArray:
    """The array of a meta tensor: `shape` and `dtype` only."""

    __slots__ = ("shape", "dtype")

    def __init__(self, shape, dtype) -> None:
        self.shape = tuple(int(s) for s in shape)
        self.dtype = np.dtype(dtype)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.size * self.itemsize

    @property
    def strides(self) -> tuple:
        out, step = [], self.itemsize
        for s in reversed(self.shape):
            out.append(step)
            step *= max(s, 1)
        return tuple(reversed(out))

    def astype(self, dtype, copy: bool = True, **kwargs) -> MetaArray:
        return MetaArray(self.shape, dtype)

    def copy(self, order: str = "C") -> MetaArray:
        return MetaArray(self.shape, self.dtype)

    def __deepcopy__(self, memo) -> MetaArray:
        return self.copy()

    def __reduce__(self):
        return (MetaArray, (self.shape, self.dtype.str))

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __repr__(self) -> str:
        return f"MetaArray(shape={self.shape}, dtype={self.dtype})"

    def __array__(self, *args, **kwargs):
        _refuse("converting a meta tensor to a NumPy array")

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        _refuse(f"'{ufunc.__name__}'")

    def __array_function__(self, func, types, args, kwargs):
        _refuse(f"'{func.__name__}'")

    def __getitem__(self, index):
        _refuse("indexing")

    def __setitem__(self, index, value):
        _refuse("writing into a meta tensor")

    def __bool__(self) -> bool:
        _refuse("bool()")

    def __float__(self) -> float:
        _refuse("float()")

    def __int__(self) -> int:
        _refuse("int()")

    def item(self):
        _refuse("item()")

    def tolist(self):
        _refuse("tolist()")

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        _refuse(f"'{name}'")


def _shape(shape) -> tuple:
    return (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(shape)


class _Namespace:
    """The array module of the meta device: creation makes MetaArrays; every other function
    is refused (it would need values)."""

    def empty(self, shape, dtype=float, order="C") -> MetaArray:
        return MetaArray(_shape(shape), dtype)

    zeros = ones = empty

    def full(self, shape, fill_value, dtype=None, order="C") -> MetaArray:
        return MetaArray(_shape(shape), np.result_type(fill_value) if dtype is None else dtype)

    def empty_like(self, a, dtype=None, order="K", shape=None) -> MetaArray:
        return MetaArray(a.shape if shape is None else _shape(shape),
                         a.dtype if dtype is None else dtype)

    zeros_like = ones_like = empty_like

    def full_like(self, a, fill_value, dtype=None, order="K", shape=None) -> MetaArray:
        return self.empty_like(a, dtype, order, shape)

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        _refuse(f"'{name}'")


def _to_host(arr):
    raise MetaDataError("Cannot copy out of meta tensor; no data! (a meta tensor has a shape "
                        "and a dtype only; make real ones with to_empty(device='cpu'))")


def _load() -> devices.Backend:
    return devices.Backend("meta", MetaArray, _Namespace(), index_of=lambda a: 0,
                           to_device=lambda arr, index: MetaArray(arr.shape, arr.dtype),
                           to_host=_to_host)


devices.register_loader("meta", _load)
