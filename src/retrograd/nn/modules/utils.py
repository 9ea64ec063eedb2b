"""`nn.modules.utils`: the argument helpers PyTorch layer code imports (`_pair` and kin)."""

from __future__ import annotations

import collections.abc
from itertools import repeat

__all__ = ["_ntuple", "_single", "_pair", "_triple", "_quadruple", "_reverse_repeat_tuple"]


def _ntuple(n: int, name: str = "parse"):
    """A function turning a scalar into an n-tuple and any iterable into a tuple."""
    def parse(x):
        if isinstance(x, collections.abc.Iterable):
            return tuple(x)
        return tuple(repeat(x, n))

    parse.__name__ = name
    return parse


_single = _ntuple(1, "_single")
_pair = _ntuple(2, "_pair")
_triple = _ntuple(3, "_triple")
_quadruple = _ntuple(4, "_quadruple")


def _reverse_repeat_tuple(t, n: int) -> tuple:
    """`t` reversed with each element repeated n times (conv padding to F.pad's order)."""
    return tuple(x for x in reversed(t) for _ in range(n))
