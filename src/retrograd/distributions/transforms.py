"""`rg.distributions.transforms`: PyTorch's bijections for TransformedDistribution.

Each transform maps x to y = t(x), has an inverse `t.inv`, and (where PyTorch has one)
`log_abs_det_jacobian(x, y)`, the log of |dy/dx| summed over the transform's
`event_dim` rightmost dimensions. All are compositions of differentiable ops."""

from __future__ import annotations

import math

import numpy as np

from ..api._args import _t
from ..api.activations import softplus
from ..tensor import Tensor
from . import distribution as C

__all__ = ["Transform", "ExpTransform", "AffineTransform", "SigmoidTransform",
           "TanhTransform", "SoftplusTransform", "PowerTransform", "AbsTransform",
           "ComposeTransform"]


def _sum_rightmost(x: Tensor, dim: int) -> Tensor:
    return x if dim == 0 else x.sum(tuple(range(-dim, 0)))


def _clamp01(x: Tensor) -> Tensor:
    eps = float(np.finfo(x.data.dtype).eps)
    return x.clamp(eps, 1 - eps)


class Transform:
    """A differentiable map with an inverse and a log |Jacobian determinant|."""

    bijective = True
    sign = 1
    event_dim = 0
    domain = C.real
    codomain = C.real

    def __call__(self, x) -> Tensor:
        return self._call(_t(x))

    @property
    def inv(self) -> Transform:
        """The inverse transform (y -> x)."""
        return _InverseTransform(self)

    def _call(self, x: Tensor) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} has no forward map")

    def _inverse(self, y: Tensor) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} has no inverse")

    def log_abs_det_jacobian(self, x, y) -> Tensor:
        """log |dy/dx| at x (y = self(x))."""
        raise NotImplementedError(f"{type(self).__name__} has no log_abs_det_jacobian")

    def __eq__(self, other) -> bool:
        """Parameterless transforms of one type are equal (as in PyTorch); others only
        to themselves."""
        if self is other:
            return True
        return type(self) is type(other) and type(self) in _PARAMETERLESS

    def __hash__(self) -> int:
        return hash(type(self)) if type(self) in _PARAMETERLESS else id(self)

    def forward_shape(self, shape: tuple) -> tuple:
        return tuple(shape)

    def inverse_shape(self, shape: tuple) -> tuple:
        return tuple(shape)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class _InverseTransform(Transform):
    def __init__(self, base: Transform):
        self._inv = base
        self.event_dim = base.event_dim
        self.bijective = base.bijective
        self.domain, self.codomain = base.codomain, base.domain

    @property
    def sign(self):
        return self._inv.sign

    @property
    def inv(self) -> Transform:
        return self._inv

    def _call(self, x: Tensor) -> Tensor:
        return self._inv._inverse(x)

    def _inverse(self, y: Tensor) -> Tensor:
        return self._inv._call(y)

    def log_abs_det_jacobian(self, x, y) -> Tensor:
        return -self._inv.log_abs_det_jacobian(_t(y), _t(x))


class _Identity(Transform):
    def _call(self, x):
        return x

    def _inverse(self, y):
        return y

    def log_abs_det_jacobian(self, x, y):
        return _t(x) * 0


identity_transform = _Identity()


class ExpTransform(Transform):
    """y = exp(x)."""

    codomain = C.positive

    def __init__(self, cache_size: int = 0):
        pass

    def _call(self, x):
        return x.exp()

    def _inverse(self, y):
        return y.log()

    def log_abs_det_jacobian(self, x, y):
        return _t(x)


class AffineTransform(Transform):
    """y = loc + scale * x (scale nonzero), over `event_dim` rightmost dimensions."""

    def __init__(self, loc, scale, event_dim: int = 0, cache_size: int = 0):
        self.loc, self.scale = loc, scale
        self.event_dim = int(event_dim)

    @property
    def sign(self):
        s = self.scale
        if isinstance(s, (int, float)):
            return 1 if s > 0 else -1 if s < 0 else 0
        return _t(s).sign()

    def _call(self, x):
        return self.loc + self.scale * x

    def _inverse(self, y):
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x, y):
        x = _t(x)
        s = self.scale
        if isinstance(s, (int, float)):
            r = x * 0 + math.log(abs(s))
        else:
            r = _t(s).abs().log()
        shape = np.broadcast_shapes(x.shape, r.shape)
        r = r.expand(*shape) if r.shape != shape else r
        return _sum_rightmost(r, self.event_dim)


