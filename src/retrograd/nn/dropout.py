"""Regularisation layers active only in training mode: `Dropout`, `Dropout1d`, `Dropout2d`,
`Dropout3d` (whole channels), `AlphaDropout` and `FeatureAlphaDropout` (for SELU networks).
Each holds PyTorch's `p` and `inplace` and calls its `functional` twin with `self.training`."""

from __future__ import annotations

from ..primitive import ArgumentError
from . import functional as F
from .module import Module

__all__ = ["Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout",
           "FeatureAlphaDropout"]


class _DropoutNd(Module):
    """`p` (checked) and `inplace`, and the call into `_fn` in training mode only."""

    _fn = None

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ArgumentError(f"{type(self).__name__}: dropout probability has to be between 0 "
                                f"and 1, but got {p}")
        self.p, self.inplace = p, inplace

    def forward(self, input):
        return type(self)._fn(input, self.p, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    """Zero elements with probability p in training mode (scaled by 1/(1-p)); identity in
    eval. Like `torch.nn.Dropout`."""
    _fn = staticmethod(F.dropout)


class Dropout1d(_DropoutNd):
    """Zero whole channels of (N, C, L) or (C, L) in training mode. Like
    `torch.nn.Dropout1d`."""
    _fn = staticmethod(F.dropout1d)


class Dropout2d(_DropoutNd):
    """Zero whole channels of (N, C, H, W) in training mode (a 3-D input is (N, C, L), as in
    PyTorch). Like `torch.nn.Dropout2d`."""
    _fn = staticmethod(F.dropout2d)


class Dropout3d(_DropoutNd):
    """Zero whole channels of (N, C, D, H, W) or (C, D, H, W) in training mode. Like
    `torch.nn.Dropout3d`."""
    _fn = staticmethod(F.dropout3d)


class AlphaDropout(_DropoutNd):
    """Alpha dropout in training mode: keeps a SELU network's mean and variance. Like
    `torch.nn.AlphaDropout`."""
    _fn = staticmethod(F.alpha_dropout)


class FeatureAlphaDropout(_DropoutNd):
    """Alpha dropout of whole channels in training mode. Like `torch.nn.FeatureAlphaDropout`."""
    _fn = staticmethod(F.feature_alpha_dropout)
