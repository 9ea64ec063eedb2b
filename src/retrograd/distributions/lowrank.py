"""LowRankMultivariateNormal: a normal on R^n whose covariance is
cov_factor @ cov_factor.T + diag(cov_diag), sampled without forming it."""

from __future__ import annotations

import math

import numpy as np

from ..api._args import _t
from ..api.indexing import diag_embed
from ..creation import generator
from ..primitive import ArgumentError
from ..tensor import Tensor
from . import distribution as C
from .distribution import Distribution


def _linalg():
    from .. import linalg

    return linalg


def _mT(x: Tensor) -> Tensor:
    return x.transpose(-1, -2)


class LowRankMultivariateNormal(Distribution):
    """N(loc, cov_factor cov_factor^T + diag(cov_diag)), batched over leading dimensions;
    `rsample` is loc + W eps_W + sqrt(D) eps_D, differentiable in all three."""

    arg_constraints = {"loc": C.real_vector,
                       "cov_factor": C.independent(C.real, 2),
                       "cov_diag": C.independent(C.positive, 1)}
    support = C.real_vector
    has_rsample = True

    def __init__(self, loc, cov_factor, cov_diag, validate_args: bool | None = None):
        loc, cov_factor, cov_diag = _t(loc), _t(cov_factor), _t(cov_diag)
        if loc.ndim < 1:
            raise ArgumentError("LowRankMultivariateNormal: loc must be at least "
                                "one-dimensional")
        n = loc.shape[-1]
        if cov_factor.ndim < 2 or cov_factor.shape[-2] != n:
            raise ArgumentError(f"LowRankMultivariateNormal: cov_factor of shape "
                                f"{cov_factor.shape} must be at least two-dimensional with "
                                f"shape[-2] = {n} (the event size of loc)")
        if cov_diag.ndim < 1 or cov_diag.shape[-1] != n:
            raise ArgumentError(f"LowRankMultivariateNormal: cov_diag of shape {cov_diag.shape} "
                                f"must end with the event size {n}")
        rank = cov_factor.shape[-1]
        try:
            batch = np.broadcast_shapes(loc.shape[:-1], cov_factor.shape[:-2],
                                        cov_diag.shape[:-1])
        except ValueError:
            raise ArgumentError(f"LowRankMultivariateNormal: incompatible batch shapes of loc "
                                f"{loc.shape}, cov_factor {cov_factor.shape} and cov_diag "
                                f"{cov_diag.shape}") from None
        self.loc = loc.expand(*(batch + (n,)))
        self.cov_factor = cov_factor.expand(*(batch + (n, rank)))
        self.cov_diag = cov_diag.expand(*(batch + (n,)))
        # torch's names for the parameters before broadcasting (read by ports)
        self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag = cov_factor, cov_diag
        super().__init__(batch, (n,), validate_args=validate_args)

    @property
    def covariance_matrix(self) -> Tensor:
        W = self.cov_factor
        return W @ _mT(W) + diag_embed(self.cov_diag)

    @property
    def scale_tril(self) -> Tensor:
        return _linalg().cholesky(self.covariance_matrix)

    @property
    def precision_matrix(self) -> Tensor:
        return _linalg().inv(self.covariance_matrix)

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        return (self.cov_factor ** 2).sum(-1) + self.cov_diag

    def rsample(self, sample_shape=()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        rank = self.cov_factor.shape[-1]
        dt = self.loc.data.dtype
        g = generator()
        eps_w = Tensor(g.standard_normal(shape[:-1] + (rank,)).astype(dt))
        eps_d = Tensor(g.standard_normal(shape).astype(dt))
        return (self.loc + (self.cov_factor @ eps_w.unsqueeze(-1))[..., 0]
                + self.cov_diag.sqrt() * eps_d)

    def log_prob(self, value) -> Tensor:
        value = self._validate_sample(value)
        L = self.scale_tril
        diff = value - self.loc
        n = self._event_shape[0]
        shape = np.broadcast_shapes(diff.shape[:-1], L.shape[:-2])
        z = _linalg().solve_triangular(L.expand(*(shape + (n, n))),
                                       diff.expand(*(shape + (n,))).unsqueeze(-1),
                                       upper=False)[..., 0]
        half_log_det = L.diagonal(0, -2, -1).log().sum(-1)
        return -0.5 * (n * math.log(2 * math.pi) + (z ** 2).sum(-1)) - half_log_det

    def entropy(self) -> Tensor:
        n = self._event_shape[0]
        half_log_det = self.scale_tril.diagonal(0, -2, -1).log().sum(-1)
        return 0.5 * n * (1.0 + math.log(2 * math.pi)) + half_log_det

    def expand(self, batch_shape, _instance=None):
        batch_shape = tuple(batch_shape)
        n, r = self.cov_factor.shape[-2:]
        return LowRankMultivariateNormal(self.loc.expand(*(batch_shape + (n,))),
                                         self.cov_factor.expand(*(batch_shape + (n, r))),
                                         self.cov_diag.expand(*(batch_shape + (n,))),
                                         validate_args=False)
