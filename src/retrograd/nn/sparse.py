"""Lookup tables: `Embedding`."""

from __future__ import annotations

import numpy as np

from ..tensor import Tensor
from . import functional as F
from . import init
from ._utils import _dtype
from .module import Module, Parameter

__all__ = ["Embedding"]


class Embedding(Module):
    """A table of `num_embeddings` vectors of size `embedding_dim`, looked up by index.

    `weight` is initialised N(0, 1) with the `padding_idx` row zeroed, as in PyTorch;
    that row gets no gradient.
    """

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx: int | None = None,
                 max_norm: float | None = None, norm_type: float = 2.0,
                 scale_grad_by_freq: bool = False, sparse: bool = False, _weight=None,
                 _freeze: bool = False, dtype=None) -> None:
        super().__init__()
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise ValueError(f"Embedding: padding_idx {padding_idx} must be within "
                                 f"num_embeddings ({num_embeddings})")
            padding_idx %= num_embeddings
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.padding_idx, self.max_norm, self.norm_type = padding_idx, max_norm, norm_type
        self.scale_grad_by_freq, self.sparse = scale_grad_by_freq, sparse
        if _weight is None:
            self.weight = Parameter(np.empty((num_embeddings, embedding_dim),
                                             dtype=_dtype(dtype)), requires_grad=not _freeze)
            self.reset_parameters()
        else:
            w = _weight.data if isinstance(_weight, Tensor) else np.asarray(_weight)
            if w.shape != (num_embeddings, embedding_dim):
                raise ValueError(f"Embedding: _weight must have shape ({num_embeddings}, "
                                 f"{embedding_dim}), got {w.shape}")
            self.weight = Parameter(np.array(w), requires_grad=not _freeze)

    def reset_parameters(self) -> None:
        init.normal_(self.weight)
        if self.padding_idx is not None:
            self.weight.data[self.padding_idx] = 0
            init._bump(self.weight)

    def forward(self, input):
        return F.embedding(input, self.weight, self.padding_idx, self.max_norm, self.norm_type,
                           self.scale_grad_by_freq, self.sparse)

    @classmethod
    def from_pretrained(cls, embeddings, freeze: bool = True, padding_idx: int | None = None,
                        max_norm: float | None = None, norm_type: float = 2.0,
                        scale_grad_by_freq: bool = False, sparse: bool = False) -> Embedding:
        """An Embedding holding a copy of the 2-D `embeddings`; frozen (no grad) by default."""
        shape = tuple(getattr(embeddings, "shape", np.shape(embeddings)))
        if len(shape) != 2:
            raise ValueError(f"Embedding.from_pretrained: embeddings must be 2-D, got shape "
                             f"{shape}")
        return cls(shape[0], shape[1], padding_idx, max_norm, norm_type, scale_grad_by_freq,
                   sparse, _weight=embeddings, _freeze=freeze)

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        return s
