"""rg.sym's mutable state: the binding clock, the evaluation counter, the `assume_finite` rule.

The bottom layer of the package: every other module may read it; it imports none of them.
"""

from __future__ import annotations

from typing import Any


class _State:
    """The package's few mutable settings and counters, in one place."""

    __slots__ = ("clock", "evaluated", "assume_finite")

    def __init__(self) -> None:
        self.clock = 0             # bumped by every variable binding
        self.evaluated = 0         # op nodes computed by `.value`, ever
        self.assume_finite = True  # the rule named `assume_finite`


STATE = _State()


def eval_count() -> int:
    """How many op nodes `.value` has computed so far (a counter for tests and curiosity)."""
    return STATE.evaluated


class assume_finite:
    """The rewrite rule that is exact only for finite values: `0*a -> 0`, `a-a -> 0`, `0/a -> 0`.

    On by default. `with rg.sym.assume_finite(False): ...` builds (and
    differentiates into) graphs that keep those terms, so their values equal
    plain evaluation even where `a` is NaN or infinite. Also callable as a
    plain setter: `rg.sym.assume_finite(False).set()`.
    """

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = bool(enabled)
        self._prev: list[bool] = []

    def __enter__(self) -> assume_finite:
        self._prev.append(STATE.assume_finite)
        STATE.assume_finite = self.enabled
        return self

    def __exit__(self, *exc: Any) -> None:
        STATE.assume_finite = self._prev.pop()

    def set(self) -> None:
        """Set the rule globally (no restoring)."""
        STATE.assume_finite = self.enabled

    @staticmethod
    def enabled_now() -> bool:
        """Whether the rule is on."""
        return STATE.assume_finite
