"""`rg.autograd.function`: `Function`, `FunctionCtx` and the `once_differentiable`
decorator, under PyTorch's module path (`torch.autograd.function`)."""

from __future__ import annotations

import functools
from collections.abc import Callable

from ..grad_mode import no_grad, state
from ..tensor import Tensor
from ._core import Function, FunctionCtx

__all__ = ["Function", "FunctionCtx", "once_differentiable"]


class _Twice(Function):
    """Identity whose backward refuses: marks the results of a once-differentiable
    backward, so differentiating them (create_graph) fails loudly instead of silently
    giving zero."""

    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        raise RuntimeError("trying to differentiate twice a function that was marked with "
                           "@once_differentiable")


def once_differentiable(fn: Callable) -> Callable:
    """Decorate a Function's `backward` that cannot itself be differentiated: it runs
    without recording, and when a double backward would need it, its results raise
    on being differentiated. Like `torch.autograd.function.once_differentiable`."""
    @functools.wraps(fn)
    def wrapper(ctx, *args):
        with no_grad():
            outputs = fn(ctx, *args)
        if not state.enabled or not any(isinstance(a, Tensor) and a.requires_grad
                                        for a in args):
            return outputs
        single = not isinstance(outputs, tuple)
        outs = tuple(_Twice.apply(o.detach().requires_grad_())  # a node that refuses
                     if isinstance(o, Tensor) and o.dtype.kind in "fc" else o
                     for o in ((outputs,) if single else outputs))
        return outs[0] if single else outs

    return wrapper
