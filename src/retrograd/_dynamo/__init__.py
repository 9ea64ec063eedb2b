"""`rg._dynamo`: the names of `torch._dynamo` that training scripts call around
`torch.compile` (`config`, `reset`, `disable`, `mark_dynamic`, ...). `rg.compile` returns
the model unchanged, so they change nothing here; they exist so such scripts run."""

from __future__ import annotations

from collections.abc import Callable

from ..compiler import (
    allow_in_graph,
    assume_constant_result,
    disable,
    is_compiling,
    list_backends,
    reset,
    set_stance,
    substitute_in_graph,
)
from ..tensor import Tensor
from . import config

__all__ = ["config", "reset", "disable", "allow_in_graph", "assume_constant_result",
           "substitute_in_graph", "is_compiling", "list_backends", "set_stance",
           "mark_dynamic", "maybe_mark_dynamic", "mark_static", "mark_static_address",
           "optimize", "graph_break", "disallow_in_graph"]


def _dims(t, index, fn: str) -> None:
    if not isinstance(t, Tensor):
        raise TypeError(f"{fn}: expected a Tensor, got {type(t).__name__}")
    for i in [index] if isinstance(index, int) else list(index):
        if not -t.ndim <= i < t.ndim:
            raise IndexError(f"{fn}: dim {i} is out of range for a tensor of {t.ndim} dims")


def mark_dynamic(t, index, *, min=None, max=None, specialize_on=None) -> None:  # noqa: A002
    """`torch._dynamo.mark_dynamic`: a hint for the compiler; nothing here is specialised."""
    _dims(t, index, "mark_dynamic")


def maybe_mark_dynamic(t, index) -> None:
    """`torch._dynamo.maybe_mark_dynamic` (a hint; see `mark_dynamic`)."""
    _dims(t, index, "maybe_mark_dynamic")


def mark_static(t, index=None) -> None:
    """`torch._dynamo.mark_static` (a hint; see `mark_dynamic`)."""
    if isinstance(t, Tensor) and index is not None:
        _dims(t, index, "mark_static")


def mark_static_address(t, guard: bool = True) -> None:
    """`torch._dynamo.mark_static_address` (a hint for CUDA graphs)."""
    if not isinstance(t, Tensor):
        raise TypeError(f"mark_static_address: expected a Tensor, got {type(t).__name__}")


def optimize(backend="inductor", *, nopython: bool = False, guard_export_fn=None,
             guard_fail_fn=None, disable: bool = False, dynamic=None) -> Callable:
    """`torch._dynamo.optimize(backend)`: a decorator that returns the function unchanged,
    as `rg.compile` does."""
    return lambda fn: fn


def graph_break() -> None:
    """`torch._dynamo.graph_break()`: nothing to break here."""


def disallow_in_graph(fn: Callable) -> Callable:
    """`torch._dynamo.disallow_in_graph`: returns `fn` (there is no graph to keep it out of)."""
    return fn
