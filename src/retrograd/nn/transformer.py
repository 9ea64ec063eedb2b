"""Attention layers: `MultiheadAttention`, `TransformerEncoderLayer`, `TransformerEncoder`.

PyTorch's parameter names (`in_proj_weight`, `in_proj_bias`, `out_proj`, or
`q_proj_weight`/`k_proj_weight`/`v_proj_weight` when key and value sizes differ),
initialisation, mask conventions (a bool `attn_mask` or `key_padding_mask` marks
positions NOT to attend, a float one is added to the scores) and layouts
((L, N, E), (N, L, E) with `batch_first`, or unbatched (L, E)).
"""

from __future__ import annotations

import copy
import math

import numpy as np

from .. import api as _f
from ..tensor import Tensor
from . import functional as F
from . import init
from ._utils import _dtype
from .containers import ModuleList
from .dropout import Dropout
from .linear import Linear
from .module import Module, Parameter
from .normalization import LayerNorm

__all__ = ["MultiheadAttention", "TransformerEncoderLayer", "TransformerEncoder"]


def _t(x) -> Tensor:
    return x if isinstance(x, Tensor) else Tensor(x)


def _additive(mask: Tensor, dtype) -> Tensor:
    """A mask as something to add to the scores: bool True (masked out) -> -inf (a tensor
    op, so a mask passed to a function traced by rg.jit is read at every call)."""
    if mask.dtype == np.bool_:
        return _f.where(mask, -math.inf, 0.0).to(dtype)
    if mask.dtype.kind != "f":
        raise TypeError(f"attention masks must be bool or floating, got {mask.dtype}")
    return mask if mask.dtype == dtype else mask.to(dtype)


class MultiheadAttention(Module):
    """Multi-head attention: softmax(q k^T / sqrt(head_dim) + masks) v per head, projected.

    `forward(query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
    average_attn_weights=True, is_causal=False)` returns `(output, weights)`; the weights
    are None unless `need_weights`, averaged over heads unless `average_attn_weights=False`.
    """

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False, kdim: int | None = None,
                 vdim: int | None = None, batch_first: bool = False, dtype=None) -> None:
        super().__init__()
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"MultiheadAttention: embed_dim and num_heads must be positive, "
                             f"got {embed_dim} and {num_heads}")
        if embed_dim % num_heads:
            raise ValueError(f"MultiheadAttention: embed_dim ({embed_dim}) must be divisible "
                             f"by num_heads ({num_heads})")
        if add_bias_kv or add_zero_attn:
            raise NotImplementedError("MultiheadAttention: add_bias_kv and add_zero_attn are "
                                      "not supported")
        self.embed_dim, self.num_heads = embed_dim, num_heads
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.dropout, self.batch_first = dropout, batch_first
        self.head_dim = embed_dim // num_heads
        dt = _dtype(dtype)
        e = embed_dim
        if self._qkv_same_embed_dim:
            self.in_proj_weight = Parameter(np.empty((3 * e, e), dtype=dt))
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        else:
            self.q_proj_weight = Parameter(np.empty((e, e), dtype=dt))
            self.k_proj_weight = Parameter(np.empty((e, self.kdim), dtype=dt))
            self.v_proj_weight = Parameter(np.empty((e, self.vdim), dtype=dt))
            self.register_parameter("in_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(np.empty(3 * e, dtype=dt))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = Linear(e, e, bias=bias, dtype=dt)
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            init.xavier_uniform_(self.q_proj_weight)
            init.xavier_uniform_(self.k_proj_weight)
            init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            init.zeros_(self.in_proj_bias)
            init.zeros_(self.out_proj.bias)

    def _projections(self):
        e = self.embed_dim
        b = self.in_proj_bias
        bs = (None, None, None) if b is None else (b[:e], b[e:2 * e], b[2 * e:])
        if self._qkv_same_embed_dim:
            w = self.in_proj_weight
            return (w[:e], w[e:2 * e], w[2 * e:]), bs
        return (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight), bs

    def forward(self, query, key, value, key_padding_mask=None, need_weights: bool = True,
                attn_mask=None, average_attn_weights: bool = True, is_causal: bool = False):
        q, k, v = _t(query), _t(key), _t(value)
        name = "MultiheadAttention"
        if q.ndim not in (2, 3) or k.ndim != q.ndim or v.ndim != q.ndim:
            raise ValueError(f"{name}: query, key and value must all be 3-D (batched) or 2-D "
                             f"(unbatched); got shapes {q.shape}, {k.shape}, {v.shape}")
        if q.shape[-1] != self.embed_dim:
            raise ValueError(f"{name}: was expecting embedding dimension of {self.embed_dim}, "
                             f"but got query of shape {q.shape}")
        if k.shape[-1] != self.kdim or v.shape[-1] != self.vdim:
            raise ValueError(f"{name}: key of shape {k.shape} and value of shape {v.shape} must "
                             f"end in kdim={self.kdim} and vdim={self.vdim}")
        if k.shape[:-1] != v.shape[:-1]:
            raise ValueError(f"{name}: key shape {k.shape} does not match value shape "
                             f"{v.shape}")
        unbatched = q.ndim == 2
        if unbatched:
            q, k, v = q.unsqueeze(0), k.unsqueeze(0), v.unsqueeze(0)
        elif not self.batch_first:
            q, k, v = q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1)
        # now (N, L, E) and (N, S, kdim/vdim)
        n, L, e = q.shape
        s = k.shape[1]
        if k.shape[0] != n:
            raise ValueError(f"{name}: query and key must have the same batch size; got "
                             f"shapes {query.shape} and {key.shape}")
        h, d = self.num_heads, self.head_dim
        scores_mask = self._masks(key_padding_mask, attn_mask, is_causal, n, L, s, unbatched,
                                  q.dtype)
        (wq, wk, wv), (bq, bk, bv) = self._projections()
        qp = F.linear(q, wq, bq).reshape(n, L, h, d).transpose(1, 2)
        kp = F.linear(k, wk, bk).reshape(n, s, h, d).transpose(1, 2)
        vp = F.linear(v, wv, bv).reshape(n, s, h, d).transpose(1, 2)
        scores = _f.matmul(qp * (1.0 / math.sqrt(d)), kp.transpose(-2, -1))
        if scores_mask is not None:
            scores = scores + scores_mask
        weights = _f.softmax(scores, -1)
        if self.dropout and self.training:
            weights = F.dropout(weights, self.dropout, True)
        out = _f.matmul(weights, vp).transpose(1, 2).reshape(n, L, e)
        out = self.out_proj(out)
        if unbatched:
            out = out.squeeze(0)
        elif not self.batch_first:
            out = out.transpose(0, 1)
        if not need_weights:
            return out, None
        if average_attn_weights:
            weights = _f.mean(weights, 1)
        if unbatched:
            weights = weights.squeeze(0)
        return out, weights

    def _masks(self, key_padding_mask, attn_mask, is_causal, n, L, s, unbatched, dtype):
        """Both masks merged into one additive (N, H, L, S)-broadcastable term, or None."""
        name = "MultiheadAttention"
        h = self.num_heads
        if is_causal and attn_mask is None:
            raise ValueError(f"{name}: is_causal=True is a hint and needs attn_mask (e.g. an "
                             "upper-triangular bool mask)")
        total = None
        if attn_mask is not None:
            m = _t(attn_mask)
            if m.ndim == 2:
                if m.shape != (L, s):
                    raise ValueError(f"{name}: the shape of the 2-D attn_mask is {m.shape}, but "
                                     f"should be {(L, s)} (target length, source length)")
                total = _additive(m, dtype)
            elif m.ndim == 3:
                want = (n * h, L, s) if not unbatched else (h, L, s)
                if m.shape != want:
                    raise ValueError(f"{name}: the shape of the 3-D attn_mask is {m.shape}, but "
                                     f"should be {want} (batch * num_heads, target length, "
                                     f"source length)")
                total = _additive(m, dtype)
                total = total.reshape(n, h, L, s)
            else:
                raise ValueError(f"{name}: attn_mask must be 2-D or 3-D, got shape {m.shape}")
        if key_padding_mask is not None:
            m = _t(key_padding_mask)
            want = (s,) if unbatched else (n, s)
            if m.shape != want:
                raise ValueError(f"{name}: expecting key_padding_mask shape of {want} (batch, "
                                 f"source length), but got {m.shape}")
            kp = _additive(m, dtype)
            kp = kp.reshape(n, 1, 1, s)
            total = kp if total is None else total + kp
        return total

    def extra_repr(self) -> str:
        return f"embed_dim={self.embed_dim}, num_heads={self.num_heads}"


