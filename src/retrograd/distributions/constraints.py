"""`rg.distributions.constraints`: torch.distributions.constraints' sets.

A constraint is a set a parameter or a value must lie in. `c.check(value)` gives a
bool tensor of shape `value.shape[:value.dim() - c.event_dim]` (True where the
event lies in the set), computed with tensor ops so that it holds per batch element
under rg.func.vmap too. `is_discrete` and `event_dim` are torch's. `biject_to` and
`transform_to` (constraint_registry) map each constraint to a transform onto it."""

from __future__ import annotations

import numpy as np

from .._values import every_value
from ..api._args import _t
from ..primitive import ArgumentError
from ..tensor import Tensor

__all__ = [
    "Constraint", "MixtureSameFamilyConstraint", "boolean", "cat", "corr_cholesky",
    "dependent", "dependent_property",
    "greater_than", "greater_than_eq", "independent", "integer_interval", "interval",
    "half_open_interval", "is_dependent", "less_than", "lower_cholesky", "lower_triangular",
    "multinomial", "nonnegative", "nonnegative_integer", "one_hot", "positive",
    "positive_semidefinite", "positive_definite", "positive_integer", "real", "real_vector",
    "simplex", "square", "stack", "symmetric", "unit_interval",
]


class Constraint:
    """A set values must lie in (torch's `Constraint`): `check(value)` is elementwise
    over batch dimensions and reduces over the `event_dim` rightmost ones.

    `Constraint(name, test, event_dim)` also builds an ad hoc constraint from a NumPy
    predicate `test(array, dist)` (used inside rg.distributions)."""

    is_discrete = False
    event_dim = 0

    def __init__(self, name: str | None = None, test=None, event_dim: int | None = None):
        if name is not None:
            self.name = name
        if test is not None:
            self._test = test
        if event_dim is not None:
            self.event_dim = int(event_dim)

    def check(self, value) -> Tensor:
        """A bool tensor: True where `value` satisfies the constraint."""
        test = self.__dict__.get("_test")
        if test is None:
            raise NotImplementedError(f"{type(self).__name__} has no check")
        value = _t(value)
        with np.errstate(invalid="ignore"):
            return Tensor(np.asarray(test(value.data, None), dtype=bool))

    # the interface rg.distributions' validation uses
    def holds(self, a: np.ndarray, dist=None) -> bool:
        test = self.__dict__.get("_test")
        with np.errstate(invalid="ignore"):
            if test is not None:
                return bool(np.all(test(np.asarray(a), dist)))
            return bool(np.all(self.check(Tensor(np.asarray(a))).data))

    def holds_for(self, value: Tensor, dist=None) -> bool:
        """Whether every element of `value` lies in the set (under rg.func.vmap, every
        batch element, not only the one its `.data` holds)."""
        if "_test" in self.__dict__:
            return self.holds(every_value(value), dist)
        with np.errstate(invalid="ignore"):
            return bool(np.all(every_value(self.check(value))))

    def check_param(self, value, name: str, dist) -> None:
        ok = self.holds_for(value, dist) if isinstance(value, Tensor) else self.holds(
            np.asarray(value), dist)
        if not ok:
            raise ArgumentError(f"Expected parameter {name} (Tensor of shape "
                                f"{tuple(_t(value).shape)}) of distribution "
                                f"{type(dist).__name__} to satisfy the constraint {self!r}, "
                                "but found invalid values")

    @property
    def name(self) -> str:
        return self.__dict__.get("_name") or repr(self)

    @name.setter
    def name(self, value: str) -> None:
        self.__dict__["_name"] = value

    def __repr__(self) -> str:
        if "_name" in self.__dict__:
            return self.__dict__["_name"]
        return type(self).__name__.lstrip("_") + "()"


