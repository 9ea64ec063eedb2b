"""PyTorch's `torch.nn.modules.linear` path: its layers, re-exported from retrograd.nn."""

from ..lazy import (  # noqa: F401
    LazyLinear,
)
from ..linear import (  # noqa: F401
    Bilinear,
    Identity,
    Linear,
    NonDynamicallyQuantizableLinear,
)

__all__ = [
    "Bilinear", "Identity", "LazyLinear", "Linear", "NonDynamicallyQuantizableLinear",
]
