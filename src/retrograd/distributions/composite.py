"""Distributions built from others: TransformedDistribution (a base pushed through
transforms), Independent (batch dimensions reinterpreted as event dimensions) and
MixtureSameFamily (a Categorical mixture over the last batch dimension of components)."""

from __future__ import annotations

import numpy as np

from ..api._args import _t
from ..api.reductions import logsumexp
from ..grad_mode import no_grad
from ..primitive import ArgumentError
from ..tensor import Tensor
from .discrete import Categorical
from .distribution import Distribution, _shape
from .transforms import ComposeTransform, Transform, _sum_rightmost


class TransformedDistribution(Distribution):
    """The law of transforms[-1](...transforms[0](X)) for X ~ base_distribution."""

    arg_constraints: dict = {}

    def __init__(self, base_distribution: Distribution, transforms,
                 validate_args: bool | None = None):
        if isinstance(transforms, Transform):
            transforms = [transforms]
        elif not isinstance(transforms, (list, tuple)) or not all(
                isinstance(t, Transform) for t in transforms):
            raise ArgumentError("TransformedDistribution: transforms must be a Transform or a "
                                f"list of Transforms, got {type(transforms).__name__}")
        self.transforms = list(transforms)
        # torch's shape bookkeeping: the base is expanded to what the transforms need and
        # its extra batch dimensions read as event dimensions
        transform = ComposeTransform(self.transforms)
        base_shape = tuple(base_distribution.batch_shape) + tuple(
            base_distribution.event_shape)
        if len(base_shape) < transform.domain.event_dim:
            raise ArgumentError(f"base_distribution needs at least {transform.domain.event_dim} "
                                f"dimensions but has shape {base_shape}")
        shape = transform.forward_shape(base_shape)
        expanded = transform.inverse_shape(shape)
        if tuple(expanded) != base_shape:
            base_batch = tuple(expanded)[:len(expanded) - len(base_distribution.event_shape)]
            base_distribution = base_distribution.expand(base_batch)
        reinterpreted = transform.domain.event_dim - len(base_distribution.event_shape)
        if reinterpreted > 0:
            base_distribution = Independent(base_distribution, reinterpreted)
        self.base_dist = base_distribution
        change = transform.codomain.event_dim - transform.domain.event_dim
        event_dim = max(transform.codomain.event_dim,
                        len(base_distribution.event_shape) + change)
        cut = len(shape) - event_dim
        super().__init__(shape[:cut], shape[cut:], validate_args=validate_args)

    @property
    def has_rsample(self) -> bool:
        return self.base_dist.has_rsample

    @property
    def support(self):
        from . import constraints

        if not self.transforms:
            return self.base_dist.support
        support = self.transforms[-1].codomain
        if len(self._event_shape) > support.event_dim:
            support = constraints.independent(support,
                                              len(self._event_shape) - support.event_dim)
        return support

    def rsample(self, sample_shape=()) -> Tensor:
        x = self.base_dist.rsample(sample_shape)
        for t in self.transforms:
            x = t(x)
        return x

    def sample(self, sample_shape=()) -> Tensor:
        with no_grad():
            x = self.base_dist.sample(sample_shape)
            for t in self.transforms:
                x = t(x)
            return x

    def log_prob(self, value) -> Tensor:
        y = self._validate_sample(value)
        event_dim = len(self._event_shape)
        lp = 0
        for t in reversed(self.transforms):
            x = t.inv(y)
            event_dim += t.domain.event_dim - t.codomain.event_dim
            lp = lp - _sum_rightmost(t.log_abs_det_jacobian(x, y),
                                     event_dim - t.domain.event_dim)
            y = x
        base = self.base_dist.log_prob(y)
        return lp + _sum_rightmost(base, event_dim - len(self.base_dist.event_shape))

    def _sign(self):
        return ComposeTransform(self.transforms).sign

    def _monotonize(self, cdf: Tensor) -> Tensor:
        sign = self._sign()
        if isinstance(sign, int):
            return cdf if sign == 1 else 1 - cdf
        return sign * (cdf - 0.5) + 0.5

    def cdf(self, value) -> Tensor:
        # as torch: checked in the base distribution's space, after the inverse maps (so
        # LogNormal's cdf(0) is 0 where its support, positive, would refuse 0)
        value = _t(value)
        for t in reversed(self.transforms):
            value = t.inv(value)
        if self._validate_args:
            value = self.base_dist._validate_sample(value)
        return self._monotonize(self.base_dist.cdf(value))

    def icdf(self, value) -> Tensor:
        x = self.base_dist.icdf(self._monotonize(_t(value)))
        for t in self.transforms:
            x = t(x)
        return x

    def expand(self, batch_shape, _instance=None):
        shape = _shape(batch_shape) + self._event_shape
        for t in reversed(self.transforms):
            shape = t.inverse_shape(shape)
        base_batch = shape[:len(shape) - len(self.base_dist.event_shape)]
        return TransformedDistribution(self.base_dist.expand(base_batch),
                                       self.transforms, validate_args=False)


