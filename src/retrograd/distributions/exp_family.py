"""`ExponentialFamily`: torch's base class for densities p(x) = h(x) exp(<t(x), theta> -
F(theta)); its generic `entropy` is the Bregman form, H = F(theta) - <theta, grad F> -
E[log h], computed with autograd through `_log_normalizer`."""

from __future__ import annotations

from ..api._args import _t
from .distribution import Distribution


class ExponentialFamily(Distribution):
    """A distribution of the exponential family: subclasses give `_natural_params`,
    `_log_normalizer(*natural_params)` and `_mean_carrier_measure` for the generic
    entropy (most override `entropy` with a closed form)."""

    @property
    def _natural_params(self) -> tuple:
        raise NotImplementedError(f"{type(self).__name__} has no _natural_params")

    def _log_normalizer(self, *natural_params):
        raise NotImplementedError(f"{type(self).__name__} has no _log_normalizer")

    @property
    def _mean_carrier_measure(self):
        raise NotImplementedError(f"{type(self).__name__} has no _mean_carrier_measure")

    def entropy(self):
        """F(theta) - <theta, grad F(theta)> - E[log h(x)], differentiable (the gradient
        of F is taken with create_graph)."""
        from ..autograd import grad
        from .transforms import _sum_rightmost

        result = -_t(self._mean_carrier_measure)
        params = [p.detach().requires_grad_() for p in self._natural_params]
        lg_normal = self._log_normalizer(*params)
        grads = grad(lg_normal.sum(), params, create_graph=True)
        result = result + lg_normal
        for p, g in zip(params, grads):
            result = result - _sum_rightmost(p * g, len(self.event_shape))
        return result
