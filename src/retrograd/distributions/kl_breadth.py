"""The closed-form KL divergences PyTorch registers between pairs of the wider family:
Binomial, Cauchy, Geometric, Gumbel, HalfNormal, Independent, LowRankMultivariateNormal,
OneHotCategorical, Pareto, TransformedDistribution (same transforms), ContinuousBernoulli,
and Gumbel against Normal both ways."""

from __future__ import annotations

import math

import numpy as np

from .. import special
from ..api.elementwise import where
from .composite import Independent, TransformedDistribution
from .continuous import Normal
from .counts import Binomial, Geometric, OneHotCategorical
from .kl import (
    _kl_categorical_categorical,
    _kl_mvn_mvn,
    _kl_normal_normal,
    kl_divergence,
    register_kl,
)
from .lowrank import LowRankMultivariateNormal
from .multivariate import MultivariateNormal
from .relaxed import ContinuousBernoulli
from .transforms import _sum_rightmost
from .univariate import Cauchy, Gumbel, HalfNormal, Pareto

_EULER = 0.57721566490153286061


@register_kl(Binomial, Binomial)
def _kl_binomial_binomial(p: Binomial, q: Binomial):
    if np.any(p.total_count.data < q.total_count.data):
        raise NotImplementedError("kl_divergence: Binomials where q.total_count > "
                                  "p.total_count are not implemented")
    kl = p.total_count * (p.probs * (p.logits - q.logits) + (-p.probs).log1p()
                          - (-q.probs).log1p())
    return where(p.total_count > q.total_count, np.inf, kl)


@register_kl(Cauchy, Cauchy)
def _kl_cauchy_cauchy(p: Cauchy, q: Cauchy):
    t1 = ((p.scale + q.scale) ** 2 + (p.loc - q.loc) ** 2).log()
    return t1 - (4 * p.scale * q.scale).log()


@register_kl(Geometric, Geometric)
def _kl_geometric_geometric(p: Geometric, q: Geometric):
    return -p.entropy() - (-q.probs).log1p() / p.probs - q.logits


@register_kl(Gumbel, Gumbel)
def _kl_gumbel_gumbel(p: Gumbel, q: Gumbel):
    ct1 = p.scale / q.scale
    ct2 = q.loc / q.scale
    ct3 = p.loc / q.scale
    t1 = -ct1.log() - ct2 + ct3
    t3 = (ct2 + special.gammaln(1 + ct1) - ct3).exp()
    return t1 + ct1 * _EULER + t3 - (1 + _EULER)


@register_kl(HalfNormal, HalfNormal)
def _kl_halfnormal_halfnormal(p: HalfNormal, q: HalfNormal):
    return _kl_normal_normal(p.base_dist, q.base_dist)


@register_kl(OneHotCategorical, OneHotCategorical)
def _kl_onehot_onehot(p: OneHotCategorical, q: OneHotCategorical):
    return _kl_categorical_categorical(p._categorical, q._categorical)


@register_kl(Pareto, Pareto)
def _kl_pareto_pareto(p: Pareto, q: Pareto):
    alpha_ratio = q.alpha / p.alpha
    result = q.alpha * (p.scale / q.scale).log() - alpha_ratio.log() + alpha_ratio - 1
    return where(p.scale < q.scale, np.inf, result)


@register_kl(Independent, Independent)
def _kl_independent_independent(p: Independent, q: Independent):
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError("kl_divergence: Independents with different "
                                  "reinterpreted_batch_ndims")
    return _sum_rightmost(kl_divergence(p.base_dist, q.base_dist),
                          p.reinterpreted_batch_ndims)


@register_kl(TransformedDistribution, TransformedDistribution)
def _kl_transformed_transformed(p: TransformedDistribution, q: TransformedDistribution):
    if p.transforms != q.transforms or p.event_shape != q.event_shape:
        raise NotImplementedError("kl_divergence: TransformedDistributions with different "
                                  "transforms or event shapes")
    return kl_divergence(p.base_dist, q.base_dist)


def _as_mvn(d) -> MultivariateNormal:
    if isinstance(d, MultivariateNormal):
        return d
    return MultivariateNormal(d.loc, covariance_matrix=d.covariance_matrix,
                              validate_args=False)


@register_kl(LowRankMultivariateNormal, LowRankMultivariateNormal)
def _kl_lowrank_lowrank(p, q):
    return _kl_mvn_mvn(_as_mvn(p), _as_mvn(q))


@register_kl(MultivariateNormal, LowRankMultivariateNormal)
def _kl_mvn_lowrank(p, q):
    return _kl_mvn_mvn(_as_mvn(p), _as_mvn(q))


@register_kl(LowRankMultivariateNormal, MultivariateNormal)
def _kl_lowrank_mvn(p, q):
    return _kl_mvn_mvn(_as_mvn(p), _as_mvn(q))


@register_kl(ContinuousBernoulli, ContinuousBernoulli)
def _kl_cb_cb(p: ContinuousBernoulli, q: ContinuousBernoulli):
    t1 = p.mean * (p.logits - q.logits)
    t2 = p._log_norm() + (-p.probs).log1p()
    t3 = -q._log_norm() - (-q.probs).log1p()
    return t1 + t2 + t3


@register_kl(Gumbel, Normal)
def _kl_gumbel_normal(p: Gumbel, q: Normal):
    ratio = p.scale / q.scale
    t1 = (ratio / math.sqrt(2 * math.pi)).log()
    t2 = (math.pi * ratio * 0.5) ** 2 / 3
    t3 = ((p.loc + p.scale * _EULER - q.loc) / q.scale) ** 2 * 0.5
    return -t1 + t2 + t3 - (_EULER + 1)


@register_kl(Normal, Gumbel)
def _kl_normal_gumbel(p: Normal, q: Gumbel):
    mean_scale = p.loc / q.scale
    var_sqr = (p.scale / q.scale) ** 2
    loc_scale = q.loc / q.scale
    t3 = (-mean_scale + 0.5 * var_sqr + loc_scale).exp()
    return -var_sqr.log() * 0.5 + mean_scale - loc_scale + t3 \
        - (0.5 * (1 + math.log(2 * math.pi)))
