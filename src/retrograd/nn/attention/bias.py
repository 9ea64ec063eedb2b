"""`torch.nn.attention.bias`: causal masks that `scaled_dot_product_attention` takes as
its `attn_mask` without building them, for a query length L that differs from the key
length S (a decoding step against a key/value cache).

`causal_upper_left(L, S)`: query i sees keys 0..i (`is_causal=True`);
`causal_lower_right(L, S)`: the band ends at the last key, so query i sees keys
0..i + S - L (the last query sees every key). Given one as `attn_mask`, attention runs
as PyTorch's CPU path does: the upper-left band, and any band when L == S, as
`is_causal=True` (the fused op); the lower-right band with L != S through its boolean
mask, where a query that sees no key (L > S) gives zeros, except a one-row band (one
decoding step: every key seen), which needs no mask.
"""

from __future__ import annotations

import enum
import warnings

import numpy as np

from ...api.attention import scaled_dot_product_attention
from ...api.indexing import tril
from ...creation import ones
from ...dtypes import get_default_dtype
from ...primitive import ArgumentError
from ...tensor import Tensor

__all__ = ["causal_upper_left", "causal_lower_right", "CausalVariant", "CausalBias"]


class CausalVariant(enum.IntEnum):
    """Where a causal band is anchored: UPPER_LEFT (query i sees keys 0..i) or
    LOWER_RIGHT (the last query sees the last key); the same when L == S."""

    UPPER_LEFT = 1
    LOWER_RIGHT = 2


class CausalBias(Tensor):
    """A causal attention mask of size (seq_len_q, seq_len_kv), kept as its variant and
    sizes; `_materialize()` gives the boolean mask (True: attend). As PyTorch's, it is a
    tensor whose own shape is (variant, seq_len_q, seq_len_kv) and whose values mean
    nothing; made by `causal_upper_left` / `causal_lower_right`."""

    def __init__(self, variant: CausalVariant, seq_len_q: int, seq_len_kv: int) -> None:
        if not isinstance(variant, CausalVariant):
            raise AssertionError(f"variant must be a CausalVariant, got {type(variant).__name__}")
        for n in (seq_len_q, seq_len_kv):
            if not isinstance(n, (int, np.integer)) or isinstance(n, bool):
                raise TypeError(f"CausalBias: sequence lengths must be ints, got "
                                f"{type(n).__name__} ({seq_len_q!r}, {seq_len_kv!r})")
        dims = (int(variant), int(seq_len_q), int(seq_len_kv))
        if min(dims) < 0:
            raise ArgumentError(f"Trying to create tensor with negative dimension "
                                f"{min(dims)}: {list(dims)}")
        # zeros from calloc: pages are touched only if someone reads the values
        super().__init__(np.zeros(dims, dtype=get_default_dtype()))
        self.variant = variant
        self.seq_len_q = int(seq_len_q)
        self.seq_len_kv = int(seq_len_kv)
        if self.seq_len_q > self.seq_len_kv and variant == CausalVariant.LOWER_RIGHT:
            warnings.warn("Lower right causal bias will produce NaNs in the output when "
                          "seq_len_q > seq_len_kv!", stacklevel=3)

    def _materialize(self, device=None) -> Tensor:
        """The boolean (seq_len_q, seq_len_kv) mask, True where a query sees a key."""
        offset = 0 if self.variant == CausalVariant.UPPER_LEFT else self.seq_len_kv - self.seq_len_q
        return tril(ones(self.seq_len_q, self.seq_len_kv, dtype=np.bool_, device=device), offset)

    @staticmethod
    def _sdpa_dispatch(query, key, value, attn_mask: CausalBias, dropout_p: float = 0.0,
                       is_causal: bool = False, scale=None, enable_gqa: bool = False) -> Tensor:
        """`scaled_dot_product_attention` with this bias as its `attn_mask`."""
        if is_causal:
            raise ValueError("CausalBias should not be used with causal=True")
        if attn_mask.variant == CausalVariant.UPPER_LEFT or \
                attn_mask.seq_len_q == attn_mask.seq_len_kv:
            # the band is is_causal's, on the query's and key's own lengths (as PyTorch)
            return scaled_dot_product_attention(query, key, value, None, dropout_p, True,
                                                scale, enable_gqa)
        q, k, v = (x if isinstance(x, Tensor) else Tensor(x) for x in (query, key, value))
        if q.dtype != k.dtype or q.dtype != v.dtype:  # PyTorch's ValueError on this path
            raise ArgumentError(f"Expected query, key, and value to have the same dtype, but "
                                f"got query.dtype: {q.dtype}, key.dtype: {k.dtype}, and "
                                f"value.dtype: {v.dtype} instead.")
        if q.ndim < 2 or k.ndim < 2 or v.ndim < 2:
            raise ArgumentError(f"Expected query, key, and value to all be at least 2 "
                                f"dimensional, but got query.dim: {q.ndim}, key.dim: {k.ndim} "
                                f"and value.dim: {v.ndim} instead.")
        if attn_mask.seq_len_q == 1 and k.shape[-2] == attn_mask.seq_len_kv:
            # one query row that sees every key (a decoding step): no mask, the fused op
            return scaled_dot_product_attention(q, k, v, None, dropout_p, False, scale,
                                                enable_gqa)
        return scaled_dot_product_attention(q, k, v, attn_mask._materialize(q.device),
                                            dropout_p, False, scale, enable_gqa)

    def __repr__(self) -> str:
        return repr(self._materialize())

    __str__ = __repr__


def _sizes(size: tuple, fn: str) -> tuple:
    if len(size) != 2:
        raise AssertionError(f"{fn} only supports 2D tensors")
    return size


def causal_upper_left(*size) -> CausalBias:
    """The (L, S) causal bias whose band starts at the top-left corner: query i sees keys
    0..i, as `is_causal=True`. `causal_upper_left(L, S)`."""
    return CausalBias(CausalVariant.UPPER_LEFT, *_sizes(size, "causal_upper_left"))


def causal_lower_right(*size) -> CausalBias:
    """The (L, S) causal bias whose band ends at the bottom-right corner: query i sees
    keys 0..i + S - L. `causal_lower_right(L, S)`; warns when L > S (queries that see
    no key)."""
    return CausalBias(CausalVariant.LOWER_RIGHT, *_sizes(size, "causal_lower_right"))
