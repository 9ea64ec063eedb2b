"""`rg.fx`: the parts of `torch.fx` that model code calls at import time.

Library code marks functions as leaves of an FX trace (`torch.fx.wrap("name")` at
module level, as torchvision's `stochastic_depth` does); `wrap` returns its argument,
so such modules import and run unchanged. Building FX graphs (`symbolic_trace`) is
not offered: `rg.jit` traces programs instead, and says so.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

__all__ = ["wrap", "symbolic_trace"]


def wrap(fn_or_name: str | Callable[..., Any]) -> str | Callable[..., Any]:
    """`fn_or_name` itself: a leaf of an FX trace, where there are no FX traces. As in
    torch, only at the top level of a module."""
    caller = inspect.currentframe().f_back
    if caller is None or caller.f_code.co_name != "<module>":
        raise NotImplementedError("wrap must be called at the top level of a module")
    if not (isinstance(fn_or_name, str) or callable(fn_or_name)):
        raise TypeError(f"wrap(): expected a function or the name of one, got "
                        f"{type(fn_or_name).__name__}")
    return fn_or_name


def symbolic_trace(root, concrete_args=None):
    """Refused: retrograd builds no FX graphs; `rg.jit(fn)` traces and replays a function,
    and `rg.sym` builds symbolic graphs."""
    raise NotImplementedError("rg.fx.symbolic_trace: retrograd has no FX graphs; use rg.jit "
                              "to trace a function (or rg.sym for symbolic graphs)")
