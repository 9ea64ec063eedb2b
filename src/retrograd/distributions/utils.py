"""`rg.distributions.utils`: torch.distributions.utils' helpers (probabilities and
logits, clamping, broadcasting, lazy properties, triangular packing)."""

from __future__ import annotations

from functools import update_wrapper

import numpy as np

from ..api._args import _t
from ..api.activations import softmax
from ..tensor import Tensor
from .distribution import broadcast_all
from .transforms import _sum_rightmost, tril_matrix_to_vec, vec_to_tril_matrix

__all__ = ["broadcast_all", "logits_to_probs", "probs_to_logits", "clamp_probs",
           "lazy_property", "euler_constant", "tril_matrix_to_vec", "vec_to_tril_matrix",
           "_sum_rightmost", "_standard_normal"]

euler_constant = 0.57721566490153286060


def clamp_probs(probs) -> Tensor:
    """`probs` clamped into [eps, 1 - eps] of its dtype."""
    probs = _t(probs)
    eps = float(np.finfo(probs.data.dtype).eps)
    return probs.clamp(min=eps, max=1 - eps)


def logits_to_probs(logits, is_binary: bool = False) -> Tensor:
    """Probabilities from logits: sigmoid when `is_binary`, else softmax over the last
    dimension."""
    logits = _t(logits)
    if is_binary:
        return logits.sigmoid()
    return softmax(logits, dim=-1)


def probs_to_logits(probs, is_binary: bool = False) -> Tensor:
    """Logits from probabilities (clamped first): log p - log(1 - p) when `is_binary`,
    else log p."""
    ps_clamped = clamp_probs(probs)
    if is_binary:
        return ps_clamped.log() - (-ps_clamped).log1p()
    return ps_clamped.log()


class lazy_property:
    """A property computed once per instance on first access and then stored in the
    instance's dict (torch's `lazy_property`)."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        update_wrapper(self, wrapped)

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return _LazyPropertyAndProperty(self.wrapped)
        value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


class _LazyPropertyAndProperty(lazy_property, property):
    def __init__(self, wrapped):
        property.__init__(self, wrapped)


def _standard_normal(shape, dtype=None, device=None) -> Tensor:
    """N(0, 1) draws of `shape` (torch's private helper, used by custom rsample code)."""
    from ..creation import randn

    return randn(*tuple(shape), dtype=dtype, device=device)
