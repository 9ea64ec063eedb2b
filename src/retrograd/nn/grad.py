"""`rg.nn.grad`: the gradients of a convolution with respect to its input and its weight,
as functions (`torch.nn.grad.conv2d_input`, `conv2d_weight`, ...), for code that writes
a convolution's backward by hand (a custom Function, a memory-saving layer).

Each is the vector-Jacobian product of the convolution itself, so it is exactly the
gradient `backward` would give, and is differentiable in turn.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .. import autograd
from ..grad_mode import enable_grad
from ..tensor import Tensor
from . import functional as F

__all__ = ["conv1d_input", "conv1d_weight", "conv2d_input", "conv2d_weight",
           "conv3d_input", "conv3d_weight"]

_CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}


def _size(size, name: str, fn: str, n: int) -> tuple[int, ...]:
    try:
        shape = tuple(int(s) for s in size)
    except TypeError:
        raise TypeError(f"{fn}: {name} must be a sequence of ints, got {size!r}") from None
    if len(shape) != n + 2:
        raise ValueError(f"{fn}: {name} must have {n + 2} entries (N, C, *spatial) for a "
                         f"{n}-d convolution, got {shape}")
    return shape


def _vjp(n: int, fn: str, unknown: str, input, weight, grad_output, stride, padding,
         dilation, groups) -> Tensor:
    """d<conv>/d<unknown> applied to grad_output; `unknown`'s value does not matter (the
    convolution is linear in it), so it is zeros of its size."""
    conv = _CONV[n]
    given = weight if unknown == "input" else input
    if not isinstance(given, Tensor) or not isinstance(grad_output, Tensor):
        raise TypeError(f"{fn}: expected Tensors, got {type(given).__name__} and "
                        f"{type(grad_output).__name__}")
    size = _size(input if unknown == "input" else weight, f"{unknown}_size", fn, n)
    dtype = np.result_type(given.dtype, grad_output.dtype)
    x = Tensor(np.zeros(size, dtype), requires_grad=True)
    higher = given.requires_grad or grad_output.requires_grad
    with enable_grad():
        if unknown == "input":
            y = conv(x, weight, None, stride, padding, dilation, groups)
        else:
            y = conv(input, x, None, stride, padding, dilation, groups)
        if tuple(y.shape) != tuple(grad_output.shape):
            raise ValueError(f"{fn}: grad_output has shape {tuple(grad_output.shape)}, but the "
                             f"convolution gives {tuple(y.shape)}")
        g, = autograd.grad(y, x, grad_output, create_graph=higher)
    return g


def conv1d_input(input_size: Sequence[int], weight: Tensor, grad_output: Tensor, stride=1,
                 padding=0, dilation=1, groups: int = 1) -> Tensor:
    """The gradient of `conv1d` with respect to an input of size `input_size`."""
    return _vjp(1, "conv1d_input", "input", input_size, weight, grad_output, stride, padding,
                dilation, groups)


def conv1d_weight(input: Tensor, weight_size: Sequence[int], grad_output: Tensor,  # noqa: A002
                  stride=1, padding=0, dilation=1, groups: int = 1) -> Tensor:
    """The gradient of `conv1d` with respect to a weight of size `weight_size`."""
    return _vjp(1, "conv1d_weight", "weight", input, weight_size, grad_output, stride, padding,
                dilation, groups)


def conv2d_input(input_size: Sequence[int], weight: Tensor, grad_output: Tensor, stride=1,
                 padding=0, dilation=1, groups: int = 1) -> Tensor:
    """The gradient of `conv2d` with respect to an input of size `input_size`."""
    return _vjp(2, "conv2d_input", "input", input_size, weight, grad_output, stride, padding,
                dilation, groups)


def conv2d_weight(input: Tensor, weight_size: Sequence[int], grad_output: Tensor,  # noqa: A002
                  stride=1, padding=0, dilation=1, groups: int = 1) -> Tensor:
    """The gradient of `conv2d` with respect to a weight of size `weight_size`."""
    return _vjp(2, "conv2d_weight", "weight", input, weight_size, grad_output, stride, padding,
                dilation, groups)


def conv3d_input(input_size: Sequence[int], weight: Tensor, grad_output: Tensor, stride=1,
                 padding=0, dilation=1, groups: int = 1) -> Tensor:
    """The gradient of `conv3d` with respect to an input of size `input_size`."""
    return _vjp(3, "conv3d_input", "input", input_size, weight, grad_output, stride, padding,
                dilation, groups)


def conv3d_weight(input: Tensor, weight_size: Sequence[int], grad_output: Tensor,  # noqa: A002
                  stride=1, padding=0, dilation=1, groups: int = 1) -> Tensor:
    """The gradient of `conv3d` with respect to a weight of size `weight_size`."""
    return _vjp(3, "conv3d_weight", "weight", input, weight_size, grad_output, stride, padding,
                dilation, groups)
