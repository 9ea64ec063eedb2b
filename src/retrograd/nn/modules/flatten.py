"""PyTorch's `torch.nn.modules.flatten` path: its layers, re-exported from retrograd.nn."""

from ..flatten import (  # noqa: F401
    Flatten,
    Unflatten,
)

__all__ = [
    "Flatten", "Unflatten",
]