def _activation(activation):
    if callable(activation):
        return activation
    if activation == "relu":
        return F.relu
    if activation == "gelu":
        return F.gelu
    raise ValueError(f"activation should be 'relu', 'gelu' or a callable, got {activation!r}")


class TransformerEncoderLayer(Module):
    """Self-attention and a feed-forward block, each with dropout, a residual connection and
    LayerNorm (after each block, or before with `norm_first`)."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation="relu", layer_norm_eps: float = 1e-5,
                 batch_first: bool = False, norm_first: bool = False, bias: bool = True,
                 dtype=None) -> None:
        super().__init__()
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                            batch_first=batch_first, dtype=dtype)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, dtype=dtype)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, dtype=dtype)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.activation = _activation(activation)
        self.batch_first = batch_first

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                           need_weights=False, is_causal=is_causal)[0]
        return self.dropout1(x)

    def _ff_block(self, x):
        return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal: bool = False):
        x = _t(src)
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            return x + self._ff_block(self.norm2(x))
        x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
        return self.norm2(x + self._ff_block(x))


class TransformerEncoder(Module):
    """`num_layers` copies of `encoder_layer` applied in turn, then an optional `norm`."""

    def __init__(self, encoder_layer: TransformerEncoderLayer, num_layers: int, norm=None,
                 enable_nested_tensor: bool = True, mask_check: bool = True) -> None:
        super().__init__()
        if not isinstance(encoder_layer, Module):
            raise TypeError(f"TransformerEncoder: encoder_layer must be a Module, got "
                            f"{type(encoder_layer).__name__}")
        self.layers = ModuleList([copy.deepcopy(encoder_layer) for _ in range(num_layers)])
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal: bool | None = None):
        x = src
        for layer in self.layers:
            x = layer(x, src_mask=mask, src_key_padding_mask=src_key_padding_mask,
                      is_causal=bool(is_causal))
        return x if self.norm is None else self.norm(x)
