"""Multivariate distributions: MultivariateNormal (from a covariance, precision or
scale_tril matrix, through a Cholesky factor) and Dirichlet."""

from __future__ import annotations

import math

import numpy as np

from .. import special
from ..api._args import _t
from ..creation import generator
from ..primitive import ArgumentError
from ..tensor import Tensor
from . import distribution as C
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .gamma_draws import below_one, standard_gamma, tiny


def _linalg():
    from .. import linalg

    return linalg


def _floating(x, dtype=None) -> Tensor:
    t = _t(x)
    if dtype is not None and t.data.dtype != dtype:
        return t.to(dtype)
    return t if t.data.dtype.kind == "f" else t.to(np.float32)


def _mT(x: Tensor) -> Tensor:
    return x.transpose(-1, -2)


def _batch_mv(bmat, bvec) -> Tensor:
    """Batched matrix-vector product with broadcasting (torch's private helper, which
    ports import from torch.distributions.multivariate_normal)."""
    return (bmat @ bvec.unsqueeze(-1)).squeeze(-1)


def _batch_mahalanobis(bL, bx) -> Tensor:
    """The squared Mahalanobis distance x^T (L L^T)^-1 x for a lower-triangular `bL`,
    broadcast over batch dims (torch's private helper, imported by GP and flow code)."""
    n = bx.shape[-1]
    shape = np.broadcast_shapes(tuple(bx.shape[:-1]), tuple(bL.shape[:-2]))
    L = bL.expand(*(shape + (n, n)))
    z = _linalg().solve_triangular(L, bx.expand(*(shape + (n,))).unsqueeze(-1),
                                   upper=False)[..., 0]
    return (z ** 2).sum(-1)


