"""Counting distributions: Geometric, Binomial, NegativeBinomial (each from `probs` or
`logits`, exactly one), Multinomial and OneHotCategorical (over the last dimension).
Draws come from retrograd's generator (`sample` only; `rsample` raises, as in PyTorch);
`log_prob`, `entropy` and the moments are differentiable in the parameters."""

from __future__ import annotations

import math

import numpy as np

from .. import special
from ..api.activations import logsigmoid, softplus
from ..api.elementwise import minimum, where
from ..creation import generator
from ..primitive import ArgumentError
from ..tensor import Tensor
from . import distribution as C
from .discrete import Categorical, _clamp_probs, _one_of
from .distribution import Distribution, _shape, broadcast_all, refuse_no_samples


def _binary(dist, probs, logits, *others) -> tuple:
    """Set `dist.probs` / `dist.logits` (the given one broadcast with `others`); returns
    the broadcast `others` and the given parameter."""
    _one_of(probs, logits, type(dist).__name__)
    given = probs if probs is not None else logits
    out = broadcast_all(*others, given)
    param = out[-1]
    if probs is not None:
        dist.probs = param
        dist.__dict__["logits"] = None
    else:
        dist.logits = param
        dist.__dict__["probs"] = None
    return out[:-1], param


def _fill_other(dist) -> None:
    """After validation: the parameter not given, from the one given (as PyTorch's
    probs_to_logits / logits_to_probs with is_binary=True)."""
    if dist.__dict__["probs"] is None:
        dist.probs = dist.logits.sigmoid()
    else:
        p = _clamp_probs(dist.probs)
        dist.logits = p.log() - (-p).log1p()


def _as_float(value: Tensor, dtype) -> Tensor:
    return value if value.data.dtype == dtype else value.to(dtype)


_positive_integer_param = C.nonnegative_integer


class Geometric(Distribution):
    """The number of failures before the first success of Bernoulli(`probs`) trials."""

    arg_constraints = {"probs": C.unit_interval, "logits": C.real}
    support = C.nonnegative_integer

    def __init__(self, probs=None, logits=None, validate_args: bool | None = None):
        _, param = _binary(self, probs, logits)
        super().__init__(param.shape, validate_args=validate_args)
        if self._validate_args and probs is not None and not np.all(self.probs.data > 0):
            raise ArgumentError(f"Expected parameter probs (Tensor of shape {param.shape}) of "
                                "distribution Geometric to be positive but found invalid values")
        _fill_other(self)

    @property
    def mean(self) -> Tensor:
        return 1.0 / self.probs - 1.0

    @property
    def mode(self) -> Tensor:
        return self.probs * 0

    @property
    def variance(self) -> Tensor:
        return (1.0 / self.probs - 1.0) / self.probs

    def sample(self, sample_shape=()) -> Tensor:
        dt = self.probs.data.dtype
        shape = self._extended_shape(sample_shape)
        u = np.maximum(generator().random(shape), np.finfo(dt).tiny).astype(dt)
        with np.errstate(divide="ignore", invalid="ignore"):
            k = np.floor(np.log(u) / np.log1p(-np.broadcast_to(self.probs.data, shape)))
        return Tensor(k.astype(dt))

    def log_prob(self, value) -> Tensor:
        value = _as_float(self._validate_sample(value), self.probs.data.dtype)
        p = where((self.probs == 1) & (value == 0), 0.0, self.probs)
        return value * (-p).log1p() + self.probs.log()

    def entropy(self) -> Tensor:
        return (softplus(self.logits) - self.logits * self.probs) / self.probs


