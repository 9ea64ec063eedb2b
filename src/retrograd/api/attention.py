"""Scaled dot-product attention, PyTorch's `F.scaled_dot_product_attention`, and
multi-head attention, `F.multi_head_attention_forward` (what `nn.MultiheadAttention` runs).

Without a mask tensor or dropout (causal or not), one fused op (`ops.attention`);
otherwise a composition of recorded ops (two matrix products and a softmax), so its
gradient, higher derivatives, forward mode and `rg.jit` replay come from theirs.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from .. import creation, ops
from ..devices import namespace_of
from ..engine import apply
from ..grad_mode import state as _state
from ..primitive import ArgumentError, ShapeError
from ..tensor import Tensor
from ._args import _t, broadcasts_into
from ._errors import ArgumentTypeError, MixedDtypeError
from .elementwise import where
from .linalg import matmul
from .reductions import mean, softmax
from .reductions import sum as rg_sum
from .shape import cat, transpose

__all__ = ["scaled_dot_product_attention", "multi_head_attention_forward"]


def _repeat_heads(x: Tensor, groups: int) -> Tensor:
    """(..., H, S, E) -> (..., H * groups, S, E), each head repeated `groups` times in place."""
    lead, (h, s, e) = x.shape[:-3], x.shape[-3:]
    y = x.reshape(lead + (h, 1, s, e)).expand(lead + (h, groups, s, e))
    return y.reshape(lead + (h * groups, s, e))


def _fused_in_torch(q: Tensor, k: Tensor, v: Tensor, dropout_p: float) -> bool:
    """Whether PyTorch's CPU dispatcher picks its fused (flash) kernel: 4-D query, key and
    value with one batch size, one head size, non-empty sequences, no dropout and each
    last dimension contiguous. (Its result is laid out as the query; the math path's is
    row-major.)"""
    return (q.ndim == k.ndim == v.ndim == 4 and dropout_p == 0.0
            and q.shape[0] == k.shape[0] == v.shape[0]
            and q.shape[-1] == k.shape[-1] == v.shape[-1]
            and q.shape[-2] > 0 and k.shape[-2] > 0
            and all(t.shape[-1] <= 1 or t.data.strides[-1] == t.data.itemsize
                    for t in (q, k, v)))


def _laid_out(out: Tensor, like) -> Tensor:
    """`out` with its axes in memory in `like`'s order (an array, for np.empty_like's), or
    row-major when `like` is None: PyTorch's layout of the attention result, so that
    `.transpose(1, 2).view(B, T, C)` works (or is refused) as there. A recorded copy where
    the layout differs."""
    want = (np.empty_like(like, shape=out.shape) if like is not None
            else np.empty(out.shape, out.dtype)).strides
    if out.data.__class__ is not np.ndarray or out.data.strides == want \
            or out.data.itemsize != np.dtype(out.dtype).itemsize:
        return out
    order = sorted(range(out.ndim), key=lambda i: -want[i])  # outermost axis first
    inverse = [0] * out.ndim
    for pos, axis in enumerate(order):
        inverse[axis] = pos
    return out.permute(*order).contiguous().permute(*inverse)


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p: float = 0.0,
                                 is_causal: bool = False, scale=None,
                                 enable_gqa: bool = False) -> Tensor:
    """softmax(q k^T * scale + mask) v over (..., L, E) queries and (..., S, E) keys.

    `attn_mask`: bool (True takes part) or float (added to the scores), broadcast to
    (..., L, S); `is_causal`: query i sees keys 0..i (with a mask too, where PyTorch's
    fused kernel would run: 4-D inputs, no dropout); `dropout_p`: dropout on the
    weights (rg's generator); `enable_gqa`: key/value heads (dim -3) shared by groups of
    query heads. A query row that may see no key gives zeros, as in PyTorch. A mask
    object that computes attention itself (`rg.nn.attention.bias.CausalBias`, through its
    class's `_sdpa_dispatch`) is handed the call, as PyTorch's `__torch_function__` does.
    """
    if attn_mask is not None and type(attn_mask) is not Tensor:
        route = getattr(type(attn_mask), "_sdpa_dispatch", None)
        if route is not None:
            return route(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    if _state.flops is not None:
        return _state.flops.run("sdpa", scaled_dot_product_attention, query, key, value,
                                attn_mask, dropout_p, is_causal, scale, enable_gqa)
    q, k, v = _t(query), _t(key), _t(value)
    fn = "scaled_dot_product_attention"
    if q.ndim < 2 or k.ndim < 2 or v.ndim < 2:
        raise ArgumentError(f"{fn}: query, key and value need at least 2 dimensions (..., L, E); "
                            f"got shapes {q.shape}, {k.shape}, {v.shape}")
    if q.dtype.kind != "f" or k.dtype != q.dtype or v.dtype != q.dtype:
        raise ArgumentTypeError(f"{fn}: query, key and value must share one floating dtype; "
                                f"got {q.dtype}, {k.dtype}, {v.dtype}")
    if q.shape[-1] != k.shape[-1]:
        raise ArgumentError(f"{fn}: query of shape {q.shape} and key of shape {k.shape} must have "
                            f"the same embedding size (last dimension)")
    if k.shape[-2] != v.shape[-2]:
        raise ArgumentError(f"{fn}: key of shape {k.shape} and value of shape {v.shape} must have "
                            f"the same sequence length (dimension -2)")
    if not 0.0 <= dropout_p <= 1.0:
        raise ArgumentError(f"{fn}: dropout_p must be in [0, 1], got {dropout_p}")
    if is_causal and attn_mask is not None and q.size and k.size \
            and not _fused_in_torch(q, k, v, dropout_p):
        # PyTorch's fused CPU kernel takes both (the mask within the causal band); its math
        # path, which takes the other inputs, refuses them
        raise ArgumentError(f"{fn}: Explicit attn_mask should not be set when is_causal=True "
                            f"(PyTorch combines them only in its fused kernel: 4-D query, key "
                            f"and value of one batch size, no dropout)")
    if enable_gqa and q.ndim >= 3 and q.shape[-3] != k.shape[-3]:
        hq, hk, hv = q.shape[-3], k.shape[-3], v.shape[-3]
        if hk != hv or hq % hk:
            raise ArgumentError(f"{fn}: with enable_gqa, the number of key heads ({hk}) and value "
                                f"heads ({hv}) must be equal and divide the number of query heads "
                                f"({hq}); shapes {q.shape}, {k.shape}, {v.shape}")
    gqa = enable_gqa and q.ndim >= 3 and q.shape[-3] != k.shape[-3]  # heads repeated later
    try:
        batch = np.broadcast_shapes(q.shape[:-2], k.shape[:-3] + q.shape[-3:-2] if gqa else
                                    k.shape[:-2], v.shape[:-3] + q.shape[-3:-2] if gqa else
                                    v.shape[:-2])
    except ValueError:
        raise ArgumentError(f"{fn}: the batch dimensions of query {q.shape}, key {k.shape} and "
                            f"value {v.shape} do not broadcast (different head counts need "
                            f"enable_gqa=True)") from None
    like = q.data if _fused_in_torch(q, k, v, dropout_p) else None  # before the gqa repeat
    return _laid_out(_attend(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa,
                             batch, fn), like)


def _attend(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa, batch, fn) -> Tensor:
    """scaled_dot_product_attention's value, on checked arguments."""
    if enable_gqa and q.ndim >= 3 and q.shape[-3] != k.shape[-3]:
        hq, hk = q.shape[-3], k.shape[-3]
        k, v = _repeat_heads(k, hq // hk), _repeat_heads(v, hq // hk)
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
        if not broadcasts_into(mask.shape, scores_shape):
            raise ArgumentError(f"{fn}: attn_mask of shape {mask.shape} does not broadcast to the "
                                f"attention scores' shape {scores_shape} (..., L, S)")
        if mask.dtype != np.bool_ and mask.dtype.kind != "f":
            raise ArgumentTypeError(f"{fn}: attn_mask must be bool or floating, got "
                                    f"{mask.dtype}")
    if is_causal:
        band = Tensor(np.tril(np.ones((L, S), dtype=bool)))
        if mask is None:
            mask = band
        elif mask.dtype == np.bool_:
            mask = mask & band
        else:
            mask = where(band, mask, -math.inf)
    scores = matmul(q * s, transpose(k, -2, -1))
    if mask is not None:  # tensor ops: rg.jit replays them for each call's mask
        if mask.dtype == np.bool_:
            # rows that see no key (a count: the all/any rows run on the host only)
            dead = rg_sum(mask.to(np.int32), -1, keepdim=True) == 0
            bias = where(mask | dead, 0.0, -math.inf).to(q.dtype)
        else:
            dead = rg_sum((mask == -math.inf).to(np.int32), -1, keepdim=True) == mask.shape[-1]
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


# ---------------------------------------------------------------- multi-head attention

class AttentionShapeError(ValueError, AssertionError):
    """A query, key, value or mask of the wrong shape for multi-head attention (PyTorch
    asserts; a ValueError too)."""


class AttentionMaskShapeError(ValueError, RuntimeError):
    """An `attn_mask` of the wrong shape (a RuntimeError in PyTorch; a ValueError too)."""


class AttentionMaskTypeError(TypeError, AssertionError):
    """A mask that is neither bool nor floating (PyTorch asserts; a TypeError too)."""


def canonical_mask(mask, mask_name: str, other_type, other_name: str, target_type,
                   check_other: bool = True):
    """A bool mask (True: do not attend) as an additive float mask (-inf / 0) in
    `target_type`; a float mask as it is; None stays None. As PyTorch's `_canonical_mask`,
    warning when `mask` and the other mask differ in type."""
    if mask is None:
        return None
    m = _t(mask)
    if m.dtype != np.bool_ and m.dtype.kind != "f":
        raise AttentionMaskTypeError(f"only bool and floating types of {mask_name} are "
                                     f"supported, got {m.dtype}")
    if check_other and other_type is not None and m.dtype != other_type:
        warnings.warn(f"Support for mismatched {mask_name} and {other_name} is deprecated. "
                      "Use same type for both instead.", stacklevel=3)
    if m.dtype == np.bool_:  # a tensor op, so rg.jit replays it for each call's mask
        return where(m, -math.inf, 0.0).to(target_type)
    return m


def _append_zero(mask: Tensor | None) -> Tensor | None:
    """A zero (attend) column appended to an additive mask's last dimension."""
    if mask is None:
        return None
    zero = creation.zeros(*mask.shape[:-1], 1, dtype=mask.dtype, device=mask.device)
    return cat([mask, zero], -1)


def _linear(x, w, b=None) -> Tensor:
    if _state.flops is not None:
        return _state.flops.run("linear", _linear, x, w, b)
    if x.dtype != w.dtype or (b is not None and b.dtype != w.dtype):
        raise MixedDtypeError(f"multi_head_attention_forward: expected the inputs and the "
                              f"projection weights to share one dtype, got input {x.dtype}, "
                              f"weight {w.dtype}" + ("" if b is None else f", bias {b.dtype}"))
    if x.shape[-1] != w.shape[-1]:  # PyTorch: "mat1 and mat2 shapes cannot be multiplied"
        raise ShapeError(f"multi_head_attention_forward: an input of shape {x.shape} does not "
                         f"fit its projection weight of shape {w.shape} (expected last "
                         f"dimension {w.shape[-1]})")
    return apply(ops.linear, x, w, b)


def _weights_dropout(w: Tensor, p: float) -> Tensor:
    if p == 0.0:
        return w
    if p == 1.0:
        return w * namespace_of(w.data).zeros(w.shape, dtype=w.dtype)
    keep = (creation.generator(like=w.data).random(w.shape) >= p).astype(w.dtype)
    keep *= 1.0 / (1.0 - p)
    return w * keep


def _check_mha_shapes(q: Tensor, k: Tensor, v: Tensor, key_padding_mask, attn_mask,
                      num_heads: int) -> bool:
    """Whether the call is batched (3-D query), after PyTorch's dimension checks."""
    if q.ndim == 3:
        if k.ndim != 3 or v.ndim != 3:
            raise AttentionShapeError(f"For batched (3-D) `query`, expected `key` and `value` "
                                      f"to be 3-D but found shapes {k.shape} and {v.shape}")
        if key_padding_mask is not None and key_padding_mask.ndim != 2:
            raise AttentionShapeError(f"For batched (3-D) `query`, expected `key_padding_mask` "
                                      f"to be `None` or 2-D but found shape "
                                      f"{key_padding_mask.shape}")
        if attn_mask is not None and attn_mask.ndim not in (2, 3):
            raise AttentionShapeError(f"For batched (3-D) `query`, expected `attn_mask` to be "
                                      f"`None`, 2-D or 3-D but found shape {attn_mask.shape}")
        return True
    if q.ndim == 2:
        if k.ndim != 2 or v.ndim != 2:
            raise AttentionShapeError(f"For unbatched (2-D) `query`, expected `key` and "
                                      f"`value` to be 2-D but found shapes {k.shape} and "
                                      f"{v.shape}")
        if key_padding_mask is not None and key_padding_mask.ndim != 1:
            raise AttentionShapeError(f"For unbatched (2-D) `query`, expected "
                                      f"`key_padding_mask` to be `None` or 1-D but found shape "
                                      f"{key_padding_mask.shape}")
        if attn_mask is not None:
            if attn_mask.ndim not in (2, 3):
                raise AttentionShapeError(f"For unbatched (2-D) `query`, expected `attn_mask` "
                                          f"to be `None`, 2-D or 3-D but found shape "
                                          f"{attn_mask.shape}")
            want = (num_heads, q.shape[0], k.shape[0])
            if attn_mask.ndim == 3 and attn_mask.shape != want:
                raise AttentionShapeError(f"Expected `attn_mask` shape to be {want} but got "
                                          f"{attn_mask.shape}")
        return False
    raise AttentionShapeError(f"query should be unbatched 2D or batched 3D tensor but received "
                              f"a {q.ndim}-D query of shape {q.shape}")


def multi_head_attention_forward(
        query, key, value, embed_dim_to_check: int, num_heads: int, in_proj_weight,
        in_proj_bias, bias_k, bias_v, add_zero_attn: bool, dropout_p: float, out_proj_weight,
        out_proj_bias, training: bool = True, key_padding_mask=None, need_weights: bool = True,
        attn_mask=None, use_separate_proj_weight: bool = False, q_proj_weight=None,
        k_proj_weight=None, v_proj_weight=None, static_k=None, static_v=None,
        average_attn_weights: bool = True, is_causal: bool = False
        ) -> tuple[Tensor, Tensor | None]:
    """Multi-head attention over sequence-first (L, N, E) inputs, as PyTorch's
    `F.multi_head_attention_forward` (the function `nn.MultiheadAttention` calls).

    Projects query, key and value (packed `in_proj_weight`, or separate `q/k/v_proj_weight`
    with `use_separate_proj_weight`), appends `bias_k`/`bias_v` and a zero key with
    `add_zero_attn`, attends per head with `attn_mask` ((L, S) or (N * num_heads, L, S))
    and `key_padding_mask` ((N, S)) (bool: True masks out; float: added to the scores),
    and projects the result. Returns (output, weights): the weights (N, L, S), averaged
    over heads unless `average_attn_weights=False` ((N, num_heads, L, S)), or None
    without `need_weights`. `is_causal` is a hint that `attn_mask` is causal: without a
    key padding mask and weights it stands for it. A query row that may see no key gives
    zeros without `need_weights` and NaN with it, as in PyTorch.
    """
    return mha_forward(query, key, value, embed_dim_to_check, num_heads, in_proj_weight,
                       in_proj_bias, bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight,
                       out_proj_bias, training, key_padding_mask, need_weights, attn_mask,
                       use_separate_proj_weight, q_proj_weight, k_proj_weight, v_proj_weight,
                       static_k, static_v, average_attn_weights, is_causal)


def mha_forward(query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias,
                bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias,
                training, key_padding_mask, need_weights, attn_mask, use_separate_proj_weight,
                q_proj_weight, k_proj_weight, v_proj_weight, static_k, static_v,
                average_attn_weights, is_causal, dead_rows_nan: bool = False):
    """`multi_head_attention_forward`; with `dead_rows_nan`, as PyTorch's inference fast
    path: the output through an explicit softmax (a query row that may see no key gives
    NaN) and any `is_causal` hint ignored for the mask given."""
    q, k, v = _t(query), _t(key), _t(value)
    kpm = None if key_padding_mask is None else _t(key_padding_mask)
    am = None if attn_mask is None else _t(attn_mask)
    batched = _check_mha_shapes(q, k, v, kpm, am, num_heads)
    if not batched:
        q, k, v = q.unsqueeze(1), k.unsqueeze(1), v.unsqueeze(1)
        kpm = None if kpm is None else kpm.unsqueeze(0)
    tgt_len, bsz, embed_dim = q.shape
    src_len = k.shape[0]
    kpm = canonical_mask(kpm, "key_padding_mask", None if am is None else am.dtype,
                         "attn_mask", q.dtype)
    if is_causal and am is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the "
                           "Transformer module method `generate_square_subsequent_mask` to "
                           "create this mask.")
    if is_causal and kpm is None and not need_weights and not dead_rows_nan:
        am = None  # the hint stands for the mask: causal attention
    else:
        am = canonical_mask(am, "attn_mask", None, "", q.dtype, check_other=False)
        if kpm is not None:
            is_causal = False
    if dead_rows_nan:
        is_causal = False
    if embed_dim != embed_dim_to_check:
        raise AttentionShapeError(f"was expecting embedding dimension of {embed_dim_to_check}, "
                                  f"but got query of shape {_t(query).shape}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AttentionShapeError(f"embed_dim {embed_dim} not divisible by num_heads "
                                  f"{num_heads}")
    if use_separate_proj_weight:
        if k.shape[:2] != v.shape[:2]:
            raise AttentionShapeError(f"key's sequence and batch dims {k.shape[:2]} do not "
                                      f"match value's {v.shape[:2]}")
    elif k.shape != v.shape:
        raise AttentionShapeError(f"key shape {k.shape} does not match value shape {v.shape}")
    if k.shape[1] != bsz:
        raise AttentionMaskShapeError(f"query and key must have the same batch size; got "
                                      f"query of shape {_t(query).shape} and key of shape "
                                      f"{_t(key).shape}")
    if kpm is not None and kpm.shape != (bsz, src_len):
        got = _t(key_padding_mask).shape
        want = (bsz, src_len) if batched else (src_len,)
        raise AttentionShapeError(f"expecting key_padding_mask shape of {want} (batch, source "
                                  f"length), but got {got}")
    # the input projections
    if not use_separate_proj_weight:
        if in_proj_weight is None:
            raise AttentionShapeError("use_separate_proj_weight is False but in_proj_weight is "
                                      "None")
        w = _t(in_proj_weight)
        e = embed_dim
        ws = (w[:e], w[e:2 * e], w[2 * e:])
    else:
        ws = (q_proj_weight, k_proj_weight, v_proj_weight)
        for name, wi, x in zip("qkv", ws, (q, k, v)):
            if wi is None:
                raise AttentionShapeError(f"use_separate_proj_weight is True but "
                                          f"{name}_proj_weight is None")
            if _t(wi).shape != (embed_dim, x.shape[-1]):
                raise AttentionShapeError(f"expecting {dict(q='query', k='key', v='value')[name]}"
                                          f" weights shape of {(embed_dim, x.shape[-1])}, but got "
                                          f"{_t(wi).shape}")
    if in_proj_bias is None:
        bs = (None, None, None)
    else:
        b = _t(in_proj_bias)
        bs = (b[:embed_dim], b[embed_dim:2 * embed_dim], b[2 * embed_dim:])
    q, k, v = (_linear(x, _t(wi), bi) for x, wi, bi in zip((q, k, v), ws, bs))
    if am is not None:
        if am.ndim == 2:
            if am.shape != (tgt_len, src_len):
                raise AttentionMaskShapeError(f"The shape of the 2-D attn_mask is {am.shape}, "
                                              f"but should be {(tgt_len, src_len)}.")
            am = am.unsqueeze(0)
        elif am.ndim == 3:
            if am.shape != (bsz * num_heads, tgt_len, src_len):
                raise AttentionMaskShapeError(f"The shape of the 3-D attn_mask is {am.shape}, "
                                              f"but should be "
                                              f"{(bsz * num_heads, tgt_len, src_len)}.")
        else:
            raise AttentionMaskShapeError(f"attn_mask's dimension {am.ndim} is not supported "
                                          f"(shape {am.shape})")
    if bias_k is not None and bias_v is not None:
        if static_k is not None or static_v is not None:
            raise AssertionError("bias cannot be added to static key or value")
        k = cat([k, _t(bias_k).expand(1, bsz, embed_dim)])
        v = cat([v, _t(bias_v).expand(1, bsz, embed_dim)])
        am, kpm = _append_zero(am), _append_zero(kpm)
    elif bias_k is not None or bias_v is not None:
        raise AssertionError("bias_k and bias_v must be given together")
    # heads: (N * H, L, head_dim), batch-major
    q = q.reshape(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    if static_k is None:
        k = k.reshape(k.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    else:
        k = _t(static_k)
        if k.ndim != 3 or k.shape[0] != bsz * num_heads or k.shape[2] != head_dim:
            raise AttentionShapeError(f"expecting static_k of shape ({bsz * num_heads}, S, "
                                      f"{head_dim}), but got {k.shape}")
    if static_v is None:
        v = v.reshape(v.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    else:
        v = _t(static_v)
        if v.ndim != 3 or v.shape[0] != bsz * num_heads or v.shape[2] != head_dim:
            raise AttentionShapeError(f"expecting static_v of shape ({bsz * num_heads}, S, "
                                      f"{head_dim}), but got {v.shape}")
    if add_zero_attn:
        zeros = creation.zeros(bsz * num_heads, 1, head_dim, dtype=k.dtype, device=k.device)
        k, v = cat([k, zeros], 1), cat([v, zeros], 1)
        am, kpm = _append_zero(am), _append_zero(kpm)
    src_len = k.shape[1]
    if kpm is not None:
        if kpm.shape != (bsz, src_len):
            raise AttentionShapeError(f"expecting key_padding_mask shape of {(bsz, src_len)}, "
                                      f"but got {kpm.shape}")
        kpm = kpm.reshape(bsz, 1, 1, src_len).expand(bsz, num_heads, 1, src_len) \
            .reshape(bsz * num_heads, 1, src_len)
        am = kpm if am is None else am + kpm
    if not training:
        dropout_p = 0.0
    if need_weights or dead_rows_nan:
        if am is not None and am.dtype != q.dtype:
            raise RuntimeError(f"multi_head_attention_forward: attn_mask of dtype {am.dtype} "
                               f"and query of dtype {q.dtype} must have the same dtype")
        scores = matmul(q * math.sqrt(1.0 / float(head_dim)), transpose(k, -2, -1))
        if am is not None:
            scores = scores + am
        weights = _weights_dropout(softmax(scores, -1), dropout_p)  # returned as used,
        out = matmul(weights, v)                                     # as PyTorch's
        out = out.transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
    else:
        if am is not None:
            am = am.unsqueeze(0) if am.shape[0] == 1 else \
                am.reshape(bsz, num_heads, am.shape[-2], src_len)
        out = scaled_dot_product_attention(
            q.reshape(bsz, num_heads, tgt_len, head_dim),
            k.reshape(bsz, num_heads, src_len, head_dim),
            v.reshape(bsz, num_heads, src_len, head_dim), am, dropout_p, bool(is_causal))
        out = out.permute(2, 0, 1, 3).reshape(bsz * tgt_len, embed_dim)
        weights = None
    out = _linear(out, _t(out_proj_weight),
                  None if out_proj_bias is None else _t(out_proj_bias))
    out = out.reshape(tgt_len, bsz, out.shape[-1])
    if not batched:
        out = out.squeeze(1)
    if not need_weights:
        return out, None
    weights = weights.reshape(bsz, num_heads, tgt_len, src_len)
    if average_attn_weights:
        weights = mean(weights, 1)
    if not batched:
        weights = weights.squeeze(0)
    return out, weights