class MultivariateNormal(Distribution):
    """The normal distribution on R^n with mean `loc` and one of `covariance_matrix`,
    `precision_matrix` or `scale_tril` (a lower-triangular factor with positive diagonal);
    batched over leading dimensions."""

    arg_constraints = {"loc": C.real_vector, "covariance_matrix": C.positive_definite,
                       "precision_matrix": C.positive_definite,
                       "scale_tril": C.lower_cholesky}
    support = C.real_vector
    has_rsample = True

    def __init__(self, loc, covariance_matrix=None, precision_matrix=None, scale_tril=None,
                 validate_args: bool | None = None):
        given = [m is not None for m in (covariance_matrix, precision_matrix, scale_tril)]
        if sum(given) != 1:
            raise ArgumentError("MultivariateNormal: exactly one of covariance_matrix, "
                                "precision_matrix or scale_tril may be specified")
        loc = _floating(loc)
        if loc.ndim < 1:
            raise ArgumentError("MultivariateNormal: loc must be at least one-dimensional")
        matrix = next(m for m in (covariance_matrix, precision_matrix, scale_tril)
                      if m is not None)
        name = ("covariance_matrix", "precision_matrix", "scale_tril")[given.index(True)]
        matrix = _floating(matrix, loc.data.dtype)
        if matrix.ndim < 2 or matrix.shape[-1] != matrix.shape[-2]:
            raise ArgumentError(f"MultivariateNormal: {name} must be at least two-dimensional, "
                                f"with square trailing dimensions, got shape {matrix.shape}")
        n = loc.shape[-1]
        if matrix.shape[-1] != n:
            raise ArgumentError(f"MultivariateNormal: {name} of shape {matrix.shape} does not "
                                f"match loc of event size {n}")
        batch = np.broadcast_shapes(loc.shape[:-1], matrix.shape[:-2])
        self.loc = loc.expand(*(batch + (n,)))
        self.__dict__.update(covariance_matrix=None, precision_matrix=None, scale_tril=None)
        self.__dict__[name] = matrix.expand(*(batch + (n, n)))
        super().__init__(batch, (n,), validate_args=validate_args)
        linalg = _linalg()
        if name == "scale_tril":
            self._scale_tril = matrix
        elif name == "covariance_matrix":
            self._scale_tril = linalg.cholesky(matrix)
        else:
            self._scale_tril = linalg.cholesky(linalg.inv(matrix))

    @property
    def _unbroadcasted_scale_tril(self) -> Tensor:
        """The Cholesky factor before broadcasting to the batch shape (torch's attribute,
        read by GP and Kalman code)."""
        return self._scale_tril

    @property
    def scale_tril(self) -> Tensor:
        s = self.__dict__.get("scale_tril")
        return s if s is not None else self._scale_tril.expand(
            *(self._batch_shape + self._event_shape * 2))

    @scale_tril.setter
    def scale_tril(self, value) -> None:
        self.__dict__["scale_tril"] = value

    @property
    def covariance_matrix(self) -> Tensor:
        s = self.__dict__.get("covariance_matrix")
        if s is not None:
            return s
        L = self._scale_tril
        return (L @ _mT(L)).expand(*(self._batch_shape + self._event_shape * 2))

    @covariance_matrix.setter
    def covariance_matrix(self, value) -> None:
        self.__dict__["covariance_matrix"] = value

    @property
    def precision_matrix(self) -> Tensor:
        s = self.__dict__.get("precision_matrix")
        if s is not None:
            return s
        return _linalg().inv(self.covariance_matrix)

    @precision_matrix.setter
    def precision_matrix(self, value) -> None:
        self.__dict__["precision_matrix"] = value

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        return (self._scale_tril ** 2).sum(-1).expand(*(self._batch_shape + self._event_shape))

    def rsample(self, sample_shape=()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        eps = Tensor(generator().standard_normal(shape).astype(self.loc.data.dtype))
        return self.loc + (self._scale_tril @ eps.unsqueeze(-1))[..., 0]

    def _half_log_det(self) -> Tensor:
        return self._scale_tril.diagonal(0, -2, -1).log().sum(-1)

    def log_prob(self, value) -> Tensor:
        value = self._validate_sample(value)
        diff = value - self.loc
        shape = np.broadcast_shapes(diff.shape[:-1], self._scale_tril.shape[:-2])
        n = self._event_shape[0]
        L = self._scale_tril.expand(*(shape + (n, n)))
        z = _linalg().solve_triangular(L, diff.expand(*(shape + (n,))).unsqueeze(-1),
                                       upper=False)[..., 0]
        m = (z ** 2).sum(-1)
        return -0.5 * (n * math.log(2 * math.pi) + m) - self._half_log_det()

    def entropy(self) -> Tensor:
        n = self._event_shape[0]
        h = 0.5 * n * (1.0 + math.log(2 * math.pi)) + self._half_log_det()
        return h.expand(*self._batch_shape) if self._batch_shape else h


def _dirichlet_mode(c: Tensor) -> Tensor:
    """PyTorch's Dirichlet mode: the excesses over 1, clamped at 0, normalised; where every
    concentration is below 1 (a density unbounded at every vertex) the vertex of the
    first largest entry of that (NaN) ratio, i.e. the first coordinate's, as torch. Tensor
    ops only (no value read in Python), so vmap and rg.jit take it."""
    from ..api.elementwise import where
    from ..creation import arange

    a = (c - 1).clamp(min=0)
    mode = a / a.sum(-1, keepdim=True)
    below = (c < 1).all(-1, keepdim=True)
    first = mode.detach().nan_to_num(nan=-1.0).argmax(-1, keepdim=True)
    vertex = (arange(c.shape[-1]) == first).to(mode.dtype)
    return where(below, vertex, mode)


class Dirichlet(ExponentialFamily):
    """The Dirichlet distribution on the simplex with `concentration` (last dimension: the
    categories); `rsample` is G / G.sum(-1) of gamma draws G ~ Gamma(concentration),
    differentiable in the concentration."""

    @property
    def _natural_params(self) -> tuple:
        return (self.concentration,)

    def _log_normalizer(self, x):
        return special.gammaln(x).sum(-1) - special.gammaln(x.sum(-1))

    arg_constraints = {"concentration": C.independent(C.positive, 1)}
    support = C.simplex
    has_rsample = True

    def __init__(self, concentration, validate_args: bool | None = None):
        c = _floating(concentration)
        if c.ndim < 1:
            raise ArgumentError("Dirichlet: `concentration` must be at least one-dimensional")
        self.concentration = c
        super().__init__(c.shape[:-1], c.shape[-1:], validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        return self.concentration / self.concentration.sum(-1, keepdim=True)

    @property
    def mode(self) -> Tensor:
        return _dirichlet_mode(self.concentration)

    @property
    def variance(self) -> Tensor:
        c = self.concentration
        c0 = c.sum(-1, keepdim=True)
        return c * (c0 - c) / (c0 ** 2 * (c0 + 1))

    def rsample(self, sample_shape=()) -> Tensor:
        """G / G.sum(-1), kept inside [tiny, 1 - eps] of the dtype."""
        g = standard_gamma(self.concentration, self._extended_shape(sample_shape))
        return (g / g.sum(-1, keepdim=True)).clamp(tiny(g), below_one(g))

    def log_prob(self, value) -> Tensor:
        value = self._validate_sample(value)
        c = self.concentration
        return (special.xlogy(c - 1.0, value).sum(-1) + special.gammaln(c.sum(-1))
                - special.gammaln(c).sum(-1))

    def entropy(self) -> Tensor:
        c = self.concentration
        k = c.shape[-1]
        c0 = c.sum(-1)
        return (special.gammaln(c).sum(-1) - special.gammaln(c0)
                - (k - c0) * special.digamma(c0) - ((c - 1.0) * special.digamma(c)).sum(-1))