class Binomial(Distribution):
    """The number of successes in `total_count` Bernoulli(`probs`) trials."""

    has_enumerate_support = True

    @property
    def param_shape(self) -> tuple:
        return self._batch_shape

    arg_constraints = {"total_count": _positive_integer_param, "probs": C.unit_interval,
                       "logits": C.real}

    @C.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return C.integer_interval(0, self.total_count)

    def __init__(self, total_count=1, probs=None, logits=None,
                 validate_args: bool | None = None):
        (self.total_count,), param = _binary(self, probs, logits, total_count)
        super().__init__(param.shape, validate_args=validate_args)
        _fill_other(self)

    @property
    def mean(self) -> Tensor:
        return self.total_count * self.probs

    @property
    def mode(self) -> Tensor:
        return minimum(((self.total_count + 1) * self.probs).floor(), self.total_count)

    @property
    def variance(self) -> Tensor:
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape=()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        n = np.broadcast_to(self.total_count.data, shape).astype(np.int64)
        k = generator().binomial(n, np.broadcast_to(self.probs.data, shape))
        return Tensor(np.asarray(k, dtype=self.probs.data.dtype))

    def log_prob(self, value) -> Tensor:
        value = _as_float(self._validate_sample(value), self.logits.data.dtype)
        n, lg = self.total_count, self.logits
        clamp0 = (lg.clamp(min=0) + lg - lg.clamp(max=0)) / 2
        normalize = n * clamp0 + n * (-lg.abs()).exp().log1p() - special.gammaln(n + 1)
        return (value * lg - special.gammaln(value + 1) - special.gammaln(n - value + 1)
                - normalize)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """0, ..., total_count along a new leading dimension (one total_count only)."""
        total = int(self.total_count.data.max()) if self.total_count.numel() else 0
        if self.total_count.numel() and self.total_count.data.min() != total:
            raise NotImplementedError("Binomial: inhomogeneous total_count is not supported "
                                      "by enumerate_support / entropy")
        values = Tensor(np.arange(1 + total, dtype=self.probs.data.dtype))
        values = values.reshape((-1,) + (1,) * len(self._batch_shape))
        return values.expand(*((1 + total,) + self._batch_shape)) if expand else values

    def entropy(self) -> Tensor:
        lp = self.log_prob(self.enumerate_support(False))
        return -(lp.exp() * lp).sum(0)


class NegativeBinomial(Distribution):
    """The number of successes before `total_count` failures of Bernoulli(`probs`)
    trials (`probs`: the probability of success)."""

    @property
    def param_shape(self) -> tuple:
        return self._batch_shape

    arg_constraints = {"total_count": C.nonnegative,
                       "probs": C.half_open_interval(0.0, 1.0),
                       "logits": C.real}
    support = C.nonnegative_integer

    def __init__(self, total_count, probs=None, logits=None,
                 validate_args: bool | None = None):
        (self.total_count,), param = _binary(self, probs, logits, total_count)
        super().__init__(param.shape, validate_args=validate_args)
        _fill_other(self)

    @property
    def mean(self) -> Tensor:
        return self.total_count * self.logits.exp()

    @property
    def mode(self) -> Tensor:
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0)

    @property
    def variance(self) -> Tensor:
        return self.mean / (-self.logits).sigmoid()

    def sample(self, sample_shape=()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        g = generator()
        with np.errstate(over="ignore"):
            rate = g.gamma(np.broadcast_to(self.total_count.data, shape),
                           np.broadcast_to(np.exp(self.logits.data), shape))
        return Tensor(np.asarray(g.poisson(rate), dtype=self.probs.data.dtype))

    def log_prob(self, value) -> Tensor:
        value = _as_float(self._validate_sample(value), self.logits.data.dtype)
        r = self.total_count
        unnorm = r * logsigmoid(-self.logits) + value * logsigmoid(self.logits)
        norm = -special.gammaln(r + value) + special.gammaln(1.0 + value) \
            + special.gammaln(r)
        norm = where(r + value == 0.0, 0.0, norm)
        return unnorm - norm


class Multinomial(Distribution):
    """Counts of `total_count` draws from a Categorical(`probs` or `logits`) over the last
    dimension (event shape: the categories)."""

    arg_constraints = {"probs": C.simplex, "logits": C.real_vector}

    @C.dependent_property(is_discrete=True, event_dim=1)
    def support(self):
        return C.multinomial(self.total_count)

    def __init__(self, total_count: int = 1, probs=None, logits=None,
                 validate_args: bool | None = None):
        if not isinstance(total_count, (int, np.integer)):
            raise NotImplementedError("Multinomial: inhomogeneous total_count is not "
                                      f"supported (got {type(total_count).__name__})")
        self.total_count = int(total_count)
        if self.total_count < 0:  # torch's inner Binomial refuses it, whatever validate_args
            raise ArgumentError(f"Expected parameter total_count ({self.total_count}) of "
                                "distribution Multinomial to satisfy the constraint "
                                "IntegerGreaterThan(lower_bound=0)")
        self._categorical = Categorical(probs=probs, logits=logits,
                                        validate_args=validate_args)
        self._binomial = Binomial(total_count=self.total_count, probs=self._categorical.probs,
                                  validate_args=False)
        shape = self._categorical.param_shape
        super().__init__(shape[:-1], shape[-1:], validate_args=validate_args)

    @property
    def probs(self) -> Tensor:
        return self._categorical.probs

    @property
    def logits(self) -> Tensor:
        return self._categorical.logits

    @property
    def param_shape(self) -> tuple:
        return self._categorical.param_shape

    @property
    def mean(self) -> Tensor:
        return self.probs * self.total_count

    @property
    def variance(self) -> Tensor:
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape=()) -> Tensor:
        refuse_no_samples(int(self.total_count) * int(np.prod(_shape(sample_shape))))
        shape = self._extended_shape(sample_shape)
        p = np.broadcast_to(self.probs.data, shape).astype(np.float64)
        p = p / p.sum(-1, keepdims=True)
        counts = generator().multinomial(self.total_count, p)
        return Tensor(np.asarray(counts, dtype=self.probs.data.dtype))

    def log_prob(self, value) -> Tensor:
        value = _as_float(self._validate_sample(value), self.logits.data.dtype)
        lg = self.logits
        lg = where((value == 0) & (lg == -np.inf), 0.0, lg)
        return (special.gammaln(value.sum(-1) + 1) - special.gammaln(value + 1).sum(-1)
                + (lg * value).sum(-1))

    def entropy(self) -> Tensor:
        n = float(self.total_count)
        term1 = n * self._categorical.entropy() - math.lgamma(n + 1)
        support = self._binomial.enumerate_support(expand=False)[1:]
        probs = self._binomial.log_prob(support).exp()
        weights = special.gammaln(support + 1)
        return term1 + (probs * weights).sum((0, -1))

    def expand(self, batch_shape, _instance=None):
        batch_shape = tuple(batch_shape)
        return Multinomial(self.total_count,
                           probs=self.probs.expand(*(batch_shape + self._event_shape)),
                           validate_args=False)


