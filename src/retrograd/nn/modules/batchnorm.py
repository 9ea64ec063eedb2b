"""PyTorch's `torch.nn.modules.batchnorm` path: its layers, re-exported from retrograd.nn."""

from ..lazy import (  # noqa: F401
    LazyBatchNorm1d,
    LazyBatchNorm2d,
    LazyBatchNorm3d,
)
from ..normalization import (  # noqa: F401
    BatchNorm1d,
    BatchNorm2d,
    BatchNorm3d,
    SyncBatchNorm,
    _BatchNorm,
)
from ..normalization import (
    _BatchNorm as _NormBase,
)

__all__ = [
    "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "LazyBatchNorm1d", "LazyBatchNorm2d",
    "LazyBatchNorm3d", "_BatchNorm", "_NormBase", "SyncBatchNorm",
]
