# ruff: noqa: B023  (the lambdas are called at once, inside the loop)
"""PyTorch's reduction, set, statistics, number and index-write names against torch.

amax/amin/aminmax, count_nonzero, nanmedian, quantile/nanquantile, unique,
unique_consecutive, bincount, histc, histogram, bucketize, searchsorted, isin,
isneginf/isposinf/isreal, sgn, signbit, heaviside, float_power, ldexp, frexp,
gcd/lcm, nextafter, take, select, argwhere, index_fill/copy/put/reduce, put,
masked_scatter, select/slice/diagonal_scatter, split_with_sizes, h/v/dsplit,
sum_to_size and the in-place forms: values, dtypes and shapes, float64 gradients
(against torch and finite differences), bad arguments raising torch's exception
type with a message naming the argument, and a few rg.jit replays.
"""

import warnings

import numpy as np
import pytest
import torch

import retrograd as rg
from retrograd.jit import JitError

rng = np.random.default_rng(0)
NAN, INF = np.nan, np.inf


def _rg(a):
    a = np.asarray(a)
    return rg.tensor(a, requires_grad=a.dtype.kind == "f")


def _th(a):
    a = np.asarray(a)
    t = torch.tensor(a)
    return t.requires_grad_(True) if a.dtype.kind == "f" else t


def _leaves(out):
    if isinstance(out, (tuple, list)):
        return [v for o in out for v in _leaves(o)]
    return [out]


def _dtype(t) -> np.dtype:
    return np.dtype(str(t.dtype).replace("torch.", ""))


def compare(ours_fn, torch_fn, *args, grad=True, rtol=1e-12, atol=1e-12):
    """Same values, dtypes and shapes (named-tuple fields too); then the gradients of a
    random weighted sum of the float outputs, for every float input."""
    ours_in = [_rg(a) if isinstance(a, np.ndarray) else a for a in args]
    th_in = [_th(a) if isinstance(a, np.ndarray) else a for a in args]
    ours, theirs = ours_fn(*ours_in), torch_fn(*th_in)
    if hasattr(theirs, "_fields"):
        assert type(ours).__name__ == type(theirs).__name__.split(".")[-1]
        assert ours._fields == theirs._fields, (ours._fields, theirs._fields)
    o_list, t_list = _leaves(ours), _leaves(theirs)
    assert len(o_list) == len(t_list)
    for o, t in zip(o_list, t_list):
        assert isinstance(o, rg.Tensor)
        assert o.shape == tuple(t.shape), (o.shape, tuple(t.shape))
        assert o.dtype == _dtype(t), (o.dtype, t.dtype)
        want = t.detach().numpy()
        if o.dtype.kind in "fc":
            np.testing.assert_allclose(o.data, want, rtol=rtol, atol=atol, equal_nan=True)
        else:
            np.testing.assert_array_equal(o.data, want)
        if o.dtype.kind not in "fc":
            assert not o.requires_grad
    if not grad:
        return ours
    pairs = [(o, t) for o, t in zip(o_list, t_list) if o.dtype.kind == "f" and t.requires_grad]
    if not pairs:
        return ours
    # no weight on a NaN output: which NaN entry its gradient reaches is arbitrary
    ws = [np.where(np.isnan(o.data), 0.0, rng.standard_normal(o.shape)) for o, _ in pairs]
    sum((o * rg.tensor(w)).sum() for (o, _), w in zip(pairs, ws)).backward()
    sum((t * torch.tensor(w)).sum() for (_, t), w in zip(pairs, ws)).backward()
    for o, t in zip(ours_in, th_in):
        if isinstance(o, rg.Tensor) and o.requires_grad:
            zero = t.grad is None or t.grad._is_zerotensor()
            want = np.zeros(t.shape) if zero else t.grad.numpy()
            got = o.grad.data if o.grad is not None else np.zeros(o.shape)
            np.testing.assert_allclose(got, want, rtol=1e-10, atol=atol)
    return ours


def gradcheck(fn, *arrays):
    xs = [rg.tensor(np.asarray(a, np.float64), requires_grad=True) for a in arrays]
    assert rg.gradcheck(fn, xs)


def distinct(*shape):
    return rng.permutation(np.arange(int(np.prod(shape)), dtype=np.float64)).reshape(shape) \
        + rng.uniform(0, 0.5, shape)


X = rng.standard_normal((3, 4))


# ----------------------------------------------------------------- amax, amin, aminmax


@pytest.mark.parametrize("name", ["amax", "amin"])
@pytest.mark.parametrize("dim", [(), 0, 1, -1, (0, 1), [1, 0]])
@pytest.mark.parametrize("keepdim", [False, True])
def test_amax_amin(name, dim, keepdim):
    compare(lambda x: getattr(rg, name)(x, dim, keepdim),
            lambda x: getattr(torch, name)(x, dim, keepdim), X)


@pytest.mark.parametrize("name", ["amax", "amin"])
def test_amax_amin_share_the_gradient_among_ties_unlike_max_dim(name):
    x = np.array([[1., 3., 3., -1.], [2., 2., 0., 0.], [5., 5., 5., 5.]])
    for dim in [1, 0, (), (0, 1)]:
        compare(lambda t: getattr(rg, name)(t, dim), lambda t: getattr(torch, name)(t, dim), x)
    a = rg.tensor(x, requires_grad=True)
    rg.amax(a, 1).sum().backward()
    np.testing.assert_allclose(a.grad.data[0], [0, 0.5, 0.5, 0])


def test_amax_of_integers_bools_and_0d():
    ints = rng.integers(-5, 5, (3, 4))
    compare(lambda x: rg.amax(x, 1), lambda x: torch.amax(x, 1), ints)
    compare(lambda x: rg.amin(x), lambda x: torch.amin(x), ints > 0)
    compare(lambda x: rg.amax(x, 0), lambda x: torch.amax(x, 0), np.array(2.5))
    compare(lambda x: rg.amin(x, 1), lambda x: torch.amin(x, 1), np.zeros((0, 3)))


@pytest.mark.parametrize("dim", [None, 0, 1, -1])
@pytest.mark.parametrize("keepdim", [False, True])
def test_aminmax(dim, keepdim):
    x = np.array([[1., 3., 3., -1.], [2., 2., 0., 0.], [5., 5., 5., 5.]])
    compare(lambda t: rg.aminmax(t, dim=dim, keepdim=keepdim),
            lambda t: torch.aminmax(t, dim=dim, keepdim=keepdim), x)
    compare(lambda t: rg.aminmax(t, dim=dim, keepdim=keepdim),
            lambda t: torch.aminmax(t, dim=dim, keepdim=keepdim), x.astype(np.int64))


