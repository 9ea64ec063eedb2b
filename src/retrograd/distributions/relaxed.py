"""Continuous relaxations on [0, 1] and the simplex: ContinuousBernoulli, and the
Gumbel-softmax (concrete) families LogitRelaxedBernoulli / RelaxedBernoulli and
ExpRelaxedCategorical / RelaxedOneHotCategorical, all reparameterisable."""

from __future__ import annotations

import math

import numpy as np

from ..api.activations import softplus
from ..api.elementwise import where
from ..api.reductions import logsumexp
from ..tensor import Tensor
from . import distribution as C
from .composite import TransformedDistribution
from .continuous import _draw
from .counts import _binary
from .discrete import Categorical, _clamp_probs
from .distribution import Distribution, broadcast_all
from .exp_family import ExponentialFamily
from .transforms import ExpTransform, SigmoidTransform


def _logits_of(p: Tensor) -> Tensor:
    p = _clamp_probs(p)
    return p.log() - (-p).log1p()


def _uniforms(shape: tuple, dtype) -> Tensor:
    eps = float(np.finfo(dtype).eps)
    return _draw(lambda g, s: g.random(s), shape, dtype).clamp(eps, 1 - eps)


class ContinuousBernoulli(ExponentialFamily):
    """The continuous Bernoulli distribution on [0, 1] (Loaiza-Ganem and Cunningham),
    from `probs` or `logits`; near probs = 1/2 (inside `lims`) Taylor expansions, as in
    PyTorch."""

    @property
    def param_shape(self) -> tuple:
        return self._batch_shape

    arg_constraints = {"probs": C.unit_interval, "logits": C.real}
    support = C.unit_interval
    has_rsample = True

    def __init__(self, probs=None, logits=None, lims=(0.499, 0.501),
                 validate_args: bool | None = None):
        _, param = _binary(self, probs, logits)
        self._lims = tuple(lims)
        super().__init__(param.shape, validate_args=validate_args)
        if self.__dict__["probs"] is None:
            self.probs = _clamp_probs(self.logits.sigmoid())
        else:
            self.probs = _clamp_probs(self.probs)
            self.logits = _logits_of(self.probs)

    def _outside(self) -> Tensor:
        return (self.probs <= self._lims[0]) | (self.probs > self._lims[1])

    def _cut_probs(self) -> Tensor:
        return where(self._outside(), self.probs, self._lims[0])

    def _log_norm(self) -> Tensor:
        cut = self._cut_probs()
        below = where(cut <= 0.5, cut, 0.0)
        above = where(cut >= 0.5, cut, 1.0)
        log_norm = ((-cut).log1p() - cut.log()).abs().log() - where(
            cut <= 0.5, (-2.0 * below).log1p(), (2.0 * above - 1.0).log())
        x = (self.probs - 0.5) ** 2
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x
        return where(self._outside(), log_norm, taylor)

    @property
    def mean(self) -> Tensor:
        cut = self._cut_probs()
        mus = cut / (2.0 * cut - 1.0) + 1.0 / ((-cut).log1p() - cut.log())
        x = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * x ** 2) * x
        return where(self._outside(), mus, taylor)

    @property
    def variance(self) -> Tensor:
        cut = self._cut_probs()
        v = cut * (cut - 1.0) / (1.0 - 2.0 * cut) ** 2 \
            + 1.0 / ((-cut).log1p() - cut.log()) ** 2
        x = (self.probs - 0.5) ** 2
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x
        return where(self._outside(), v, taylor)

    def rsample(self, sample_shape=()) -> Tensor:
        u = _draw(lambda g, s: g.random(s), self._extended_shape(sample_shape),
                  self.probs.data.dtype)
        return self.icdf(u)

    def log_prob(self, value) -> Tensor:
        value = self._validate_sample(value)
        return value * self.logits - softplus(self.logits) + self._log_norm()

    def cdf(self, value) -> Tensor:
        value = self._validate_sample(value)
        cut = self._cut_probs()
        cdfs = (cut ** value * (1.0 - cut) ** (1.0 - value) + cut - 1.0) / (2.0 * cut - 1.0)
        unbounded = where(self._outside(), cdfs, value)
        return where(value <= 0.0, 0.0, where(value >= 1.0, 1.0, unbounded))

    def icdf(self, value) -> Tensor:
        cut = self._cut_probs()
        inner = (((-cut) + value * (2.0 * cut - 1.0)).log1p() - (-cut).log1p()) \
            / (cut.log() - (-cut).log1p())
        return where(self._outside(), inner, value)

    def entropy(self) -> Tensor:
        log0 = (-self.probs).log1p()
        log1 = self.probs.log()
        return self.mean * (log0 - log1) - self._log_norm() - log0

    def expand(self, batch_shape, _instance=None):
        batch_shape = tuple(batch_shape)
        return ContinuousBernoulli(logits=self.logits.expand(*batch_shape), lims=self._lims,
                                   validate_args=False)


