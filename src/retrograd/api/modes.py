"""Process-wide switches under PyTorch's names: `rg.set_grad_enabled` (a function, a
context manager and a decorator), `rg.inference_mode` and
`rg.is_inference_mode_enabled`, and the thread count of retrograd's own kernels and of
the BLAS library NumPy calls (`rg.get_num_threads`, `rg.set_num_threads`).

Grad mode is the engine's one switch (`grad_mode.state.enabled`, as `rg.no_grad`
sets it). `inference_mode` is `no_grad` plus a flag that `is_inference_mode_enabled`
reads: retrograd has no inference tensors, so a tensor made inside may later take
part in autograd (PyTorch refuses that), which is the one difference.
The thread count is that of retrograd's intra-op threads (`threads`: batched
decompositions, normalisation rows) and of BLAS, set through threadpoolctl (it comes
with scikit-learn) for every BLAS library NumPy has loaded; without threadpoolctl BLAS
keeps its own, as there is no portable way to change it then.
"""

from __future__ import annotations

import builtins
import functools
import os
from collections.abc import Callable

import numpy as np

from .. import threads as _intra
from ..grad_mode import state
from ._errors import ArgumentError, ArgumentTypeError

__all__ = ["set_grad_enabled", "inference_mode", "is_inference_mode_enabled",
           "get_num_threads", "set_num_threads"]


def _switched(fn: Callable, enabled: bool, inference: bool | None = None) -> Callable:
    """`fn` run with grad mode `enabled` (and the inference flag), restored after."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        prev = state.enabled, _inference[0]
        state.enabled = enabled
        if inference is not None:
            _inference[0] = inference
        try:
            return fn(*args, **kwargs)
        finally:
            state.enabled, _inference[0] = prev

    return wrapper


class set_grad_enabled:
    """Turn recording for backward on or off: called, at once (`rg.set_grad_enabled(False)`);
    as a context manager, until the block ends (then the previous mode returns); as a
    decorator, inside the function only. Like `torch.set_grad_enabled`."""

    def __init__(self, mode: bool) -> None:
        if not isinstance(mode, (bool, np.bool_)):
            raise TypeError(f"set_grad_enabled(): argument 'mode' must be a bool, not "
                            f"{type(mode).__name__}")
        self.mode = bool(mode)
        self.prev = state.enabled
        state.enabled = self.mode

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc) -> None:
        state.enabled = self.prev

    def __call__(self, fn: Callable) -> Callable:
        state.enabled = self.prev  # as a decorator it changes nothing outside the function
        return _switched(fn, self.mode)


_inference = [False]


class inference_mode:
    """Inside `with rg.inference_mode():` (or a function decorated `@rg.inference_mode`
    or `@rg.inference_mode()`) nothing is recorded, as in `no_grad`, and
    `is_inference_mode_enabled()` is True; `inference_mode(False)` turns both off.
    Like `torch.inference_mode` (retrograd has no inference tensors: see the module)."""

    def __new__(cls, mode=True):
        if callable(mode):  # @rg.inference_mode, without parentheses
            return _switched(mode, False, True)
        return super().__new__(cls)

    def __init__(self, mode: bool = True) -> None:
        self.mode = bool(mode)

    def __enter__(self) -> None:
        self._prev = state.enabled, _inference[0]
        state.enabled, _inference[0] = not self.mode, self.mode

    def __exit__(self, *exc) -> None:
        state.enabled, _inference[0] = self._prev

    def __call__(self, fn: Callable) -> Callable:
        return _switched(fn, not self.mode, self.mode)


def is_inference_mode_enabled() -> bool:
    """True inside `rg.inference_mode()`. Like `torch.is_inference_mode_enabled`."""
    return _inference[0]


_threads = [None]


def _blas_threads() -> list[int]:
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return []
    return [i["num_threads"] for i in threadpool_info() if i.get("user_api") == "blas"]


def set_num_threads(int) -> None:  # noqa: A002 - PyTorch's name
    """Use `int` threads in retrograd's own kernels and in the BLAS library behind NumPy's
    matrix products (through threadpoolctl; without it BLAS keeps its own). Like
    `torch.set_num_threads`."""
    n = int
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (builtins.int, np.integer)):
        raise ArgumentTypeError(f"set_num_threads(): expects an int, got {type(n).__name__}")
    if n <= 0:
        raise ArgumentError(f"set_num_threads(): expects a positive number of threads, got {n}")
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        pass
    else:
        threadpool_limits(limits=builtins.int(n), user_api="blas")  # stays set after this call
    _threads[0] = builtins.int(n)
    _intra.set_num_threads(builtins.int(n))


def get_num_threads() -> int:
    """The number of threads the BLAS library behind NumPy uses (the recorded number, or
    the CPU count, when threadpoolctl is absent). Like `torch.get_num_threads`."""
    counts = _blas_threads()
    if counts:
        return max(counts)
    return _threads[0] or os.cpu_count() or 1
