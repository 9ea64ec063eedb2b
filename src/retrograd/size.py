"""`rg.Size`: PyTorch's `torch.Size`, a tuple of ints that says it is a shape.

`Tensor.shape` and `Tensor.size()` are Sizes, as in PyTorch (a tuple subclass, so
NumPy and tuple code take them unchanged), while `Tensor.size` uncalled stays NumPy's
element count (SPEC): `rg.Size([2, 3]) == (2, 3)`, `x.shape.numel()`, and slices and
concatenations stay Sizes."""

from __future__ import annotations

import operator

__all__ = ["Size", "Shape"]


class Size(tuple):
    """A shape: a tuple of ints (from any iterable of ints or integer scalars)."""

    __slots__ = ()

    def __new__(cls, sizes=()):
        items = []
        for k, s in enumerate(sizes):
            if hasattr(s, "ndim") and getattr(s, "ndim", 0) == 0 and hasattr(s, "item"):
                s = s.item()
            if isinstance(s, float) or not hasattr(s, "__index__"):
                raise TypeError(f"rg.Size() takes an iterable of 'int' (item {k} is "
                                f"'{type(s).__name__}')")
            items.append(operator.index(s))
        return super().__new__(cls, items)

    def __repr__(self) -> str:
        return f"rg.Size({list(self)})"


    def numel(self) -> int:
        """The number of elements of a tensor of this shape (1 for `rg.Size([])`)."""
        n = 1
        for s in self:
            n *= s
        return n

    def __getitem__(self, index):
        got = super().__getitem__(index)
        return type(self)(got) if isinstance(index, slice) else got

    def __add__(self, other):
        if not isinstance(other, tuple):
            return NotImplemented
        return type(self)(tuple(self) + tuple(other))

    def __radd__(self, other):
        if not isinstance(other, tuple):
            return NotImplemented
        return type(self)(tuple(other) + tuple(self))

    def __mul__(self, n):
        return type(self)(tuple(self) * n)

    __rmul__ = __mul__

    def __reduce__(self):
        return (Size, (tuple(self),))


class Shape(Size):
    """A tensor's shape (`t.shape`, `t.size()`): an `rg.Size` that prints as the plain tuple
    it long was, so messages and prints that show shapes read as they did."""

    __slots__ = ()
    __repr__ = tuple.__repr__
    __str__ = tuple.__repr__