class _Dependent(Constraint):
    """A placeholder for a constraint that depends on other parameters (no check)."""

    def __init__(self, *, is_discrete=NotImplemented, event_dim=NotImplemented):
        self._is_discrete = is_discrete
        self._event_dim = event_dim

    @property
    def is_discrete(self) -> bool:
        if self._is_discrete is NotImplemented:
            raise NotImplementedError(".is_discrete cannot be determined statically")
        return self._is_discrete

    @property
    def event_dim(self) -> int:
        if self._event_dim is NotImplemented:
            raise NotImplementedError(".event_dim cannot be determined statically")
        return self._event_dim

    def __call__(self, *, is_discrete=NotImplemented, event_dim=NotImplemented):
        if is_discrete is NotImplemented:
            is_discrete = self._is_discrete
        if event_dim is NotImplemented:
            event_dim = self._event_dim
        return _Dependent(is_discrete=is_discrete, event_dim=event_dim)

    def check(self, x):
        raise ArgumentError("Cannot determine validity of dependent constraint")

    def holds_for(self, value, dist=None) -> bool:
        return True

    def holds(self, a, dist=None) -> bool:
        return True


def is_dependent(constraint) -> bool:
    """Whether `constraint` is a dependent (unknown until the parameters are) one."""
    return isinstance(constraint, _Dependent)


class _DependentProperty(property, _Dependent):
    """A property whose value is a constraint built from the instance's parameters
    (on the class it reads as a dependent constraint, as in torch)."""

    def __init__(self, fn=None, *, is_discrete=NotImplemented, event_dim=NotImplemented):
        property.__init__(self, fn)
        self._is_discrete = is_discrete
        self._event_dim = event_dim

    def __call__(self, fn):
        return _DependentProperty(fn, is_discrete=self._is_discrete,
                                  event_dim=self._event_dim)


class _IndependentConstraint(Constraint):
    """`base_constraint` with `reinterpreted_batch_ndims` more event dimensions."""

    def __init__(self, base_constraint: Constraint, reinterpreted_batch_ndims: int):
        if not isinstance(base_constraint, Constraint):
            raise TypeError("independent: base_constraint must be a Constraint")
        if not isinstance(reinterpreted_batch_ndims, int) or reinterpreted_batch_ndims < 0:
            raise ArgumentError("independent: reinterpreted_batch_ndims must be an int >= 0")
        self.base_constraint = base_constraint
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims

    @property
    def is_discrete(self) -> bool:
        return self.base_constraint.is_discrete

    @property
    def event_dim(self) -> int:
        return self.base_constraint.event_dim + self.reinterpreted_batch_ndims

    def check(self, value) -> Tensor:
        result = self.base_constraint.check(value)
        n = self.reinterpreted_batch_ndims
        if result.dim() < n:
            expected = self.base_constraint.event_dim + n
            raise ArgumentError(f"Expected value.dim() >= {expected} but got {_t(value).dim()}")
        if n == 0:
            return result
        return result.reshape(tuple(result.shape[:result.dim() - n]) + (-1,)).all(-1)

    def __repr__(self) -> str:
        return (f"IndependentConstraint({self.base_constraint!r}, "
                f"{self.reinterpreted_batch_ndims})")


class _Boolean(Constraint):
    is_discrete = True

    def check(self, value):
        value = _t(value)
        return (value == 0) | (value == 1)


class _OneHot(Constraint):
    is_discrete = True
    event_dim = 1

    def check(self, value):
        value = _t(value)
        is_boolean = (value == 0) | (value == 1)
        return is_boolean.all(-1) & (value.sum(-1) == 1)


def _fmt(v) -> str:
    return repr(v) if not isinstance(v, Tensor) else f"tensor{tuple(v.shape)}"


class _IntegerInterval(Constraint):
    is_discrete = True

    def __init__(self, lower_bound, upper_bound):
        self.lower_bound, self.upper_bound = lower_bound, upper_bound

    def check(self, value):
        value = _t(value)
        return (value % 1 == 0) & (value >= self.lower_bound) & (value <= self.upper_bound)

    def __repr__(self):
        return (f"IntegerInterval(lower_bound={_fmt(self.lower_bound)}, "
                f"upper_bound={_fmt(self.upper_bound)})")


class _IntegerLessThan(Constraint):
    is_discrete = True

    def __init__(self, upper_bound):
        self.upper_bound = upper_bound

    def check(self, value):
        value = _t(value)
        return (value % 1 == 0) & (value <= self.upper_bound)

    def __repr__(self):
        return f"IntegerLessThan(upper_bound={_fmt(self.upper_bound)})"


class _IntegerGreaterThan(Constraint):
    is_discrete = True

    def __init__(self, lower_bound):
        self.lower_bound = lower_bound

    def check(self, value):
        value = _t(value)
        return (value % 1 == 0) & (value >= self.lower_bound)

    def __repr__(self):
        return f"IntegerGreaterThan(lower_bound={_fmt(self.lower_bound)})"


