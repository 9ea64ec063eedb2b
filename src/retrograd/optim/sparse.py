"""`SparseAdam`: PyTorch's constructor and checks; its step needs sparse gradients, which
retrograd does not produce, so a step with a (dense) gradient is refused with PyTorch's
RuntimeError rather than silently running dense Adam (exposed as `rg.optim.SparseAdam`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..primitive import ArgumentError
from ..tensor import Tensor
from .optimizer import Optimizer

__all__ = ["SparseAdam"]


class SparseAdam(Optimizer):
    """Adam for sparse gradients (lazy moments: only the rows present are updated).
    retrograd's gradients are dense, so `step()` raises as PyTorch does for dense ones."""

    def __init__(self, params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, maximize: bool = False) -> None:
        if isinstance(lr, Tensor):  # PyTorch takes a 1-element Tensor lr
            if lr.numel() != 1:
                raise ArgumentError(f"Tensor lr must be 1-element (got shape {lr.shape})")
            if not 0.0 < float(lr.data.reshape(())):
                raise ArgumentError(f"Invalid learning rate: {lr} (must be > 0)")
        elif not isinstance(lr, (int, float)) or isinstance(lr, bool) or not 0.0 < lr:
            raise ArgumentError(f"Invalid learning rate: {lr} (must be > 0)")
        if not 0.0 < eps:
            raise ArgumentError(f"Invalid epsilon value: {eps} (must be > 0)")
        for i, b in enumerate(betas):
            if not 0.0 <= b < 1.0:
                raise ArgumentError(f"Invalid beta parameter at index {i}: {b} (must be in [0, 1))")
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, maximize=maximize))
        bad = [[i, k] for i, g in enumerate(self.param_groups)
               for k, p in enumerate(g["params"]) if p.data.dtype.kind == "c"]
        if bad:
            raise ArgumentError(f"Complex params at indices {bad}: SparseAdam does not support "
                                "complex parameters")

    def step(self, closure: Callable | None = None) -> Any:
        """Refused for dense gradients (all of retrograd's), as in PyTorch."""
        loss = None if closure is None else self._closure(closure)
        for group in self.param_groups:
            for k, p in enumerate(group["params"]):
                if p.grad is not None:
                    raise RuntimeError(f"SparseAdam does not support dense gradients (parameter "
                                       f"{k}, shape {p.shape}), please consider Adam instead")
        return loss
