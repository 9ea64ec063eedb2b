"""Attention layers: `MultiheadAttention`, the encoder and decoder layers and stacks, and
`Transformer`, as PyTorch's.

PyTorch's parameter names (`in_proj_weight`, `in_proj_bias`, `out_proj`, or
`q_proj_weight`/`k_proj_weight`/`v_proj_weight` when key and value sizes differ,
`bias_k`/`bias_v` with `add_bias_kv`), initialisation, mask conventions (a bool
`attn_mask` or `key_padding_mask` marks positions NOT to attend, a float one is added
to the scores) and layouts ((L, N, E), (N, L, E) with `batch_first`, or unbatched
(L, E)). `MultiheadAttention` runs `F.multi_head_attention_forward`, as PyTorch's does.

PyTorch's inference fast paths (eval mode, no gradient wanted, batch_first, ...) give
the same numbers as its general path except in three places, which are followed here:
a query row that may see no key gives NaN there (zeros on the general path),
`TransformerEncoder` with a `src_key_padding_mask` (nested tensors) gives zeros at the
padded positions (before its final norm), and `TransformerEncoderLayer` reads a float
`src_mask` / `src_key_padding_mask` as a bool one (every nonzero entry masks; pytorch
issue 147209, "expected behavior"). Deliberately not followed: on those fast
paths PyTorch ignores an `is_causal=True` given without a mask (attending everywhere);
here that call raises, as on PyTorch's general path.
"""

from __future__ import annotations

import copy
import math
import warnings

import numpy as np

from .. import api as _f
from .. import creation
from .._values import every_value
from ..api.attention import AttentionShapeError, canonical_mask, mha_forward
from ..grad_mode import state
from ..primitive import ArgumentError
from ..tensor import Tensor
from . import functional as F
from . import init
from ._utils import _dtype
from .activation import GELU, ReLU
from .containers import ModuleList
from .dropout import Dropout
from .linear import Linear, NonDynamicallyQuantizableLinear
from .module import Module, Parameter
from .normalization import LayerNorm

__all__ = ["MultiheadAttention", "TransformerEncoderLayer", "TransformerEncoder",
           "TransformerDecoderLayer", "TransformerDecoder", "Transformer"]


def _t(x) -> Tensor:
    return x if isinstance(x, Tensor) else Tensor(x)


class _ArgumentError(ValueError, RuntimeError):
    """A bad argument PyTorch answers with RuntimeError (a ValueError too)."""


def _wants_grad(*tensors) -> bool:
    """Whether autograd would record: grad enabled and one of `tensors` requires grad."""
    return state.enabled and any(t is not None and t.requires_grad for t in tensors)


def _dtype_of(mask):
    return None if mask is None else _t(mask).dtype


