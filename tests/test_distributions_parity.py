"""rg.distributions against torch.distributions 2.13: constraints, transforms, the
constraint registry, module paths and the distributions added for parity (float64)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.distributions as TD

import retrograd as rg
import retrograd.distributions as RD


def T(a):
    return torch.tensor(np.asarray(a, dtype=np.float64))


def R(a, requires_grad=False):
    return rg.tensor(np.asarray(a, dtype=np.float64), requires_grad=requires_grad)


def close(r, t, atol=1e-9, rtol=1e-7):
    r = r.detach().numpy() if hasattr(r, "detach") else np.asarray(r)
    t = t.detach().numpy() if hasattr(t, "detach") else np.asarray(t)
    np.testing.assert_allclose(r, t, atol=atol, rtol=rtol)


# ---------------------------------------------------------------- constraints

_rng = np.random.default_rng(0)
_A = _rng.normal(size=(3, 3))
_VALUES = [
    np.array([-1.0, 0.0, 0.5, 1.0, 2.0, 3.0]),
    np.array([[0.2, 0.8], [0.5, 0.6], [1.0, 0.0]]),
    np.array([[[1.0, 0.0], [0.5, 2.0]], [[1.0, 0.3], [0.3, 2.0]], [[0.0, 0.0], [1.0, -1.0]]]),
    np.stack([_A @ _A.T + np.eye(3), _A + _A.T, np.tril(_A)]),
    np.array([[1.0, 0.0, 0.0], [0.6, 0.8, 0.0], [0.0, 0.6, 0.8]])[None],
]


def _constraint_pairs():
    C, TC = RD.constraints, TD.constraints
    names = ["real", "real_vector", "positive", "nonnegative", "unit_interval", "simplex",
             "boolean", "nonnegative_integer", "positive_integer", "lower_cholesky",
             "lower_triangular", "corr_cholesky", "positive_definite",
             "positive_semidefinite", "square", "symmetric", "one_hot"]
    pairs = [(n, getattr(C, n), getattr(TC, n)) for n in names]
    pairs += [("greater_than", C.greater_than(0.5), TC.greater_than(0.5)),
              ("greater_than_eq", C.greater_than_eq(0.5), TC.greater_than_eq(0.5)),
              ("less_than", C.less_than(1.0), TC.less_than(1.0)),
              ("interval", C.interval(0.0, 2.0), TC.interval(0.0, 2.0)),
              ("half_open", C.half_open_interval(0.0, 2.0), TC.half_open_interval(0.0, 2.0)),
              ("integer_interval", C.integer_interval(0, 2), TC.integer_interval(0, 2)),
              ("multinomial", C.multinomial(1), TC.multinomial(1)),
              ("independent", C.independent(C.positive, 1), TC.independent(TC.positive, 1))]
    return pairs


@pytest.mark.parametrize("name,rc,tc", _constraint_pairs(), ids=lambda x: x
                         if isinstance(x, str) else "")
def test_constraint_check_matches_torch(name, rc, tc):
    assert rc.is_discrete == tc.is_discrete
    assert rc.event_dim == tc.event_dim
    for v in _VALUES:
        if v.ndim < tc.event_dim or (tc.event_dim == 2 and v.shape[-1] != v.shape[-2]
                                     and name not in ("square", "lower_triangular")):
            continue
        want = tc.check(T(v))
        got = rc.check(R(v))
        assert got.dtype == rg.bool
        assert tuple(got.shape) == tuple(want.shape), (name, v.shape)
        np.testing.assert_array_equal(got.numpy(), want.numpy(), err_msg=name)


def test_constraint_cat_stack_dependent():
    C, TC = RD.constraints, TD.constraints
    v = np.array([[-1.0, 0.5, 2.0], [1.0, -0.5, 0.2]])
    rc = C.cat([C.real, C.positive, C.unit_interval], dim=1)
    tc = TC.cat([TC.real, TC.positive, TC.unit_interval], dim=1)
    np.testing.assert_array_equal(rc.check(R(v)).numpy(), tc.check(T(v)).numpy())
    rs = C.stack([C.real, C.positive, C.unit_interval], dim=1)
    ts = TC.stack([TC.real, TC.positive, TC.unit_interval], dim=1)
    np.testing.assert_array_equal(rs.check(R(v)).numpy(), ts.check(T(v)).numpy())
    assert C.is_dependent(C.dependent) and not C.is_dependent(C.real)
    with pytest.raises(ValueError):
        C.dependent.check(R(v))
    with pytest.raises(ValueError):
        C.independent(C.real, 3).check(R(v))


def test_supports_are_torch_constraints():
    C = RD.constraints
    cases = [(RD.Uniform(0.0, 2.0), TD.Uniform(0.0, 2.0), [-0.1, 0.0, 1.0, 2.0, 2.5]),
             (RD.Binomial(3, R(0.3)), TD.Binomial(3, T(0.3)), [-1.0, 0.0, 1.5, 3.0, 4.0]),
             (RD.Categorical(R([0.2, 0.8])), TD.Categorical(T([0.2, 0.8])), [0, 1, 2]),
             (RD.Pareto(1.0, 2.0), TD.Pareto(1.0, 2.0), [0.5, 1.0, 3.0]),
             (RD.Normal(0.0, 1.0), TD.Normal(0.0, 1.0), [0.0, np.nan]),
             (RD.Exponential(1.0), TD.Exponential(1.0), [-1.0, 0.0, 1.0])]
    for rd, td, v in cases:
        assert isinstance(rd.support, C.Constraint)
        assert type(rd.support).__name__ == type(td.support).__name__
        np.testing.assert_array_equal(rd.support.check(R(v)).numpy(),
                                      td.support.check(T(v)).numpy())
    assert C.is_dependent(RD.Uniform.support)
    assert RD.Normal.arg_constraints["scale"] is C.positive
    assert RD.Dirichlet.support is C.simplex
