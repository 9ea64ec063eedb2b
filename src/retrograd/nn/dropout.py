"""Regularisation layers active only in training mode: `Dropout`."""

from __future__ import annotations

from . import functional as F
from .module import Module

__all__ = ["Dropout"]


class Dropout(Module):
    """Zero elements with probability p in training mode (scaled by 1/(1-p)); identity in eval."""

    def __init__(self, p: float = 0.5) -> None:
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p

    def forward(self, x):
        return F.dropout(x, self.p, self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}"
