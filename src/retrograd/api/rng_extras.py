"""`rg.binomial`: draws of Binomial(count, prob), PyTorch's `torch.binomial`.

NumPy's generator draws them (the global one, or `generator=`), so the numbers are
retrograd's own, not torch's; like every draw, `rg.jit` and `rg.func.vmap` refuse it. As in
torch, the result has no derivative: it requires grad when count or prob does, and a
backward through it raises.
"""

from __future__ import annotations

import numpy as np

from .. import creation, devices
from ..generator import numpy_generator
from ..tensor import Tensor
from ._errors import ArgumentError
from ._no_derivative import no_derivative

__all__ = ["binomial"]


def binomial(count: Tensor, prob: Tensor, generator=None) -> Tensor:
    """Draws of the binomial distribution with `count` trials (non-negative whole numbers,
    floating dtype) of success probability `prob` (in [0, 1], count's dtype), broadcast
    together; in count's dtype. Like `torch.binomial` (which returns garbage for counts or
    probabilities out of range; refused here)."""
    for name, t in (("count", count), ("prob", prob)):
        if not isinstance(t, Tensor):
            raise TypeError(f"binomial(): '{name}' must be a Tensor, not {type(t).__name__}")
    if count.dtype.kind != "f":
        raise ArgumentError(f"binomial(): binomial only supports floating-point dtypes for count, "
                         f"got {count.dtype}")
    if prob.dtype != count.dtype:
        raise ArgumentError(f"binomial(): prob has dtype {prob.dtype} but count has {count.dtype}; "
                         "they must match")
    try:
        shape = np.broadcast_shapes(count.shape, prob.shape)
    except ValueError:
        raise ArgumentError(f"binomial(): count of shape {count.shape} and prob of shape "
                            f"{prob.shape} do not broadcast") from None
    g = numpy_generator(generator, creation.generator)  # refuses under rg.jit and vmap
    n, p = devices.host(count.data), devices.host(prob.data)
    if n.size and not ((n >= 0).all() and (n == np.floor(n)).all() and np.isfinite(n).all()):
        raise ArgumentError("binomial(): every count must be a non-negative whole number")
    if p.size and not ((p >= 0) & (p <= 1)).all():
        raise ArgumentError("binomial(): every prob must be in [0, 1] (and not NaN)")
    draws = g.binomial(np.broadcast_to(n, shape).astype(np.int64), np.broadcast_to(p, shape))
    out = Tensor._wrap(devices.like(np.asarray(draws, dtype=count.dtype), count.data))
    return no_derivative(out, "binomial", (count, prob))
