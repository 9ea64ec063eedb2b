"""PyTorch's `torch.nn.modules.sparse` path: its layers, re-exported from retrograd.nn."""

from ..sparse import (  # noqa: F401
    Embedding,
    EmbeddingBag,
)

__all__ = [
    "Embedding", "EmbeddingBag",
]