class _Real(Constraint):
    def check(self, value):
        value = _t(value)
        return value == value


class _GreaterThan(Constraint):
    def __init__(self, lower_bound):
        self.lower_bound = lower_bound

    def check(self, value):
        return _t(value) > self.lower_bound

    def __repr__(self):
        return f"GreaterThan(lower_bound={_fmt(self.lower_bound)})"


class _GreaterThanEq(Constraint):
    def __init__(self, lower_bound):
        self.lower_bound = lower_bound

    def check(self, value):
        return _t(value) >= self.lower_bound

    def __repr__(self):
        return f"GreaterThanEq(lower_bound={_fmt(self.lower_bound)})"


class _LessThan(Constraint):
    def __init__(self, upper_bound):
        self.upper_bound = upper_bound

    def check(self, value):
        return _t(value) < self.upper_bound

    def __repr__(self):
        return f"LessThan(upper_bound={_fmt(self.upper_bound)})"


class _Interval(Constraint):
    def __init__(self, lower_bound, upper_bound):
        self.lower_bound, self.upper_bound = lower_bound, upper_bound

    def check(self, value):
        value = _t(value)
        return (value >= self.lower_bound) & (value <= self.upper_bound)

    def __repr__(self):
        return (f"Interval(lower_bound={_fmt(self.lower_bound)}, "
                f"upper_bound={_fmt(self.upper_bound)})")


class _HalfOpenInterval(Constraint):
    def __init__(self, lower_bound, upper_bound):
        self.lower_bound, self.upper_bound = lower_bound, upper_bound

    def check(self, value):
        value = _t(value)
        return (value >= self.lower_bound) & (value < self.upper_bound)

    def __repr__(self):
        return (f"HalfOpenInterval(lower_bound={_fmt(self.lower_bound)}, "
                f"upper_bound={_fmt(self.upper_bound)})")


class _Simplex(Constraint):
    event_dim = 1

    def check(self, value):
        value = _t(value)
        return (value >= 0).all(-1) & ((value.sum(-1) - 1).abs() < 1e-6)


class _Multinomial(Constraint):
    """Nonnegative integer counts summing to at most `upper_bound` (torch checks only
    nonnegativity and the sum)."""

    is_discrete = True
    event_dim = 1

    def __init__(self, upper_bound):
        self.upper_bound = upper_bound

    def check(self, x):
        x = _t(x)
        return (x >= 0).all(-1) & (x.sum(-1) <= self.upper_bound)


def _flat_all(x: Tensor) -> Tensor:
    return x.reshape(tuple(x.shape[:-2]) + (-1,)).all(-1)


class _LowerTriangular(Constraint):
    event_dim = 2

    def check(self, value):
        value = _t(value)
        return _flat_all(value.tril() == value)


class _LowerCholesky(Constraint):
    event_dim = 2

    def check(self, value):
        value = _t(value)
        lower = _flat_all(value.tril() == value)
        positive_diagonal = (value.diagonal(dim1=-2, dim2=-1) > 0).all(-1)
        return lower & positive_diagonal


class _CorrCholesky(Constraint):
    event_dim = 2

    def check(self, value):
        from .. import linalg

        value = _t(value)
        tol = float(np.finfo(value.data.dtype).eps) * value.shape[-1] * 10
        row_norm = linalg.norm(value.detach(), dim=-1)
        unit_row_norm = ((row_norm - 1).abs() <= tol).all(-1)
        return lower_cholesky.check(value) & unit_row_norm


class _Square(Constraint):
    event_dim = 2

    def check(self, value):
        from ..creation import full

        value = _t(value)
        return full(tuple(value.shape[:-2]), value.shape[-2] == value.shape[-1],
                    dtype="bool")


class _Symmetric(_Square):
    def check(self, value):
        from ..api.math import isclose

        value = _t(value)
        square_check = super().check(value)
        if not bool(np.all(square_check.data)):
            return square_check
        return isclose(value, value.mT, atol=1e-6).all(-2).all(-1)


