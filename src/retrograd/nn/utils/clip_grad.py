"""`rg.nn.utils.clip_grad`: gradient clipping, `clip_grad_norm_` and `clip_grad_value_`
(torch.nn.utils.clip_grad's names; also at `rg.nn.utils`).

Both change the gradients in place with tensor ops under no_grad, so a training
step traced by `rg.jit` replays them.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ... import api as _f
from ..._values import every_value
from ...dtypes import get_default_dtype
from ...grad_mode import no_grad, state
from ...primitive import ArgumentError
from ...tensor import Tensor

__all__ = ["clip_grad_norm_", "clip_grad_value_", "get_total_norm", "clip_grads_with_norm_",
           "clip_grad_norm"]


def _params(parameters) -> list:
    """The parameters as a list: a generator (`model.parameters()`) is read once only."""
    return [parameters] if isinstance(parameters, Tensor) else list(parameters)


def _grads(parameters) -> list:
    return [p.grad for p in _params(parameters) if p.grad is not None]


def get_total_norm(tensors, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                   foreach=None) -> Tensor:
    """The `norm_type` norm of all `tensors` together (as if concatenated); `foreach` is
    PyTorch's kernel choice, which gives the same result."""
    if isinstance(tensors, Tensor):
        tensors = [tensors]
    tensors = list(tensors)
    norm_type = float(norm_type)
    if not tensors:
        return Tensor(np.array(0.0, dtype=get_default_dtype()))  # torch.tensor(0.0)
    norms = [_f.vector_norm(g, norm_type) for g in tensors]
    total = _f.vector_norm(_f.stack(norms), norm_type)
    if error_if_nonfinite and state.tracer is not None:
        from ...jit import JitError

        raise JitError("clip_grad_norm_/get_total_norm with error_if_nonfinite=True inside "
                       "rg.jit: the check reads the norm's value, which a replay cannot do; "
                       "pass error_if_nonfinite=False, or check the returned norm outside")
    if error_if_nonfinite and not np.all(np.isfinite(every_value(total))):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` "
                           "is non-finite, so it cannot be clipped. To disable this error and "
                           "scale the gradients by the non-finite norm anyway, set "
                           "`error_if_nonfinite=False`")
    return total


def clip_grads_with_norm_(parameters, max_norm: float, total_norm: Tensor,
                          foreach=None) -> None:
    """Scale the gradients by min(1, max_norm / (total_norm + 1e-6)), in place (`foreach`:
    as `get_total_norm`)."""
    grads = _grads(parameters)
    if not grads:
        return
    coef = _f.clamp(float(max_norm) / (total_norm + 1e-6), max=1.0)
    with no_grad():
        for g in grads:
            g.mul_(coef.to(g.dtype) if coef.dtype != g.dtype else coef)


def clip_grad_norm_(parameters, max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False, foreach=None) -> Tensor:
    """Rescale the gradients so their total `norm_type` norm (inf: the largest |g|) is at
    most `max_norm`; returns the total norm before clipping, as PyTorch does."""
    if max_norm is None or (isinstance(max_norm, float) and math.isnan(max_norm)):
        raise ArgumentError(f"clip_grad_norm_: max_norm must be a number, got {max_norm!r}")
    parameters = _params(parameters)
    grads = _grads(parameters)
    with no_grad():
        total = get_total_norm(grads, norm_type, error_if_nonfinite)
    clip_grads_with_norm_(parameters, max_norm, total)
    return total


def clip_grad_norm(parameters, max_norm: float, norm_type: float = 2.0,
                   error_if_nonfinite: bool = False, foreach=None) -> Tensor:
    """Deprecated PyTorch spelling of `clip_grad_norm_` (warns, then calls it)."""
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of "
                  "`torch.nn.utils.clip_grad_norm_`.", FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters, clip_value: float, foreach=None) -> None:
    """Clamp every gradient element to [-clip_value, clip_value], in place."""
    v = float(clip_value)
    with no_grad():
        for g in _grads(parameters):
            g.copy_(_f.clamp(g, -v, v))
