"""PyTorch's `torch.nn.modules.module` path: its layers, re-exported from retrograd.nn."""

from ..module import (  # noqa: F401
    Module,
)

__all__ = [
    "Module",
]
