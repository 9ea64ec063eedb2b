"""Lookup tables: `Embedding` and `EmbeddingBag` (sums, means or maxima of bags of
embeddings), PyTorch's arguments, initialisation N(0, 1) and `from_pretrained`."""

from __future__ import annotations

import numpy as np

from ..primitive import ArgumentError
from ..tensor import Tensor
from . import functional as F
from . import init
from ._utils import _dtype
from .module import Module, Parameter

__all__ = ["Embedding", "EmbeddingBag"]


class _PaddingIdxError(ArgumentError, AssertionError):
    """A padding_idx outside the table: PyTorch's AssertionError, and the ValueError /
    RuntimeError of a bad argument."""


class _PretrainedShapeError(ArgumentError, AssertionError):
    """from_pretrained given a table that is not 2-D: PyTorch's AssertionError, and the
    ValueError / RuntimeError of a bad argument."""


def _check_sizes(name: str, num_embeddings: int, embedding_dim: int) -> None:
    """PyTorch's refusal (RuntimeError, from creating the weight) of a negative size."""
    if num_embeddings < 0 or embedding_dim < 0:
        raise ArgumentError(f"{name}: Trying to create tensor with negative dimension: "
                            f"[{num_embeddings}, {embedding_dim}]")


class Embedding(Module):
    """A table of `num_embeddings` vectors of size `embedding_dim`, looked up by index.

    `weight` is initialised N(0, 1) with the `padding_idx` row zeroed, as in PyTorch;
    that row gets no gradient. `max_norm` renormalises the rows looked up in place;
    `scale_grad_by_freq` divides each row's gradient by its count in the batch.
    """

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx: int | None = None,
                 max_norm: float | None = None, norm_type: float = 2.0,
                 scale_grad_by_freq: bool = False, sparse: bool = False, _weight=None,
                 _freeze: bool = False, device=None, dtype=None) -> None:
        super().__init__()
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise _PaddingIdxError(f"Embedding: padding_idx {padding_idx} must be within "
                                       f"num_embeddings ({num_embeddings})")
            padding_idx %= num_embeddings
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.padding_idx, self.max_norm, self.norm_type = padding_idx, max_norm, norm_type
        self.scale_grad_by_freq, self.sparse = scale_grad_by_freq, sparse
        if _weight is None:
            _check_sizes("Embedding", num_embeddings, embedding_dim)
            self.weight = Parameter(np.empty((num_embeddings, embedding_dim),
                                             dtype=_dtype(dtype)), requires_grad=not _freeze)
            self.reset_parameters()
        else:
            w = _weight.data if isinstance(_weight, Tensor) else np.asarray(_weight)
            if w.shape != (num_embeddings, embedding_dim):
                raise ArgumentError(f"Embedding: _weight must have shape ({num_embeddings}, "
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
            raise _PretrainedShapeError(f"Embedding.from_pretrained: embeddings must be 2-D, "
                                        f"got shape {shape}")
        return cls(shape[0], shape[1], padding_idx, max_norm, norm_type, scale_grad_by_freq,
                   sparse, _weight=embeddings, _freeze=freeze)

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq is not False:
            s += f", scale_grad_by_freq={self.scale_grad_by_freq}"
        if self.sparse is not False:
            s += ", sparse=True"
        return s


class EmbeddingBag(Module):
    """Sums, means or maxima (`mode`) of bags of embeddings, computed without the
    (bags, length, dim) intermediate (`F.embedding_bag`): `forward(input, offsets=None,
    per_sample_weights=None)`. `weight` (num_embeddings, embedding_dim) is initialised
    N(0, 1), the `padding_idx` row zeroed. Like `torch.nn.EmbeddingBag`."""

    def __init__(self, num_embeddings: int, embedding_dim: int, max_norm: float | None = None,
                 norm_type: float = 2.0, scale_grad_by_freq: bool = False, mode: str = "mean",
                 sparse: bool = False, _weight=None, include_last_offset: bool = False,
                 padding_idx: int | None = None, device=None, dtype=None) -> None:
        super().__init__()
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.max_norm, self.norm_type = max_norm, norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise AssertionError(f"EmbeddingBag: padding_idx must be within "
                                     f"num_embeddings ({num_embeddings}), got {padding_idx}")
            padding_idx %= num_embeddings
        self.padding_idx = padding_idx
        if _weight is None:
            _check_sizes("EmbeddingBag", num_embeddings, embedding_dim)
            self.weight = Parameter(np.empty((num_embeddings, embedding_dim),
                                             dtype=_dtype(dtype)))
            self.reset_parameters()
        else:
            w = _weight.data if isinstance(_weight, Tensor) else np.asarray(_weight)
            if w.shape != (num_embeddings, embedding_dim):
                raise AssertionError(f"EmbeddingBag: shape of weight {w.shape} does not match "
                                     f"num_embeddings and embedding_dim ({num_embeddings}, "
                                     f"{embedding_dim})")
            self.weight = Parameter(np.array(w))
        self.mode, self.sparse = mode, sparse
        self.include_last_offset = include_last_offset

    def reset_parameters(self) -> None:
        init.normal_(self.weight)
        if self.padding_idx is not None:
            self.weight.data[self.padding_idx] = 0
            init._bump(self.weight)

    def forward(self, input, offsets=None, per_sample_weights=None):
        return F.embedding_bag(input, self.weight, offsets, self.max_norm, self.norm_type,
                               self.scale_grad_by_freq, self.mode, self.sparse,
                               per_sample_weights, self.include_last_offset, self.padding_idx)

    @classmethod
    def from_pretrained(cls, embeddings, freeze: bool = True, max_norm: float | None = None,
                        norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                        mode: str = "mean", sparse: bool = False,
                        include_last_offset: bool = False,
                        padding_idx: int | None = None) -> EmbeddingBag:
        """An EmbeddingBag holding a copy of the 2-D `embeddings`; frozen (no grad) by
        default."""
        shape = tuple(getattr(embeddings, "shape", np.shape(embeddings)))
        if len(shape) != 2:
            raise _PretrainedShapeError(f"EmbeddingBag.from_pretrained: embeddings must be "
                                        f"2-D, got shape {shape}")
        bag = cls(shape[0], shape[1], max_norm, norm_type, scale_grad_by_freq, mode, sparse,
                  embeddings, include_last_offset, padding_idx)
        bag.weight.requires_grad_(not freeze)
        return bag

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm!r}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type!r}"
        if self.scale_grad_by_freq is not False:
            s += f", scale_grad_by_freq={self.scale_grad_by_freq!r}"
        s += f", mode={self.mode!r}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx!r}"
        return s
