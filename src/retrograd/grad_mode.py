"""Global autograd switches: grad mode and anomaly detection.

`state` is read on every op, so it is one small object with plain attributes.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any


class _State:
    __slots__ = ("enabled", "anomaly", "tracer", "forward", "complex_step", "packing", "flops")

    def __init__(self) -> None:
        self.enabled = True   # record ops for reverse mode
        self.anomaly = False  # check backward results for NaN/inf
        self.tracer = None    # rg.jit's recorder, when tracing
        self.forward = None   # forward-mode (dual number) level, when active
        self.complex_step = False  # gradcheck(method="complex_step") is evaluating
        self.packing = None   # the innermost saved_tensors_hooks, when one is active
        self.flops = None     # the innermost rg.utils.flop_counter.FlopCounterMode, when counting


state = _State()


class _Switch:
    """A context manager that is also a decorator, with or without parentheses.

    `@no_grad` hands the function to the class itself: it is wrapped by an
    instance, as `@no_grad()` would.
    """

    def __new__(cls, fn: Callable | None = None):
        self = super().__new__(cls)
        if fn is None:
            return self
        if not callable(fn):
            raise TypeError(f"{cls.__name__}() takes no arguments; as a decorator it takes a "
                            f"function, got {type(fn).__name__}")
        return self(fn)


def _generator_in_mode(fn: Callable, value: bool) -> Callable:
    """A decorated generator function: grad mode is `value` while the generator's body runs
    (each step, up to its next yield), the caller's mode between steps, as in PyTorch."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        prev = state.enabled
        state.enabled = value
        try:
            gen = fn(*args, **kwargs)
            item = next(gen)
        except StopIteration as stop:  # a generator that yields nothing
            return stop.value
        finally:
            state.enabled = prev
        while True:
            try:
                sent = yield item
            except GeneratorExit:
                gen.close()
                raise
            except BaseException as e:  # thrown in by the caller: into the body, in mode
                prev = state.enabled
                state.enabled = value
                try:
                    item = gen.throw(e)
                finally:
                    state.enabled = prev
                continue
            prev = state.enabled
            state.enabled = value
            try:
                item = gen.send(sent)
            except StopIteration as stop:
                return stop.value
            finally:
                state.enabled = prev

    return wrapper


class _GradSwitch(_Switch):
    """Context manager and decorator that sets grad mode, restoring it afterwards."""

    _value = True

    def __init__(self, fn: Callable | None = None) -> None:
        pass

    def __enter__(self) -> None:
        self._prev = state.enabled
        state.enabled = self._value

    def __exit__(self, *exc: Any) -> None:
        state.enabled = self._prev

    def __call__(self, fn: Callable) -> Callable:
        value = self._value
        if inspect.isgeneratorfunction(fn):
            return _generator_in_mode(fn, value)

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            prev = state.enabled
            state.enabled = value
            try:
                return fn(*args, **kwargs)
            finally:
                state.enabled = prev

        return wrapper


class no_grad(_GradSwitch):
    """Inside `with rg.no_grad():` (or a function decorated `@rg.no_grad` or
    `@rg.no_grad()`) no op is recorded."""

    _value = False


class enable_grad(_GradSwitch):
    """Turn recording back on inside a `no_grad` region."""

    _value = True


def is_grad_enabled() -> bool:
    """Whether ops are being recorded for backward."""
    return state.enabled


class detect_anomaly(_Switch):
    """Raise in backward, naming the op, as soon as a gradient holds NaN or inf."""

    def __init__(self, fn: Callable | None = None) -> None:
        pass

    def __enter__(self) -> None:
        self._prev = state.anomaly
        state.anomaly = True

    def __exit__(self, *exc: Any) -> None:
        state.anomaly = self._prev

    def __call__(self, fn: Callable) -> Callable:
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with detect_anomaly():
                return fn(*args, **kwargs)

        return wrapper
