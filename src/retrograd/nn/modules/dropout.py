"""PyTorch's `torch.nn.modules.dropout` path: its layers, re-exported from retrograd.nn."""

from ..dropout import (  # noqa: F401
    AlphaDropout,
    Dropout,
    Dropout1d,
    Dropout2d,
    Dropout3d,
    FeatureAlphaDropout,
    _DropoutNd,
)

__all__ = [
    "AlphaDropout", "Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "FeatureAlphaDropout",
    "_DropoutNd",
]
