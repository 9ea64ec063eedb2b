"""The `torch.jit` names that eager PyTorch model code calls, answered as eager PyTorch does.

Model files (torchvision's googlenet, densenet, stochastic_depth, inception, ...) ask
`torch.jit.is_scripting()` / `is_tracing()` to pick their eager branch, mark methods with
`@torch.jit.unused` / `ignore` / `export` / `_overload_method`, and write
`torch.jit.annotate(T, value)`. retrograd never compiles TorchScript, so none of these
changes what runs: the questions answer False, the decorators return the function, and
`annotate` returns the value. They are attached to `rg.jit` (which is retrograd's own
tracing compiler, a function) so that `torch.jit.X` written as `rg.jit.X` works.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["is_scripting", "is_tracing", "unused", "ignore", "export", "annotate",
           "_overload_method", "_overload", "attach"]


def is_scripting() -> bool:
    """False: code never runs under TorchScript here (PyTorch's answer in eager mode)."""
    return False


def is_tracing() -> bool:
    """False: `torch.jit.trace` never runs here (rg.jit traces by running the eager code,
    whose branches are the ones to take)."""
    return False


def unused(fn: Callable) -> Callable:
    """`@torch.jit.unused`: the function itself (it only matters to the TorchScript compiler)."""
    return fn


def ignore(drop: Any = False, **kwargs) -> Callable:
    """`@torch.jit.ignore` and `@torch.jit.ignore(drop=...)`: the function itself."""
    if callable(drop):
        return drop
    return lambda fn: fn


def export(fn: Callable) -> Callable:
    """`@torch.jit.export`: the function itself."""
    return fn


def annotate(the_type: Any, the_value: Any) -> Any:
    """`torch.jit.annotate(T, value)`: the value (the type is for the compiler)."""
    return the_value


def _overload_method(fn: Callable) -> Callable:
    """`@torch.jit._overload_method`: the declaration itself; as in eager PyTorch, the last
    plain definition of the method is the one that runs."""
    return fn


_overload = _overload_method


def attach(target: Callable) -> None:
    """Make these names attributes of `target` (`rg.jit`)."""
    for name in __all__:
        if name != "attach":
            setattr(target, name, globals()[name])
