"""`rg.Size`: PyTorch's `torch.Size`, a tuple of ints that says it is a shape.

`Tensor.shape` stays a plain tuple and `Tensor.size` NumPy's element count (SPEC);
`rg.Size` is for code that builds or compares shapes as PyTorch code does:
`rg.Size([2, 3]) == (2, 3)`, `.numel()`, slices and concatenations stay Sizes."""

from __future__ import annotations

import operator

__all__ = ["Size"]


class Size(tuple):
    """A shape: a tuple of ints (from any iterable of ints or integer scalars)."""

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
        return Size(got) if isinstance(index, slice) else got

    def __add__(self, other):
        if not isinstance(other, tuple):
            return NotImplemented
        return Size(tuple(self) + tuple(other))

    def __radd__(self, other):
        if not isinstance(other, tuple):
            return NotImplemented
        return Size(tuple(other) + tuple(self))

    def __mul__(self, n):
        return Size(tuple(self) * n)

    __rmul__ = __mul__

    def __reduce__(self):
        return (Size, (tuple(self),))
