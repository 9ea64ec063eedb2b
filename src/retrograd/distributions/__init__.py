"""`rg.distributions`: PyTorch's `torch.distributions` names and constructor arguments.

    import retrograd as rg
    mu = rg.tensor(0.5, requires_grad=True)
    d = rg.distributions.Normal(mu, 2.0)
    d.log_prob(rg.tensor([0.1, 1.3])).sum().backward()   # d/dmu of the log-likelihood
    x = d.rsample((100,))                                   # reparameterised draws

`log_prob`, `cdf`, `icdf`, `entropy` and the moments are differentiable in the
parameters and in the value; `rsample` (every continuous distribution here) in the
parameters: Gamma, Chi2, Beta, Dirichlet and StudentT through gamma draws with
PyTorch's implicit reparameterisation (first derivatives only; a second derivative
through a draw raises, as in PyTorch). Poisson, Bernoulli and Categorical draw with
`sample` only (their `rsample` raises).
The wider family (Cauchy, LogNormal, ..., RelaxedOneHotCategorical) follows
torch.distributions too: the transformed ones through `rg.distributions.transforms`
and TransformedDistribution; InverseGamma and FisherSnedecor draw through the gamma
draws above; VonMises, the counts (Geometric, Binomial, NegativeBinomial, Multinomial,
OneHotCategorical) and MixtureSameFamily draw with `sample` only, as in PyTorch.
With `validate_args` (on by default, as in PyTorch) an invalid parameter or value
raises ValueError naming it. Some functions (`gammaln`, `digamma`, `gammainc`) need
SciPy: `pip install 'retrograd[special]'`.
"""

from . import constraints, transforms
from . import kl_breadth as _kl_breadth  # noqa: F401  (registers the pairs)
from .composite import Independent, MixtureSameFamily, TransformedDistribution
from .continuous import Beta, Chi2, Exponential, Gamma, Laplace, Normal, StudentT, Uniform
from .counts import Binomial, Geometric, Multinomial, NegativeBinomial, OneHotCategorical
from .discrete import Bernoulli, Categorical, Poisson
from .distribution import Distribution
from .kl import kl_divergence, register_kl
from .lowrank import LowRankMultivariateNormal
from .multivariate import Dirichlet, MultivariateNormal
from .relaxed import (
    ContinuousBernoulli,
    ExpRelaxedCategorical,
    LogitRelaxedBernoulli,
    RelaxedBernoulli,
    RelaxedOneHotCategorical,
)
from .univariate import (
    Cauchy,
    FisherSnedecor,
    Gumbel,
    HalfCauchy,
    HalfNormal,
    InverseGamma,
    Kumaraswamy,
    LogNormal,
    Pareto,
    Weibull,
)
from .vonmises import VonMises

__all__ = [
    "Distribution", "Normal", "MultivariateNormal", "StudentT", "Poisson", "Beta", "Gamma",
    "Chi2", "Dirichlet", "Categorical", "Bernoulli", "Uniform", "Exponential", "Laplace",
    "kl_divergence", "register_kl",
    "Cauchy", "LogNormal", "HalfNormal", "HalfCauchy", "Gumbel", "Weibull", "Pareto",
    "InverseGamma", "FisherSnedecor", "Kumaraswamy",
    "Independent", "MixtureSameFamily", "TransformedDistribution", "transforms",
    "LowRankMultivariateNormal", "VonMises", "ContinuousBernoulli", "LogitRelaxedBernoulli",
    "RelaxedBernoulli", "ExpRelaxedCategorical", "RelaxedOneHotCategorical",
    "Geometric", "Binomial", "NegativeBinomial", "Multinomial", "OneHotCategorical",
]
