"""PyTorch's `torch.nn.modules.lazy` path: its layers, re-exported from retrograd.nn."""

from ..lazy import (  # noqa: F401
    LazyModuleMixin,
)

__all__ = [
    "LazyModuleMixin",
]
