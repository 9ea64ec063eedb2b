"""Shape layers: `Flatten`."""

from __future__ import annotations

from .module import Module

__all__ = ["Flatten"]


class Flatten(Module):
    """Flatten dimensions start_dim..end_dim (default: all but the batch dimension)."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, x):
        return x.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"
