"""More univariate continuous distributions, all reparameterisable: Cauchy, HalfCauchy,
HalfNormal, LogNormal, Gumbel, Weibull, Pareto (closed forms of what PyTorch builds as
transformed distributions), and InverseGamma, FisherSnedecor, Kumaraswamy (the first two
through the gamma draws of `gamma_draws.py`)."""

from __future__ import annotations

import math

import numpy as np

from .. import special
from ..api._args import _t
from ..api.elementwise import where
from ..tensor import Tensor
from . import distribution as C
from .composite import TransformedDistribution
from .continuous import _HALF_LOG_2PI, Normal, _draw, _LocScale
from .distribution import Distribution, broadcast_all
from .gamma_draws import standard_gamma, tiny
from .transforms import AbsTransform, ExpTransform

_EULER = 0.57721566490153286061
_LOG2 = math.log(2.0)


def _uniform_open(shape: tuple, dtype) -> Tensor:
    """Uniform draws in [tiny, 1 - eps], as PyTorch's transformed uniforms."""
    fi = np.finfo(dtype)
    return _draw(lambda g, s: g.uniform(fi.tiny, 1 - fi.eps, s), shape, dtype)


def _cdf_value(d: Distribution, value) -> Tensor:
    """The argument of LogNormal's and Weibull's cdf, checked as torch checks it: in the base
    distribution's space (torch builds both as transformed distributions), so 0, outside
    the positive support, is a valid point of the cdf (which is 0 there)."""
    value = _t(value)
    if d._validate_args:
        d._validate_sample(where(value == 0, 1.0, value).detach())
    return value


def _neg_inf_below(value: Tensor, bound, lp: Tensor) -> Tensor:
    return where(value >= bound, lp, -np.inf)


class Cauchy(_LocScale):
    """The Cauchy (Lorentz) distribution with location `loc` and half-width `scale`."""

    @property
    def mean(self) -> Tensor:
        return (self.loc * np.nan).detach()  # a constant, as torch's (no nan gradient)

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        return (self.loc * 0 + np.inf).detach()

    def rsample(self, sample_shape=()) -> Tensor:
        eps = _draw(lambda g, s: g.standard_cauchy(s), self._extended_shape(sample_shape),
                    self.loc.data.dtype)
        return self.loc + eps * self.scale

    def log_prob(self, value) -> Tensor:
        value = self._validate_sample(value)
        return (-math.log(math.pi) - self.scale.log()
                - (((value - self.loc) / self.scale) ** 2).log1p())

    def cdf(self, value) -> Tensor:
        value = self._validate_sample(value)
        return ((value - self.loc) / self.scale).atan() / math.pi + 0.5

    def icdf(self, value) -> Tensor:
        return (math.pi * (_t(value) - 0.5)).tan() * self.scale + self.loc

    def entropy(self) -> Tensor:
        return math.log(4 * math.pi) + self.scale.log()


