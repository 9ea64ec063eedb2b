"""`rg.strided` and the other layouts, `rg.contiguous_format` and the other memory formats.

retrograd keeps every tensor in one layout (a dense NumPy array) and one memory
format, so these exist for code written for PyTorch: `layout=rg.strided`,
`memory_format=rg.preserve_format` or `rg.channels_last` are accepted wherever
torch takes them, and change no value (channels-last only changes where torch
puts the numbers in memory, never what they are). A sparse layout is refused.
"""

from __future__ import annotations

__all__ = ["layout", "strided", "sparse_coo", "sparse_csr", "sparse_csc", "sparse_bsr",
           "sparse_bsc", "memory_format", "contiguous_format", "preserve_format",
           "channels_last", "channels_last_3d", "check_keywords"]


class _Named:
    """A named constant that prints and pickles as the module-level name it is bound to."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"retrograd.{self.name}"

    def __reduce__(self):
        return self.name


class layout(_Named):
    """A tensor layout, as `torch.layout`; only `strided` (dense) tensors exist here."""


class memory_format(_Named):
    """A memory format, as `torch.memory_format`."""


strided = layout("strided")
sparse_coo = layout("sparse_coo")
sparse_csr = layout("sparse_csr")
sparse_csc = layout("sparse_csc")
sparse_bsr = layout("sparse_bsr")
sparse_bsc = layout("sparse_bsc")
contiguous_format = memory_format("contiguous_format")
preserve_format = memory_format("preserve_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")


def check_keywords(fn: str, layout_=None, memory_format_=None, pin_memory=False) -> None:
    """Refuse what retrograd cannot honour among torch's `layout=`, `memory_format=` and
    `pin_memory=` keywords (a sparse layout, or something that is not one); accept the rest."""
    if layout_ is not None and layout_ is not strided:
        if isinstance(layout_, layout):
            raise NotImplementedError(f"{fn}(): layout {layout_!r} is not supported: retrograd "
                                      f"tensors are dense (layout=rg.strided)")
        raise TypeError(f"{fn}(): 'layout' must be an rg.layout such as rg.strided, got "
                        f"{layout_!r}")
    if memory_format_ is not None and not isinstance(memory_format_, memory_format):
        raise TypeError(f"{fn}(): 'memory_format' must be an rg.memory_format such as "
                        f"rg.contiguous_format, got {memory_format_!r}")
    if not isinstance(pin_memory, bool):
        raise TypeError(f"{fn}(): 'pin_memory' must be a bool, got {pin_memory!r}")