class OneHotCategorical(Distribution):
    """A Categorical(`probs` or `logits`) whose draws are one-hot vectors over the last
    dimension."""

    has_enumerate_support = True

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """The K one-hot vectors along a new leading dimension."""
        k = self._categorical._num_events
        values = Tensor(np.eye(k, dtype=self.probs.data.dtype)).reshape(
            (k,) + (1,) * len(self._batch_shape) + (k,))
        return values.expand(*((k,) + self._batch_shape + (k,))) if expand else values

    arg_constraints = {"probs": C.simplex, "logits": C.real_vector}
    support = C.one_hot

    def __init__(self, probs=None, logits=None, validate_args: bool | None = None):
        self._categorical = Categorical(probs=probs, logits=logits,
                                        validate_args=validate_args)
        shape = self._categorical.param_shape
        super().__init__(shape[:-1], shape[-1:], validate_args=validate_args)

    @property
    def probs(self) -> Tensor:
        return self._categorical.probs

    @property
    def logits(self) -> Tensor:
        return self._categorical.logits

    @property
    def param_shape(self) -> tuple:
        return self._categorical.param_shape

    @property
    def mean(self) -> Tensor:
        return self.probs

    @property
    def mode(self) -> Tensor:
        k = self._event_shape[0]
        idx = self.probs.data.argmax(-1)
        return Tensor((np.arange(k) == idx[..., None]).astype(self.probs.data.dtype))

    @property
    def variance(self) -> Tensor:
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape=()) -> Tensor:
        idx = self._categorical.sample(sample_shape).data
        k = self._event_shape[0]
        return Tensor((np.arange(k) == idx[..., None]).astype(self.probs.data.dtype))

    def log_prob(self, value) -> Tensor:
        value = self._validate_sample(value)
        return self._categorical.log_prob(value.argmax(-1))

    def entropy(self) -> Tensor:
        return self._categorical.entropy()

    def expand(self, batch_shape, _instance=None):
        batch_shape = tuple(batch_shape)
        return OneHotCategorical(probs=self.probs.expand(*(batch_shape + self._event_shape)),
                                 validate_args=False)
