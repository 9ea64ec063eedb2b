"""VonMises: the circular normal distribution, sampled by Best and Fisher's rejection
method (vectorised: every pending draw is retried together until all are accepted)."""

from __future__ import annotations

import math

import numpy as np

from .. import special
from ..creation import generator
from ..tensor import Tensor
from . import distribution as C
from .distribution import Distribution, broadcast_all


def _log_i0(k: Tensor) -> Tensor:
    return special.i0e(k).log() + k


class VonMises(Distribution):
    """The von Mises distribution on the circle with mean angle `loc` and
    `concentration`; `mean` and `variance` are the circular ones, as in PyTorch."""

    arg_constraints = {"loc": C.real, "concentration": C.positive}
    support = C.real

    def __init__(self, loc, concentration, validate_args: bool | None = None):
        self.loc, self.concentration = broadcast_all(loc, concentration)
        super().__init__(self.loc.shape, validate_args=validate_args)

    def log_prob(self, value) -> Tensor:
        value = self._validate_sample(value)
        k = self.concentration
        return k * (value - self.loc).cos() - math.log(2 * math.pi) - _log_i0(k)

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        k = self.concentration
        return 1 - (special.i1e(k) / special.i0e(k))

    def sample(self, sample_shape=()) -> Tensor:
        """Best-Fisher rejection in float64, returned in the parameters' dtype in
        [-pi, pi)."""
        shape = self._extended_shape(sample_shape)
        loc = np.broadcast_to(self.loc.data.astype(np.float64), shape)
        kappa = np.broadcast_to(self.concentration.data.astype(np.float64), shape)
        with np.errstate(divide="ignore", invalid="ignore"):
            tau = 1 + np.sqrt(1 + 4 * kappa ** 2)
            rho = (tau - np.sqrt(2 * tau)) / (2 * kappa)
            r = np.where(kappa < 1e-5, 1 / kappa + kappa, (1 + rho ** 2) / (2 * rho))
        x = np.zeros(shape)
        done = np.zeros(shape, dtype=bool)
        g = generator()
        while not done.all():
            u1, u2, u3 = g.random((3,) + shape)
            z = np.cos(math.pi * u1)
            with np.errstate(divide="ignore", invalid="ignore"):
                f = (1 + r * z) / (r + z)
                c = kappa * (r - f)
                accept = ((c * (2 - c) - u2) > 0) | (np.log(c / u2) + 1 - c >= 0)
            accept &= ~done
            x = np.where(accept, np.sign(u3 - 0.5) * np.arccos(np.clip(f, -1, 1)), x)
            done |= accept
        out = (x + math.pi + loc) % (2 * math.pi) - math.pi
        return Tensor(out.astype(self.loc.data.dtype))

    def expand(self, batch_shape, _instance=None):
        batch_shape = tuple(batch_shape)
        return VonMises(self.loc.expand(*batch_shape),
                        self.concentration.expand(*batch_shape), validate_args=False)
