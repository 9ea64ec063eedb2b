"""PyTorch's `torch.nn.modules.distance` path: its layers, re-exported from retrograd.nn."""

from ..distance import (  # noqa: F401
    CosineSimilarity,
    PairwiseDistance,
)

__all__ = [
    "CosineSimilarity", "PairwiseDistance",
]
