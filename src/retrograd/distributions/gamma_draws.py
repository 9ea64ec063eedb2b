"""Reparameterised draws behind `rsample` of Gamma, Chi2, Beta, Dirichlet and StudentT.

Each draws Gamma(alpha, 1) variates with retrograd's generator (so `rg.manual_seed`
makes them reproducible, and rg.jit and rg.func.vmap refuse them as they refuse
`randn`) and passes them through the op `standard_gamma_reparam` (ops/sampling.py),
whose value is the draw and whose gradient in alpha is the implicit-reparameterisation
derivative dx/dalpha at a fixed distribution level, as PyTorch's `_standard_gamma` has.
"""

from __future__ import annotations

import numpy as np

from .. import devices
from ..creation import generator
from ..engine import apply
from ..ops.sampling import standard_gamma_reparam
from ..tensor import Tensor


def _on_device_of(raw: np.ndarray, ref) -> Tensor:
    """Host draws as a tensor on the device of the array `ref`."""
    return Tensor(devices.like(raw, ref))


def standard_normal(shape: tuple, like: Tensor) -> Tensor:
    """N(0, 1) draws of `shape` in `like`'s dtype, on its device."""
    dt = like.data.dtype
    return _on_device_of(np.asarray(generator().standard_normal(shape), dtype=dt), like.data)


def standard_gamma(alpha: Tensor, shape: tuple) -> Tensor:
    """Gamma(alpha, 1) draws of `shape` (alpha broadcast to it), differentiable in alpha.

    Draws that underflow to 0 are raised to the dtype's smallest normal number, as
    PyTorch does, so that logarithms and ratios of them stay finite."""
    data = alpha.data
    dt = data.dtype
    raw = generator().standard_gamma(np.broadcast_to(devices.host(data), shape))
    raw = np.maximum(np.asarray(raw, dtype=dt), np.finfo(dt).tiny)  # a float for shape ()
    return apply(standard_gamma_reparam, alpha, _on_device_of(raw, data), alpha.detach())


def tiny(t: Tensor) -> float:
    """The smallest positive normal number of `t`'s dtype."""
    return float(np.finfo(t.data.dtype).tiny)


def below_one(t: Tensor) -> float:
    """The largest number below 1 in `t`'s dtype."""
    return float(1.0 - np.finfo(t.data.dtype).eps)
