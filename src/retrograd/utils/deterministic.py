"""`rg.utils.deterministic`: PyTorch's `torch.utils.deterministic`, one setting,
`fill_uninitialized_memory` (a bool, True by default): while deterministic algorithms are
on (`rg.use_deterministic_algorithms(True)`), `rg.empty` and its kin (`empty_like`,
`new_empty`, `empty_strided`, `empty_permuted`, `new_empty_strided`, the new elements of
`resize_`) hold NaN (floating and complex dtypes), the dtype's largest value (integers) or
True (bool), as PyTorch fills uninitialised memory then; otherwise they hold zeros."""

from __future__ import annotations

import sys
import types

from ..creation import DETERMINISTIC


class _Settings(types.ModuleType):
    """This module's class: `fill_uninitialized_memory` is read and written through it."""

    @property
    def fill_uninitialized_memory(self) -> bool:
        """Whether empty-like results are filled in deterministic mode."""
        return DETERMINISTIC[2]

    @fill_uninitialized_memory.setter
    def fill_uninitialized_memory(self, mode: bool) -> None:
        if not isinstance(mode, bool):
            raise RuntimeError(f"expected a bool, but got {type(mode).__name__}")
        DETERMINISTIC[2] = mode


sys.modules[__name__].__class__ = _Settings
