"""`rg._C`: the one name of `torch._C` that numerical code catches by that path:
`torch._C._LinAlgError`, the class `torch.linalg.LinAlgError` is (torchdiffeq's implicit
Runge-Kutta solvers stop their Newton iteration on it when a Jacobian is singular)."""

from __future__ import annotations

from .ops.linalg_decomp import LinAlgError as _LinAlgError

__all__ = ["_LinAlgError"]
