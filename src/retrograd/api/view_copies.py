"""PyTorch's `*_copy` functions: each view op's result as a new tensor of its own.

`torch.view_copy(x, shape)` is `x.view(shape).clone()`; torch offers them so that
code can ask for a view's values without aliasing. Here each is its view op followed
by `clone`, so gradients flow exactly as through the view. Also the aliases
`unsafe_chunk`, `unsafe_split`, `unsafe_split_with_sizes`, the
in-place `detach_`, and `constant_pad_nd` (F.pad's constant mode).
"""

from __future__ import annotations

from collections.abc import Callable

from ..primitive import ArgumentError
from ..tensor import Tensor
from .complex import view_as_complex, view_as_real
from .resample import pad as _pad

__all__ = ["view_copy", "permute_copy", "expand_copy", "transpose_copy", "t_copy",
           "squeeze_copy", "unsqueeze_copy", "diagonal_copy", "select_copy", "slice_copy",
           "split_copy", "split_with_sizes_copy", "unbind_copy", "unfold_copy", "detach_copy",
           "alias_copy", "narrow_copy", "view_as_real_copy", "view_as_complex_copy",
           "unsafe_chunk", "unsafe_split", "unsafe_split_with_sizes", "detach_",
           "constant_pad_nd", "as_strided", "as_strided_copy"]


def _tensor(x, name: str) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}(): argument 'input' must be a Tensor, got {type(x).__name__}")
    return x


def _copied(name: str, view: Callable) -> Callable:
    """`name(input, ...)`: `view(input, ...)` cloned (each part of a tuple result)."""
    def fn(input, *args, **kwargs):  # noqa: A002 - PyTorch's name
        out = view(_tensor(input, name), *args, **kwargs)
        if isinstance(out, (tuple, list)):
            return tuple(t.clone() for t in out)
        return out.clone()
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"`{name.removesuffix('_copy')}`'s result as a new tensor (PyTorch's `{name}`)."
    return fn


def _slice(x: Tensor, dim: int = 0, start=None, end=None, step: int = 1) -> Tensor:
    if step <= 0:
        raise ArgumentError(f"slice_copy(): slice step must be positive, got {step}")
    idx = [slice(None)] * x.ndim
    idx[dim] = slice(start, end, step)
    return x[tuple(idx)]


def _expand(x: Tensor, size, *, implicit: bool = False) -> Tensor:
    return x.expand(*size) if isinstance(size, (tuple, list)) else x.expand(size)


view_copy = _copied("view_copy", lambda x, *shape: x.view(*shape) if len(shape) == 1 and not
                    isinstance(shape[0], (int, tuple, list)) else x.reshape(*shape))
"""(a copy: torch's view_copy takes any layout, as reshape does; view(dtype) bitcasts)"""
permute_copy = _copied("permute_copy", lambda x, dims: x.permute(*dims))
expand_copy = _copied("expand_copy", _expand)
transpose_copy = _copied("transpose_copy", lambda x, dim0, dim1: x.transpose(dim0, dim1))
t_copy = _copied("t_copy", lambda x: x.t())
squeeze_copy = _copied("squeeze_copy", lambda x, dim=None: x.squeeze() if dim is None
                       else x.squeeze(dim))
unsqueeze_copy = _copied("unsqueeze_copy", lambda x, dim: x.unsqueeze(dim))
diagonal_copy = _copied("diagonal_copy", lambda x, offset=0, dim1=0, dim2=1:
                        x.diagonal(offset, dim1, dim2))
select_copy = _copied("select_copy", lambda x, dim, index: x.select(dim, index))
slice_copy = _copied("slice_copy", _slice)
split_copy = _copied("split_copy", lambda x, split_size, dim=0: x.split(split_size, dim))
split_with_sizes_copy = _copied("split_with_sizes_copy", lambda x, split_sizes, dim=0:
                                x.split_with_sizes(split_sizes, dim))
unbind_copy = _copied("unbind_copy", lambda x, dim=0: x.unbind(dim))
unfold_copy = _copied("unfold_copy", lambda x, dimension, size, step: x.unfold(dimension, size,
                                                                                step))
detach_copy = _copied("detach_copy", lambda x: x.detach())
alias_copy = _copied("alias_copy", lambda x: x)
narrow_copy = _copied("narrow_copy", lambda x, dim, start, length: x.narrow(dim, start, length))
def as_strided(input: Tensor, size, stride, storage_offset: int | None = None) -> Tensor:  # noqa: A002
    """`input.as_strided(size, stride, storage_offset)` (PyTorch's top-level form)."""
    return _tensor(input, "as_strided").as_strided(size, stride, storage_offset)


as_strided_copy = _copied("as_strided_copy", as_strided)
view_as_real_copy = _copied("view_as_real_copy", view_as_real)
view_as_complex_copy = _copied("view_as_complex_copy", view_as_complex)


def unsafe_chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:  # noqa: A002
    """`chunk` (PyTorch's `unsafe_chunk` differs only in not checking in-place use)."""
    return tuple(_tensor(input, "unsafe_chunk").chunk(chunks, dim))


def unsafe_split(input: Tensor, split_size, dim: int = 0) -> tuple[Tensor, ...]:  # noqa: A002
    """`split` (see `unsafe_chunk`)."""
    return tuple(_tensor(input, "unsafe_split").split(split_size, dim))


def unsafe_split_with_sizes(input: Tensor, split_sizes, dim: int = 0) -> tuple[Tensor, ...]:  # noqa: A002
    """`split_with_sizes` (see `unsafe_chunk`)."""
    return tuple(_tensor(input, "unsafe_split_with_sizes").split_with_sizes(split_sizes, dim))


def detach_(input: Tensor) -> Tensor:  # noqa: A002
    """`input.detach_()`: detach in place and return it."""
    return _tensor(input, "detach_").detach_()


def constant_pad_nd(input: Tensor, pad, value: float = 0) -> Tensor:  # noqa: A002
    """`F.pad(input, pad, mode="constant", value=value)` (PyTorch's `constant_pad_nd`)."""
    return _pad(_tensor(input, "constant_pad_nd"), tuple(pad), mode="constant", value=value)