@pytest.mark.parametrize("dim", [None, 0, 1, (0, 1), [1], ()])
def test_count_nonzero(dim):
    x = np.array([[0., 1.5, 0.], [-2., 0., 3.]])
    compare(lambda t: rg.count_nonzero(t, dim), lambda t: torch.count_nonzero(t, dim), x)
    compare(lambda t: rg.count_nonzero(t, dim), lambda t: torch.count_nonzero(t, dim),
            x != 0)


# ----------------------------------------------------------------- nanmedian, quantile


def test_nanmedian():
    x = distinct(3, 5)
    x[0, 1] = x[2, 0] = x[2, 3] = NAN
    compare(rg.nanmedian, torch.nanmedian, x)
    for dim in [0, 1, -1]:
        for keepdim in [False, True]:
            compare(lambda t: rg.nanmedian(t, dim, keepdim),
                    lambda t: torch.nanmedian(t, dim, keepdim), x)
    compare(lambda t: rg.nanmedian(t, 0), lambda t: torch.nanmedian(t, 0), np.array(3.0))
    compare(rg.nanmedian, torch.nanmedian, np.array([NAN, NAN]))
    # over all entries, ties share the gradient (along a dim it goes to the index)
    compare(rg.nanmedian, torch.nanmedian, np.array([[2., 1., NAN], [2., 3., 2.]]))
    compare(rg.nanmedian, torch.nanmedian, np.array([INF, INF, 1.0]))
    compare(rg.nanmedian, torch.nanmedian, np.array([4, 1, 7, 2]))
    # a row of NaN only: NaN, at one of its positions (PyTorch's pick is an accident of
    # its selection algorithm)
    out = rg.nanmedian(rg.tensor([[NAN, NAN, NAN], [1.0, NAN, 2.0]]), 1)
    assert np.isnan(out.values.data[0]) and out.values.data[1] == 1.0
    assert 0 <= out.indices.data[0] < 3 and out.indices.data[1] == 0


QS = [0.0, 0.25, 0.3, 0.5, 0.77, 1.0]
MODES = ["linear", "lower", "higher", "midpoint", "nearest"]


@pytest.mark.parametrize("interpolation", MODES)
@pytest.mark.parametrize("dim", [None, 0, 1, -1])
@pytest.mark.parametrize("keepdim", [False, True])
def test_quantile_against_torch_with_gradients_to_input_and_q(interpolation, dim, keepdim):
    x = distinct(3, 5)
    for q in (0.3, np.array(QS), np.array(0.6)):
        compare(lambda t, qq: rg.quantile(t, qq, dim, keepdim, interpolation=interpolation),
                lambda t, qq: torch.quantile(t, qq, dim, keepdim, interpolation=interpolation),
                x, q)


@pytest.mark.parametrize("interpolation", MODES)
def test_nanquantile_and_nan_rows(interpolation):
    x = distinct(4, 5)
    x[0, 1] = x[1, 2] = x[1, 4] = NAN
    x[3] = NAN
    for dim in [None, 0, 1]:
        for name in ("quantile", "nanquantile"):
            compare(lambda t: getattr(rg, name)(t, rg.tensor(QS, dtype=rg.float64), dim,
                                                interpolation=interpolation),
                    lambda t: getattr(torch, name)(t, torch.tensor(QS, dtype=torch.float64), dim,
                                                   interpolation=interpolation), x)


def test_quantile_float32_and_methods():
    x = distinct(2, 6).astype(np.float32)
    compare(lambda t: t.quantile(0.4, 1), lambda t: t.quantile(0.4, 1), x, rtol=1e-6)
    compare(lambda t: t.nanquantile(np.float32(0.9)), lambda t: t.nanquantile(0.9), x,
            rtol=1e-6)
    gradcheck(lambda t, q: rg.quantile(t, q, 1), distinct(3, 4), np.array([0.2, 0.65]))


# ----------------------------------------------------------------- unique and counts


@pytest.mark.parametrize("flags", [{}, {"return_inverse": True}, {"return_counts": True},
                                   {"return_inverse": True, "return_counts": True}])
def test_unique_and_unique_consecutive(flags):
    ints = np.array([[3, 1, 2], [3, 1, 5], [3, 1, 2], [0, 0, 0]])
    floats = np.array([1., NAN, 1., NAN, -0., 0., 2.5])
    for x in (ints, floats, ints > 1, np.array(3.0), np.zeros((0, 3))):
        compare(lambda t: rg.unique(t, **flags), lambda t: torch.unique(t, **flags), x,
                grad=False)
        compare(lambda t: rg.unique(t, sorted=False, **flags),
                lambda t: torch.unique(t, sorted=False, **flags), x, grad=False)
        compare(lambda t: rg.unique_consecutive(t, **flags),
                lambda t: torch.unique_consecutive(t, **flags), x, grad=False)
    for dim in (0, 1, -1):
        compare(lambda t: rg.unique(t, dim=dim, **flags),
                lambda t: torch.unique(t, dim=dim, **flags), ints)
        compare(lambda t: t.unique_consecutive(dim=dim, **flags),
                lambda t: t.unique_consecutive(dim=dim, **flags), ints)
        compare(lambda t: t.unique(dim=dim, **flags), lambda t: t.unique(dim=dim, **flags),
                np.array([[1.0, NAN], [1.0, NAN], [0.0, 2.0]]), grad=False)
    assert not rg.unique(rg.tensor(floats, requires_grad=True)).requires_grad


def test_isin():
    e = np.array([[1, 2], [3, 4]])
    compare(lambda a, b: rg.isin(a, b), lambda a, b: torch.isin(a, b), e, np.array([2, 3]))
    compare(lambda a: rg.isin(a, 3, invert=True), lambda a: torch.isin(a, 3, invert=True), e)
    compare(lambda a: rg.isin(3, a), lambda a: torch.isin(3, a), e)
    compare(lambda a, b: rg.isin(a, b, assume_unique=True),
            lambda a, b: torch.isin(a, b, assume_unique=True), e, np.array([2.0, 3.5]))
    compare(rg.isin, torch.isin, np.array([1., NAN, 2.]), np.array([NAN, 2.]))


def test_bincount():
    x = np.array([1, 3, 1, 0, 6])
    compare(rg.bincount, torch.bincount, x)
    compare(lambda t: rg.bincount(t, minlength=9), lambda t: torch.bincount(t, minlength=9),
            x)
    compare(lambda t: t.bincount(minlength=2), lambda t: t.bincount(minlength=2),
            np.zeros(0, np.int64))
    for w in (rng.standard_normal(5), rng.standard_normal(5).astype(np.float32),
              np.arange(5), np.array([True, False, True, True, False])):
        compare(lambda t, ww: rg.bincount(t, ww), lambda t, ww: torch.bincount(t, ww), x, w,
                grad=False, rtol=1e-6)
    w = rg.tensor(rng.standard_normal(5), requires_grad=True)  # ours: an index_add
    rg.bincount(rg.tensor(x), w).backward(rg.tensor(np.arange(7.0)))
    np.testing.assert_allclose(w.grad.data, x.astype(float))


