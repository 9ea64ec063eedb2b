"""More of torch's closed-form KL pairs: Beta, Dirichlet, Uniform, Laplace and Poisson
against their own family, and the common cross pairs (Uniform -> Normal, Exponential
<-> Gamma, Normal -> Laplace, Beta <-> Uniform, Uniform -> Exponential/Gamma), with
torch's formulas (inf where the first support is not inside the second); and the rest of
torch's cross-family table among Bernoulli, Beta, Binomial, ContinuousBernoulli,
Exponential, Gamma, Gumbel, Laplace, Normal, Pareto, Poisson and Uniform: 19 closed forms
and 33 pairs that are inf by support alone."""

from __future__ import annotations

import math

import numpy as np

from .. import special
from ..api.elementwise import where
from ..tensor import Tensor
from .continuous import Beta, Exponential, Gamma, Laplace, Normal, Uniform
from .counts import Binomial
from .discrete import Bernoulli, Poisson
from .exp_family import ExponentialFamily
from .kl import register_kl
from .multivariate import Dirichlet
from .relaxed import ContinuousBernoulli
from .univariate import Gumbel, Pareto

_EULER = 0.57721566490153286060


def _x_log_x(x):
    return special.xlogy(x, x)  # 0 at x = 0, as torch (x * log x would be nan)


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


# ------------------------------------------------------- cross-family pairs (torch's 52)
# Each closed form is E_p[log p] - E_p[log q] = -H(p) - E_p[log q], written with the
# moments of p that log q needs; a pair whose p puts mass where q has none is inf.


def _inf_kl(p, q, param):
    """KL = inf everywhere (p's support is not inside q's): a constant of `param`'s dtype
    with the broadcast batch shape, no gradient (torch's `full_like`)."""
    shape = np.broadcast_shapes(p.batch_shape, q.batch_shape)
    return Tensor(np.full(shape, np.inf, dtype=param.data.dtype))


def _register_inf(type_p, param_name, *types_q):
    """Registers KL(type_p || q) = inf for each q type, the dtype from p.`param_name`."""
    def fn(p, q):
        return _inf_kl(p, q, getattr(p, param_name))
    fn.__name__ = f"_kl_{type_p.__name__.lower()}_infinity"
    for type_q in types_q:
        register_kl(type_p, type_q)(fn)


# p has mass below 0, above 1, or below q's Pareto scale, where q's density is 0
_register_inf(Beta, "concentration1", Pareto)
_register_inf(ContinuousBernoulli, "probs", Pareto)
_register_inf(Exponential, "rate", Beta, ContinuousBernoulli, Pareto, Uniform)
_register_inf(Gamma, "concentration", Beta, ContinuousBernoulli, Pareto, Uniform)
_register_inf(Gumbel, "loc", Beta, ContinuousBernoulli, Exponential, Gamma, Pareto, Uniform)
_register_inf(Laplace, "loc", Beta, ContinuousBernoulli, Exponential, Gamma, Pareto, Uniform)
_register_inf(Normal, "loc", Beta, ContinuousBernoulli, Exponential, Gamma, Pareto, Uniform)
_register_inf(Pareto, "scale", Beta, ContinuousBernoulli, Uniform)
_register_inf(Poisson, "rate", Bernoulli, Binomial)  # Poisson's support is unbounded


def _minus_log_normal_mean(q, m1, m2):
    """-E[log N(x; q.loc, q.scale)] from E[x] = m1 and E[x^2] = m2."""
    var = q.scale ** 2
    return 0.5 * (2 * math.pi * var).log() + (0.5 * m2 - q.loc * m1 + 0.5 * q.loc ** 2) / var


@register_kl(Bernoulli, Poisson)
def _kl_bernoulli_poisson(p, q):
    """-H(p) - E[x log r - r - log x!], with log x! = 0 on {0, 1}."""
    return -p.entropy() - (p.probs * q.rate.log() - q.rate)


def _minus_log_cb(q, mean):
    """-E[log CB(x; q)] = -(log C(q) + E[x] logit(q) + log(1 - q)) from E[x] = mean."""
    return -mean * q.logits - (-q.probs).log1p() - q._log_norm()


