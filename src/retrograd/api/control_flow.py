"""`rg.while_loop`: PyTorch's `torch.while_loop` run eagerly, a Python loop over the carried
values. As with `rg.cond`, a condition that is a tensor is read in Python, so `rg.jit`
refuses a traced one (a data-dependent loop) and `rg.func.vmap` refuses a batched one;
gradients flow through the iterations that ran, as in torch.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..tensor import Tensor
from ._errors import ArgumentError

__all__ = ["while_loop"]


def _truth(pred) -> bool:
    if isinstance(pred, Tensor):
        if pred.numel() != 1:
            raise ArgumentError(f"while_loop(): cond_fn must return a bool or a one-element "
                                f"tensor, got a tensor of shape {tuple(pred.shape)}")
        return bool(pred.item())
    if isinstance(pred, (bool, np.bool_)):
        return bool(pred)
    raise TypeError(f"while_loop(): cond_fn must return a bool or a one-element tensor, got "
                    f"{type(pred).__name__}")


def _same_kind(new, old, k: int) -> None:
    """The carried value k keeps its kind: a tensor its shape and dtype, a number its type."""
    if isinstance(old, Tensor):
        if not isinstance(new, Tensor) or new.shape != old.shape or new.dtype != old.dtype:
            got = (f"shape {tuple(new.shape)} and dtype {new.dtype}" if isinstance(new, Tensor)
                   else type(new).__name__)
            raise RuntimeError(f"while_loop(): body_fn's output {k} must keep the carried "
                               f"input's shape {tuple(old.shape)} and dtype {old.dtype}, got "
                               f"{got}")
    elif isinstance(new, Tensor) or type(new) is not type(old):
        raise RuntimeError(f"while_loop(): body_fn's output {k} must be a "
                           f"{type(old).__name__} as the carried input is, got "
                           f"{type(new).__name__}")


def while_loop(cond_fn: Callable, body_fn: Callable, carried_inputs: tuple | list):
    """While `cond_fn(*carried)` is true, `carried = body_fn(*carried)`; the final carried
    values as a tuple (the body's bare tensor, if it returns one). Each value must keep its
    shape and dtype (a number its type). Like `torch.while_loop` run eagerly."""
    if not callable(cond_fn) or not callable(body_fn):
        raise TypeError("while_loop(): cond_fn and body_fn must be callables")
    if not isinstance(carried_inputs, (tuple, list)):
        raise TypeError(f"while_loop(): carried_inputs must be a tuple or list, got "
                        f"{type(carried_inputs).__name__}")
    carried = tuple(carried_inputs)
    bare = False
    while _truth(cond_fn(*carried)):
        out = body_fn(*carried)
        bare = not isinstance(out, (tuple, list))
        out = (out,) if bare else tuple(out)
        if len(out) != len(carried):
            raise RuntimeError(f"while_loop(): body_fn returned {len(out)} values for "
                               f"{len(carried)} carried inputs")
        for k, (new, old) in enumerate(zip(out, carried)):
            _same_kind(new, old, k)
        carried = out
    return carried[0] if bare else carried