# ----------------------------------------------------------------- histograms


def test_histc():
    f = np.array([1., 2., 1., 2.5, 4., 0., NAN, INF], np.float32)
    compare(lambda t: rg.histc(t, 4, 0, 3), lambda t: torch.histc(t, 4, 0, 3), f)
    compare(lambda t: t.histc(bins=4), lambda t: t.histc(bins=4), f[:6])
    compare(lambda t: rg.histc(t, 3), lambda t: torch.histc(t, 3), np.array([1.0, 1.0]))
    compare(lambda t: rg.histc(t, 3), lambda t: torch.histc(t, 3), np.zeros(0))
    r = rng.standard_normal(500).astype(np.float32)
    for bins in (1, 7, 33, 100):
        compare(lambda t: rg.histc(t, bins), lambda t: torch.histc(t, bins), r)
        compare(lambda t: rg.histc(t, bins, -1, 1.5), lambda t: torch.histc(t, bins, -1, 1.5),
                r.astype(np.float64))
    assert not rg.histc(rg.tensor(r, requires_grad=True)).requires_grad


@pytest.mark.parametrize("bins", [1, 4, 7, 33])
def test_histogram_with_equal_bins(bins):
    r = rng.standard_normal((20, 10)).astype(np.float32)
    w = rng.uniform(0, 2, r.shape).astype(np.float32)
    for kw in ({}, {"range": (-1.0, 2.0)}, {"density": True},
               {"range": (-1.0, 2.0), "density": True}):
        compare(lambda t: rg.histogram(t, bins, **kw), lambda t: torch.histogram(t, bins, **kw),
                r, grad=False, rtol=1e-6)
        compare(lambda t, ww: rg.histogram(t, bins, weight=ww, **kw),
                lambda t, ww: torch.histogram(t, bins, weight=ww, **kw), r, w, grad=False,
                rtol=1e-5)


def test_histogram_with_given_edges():
    r = rng.standard_normal(300)
    edges = np.array([-2., -0.5, 0., 0.1, 3.])
    for density in (False, True):
        compare(lambda t, e: rg.histogram(t, e, density=density),
                lambda t, e: torch.histogram(t, e, density=density), r, edges, grad=False)
    compare(lambda t: rg.histogram(t, 2), lambda t: torch.histogram(t, 2), np.array([1., 1.]),
            grad=False)
    compare(lambda t: t.histogram(2), lambda t: t.histogram(2), np.zeros(0), grad=False)


# ----------------------------------------------------------------- searching


@pytest.mark.parametrize("right", [False, True])
def test_bucketize_and_searchsorted(right):
    b = np.array([1., 3., 5., 7.])
    v = np.array([[0., 3., 6.], [7., 8., 1.], [NAN, -INF, 5.]])
    for int32 in (False, True):
        compare(lambda x, bb: rg.bucketize(x, bb, out_int32=int32, right=right),
                lambda x, bb: torch.bucketize(x, bb, out_int32=int32, right=right), v, b)
    compare(lambda bb: rg.bucketize(3.0, bb, right=right),
            lambda bb: torch.bucketize(3.0, bb, right=right), b)
    s2 = np.array([[1., 3., 5., 7.], [2., 4., 6., 8.], [0., 0., 1., 1.]])
    side = "right" if right else "left"
    compare(lambda s, x: rg.searchsorted(s, x, right=right),
            lambda s, x: torch.searchsorted(s, x, right=right), s2, v)
    compare(lambda s, x: rg.searchsorted(s, x, side=side),
            lambda s, x: torch.searchsorted(s, x, side=side), b, v)
    compare(lambda s: rg.searchsorted(s, 4.0, right=right),
            lambda s: torch.searchsorted(s, 4.0, right=right), b)
    compare(lambda s, x: rg.searchsorted(s, x, side=side, sorter=rg.tensor([1, 2, 0])),
            lambda s, x: torch.searchsorted(s, x, side=side, sorter=torch.tensor([1, 2, 0])),
            np.array([5., 1., 3.]), np.array([2., 4., 5.]))
    compare(lambda s, x: rg.searchsorted(s, x), lambda s, x: torch.searchsorted(s, x),
            np.array([1, 3, 5]), np.array([2.5, 3.0]))


# ----------------------------------------------------------------- number functions


F32 = np.array([-INF, -1.5, -0.0, 0.0, 2.0, INF, NAN, -NAN], np.float32)
INTS = np.array([-3, 0, 2])
BOOLS = np.array([True, False])


@pytest.mark.parametrize("name", ["isneginf", "isposinf", "isreal", "signbit", "sgn"])
def test_predicates_and_sign(name):
    for x in (F32, F32.astype(np.float64), INTS, BOOLS):
        compare(getattr(rg, name), getattr(torch, name), x, grad=False)
        compare(lambda t: getattr(t, name)(), lambda t: getattr(t, name)(), x, grad=False)


def test_isreal_and_sgn_of_complex_numbers_with_gradient():
    c = np.array([3 + 4j, 0j, -2j, 1 + 1j, NAN + 0j])
    compare(rg.isreal, torch.isreal, c)
    z = np.array([3 + 4j, 0j, -2j, 1 - 1j])
    ours, theirs = rg.tensor(z, requires_grad=True), torch.tensor(z, requires_grad=True)
    s, ts = rg.sgn(ours), torch.sgn(theirs)
    np.testing.assert_allclose(s.data, ts.detach().numpy())
    w1, w2 = rng.standard_normal(4), rng.standard_normal(4)
    (rg.real(s) * rg.tensor(w1) + rg.imag(s) * rg.tensor(w2)).sum().backward()
    (ts.real * torch.tensor(w1) + ts.imag * torch.tensor(w2)).sum().backward()
    np.testing.assert_allclose(ours.grad.data, theirs.grad.numpy(), atol=1e-12)
    compare(rg.sgn, torch.sgn, np.array([-1.5, 0.5, 2.0]))  # real: zero gradient


def test_heaviside():
    compare(lambda x, v: rg.heaviside(x, v), lambda x, v: torch.heaviside(x, v), F32,
            np.array(0.5, np.float32), grad=False)
    compare(rg.heaviside, torch.heaviside, INTS, np.array([7]))
    compare(lambda x, v: x.heaviside(v), lambda x, v: x.heaviside(v),
            np.array([[-1., 0., 2.], [0., 0., 1.]]), np.array([0.25, 0.5, 0.75]), grad=False)


