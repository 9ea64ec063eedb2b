"""Value checks that stay in the program: `check_within` raises the caller's `ValueError`
when an input leaves an interval, else gives a 0-d one that the caller multiplies into its
result (exactly: x * 1.0 is x for every float, NaN, inf and -0.0 included).

A check written in Python runs once, when `rg.jit` traces, and never on a replay, where an
invalid value would then silently give a number. As an op feeding the result, the check is
part of the traced program and raises on every call, as eager mode does. Not
differentiable: callers pass a detached input, so the one is a constant for gradients."""

from __future__ import annotations

from ..devices import namespace_of
from ..primitive import ArgumentError, defop


def _within(x, *, lo: float, hi: float, open_lo: bool, message: str):
    """One (0-d, x's dtype) if every lo <= x <= hi (lo < x <= hi when `open_lo`; NaN
    fails); otherwise `ValueError(message)`."""
    ok = ((x > lo) if open_lo else (x >= lo)) & (x <= hi)
    if x.size and not bool(ok.all()):
        raise ArgumentError(message)
    return namespace_of(x).ones((), x.dtype)


check_within = defop("check_within", _within, fresh=True)
