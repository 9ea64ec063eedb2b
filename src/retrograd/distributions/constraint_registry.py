"""`biject_to` and `transform_to`: torch's registries from a constraint to a transform
whose outputs satisfy it. `biject_to(c)` gives a bijection (for
TransformedDistribution and HMC-style reparameterisation); `transform_to(c)` any
transform onto the set (SoftmaxTransform for the simplex, LowerCholeskyTransform,
PositiveDefiniteTransform), as for unconstrained optimisation."""

from __future__ import annotations

from numbers import Number

from . import constraints
from . import transforms as T

__all__ = ["ConstraintRegistry", "biject_to", "transform_to"]


class ConstraintRegistry:
    """Constraint (class or instance's class) -> a factory `fn(constraint) -> Transform`."""

    def __init__(self):
        self._registry: dict = {}

    def register(self, constraint, factory=None):
        """Register `factory` for `constraint` (a Constraint subclass or an instance of
        one); usable as a decorator."""
        if factory is None:
            return lambda factory: self.register(constraint, factory)
        if isinstance(constraint, constraints.Constraint):
            constraint = type(constraint)
        if not isinstance(constraint, type) or not issubclass(constraint,
                                                              constraints.Constraint):
            raise TypeError("Expected constraint to be either a Constraint subclass or "
                            f"instance, but got {constraint}")
        self._registry[constraint] = factory
        return factory

    def __call__(self, constraint) -> T.Transform:
        try:
            factory = self._registry[type(constraint)]
        except KeyError:
            raise NotImplementedError(f"Cannot transform {type(constraint).__name__} "
                                      "constraints") from None
        return factory(constraint)


biject_to = ConstraintRegistry()
transform_to = ConstraintRegistry()


@biject_to.register(constraints.real)
@transform_to.register(constraints.real)
def _to_real(constraint):
    return T.identity_transform


@biject_to.register(constraints.independent)
def _biject_to_independent(constraint):
    return T.IndependentTransform(biject_to(constraint.base_constraint),
                                  constraint.reinterpreted_batch_ndims)


@transform_to.register(constraints.independent)
def _transform_to_independent(constraint):
    return T.IndependentTransform(transform_to(constraint.base_constraint),
                                  constraint.reinterpreted_batch_ndims)


@biject_to.register(constraints.greater_than)
@biject_to.register(constraints.greater_than_eq)
@transform_to.register(constraints.greater_than)
@transform_to.register(constraints.greater_than_eq)
def _to_greater_than(constraint):
    # positive and nonnegative too (torch gives exp then a shift by the bound for them)
    return T.ComposeTransform([T.ExpTransform(),
                               T.AffineTransform(constraint.lower_bound, 1)])


@biject_to.register(constraints.less_than)
@transform_to.register(constraints.less_than)
def _to_less_than(constraint):
    return T.ComposeTransform([T.ExpTransform(),
                               T.AffineTransform(constraint.upper_bound, -1)])


@biject_to.register(constraints.interval)
@biject_to.register(constraints.half_open_interval)
@transform_to.register(constraints.interval)
@transform_to.register(constraints.half_open_interval)
def _to_interval(constraint):
    lb, ub = constraint.lower_bound, constraint.upper_bound
    if isinstance(lb, Number) and lb == 0 and isinstance(ub, Number) and ub == 1:
        return T.SigmoidTransform()
    return T.ComposeTransform([T.SigmoidTransform(), T.AffineTransform(lb, ub - lb)])


@biject_to.register(constraints.simplex)
def _biject_to_simplex(constraint):
    return T.StickBreakingTransform()


@transform_to.register(constraints.simplex)
def _transform_to_simplex(constraint):
    return T.SoftmaxTransform()


@transform_to.register(constraints.lower_cholesky)
def _transform_to_lower_cholesky(constraint):
    return T.LowerCholeskyTransform()


@transform_to.register(constraints.positive_definite)
@transform_to.register(constraints.positive_semidefinite)
def _transform_to_positive_definite(constraint):
    return T.PositiveDefiniteTransform()


@biject_to.register(constraints.corr_cholesky)
@transform_to.register(constraints.corr_cholesky)
def _to_corr_cholesky(constraint):
    return T.CorrCholeskyTransform()


@biject_to.register(constraints.cat)
def _biject_to_cat(constraint):
    return T.CatTransform([biject_to(c) for c in constraint.cseq], constraint.dim,
                          constraint.lengths)


@transform_to.register(constraints.cat)
def _transform_to_cat(constraint):
    return T.CatTransform([transform_to(c) for c in constraint.cseq], constraint.dim,
                          constraint.lengths)


@biject_to.register(constraints.stack)
def _biject_to_stack(constraint):
    return T.StackTransform([biject_to(c) for c in constraint.cseq], constraint.dim)


@transform_to.register(constraints.stack)
def _transform_to_stack(constraint):
    return T.StackTransform([transform_to(c) for c in constraint.cseq], constraint.dim)
