"""`kl_divergence(p, q)`: KL(p || q) in closed form for registered pairs of types."""

from __future__ import annotations

import numpy as np

from .. import special
from ..api.elementwise import where
from ..primitive import ArgumentError
from .continuous import Exponential, Gamma, Normal
from .discrete import Bernoulli, Categorical
from .distribution import Distribution
from .multivariate import MultivariateNormal

_KL: dict = {}
_KL_REGISTRY = _KL  # torch's name for the registry of (type_p, type_q) -> fn


def _batch_trace_XXT(bmat):
    """The trace of X X^T for each matrix of the batch (torch's private helper)."""
    return (bmat ** 2).sum((-2, -1))


def register_kl(type_p: type, type_q: type):
    """Decorator registering `fn(p, q)` as KL(p || q) for the pair of types."""
    def decorate(fn):
        _KL[type_p, type_q] = fn
        return fn
    return decorate


def kl_divergence(p: Distribution, q: Distribution):
    """KL(p || q), batched; NotImplementedError for a pair with no closed form here."""
    for (tp, tq), fn in _KL.items():
        if isinstance(p, tp) and isinstance(q, tq) and type(p) is tp and type(q) is tq:
            return fn(p, q)
    for (tp, tq), fn in _KL.items():
        if isinstance(p, tp) and isinstance(q, tq):
            return fn(p, q)
    raise NotImplementedError(f"kl_divergence: no closed form registered for "
                              f"{type(p).__name__} and {type(q).__name__}")


@register_kl(Normal, Normal)
def _kl_normal_normal(p: Normal, q: Normal):
    var_ratio = (p.scale / q.scale) ** 2
    t1 = ((p.loc - q.loc) / q.scale) ** 2
    return 0.5 * (var_ratio + t1 - 1 - var_ratio.log())


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p: Categorical, q: Categorical):
    t = p.probs * (p.logits - q.logits)
    t = where((q.probs == 0).expand(*t.shape), np.inf, t)
    t = where((p.probs == 0).expand(*t.shape), 0.0, t)
    return t.sum(-1)


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p: Bernoulli, q: Bernoulli):
    from ..api.activations import softplus

    t1 = p.probs * (softplus(-q.logits) - softplus(-p.logits))
    t1 = where(q.probs == 0, np.inf, t1)
    t1 = where(p.probs == 0, 0.0, t1)
    t2 = (1 - p.probs) * (softplus(q.logits) - softplus(p.logits))
    t2 = where(q.probs == 1, np.inf, t2)
    t2 = where(p.probs == 1, 0.0, t2)
    return t1 + t2


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p: Exponential, q: Exponential):
    rate_ratio = q.rate / p.rate
    return rate_ratio - 1 - rate_ratio.log()


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p: Gamma, q: Gamma):
    a, b, c, d = p.concentration, p.rate, q.concentration, q.rate
    return ((a - c) * special.digamma(a) - special.gammaln(a) + special.gammaln(c)
            + c * (b.log() - d.log()) + a * (d - b) / b)


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_mvn_mvn(p: MultivariateNormal, q: MultivariateNormal):
    from .. import linalg

    if p.event_shape != q.event_shape:
        raise ArgumentError("kl_divergence: MultivariateNormals with different event shapes "
                            f"{p.event_shape} and {q.event_shape}")
    n = p.event_shape[0]
    shape = np.broadcast_shapes(p.batch_shape, q.batch_shape)
    Lp = p._scale_tril.expand(*(shape + (n, n)))
    Lq = q._scale_tril.expand(*(shape + (n, n)))
    m = linalg.solve_triangular(Lq, Lp, upper=False)  # Lq^-1 Lp
    d = linalg.solve_triangular(Lq, (q.loc - p.loc).expand(*(shape + (n,))).unsqueeze(-1),
                                upper=False)[..., 0]
    half_log_det_ratio = q._half_log_det() - p._half_log_det()
    return half_log_det_ratio + 0.5 * ((m ** 2).sum((-2, -1)) + (d ** 2).sum(-1) - n)


