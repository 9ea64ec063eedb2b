"""PyTorch's `torch.nn.modules.linear` path: its layers, re-exported from retrograd.nn."""

from ..lazy import (  # noqa: F401
    LazyLinear,
)
from ..linear import (  # noqa: F401
    Bilinear,
    Identity,
    Linear,
)


class NonDynamicallyQuantizableLinear(Linear):
    """A Linear layer; PyTorch's name for the output projection of attention."""


__all__ = [
    "Bilinear", "Identity", "LazyLinear", "Linear", "NonDynamicallyQuantizableLinear",
]