class Independent(Distribution):
    """`base_distribution` with its `reinterpreted_batch_ndims` rightmost batch dimensions
    read as event dimensions (log_prob and entropy summed over them)."""

    arg_constraints: dict = {}

    def __init__(self, base_distribution: Distribution, reinterpreted_batch_ndims: int,
                 validate_args: bool | None = None):
        k = int(reinterpreted_batch_ndims)
        batch = tuple(base_distribution.batch_shape)
        if k > len(batch) or k < 0:
            raise ArgumentError("Independent: expected 0 <= reinterpreted_batch_ndims <= "
                                f"len(base_distribution.batch_shape) = {len(batch)}, got {k}")
        self.base_dist = base_distribution
        self.reinterpreted_batch_ndims = k
        cut = len(batch) - k
        super().__init__(batch[:cut], batch[cut:] + tuple(base_distribution.event_shape),
                         validate_args=validate_args)

    @property
    def has_rsample(self) -> bool:
        return self.base_dist.has_rsample

    @property
    def support(self):
        from . import constraints

        result = self.base_dist.support
        if self.reinterpreted_batch_ndims:
            result = constraints.independent(result, self.reinterpreted_batch_ndims)
        return result

    @property
    def mean(self) -> Tensor:
        return self.base_dist.mean

    @property
    def mode(self) -> Tensor:
        return self.base_dist.mode

    @property
    def variance(self) -> Tensor:
        return self.base_dist.variance

    def sample(self, sample_shape=()) -> Tensor:
        return self.base_dist.sample(sample_shape)

    def rsample(self, sample_shape=()) -> Tensor:
        return self.base_dist.rsample(sample_shape)

    def log_prob(self, value) -> Tensor:
        return _sum_rightmost(self.base_dist.log_prob(value), self.reinterpreted_batch_ndims)

    def entropy(self) -> Tensor:
        return _sum_rightmost(self.base_dist.entropy(), self.reinterpreted_batch_ndims)

    def expand(self, batch_shape, _instance=None):
        batch_shape = _shape(batch_shape)
        k = self.reinterpreted_batch_ndims
        inner = self._event_shape[:k] if k else ()
        return Independent(self.base_dist.expand(batch_shape + inner), k,
                           validate_args=False)


class MixtureSameFamily(Distribution):
    """A mixture whose components are the last batch dimension of
    `component_distribution`, weighted by the Categorical `mixture_distribution`."""

    arg_constraints: dict = {}
    has_rsample = False

    def __init__(self, mixture_distribution: Categorical,
                 component_distribution: Distribution, validate_args: bool | None = None):
        if not isinstance(mixture_distribution, Categorical):
            raise ArgumentError("MixtureSameFamily: mixture_distribution must be a Categorical, "
                                f"got {type(mixture_distribution).__name__}")
        if not isinstance(component_distribution, Distribution):
            raise ArgumentError("MixtureSameFamily: component_distribution must be a "
                                "Distribution")
        mb = tuple(mixture_distribution.batch_shape)
        cb = tuple(component_distribution.batch_shape)
        if len(cb) < 1:
            raise ArgumentError("MixtureSameFamily: component_distribution needs a batch "
                                "dimension for the components")
        try:
            np.broadcast_shapes(mb, cb[:-1])
        except ValueError:
            raise ArgumentError(f"MixtureSameFamily: mixture batch shape {mb} does not "
                                f"broadcast with the component batch shape {cb[:-1]}") from None
        k = mixture_distribution._num_events
        if k != cb[-1]:
            raise ArgumentError(f"MixtureSameFamily: mixture_distribution has {k} categories "
                                f"but component_distribution's last batch dimension is {cb[-1]}")
        self._mixture_distribution = mixture_distribution
        self._component_distribution = component_distribution
        self._num_component = k
        self._event_ndims = len(component_distribution.event_shape)
        super().__init__(cb[:-1], tuple(component_distribution.event_shape),
                         validate_args=validate_args)

    @property
    def mixture_distribution(self) -> Categorical:
        return self._mixture_distribution

    @property
    def component_distribution(self) -> Distribution:
        return self._component_distribution

    @property
    def support(self):
        from . import constraints

        return constraints.MixtureSameFamilyConstraint(self._component_distribution.support)

    def _pad_probs(self) -> Tensor:
        p = self._mixture_distribution.probs
        return p.reshape(p.shape + (1,) * self._event_ndims)

    @property
    def mean(self) -> Tensor:
        return (self._pad_probs() * self._component_distribution.mean).sum(
            -1 - self._event_ndims)

    @property
    def variance(self) -> Tensor:
        p = self._pad_probs()
        dim = -1 - self._event_ndims
        comp = self._component_distribution
        mean_cond_var = (p * comp.variance).sum(dim)
        var_cond_mean = (p * (comp.mean - self.mean.unsqueeze(dim)) ** 2).sum(dim)
        return mean_cond_var + var_cond_mean

    def _pad(self, x: Tensor) -> Tensor:
        return x.unsqueeze(-1 - self._event_ndims)

    def log_prob(self, value) -> Tensor:
        value = self._validate_sample(value)
        lp = self._component_distribution.log_prob(self._pad(value))
        mix = self._mixture_distribution.logits
        return logsumexp(lp + mix, -1)

    def cdf(self, value) -> Tensor:
        value = self._validate_sample(value)
        c = self._component_distribution.cdf(self._pad(value))
        return (c * self._mixture_distribution.probs).sum(-1)

    def sample(self, sample_shape=()) -> Tensor:
        with no_grad():
            sample_shape = _shape(sample_shape)
            idx = self._mixture_distribution.sample(sample_shape).data
            idx = np.broadcast_to(idx, sample_shape + self._batch_shape)
            comp = self._component_distribution.sample(sample_shape).data
            e = self._event_ndims
            ix = idx.reshape(idx.shape + (1,) + (1,) * e)
            ix = np.broadcast_to(ix, idx.shape + (1,) + comp.shape[comp.ndim - e:])
            out = np.take_along_axis(comp, ix, axis=-1 - e)
            return Tensor(np.squeeze(out, axis=-1 - e))

    def expand(self, batch_shape, _instance=None):
        batch_shape = _shape(batch_shape)
        mix = self._mixture_distribution
        return MixtureSameFamily(
            Categorical(logits=mix.logits.expand(*(batch_shape + (self._num_component,))),
                        validate_args=False),
            self._component_distribution.expand(batch_shape + (self._num_component,)),
            validate_args=False)
