"""PyTorch's `torch.nn.parameter` path: the tensors a `Module` registers, re-exported."""

from .lazy import UninitializedBuffer, UninitializedParameter  # noqa: F401
from .module import Buffer, Parameter  # noqa: F401

__all__ = ["Parameter", "Buffer", "UninitializedParameter", "UninitializedBuffer"]