def test_float_power():
    compare(lambda x: rg.float_power(x, 2), lambda x: torch.float_power(x, 2), INTS)
    compare(rg.float_power, torch.float_power, np.array([2., 3.]), np.array([2, 3]))
    compare(lambda e: rg.float_power(2, e), lambda e: torch.float_power(2, e), INTS)
    compare(lambda x: rg.float_power(x, 2), lambda x: torch.float_power(x, 2),
            np.array([1j, 2 - 1j]))
    x32 = np.array([2., 3.], np.float32)
    compare(lambda x: x.float_power(2.5), lambda x: x.float_power(2.5), x32)
    compare(rg.float_power, torch.float_power, np.array([1.5, 2.5]), np.array([0.5, -1.25]))


def test_ldexp():
    # integer exponents: torch's gradient takes 2 ** e in integers (0 for e < 0), so the
    # gradient is checked against the formula 2 ** e instead
    x = np.array([1., -2.5, 0.75], np.float32)
    e = np.array([3, -1, -2])
    compare(rg.ldexp, torch.ldexp, x, e, grad=False)
    xt = rg.tensor(x, requires_grad=True)
    rg.ldexp(xt, rg.tensor(e)).sum().backward()
    np.testing.assert_array_equal(xt.grad.data, 2.0 ** e)
    compare(rg.ldexp, torch.ldexp, INTS, np.array([3, -1, 0]))
    compare(rg.ldexp, torch.ldexp, np.array([1.5, 2.0]), np.array([3.0, -1.5]))
    compare(lambda x, e: x.ldexp(e), lambda x, e: x.ldexp(e), np.array([1.5, 2.0]),
            np.array([2, 0]))


def test_frexp_exact_to_the_subnormals_and_its_gradient():
    f32 = np.array([8., 0.3, -0., 0., INF, -INF, NAN, -5e-45, 3e38, 1e-40, -3.4e38],
                   np.float32)
    compare(rg.frexp, torch.frexp, f32, grad=False)
    f64 = np.array([8., 0.3, -0., 5e-324, 1.7e308, -2.2e-310, 1e-300, -0.75])
    compare(rg.frexp, torch.frexp, f64, grad=False)
    compare(lambda x: x.frexp(), lambda x: x.frexp(), np.array([8., 0.3, -5.0, 1e-30]))
    # torch's gradient takes 2 ** exponent in float32 (inf below 2 ** -149): the formula
    x = rg.tensor([1e-300, 3e300], requires_grad=True, dtype=rg.float64)
    m, e = rg.frexp(x)
    m.sum().backward()
    np.testing.assert_array_equal(x.grad.data, 2.0 ** -e.data.astype(np.float64))


def test_gcd_lcm_nextafter():
    a, b = np.array([12, -18, 0, 0, 2 ** 40, 7]), np.array([8, 12, 5, 0, 3 ** 20, -21])
    for name in ("gcd", "lcm"):
        compare(getattr(rg, name), getattr(torch, name), a, b)
        compare(getattr(rg, name), getattr(torch, name), a.astype(np.int32), b)
        compare(lambda x, y: getattr(x, name)(y), lambda x, y: getattr(x, name)(y), a, b)
    for dt in (np.float32, np.float64):
        x, y = np.array([1., 2., 0., -1.], dt), np.array([2., 1., -1., -1.], dt)
        compare(rg.nextafter, torch.nextafter, x, y, grad=False, rtol=0, atol=0)


# ----------------------------------------------------------------- indexing extras


def test_take_select_argwhere():
    compare(lambda x: rg.take(x, rg.tensor([[0, 11], [-1, 5], [3, 3]])),
            lambda x: torch.take(x, torch.tensor([[0, 11], [-1, 5], [3, 3]])), X)
    compare(lambda x: x.take(rg.tensor(2)), lambda x: x.take(torch.tensor(2)), X)
    for dim, index in ((1, -1), (0, 2), (-1, 0)):
        compare(lambda x: rg.select(x, dim, index), lambda x: torch.select(x, dim, index), X)
        compare(lambda x: x.select(dim, index), lambda x: x.select(dim, index), X)
    m = np.array([[0., 1.5, 0.], [-2., 0., 3.]])
    compare(rg.argwhere, torch.argwhere, m)
    compare(lambda x: x.argwhere(), lambda x: x.argwhere(), np.array(2.0))


def test_index_fill_and_index_copy():
    compare(lambda x: rg.index_fill(x, 1, rg.tensor([0, -1, 0]), -1.0),
            lambda x: torch.index_fill(x, 1, torch.tensor([0, -1, 0]), -1.0), X)
    compare(lambda x, v: x.index_fill(0, rg.tensor([2, 2]), v),
            lambda x, v: x.index_fill(0, torch.tensor([2, 2]), v), X, np.array(2.5))
    compare(lambda x: x.index_fill(0, rg.tensor(1), 7), lambda x: x.index_fill(
        0, torch.tensor(1), 7), np.array([1, 2, 3]))
    for dim, idx, shape in ((1, [0, 2], (3, 2)), (0, [2, 0, 1], (3, 4))):
        compare(lambda x, s: rg.index_copy(x, dim, rg.tensor(idx), s),
                lambda x, s: torch.index_copy(x, dim, torch.tensor(idx), s), X,
                rng.standard_normal(shape))


@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_index_reduce(reduce, include_self):
    x, s = distinct(3, 4), distinct(3, 4) + 0.25
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch: index_reduce is in beta
        compare(lambda a, b: rg.index_reduce(a, 0, rg.tensor([0, 2, 0]), b, reduce,
                                             include_self=include_self),
                lambda a, b: a.index_reduce(0, torch.tensor([0, 2, 0]), b, reduce,
                                            include_self=include_self), x, s)
        compare(lambda a, b: a.index_reduce(1, rg.tensor([3, 3]), b, reduce),
                lambda a, b: a.index_reduce(1, torch.tensor([3, 3]), b, reduce), x,
                distinct(3, 2))


