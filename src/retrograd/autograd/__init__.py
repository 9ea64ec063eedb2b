"""`rg.autograd`: gradients without touching `.grad`, custom ops, anomaly detection,
and `torch.autograd`'s other names: `backward` of several tensors, the `functional`
API (jacobian, hessian, vjp, jvp, hvp, vhp), `forward_ad` dual numbers, the grad-mode
switches, `gradcheck`, and the legacy `Variable`.
"""

from __future__ import annotations

import sys
import types

from .. import engine
from .. import gradcheck as _gradcheck_module
from ..api.modes import inference_mode, set_grad_enabled
from ..grad_mode import detect_anomaly, enable_grad, no_grad, state
from ..gradcheck import gradcheck, gradgradcheck
from ..tensor import Tensor, _initial_grad
from . import forward_ad, function, functional, grad_mode, graph, profiler
from ._core import Function, FunctionCtx, grad

__all__ = ["grad", "Function", "FunctionCtx", "detect_anomaly", "no_grad", "enable_grad",
           "backward", "set_detect_anomaly", "set_grad_enabled", "inference_mode",
           "gradcheck", "gradgradcheck", "Variable", "functional", "forward_ad", "graph",
           "grad_mode", "function", "profiler"]


# `from torch.autograd.gradcheck import gradcheck`: the module under torch's dotted name
# (the attribute `autograd.gradcheck` stays the function, as in torch)
sys.modules.setdefault(__name__ + ".gradcheck", _gradcheck_module)


def _tensors(x, what: str) -> list:
    items = [x] if isinstance(x, Tensor) else list(x)
    for k, t in enumerate(items):
        if not isinstance(t, Tensor):
            raise TypeError(f"backward(): {what} {k} is a {type(t).__name__}, not a Tensor")
    return items


def backward(tensors, grad_tensors=None, retain_graph: bool | None = None,
             create_graph: bool = False, grad_variables=None, inputs=None) -> None:
    """Accumulate into the leaves' `.grad` the gradient of `tensors` (weighted by
    `grad_tensors`, one each; None for a one-element tensor), or into `inputs` only.
    Like `torch.autograd.backward`; the graph is kept whatever `retain_graph` says."""
    if grad_variables is not None:
        if grad_tensors is not None:
            raise RuntimeError("backward(): pass grad_tensors, not both it and grad_variables")
        grad_tensors = grad_variables
    roots = _tensors(tensors, "tensor")
    if grad_tensors is None:
        gs = [None] * len(roots)
    else:
        gs = [grad_tensors] if isinstance(grad_tensors, Tensor) else list(grad_tensors)
        if len(gs) != len(roots):
            raise RuntimeError(f"backward(): got {len(gs)} grad_tensors for {len(roots)} "
                               "tensors; pass one each")
    if inputs is not None:
        inputs = _tensors(inputs, "input")
        if not inputs:
            raise RuntimeError("backward(): 'inputs' argument cannot be empty")
    if state.forward is not None and state.forward.vmapped:
        raise RuntimeError("backward() inside rg.func.vmap: .grad cannot hold a batch of "
                           "gradients; use rg.func.grad (or vjp) inside vmap instead")
    seeds = []
    for k, (t, g) in enumerate(zip(roots, gs)):
        if not t.requires_grad:
            raise RuntimeError(f"backward(): element {k} of tensors (shape {t.shape}) does not "
                               "require grad and does not have a grad_fn")
        seeds.append(_initial_grad(t, g, create_graph, "backward()"))
    if inputs is None:
        engine.backward(roots, seeds, create_graph)
        return
    got = engine.backward(roots, seeds, create_graph, targets=inputs)
    for t, g in zip(inputs, got):
        if g is not None:
            engine._accumulate_grad(t, g)
            if engine.POST_ACCUMULATE and t.grad_fn is None:
                engine._post_accumulate(t)


class set_detect_anomaly:
    """Turn anomaly detection (backward raises at the first NaN/inf gradient, naming the
    op) on or off: at once when called, until the block ends as a context manager.
    Like `torch.autograd.set_detect_anomaly(mode, check_nan=True)`."""

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        self.prev = state.anomaly
        state.anomaly = bool(mode) and bool(check_nan)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc) -> None:
        state.anomaly = self.prev


class _VariableMeta(type):
    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, Tensor)


class Variable(metaclass=_VariableMeta):
    """Legacy: `Variable(t, requires_grad=False)` is a tensor sharing `t`'s data (a leaf,
    with `requires_grad` set), and every Tensor is an instance of `Variable`. Like
    `torch.autograd.Variable`."""

    class _execution_engine:  # noqa: N801  (torch's name)
        """`Variable._execution_engine.queue_callback(fn)`: run `fn()` at the end of the
        running backward (what data-parallel wrappers use to wait for their reductions)."""

        queue_callback = staticmethod(engine.queue_callback)

    def __new__(cls, data, requires_grad: bool = False, volatile: bool = False) -> Tensor:
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        return data.detach().requires_grad_(requires_grad)


# `from torch.autograd.variable import Variable`: a module of that name holding it
variable = types.ModuleType(__name__ + ".variable")
variable.Variable = Variable
sys.modules.setdefault(variable.__name__, variable)
