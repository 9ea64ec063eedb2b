"""`flex_attention`, as `torch.nn.attention.flex_attention`: attention whose scores a Python
`score_mod(score, b, h, q_idx, kv_idx)` rewrites and whose mask a
`mask_mod(b, h, q_idx, kv_idx)` gives (through a `BlockMask` from `create_block_mask`).

PyTorch applies the two functions element by element (vmap, or a compiled kernel); here
they are called once, on the scores and on index tensors shaped to broadcast against
them ((B,1,1,1), (1,H,1,1), (1,1,L,1), (1,1,1,S)), which gives the same values for the
element-wise functions these are (`torch.where`, arithmetic, indexing a bias table with
the indices), and records the gradients through the scores and any tensor they read.
As in PyTorch, masked scores are -inf, a row with nothing left attends to nothing (its
output is 0 and its log-sum-exp -inf), and block sparsity skips no work: the mask is
applied element by element, so the result does not depend on BLOCK_SIZE.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable

import numpy as np

from ...api.elementwise import where
from ...creation import arange, tensor
from ...primitive import ArgumentError
from ...tensor import Tensor

__all__ = ["BlockMask", "flex_attention", "create_block_mask", "create_mask", "or_masks",
           "and_masks", "noop_mask"]


def noop_mask(b, h, q_idx, kv_idx):
    """The mask that keeps everything."""
    return q_idx.new_ones((), dtype=bool) if isinstance(q_idx, Tensor) else True


def _combined(mask_mods: tuple, join: Callable, start: bool) -> Callable:
    if not all(callable(m) for m in mask_mods):
        raise RuntimeError(f"All inputs should be callable mask_mods: {mask_mods}")

    def mask_mod(b, h, q_idx, kv_idx):
        out = tensor(start)
        for m in mask_mods:
            out = join(out, m(b, h, q_idx, kv_idx))
        return out
    return mask_mod


def and_masks(*mask_mods: Callable) -> Callable:
    """A mask_mod keeping what all of `mask_mods` keep."""
    return _combined(mask_mods, operator.and_, True)


def or_masks(*mask_mods: Callable) -> Callable:
    """A mask_mod keeping what any of `mask_mods` keeps."""
    return _combined(mask_mods, operator.or_, False)


def _indices(B: int, H: int, L: int, S: int) -> tuple:
    return (arange(B).view(B, 1, 1, 1), arange(H).view(1, H, 1, 1),
            arange(L).view(1, 1, L, 1), arange(S).view(1, 1, 1, S))


def create_mask(mod_fn: Callable, B: int | None, H: int | None, Q_LEN: int, KV_LEN: int,
                device=None) -> Tensor:
    """The dense (B, H, Q_LEN, KV_LEN) bool mask of a mask_mod (B, H None: 1)."""
    B, H = B or 1, H or 1
    keep = mod_fn(*_indices(B, H, Q_LEN, KV_LEN))
    keep = keep if isinstance(keep, Tensor) else tensor(bool(keep))
    return keep.to(bool).expand(B, H, Q_LEN, KV_LEN).clone()


class BlockMask:
    """A mask_mod with the sizes it covers and its block structure: `shape`, `BLOCK_SIZE`,
    `seq_lengths`, `mask_mod`, `to_dense()` (which (q-block, kv-block) pairs keep
    anything) and `sparsity()`."""

    def __init__(self, mask_mod: Callable, B: int, H: int, Q_LEN: int, KV_LEN: int,
                 BLOCK_SIZE: tuple[int, int]) -> None:
        self.mask_mod = mask_mod
        self.shape = (B, H, Q_LEN, KV_LEN)
        self.seq_lengths = (Q_LEN, KV_LEN)
        self.BLOCK_SIZE = BLOCK_SIZE
        self._dense = create_mask(mask_mod, B, H, Q_LEN, KV_LEN).numpy()

    def to_dense(self) -> Tensor:
        """(B, H, q blocks, kv blocks) int32: 1 where the block keeps any element."""
        bq, bk = self.BLOCK_SIZE
        B, H, L, S = self.shape
        nq, nk = -(-L // bq), -(-S // bk)
        pad = np.zeros((B, H, nq * bq, nk * bk), dtype=bool)
        pad[:, :, :L, :S] = self._dense
        blocks = pad.reshape(B, H, nq, bq, nk, bk).any(axis=(3, 5))
        return tensor(blocks.astype(np.int32))

    def sparsity(self) -> float:
        """The percentage of blocks that keep nothing."""
        d = self.to_dense().numpy()
        return 100.0 * (1.0 - d.sum() / d.size)

    def __repr__(self) -> str:
        return f"BlockMask(shape={self.shape}, sparsity={self.sparsity():.2f}%)"


def create_block_mask(mask_mod: Callable, B: int | None, H: int | None, Q_LEN: int,
                      KV_LEN: int, device=None, BLOCK_SIZE: int | tuple[int, int] = 128,
                      _compile: bool = False, separate_full_blocks: bool = True,
                      compute_dq_write_order: bool = False,
                      dq_kv_order: bool = True) -> BlockMask:
    """The BlockMask of `mask_mod` over (B, H, Q_LEN, KV_LEN) (B, H None: broadcast)."""
    size = (BLOCK_SIZE, BLOCK_SIZE) if isinstance(BLOCK_SIZE, int) else tuple(BLOCK_SIZE)
    return BlockMask(mask_mod, B or 1, H or 1, int(Q_LEN), int(KV_LEN), size)


def flex_attention(query: Tensor, key: Tensor, value: Tensor,
                   score_mod: Callable | None = None, block_mask: BlockMask | None = None,
                   scale: float | None = None, enable_gqa: bool = False,
                   return_lse: bool = False, kernel_options=None, *, return_aux=None):
    """softmax(score_mod(q k^T * scale) masked by block_mask) v over (B, H, L, E) queries
    and (B, Hkv, S, E) keys and values; with `return_lse`, also the (B, H, L) float32
    log-sum-exp of each row's kept scores (float64 for float64 inputs)."""
    if return_aux is not None:
        raise NotImplementedError("flex_attention(return_aux=...) is not supported; use "
                                  "return_lse=True")
    for name, t in (("query", query), ("key", key), ("value", value)):
        if not isinstance(t, Tensor) or t.ndim != 4:
            raise ArgumentError(f"flex_attention: {name} must be a 4-d tensor (B, H, L, E), "
                                f"got {getattr(t, 'shape', type(t).__name__)}")
    B, Hq, L, E = query.shape
    Bk, Hkv, S, Ek = key.shape
    if key.shape[:3] != value.shape[:3] or Ek != E or Bk != B:
        raise ArgumentError(f"flex_attention: shapes do not fit: query {query.shape}, key "
                            f"{key.shape}, value {value.shape}")
    if Hq != Hkv:
        if not enable_gqa or Hq % Hkv:
            raise ArgumentError(f"flex_attention: query has {Hq} heads and key/value {Hkv}; "
                                "pass enable_gqa=True with a multiple")
        key = key.repeat_interleave(Hq // Hkv, dim=1)
        value = value.repeat_interleave(Hq // Hkv, dim=1)
    s = 1.0 / math.sqrt(E) if scale is None else float(scale)
    scores = (query @ key.transpose(-2, -1)) * s
    idx = _indices(B, Hq, L, S)
    if score_mod is not None:
        scores = score_mod(scores, *idx)
    if block_mask is not None:
        if tuple(block_mask.seq_lengths) != (L, S):
            raise ArgumentError(f"flex_attention: block_mask covers {block_mask.seq_lengths}, "
                                f"but the query and key lengths are {(L, S)}")
        keep = block_mask.mask_mod(*idx)
        keep = keep if isinstance(keep, Tensor) else tensor(bool(keep))
        scores = where(keep, scores, float("-inf"))
    # softmax shifted by the row's (constant) maximum; a row with nothing kept weighs 0
    top = scores.detach().amax(-1, keepdim=True)
    empty = top == float("-inf")
    e = (scores - where(empty, 0.0, top)).exp()
    total = e.sum(-1, keepdim=True)
    out = (e / where(empty, 1.0, total)) @ value
    if return_lse:
        lse = where(empty, float("-inf"), total.log() + top).squeeze(-1)
        return out, lse if lse.dtype != np.float16 else lse.to(np.float32)
    return out
