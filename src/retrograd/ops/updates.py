"""Optimizer updates as ops (forward only, no gradient): under `rg.jit` a parameter's
Adam update is one traced node that reads the step count, instead of a dozen element-wise
nodes and the bias corrections' 0-d arithmetic, each a generated line and a NumPy call.

`adam_apply(x, m, v, step, lr=, beta1=, beta2=, eps=, decay=)` is the parameter after
one Adam step, given the already updated moments m and v (or AMSGrad's running maximum
as v) and the already incremented 0-d step count:

    x * decay - lr / (1 - beta1^t) * (m / (sqrt(v) / sqrt(1 - beta2^t) + eps))

with PyTorch's operations in its order, each rounded to x's dtype (the factors are
Python floats, made in double precision as PyTorch makes them).
"""

from __future__ import annotations

import math

from ..devices import namespace_of as _ns
from ..primitive import defop


def adam_update_(x, m, v, t: float, *, lr: float, beta1: float, beta2: float,
                 eps: float) -> None:
    """x -= lr / (1 - beta1^t) * (m / (sqrt(v) / sqrt(1 - beta2^t) + eps)), in place on x
    (the arrays of one parameter; eager Adam's update and the op's)."""
    step_size = lr / (1 - beta1 ** t)
    bc2_sqrt = math.sqrt(1 - beta2 ** t)
    denom = _ns(v).sqrt(v)
    denom /= bc2_sqrt
    denom += eps
    _ns(m).divide(m, denom, out=denom)
    denom *= step_size
    x -= denom


def _adam_apply(x, m, v, step, *, lr, beta1, beta2, eps, decay):
    out = x * decay if decay != 1.0 else x.copy()
    adam_update_(out, m, v, float(step), lr=lr, beta1=beta1, beta2=beta2, eps=eps)
    return out


adam_apply = defop("adam_apply", _adam_apply, fresh=True)