class MultiheadAttention(Module):
    """Multi-head attention: softmax(q k^T / sqrt(head_dim) + masks) v per head, projected.

    `forward(query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
    average_attn_weights=True, is_causal=False)` returns `(output, weights)`; the weights
    are None unless `need_weights`, averaged over heads unless `average_attn_weights=False`.
    `kdim`/`vdim` give the key and value their own sizes (separate projection weights),
    `add_bias_kv` appends a learnt key and value (`bias_k`, `bias_v`), `add_zero_attn` a
    zero one.
    """

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False, kdim: int | None = None,
                 vdim: int | None = None, batch_first: bool = False, device=None,
                 dtype=None) -> None:
        super().__init__()
        if embed_dim <= 0 or num_heads <= 0:
            raise ArgumentError(f"MultiheadAttention: embed_dim and num_heads must be greater than "
                                f"0, got embed_dim={embed_dim} and num_heads={num_heads} instead")
        if embed_dim % num_heads:
            raise AttentionShapeError(f"MultiheadAttention: embed_dim ({embed_dim}) must be "
                                      f"divisible by num_heads ({num_heads})")
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
        self.out_proj = NonDynamicallyQuantizableLinear(e, e, bias=bias, dtype=dt)
        if add_bias_kv:
            self.bias_k = Parameter(np.empty((1, 1, e), dtype=dt))
            self.bias_v = Parameter(np.empty((1, 1, e), dtype=dt))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
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
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
        if self.bias_v is not None:
            init.xavier_normal_(self.bias_v)

    def _fast_path(self, query, key, value, attn_mask, key_padding_mask) -> bool:
        """Whether PyTorch would take its native fast path for this call (whose only
        difference here: a query row that may see no key gives NaN)."""
        if (attn_mask is not None and _t(attn_mask).dtype.kind == "f") or \
                (key_padding_mask is not None and _t(key_padding_mask).dtype.kind == "f"):
            return False
        if self.training or not self.batch_first or query.ndim != 3:
            return False  # decided before reading the weights (a parametrization runs per read)
        w, b = self.in_proj_weight, self.in_proj_bias
        return (query.ndim == 3 and query is key and key is value and w is not None
                and b is not None and query.dtype == w.dtype == b.dtype
                and not self.training and self.num_heads % 2 == 0 and self.batch_first
                and self.bias_k is None and self.bias_v is None and not self.add_zero_attn
                and self._qkv_same_embed_dim
                and not _wants_grad(query, w, b, self.out_proj.weight, self.out_proj.bias))

    def forward(self, query, key, value, key_padding_mask=None, need_weights: bool = True,
                attn_mask=None, average_attn_weights: bool = True, is_causal: bool = False,
                _dead_rows_nan: bool = False):
        q, k, v = _t(query), _t(key), _t(value)
        if query is key:
            k = q
        if key is value:
            v = k
        fast = _dead_rows_nan or self._fast_path(q, k, v, attn_mask, key_padding_mask)
        key_padding_mask = canonical_mask(key_padding_mask, "key_padding_mask",
                                          _dtype_of(attn_mask), "attn_mask", q.dtype)
        attn_mask = canonical_mask(attn_mask, "attn_mask", None, "", q.dtype, False)
        if self.batch_first and q.ndim == 3:
            if k is v:
                if q is k:
                    q = k = v = q.transpose(1, 0)
                else:
                    q, k = q.transpose(1, 0), k.transpose(1, 0)
                    v = k
            else:
                q, k, v = q.transpose(1, 0), k.transpose(1, 0), v.transpose(1, 0)
        same = self._qkv_same_embed_dim
        out, weights = mha_forward(
            q, k, v, self.embed_dim, self.num_heads, self.in_proj_weight, self.in_proj_bias,
            self.bias_k, self.bias_v, self.add_zero_attn, self.dropout, self.out_proj.weight,
            self.out_proj.bias, self.training, key_padding_mask, need_weights, attn_mask,
            not same, self.q_proj_weight, self.k_proj_weight, self.v_proj_weight, None, None,
            average_attn_weights, is_causal, dead_rows_nan=fast)
        if self.batch_first and q.ndim == 3:
            out = out.transpose(1, 0)
        return out, weights

    def merge_masks(self, attn_mask, key_padding_mask, query) -> tuple:
        """(merged mask, mask type) as PyTorch's: the padding mask alone (type 1), or the
        attention mask (2-D or 3-D) expanded to (N, num_heads, L, L), plus the padding
        mask when both are given (type 2); (None, None) without masks."""
        mask_type = merged = None
        if key_padding_mask is not None:
            mask_type, merged = 1, _t(key_padding_mask)
        if attn_mask is not None:
            m = _t(attn_mask)
            n, L = query.shape[0], query.shape[1]
            mask_type = 2
            merged = m.reshape(n, -1, L, L) if m.ndim == 3 else \
                m.reshape(1, 1, L, L).expand(n, self.num_heads, L, L)
            if key_padding_mask is not None:
                merged = merged + _t(key_padding_mask).reshape(n, 1, 1, L) \
                    .expand(n, self.num_heads, 1, L)
        return merged, mask_type


def _activation(activation):
    if isinstance(activation, str):
        if activation == "relu":
            return F.relu
        if activation == "gelu":
            return F.gelu
        raise _ArgumentError(f"activation should be relu/gelu, not {activation}")
    if not callable(activation):
        raise TypeError(f"activation should be 'relu', 'gelu' or a callable, got "
                        f"{type(activation).__name__}")
    return activation


def _relu_or_gelu(activation) -> int:
    """PyTorch's `activation_relu_or_gelu`: 1 for relu, 2 for gelu, 0 otherwise."""
    if activation is F.relu or isinstance(activation, ReLU):
        return 1
    if activation is F.gelu or isinstance(activation, GELU):
        return 2
    return 0


