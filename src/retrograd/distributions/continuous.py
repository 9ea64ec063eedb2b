"""Univariate continuous distributions: Normal, Uniform, Exponential, Laplace, Gamma,
Chi2, Beta, StudentT, all reparameterisable (`rsample`): the last four through gamma
draws differentiated implicitly (`gamma_draws.py`)."""

from __future__ import annotations

import math

import numpy as np

from .. import special
from .._values import every_value
from ..api._args import _t
from ..api.elementwise import where
from ..creation import generator
from ..primitive import ArgumentError
from ..tensor import Tensor
from . import distribution as C
from .distribution import Distribution, broadcast_all
from .exp_family import ExponentialFamily
from .gamma_draws import below_one, standard_gamma, standard_normal, tiny

_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


def _draw(fn, shape, dtype) -> Tensor:
    """A tensor of raw draws from retrograd's generator, in `dtype`."""
    return Tensor(np.asarray(fn(generator(), shape), dtype=dtype))


class _LocScale(Distribution):
    """A real location-scale family: `loc` and a positive `scale`, broadcast together,
    reparameterisable (Normal, Laplace, Cauchy, Gumbel)."""

    arg_constraints = {"loc": C.real, "scale": C.positive}
    support = C.real
    has_rsample = True

    def __init__(self, loc, scale, validate_args: bool | None = None):
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(self.loc.shape, validate_args=validate_args)


