"""Outputs of ops torch gives no derivative: computed outside the op table, they still
require grad when an input does (as torch's do), and a backward through them raises
torch's RuntimeError ("derivative for aten::<name> is not implemented"), as does forward
mode (a Function without jvp)."""

from __future__ import annotations

from ..autograd._core import Function
from ..grad_mode import state
from ..tensor import Tensor


class _NoDerivative(Function):
    """Passes a precomputed output through; its backward raises."""

    @staticmethod
    def forward(ctx, name, out, *inputs):
        ctx.op_name = name
        return out

    @staticmethod
    def backward(ctx, *grads):
        raise RuntimeError(f"derivative for aten::{ctx.op_name} is not implemented")


def no_derivative(out: Tensor, name: str, inputs: tuple) -> Tensor:
    """`out`, recorded (while grad is enabled and an input requires grad) as an op whose
    backward raises, naming torch's op `name`."""
    if state.enabled and any(isinstance(t, Tensor) and t.requires_grad for t in inputs):
        return _NoDerivative.apply(name, out, *inputs)
    return out
