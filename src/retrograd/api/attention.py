"""Scaled dot-product attention, PyTorch's `F.scaled_dot_product_attention`.

Without a mask tensor or dropout (causal or not), one fused op (`ops.attention`);
otherwise a composition of recorded ops (two matrix products and a softmax), so its
gradient, higher derivatives, forward mode and `rg.jit` replay come from theirs.
"""

from __future__ import annotations

import math

import numpy as np

from .. import creation, ops
from ..devices import namespace_of
from ..engine import apply
from ..tensor import Tensor
from ._args import _t
from .elementwise import where
from .linalg import matmul
from .math import all as _all
from .math import any as _any
from .reductions import softmax
from .shape import transpose

__all__ = ["scaled_dot_product_attention"]


def _repeat_heads(x: Tensor, groups: int) -> Tensor:
    """(..., H, S, E) -> (..., H * groups, S, E), each head repeated `groups` times in place."""
    lead, (h, s, e) = x.shape[:-3], x.shape[-3:]
    y = x.reshape(lead + (h, 1, s, e)).expand(lead + (h, groups, s, e))
    return y.reshape(lead + (h * groups, s, e))


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p: float = 0.0,
                                 is_causal: bool = False, scale=None,
                                 enable_gqa: bool = False) -> Tensor:
    """softmax(q k^T * scale + mask) v over (..., L, E) queries and (..., S, E) keys.

    `attn_mask`: bool (True takes part) or float (added to the scores), broadcast to
    (..., L, S); `is_causal`: query i sees keys 0..i; `dropout_p`: dropout on the
    weights (rg's generator); `enable_gqa`: key/value heads (dim -3) shared by groups of
    query heads. A query row that may see no key gives zeros, as in PyTorch.
    """
    q, k, v = _t(query), _t(key), _t(value)
    fn = "scaled_dot_product_attention"
    if q.ndim < 2 or k.ndim < 2 or v.ndim < 2:
        raise ValueError(f"{fn}: query, key and value need at least 2 dimensions (..., L, E); "
                         f"got shapes {q.shape}, {k.shape}, {v.shape}")
    if q.dtype.kind != "f" or k.dtype != q.dtype or v.dtype != q.dtype:
        raise TypeError(f"{fn}: query, key and value must share one floating dtype; got "
                        f"{q.dtype}, {k.dtype}, {v.dtype}")
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"{fn}: query of shape {q.shape} and key of shape {k.shape} must have "
                         f"the same embedding size (last dimension)")
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(f"{fn}: key of shape {k.shape} and value of shape {v.shape} must have "
                         f"the same sequence length (dimension -2)")
    if not 0.0 <= dropout_p <= 1.0:
        raise ValueError(f"{fn}: dropout_p must be in [0, 1], got {dropout_p}")
    if is_causal and attn_mask is not None:
        raise ValueError(f"{fn}: give either attn_mask or is_causal=True, not both")
    if enable_gqa and q.ndim >= 3 and q.shape[-3] != k.shape[-3]:
        hq, hk, hv = q.shape[-3], k.shape[-3], v.shape[-3]
        if hk != hv or hq % hk:
            raise ValueError(f"{fn}: with enable_gqa, the number of key heads ({hk}) and value "
                             f"heads ({hv}) must be equal and divide the number of query heads "
                             f"({hq}); shapes {q.shape}, {k.shape}, {v.shape}")
        k, v = _repeat_heads(k, hq // hk), _repeat_heads(v, hq // hk)
    try:
        batch = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    except ValueError:
        raise ValueError(f"{fn}: the batch dimensions of query {q.shape}, key {k.shape} and "
                         f"value {v.shape} do not broadcast (different head counts need "
                         f"enable_gqa=True)") from None
    L, S = q.shape[-2], k.shape[-2]
    s = 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)
    if attn_mask is None and dropout_p == 0.0 and q.shape[:-2] == k.shape[:-2] == v.shape[:-2] \
            and q.size and k.size and v.size:
        # one node: the weights' softmax and its backward as fused NumPy passes
        return apply(ops.attention, q, k, v, scale=s, causal=bool(is_causal))
    scores_shape = batch + (L, S)
    mask = dead = None
    if attn_mask is not None:
        mask = _t(attn_mask)
        try:
            ok = np.broadcast_shapes(mask.shape, scores_shape) == scores_shape
        except ValueError:
            ok = False
        if not ok:
            raise ValueError(f"{fn}: attn_mask of shape {mask.shape} does not broadcast to the "
                             f"attention scores' shape {scores_shape} (..., L, S)")
        if mask.dtype != np.bool_ and mask.dtype.kind != "f":
            raise TypeError(f"{fn}: attn_mask must be bool or floating, got {mask.dtype}")
    if is_causal:
        mask = Tensor(np.tril(np.ones((L, S), dtype=bool)))
    scores = matmul(q * s, transpose(k, -2, -1))
    if mask is not None:  # tensor ops: rg.jit replays them for each call's mask
        if mask.dtype == np.bool_:
            dead = ~_any(mask, -1, keepdim=True)  # rows that see no key
            bias = where(mask | dead, 0.0, -math.inf).to(q.dtype)
        else:
            dead = _all(mask == -math.inf, -1, keepdim=True)
            bias = where(dead, 0.0, mask)  # keep such a row finite, zero it after the softmax
            bias = bias if bias.dtype == q.dtype else bias.to(q.dtype)
        scores = scores + bias
    weights = softmax(scores, -1)
    if dead is not None:
        weights = where(dead, 0.0, weights)
    if dropout_p > 0.0:
        if dropout_p == 1.0:
            keep = namespace_of(weights.data).zeros(weights.shape, dtype=q.dtype)
        else:
            keep = (creation.generator(like=weights.data).random(weights.shape)
                    >= dropout_p).astype(q.dtype)
            keep *= 1.0 / (1.0 - dropout_p)
        weights = weights * keep
    return matmul(weights, v)