class HalfCauchy(TransformedDistribution):
    """|X| for X ~ Cauchy(0, scale)."""

    arg_constraints = {"scale": C.positive}
    support = C.nonnegative
    has_rsample = True

    def __init__(self, scale, validate_args: bool | None = None):
        (self.scale,) = broadcast_all(scale)
        super().__init__(Cauchy(0.0 * self.scale.detach(), self.scale, validate_args=False),
                         AbsTransform(), validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        return (self.scale * 0 + np.inf).detach()  # constants, as torch's

    @property
    def mode(self) -> Tensor:
        return (self.scale * 0).detach()

    @property
    def variance(self) -> Tensor:
        return (self.scale * 0 + np.inf).detach()

    def rsample(self, sample_shape=()) -> Tensor:
        return self.base_dist.rsample(sample_shape).abs()

    def log_prob(self, value) -> Tensor:
        value = self._as_dtype_of(self._validate_sample(value), self.base_dist.scale)
        lp = self.base_dist.log_prob(value) + _LOG2
        return _neg_inf_below(value, 0, lp)

    def cdf(self, value) -> Tensor:
        value = self._validate_sample(value)
        return 2 * self.base_dist.cdf(value) - 1

    def icdf(self, value) -> Tensor:
        return self.base_dist.icdf((_t(value) + 1) / 2)

    def entropy(self) -> Tensor:
        return self.base_dist.entropy() - _LOG2

    def expand(self, batch_shape, _instance=None):
        return HalfCauchy(self.scale.expand(*batch_shape), validate_args=False)


class HalfNormal(TransformedDistribution):
    """|X| for X ~ Normal(0, scale)."""

    arg_constraints = {"scale": C.positive}
    support = C.nonnegative
    has_rsample = True

    def __init__(self, scale, validate_args: bool | None = None):
        (self.scale,) = broadcast_all(scale)
        super().__init__(Normal(0.0 * self.scale.detach(), self.scale, validate_args=False),
                         AbsTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return HalfNormal(self.scale.expand(*batch_shape), validate_args=False)

    @property
    def mean(self) -> Tensor:
        return self.scale * math.sqrt(2 / math.pi)

    @property
    def mode(self) -> Tensor:
        return self.scale * 0

    @property
    def variance(self) -> Tensor:
        return self.scale ** 2 * (1 - 2 / math.pi)

    def rsample(self, sample_shape=()) -> Tensor:
        eps = _draw(lambda g, s: g.standard_normal(s), self._extended_shape(sample_shape),
                    self.scale.data.dtype)
        return (eps * self.scale).abs()

    def log_prob(self, value) -> Tensor:
        value = self._validate_sample(value)
        lp = -(value ** 2) / (2 * self.scale ** 2) - self.scale.log() - _HALF_LOG_2PI + _LOG2
        return _neg_inf_below(value, 0, lp)

    def cdf(self, value) -> Tensor:
        value = self._validate_sample(value)
        return special.erf(value / (self.scale * math.sqrt(2)))

    def icdf(self, value) -> Tensor:
        return self.scale * special.erfinv(_t(value)) * math.sqrt(2)

    def entropy(self) -> Tensor:
        return 0.5 + _HALF_LOG_2PI + self.scale.log() - _LOG2


class LogNormal(TransformedDistribution):
    """exp(X) for X ~ Normal(loc, scale)."""

    arg_constraints = {"loc": C.real, "scale": C.positive}
    support = C.positive
    has_rsample = True

    def __init__(self, loc, scale, validate_args: bool | None = None):
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(Normal(self.loc, self.scale, validate_args=False), ExpTransform(),
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return LogNormal(self.loc.expand(*batch_shape), self.scale.expand(*batch_shape),
                         validate_args=False)

    @property
    def mean(self) -> Tensor:
        return (self.loc + self.scale ** 2 / 2).exp()

    @property
    def mode(self) -> Tensor:
        return (self.loc - self.scale ** 2).exp()

    @property
    def variance(self) -> Tensor:
        s2 = self.scale ** 2
        return s2.expm1() * (2 * self.loc + s2).exp()

    def rsample(self, sample_shape=()) -> Tensor:
        eps = _draw(lambda g, s: g.standard_normal(s), self._extended_shape(sample_shape),
                    self.loc.data.dtype)
        return (self.loc + eps * self.scale).exp()

    def log_prob(self, value) -> Tensor:
        value = self._validate_sample(value)
        y = value.log()
        return -((y - self.loc) ** 2) / (2 * self.scale ** 2) - self.scale.log() \
            - _HALF_LOG_2PI - y

    def cdf(self, value) -> Tensor:
        value = _cdf_value(self, value)
        return 0.5 * (1 + special.erf((value.log() - self.loc) / (self.scale * math.sqrt(2))))

    def icdf(self, value) -> Tensor:
        return (self.loc + self.scale * special.erfinv(2 * _t(value) - 1)
                * math.sqrt(2)).exp()

    def entropy(self) -> Tensor:
        return 0.5 + _HALF_LOG_2PI + self.scale.log() + self.loc


class Gumbel(_LocScale):
    """The Gumbel (type-I extreme value) distribution with location and scale."""

    @property
    def mean(self) -> Tensor:
        return self.loc + self.scale * _EULER

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def stddev(self) -> Tensor:
        return (math.pi / math.sqrt(6)) * self.scale

    @property
    def variance(self) -> Tensor:
        return self.stddev ** 2

    def rsample(self, sample_shape=()) -> Tensor:
        u = _uniform_open(self._extended_shape(sample_shape), self.loc.data.dtype)
        return self.loc - self.scale * (-u.log()).log()

    def log_prob(self, value) -> Tensor:
        value = self._validate_sample(value)
        y = (self.loc - value) / self.scale
        return (y - y.exp()) - self.scale.log()

    def cdf(self, value) -> Tensor:
        value = self._validate_sample(value)
        return (-(-(value - self.loc) / self.scale).exp()).exp()

    def icdf(self, value) -> Tensor:
        return self.loc - self.scale * (-_t(value).log()).log()

    def entropy(self) -> Tensor:
        return self.scale.log() + (1 + _EULER)


class Weibull(Distribution):
    """The Weibull distribution with `scale` and shape `concentration` (PyTorch's order)."""

    arg_constraints = {"scale": C.positive, "concentration": C.positive}
    support = C.positive
    has_rsample = True

    def __init__(self, scale, concentration, validate_args: bool | None = None):
        self.scale, self.concentration = broadcast_all(scale, concentration)
        super().__init__(self.scale.shape, validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        return self.scale * special.gammaln(1 + self.concentration.reciprocal()).exp()

    @property
    def mode(self) -> Tensor:
        k = self.concentration
        return self.scale * ((k - 1) / k) ** k.reciprocal()

    @property
    def variance(self) -> Tensor:
        k = self.concentration
        return self.scale ** 2 * (special.gammaln(1 + 2 / k).exp()
                                  - special.gammaln(1 + k.reciprocal()).exp() ** 2)

    def rsample(self, sample_shape=()) -> Tensor:
        e = _draw(lambda g, s: g.standard_exponential(s), self._extended_shape(sample_shape),
                  self.scale.data.dtype)
        return self.scale * e ** self.concentration.reciprocal()

    def log_prob(self, value) -> Tensor:
        value = self._validate_sample(value)
        k = self.concentration
        z = value / self.scale
        return k.log() - self.scale.log() + (k - 1) * z.log() - z ** k

    def cdf(self, value) -> Tensor:
        value = _cdf_value(self, value)
        return -(-((value / self.scale) ** self.concentration)).expm1()

    def icdf(self, value) -> Tensor:
        return self.scale * (-(-_t(value)).log1p()) ** self.concentration.reciprocal()

    def entropy(self) -> Tensor:
        k = self.concentration
        return _EULER * (1 - k.reciprocal()) + (self.scale / k).log() + 1


class Pareto(Distribution):
    """The Pareto (type I) distribution with minimum `scale` and tail index `alpha`."""

    arg_constraints = {"alpha": C.positive, "scale": C.positive}

    @C.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        return C.greater_than_eq(self.scale)
    has_rsample = True

    def __init__(self, scale, alpha, validate_args: bool | None = None):
        self.scale, self.alpha = broadcast_all(scale, alpha)
        super().__init__(self.scale.shape, validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        a = self.alpha.clamp(min=1)
        return a * self.scale / (a - 1)

    @property
    def mode(self) -> Tensor:
        return self.scale

    @property
    def variance(self) -> Tensor:
        a = self.alpha.clamp(min=2)
        return self.scale ** 2 * a / ((a - 1) ** 2 * (a - 2))

    def rsample(self, sample_shape=()) -> Tensor:
        e = _draw(lambda g, s: g.standard_exponential(s), self._extended_shape(sample_shape),
                  self.scale.data.dtype)
        return self.scale * (e / self.alpha).exp()

    def log_prob(self, value) -> Tensor:
        value = self._validate_sample(value)
        return self.alpha.log() + self.alpha * self.scale.log() - (self.alpha + 1) * value.log()

    def cdf(self, value) -> Tensor:
        value = self._validate_sample(value)
        return 1 - (self.scale / value) ** self.alpha

    def icdf(self, value) -> Tensor:
        return self.scale * (-(-_t(value)).log1p() / self.alpha).exp()

    def entropy(self) -> Tensor:
        return (self.scale / self.alpha).log() + (1 + self.alpha.reciprocal())


class InverseGamma(Distribution):
    """1 / X for X ~ Gamma(concentration, rate); `rsample` through the gamma draws."""

    arg_constraints = {"concentration": C.positive, "rate": C.positive}
    support = C.positive
    has_rsample = True

    def __init__(self, concentration, rate, validate_args: bool | None = None):
        self.concentration, self.rate = broadcast_all(concentration, rate)
        super().__init__(self.concentration.shape, validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        a = self.concentration
        return where(a > 1, self.rate / (a - 1), np.inf)

    @property
    def mode(self) -> Tensor:
        return self.rate / (self.concentration + 1)

    @property
    def variance(self) -> Tensor:
        a = self.concentration
        return where(a > 2, self.rate ** 2 / ((a - 1) ** 2 * (a - 2)), np.inf)

    def rsample(self, sample_shape=()) -> Tensor:
        x = standard_gamma(self.concentration, self._extended_shape(sample_shape))
        return (x / self.rate).clamp(min=tiny(x)).reciprocal()

    def log_prob(self, value) -> Tensor:
        value = self._validate_sample(value)
        a, b = self.concentration, self.rate
        return (special.xlogy(a, b) - (a + 1) * value.log() - b / value
                - special.gammaln(a))

    def cdf(self, value) -> Tensor:
        value = self._validate_sample(value)
        return 1 - special.gammainc(self.concentration, self.rate / value)

    def entropy(self) -> Tensor:
        a = self.concentration
        return a + self.rate.log() + special.gammaln(a) - (1 + a) * special.digamma(a)


class FisherSnedecor(Distribution):
    """The F distribution with `df1` and `df2` degrees of freedom; `rsample` is a ratio of
    gamma draws."""

    arg_constraints = {"df1": C.positive, "df2": C.positive}
    support = C.positive
    has_rsample = True

    def __init__(self, df1, df2, validate_args: bool | None = None):
        self.df1, self.df2 = broadcast_all(df1, df2)
        super().__init__(self.df1.shape, validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        df2 = self.df2.clone()
        df2 = where(df2 <= 2, np.nan, df2)
        return df2 / (df2 - 2)

    @property
    def mode(self) -> Tensor:
        mode = (self.df1 - 2) / self.df1 * self.df2 / (self.df2 + 2)
        return where(self.df1 <= 2, np.nan, mode)

    @property
    def variance(self) -> Tensor:
        df2 = where(self.df2 <= 4, np.nan, self.df2)
        return 2 * df2 ** 2 * (self.df1 + df2 - 2) / (self.df1 * (df2 - 2) ** 2 * (df2 - 4))

    def rsample(self, sample_shape=()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        x1 = standard_gamma(0.5 * self.df1, shape) / self.df1
        x2 = standard_gamma(0.5 * self.df2, shape) / self.df2
        t = float(np.finfo(x1.data.dtype).tiny)
        return (x1 / x2).clamp(min=t)

    def log_prob(self, value) -> Tensor:
        value = self._validate_sample(value)
        ct1 = self.df1 * 0.5
        ct2 = self.df2 * 0.5
        ct3 = self.df1 / self.df2
        t1 = special.gammaln(ct1 + ct2) - special.gammaln(ct1) - special.gammaln(ct2)
        t2 = ct1 * ct3.log() + (ct1 - 1) * value.log()
        t3 = (ct1 + ct2) * (ct3 * value).log1p()
        return t1 + t2 - t3


class Kumaraswamy(Distribution):
    """The Kumaraswamy distribution on (0, 1) with concentrations a = `concentration1`
    and b = `concentration0`; `rsample` by inverting its cdf."""

    arg_constraints = {"concentration1": C.positive, "concentration0": C.positive}
    support = C.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args: bool | None = None):
        self.concentration1, self.concentration0 = broadcast_all(concentration1,
                                                                 concentration0)
        super().__init__(self.concentration1.shape, validate_args=validate_args)

    def _moment(self, n: int) -> Tensor:
        a, b = self.concentration1, self.concentration0
        arg1 = 1 + n / a
        lg = special.gammaln(arg1) + special.gammaln(b) - special.gammaln(arg1 + b)
        return b * lg.exp()

    @property
    def mean(self) -> Tensor:
        return self._moment(1)

    @property
    def mode(self) -> Tensor:
        a, b = self.concentration1, self.concentration0
        log_mode = ((a - 1) / (a * b - 1)).log() / a
        return where((a < 1) | (b < 1), np.nan, log_mode.exp())

    @property
    def variance(self) -> Tensor:
        return self._moment(2) - self._moment(1) ** 2

    def rsample(self, sample_shape=()) -> Tensor:
        u = _uniform_open(self._extended_shape(sample_shape), self.concentration1.data.dtype)
        a, b = self.concentration1, self.concentration0
        x = -(u.log() / b).expm1()  # 1 - u ** (1 / b)
        return (x.log() / a).exp().clamp(tiny(x), 1 - float(np.finfo(x.data.dtype).eps))

    def log_prob(self, value) -> Tensor:
        value = self._validate_sample(value)
        a, b = self.concentration1, self.concentration0
        return (a.log() + b.log() + (a - 1) * value.log()
                + (b - 1) * (-(value ** a)).log1p())

    def cdf(self, value) -> Tensor:
        """1 - (1 - x^a)^b (torch computes it through its transforms: the same function)."""
        value = self._validate_sample(value)
        a, b = self.concentration1, self.concentration0
        return -(b * (-(value ** a)).log1p()).expm1()

    def icdf(self, value) -> Tensor:
        """(1 - (1 - p)^(1/b))^(1/a)."""
        a, b = self.concentration1, self.concentration0
        return (-((-_t(value)).log1p() / b).expm1()) ** a.reciprocal()

    def entropy(self) -> Tensor:
        a, b = self.concentration1, self.concentration0
        t1 = 1 - a.reciprocal()
        t0 = 1 - b.reciprocal()
        h_b = special.digamma(b + 1) + _EULER
        return t0 + t1 * h_b - a.log() - b.log()
