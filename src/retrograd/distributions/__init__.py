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

from . import constraint_registry, constraints, transforms, utils
from . import kl_breadth as _kl_breadth  # noqa: F401  (registers the pairs)
from . import kl_more as _kl_more  # noqa: F401  (registers the pairs)
from .composite import Independent, MixtureSameFamily, TransformedDistribution
from .constraint_registry import biject_to, transform_to
from .continuous import Beta, Chi2, Exponential, Gamma, Laplace, Normal, StudentT, Uniform
from .counts import Binomial, Geometric, Multinomial, NegativeBinomial, OneHotCategorical
from .discrete import Bernoulli, Categorical, Poisson
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .extra import (
    GeneralizedPareto,
    LKJCholesky,
    LogisticNormal,
    OneHotCategoricalStraightThrough,
    Wishart,
)
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
from .transforms import (
    AbsTransform,
    AffineTransform,
    CatTransform,
    ComposeTransform,
    CorrCholeskyTransform,
    CumulativeDistributionTransform,
    ExpTransform,
    IndependentTransform,
    LowerCholeskyTransform,
    PositiveDefiniteTransform,
    PowerTransform,
    ReshapeTransform,
    SigmoidTransform,
    SoftmaxTransform,
    SoftplusTransform,
    StackTransform,
    StickBreakingTransform,
    TanhTransform,
    Transform,
    identity_transform,
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
    "constraints", "constraint_registry", "biject_to", "transform_to", "utils",
    "ExponentialFamily", "GeneralizedPareto", "LKJCholesky", "LogisticNormal",
    "OneHotCategoricalStraightThrough", "Wishart", *transforms.__all__,
]

# torch's submodule paths (`from torch.distributions.normal import Normal`): one table,
# each name a module object holding the classes torch keeps there.
_SUBMODULES = {
    "bernoulli": ["Bernoulli"], "beta": ["Beta"], "binomial": ["Binomial"],
    "categorical": ["Categorical"], "cauchy": ["Cauchy"], "chi2": ["Chi2"],
    "continuous_bernoulli": ["ContinuousBernoulli"], "dirichlet": ["Dirichlet"],
    "exponential": ["Exponential"], "fishersnedecor": ["FisherSnedecor"],
    "gamma": ["Gamma"], "generalized_pareto": ["GeneralizedPareto"],
    "geometric": ["Geometric"], "gumbel": ["Gumbel"], "half_cauchy": ["HalfCauchy"],
    "half_normal": ["HalfNormal"], "independent": ["Independent"],
    "inverse_gamma": ["InverseGamma"], "kumaraswamy": ["Kumaraswamy"],
    "laplace": ["Laplace"], "lkj_cholesky": ["LKJCholesky"], "log_normal": ["LogNormal"],
    "logistic_normal": ["LogisticNormal"],
    "lowrank_multivariate_normal": ["LowRankMultivariateNormal"],
    "mixture_same_family": ["MixtureSameFamily"], "multinomial": ["Multinomial"],
    "multivariate_normal": ["MultivariateNormal"],
    "negative_binomial": ["NegativeBinomial"], "normal": ["Normal"],
    "one_hot_categorical": ["OneHotCategorical", "OneHotCategoricalStraightThrough"],
    "pareto": ["Pareto"], "poisson": ["Poisson"],
    "relaxed_bernoulli": ["LogitRelaxedBernoulli", "RelaxedBernoulli"],
    "relaxed_categorical": ["ExpRelaxedCategorical", "RelaxedOneHotCategorical"],
    "studentT": ["StudentT"], "transformed_distribution": ["TransformedDistribution"],
    "uniform": ["Uniform"], "von_mises": ["VonMises"], "weibull": ["Weibull"],
    "wishart": ["Wishart"],
}


def _register_submodules() -> None:
    import sys
    import types

    here = globals()
    for _name, _classes in _SUBMODULES.items():
        _mod = types.ModuleType(f"{__name__}.{_name}")
        _mod.__all__ = list(_classes)
        for _c in _classes:
            setattr(_mod, _c, here[_c])
        _mod.Distribution = Distribution
        _mod.constraints = constraints
        if _name == "multivariate_normal":  # torch's private helpers, imported by ports
            from .multivariate import _batch_mahalanobis, _batch_mv
            _mod._batch_mahalanobis, _mod._batch_mv = _batch_mahalanobis, _batch_mv
        sys.modules[_mod.__name__] = _mod
        here[_name] = _mod


_register_submodules()