class _PositiveSemidefinite(_Symmetric):
    def check(self, value):
        from .. import linalg

        value = _t(value)
        sym_check = super().check(value)
        if not bool(np.all(sym_check.data)):
            return sym_check
        return (linalg.eigvalsh(value) >= 0).all(-1)


class _PositiveDefinite(_Symmetric):
    def check(self, value):
        from .. import linalg

        value = _t(value)
        sym_check = super().check(value)
        if not bool(np.all(sym_check.data)):
            return sym_check
        return linalg.cholesky_ex(value).info == 0


class _Cat(Constraint):
    """Each of `cseq` applied to its slice (of size `lengths[i]`, default 1) along
    `dim`, the results joined along `dim`."""

    def __init__(self, cseq, dim: int = 0, lengths=None):
        self.cseq = list(cseq)
        self.lengths = [1] * len(self.cseq) if lengths is None else list(lengths)
        if len(self.lengths) != len(self.cseq):
            raise ArgumentError("cat: lengths and cseq differ in length")
        self.dim = dim

    @property
    def is_discrete(self):
        return any(c.is_discrete for c in self.cseq)

    @property
    def event_dim(self):
        return max(c.event_dim for c in self.cseq)

    def check(self, value):
        from ..api.shape import cat as _cat

        value = _t(value)
        checks, start = [], 0
        for constr, length in zip(self.cseq, self.lengths):
            checks.append(constr.check(value.narrow(self.dim, start, length)))
            start += length
        return _cat(checks, self.dim)


class _Stack(Constraint):
    """Each of `cseq` applied to its index along `dim`, the results stacked."""

    def __init__(self, cseq, dim: int = 0):
        self.cseq = list(cseq)
        self.dim = dim

    @property
    def is_discrete(self):
        return any(c.is_discrete for c in self.cseq)

    @property
    def event_dim(self):
        dim = max(c.event_dim for c in self.cseq)
        if self.dim + dim < 0:
            dim += 1
        return dim

    def check(self, value):
        from ..api.shape import stack as _stack

        value = _t(value)
        vs = [value.select(self.dim, i) for i in range(value.shape[self.dim])]
        return _stack([c.check(v) for v, c in zip(vs, self.cseq)], self.dim)


class MixtureSameFamilyConstraint(Constraint):
    """A component's support read for a mixture: a value is valid when it lies in the
    support of every component (the components' dimension is reduced)."""

    def __init__(self, base_constraint: Constraint):
        if not isinstance(base_constraint, Constraint):
            raise TypeError("MixtureSameFamilyConstraint: base_constraint must be a "
                            "Constraint")
        self.base_constraint = base_constraint

    @property
    def is_discrete(self) -> bool:
        return self.base_constraint.is_discrete

    @property
    def event_dim(self) -> int:
        return self.base_constraint.event_dim

    def check(self, value) -> Tensor:
        value = _t(value)
        result = self.base_constraint.check(value.unsqueeze(-1 - self.event_dim))
        if value.dim() < self.event_dim:
            raise ArgumentError(f"Expected value.dim() >= {self.event_dim} but got "
                                f"{value.dim()}")
        keep = value.dim() - self.event_dim
        return result.reshape(tuple(result.shape[:keep]) + (-1,)).all(-1)

    def __repr__(self) -> str:
        return f"MixtureSameFamilyConstraint({self.base_constraint!r})"


dependent = _Dependent()
dependent_property = _DependentProperty
independent = _IndependentConstraint
boolean = _Boolean()
one_hot = _OneHot()
nonnegative_integer = _IntegerGreaterThan(0)
positive_integer = _IntegerGreaterThan(1)
integer_interval = _IntegerInterval
real = _Real()
real_vector = independent(real, 1)
positive = _GreaterThan(0.0)
nonnegative = _GreaterThanEq(0.0)
greater_than = _GreaterThan
greater_than_eq = _GreaterThanEq
less_than = _LessThan
multinomial = _Multinomial
unit_interval = _Interval(0.0, 1.0)
interval = _Interval
half_open_interval = _HalfOpenInterval
simplex = _Simplex()
lower_triangular = _LowerTriangular()
lower_cholesky = _LowerCholesky()
corr_cholesky = _CorrCholesky()
square = _Square()
symmetric = _Symmetric()
positive_semidefinite = _PositiveSemidefinite()
positive_definite = _PositiveDefinite()
cat = _Cat
stack = _Stack