@register_kl(Beta, ContinuousBernoulli)
def _kl_beta_continuous_bernoulli(p, q):
    """-H(Beta) - E[log CB]."""
    return -p.entropy() + _minus_log_cb(q, p.mean)


@register_kl(Beta, Exponential)
def _kl_beta_exponential(p, q):
    """-H(Beta) - log r + r E[x], E[x] = a / (a + b)."""
    mean = p.concentration1 / (p.concentration1 + p.concentration0)
    return -p.entropy() - q.rate.log() + q.rate * mean


@register_kl(Beta, Gamma)
def _kl_beta_gamma(p, q):
    """-H(Beta) + lgamma(c) - c log d - (c - 1) E[log x] + d E[x],
    E[log x] = digamma(a) - digamma(a + b)."""
    a, total = p.concentration1, p.concentration1 + p.concentration0
    c, d = q.concentration, q.rate
    e_log = special.digamma(a) - special.digamma(total)
    return (-p.entropy() + (special.gammaln(c) - c * d.log()) - (c - 1) * e_log
            + d * a / total)


@register_kl(Beta, Normal)
def _kl_beta_normal(p, q):
    """-H(Beta) - E[log N], E[x^2] = m (1 - m) / (a + b + 1) + m^2."""
    total = p.concentration1 + p.concentration0
    m = p.concentration1 / total
    return -p.entropy() + _minus_log_normal_mean(q, m, m * (1 - m) / (total + 1) + m ** 2)


@register_kl(ContinuousBernoulli, Exponential)
def _kl_continuous_bernoulli_exponential(p, q):
    """-H(CB) - log r + r E[x]."""
    return -p.entropy() - q.rate.log() + q.rate * p.mean


@register_kl(ContinuousBernoulli, Normal)
def _kl_continuous_bernoulli_normal(p, q):
    """-H(CB) - E[log N], E[x^2] = Var + E[x]^2."""
    m = p.mean
    return -p.entropy() + _minus_log_normal_mean(q, m, p.variance + m ** 2)


@register_kl(ContinuousBernoulli, Uniform)
def _kl_continuous_bernoulli_uniform(p, q):
    """-H(CB) + log(high - low); inf where low >= 0 or high <= 1 (torch's test, which
    also counts a q on exactly [0, 1] as not covering p)."""
    result = -p.entropy() + (q.high - q.low).log()
    return where((q.low >= 0) | (q.high <= 1), math.inf, result)


@register_kl(Exponential, Gumbel)
def _kl_exponential_gumbel(p, q):
    """-H(Exp) + log s + E[z] + E[exp(-z)], z = (x - mu) / s:
    E[exp(-x / s)] = r s / (r s + 1)."""
    rs = p.rate * q.scale
    mu_s = q.loc / q.scale
    return rs.log() - 1 - mu_s + mu_s.exp() * rs / (rs + 1) + rs.reciprocal()


@register_kl(Exponential, Normal)
def _kl_exponential_normal(p, q):
    """-H(Exp) - E[log N], -H(Exp) = log r - 1, E[x] = 1 / r, E[x^2] = 2 / r^2."""
    var, r2 = q.scale ** 2, p.rate ** 2
    return (0.5 * (2 * math.pi * r2 * var).log() - 1
            + (r2.reciprocal() - q.loc / p.rate + 0.5 * q.loc ** 2) / var)


def _minus_entropy_gamma(p):
    """-H(Gamma(a, b)) = (a - 1) digamma(a) - lgamma(a) - a + log b (log b kept apart)."""
    a = p.concentration
    return (a - 1) * special.digamma(a) - special.gammaln(a) - a


@register_kl(Gamma, Gumbel)
def _kl_gamma_gumbel(p, q):
    """-H(Gamma) + log s + E[z] + E[exp(-z)], E[exp(-x / s)] = (1 + 1 / (b s))^-a."""
    a = p.concentration
    bs = p.rate * q.scale
    mu_s = q.loc / q.scale
    return (_minus_entropy_gamma(p) + bs.log() + a / bs
            + mu_s.exp() * (1 + bs.reciprocal()) ** (-a) - mu_s)