class Normal(_LocScale, ExponentialFamily):
    """The normal distribution N(loc, scale**2)."""

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def stddev(self) -> Tensor:
        return self.scale

    @property
    def variance(self) -> Tensor:
        return self.scale ** 2

    def rsample(self, sample_shape=()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        eps = _draw(lambda g, s: g.standard_normal(s), shape, self.loc.data.dtype)
        return self.loc + eps * self.scale

    def log_prob(self, value) -> Tensor:
        value = self._validate_sample(value)
        return -((value - self.loc) ** 2) / (2 * self.scale ** 2) - self.scale.log() \
            - _HALF_LOG_2PI

    def cdf(self, value) -> Tensor:
        value = self._validate_sample(value)
        return 0.5 * (1 + special.erf((value - self.loc) / (self.scale * math.sqrt(2))))

    def icdf(self, value) -> Tensor:
        return self.loc + self.scale * special.erfinv(2 * _t(value) - 1) * math.sqrt(2)

    def entropy(self) -> Tensor:
        return 0.5 + _HALF_LOG_2PI + self.scale.log()

    @property
    def _natural_params(self) -> tuple:
        return self.loc / self.scale ** 2, -0.5 * self.scale ** -2

    def _log_normalizer(self, x, y):
        return -0.25 * x ** 2 / y + 0.5 * (-math.pi / y).log()

    @property
    def _mean_carrier_measure(self):
        return 0


class Uniform(Distribution):
    """The uniform distribution on [low, high)."""

    arg_constraints = {"low": C.real, "high": C.real}

    @C.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        return C.interval(self.low, self.high)
    has_rsample = True

    def __init__(self, low, high, validate_args: bool | None = None):
        self.low, self.high = broadcast_all(low, high)
        super().__init__(self.low.shape, validate_args=validate_args)
        if self._validate_args and not np.all(every_value(self.low < self.high)):
            raise ArgumentError("Uniform is not defined when low >= high: expected parameter "
                                "low to be smaller than high everywhere")

    @property
    def mean(self) -> Tensor:
        return (self.high + self.low) / 2

    @property
    def mode(self) -> Tensor:
        return self.low * np.nan

    @property
    def stddev(self) -> Tensor:
        return (self.high - self.low) / 12 ** 0.5

    @property
    def variance(self) -> Tensor:
        return (self.high - self.low) ** 2 / 12

    def rsample(self, sample_shape=()) -> Tensor:
        u = _draw(lambda g, s: g.random(s), self._extended_shape(sample_shape),
                  self.low.data.dtype)
        return self.low + u * (self.high - self.low)

    def log_prob(self, value) -> Tensor:
        value = self._validate_sample(value)
        inside = ((self.low <= value) & (value < self.high)).to(self.low.data.dtype)
        return inside.log() - (self.high - self.low).log()

    def cdf(self, value) -> Tensor:
        value = self._validate_sample(value)
        return ((value - self.low) / (self.high - self.low)).clamp(0, 1)

    def icdf(self, value) -> Tensor:
        return _t(value) * (self.high - self.low) + self.low

    def entropy(self) -> Tensor:
        return (self.high - self.low).log()


class Exponential(ExponentialFamily):
    """The exponential distribution with rate `rate` (mean 1 / rate)."""

    @property
    def _natural_params(self) -> tuple:
        return (-self.rate,)

    def _log_normalizer(self, x):
        return -(-x).log()

    _mean_carrier_measure = 0

    arg_constraints = {"rate": C.positive}
    support = C.nonnegative
    has_rsample = True

    def __init__(self, rate, validate_args: bool | None = None):
        (self.rate,) = broadcast_all(rate)
        super().__init__(self.rate.shape, validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        return self.rate.reciprocal()

    @property
    def mode(self) -> Tensor:
        return self.rate * 0

    @property
    def stddev(self) -> Tensor:
        return self.rate.reciprocal()

    @property
    def variance(self) -> Tensor:
        return self.rate ** -2

    def rsample(self, sample_shape=()) -> Tensor:
        e = _draw(lambda g, s: g.standard_exponential(s), self._extended_shape(sample_shape),
                  self.rate.data.dtype)
        return e / self.rate

    def log_prob(self, value) -> Tensor:
        value = self._validate_sample(value)
        return self.rate.log() - self.rate * value

    def cdf(self, value) -> Tensor:
        value = self._validate_sample(value)
        return 1 - (-self.rate * value).exp()

    def icdf(self, value) -> Tensor:
        return -(-_t(value)).log1p() / self.rate

    def entropy(self) -> Tensor:
        return 1.0 - self.rate.log()


class Laplace(_LocScale):
    """The Laplace distribution with location `loc` and scale `scale`."""

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def stddev(self) -> Tensor:
        return 2 ** 0.5 * self.scale

    @property
    def variance(self) -> Tensor:
        return 2 * self.scale ** 2

    def rsample(self, sample_shape=()) -> Tensor:
        dt = self.loc.data.dtype
        tiny = np.finfo(dt).eps
        u = _draw(lambda g, s: g.uniform(-1 + tiny, 1, s), self._extended_shape(sample_shape),
                  dt)
        return self.loc - self.scale * u.sign() * (-u.abs()).log1p()

    def log_prob(self, value) -> Tensor:
        value = self._validate_sample(value)
        return -(2 * self.scale).log() - (value - self.loc).abs() / self.scale

    def cdf(self, value) -> Tensor:
        value = self._validate_sample(value)
        d = value - self.loc
        return 0.5 - 0.5 * d.sign() * (-d.abs() / self.scale).expm1()

    def icdf(self, value) -> Tensor:
        t = _t(value) - 0.5
        return self.loc - self.scale * t.sign() * (-2 * t.abs()).log1p()

    def entropy(self) -> Tensor:
        return 1 + (2 * self.scale).log()


class Gamma(ExponentialFamily):
    """The gamma distribution with shape `concentration` and `rate` (mean
    concentration / rate); `rsample` is differentiable in both."""

    @property
    def _natural_params(self) -> tuple:
        return self.concentration - 1, -self.rate

    def _log_normalizer(self, x, y):
        return special.gammaln(x + 1) + (x + 1) * (-y.reciprocal()).log()

    _mean_carrier_measure = 0

    arg_constraints = {"concentration": C.positive, "rate": C.positive}
    support = C.nonnegative
    has_rsample = True

    def __init__(self, concentration, rate, validate_args: bool | None = None):
        self.concentration, self.rate = broadcast_all(concentration, rate)
        super().__init__(self.concentration.shape, validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        return self.concentration / self.rate

    @property
    def mode(self) -> Tensor:
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self) -> Tensor:
        return self.concentration / self.rate ** 2

    def rsample(self, sample_shape=()) -> Tensor:
        """Gamma(concentration, 1) draws divided by rate (raised to the dtype's smallest
        normal number where they underflow, as PyTorch does)."""
        x = standard_gamma(self.concentration, self._extended_shape(sample_shape))
        return (x / self.rate).clamp(min=tiny(x))

    def log_prob(self, value) -> Tensor:
        value = self._validate_sample(self._as_dtype_of(value, self.rate))
        a, b = self.concentration, self.rate
        return special.xlogy(a, b) + special.xlogy(a - 1, value) - b * value - special.gammaln(a)

    def cdf(self, value) -> Tensor:
        value = self._validate_sample(value)
        return special.gammainc(self.concentration, self.rate * value)

    def entropy(self) -> Tensor:
        a = self.concentration
        return a - self.rate.log() + special.gammaln(a) + (1.0 - a) * special.digamma(a)


class Chi2(Gamma):
    """The chi-squared distribution with `df` degrees of freedom: Gamma(df / 2, 1 / 2)."""

    arg_constraints = {"df": C.positive}

    def __init__(self, df, validate_args: bool | None = None):
        (df,) = broadcast_all(df)
        self.df = df
        super().__init__(df * 0.5, df * 0 + 0.5, validate_args=validate_args)


class Beta(ExponentialFamily):
    """The beta distribution on [0, 1] with concentrations `concentration1` (alpha) and
    `concentration0` (beta); `rsample` is G1 / (G1 + G0) of gamma draws G1 ~
    Gamma(alpha), G0 ~ Gamma(beta), differentiable in both."""

    @property
    def _natural_params(self) -> tuple:
        return self.concentration1, self.concentration0

    def _log_normalizer(self, x, y):
        return special.gammaln(x) + special.gammaln(y) - special.gammaln(x + y)

    _mean_carrier_measure = 0

    arg_constraints = {"concentration1": C.positive, "concentration0": C.positive}
    support = C.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args: bool | None = None):
        self.concentration1, self.concentration0 = broadcast_all(concentration1,
                                                                 concentration0)
        super().__init__(self.concentration1.shape, validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def mode(self) -> Tensor:
        """PyTorch's (its Dirichlet's first coordinate): (a - 1) / (a + b - 2) with each
        concentration's excess over 1 clamped at 0, so 0 or 1 at an unbounded density,
        and 1 when both concentrations are below 1."""
        from ..api.shape import stack
        from .multivariate import _dirichlet_mode
        return _dirichlet_mode(stack([self.concentration1, self.concentration0], -1))[..., 0]

    @property
    def variance(self) -> Tensor:
        a, b = self.concentration1, self.concentration0
        total = a + b
        return a * b / (total ** 2 * (total + 1))

    def rsample(self, sample_shape=()) -> Tensor:
        """G1 / (G1 + G0), kept inside [tiny, 1 - eps] of the dtype."""
        shape = self._extended_shape(sample_shape)
        x = standard_gamma(self.concentration1, shape)
        y = standard_gamma(self.concentration0, shape)
        return (x / (x + y)).clamp(tiny(x), below_one(x))

    def log_prob(self, value) -> Tensor:
        value = self._validate_sample(value)
        a, b = self.concentration1, self.concentration0
        return (special.xlogy(a - 1, value) + special.xlogy(b - 1, 1 - value)
                + special.gammaln(a + b) - special.gammaln(a) - special.gammaln(b))

    def entropy(self) -> Tensor:
        a, b = self.concentration1, self.concentration0
        total = a + b
        log_beta = special.gammaln(a) + special.gammaln(b) - special.gammaln(total)
        return (log_beta - (a - 1) * special.digamma(a) - (b - 1) * special.digamma(b)
                + (total - 2) * special.digamma(total))


class StudentT(Distribution):
    """Student's t distribution with `df` degrees of freedom, location and scale;
    `rsample` is loc + scale * Z / sqrt(V / df), Z ~ N(0, 1), V ~ Chi2(df), differentiable
    in all three."""

    arg_constraints = {"df": C.positive, "loc": C.real, "scale": C.positive}
    support = C.real
    has_rsample = True

    def __init__(self, df, loc=0.0, scale=1.0, validate_args: bool | None = None):
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        super().__init__(self.df.shape, validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        return where(self.df <= 1, np.nan, self.loc)

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        df = self.df
        v = self.scale ** 2 * df / (df - 2).clamp(min=1e-300)
        v = where(df <= 2, np.inf, v)
        return where(df <= 1, np.nan, v)

    def rsample(self, sample_shape=()) -> Tensor:
        """loc + scale * Z * rsqrt(V / df), V = 2 G with G ~ Gamma(df / 2, 1)."""
        shape = self._extended_shape(sample_shape)
        z = standard_normal(shape, self.loc)
        v = standard_gamma(0.5 * self.df, shape) * 2.0
        return self.loc + self.scale * (z * (v / self.df).rsqrt())

    def log_prob(self, value) -> Tensor:
        value = self._validate_sample(value)
        df = self.df
        y = (value - self.loc) / self.scale
        z = (self.scale.log() + 0.5 * df.log() + 0.5 * math.log(math.pi)
             + special.gammaln(0.5 * df) - special.gammaln(0.5 * (df + 1.0)))
        return -0.5 * (df + 1.0) * (y ** 2 / df).log1p() - z

    def entropy(self) -> Tensor:
        df = self.df
        lbeta = (special.gammaln(0.5 * df) + math.lgamma(0.5)
                 - special.gammaln(0.5 * (df + 1)))
        return (self.scale.log()
                + 0.5 * (df + 1) * (special.digamma(0.5 * (df + 1)) - special.digamma(0.5 * df))
                + 0.5 * df.log() + lbeta)

