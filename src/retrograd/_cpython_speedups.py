"""CPython-only speed tricks for graphs of many small objects; no-ops anywhere else.

`untrack(obj)` takes an object off the cyclic garbage collector's list
(CPython's `PyObject_GC_UnTrack`, reached through ctypes). The collector
exists to find reference cycles and rescans every tracked object several
times over its life, so a graph of a million small nodes costs it a lot of
work. An object that can never be part of a cycle loses nothing by leaving
its list: reference counting frees it exactly as before. `track(obj)` puts
one back, for an object that may have become part of a cycle after all.

`warm_up(run)` calls `run` a few times at once: CPython (3.11 on) specialises
a function's bytecode for the types it meets only after several calls, so
code that runs once per training step would otherwise pay for its first steps.

Each of these does nothing on another interpreter, without ctypes, or when
the C functions do not behave as checked once at import; nothing else in the
package depends on them for correctness.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Callable

__all__ = ["untrack", "track", "warm_up", "ACTIVE"]


def _ignore(obj: object) -> None:
    """Do nothing: the stand-in where CPython's C functions cannot be used."""


class _Probe:
    __slots__ = ("ref",)


def _c_functions() -> tuple[Callable[[object], None], Callable[[object], None]] | None:
    """CPython's PyObject_GC_UnTrack and PyObject_GC_Track, if they work as expected here."""
    if sys.implementation.name != "cpython":
        return None
    try:
        import ctypes

        c_untrack = ctypes.pythonapi.PyObject_GC_UnTrack
        c_track = ctypes.pythonapi.PyObject_GC_Track
        for fn in (c_untrack, c_track):
            fn.argtypes = [ctypes.py_object]
            fn.restype = None
        probe = _Probe()
        if not gc.is_tracked(probe):
            return None
        c_untrack(probe)
        if gc.is_tracked(probe):
            return None
        c_track(probe)  # only ever called on an untracked object: CPython aborts otherwise
        if not gc.is_tracked(probe):
            return None
    except Exception:  # no ctypes, no pythonapi, a missing symbol, ...
        return None
    return c_untrack, c_track


_C = _c_functions()
ACTIVE = _C is not None
"""Whether the tricks are in effect (CPython with a working C API through ctypes)."""

untrack: Callable[[object], None] = _C[0] if _C is not None else _ignore
"""Take `obj` off the cycle collector's list (a no-op where not ACTIVE). Only for objects
that can never be part of a reference cycle."""


def track(obj: object) -> None:
    """Put `obj` back on the cycle collector's list (a no-op if it is on it, or not ACTIVE)."""
    if _C is not None and not gc.is_tracked(obj):
        _C[1](obj)


def warm_up(run: Callable[[], object], times: int = 10) -> None:
    """Call `run()` `times` times now, so CPython has specialised the code it runs."""
    if sys.implementation.name == "cpython" and sys.version_info >= (3, 11):
        for _ in range(times):
            run()