@register_kl(Gamma, Normal)
def _kl_gamma_normal(p, q):
    """-H(Gamma) - E[log N], E[x] = a / b, E[x^2] = (a^2 + a) / b^2."""
    a, b = p.concentration, p.rate
    var, b2 = q.scale ** 2, b ** 2
    return (0.5 * (2 * math.pi * b2 * var).log() + _minus_entropy_gamma(p)
            + (0.5 * (a ** 2 + a) / b2 - q.loc * a / b + 0.5 * q.loc ** 2) / var)


@register_kl(Laplace, Normal)
def _kl_laplace_normal(p, q):
    """-H(Laplace) - E[log N], -H = -1 - log(2 b), E[(x - m)^2] = 2 b^2 + (mu - m)^2."""
    var = q.scale ** 2
    ratio = p.scale ** 2 / var
    return (-0.5 * (2 * ratio / math.pi).log() + ratio
            + (0.5 * p.loc ** 2 - p.loc * q.loc + 0.5 * q.loc ** 2) / var - 1)


@register_kl(Pareto, Exponential)
def _kl_pareto_exponential(p, q):
    """-H(Pareto) - log r + r E[x], -H = log(a / s) - 1 / a - 1, E[x] = a s / (a - 1);
    inf where a <= 1 (no mean)."""
    a, sr = p.alpha, p.scale * q.rate
    result = (a / sr).log() - a.reciprocal() + a * sr / (a - 1) - 1
    return where(a <= 1, math.inf, result)


@register_kl(Pareto, Gamma)
def _kl_pareto_gamma(p, q):
    """-H(Pareto) + lgamma(c) - c log d - (c - 1) E[log x] + d E[x],
    E[log x] = log s + 1 / a; inf where a <= 1."""
    a, c, d = p.alpha, q.concentration, q.rate
    e_log = p.scale.log() + a.reciprocal()
    result = (a.log() - e_log + (special.gammaln(c) - c * d.log()) + (1 - c) * e_log
              + d * a * p.scale / (a - 1) - 1)
    return where(a <= 1, math.inf, result)


@register_kl(Pareto, Normal)
def _kl_pareto_normal(p, q):
    """-H(Pareto) - E[log N], E[(x - m)^2] = Var + (E[x] - m)^2 with
    Var = a (s / (a - 1))^2 / (a - 2); inf where a <= 2 (no variance)."""
    a = p.alpha
    s1 = p.scale / (a - 1)
    result = ((math.sqrt(2 * math.pi) * q.scale * a / p.scale).log() - a.reciprocal()
              + (a * s1 ** 2 / (a - 2) + (a * s1 - q.loc) ** 2) / (2 * q.scale ** 2) - 1)
    return where(a <= 2, math.inf, result)


@register_kl(Uniform, ContinuousBernoulli)
def _kl_uniform_continuous_bernoulli(p, q):
    """-H(Uniform) - E[log CB]; inf where high >= 1 or low <= 0 (torch's test, which
    also counts a p touching 0 or 1 as outside)."""
    result = -p.entropy() + _minus_log_cb(q, p.mean)
    return where((p.high >= 1) | (p.low <= 0), math.inf, result)


@register_kl(Uniform, Gumbel)
def _kl_uniform_gumbel(p, q):
    """-log w + log s + E[z] + E[exp(-z)], w = high - low, z at the ends zh, zl:
    E[exp(-z)] = (s / w) (exp(-zl) - exp(-zh))."""
    s_w = q.scale / (p.high - p.low)
    zh = (p.high - q.loc) / q.scale
    zl = (p.low - q.loc) / q.scale
    return s_w.log() + 0.5 * (zh + zl) - s_w * ((-zh).exp() - (-zl).exp())


@register_kl(Uniform, Pareto)
def _kl_uniform_pareto(p, q):
    """-log w - log a - a log s + (a + 1) E[log x],
    E[log x] = (h log h - l log l) / w - 1; inf where low < scale."""
    w, a = p.high - p.low, q.alpha
    e_log = (_x_log_x(p.high) - _x_log_x(p.low) - w) / w
    result = (a + 1) * e_log - (a * q.scale ** a * w).log()
    return where(p.low < q.scale, math.inf, result)


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
