"""Distributions added for torch.distributions parity: GeneralizedPareto,
LogisticNormal, OneHotCategoricalStraightThrough and LKJCholesky (torch's formulas)."""

from __future__ import annotations

import math

import numpy as np

from .. import special
from ..api._args import _t
from ..api.elementwise import where
from ..creation import generator
from ..primitive import ArgumentError
from ..tensor import Tensor
from . import constraints
from .composite import TransformedDistribution
from .continuous import Beta, Chi2, Normal
from .counts import OneHotCategorical
from .distribution import Distribution, broadcast_all
from .exp_family import ExponentialFamily
from .transforms import StickBreakingTransform


def _uniform(shape, dtype) -> Tensor:
    return Tensor(np.asarray(generator().random(shape), dtype=dtype))


class GeneralizedPareto(Distribution):
    """The generalized Pareto distribution (loc, scale > 0, concentration xi): survival
    (1 + xi z)^(-1/xi) of z = (x - loc) / scale, exp(-z) at xi = 0."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive,
                       "concentration": constraints.real}
    has_rsample = True

    def __init__(self, loc, scale, concentration, validate_args: bool | None = None):
        self.loc, self.scale, self.concentration = broadcast_all(loc, scale, concentration)
        super().__init__(self.loc.shape, validate_args=validate_args)

    def _safe(self):
        eq_zero = self.concentration.abs() <= 1e-8
        return eq_zero, where(eq_zero, 1.0, self.concentration)

    def rsample(self, sample_shape=()) -> Tensor:
        return self.icdf(_uniform(self._extended_shape(sample_shape), self.loc.data.dtype))

    def log_prob(self, value) -> Tensor:
        value = self._validate_sample(value)
        z = (value - self.loc) / self.scale
        eq_zero, c = self._safe()
        y = 1 / c + 1
        nonzero = where(y == 0, y, y * (c * z).log1p())
        return -self.scale.log() - where(eq_zero, z, nonzero)

    def log_survival_function(self, value) -> Tensor:
        value = self._validate_sample(value)
        z = (value - self.loc) / self.scale
        eq_zero, c = self._safe()
        return where(eq_zero, -z, -(c * z).log1p() / c)

    def log_cdf(self, value) -> Tensor:
        return (-self.log_survival_function(value).exp()).log1p()

    def cdf(self, value) -> Tensor:
        return self.log_cdf(value).exp()

    def icdf(self, value) -> Tensor:
        value = _t(value)
        eq_zero, c = self._safe()
        logu = (-value).log1p()
        return where(eq_zero, self.loc - self.scale * logu,
                     self.loc + self.scale / c * (-c * logu).expm1())

    @property
    def mean(self) -> Tensor:
        valid = self.concentration < 1
        c = where(valid, self.concentration, 0.5)
        return where(valid, self.loc + self.scale / (1 - c), math.nan)

    @property
    def variance(self) -> Tensor:
        valid = self.concentration < 0.5
        c = where(valid, self.concentration, 0.25)
        return where(valid, self.scale ** 2 / ((1 - c) ** 2 * (1 - 2 * c)), math.nan)

    @property
    def mode(self) -> Tensor:
        return self.loc

    def entropy(self) -> Tensor:
        return self.scale.log() + self.concentration + 1

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        upper = where(self.concentration < 0, self.loc - self.scale / self.concentration,
                      math.inf)
        return constraints.interval(self.loc, upper)


class LogisticNormal(TransformedDistribution):
    """StickBreakingTransform()(Normal(loc, scale)) on the simplex (event size of loc
    plus one)."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, loc, scale, validate_args: bool | None = None):
        base = Normal(loc, scale, validate_args=validate_args)
        if not base.batch_shape:
            base = base.expand([1])
        super().__init__(base, StickBreakingTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        shape = tuple(batch_shape) + (self.base_dist.base_dist.loc.shape[-1],)
        base = self.base_dist.base_dist
        return LogisticNormal(base.loc.expand(*shape), base.scale.expand(*shape),
                              validate_args=False)

    @property
    def loc(self) -> Tensor:
        return self.base_dist.base_dist.loc

    @property
    def scale(self) -> Tensor:
        return self.base_dist.base_dist.scale


class OneHotCategoricalStraightThrough(OneHotCategorical):
    """OneHotCategorical whose `rsample` passes gradients straight through: the one-hot
    draw plus (probs - probs.detach())."""

    has_rsample = True

    def rsample(self, sample_shape=()) -> Tensor:
        samples = self.sample(sample_shape)
        probs = self.probs
        return samples + (probs - probs.detach())


class LKJCholesky(Distribution):
    """The LKJ distribution over Cholesky factors L of dim x dim correlation matrices:
    density of L L^T proportional to det(L L^T)^(concentration - 1); draws by the onion
    method (torch's vectorised form)."""

    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim: int, concentration=1.0, validate_args: bool | None = None):
        if dim < 2:
            raise ArgumentError("Expected dim to be an integer greater than or equal to 2. "
                                f"Found dim={dim}.")
        self.dim = int(dim)
        (self.concentration,) = broadcast_all(concentration)
        dtype = self.concentration.data.dtype
        marginal_conc = self.concentration + 0.5 * (self.dim - 2)
        offset = Tensor(np.concatenate([[0.0], np.arange(self.dim - 1)]).astype(dtype))
        self._beta = Beta(offset + 0.5, marginal_conc.unsqueeze(-1) - 0.5 * offset,
                          validate_args=False)
        super().__init__(self.concentration.shape, (self.dim, self.dim),
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return LKJCholesky(self.dim, self.concentration.expand(*tuple(batch_shape)),
                           validate_args=False)

    def sample(self, sample_shape=()) -> Tensor:
        from ..api.indexing import diag_embed
        from ..grad_mode import no_grad

        with no_grad():
            y = self._beta.sample(sample_shape).unsqueeze(-1)
            shape = self._extended_shape(sample_shape)
            u = Tensor(np.tril(generator().standard_normal(shape), -1).astype(
                y.data.dtype))
            norm = np.linalg.norm(u.data, axis=-1, keepdims=True)
            with np.errstate(invalid="ignore", divide="ignore"):
                uh = u.data / norm
            uh[..., 0, :] = 0.0
            w = y.sqrt() * Tensor(uh)
            tiny = float(np.finfo(w.data.dtype).tiny)
            diag = (1 - (w ** 2).sum(-1)).clamp(min=tiny).sqrt()
            return w + diag_embed(diag)

    def log_prob(self, value) -> Tensor:
        value = self._validate_sample(value)
        diag_elems = value.diagonal(dim1=-1, dim2=-2)[..., 1:]
        dtype = self.concentration.data.dtype
        order = Tensor(np.arange(2, self.dim + 1, dtype=dtype))
        order = 2 * (self.concentration - 1).unsqueeze(-1) + self.dim - order
        unnormalized = (order * diag_elems.log()).sum(-1)
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        denominator = special.gammaln(alpha) * dm1
        numerator = special.multigammaln(alpha - 0.5, dm1)
        pi_constant = 0.5 * dm1 * math.log(math.pi)
        return unnormalized - (pi_constant + numerator - denominator)


__all__ = ["GeneralizedPareto", "LogisticNormal", "OneHotCategoricalStraightThrough",
           "LKJCholesky", "Wishart"]


_LOG_2 = math.log(2.0)


def _mvdigamma(x: Tensor, p: int) -> Tensor:
    offsets = Tensor(np.arange(p, dtype=x.data.dtype) / 2)
    return special.digamma(x.unsqueeze(-1) - offsets).sum(-1)


class Wishart(ExponentialFamily):
    """The Wishart distribution over p x p positive definite matrices with `df` > p - 1
    degrees of freedom and scale given by exactly one of `covariance_matrix`,
    `precision_matrix` or `scale_tril`; `rsample` by the Bartlett decomposition
    (differentiable in the scale and, through chi-square draws, in df)."""

    support = constraints.positive_definite
    has_rsample = True

    @property
    def arg_constraints(self):
        return {"covariance_matrix": constraints.positive_definite,
                "precision_matrix": constraints.positive_definite,
                "scale_tril": constraints.lower_cholesky,
                "df": constraints.greater_than(self._event_shape[-1] - 1)}

    def __init__(self, df, covariance_matrix=None, precision_matrix=None, scale_tril=None,
                 validate_args: bool | None = None):
        from .. import linalg

        given = [m is not None for m in (covariance_matrix, precision_matrix, scale_tril)]
        if sum(given) != 1:
            raise ArgumentError("Exactly one of covariance_matrix or precision_matrix or "
                                "scale_tril may be specified.")
        name = ("covariance_matrix", "precision_matrix", "scale_tril")[given.index(True)]
        param = _t(next(m for m in (covariance_matrix, precision_matrix, scale_tril)
                        if m is not None))
        if param.dim() < 2:
            raise ArgumentError("scale_tril must be at least two-dimensional, with optional "
                                "leading batch dimensions")
        if isinstance(df, Tensor):
            batch = np.broadcast_shapes(tuple(param.shape[:-2]), tuple(df.shape))
            self.df = df.expand(*batch) if tuple(df.shape) != batch else df
        else:
            batch = tuple(param.shape[:-2])
            self.df = Tensor(np.asarray(df, dtype=param.data.dtype))
        p = param.shape[-1]
        if bool(np.any(self.df.data <= p - 1)):
            raise ArgumentError(f"Value of df={df} expected to be greater than ndim - 1 = "
                                f"{p - 1}.")
        self.__dict__[name] = param.expand(*(batch + (p, p)))
        self._event_shape = (p, p)
        if name == "scale_tril":
            self._unbroadcasted_scale_tril = param
        elif name == "covariance_matrix":
            self._unbroadcasted_scale_tril = linalg.cholesky(param)
        else:
            self._unbroadcasted_scale_tril = linalg.cholesky(linalg.inv(param))
        super().__init__(batch, (p, p), validate_args=validate_args)
        self._dist_chi2 = Chi2(self.df.unsqueeze(-1) - Tensor(
            np.arange(p, dtype=param.data.dtype)), validate_args=False)

    def expand(self, batch_shape, _instance=None):
        batch_shape = tuple(batch_shape)
        return Wishart(self.df.expand(*batch_shape),
                       scale_tril=self._unbroadcasted_scale_tril.expand(
                           *(batch_shape + self._event_shape)), validate_args=False)

    def __getattr__(self, name):
        # covariance_matrix / precision_matrix / scale_tril computed on first use, as
        # torch's lazy properties
        if name.startswith("_") or "_unbroadcasted_scale_tril" not in self.__dict__:
            raise AttributeError(name)
        if name == "scale_tril":
            value = self._unbroadcasted_scale_tril.expand(
                *(self._batch_shape + self._event_shape))
        elif name == "covariance_matrix":
            L = self._unbroadcasted_scale_tril
            value = (L @ L.mT).expand(*(self._batch_shape + self._event_shape))
        elif name == "precision_matrix":
            from .. import linalg

            L = self._unbroadcasted_scale_tril
            eye = Tensor(np.eye(self._event_shape[-1], dtype=L.data.dtype))
            value = linalg.cholesky_solve(eye, L).expand(
                *(self._batch_shape + self._event_shape))
        else:
            raise AttributeError(name)
        self.__dict__[name] = value
        return value

    def _df_matrix(self) -> Tensor:
        return self.df.reshape(self._batch_shape + (1, 1))

    @property
    def mean(self) -> Tensor:
        return self._df_matrix() * self.covariance_matrix

    @property
    def mode(self) -> Tensor:
        factor = self.df - self._event_shape[-1] - 1
        factor = where(factor <= 0, math.nan, factor)
        return factor.reshape(self._batch_shape + (1, 1)) * self.covariance_matrix

    @property
    def variance(self) -> Tensor:
        V = self.covariance_matrix
        d = V.diagonal(dim1=-2, dim2=-1)
        return self._df_matrix() * (V ** 2 + d.unsqueeze(-1) * d.unsqueeze(-2))

    def _bartlett(self, sample_shape) -> Tensor:
        from ..api.indexing import diag_embed
        from .transforms import vec_to_tril_matrix

        p = self._event_shape[-1]
        dtype = self._unbroadcasted_scale_tril.data.dtype
        chi = self._dist_chi2.rsample(sample_shape).sqrt()
        eps = float(np.finfo(dtype).eps)
        chi = chi.clamp(min=eps)
        lower = Tensor(np.asarray(generator().standard_normal(
            tuple(sample_shape) + self._batch_shape + (p * (p - 1) // 2,)), dtype=dtype))
        noise = diag_embed(chi) + vec_to_tril_matrix(lower, diag=-1)
        chol = self._unbroadcasted_scale_tril @ noise
        return chol @ chol.mT

    def rsample(self, sample_shape=(), max_try_correction=None) -> Tensor:
        """A Bartlett draw; draws that come out singular are redrawn (up to
        `max_try_correction` = 10 times), as torch does."""
        import warnings

        sample_shape = self._extended_shape(sample_shape)[:-len(self._batch_shape) - 2]
        tries = 10 if max_try_correction is None else int(max_try_correction)
        sample = self._bartlett(sample_shape)
        bad = ~self.support.check(sample.detach())
        if bool(bad.any().item()):
            warnings.warn("Singular sample detected.", stacklevel=2)
            for _ in range(tries):
                sample = where(bad.reshape(tuple(bad.shape) + (1, 1)),
                               self._bartlett(sample_shape), sample)
                bad = ~self.support.check(sample.detach())
                if not bool(bad.any().item()):
                    break
        return sample

    def log_prob(self, value) -> Tensor:
        from .. import linalg

        value = self._validate_sample(value)
        nu = self.df
        p = self._event_shape[-1]
        L = self._unbroadcasted_scale_tril
        half_log_det = L.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        return (-nu * (p * _LOG_2 / 2 + half_log_det)
                - special.multigammaln(nu / 2, p)
                + (nu - p - 1) / 2 * linalg.slogdet(value).logabsdet
                - linalg.cholesky_solve(value, L).diagonal(dim1=-2, dim2=-1).sum(-1) / 2)

    _mean_carrier_measure = 0

    @property
    def _natural_params(self) -> tuple:
        """(-precision / 2, (df - p - 1) / 2), torch's, for the exp-family KL."""
        return -self.precision_matrix / 2, (self.df - self._event_shape[-1] - 1) / 2

    def _log_normalizer(self, x, y):
        from .. import linalg

        p = self._event_shape[-1]
        return ((y + (p + 1) / 2) * (-linalg.slogdet(-2 * x).logabsdet + _LOG_2 * p)
                + special.multigammaln(y + (p + 1) / 2, p))

    def entropy(self) -> Tensor:
        nu = self.df
        p = self._event_shape[-1]
        half_log_det = self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        return ((p + 1) * (p * _LOG_2 / 2 + half_log_det)
                + special.multigammaln(nu / 2, p)
                - (nu - p - 1) / 2 * _mvdigamma(nu / 2, p)
                + nu * p / 2)
