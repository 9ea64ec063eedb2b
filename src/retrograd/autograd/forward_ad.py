"""`rg.autograd.forward_ad`: `torch.autograd.forward_ad`'s dual numbers on retrograd's
forward mode (`forward.py`: tangents live on tensors, keyed by a level object).

    with fwAD.dual_level():
        x = fwAD.make_dual(primal, tangent)
        y = f(x)                      # every op pushes its tangent along
        p, t = fwAD.unpack_dual(y)    # t is dy along the tangent

The levels are numbered 0, 1, ... as torch numbers them; `dual_level` blocks nest
(torch allows only one at a time), each inner one a separate derivative. Leaving a
level removes its tangents (`unpack_dual` then gives None), as in torch. One
difference: in-place ops on or with a dual tensor are refused (RuntimeError) rather
than updating the tangent.
"""

from __future__ import annotations

from typing import NamedTuple

from .. import engine, forward, ops
from ..primitive import ArgumentError
from ..tensor import Tensor

__all__ = ["dual_level", "enter_dual_level", "exit_dual_level", "make_dual", "unpack_dual",
           "UnpackedDualTensor"]

_stack: list = []  # the entered forward.level context managers, innermost last


class UnpackedDualTensor(NamedTuple):
    """What `unpack_dual` returns: the primal (a view without the tangent) and the tangent."""

    primal: Tensor
    tangent: Tensor | None


def enter_dual_level() -> int:
    """Start a new forward-mode level and return its number. Like
    `torch.autograd.forward_ad.enter_dual_level`."""
    cm = forward.level()
    cm.__enter__()
    _stack.append(cm)
    return len(_stack) - 1


def exit_dual_level(*, level: int | None = None) -> None:
    """Leave the innermost level (`level`, if given, must name it); its tangents are
    removed. Like `torch.autograd.forward_ad.exit_dual_level`."""
    if not _stack:
        raise RuntimeError("exit_dual_level(): no forward-mode level is active")
    if level is None:
        level = len(_stack) - 1
    if level != len(_stack) - 1:
        raise RuntimeError(f"exit_dual_level(): trying to exit level {level} but the innermost "
                           f"active level is {len(_stack) - 1}; levels exit innermost first")
    _stack.pop().__exit__(None, None, None)


class dual_level:
    """`with dual_level():` makes a forward-mode level for the block (`__enter__` returns
    its number); dual tensors made inside lose their tangents on exit. Like
    `torch.autograd.forward_ad.dual_level`."""

    def __enter__(self) -> int:
        self._level = enter_dual_level()
        return self._level

    def __exit__(self, *exc) -> None:
        exit_dual_level(level=self._level)


def _level(level: int | None, what: str):
    if not _stack:
        raise RuntimeError(f"{what}: you need to be inside a dual_level context (or call "
                           "enter_dual_level()) to use forward-mode dual tensors")
    if level is None:
        level = len(_stack) - 1
    if not 0 <= level < len(_stack):
        raise RuntimeError(f"{what}: level {level} is not active (active levels: 0.."
                           f"{len(_stack) - 1})")
    return _stack[level].level


class TangentDtypeError(TypeError, ValueError):
    """An integer or bool tangent: a TypeError (as before) and PyTorch's ValueError."""


def make_dual(tensor: Tensor, tangent: Tensor, *, level: int | None = None) -> Tensor:
    """A dual tensor: a view of `tensor` (gradients flow through it) carrying `tangent` at
    the level (the innermost by default). Like `torch.autograd.forward_ad.make_dual`."""
    lv = _level(level, "make_dual()")
    if not isinstance(tensor, Tensor) or not isinstance(tangent, Tensor):
        raise TypeError(f"make_dual(): expects Tensors, got {type(tensor).__name__} and "
                        f"{type(tangent).__name__}")
    if tensor.dtype.kind not in "fc":
        raise ArgumentError(f"make_dual(): expected a floating-point or complex primal, got "
                            f"dtype {tensor.dtype}")
    if tangent.shape != tensor.shape:
        raise RuntimeError(f"make_dual(): the tangent (shape {tangent.shape}) must have the "
                           f"same shape as the primal (shape {tensor.shape})")
    if tangent.dtype != tensor.dtype:
        # PyTorch takes any floating or complex tangent; here it is cast to the primal's
        # dtype (the rules assume one dtype), except where that would drop an imaginary part
        if tangent.dtype.kind not in "fc":
            raise TangentDtypeError(f"make_dual(): expected the tangent to be floating point "
                                    f"or complex, got dtype {tangent.dtype}")
        if tangent.dtype.kind == "c" and tensor.dtype.kind != "c":
            raise RuntimeError(f"make_dual(): a complex tangent (dtype {tangent.dtype}) for a "
                               f"real primal (dtype {tensor.dtype}) is not supported")
        tangent = tangent.to(tensor.dtype)
    return forward.make_dual(tensor, tangent, lv)


def unpack_dual(tensor: Tensor, *, level: int | None = None) -> UnpackedDualTensor:
    """`(primal, tangent)` of a dual tensor at the level (innermost by default); the tangent
    is None where there is none (or outside any level). Like
    `torch.autograd.forward_ad.unpack_dual`."""
    if not _stack:
        return UnpackedDualTensor(tensor, None)
    lv = _level(level, "unpack_dual()")
    tangent = forward.tangent_of(tensor, lv)
    if tangent is None:
        return UnpackedDualTensor(tensor, None)
    primal = engine.apply(ops.reshape, tensor, shape=tensor.shape)  # a view, in the graph
    if primal._fw is not None:
        primal._fw.pop(lv, None)
        if not primal._fw:
            primal._fw = None
    return UnpackedDualTensor(primal, tangent)
