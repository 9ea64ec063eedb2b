"""More of torch's closed-form KL pairs: Beta, Dirichlet, Uniform, Laplace and Poisson
against their own family, and the common cross pairs (Uniform -> Normal, Exponential
<-> Gamma, Normal -> Laplace, Beta <-> Uniform, Uniform -> Exponential/Gamma), with
torch's formulas (inf where the first support is not inside the second)."""

from __future__ import annotations

import math

from .. import special
from ..api.elementwise import where
from .continuous import Beta, Exponential, Gamma, Laplace, Normal, Uniform
from .discrete import Poisson
from .exp_family import ExponentialFamily
from .kl import register_kl
from .multivariate import Dirichlet

_EULER = 0.57721566490153286060


def _x_log_x(x):
    return x * x.log()


@register_kl(Beta, Beta)
def _kl_beta_beta(p, q):
    sp = p.concentration1 + p.concentration0
    sq = q.concentration1 + q.concentration0
    t1 = special.gammaln(q.concentration1) + special.gammaln(q.concentration0) + \
        special.gammaln(sp)
    t2 = special.gammaln(p.concentration1) + special.gammaln(p.concentration0) + \
        special.gammaln(sq)
    t3 = (p.concentration1 - q.concentration1) * special.digamma(p.concentration1)
    t4 = (p.concentration0 - q.concentration0) * special.digamma(p.concentration0)
    t5 = (sq - sp) * special.digamma(sp)
    return t1 - t2 + t3 + t4 + t5


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p, q):
    sp = p.concentration.sum(-1)
    sq = q.concentration.sum(-1)
    t1 = special.gammaln(sp) - special.gammaln(sq)
    t2 = (special.gammaln(p.concentration) - special.gammaln(q.concentration)).sum(-1)
    t3 = p.concentration - q.concentration
    t4 = special.digamma(p.concentration) - special.digamma(sp).unsqueeze(-1)
    return t1 - t2 + (t3 * t4).sum(-1)


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p, q):
    result = ((q.high - q.low) / (p.high - p.low)).log()
    return where((q.low > p.low) | (q.high < p.high), math.inf, result)


@register_kl(Laplace, Laplace)
def _kl_laplace_laplace(p, q):
    ratio = p.scale / q.scale
    diff = (p.loc - q.loc).abs()
    return -ratio.log() + diff / q.scale + ratio * (-diff / p.scale).exp() - 1


@register_kl(Poisson, Poisson)
def _kl_poisson_poisson(p, q):
    return p.rate * (p.rate.log() - q.rate.log()) - (p.rate - q.rate)


@register_kl(Uniform, Normal)
def _kl_uniform_normal(p, q):
    width = p.high - p.low
    t1 = (math.sqrt(math.pi * 2) * q.scale / width).log()
    t2 = width ** 2 / 12
    t3 = ((p.high + p.low - 2 * q.loc) / 2) ** 2
    return t1 + 0.5 * (t2 + t3) / q.scale ** 2


@register_kl(Exponential, Gamma)
def _kl_exponential_gamma(p, q):
    ratio = q.rate / p.rate
    return (-q.concentration * ratio.log() + ratio + special.gammaln(q.concentration)
            + q.concentration * _EULER - (1 + _EULER))


@register_kl(Gamma, Exponential)
def _kl_gamma_exponential(p, q):
    return -p.entropy() - q.rate.log() + q.rate * p.concentration / p.rate


@register_kl(Normal, Laplace)
def _kl_normal_laplace(p, q):
    diff = p.loc - q.loc
    ratio = p.scale / q.scale
    z = diff / p.scale
    t2 = math.sqrt(2 / math.pi) * p.scale * (-0.5 * z ** 2).exp()
    t3 = diff * special.erf(math.sqrt(0.5) * z)
    return -ratio.log() + (t2 + t3) / q.scale - 0.5 * (1 + math.log(0.5 * math.pi))


@register_kl(Beta, Uniform)
def _kl_beta_uniform(p, q):
    result = -p.entropy() + (q.high - q.low).log()
    return where((q.low > 0) | (q.high < 1), math.inf, result)


@register_kl(Uniform, Beta)
def _kl_uniform_beta(p, q):
    width = p.high - p.low
    t1 = width.log()
    t2 = (q.concentration1 - 1) * (_x_log_x(p.high) - _x_log_x(p.low) - width) / width
    t3 = (q.concentration0 - 1) * (_x_log_x(1 - p.high) - _x_log_x(1 - p.low) + width) \
        / width
    t4 = special.gammaln(q.concentration1) + special.gammaln(q.concentration0) - \
        special.gammaln(q.concentration1 + q.concentration0)
    result = t3 + t4 - t1 - t2
    return where((p.high > 1) | (p.low < 0), math.inf, result)


@register_kl(Uniform, Exponential)
def _kl_uniform_exponential(p, q):
    result = q.rate * (p.high + p.low) / 2 - ((p.high - p.low) * q.rate).log()
    return where(p.low < 0, math.inf, result)


@register_kl(Uniform, Gamma)
def _kl_uniform_gamma(p, q):
    width = p.high - p.low
    t2 = special.gammaln(q.concentration) - q.concentration * q.rate.log()
    t3 = (1 - q.concentration) * (_x_log_x(p.high) - _x_log_x(p.low) - width) / width
    t4 = q.rate * (p.high + p.low) / 2
    return where(p.low < 0, math.inf, -width.log() + t2 + t3 + t4)




@register_kl(ExponentialFamily, ExponentialFamily)
def _kl_expfamily_expfamily(p, q):
    """The Bregman divergence of the log-normaliser between the natural parameters (two
    distributions of one exponential family type only, as torch)."""
    from ..autograd import grad
    from .transforms import _sum_rightmost

    if type(p) is not type(q):
        raise NotImplementedError("The cross KL-divergence between different exponential "
                                  "families cannot be computed using Bregman divergences "
                                  f"({type(p).__name__} and {type(q).__name__})")
    p_params = [x.detach().requires_grad_() for x in p._natural_params]
    q_params = q._natural_params
    lg_normal = p._log_normalizer(*p_params)
    grads = grad(lg_normal.sum(), p_params, create_graph=True)
    result = q._log_normalizer(*q_params) - lg_normal
    for pp, qp, g in zip(p_params, q_params, grads):
        result = result - _sum_rightmost((qp - pp) * g, len(q.event_shape))
    return result
