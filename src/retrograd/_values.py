"""Library code that must compute with a tensor's values in Python asks here first.

Inside `rg.jit`, library code may read a traced tensor's `.data` (for shapes, dtypes and
devices), but a value read there (a branch, a Python result, a NumPy routine with no op, a
result whose shape depends on the values) would freeze the traced call's values into the
compiled program, and every replay would silently give that first answer. Such reads go
through `values_of`, which hands the array over in eager mode and raises `JitError` while
tracing, saying what to do instead.
"""

from __future__ import annotations

from .grad_mode import state


def tracing() -> bool:
    """Whether `rg.jit` is tracing now (ops are being recorded into a program)."""
    return state.tracer is not None


def jit_error_type() -> type:
    """`rg.JitError` (imported at call time: jit sits above the modules that ask)."""
    from .jit import JitError

    return JitError


def jit_error(what: str, instead: str) -> Exception:
    """The `JitError` saying that `what` needs a traced tensor's values, and what to do."""
    return jit_error_type()(
        f"{what} inside rg.jit: it computes with the tensor's values in Python, which would "
        f"freeze this call's values into the compiled program; {instead}")


def refuse(what: str, instead: str) -> None:
    """Raise `JitError` if tracing: `what` needs the values of a traced tensor in Python."""
    if state.tracer is not None:
        raise jit_error(what, instead)


def values_of(t, what: str, instead: str):
    """`t`'s array, for library code that computes with its values in Python; while
    `rg.jit` traces, a `JitError` naming `what` and saying what to do `instead`."""
    refuse(what, instead)
    return t.data
