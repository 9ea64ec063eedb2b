"""The `torch.jit` names that eager PyTorch model code calls, answered as eager PyTorch does.

Model files (torchvision's googlenet, densenet, stochastic_depth, inception, ...) ask
`torch.jit.is_scripting()` / `is_tracing()` to pick their eager branch, mark methods with
`@torch.jit.unused` / `ignore` / `export` / `_overload_method`, and write
`torch.jit.annotate(T, value)`. retrograd never compiles TorchScript, so none of these
changes what runs: the questions answer False, the decorators return the function, and
`annotate` returns the value. `script` and `trace` return the function or module itself:
its eager results are what the compiled one computes for the same inputs (a trace that
would bake in a data-dependent branch is where they could differ; torch warns there).
`save`/`load` of TorchScript archives are refused. They are attached to `rg.jit` (which is
retrograd's own tracing compiler, a function) so that `torch.jit.X` written as `rg.jit.X`
works.
"""

from __future__ import annotations

import typing
from collections.abc import Callable
from typing import Any

__all__ = ["is_scripting", "is_tracing", "unused", "ignore", "export", "annotate",
           "_overload_method", "_overload", "script", "trace", "trace_module",
           "script_if_tracing", "_script_if_tracing", "freeze", "optimize_for_inference",
           "interface", "fork", "wait", "save", "load", "Final", "attach"]

Final = typing.Final
"""`torch.jit.Final[T]`, as class-attribute annotations use it: typing's Final."""


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


def script(obj: Any, optimize=None, _frames_up: int = 0, _rcb=None,
           example_inputs=None) -> Any:
    """`torch.jit.script(fn_or_module)`: the function or module itself, run eagerly."""
    return obj


def trace(func: Callable, example_inputs=None, *args, **kwargs) -> Callable:
    """`torch.jit.trace(func, example_inputs)`: `func` itself, run eagerly (it takes the
    branches each input's values lead to, where a TorchScript trace replays the example's)."""
    if not callable(func):
        raise TypeError(f"trace(): func must be callable, got {type(func).__name__}")
    return func


def trace_module(mod: Any, inputs=None, *args, **kwargs) -> Any:
    """`torch.jit.trace_module(module, inputs)`: the module itself, run eagerly."""
    return mod


def script_if_tracing(fn: Callable) -> Callable:
    """`@torch.jit.script_if_tracing`: the function itself."""
    return fn


_script_if_tracing = script_if_tracing
"""The older private name, which torchvision's box ops (`_batched_nms_vanilla`) use."""


def freeze(mod: Any, preserved_attrs=None, optimize_numerics: bool = True) -> Any:
    """`torch.jit.freeze(module)`: the module itself."""
    return mod


def optimize_for_inference(mod: Any, other_methods=None) -> Any:
    """`torch.jit.optimize_for_inference(module)`: the module itself."""
    return mod


def interface(obj: Any) -> Any:
    """`@torch.jit.interface`: the class itself."""
    return obj


class _Done:
    """What `fork` returns: the call already made; `wait` reads its value."""

    def __init__(self, value: Any) -> None:
        self._value = value

    def wait(self) -> Any:
        return self._value

    def value(self) -> Any:
        return self._value

    def done(self) -> bool:
        return True


def fork(func: Callable, *args, **kwargs) -> _Done:
    """`torch.jit.fork(fn, *args)`: calls `fn` now (eager PyTorch runs it synchronously too)."""
    return _Done(func(*args, **kwargs))


def wait(future: _Done) -> Any:
    """`torch.jit.wait(future)`: the forked call's result."""
    return future.wait()


def save(m: Any, f: Any, _extra_files=None) -> None:
    """`torch.jit.save`: refused, there is no TorchScript archive to write."""
    raise NotImplementedError("rg.jit.save: retrograd does not write TorchScript archives; save "
                              "the weights with rg.save(model.state_dict(), path) and rebuild the "
                              "model in Python")


def load(f: Any, map_location=None, _extra_files=None) -> Any:
    """`torch.jit.load`: refused, there is no TorchScript to run."""
    raise NotImplementedError("rg.jit.load: retrograd cannot run TorchScript archives; load a "
                              "state_dict with rg.load into a model built in Python")


def attach(target: Callable) -> None:
    """Make these names attributes of `target` (`rg.jit`)."""
    for name in __all__:
        if name != "attach":
            setattr(target, name, globals()[name])
