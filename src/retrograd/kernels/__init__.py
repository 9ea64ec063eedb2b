"""Compiled kernels, optional: a few fused loops compiled by Numba (`pip install
retrograd[fast]`), for layers where NumPy's one pass over memory per operation costs
most of the time (layer norm's forward and backward are about fifteen passes in NumPy
and two in one loop).

Each kernel is a plain Python function over arrays, compiled on its first call
(`nogil`, cached on disk, so a later process only loads it) with the float flags that
let a loop's sums be reordered and vectorised but keep NaN and infinity (`fastmath`
without 'nnan'/'ninf'), and NumPy's error model: a division by zero gives inf or nan
rather than raising, so a loop with a division has no check that stops its
vectorisation. Kernels are serial: the callers split rows over
`retrograd.threads` as the NumPy paths do, so `rg.set_num_threads` governs both and no
second thread pool (Numba's) exists to nest, fork or oversubscribe.

Which path runs: RETROGRAD_KERNELS=numba|numpy, else Numba when it imports. `use()`
switches at run time (the tests run both paths). A caller asks `enabled(size)` first:
inputs below `MIN_SIZE` elements take the NumPy path, so a small call never waits
for a compile.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FunctionType

MODES = ("numba", "numpy")
MIN_SIZE = 1 << 12
"""Elements below which the NumPy path runs (its overhead is small there, and a first
call's compile or cache load, 0.1-2 s, is not worth paying)."""

FASTMATH = frozenset({"reassoc", "contract", "nsz"})
"""LLVM's float flags for the kernels: reorder and fuse arithmetic, never assume that no
NaN or infinity occurs."""

_state: dict = {"mode": None, "min_size": MIN_SIZE}


def _numba_imports() -> bool:
    try:
        import numba  # noqa: F401
    except Exception:  # not installed, or broken against this NumPy
        return False
    return True


def _check(name: str) -> str:
    if name not in MODES:
        raise ValueError(f"retrograd kernels: mode must be one of {MODES}, got {name!r}")
    if name == "numba" and not _numba_imports():
        raise ValueError("retrograd kernels: mode 'numba' needs Numba "
                         "(pip install retrograd[fast])")
    return name


def mode() -> str:
    """'numba' (compiled kernels run) or 'numpy' (NumPy only)."""
    if _state["mode"] is None:
        env = os.environ.get("RETROGRAD_KERNELS", "").strip().lower()
        if env:
            if env not in MODES:
                raise ValueError(f"RETROGRAD_KERNELS must be one of {MODES}, got {env!r}")
            _state["mode"] = "numba" if env == "numba" and _numba_imports() else "numpy"
        else:
            _state["mode"] = "numba" if _numba_imports() else "numpy"
    return _state["mode"]


@contextmanager
def use(name: str, min_size: int | None = None) -> Iterator[None]:
    """Run the block with the kernels of `name` ('numba' or 'numpy'); `min_size` sets the
    size from which compiled kernels take over (0: every size, for tests)."""
    old = (_state["mode"], _state["min_size"])
    _state["mode"] = _check(name)
    if min_size is not None:
        _state["min_size"] = int(min_size)
    try:
        yield
    finally:
        _state["mode"], _state["min_size"] = old


def enabled(size: int, kernel: Callable | None = None) -> bool:
    """Whether a compiled kernel should handle an input of `size` elements: from
    `MIN_SIZE` on, or at any size once `kernel` has been compiled in this process (its
    small calls then wait for nothing, as an optimizer's biases after its weights)."""
    return mode() == "numba" and (size >= _state["min_size"] or (
        kernel is not None and kernel.ready() and _state["min_size"] == MIN_SIZE))


def inline(fn: Callable) -> Callable:
    """Mark `fn` as a helper that kernels of its module call: when the module's first kernel
    compiles, `fn` is compiled too and inlined into each caller (so its loops vectorise
    in place, as if written there). Until then it stays a plain Python function."""
    fn._retrograd_inline = True
    return fn


def _jit(fn: Callable, **flags) -> Callable:
    """`fn` compiled by Numba with the kernels' flags, cached on disk where Numba finds a
    writable place (beside the source, or its user cache); else kept in memory only (a
    read-only install still runs, compiling once per process)."""
    import numba
    flags = {"nogil": True, "fastmath": set(FASTMATH), "error_model": "numpy", **flags}
    try:
        return numba.njit(cache=True, **flags)(fn)
    except RuntimeError:  # "cannot cache function ...: no locator available"
        return numba.njit(cache=False, **flags)(fn)


def _compile_helpers(namespace: dict) -> None:
    """Replace the `inline` helpers in a kernel module's globals by their compiled forms."""
    for name, obj in list(namespace.items()):
        if isinstance(obj, FunctionType) and getattr(obj, "_retrograd_inline", False):
            namespace[name] = _jit(obj, inline="always")


def kernel(fn: Callable | None = None, *, exact: bool = False) -> Callable:
    """`fn` compiled by Numba on its first call (nogil, cached on disk, FASTMATH, NumPy's
    error model). `@kernel(exact=True)`: no float flags, so each operation rounds as
    NumPy's does and an element-wise loop gives NumPy's results bit for bit (element-wise
    loops vectorise without reordering)."""
    if fn is None:
        return lambda f: kernel(f, exact=exact)
    compiled = []
    flags = {"fastmath": False} if exact else {}

    def call(*args):
        if not compiled:
            _compile_helpers(fn.__globals__)
            compiled.append(_jit(fn, **flags))
        return compiled[0](*args)

    call.__name__, call.__qualname__, call.__doc__ = fn.__name__, fn.__qualname__, fn.__doc__
    call.py_func = fn
    call.ready = lambda: bool(compiled)
    return call