@pytest.mark.parametrize("accumulate", [False, True])
def test_index_put_and_put(accumulate):
    cases = [
        ((rg.tensor([0, 2]), rg.tensor([1, -1])), (torch.tensor([0, 2]), torch.tensor([1, -1])),
         np.array(5.0)),
        ((rg.tensor([0, 2, 1]),), (torch.tensor([0, 2, 1]),), rng.standard_normal(4)),
        ((rg.tensor([[0], [2]]), rg.tensor([1, 3, 1])),
         (torch.tensor([[0], [2]]), torch.tensor([1, 3, 1])), rng.standard_normal((2, 3))),
        ((rg.tensor([True, False, True]),), (torch.tensor([True, False, True]),),
         rng.standard_normal(4)),
    ]
    if accumulate:  # repeated positions: defined only when they add up
        cases.append(((rg.tensor([0, 0, 1]), rg.tensor([3, 3, 3])),
                      (torch.tensor([0, 0, 1]), torch.tensor([3, 3, 3])),
                      rng.standard_normal(3)))
    for ri, ti, v in cases:
        compare(lambda x, vv: rg.index_put(x, ri, vv, accumulate),
                lambda x, vv: torch.index_put(x, ti, vv, accumulate), X, v)
    idx = [0, 11, -1, 5] if not accumulate else [0, 0, -1, 5]
    compare(lambda x, s: rg.put(x, rg.tensor(idx), s, accumulate),
            lambda x, s: torch.put(x, torch.tensor(idx), s, accumulate), X,
            rng.standard_normal((2, 2)))


def test_masked_scatter():
    m = np.array([[True, False, True, False], [False] * 4, [True] * 4])
    compare(lambda x, s: rg.masked_scatter(x, rg.tensor(m), s),
            lambda x, s: torch.masked_scatter(x, torch.tensor(m), s), X,
            rng.standard_normal(10))
    compare(lambda x, s: x.masked_scatter(rg.tensor(m[0]), s),
            lambda x, s: x.masked_scatter(torch.tensor(m[0]), s), X,
            rng.standard_normal((2, 5)))
    compare(lambda x, s: x.masked_scatter(rg.tensor(m), s),  # input broadcast to the mask
            lambda x, s: x.masked_scatter(torch.tensor(m), s), X[0], rng.standard_normal(6))
    gradcheck(lambda x, s: rg.masked_scatter(x, rg.tensor(m), s), X, rng.standard_normal(7))


def test_select_slice_and_diagonal_scatter():
    compare(lambda x, s: rg.select_scatter(x, s, 1, -1),
            lambda x, s: torch.select_scatter(x, s, 1, -1), X, rng.standard_normal(3))
    for kw, shape in (({"dim": 1, "start": 0, "end": 4, "step": 2}, (3, 2)),
                      ({"start": -1}, (1, 4)), ({"dim": 1, "end": -1}, (3, 3))):
        compare(lambda x, s: rg.slice_scatter(x, s, **kw),
                lambda x, s: torch.slice_scatter(x, s, **kw), X, rng.standard_normal(shape))
    for off, d1, d2, n in ((0, 0, 1, 3), (1, 0, 1, 3), (-1, 0, 1, 2), (2, 1, 0, 1)):
        compare(lambda x, s: rg.diagonal_scatter(x, s, off, d1, d2),
                lambda x, s: torch.diagonal_scatter(x, s, off, d1, d2), X,
                rng.standard_normal(n))
    compare(lambda x, s: x.diagonal_scatter(s, 0, 0, 2),
            lambda x, s: x.diagonal_scatter(s, 0, 0, 2), rng.standard_normal((2, 3, 4)),
            rng.standard_normal((3, 2)))
    gradcheck(lambda x, s: rg.diagonal_scatter(x, s, 1), X, rng.standard_normal(3))


def test_splits_and_sum_to_size():
    compare(lambda x: rg.split_with_sizes(x, [1, 2, 1], 1),
            lambda x: torch.split_with_sizes(x, [1, 2, 1], 1), X)
    compare(lambda x: x.split_with_sizes([2, 1]), lambda x: x.split_with_sizes([2, 1]), X)
    for name, x, arg in (("hsplit", X, 2), ("hsplit", X, [1, 3]), ("vsplit", X, 3),
                         ("hsplit", rng.standard_normal(6), 3),
                         ("dsplit", rng.standard_normal((2, 2, 4)), [1])):
        compare(lambda t: getattr(rg, name)(t, arg), lambda t: getattr(torch, name)(t, arg), x)
        compare(lambda t: getattr(t, name)(arg), lambda t: getattr(t, name)(arg), x)
    for size in ((1, 4), (3, 1), (4,), (1, 1), (3, 4), ((1, 4),)):
        compare(lambda x: x.sum_to_size(*size), lambda x: x.sum_to_size(*size), X)


# ----------------------------------------------------------------- in-place forms


