"""Discrete distributions: Poisson, Bernoulli and Categorical (the last two from `probs`
or `logits`, exactly one of them, as in PyTorch)."""

from __future__ import annotations

import numpy as np

from .. import special
from ..api._args import _t
from ..api.activations import softplus
from ..api.indexing import take_along_dim
from ..api.reductions import logsumexp
from ..creation import generator
from ..primitive import ArgumentError
from ..tensor import Tensor
from . import distribution as C
from .distribution import Distribution, broadcast_all
from .exp_family import ExponentialFamily


def _one_of(probs, logits, name: str):
    if (probs is None) == (logits is None):
        raise ArgumentError(f"{name}: either `probs` or `logits` must be specified, but not both")


def _clamp_probs(p: Tensor) -> Tensor:
    eps = float(np.finfo(p.data.dtype).eps)
    return p.clamp(eps, 1 - eps)


class Poisson(ExponentialFamily):
    """The Poisson distribution with mean `rate`; differentiable in the rate."""

    @property
    def _natural_params(self) -> tuple:
        return (self.rate.log(),)

    def _log_normalizer(self, x):
        return x.exp()

    arg_constraints = {"rate": C.nonnegative}
    support = C.nonnegative_integer

    def __init__(self, rate, validate_args: bool | None = None):
        (self.rate,) = broadcast_all(rate)
        super().__init__(self.rate.shape, validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        return self.rate

    @property
    def mode(self) -> Tensor:
        return self.rate.floor()

    @property
    def variance(self) -> Tensor:
        return self.rate

    def sample(self, sample_shape=()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        k = generator().poisson(np.broadcast_to(self.rate.data, shape))
        return Tensor(k.astype(self.rate.data.dtype))

    def log_prob(self, value) -> Tensor:
        value = self._validate_sample(value)
        value = value if value.data.dtype.kind == "f" else value.to(self.rate.data.dtype)
        return special.xlogy(value, self.rate) - self.rate - special.gammaln(value + 1)


class Bernoulli(ExponentialFamily):
    """The Bernoulli distribution on {0, 1}, from `probs` (of 1) or `logits`."""

    @property
    def _natural_params(self) -> tuple:
        return ((self.probs / (1 - self.probs)).log(),)

    def _log_normalizer(self, x):
        return x.exp().log1p()

    _mean_carrier_measure = 0

    has_enumerate_support = True

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """0 and 1 along a new leading dimension (broadcast to the batch when `expand`)."""
        values = Tensor(np.arange(2, dtype=self.probs.data.dtype)).reshape(
            (-1,) + (1,) * len(self._batch_shape))
        return values.expand(*((2,) + self._batch_shape)) if expand else values

    @property
    def param_shape(self) -> tuple:
        return self._batch_shape

    arg_constraints = {"probs": C.unit_interval, "logits": C.real}
    support = C.boolean

    def __init__(self, probs=None, logits=None, validate_args: bool | None = None):
        _one_of(probs, logits, "Bernoulli")
        if probs is not None:
            (self.probs,) = broadcast_all(probs)
            self.__dict__["logits"] = None
            param = self.probs
        else:
            (self.logits,) = broadcast_all(logits)
            self.__dict__["probs"] = None
            param = self.logits
        self._param = param
        super().__init__(param.shape, validate_args=validate_args)
        if self.__dict__["probs"] is None:
            self.probs = self.logits.sigmoid()
        else:
            p = _clamp_probs(self.probs)
            self.logits = p.log() - (-p).log1p()

    @property
    def mean(self) -> Tensor:
        return self.probs

    @property
    def mode(self) -> Tensor:
        """1 where probs > 1/2, 0 below, NaN at 1/2 (no single mode), as PyTorch."""
        from ..api.elementwise import where
        p = self.probs
        return where(p == 0.5, float("nan"), (p >= 0.5).to(p.data.dtype))

    @property
    def variance(self) -> Tensor:
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape=()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        u = generator().random(shape)
        return Tensor((u < np.broadcast_to(self.probs.data, shape)).astype(
            self.probs.data.dtype))

    def log_prob(self, value) -> Tensor:
        value = self._validate_sample(value)
        value = value if value.data.dtype.kind == "f" else value.to(self.logits.data.dtype)
        return value * self.logits - softplus(self.logits)

    def entropy(self) -> Tensor:
        return softplus(self.logits) - self.probs * self.logits


class Categorical(Distribution):
    """A distribution over {0, ..., K - 1} from `probs` (normalised along the last
    dimension) or `logits` (unnormalised log-probabilities)."""

    has_enumerate_support = True

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """0, ..., K - 1 (int64, as torch) along a new leading dimension."""
        k = self._num_events
        values = Tensor(np.arange(k, dtype=np.int64)).reshape(
            (-1,) + (1,) * len(self._batch_shape))
        return values.expand(*((k,) + self._batch_shape)) if expand else values

    arg_constraints = {"probs": C.simplex, "logits": C.real_vector}

    @C.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return C.integer_interval(0, self._num_events - 1)

    def __init__(self, probs=None, logits=None, validate_args: bool | None = None):
        _one_of(probs, logits, "Categorical")
        if probs is not None:
            p = _t(probs)
            if p.ndim < 1:
                raise ArgumentError("Categorical: `probs` must have at least one dimension")
            (p,) = broadcast_all(p)
            self.probs = p / p.sum(-1, keepdim=True)
            self.__dict__["logits"] = None
            param = self.probs
        else:
            lg = _t(logits)
            if lg.ndim < 1:
                raise ArgumentError("Categorical: `logits` must have at least one dimension")
            (lg,) = broadcast_all(lg)
            self.logits = lg - logsumexp(lg, -1, keepdim=True)
            self.__dict__["probs"] = None
            param = self.logits
        self._num_events = param.shape[-1]
        super().__init__(param.shape[:-1], validate_args=validate_args)
        if self.__dict__["probs"] is None:
            self.probs = self.logits.softmax(-1)
        else:
            self.logits = _clamp_probs(self.probs).log()

    @property
    def param_shape(self) -> tuple:
        return self.probs.shape

    @property
    def mean(self) -> Tensor:
        return Tensor(np.full(self._batch_shape, np.nan, self.probs.data.dtype))

    @property
    def mode(self) -> Tensor:
        return self.probs.argmax(-1)

    @property
    def variance(self) -> Tensor:
        return Tensor(np.full(self._batch_shape, np.nan, self.probs.data.dtype))

    def sample(self, sample_shape=()) -> Tensor:
        C.refuse_no_samples(int(np.prod(C._shape(sample_shape))))
        shape = self._extended_shape(sample_shape)
        p = self.probs.data
        cdf = np.cumsum(p, -1)
        cdf = cdf / cdf[..., -1:]
        u = generator().random(shape + (1,))
        k = (np.broadcast_to(cdf, shape + (p.shape[-1],)) <= u).sum(-1)
        return Tensor(np.minimum(k, p.shape[-1] - 1).astype(np.int64))

    def log_prob(self, value) -> Tensor:
        value = self._validate_sample(value)
        idx = value.to(np.int64).unsqueeze(-1)  # ops: rg.jit replays each call's values
        shape = np.broadcast_shapes(idx.shape, self.logits.shape[:-1] + (1,))
        logits = self.logits.expand(*(shape[:-1] + (self._num_events,)))
        return take_along_dim(logits, idx.expand(*shape), -1)[..., 0]

    def entropy(self) -> Tensor:
        lo = float(np.finfo(self.logits.data.dtype).min)
        return -(self.logits.clamp(min=lo) * self.probs).sum(-1)

