"""Splitting with PyTorch's names: `rg.split_with_sizes`, `rg.hsplit`, `rg.vsplit`,
`rg.dsplit`. Each piece is a slice of the input (a `getitem`), so gradients and
`rg.jit` come from that op."""

from __future__ import annotations

import numpy as np

from ..tensor import Tensor
from ._args import _dims, _t
from ._errors import ArgumentError
from .numpy_style import one_split_spec, tensor_split
from .shape import split


def split_with_sizes(input, split_sizes, dim: int = 0) -> tuple:
    """Pieces of `input` along `dim` of the given lengths (non-negative ints adding up
    to that dimension's length). Like `torch.split_with_sizes`."""
    x = _t(input)
    d = _dims(dim, None, x.ndim, "split_with_sizes")
    sizes = list(split_sizes)
    for s in sizes:
        if isinstance(s, bool) or not isinstance(s, (int, np.integer)):
            raise TypeError(f"split_with_sizes(): split_sizes must be ints, got {split_sizes}")
    if any(s < 0 for s in sizes):
        raise ArgumentError(f"split_with_sizes(): split_sizes must be non-negative, got "
                            f"{sizes}")
    n = x.shape[d] if x.ndim else 1
    if sum(sizes) != n:
        raise ArgumentError(f"split_with_sizes(): split_sizes {sizes} must add up to {n}, the "
                            f"length of dimension {d} of shape {x.shape}")
    return split(x, [int(s) for s in sizes], d)


def _directional(fn: str, input, indices_or_sections, need: int, dim: int,  # noqa: A002
                 sections=None, indices=None) -> tuple:
    x = _t(input)
    indices_or_sections = one_split_spec(fn, indices_or_sections, sections=sections,
                                         indices=indices)
    if x.ndim < need:
        raise ArgumentError(f"{fn}(): needs a tensor with at least {need} dimension(s), got "
                            f"shape {x.shape}")
    s = indices_or_sections
    if isinstance(s, (int, np.integer)) and not isinstance(s, bool):
        n = x.shape[dim]
        if s == 0 or n % s:
            raise ArgumentError(f"{fn}(): dimension {dim} of size {n} (shape {x.shape}) is not "
                                f"divisible into {s} equal pieces")
    elif isinstance(s, Tensor) or not isinstance(s, (list, tuple)):
        raise TypeError(f"{fn}(): indices_or_sections must be an int or a list of ints, got "
                        f"{type(s).__name__}")
    return tensor_split(x, s, dim)


def hsplit(input, indices_or_sections=None, *, sections=None, indices=None) -> tuple:
    """Split horizontally: along dim 1 (dim 0 of a 1-d tensor), into that many equal
    pieces (an int that must divide the length) or before each index of a list. Like
    `torch.hsplit`."""
    x = _t(input)
    return _directional("hsplit", x, indices_or_sections, 1, 1 if x.ndim > 1 else 0,
                        sections, indices)


def vsplit(input, indices_or_sections=None, *, sections=None, indices=None) -> tuple:
    """Split vertically: along dim 0 of a tensor of 2 or more dims. Like `torch.vsplit`."""
    return _directional("vsplit", input, indices_or_sections, 2, 0, sections, indices)


def dsplit(input, indices_or_sections=None, *, sections=None, indices=None) -> tuple:
    """Split depth-wise: along dim 2 of a tensor of 3 or more dims. Like `torch.dsplit`."""
    return _directional("dsplit", input, indices_or_sections, 3, 2, sections, indices)