class SigmoidTransform(Transform):
    """y = sigmoid(x), kept inside (0, 1) by the dtype's eps."""

    codomain = C.unit_interval

    def __init__(self, cache_size: int = 0):
        pass

    def _call(self, x):
        return _clamp01(x.sigmoid())

    def _inverse(self, y):
        y = _clamp01(y)
        return y.log() - (-y).log1p()

    def log_abs_det_jacobian(self, x, y):
        x = _t(x)
        return -softplus(-x) - softplus(x)


class TanhTransform(Transform):
    """y = tanh(x)."""

    codomain = C.interval(-1.0, 1.0)

    def __init__(self, cache_size: int = 0):
        pass

    def _call(self, x):
        return x.tanh()

    def _inverse(self, y):
        return 0.5 * ((y).log1p() - (-y).log1p())

    def log_abs_det_jacobian(self, x, y):
        x = _t(x)
        return 2.0 * (math.log(2.0) - x - softplus(-2.0 * x))


class SoftplusTransform(Transform):
    """y = log(1 + exp(x))."""

    codomain = C.positive

    def __init__(self, cache_size: int = 0):
        pass

    def _call(self, x):
        return softplus(x)

    def _inverse(self, y):
        return (-(-y).expm1()).log() + y

    def log_abs_det_jacobian(self, x, y):
        return -softplus(-_t(x))


class PowerTransform(Transform):
    """y = x ** exponent on the positive reals."""

    domain = C.positive
    codomain = C.positive

    def __init__(self, exponent, cache_size: int = 0):
        self.exponent = exponent

    @property
    def sign(self):
        e = self.exponent
        if isinstance(e, (int, float)):
            return 1 if e > 0 else -1 if e < 0 else 0
        return _t(e).sign()

    def _call(self, x):
        return x ** self.exponent

    def _inverse(self, y):
        e = self.exponent
        return y ** (1.0 / e if isinstance(e, (int, float)) else _t(e).reciprocal())

    def log_abs_det_jacobian(self, x, y):
        return (self.exponent * _t(y) / _t(x)).abs().log()


class AbsTransform(Transform):
    """y = |x| (not bijective: the inverse gives the nonnegative root)."""

    bijective = False
    codomain = C.positive

    def __init__(self, cache_size: int = 0):
        pass

    def _call(self, x):
        return x.abs()

    def _inverse(self, y):
        return y


class ComposeTransform(Transform):
    """parts[-1](...parts[0](x)): applied in order; the inverse in reverse."""

    def __init__(self, parts: list, cache_size: int = 0):
        self.parts = list(parts)
        self.event_dim = max((p.event_dim for p in self.parts), default=0)
        self.bijective = all(p.bijective for p in self.parts)
        if self.parts:
            self.domain, self.codomain = self.parts[0].domain, self.parts[-1].codomain

    @property
    def sign(self):
        s = 1
        for p in self.parts:
            s = s * p.sign
        return s

    def _call(self, x):
        for p in self.parts:
            x = p(x)
        return x

    def _inverse(self, y):
        for p in reversed(self.parts):
            y = p.inv(y)
        return y

    def log_abs_det_jacobian(self, x, y):
        x = _t(x)
        if not self.parts:
            return x * 0
        total = 0
        for p in self.parts:
            y_p = p(x)
            term = _sum_rightmost(p.log_abs_det_jacobian(x, y_p), self.event_dim - p.event_dim)
            total = total + term
            x = y_p
        return total


_PARAMETERLESS = (ExpTransform, SigmoidTransform, TanhTransform, SoftplusTransform,
                  AbsTransform, _Identity)