class LogitRelaxedBernoulli(Distribution):
    """The logit of a RelaxedBernoulli: (logit(u) + logits) / temperature."""

    arg_constraints = {"probs": C.unit_interval, "logits": C.real}
    support = C.real
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None,
                 validate_args: bool | None = None):
        (temperature,), param = _binary(self, probs, logits, temperature)
        self.temperature = temperature
        super().__init__(param.shape, validate_args=validate_args)
        if self.__dict__["probs"] is None:
            self.probs = self.logits.sigmoid()
        else:
            self.logits = _logits_of(self.probs)

    def rsample(self, sample_shape=()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        p = _clamp_probs(self.probs)
        u = _uniforms(shape, p.data.dtype)
        return (u.log() - (-u).log1p() + p.log() - (-p).log1p()) / self.temperature

    def log_prob(self, value) -> Tensor:
        value = self._validate_sample(value)
        diff = self.logits - value * self.temperature
        return self.temperature.log() + diff - 2 * diff.exp().log1p()


class RelaxedBernoulli(TransformedDistribution):
    """sigmoid of a LogitRelaxedBernoulli: a reparameterisable relaxation of Bernoulli on
    (0, 1) at `temperature`."""

    arg_constraints = {"probs": C.unit_interval, "logits": C.real}
    support = C.unit_interval
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None,
                 validate_args: bool | None = None):
        base = LogitRelaxedBernoulli(temperature, probs, logits, validate_args=validate_args)
        super().__init__(base, SigmoidTransform(), validate_args=validate_args)

    @property
    def temperature(self) -> Tensor:
        return self.base_dist.temperature

    @property
    def probs(self) -> Tensor:
        return self.base_dist.probs

    @property
    def logits(self) -> Tensor:
        return self.base_dist.logits


class ExpRelaxedCategorical(Distribution):
    """The log of a RelaxedOneHotCategorical draw (on log-simplex vectors)."""

    arg_constraints = {"probs": C.simplex, "logits": C.real_vector}
    support = C.real_vector
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None,
                 validate_args: bool | None = None):
        self._categorical = Categorical(probs, logits, validate_args=validate_args)
        (self.temperature,) = broadcast_all(temperature)
        shape = self._categorical.param_shape
        super().__init__(shape[:-1], shape[-1:], validate_args=validate_args)

    @property
    def probs(self) -> Tensor:
        return self._categorical.probs

    @property
    def logits(self) -> Tensor:
        return self._categorical.logits

    def rsample(self, sample_shape=()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        u = _uniforms(shape, self.logits.data.dtype)
        gumbels = -((-(u.log())).log())
        scores = (self.logits + gumbels) / self.temperature
        return scores - logsumexp(scores, -1, keepdim=True)

    def log_prob(self, value) -> Tensor:
        value = self._validate_sample(value)
        k = self._event_shape[0]
        log_scale = math.lgamma(k) + (k - 1) * self.temperature.log()
        score = self.logits - value * self.temperature
        score = (score - logsumexp(score, -1, keepdim=True)).sum(-1)
        return score + log_scale

    def expand(self, batch_shape, _instance=None):
        batch_shape = tuple(batch_shape)
        return ExpRelaxedCategorical(
            self.temperature, logits=self.logits.expand(*(batch_shape + self._event_shape)),
            validate_args=False)


class RelaxedOneHotCategorical(TransformedDistribution):
    """exp of an ExpRelaxedCategorical: the Gumbel-softmax (concrete) relaxation of
    OneHotCategorical on the simplex at `temperature`."""

    arg_constraints = {"probs": C.simplex, "logits": C.real_vector}
    support = C.simplex
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None,
                 validate_args: bool | None = None):
        base = ExpRelaxedCategorical(temperature, probs, logits, validate_args=validate_args)
        super().__init__(base, ExpTransform(), validate_args=validate_args)

    @property
    def temperature(self) -> Tensor:
        return self.base_dist.temperature

    @property
    def probs(self) -> Tensor:
        return self.base_dist.probs

    @property
    def logits(self) -> Tensor:
        return self.base_dist.logits