def test_in_place_index_writes():
    m = torch.tensor([[True, False, True, False], [False] * 4, [True] * 4])
    steps = [
        ("index_fill_", (1, [0, 2], -1.0)), ("index_copy_", (0, [2, 0], "src24")),
        ("index_put_", ("idx", "val")), ("masked_scatter_", ("mask", "src10")),
        ("put_", ([0, -1], "src2")), ("index_reduce_", (0, [1, 1], "src24", "amax")),
    ]
    srcs = {"src24": rng.standard_normal((2, 4)), "src10": rng.standard_normal(10),
            "src2": rng.standard_normal(2), "val": rng.standard_normal(2)}

    def args(lib, raw):
        out = []
        for a in raw:
            if isinstance(a, list):
                a = lib.tensor(a)
            elif a == "idx":
                a = (lib.tensor([0, 1]), lib.tensor([3, 3]))
            elif a == "mask":
                a = lib.tensor(m.numpy())
            elif isinstance(a, str) and a in srcs:
                a = lib.tensor(srcs[a])
            out.append(a)
        return out

    ours, theirs = rg.tensor(X.copy()), torch.tensor(X.copy())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, raw in steps:
            r = getattr(ours, name)(*args(rg, raw))
            getattr(theirs, name)(*args(torch, raw))
            assert r is ours
            np.testing.assert_allclose(ours.data, theirs.numpy(), rtol=1e-12)
    r = rg.index_put_(ours, (rg.tensor([2]),), rg.tensor(1.0, dtype=rg.float64))
    assert r is ours and np.all(ours.data[2] == 1.0)
    leaf = rg.tensor(X.copy(), requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf"):
        leaf.index_fill_(0, rg.tensor([0]), 1.0)


def test_in_place_number_functions():
    for name, x, args in (("sgn_", F32, ()), ("ldexp_", F32, (np.arange(8) - 4,)),
                          ("heaviside_", F32, (np.array(0.5, np.float32),)),
                          ("nextafter_", F32[:6], (np.zeros(6, np.float32),)),
                          ("float_power_", np.array([1.5, -2.0]), (2,)),
                          ("gcd_", INTS, (np.array([6, 4, 4]),)),
                          ("lcm_", INTS, (np.array([6, 4, 4]),))):
        ours, theirs = rg.tensor(x.copy()), torch.tensor(x.copy())
        conv = [(rg.tensor(a), torch.tensor(a)) if isinstance(a, np.ndarray) else (a, a)
                for a in args]
        assert getattr(ours, name)(*[a for a, _ in conv]) is ours
        getattr(theirs, name)(*[b for _, b in conv])
        np.testing.assert_array_equal(ours.data, theirs.numpy())
    with pytest.raises(RuntimeError, match="float64"):  # torch refuses to round it
        rg.tensor([1.5, 2.0]).float_power_(2)
    with pytest.raises(RuntimeError):
        torch.tensor([1.5, 2.0]).float_power_(2)


def test_in_place_forms_give_torch_gradients():
    x, tx = rg.tensor(X.copy(), requires_grad=True), torch.tensor(X.copy(), requires_grad=True)
    s = rng.standard_normal((3, 2))
    y, ty = x * 2, tx * 2
    y.index_copy_(1, rg.tensor([3, 0]), rg.tensor(s))
    ty.index_copy_(1, torch.tensor([3, 0]), torch.tensor(s))
    w = rng.standard_normal((3, 4))
    (y * rg.tensor(w)).sum().backward()
    (ty * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(x.grad.data, tx.grad.numpy())


# ----------------------------------------------------------------- finite differences


def test_gradients_against_finite_differences():
    x = distinct(3, 4)
    gradcheck(lambda t: rg.amax(t, 1) + rg.amin(t, 1), x)
    gradcheck(lambda t: rg.nanmedian(t, 0).values, x)
    gradcheck(lambda t: rg.quantile(t, 0.35, 1, interpolation="midpoint"), x)
    gradcheck(lambda t, q: rg.nanquantile(t, q), x, np.array([0.1, 0.5]))
    gradcheck(lambda t, v: rg.index_fill(t, 1, rg.tensor([1, 3]), v), x, np.array(0.5))
    gradcheck(lambda t, s: rg.index_put(t, (rg.tensor([0, 0]),), s, True), x,
              rng.standard_normal(4))
    gradcheck(lambda t, s: rg.index_reduce(t, 1, rg.tensor([0, 0]), s, "prod"), x,
              distinct(3, 2) + 0.5)
    gradcheck(lambda t, s: rg.put(t, rg.tensor([1, -2]), s), x, rng.standard_normal(2))
    gradcheck(lambda t: rg.take(t, rg.tensor([[3, -1], [3, 0]])), x)
    gradcheck(lambda t, s: rg.slice_scatter(t, s, 1, 1, 3), x, rng.standard_normal((3, 2)))
    gradcheck(lambda t, e: rg.ldexp(t, e), x, rng.standard_normal((3, 4)))
    gradcheck(lambda t: rg.frexp(t).mantissa, x + 0.1)
    gradcheck(lambda t: rg.float_power(t, 1.5), x + 1)
    gradcheck(lambda t: t.sum_to_size(1, 4), x)


# ----------------------------------------------------------------- rg.jit


def test_jit_replays_quantile_searches_and_index_writes_on_new_values():
    def f(x, q, i, b, v):
        a = rg.quantile(x, q, 1, interpolation="linear")
        c = rg.index_put(x, (i,), v, accumulate=True)
        d = rg.searchsorted(b, x).to(x.dtype)
        e = rg.histc(x, 5, -1, 1)
        return (a.sum() + (c * c).sum() + d.sum() + rg.take(x, i).sum() + e.sum()
                + rg.index_fill(x, 0, i, 2.0).sum() + rg.amax(x, 1).sum())

    g = rg.func.value_and_grad(f, argnums=(0, 4))
    fast = rg.jit(g)

    def draw():
        return (rg.tensor(rng.standard_normal((3, 4))), rg.tensor(rng.uniform(0, 1, 2)),
                rg.tensor(rng.integers(-3, 3, 5)), rg.tensor(np.sort(rng.standard_normal(6))),
                rg.tensor(rng.standard_normal((5, 4))))

    for _ in range(3):
        args = draw()
        (v, grads), (rv, rgrads) = fast(*args), g(*args)
        np.testing.assert_allclose(v.data, rv.data, rtol=1e-10)
        for a, b in zip(grads, rgrads):
            np.testing.assert_allclose(a.data, b.data, rtol=1e-10, atol=1e-12)
    assert fast.trace_count == 1


def test_value_dependent_lengths_refuse_inside_jit():
    for fn in (rg.unique, rg.unique_consecutive, rg.bincount, rg.argwhere):
        with pytest.raises(JitError):
            rg.jit(fn)(rg.tensor([1, 0, 2]))


# ----------------------------------------------------------------- errors


def _t(a):
    return rg.tensor(np.asarray(a)), torch.tensor(np.asarray(a))


F = np.array([[1.0, 2.0], [3.0, 4.0]])

ERRORS = [
    # (call taking the library (rg or torch), words our message must contain)
    (lambda L: L.amax(L.tensor(F), 2), ["dim 2"]),
    (lambda L: L.amax(L.tensor(F), (0, 0)), ["repeats"]),
    (lambda L: L.amax(L.zeros(0, 3)), ["empty", "dim"]),
    (lambda L: L.amax(L.zeros(0, 3), 0), ["dim 0", "size 0"]),
    (lambda L: L.amin(L.tensor([1j])), ["complex"]),
    (lambda L: L.aminmax(L.tensor(F), dim=(0, 1)), ["dim"]),
    (lambda L: L.aminmax(L.zeros(0, 3)), ["empty"]),
    (lambda L: L.count_nonzero(L.tensor(F), 3), ["dim 3"]),
    (lambda L: L.nanmedian(L.zeros(0, 3), 0), ["dim 0", "size 0"]),
    (lambda L: L.nanmedian(L.ones(2, 3), keepdim=True), ["keepdim", "dim"]),
    (lambda L: L.quantile(L.tensor(F), 1.3), ["q", "[0, 1]", "1.3"]),
    (lambda L: L.quantile(L.tensor(F), L.tensor([0.3, 1.5], dtype=L.float64)), ["q", "[0, 1]"]),
    (lambda L: L.quantile(L.tensor(F), L.tensor([[0.3]])), ["q", "(1, 1)"]),
    (lambda L: L.quantile(L.tensor(F), L.tensor([0.3], dtype=L.float32)), ["q", "dtype"]),
    (lambda L: L.quantile(L.tensor([1, 2]), 0.5), ["float32 or float64", "int64"]),
    (lambda L: L.quantile(L.zeros(0), 0.5), ["non-empty"]),
    (lambda L: L.quantile(L.tensor(F), 0.5, interpolation="foo"), ["interpolation", "foo"]),
    (lambda L: L.nanquantile(L.tensor(F), 0.5, dim=2), ["dim 2"]),
    (lambda L: L.unique(L.tensor([[1, 2]]), dim=2), ["dim 2"]),
    (lambda L: L.unique(L.zeros(0, 3), dim=1), ["size-0", "(0, 3)"]),
    (lambda L: L.unique(L.tensor([1j])), ["complex"]),
    (lambda L: L.bincount(L.tensor([-1, 2])), ["non-negative"]),
    (lambda L: L.bincount(L.tensor([[1, 2]])), ["1-d", "(1, 2)"]),
    (lambda L: L.bincount(L.tensor([1.0, 2.0])), ["integer", "float"]),
    (lambda L: L.bincount(L.tensor([1, 2]), minlength=-1), ["minlength", "-1"]),
    (lambda L: L.bincount(L.tensor([1, 2]), L.tensor([1.0])), ["weights", "(1,)"]),
    (lambda L: L.histc(L.tensor([1, 2]), 4), ["floating", "int64"]),
    (lambda L: L.histc(L.tensor(F), 0), ["bins", "0"]),
    (lambda L: L.histc(L.tensor(F), 3, 3, 1), ["max", "min"]),
    (lambda L: L.histc(L.tensor([1.0, NAN]), 3), ["not finite"]),
    (lambda L: L.histogram(L.tensor(F), 4, range=(3.0, 1.0)), ["min", "max"]),
    (lambda L: L.histogram(L.tensor(F), -1), ["bins", "-1"]),
    (lambda L: L.histogram(L.tensor(F), L.tensor([0.0, 1.0], dtype=L.float32)),
     ["bins", "dtype"]),
    (lambda L: L.histogram(L.tensor(F), 2, weight=L.tensor([1.0, 2.0], dtype=L.float64)),
     ["weight", "shape"]),
    (lambda L: L.histogram(L.tensor([1, 2]), 4), ["floating"]),
    (lambda L: L.bucketize(L.tensor(F), L.tensor(F)), ["boundaries", "1-d"]),
    (lambda L: L.searchsorted(L.tensor(F), L.tensor([1.0, 2.0, 3.0])),
     ["sorted_sequence", "(2, 2)", "(3,)"]),
    (lambda L: L.searchsorted(L.tensor(F), 4.0), ["number", "1-d"]),
    (lambda L: L.searchsorted(L.tensor([1.0, 2.0]), L.tensor([1.0]), side="foo"),
     ["side", "foo"]),
    (lambda L: L.searchsorted(L.tensor([1.0, 2.0]), L.tensor([1.0]), side="left", right=True),
     ["side", "right"]),
    (lambda L: L.searchsorted(L.tensor([1.0, 2.0]), L.tensor([1.0]), sorter=L.tensor([0, 2])),
     ["sorter", "range"]),
    (lambda L: L.searchsorted(L.tensor([1.0, 2.0]), L.tensor([1.0]), sorter=L.tensor([0])),
     ["sorter", "(1,)"]),
    (lambda L: L.searchsorted(L.tensor(2.0), L.tensor([1.0])), ["sorted_sequence", "0-d"]),
    (lambda L: L.isin(L.tensor([True]), L.tensor([1])), ["bool"]),
    (lambda L: L.isneginf(L.tensor([1j])), ["complex"]),
    (lambda L: L.signbit(L.tensor([1j])), ["complex"]),
    (lambda L: L.heaviside(L.tensor([1.0]), L.tensor([1.0], dtype=L.float64)), ["dtype"]),
    (lambda L: L.frexp(L.tensor([8, 3])), ["floating", "int64"]),
    (lambda L: L.gcd(L.tensor([1.0]), L.tensor([2.0])), ["integer", "float"]),
    (lambda L: L.lcm(L.tensor([True]), L.tensor([True])), ["integer", "bool"]),
    (lambda L: L.nextafter(L.tensor([1, 2]), L.tensor([2, 1])), ["floating", "int64"]),
    (lambda L: L.take(L.tensor(F), L.tensor([4])), ["index 4", "4 elements"]),
    (lambda L: L.take(L.tensor(F), L.tensor([-5])), ["index -5"]),
    (lambda L: L.take(L.tensor(F), L.tensor([1.0])), ["index", "float"]),
    (lambda L: L.select(L.tensor(F), 1, 2), ["index 2", "dimension 1", "size 2"]),
    (lambda L: L.select(L.tensor(F), 2, 0), ["dim 2"]),
    (lambda L: L.select(L.tensor(1.0), 0, 0), ["0-d"]),
    (lambda L: L.index_fill(L.tensor(F), 1, L.tensor([2]), 0.0),
     ["index 2", "dimension 1", "size 2"]),
    (lambda L: L.index_fill(L.tensor(F), 1, L.tensor([[0]]), 0.0), ["index", "(1, 1)"]),
    (lambda L: L.index_fill(L.tensor(F), 1, L.tensor([0]), L.tensor([1.0])),
     ["value", "0-d"]),
    (lambda L: L.index_copy(L.tensor(F), 1, L.tensor([-1]), L.ones(2, 1, dtype=L.float64)),
     ["index -1", "dimension 1"]),
    (lambda L: L.index_copy(L.tensor(F), 1, L.tensor([0]), L.ones(2, 2, dtype=L.float64)),
     ["source", "(2, 2)", "(2, 1)"]),
    (lambda L: L.index_copy(L.tensor(F), 1, L.tensor([0]), L.ones(2, 1)), ["dtype"]),
    (lambda L: L.index_reduce(L.tensor(F), 0, L.tensor([0]), L.ones(1, 2, dtype=L.float64),
                              "sum"), ["reduce", "'sum'"]),
    (lambda L: L.index_reduce(L.tensor(F), 0, L.tensor([2]), L.ones(1, 2, dtype=L.float64),
                              "amax"), ["index 2", "size 2"]),
    (lambda L: L.index_put(L.tensor(F), (L.tensor([2]),), L.tensor(1.0, dtype=L.float64)),
     ["index 2", "dimension 0", "size 2"]),
    (lambda L: L.index_put(L.tensor(F), (L.tensor([0]),), L.tensor(1.0)), ["dtype"]),
    (lambda L: L.index_put(L.tensor(F), (L.tensor([0, 1]),), L.tensor([1.0, 2.0, 3.0],
                                                                     dtype=L.float64)),
     ["values", "(3,)", "(2, 2)"]),
    (lambda L: L.index_put(L.tensor(F), (L.tensor([0]),) * 3, L.tensor(1.0, dtype=L.float64)),
     ["too many indices"]),
    (lambda L: L.index_put(L.tensor(F), (L.tensor([0.0]),), L.tensor(1.0, dtype=L.float64)),
     ["indices", "float"]),
    (lambda L: L.put(L.tensor(F), L.tensor([4]), L.tensor([1.0], dtype=L.float64)),
     ["index 4"]),
    (lambda L: L.put(L.tensor(F), L.tensor([0, 1]), L.tensor([1.0], dtype=L.float64)),
     ["same number of elements"]),
    (lambda L: L.masked_scatter(L.tensor(F), L.tensor([[True, True], [True, False]]),
                                L.tensor([1.0, 2.0], dtype=L.float64)), ["2 elements", "3"]),
    (lambda L: L.masked_scatter(L.tensor(F), L.tensor([[1, 0], [0, 1]]),
                                L.tensor([1.0, 2.0], dtype=L.float64)), ["mask", "bool"]),
    (lambda L: L.masked_scatter(L.tensor(F), L.tensor([True, False]), L.tensor([1, 2])),
     ["dtype"]),
    (lambda L: L.select_scatter(L.tensor(F), L.ones(3, dtype=L.float64), 1, 0),
     ["src", "(3,)", "(2,)"]),
    (lambda L: L.select_scatter(L.tensor(F), L.ones(2, dtype=L.float64), 1, 2),
     ["index 2", "size 2"]),
    (lambda L: L.slice_scatter(L.tensor(F), L.ones(2, 2, dtype=L.float64), step=0),
     ["step"]),
    (lambda L: L.slice_scatter(L.tensor(F), L.ones(1, 2, dtype=L.float64)),
     ["src", "(1, 2)", "(2, 2)"]),
    (lambda L: L.diagonal_scatter(L.tensor(F), L.ones(3, dtype=L.float64)),
     ["src", "(3,)", "(2,)"]),
    (lambda L: L.diagonal_scatter(L.tensor(F), L.ones(2, dtype=L.float64), 0, 1, 1),
     ["dim1", "dim2"]),
    (lambda L: L.split_with_sizes(L.tensor(F), [1, 2]), ["[1, 2]", "2"]),
    (lambda L: L.split_with_sizes(L.tensor(F), [3, -1]), ["non-negative"]),
    (lambda L: L.hsplit(L.ones(2, 3), 2), ["size 3", "2"]),
    (lambda L: L.hsplit(L.tensor(1.0), 1), ["at least 1 dimension"]),
    (lambda L: L.vsplit(L.ones(4), 2), ["at least 2 dimension"]),
    (lambda L: L.dsplit(L.ones(2, 2), 2), ["at least 3 dimension"]),
    (lambda L: L.ones(3, 4).sum_to_size(2, 4), ["(2, 4)", "(3, 4)"]),
    (lambda L: L.ones(3, 4).sum_to_size(1, 3, 4), ["(1, 3, 4)", "(3, 4)"]),
]


@pytest.mark.parametrize("k", range(len(ERRORS)))
def test_bad_arguments_raise_torchs_exception_type_naming_the_problem(k):
    call, words = ERRORS[k]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(Exception) as theirs:
            call(torch)
    with pytest.raises(theirs.type) as ours:
        call(rg)
    for w in words:
        assert w in str(ours.value), (w, str(ours.value))


# ----------------------------------------------------------------- the stand-in GPU


DEVICE_CALLS = {
    "amax": lambda d: rg.amax(d(X), 1), "aminmax": lambda d: rg.aminmax(d(X)),
    "count_nonzero": lambda d: rg.count_nonzero(d(X), 1),
    "nanmedian": lambda d: rg.nanmedian(d(X)), "nanmedian[dim]": lambda d: rg.nanmedian(d(X), 1),
    "quantile": lambda d: rg.quantile(d(X), d([0.2, 0.5]), 1, interpolation="midpoint"),
    "nanquantile": lambda d: rg.nanquantile(d(X), 0.3),
    "unique": lambda d: rg.unique(d([3, 1, 3]), return_inverse=True, return_counts=True),
    "unique[dim]": lambda d: rg.unique(d([[3, 1], [3, 1]]), dim=0),
    "bincount": lambda d: rg.bincount(d([1, 2, 2]), d([1., 2., 3.])),
    "histc": lambda d: rg.histc(d(X), 4),
    "histogram": lambda d: rg.histogram(d(X), 4, density=True),
    "histogram[edges]": lambda d: rg.histogram(d(X), d([-1., 0., 1.])),
    "histogramdd": lambda d: rg.histogramdd(d(X), 2, weight=d(np.ones(X.shape[0])),
                                            density=True),
    "histogramdd[edges]": lambda d: rg.histogramdd(d(X[:, :2]), [d([-1., 0., 1.])] * 2),
    "searchsorted": lambda d: rg.searchsorted(d([3., 1., 2.]), d([1.5]), sorter=d([1, 2, 0])),
    "isin": lambda d: rg.isin(d([1, 2]), d([2])), "signbit": lambda d: rg.signbit(d(F32)),
    "sgn": lambda d: rg.sgn(d(X + 1j)), "float_power": lambda d: rg.float_power(d(X), 2),
    "frexp": lambda d: rg.frexp(d(X)), "lcm": lambda d: rg.lcm(d([4, 6]), d([6, 4])),
    "nextafter": lambda d: rg.nextafter(d(X), d(X * 2)),
    "take": lambda d: rg.take(d(X), d([0, -1])), "argwhere": lambda d: rg.argwhere(d(X > 0)),
    "index_fill": lambda d: rg.index_fill(d(X), 1, d([0, -1]), 2.0),
    "index_put": lambda d: rg.index_put(d(X), (d([0, 1]), d([1, -1])), d(1.0)),
    "put": lambda d: rg.put(d(X), d([0, -1]), d([1., 2.]), True),
    "masked_scatter": lambda d: rg.masked_scatter(d(X), d(X > 0), d(np.ones(12))),
    "diagonal_scatter": lambda d: rg.diagonal_scatter(d(X), d(np.ones(3))),
    "index_fill_": lambda d: d(X).index_fill_(1, d([0]), 1.0),
}


def test_results_stay_on_the_stand_in_device_and_equal_the_host():
    import fake_device

    from retrograd import devices

    fake_device.install()
    try:
        for name, call in DEVICE_CALLS.items():
            here = _leaves(call(lambda a: rg.tensor(np.asarray(a))))
            there = _leaves(call(lambda a: rg.tensor(np.asarray(a), device="cuda")))
            for h, t in zip(here, there, strict=True):
                assert t.device == "cuda:0" and isinstance(t.data, fake_device.FakeArray), name
                np.testing.assert_array_equal(devices.host(t.data), h.data, err_msg=name)
        x = rg.tensor(X, device="cuda", requires_grad=True)
        (rg.quantile(x, 0.3, 1).sum() + rg.nanmedian(x) + rg.frexp(x).mantissa.sum()
         + rg.masked_scatter(x, x > 0, rg.ones(12, dtype=rg.float64, device="cuda")).sum()
         ).backward()
        assert x.grad.device == "cuda:0"
    finally:
        fake_device.uninstall()