class TransformerEncoderLayer(Module):
    """Self-attention and a feed-forward block, each with dropout, a residual connection and
    LayerNorm (after each block, or before with `norm_first`)."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation="relu", layer_norm_eps: float = 1e-5,
                 batch_first: bool = False, norm_first: bool = False, bias: bool = True,
                 device=None, dtype=None) -> None:
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
        self.activation_relu_or_gelu = _relu_or_gelu(self.activation)
        self.batch_first = batch_first

    def _fast_path(self, src: Tensor) -> bool:
        """Whether PyTorch would run its fused inference layer (whose only difference here:
        a query row that may see no key gives NaN)."""
        a = self.self_attn
        return (src.ndim == 3 and not self.training and a.batch_first
                and a.in_proj_bias is not None and a._qkv_same_embed_dim
                and bool(self.activation_relu_or_gelu) and self.norm1.eps == self.norm2.eps
                and a.num_heads % 2 == 0
                and not _wants_grad(src, a.in_proj_weight, a.in_proj_bias, a.out_proj.weight,
                                    a.out_proj.bias, self.norm1.weight, self.norm1.bias,
                                    self.norm2.weight, self.norm2.bias, self.linear1.weight,
                                    self.linear1.bias, self.linear2.weight, self.linear2.bias))

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal, fast=False):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                           need_weights=False, is_causal=is_causal, _dead_rows_nan=fast)[0]
        return self.dropout1(x)

    def _ff_block(self, x):
        return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal: bool = False):
        x = _t(src)
        src_key_padding_mask = canonical_mask(src_key_padding_mask, "src_key_padding_mask",
                                              _dtype_of(src_mask), "src_mask", x.dtype)
        src_mask = canonical_mask(src_mask, "src_mask", None, "", x.dtype, False)
        fast = self._fast_path(x)
        if fast:  # PyTorch's fused layer reads a float mask as a bool one: nonzero = masked
            src_mask = _nonzero_masks(src_mask, x.dtype)
            src_key_padding_mask = _nonzero_masks(src_key_padding_mask, x.dtype)
        if fast and is_causal and src_mask is None:
            raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use "
                               "the Transformer module method `generate_square_subsequent_mask` "
                               "to create this mask.")
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal,
                                   fast)
            return x + self._ff_block(self.norm2(x))
        x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal, fast))
        return self.norm2(x + self._ff_block(x))


def _nonzero_masks(mask, dtype):
    """A float mask as PyTorch's fused encoder layer applies it (any nonzero entry, not only
    -inf, masks that position out: an additive bias is not added there), in `dtype`."""
    if mask is None or _t(mask).dtype.kind != "f":
        return mask
    return canonical_mask(_t(mask) != 0, "mask", None, "", dtype)


def _get_clones(module: Module, n: int) -> ModuleList:
    return ModuleList([copy.deepcopy(module) for _ in range(n)])


def _seq_len(src: Tensor, batch_first: bool) -> int:
    return src.shape[0] if src.ndim == 2 else src.shape[1 if batch_first else 0]


class TransformerEncoder(Module):
    """`num_layers` copies of `encoder_layer` applied in turn, then an optional `norm`.

    As PyTorch's in eval mode without gradients (with `enable_nested_tensor`, a
    batch-first post-norm `TransformerEncoderLayer` with an even head count and a
    `src_key_padding_mask` but no `mask`), the padded positions come out as zeros before
    `norm`; with `mask_check=False` each sequence is taken as its first (number of
    unpadded positions) positions, wherever the padding lies.
    """

    def __init__(self, encoder_layer: Module, num_layers: int, norm=None,
                 enable_nested_tensor: bool = True, mask_check: bool = True) -> None:
        super().__init__()
        if not isinstance(encoder_layer, Module):
            raise TypeError(f"TransformerEncoder: encoder_layer must be a Module, got "
                            f"{type(encoder_layer).__name__}")
        self.layers = _get_clones(encoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm
        self.enable_nested_tensor = enable_nested_tensor
        self.use_nested_tensor = enable_nested_tensor
        self.mask_check = mask_check
        why = _why_not_nested(encoder_layer)
        if enable_nested_tensor and why:
            warnings.warn(f"enable_nested_tensor is True, but self.use_nested_tensor is False "
                          f"because {why}", stacklevel=2)
            self.use_nested_tensor = False

    def _nested(self, src: Tensor, mask, key_padding_mask) -> bool:
        """Whether PyTorch would pack `src` into a nested tensor for the layers."""
        first = self.layers[0] if len(self.layers) else None
        if first is None or not self.use_nested_tensor or first.training or src.ndim != 3 \
                or key_padding_mask is None or mask is not None:
            return False
        a = first.self_attn
        return not _wants_grad(src, a.in_proj_weight, a.in_proj_bias, a.out_proj.weight,
                               a.out_proj.bias, first.norm1.weight, first.norm1.bias,
                               first.norm2.weight, first.norm2.bias, first.linear1.weight,
                               first.linear1.bias, first.linear2.weight, first.linear2.bias)

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal: bool | None = None):
        x = _t(src)
        src_key_padding_mask = canonical_mask(src_key_padding_mask, "src_key_padding_mask",
                                              _dtype_of(mask), "mask", x.dtype)
        mask = canonical_mask(mask, "mask", None, "", x.dtype, False)
        padded = None
        if self._nested(x, mask, src_key_padding_mask):
            kpm = src_key_padding_mask
            valid = kpm == 0  # PyTorch's logical_not of the additive mask
            if state.tracer is None and valid.size and not every_value(valid).any():
                raise ArgumentError("to_padded_tensor: at least one constituent tensor should "
                                    "have non-zero numel (PyTorch's nested tensors: every "
                                    "sequence of the batch is all padding)")
            if self.mask_check:  # packed only when every row's padding is at its end
                rises = valid[:, 1:].to(np.int32) > valid[:, :-1].to(np.int32)
                ordered = _f.sum(rises.to(np.int32)) == 0
                padded = (~valid) & ordered
            else:  # each sequence: its first (number of unpadded positions) positions
                count = _f.sum(valid.to(np.int64), -1, keepdim=True)
                steps = creation.arange(kpm.shape[-1], device=x.device)
                padded = steps >= count
                src_key_padding_mask = canonical_mask(padded, "src_key_padding_mask", None, "",
                                                      x.dtype)
        # a causal hint only changes which kernel PyTorch runs, never the numbers
        causal = bool(is_causal) and is_causal is not None
        for layer in self.layers:
            x = layer(x, src_mask=mask, is_causal=causal,
                      src_key_padding_mask=src_key_padding_mask)
        if padded is not None:
            x = _f.where(padded.unsqueeze(-1), 0.0, x)
        return x if self.norm is None else self.norm(x)


def _why_not_nested(layer) -> str:
    """Why PyTorch's encoder would not use nested tensors with `layer` ('' if it would)."""
    if not isinstance(layer, TransformerEncoderLayer):
        return "encoder_layer was not TransformerEncoderLayer"
    if layer.norm_first:
        return "encoder_layer.norm_first was True"
    if not layer.self_attn.batch_first:
        return ("encoder_layer.self_attn.batch_first was not True(use batch_first for better "
                "inference performance)")
    if not layer.self_attn._qkv_same_embed_dim:
        return "encoder_layer.self_attn._qkv_same_embed_dim was not True"
    if layer.self_attn.in_proj_bias is None:
        return "encoder_layer.self_attn was passed bias=False"
    if not layer.activation_relu_or_gelu:
        return "encoder_layer.activation_relu_or_gelu was not True"
    if layer.norm1.eps != layer.norm2.eps:
        return "encoder_layer.norm1.eps was not equal to encoder_layer.norm2.eps"
    if layer.self_attn.num_heads % 2 == 1:
        return "encoder_layer.self_attn.num_heads is odd"
    return ""


class TransformerDecoderLayer(Module):
    """Self-attention over the target, attention to the encoder's output (`memory`) and a
    feed-forward block, each with dropout, a residual connection and LayerNorm (after
    each block, or before with `norm_first`)."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation="relu", layer_norm_eps: float = 1e-5,
                 batch_first: bool = False, norm_first: bool = False, bias: bool = True,
                 device=None, dtype=None) -> None:
        super().__init__()
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout,
                                            batch_first=batch_first, bias=bias, dtype=dtype)
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout,
                                                 batch_first=batch_first, bias=bias,
                                                 dtype=dtype)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, dtype=dtype)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, dtype=dtype)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        self.activation = _activation(activation)

    def __setstate__(self, state: dict) -> None:
        """As PyTorch's: a copy (`copy.deepcopy`, as `TransformerDecoder` and `Transformer`
        clone their layers, or pickling) of a layer whose activation is a Module runs
        `F.relu` (PyTorch keeps such a submodule out of the state it checks for
        "activation"); the Module stays registered, so it still prints."""
        if isinstance(state.get("activation"), Module):
            state = {**state, "activation": F.relu}
        self.__dict__.update(state)

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal=False):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                           is_causal=is_causal, need_weights=False)[0]
        return self.dropout1(x)

    def _mha_block(self, x, mem, attn_mask, key_padding_mask, is_causal=False):
        x = self.multihead_attn(x, mem, mem, attn_mask=attn_mask,
                                key_padding_mask=key_padding_mask, is_causal=is_causal,
                                need_weights=False)[0]
        return self.dropout2(x)

    def _ff_block(self, x):
        return self.dropout3(self.linear2(self.dropout(self.activation(self.linear1(x)))))

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal: bool = False,
                memory_is_causal: bool = False):
        x, mem = _t(tgt), _t(memory)
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            x = x + self._mha_block(self.norm2(x), mem, memory_mask, memory_key_padding_mask,
                                    memory_is_causal)
            return x + self._ff_block(self.norm3(x))
        x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
        x = self.norm2(x + self._mha_block(x, mem, memory_mask, memory_key_padding_mask,
                                           memory_is_causal))
        return self.norm3(x + self._ff_block(x))


class TransformerDecoder(Module):
    """`num_layers` copies of `decoder_layer` applied in turn to the target (each attending
    to `memory`), then an optional `norm`."""

    def __init__(self, decoder_layer: Module, num_layers: int, norm=None) -> None:
        super().__init__()
        if not isinstance(decoder_layer, Module):
            raise TypeError(f"TransformerDecoder: decoder_layer must be a Module, got "
                            f"{type(decoder_layer).__name__}")
        self.layers = _get_clones(decoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal: bool | None = None,
                memory_is_causal: bool = False):
        x = _t(tgt)
        # a causal hint only changes which kernel PyTorch runs, never the numbers
        causal = bool(tgt_is_causal) and tgt_is_causal is not None
        for layer in self.layers:
            x = layer(x, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                      tgt_key_padding_mask=tgt_key_padding_mask,
                      memory_key_padding_mask=memory_key_padding_mask, tgt_is_causal=causal,
                      memory_is_causal=memory_is_causal)
        return x if self.norm is None else self.norm(x)


class Transformer(Module):
    """The encoder-decoder transformer of "Attention Is All You Need": an encoder stack over
    `src`, a decoder stack over `tgt` attending to its output; `custom_encoder` /
    `custom_decoder` replace either. Every weight matrix starts Xavier-uniform."""

    def __init__(self, d_model: int = 512, nhead: int = 8, num_encoder_layers: int = 6,
                 num_decoder_layers: int = 6, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation="relu", custom_encoder=None, custom_decoder=None,
                 layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__()
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            layer = TransformerEncoderLayer(d_model, nhead, dim_feedforward, dropout,
                                            activation, layer_norm_eps, batch_first, norm_first,
                                            bias, dtype=dtype)
            norm = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
            self.encoder = TransformerEncoder(layer, num_encoder_layers, norm)
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            layer = TransformerDecoderLayer(d_model, nhead, dim_feedforward, dropout,
                                            activation, layer_norm_eps, batch_first, norm_first,
                                            bias, dtype=dtype)
            norm = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
            self.decoder = TransformerDecoder(layer, num_decoder_layers, norm)
        self._reset_parameters()
        self.d_model = d_model
        self.nhead = nhead
        self.batch_first = batch_first

    def forward(self, src, tgt, src_mask=None, tgt_mask=None, memory_mask=None,
                src_key_padding_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, src_is_causal: bool | None = None,
                tgt_is_causal: bool | None = None, memory_is_causal: bool = False):
        s, t = _t(src), _t(tgt)
        batched = s.ndim == 3
        bdim = 0 if self.batch_first else 1
        if batched and (t.ndim != 3 or s.shape[bdim] != t.shape[bdim]):
            raise _ArgumentError(f"Transformer: the batch number of src and tgt must be equal; "
                                 f"got src of shape {s.shape} and tgt of shape {t.shape} "
                                 f"(batch_first={self.batch_first})")
        if s.shape[-1] != self.d_model or t.shape[-1] != self.d_model:
            raise _ArgumentError(f"Transformer: the feature number of src and tgt must be equal "
                                 f"to d_model={self.d_model}; got src of shape {s.shape} and "
                                 f"tgt of shape {t.shape}")
        memory = self.encoder(s, mask=src_mask, src_key_padding_mask=src_key_padding_mask,
                              is_causal=src_is_causal)
        return self.decoder(t, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask,
                            tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device=None, dtype=None) -> Tensor:
        """The (sz, sz) causal mask: -inf above the diagonal (a position may not attend to
        later ones), 0 elsewhere; in the default dtype unless `dtype` says otherwise."""
        dt = _dtype(dtype)
        mask = np.triu(np.full((sz, sz), -math.inf, dtype=dt), 1)
        return creation.tensor(mask, device=device)

    def _reset_parameters(self) -> None:
        for p in self.parameters():
            if p.ndim > 1:
                init.xavier_uniform_(p)
