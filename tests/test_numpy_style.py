"""NumPy-style conveniences (`api/numpy_style.py`): values against NumPy, gradients
against PyTorch where it has the function, else against finite differences."""

import warnings

import numpy as np
import pytest
import torch

import retrograd as rg
from retrograd.gradcheck import gradcheck, gradgradcheck

RNG = np.random.default_rng(0)


def _leaf(a):
    return rg.tensor(np.asarray(a, dtype=np.float64), requires_grad=True)


def _same_grad(ours_fn, torch_fn, *arrays, rtol=1e-12):
    """Values and the gradient of a random projection of the output, ours vs torch."""
    xs = [_leaf(a) for a in arrays]
    ts = [torch.tensor(np.asarray(a, dtype=np.float64), requires_grad=True) for a in arrays]
    out, ref = ours_fn(*xs), torch_fn(*ts)
    np.testing.assert_allclose(out.data, ref.detach().numpy(), rtol=rtol, atol=1e-14)
    w = RNG.standard_normal(out.shape)
    (out * rg.tensor(w)).sum().backward()
    (ref * torch.tensor(w)).sum().backward()
    for x, t in zip(xs, ts):
        np.testing.assert_allclose(x.grad.data, t.grad.numpy(), rtol=rtol, atol=1e-14)
    return out


# ---------------------------------------------------------------- shapes

def test_swapaxes_expand_dims_ravel_match_numpy():
    a = RNG.standard_normal((2, 3, 4))
    x = rg.tensor(a)
    np.testing.assert_array_equal(rg.swapaxes(x, 0, 2).data, np.swapaxes(a, 0, 2))
    np.testing.assert_array_equal(x.swapaxes(-1, 1).data, np.swapaxes(a, -1, 1))
    for axis in (0, -1, (0, 2), (1, -1), (0, 1, 5)):
        assert rg.expand_dims(x, axis).shape == np.expand_dims(a, axis).shape
    np.testing.assert_array_equal(rg.ravel(x).data, np.ravel(a))
    np.testing.assert_array_equal(x.ravel().data, a.ravel())
    with pytest.raises(ValueError, match="repeats"):
        rg.expand_dims(x, (1, 1))
    with pytest.raises(IndexError, match="out of range"):
        rg.expand_dims(x, 4)
    _same_grad(lambda t: rg.swapaxes(t, 0, 1), lambda t: torch.swapaxes(t, 0, 1), a)
    _same_grad(rg.ravel, torch.ravel, a)


@pytest.mark.parametrize("fn", ["atleast_1d", "atleast_2d", "atleast_3d"])
def test_atleast_nd_shapes_match_numpy(fn):
    arrays = [np.float64(2.0), np.arange(3.0), np.ones((2, 3)), np.ones((2, 3, 4))]
    for a in arrays:
        assert getattr(rg, fn)(rg.tensor(a)).shape == getattr(np, fn)(a).shape
    many = getattr(rg, fn)(*[rg.tensor(a) for a in arrays])
    assert isinstance(many, tuple)
    assert [t.shape for t in many] == [r.shape for r in getattr(np, fn)(*arrays)]


def test_stacks_match_numpy_and_torch():
    a, b = RNG.standard_normal(3), RNG.standard_normal(3)
    m, n = RNG.standard_normal((2, 3)), RNG.standard_normal((4, 3))
    for name in ("vstack", "hstack", "dstack", "column_stack"):
        for pair in ((a, b), (m, m)):
            ref = getattr(np, name)(pair)
            out = getattr(rg, name)([rg.tensor(p) for p in pair])
            np.testing.assert_array_equal(out.data, ref)
            _same_grad(lambda x, y, name=name: getattr(rg, name)([x, y]),
                       lambda x, y, name=name: getattr(torch, name)([x, y]), *pair)
    np.testing.assert_array_equal(rg.vstack([rg.tensor(m), rg.tensor(n)]).data,
                                  np.vstack([m, n]))
    with pytest.raises(TypeError, match="sequence"):
        rg.vstack(rg.tensor(m))


def test_append_matches_numpy():
    m = RNG.standard_normal((2, 3))
    np.testing.assert_array_equal(rg.append(rg.tensor(m), rg.tensor([1.0, 2.0])).data,
                                  np.append(m, [1.0, 2.0]))
    np.testing.assert_array_equal(rg.append(rg.tensor(m), rg.tensor(m), axis=0).data,
                                  np.append(m, m, axis=0))
    x = _leaf(m)
    rg.append(x, rg.tensor(m), axis=1).sum().backward()
    np.testing.assert_array_equal(x.grad.data, np.ones_like(m))


@pytest.mark.parametrize("sections", [3, 4, 7, [2, 5], [1, -2, 9], [4, 2]])
def test_array_split_matches_numpy_and_tensor_split_torch(sections):
    a = RNG.standard_normal((7, 2))
    ours = rg.array_split(rg.tensor(a), sections)
    ref = np.array_split(a, sections)
    assert len(ours) == len(ref)
    for o, r in zip(ours, ref):
        np.testing.assert_array_equal(o.data, r)
    tref = torch.tensor_split(torch.tensor(a), sections)
    for o, r in zip(rg.tensor_split(rg.tensor(a), sections), tref):
        np.testing.assert_array_equal(o.data, r.numpy())
    cols = rg.array_split(rg.tensor(a), 2, axis=1)
    np.testing.assert_array_equal(cols[1].data, np.array_split(a, 2, axis=1)[1])


@pytest.mark.parametrize("k", [-1, 0, 1, 2, 3, 5])
@pytest.mark.parametrize("axes", [(0, 1), (1, 0), (0, 2), (-1, 1)])
def test_rot90_matches_numpy_and_torch(k, axes):
    a = RNG.standard_normal((2, 3, 4))
    np.testing.assert_array_equal(rg.rot90(rg.tensor(a), k, axes).data, np.rot90(a, k, axes))
    _same_grad(lambda x: rg.rot90(x, k, dims=axes), lambda x: torch.rot90(x, k, axes), a)
    with pytest.raises(ValueError, match="different"):
        rg.rot90(rg.tensor(a), 1, (1, 1))


# ---------------------------------------------------------------- differences, integrals

@pytest.mark.parametrize("n", [0, 1, 2, 3])
@pytest.mark.parametrize("axis", [0, -1])
def test_diff_matches_numpy_and_torch(n, axis):
    a = RNG.standard_normal((4, 5))
    np.testing.assert_allclose(rg.diff(rg.tensor(a), n, axis).data, np.diff(a, n, axis))
    _same_grad(lambda x: rg.diff(x, n, axis), lambda x: torch.diff(x, n, axis), a)


def test_diff_prepend_append_and_bool():
    a = RNG.standard_normal((3, 4))
    p, q = RNG.standard_normal((3, 2)), RNG.standard_normal((3, 1))
    np.testing.assert_allclose(rg.diff(rg.tensor(a), 2, prepend=rg.tensor(p),
                                       append=rg.tensor(q)).data,
                               np.diff(a, 2, prepend=p, append=q))
    np.testing.assert_allclose(rg.diff(rg.tensor(a), axis=0, prepend=0.5).data,
                               np.diff(a, axis=0, prepend=0.5))
    _same_grad(lambda x, y, z: rg.diff(x, 2, prepend=y, append=z),
               lambda x, y, z: torch.diff(x, 2, prepend=y, append=z), a, p, q)
    b = np.array([True, True, False, True])
    np.testing.assert_array_equal(rg.diff(rg.tensor(b)).data, np.diff(b))
    with pytest.raises(ValueError, match="non-negative"):
        rg.diff(rg.tensor(a), -1)


def test_trapezoid_matches_numpy_and_torch():
    y = RNG.standard_normal((3, 6))
    x1 = np.sort(RNG.uniform(0, 5, 6))
    xf = np.sort(RNG.uniform(0, 5, (3, 6)), axis=1)
    np.testing.assert_allclose(rg.trapezoid(rg.tensor(y)).data, np.trapezoid(y), rtol=1e-14)
    np.testing.assert_allclose(rg.trapezoid(rg.tensor(y), dx=0.3, axis=0).data,
                               np.trapezoid(y, dx=0.3, axis=0), rtol=1e-14)
    for x in (x1, xf):
        np.testing.assert_allclose(rg.trapezoid(rg.tensor(y), rg.tensor(x)).data,
                                   np.trapezoid(y, x), rtol=1e-14)
        _same_grad(lambda a, b: rg.trapezoid(a, b), lambda a, b: torch.trapezoid(a, b), y, x)
    _same_grad(lambda a: rg.trapezoid(a, dx=0.5, dim=0),
               lambda a: torch.trapezoid(a, dx=0.5, dim=0), y)
    with pytest.raises(ValueError, match="5 samples"):
        rg.trapezoid(rg.tensor(y), rg.tensor(x1[:5]))


def test_cumulative_trapezoid_matches_torch():
    y = RNG.standard_normal((3, 6))
    x = np.sort(RNG.uniform(0, 5, 6))
    _same_grad(lambda a, b: rg.cumulative_trapezoid(a, b),
               lambda a, b: torch.cumulative_trapezoid(a, b), y, x)
    _same_grad(lambda a: rg.cumulative_trapezoid(a, dx=0.2, dim=0),
               lambda a: torch.cumulative_trapezoid(a, dx=0.2, dim=0), y)
    out = rg.cumulative_trapezoid(rg.tensor(y), rg.tensor(x))
    np.testing.assert_allclose(out.data[:, -1], np.trapezoid(y, x), rtol=1e-13)


def test_polyval_matches_numpy_with_gradients_in_both():
    p, x = RNG.standard_normal(4), RNG.standard_normal((2, 3))
    np.testing.assert_allclose(rg.polyval(rg.tensor(p), rg.tensor(x)).data,
                               np.polyval(p, x), rtol=1e-13)
    cp, cx = _leaf(p), _leaf(x)
    assert gradcheck(rg.polyval, [cp, cx])
    assert gradgradcheck(rg.polyval, [cp, cx])
    (gx,) = rg.autograd.grad(rg.polyval(cp, cx).sum(), [cx])
    np.testing.assert_allclose(gx.data, np.polyval(np.polyder(p), x), rtol=1e-13)


# ---------------------------------------------------------------- convolution

@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("n,m", [(6, 3), (5, 2), (6, 4), (3, 5), (4, 4), (1, 3)])
def test_convolve_and_correlate_match_numpy(mode, n, m):
    a, v = RNG.standard_normal(n), RNG.standard_normal(m)
    np.testing.assert_allclose(rg.convolve(rg.tensor(a), rg.tensor(v), mode).data,
                               np.convolve(a, v, mode), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(rg.correlate(rg.tensor(a), rg.tensor(v), mode).data,
                               np.correlate(a, v, mode), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("fn", ["convolve", "correlate"])
def test_convolve_gradients_in_both_inputs(fn):
    a, v = _leaf(RNG.standard_normal(6)), _leaf(RNG.standard_normal(3))
    for mode in ("full", "same", "valid"):
        f = lambda x, y, mode=mode: getattr(rg, fn)(x, y, mode)  # noqa: E731
        assert gradcheck(f, [a, v])
        assert gradgradcheck(f, [a, v])
    # the full convolution's gradient in v is the correlation of the upstream with a
    g = RNG.standard_normal(8)
    rg.convolve(a, v).backward(rg.tensor(g))
    np.testing.assert_allclose(v.grad.data, np.correlate(g, a.data, "valid"), rtol=1e-12)


def test_convolve_refuses_bad_input():
    with pytest.raises(ValueError, match="'a' must be 1-d"):
        rg.convolve(rg.ones(2, 2), rg.ones(2))
    with pytest.raises(ValueError, match="cannot be empty"):
        rg.convolve(rg.ones(3), rg.ones(0))
    with pytest.raises(ValueError, match="'mode'"):
        rg.convolve(rg.ones(3), rg.ones(2), "circular")


# ---------------------------------------------------------------- interp

def test_interp_matches_numpy():
    xp = np.array([0.0, 1.0, 2.5, 3.0, 4.5])
    fp = RNG.standard_normal(5)
    x = np.array([-1.0, 0.0, 0.3, 1.0, 2.7, 3.0, 4.5, 6.0])
    np.testing.assert_allclose(rg.interp(rg.tensor(x), rg.tensor(xp), rg.tensor(fp)).data,
                               np.interp(x, xp, fp), rtol=1e-14)
    np.testing.assert_allclose(
        rg.interp(rg.tensor(x), rg.tensor(xp), rg.tensor(fp), left=-9.0, right=9.0).data,
        np.interp(x, xp, fp, left=-9.0, right=9.0), rtol=1e-14)
    xs = np.array([-7.0, -1.0, 0.2, 350.0, 361.0, 725.5])
    xpp, fpp = np.array([350.0, 10.0, 190.0]), np.array([1.0, 2.0, 4.0])
    np.testing.assert_allclose(
        rg.interp(rg.tensor(xs), rg.tensor(xpp), rg.tensor(fpp), period=360).data,
        np.interp(xs, xpp, fpp, period=360), rtol=1e-12)
    np.testing.assert_allclose(rg.interp(rg.tensor(x), rg.tensor([2.0]), rg.tensor([5.0])).data,
                               np.interp(x, [2.0], [5.0]))


def test_interp_gradients():
    xp = np.array([0.0, 1.0, 2.5, 3.0, 4.5])
    fp = _leaf(RNG.standard_normal(5))
    x = _leaf([-1.0, 0.3, 2.7, 4.0, 6.0])
    w = RNG.standard_normal(5)
    (rg.interp(x, rg.tensor(xp), fp) * rg.tensor(w)).sum().backward()
    # d/dfp: the hat-function weights, as linear maps of fp (numpy on unit vectors)
    basis = np.stack([np.interp(x.data, xp, e) for e in np.eye(5)])
    np.testing.assert_allclose(fp.grad.data, basis @ w, rtol=1e-13)
    # d/dx: the slope of the interval (0 outside the ends)
    slopes = np.array([0.0, fp.data[1] - fp.data[0], (fp.data[3] - fp.data[2]) / 0.5,
                       (fp.data[4] - fp.data[3]) / 1.5, 0.0])
    np.testing.assert_allclose(x.grad.data, slopes * w, rtol=1e-13, atol=1e-15)
    assert gradcheck(lambda a, b, c: rg.interp(a, b, c),
                     [_leaf([0.3, 2.7, 4.0]), _leaf(xp), _leaf(fp.data)])


# ---------------------------------------------------------------- nan reductions

@pytest.mark.parametrize("name", ["nansum", "nanmean"])
@pytest.mark.parametrize("dim,keepdim", [(None, False), (0, False), (1, True), ((0, 1), False)])
def test_nan_reductions_match_numpy_and_torch(name, dim, keepdim):
    a = RNG.standard_normal((3, 4))
    a[0, 1] = a[2, 3] = np.nan
    a[:, 2] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # NumPy warns on its all-NaN column
        ref = getattr(np, name)(a, axis=dim, keepdims=keepdim)
    out = getattr(rg, name)(rg.tensor(a), dim, keepdim)
    np.testing.assert_allclose(out.data, ref, rtol=1e-14)
    t = torch.tensor(a, requires_grad=True)
    x = _leaf(a)
    tr = getattr(torch, name)(t, dim=dim, keepdim=keepdim)
    ours = getattr(rg, name)(x, dim=dim, keepdim=keepdim)
    w = RNG.standard_normal(ours.shape)
    (ours * rg.tensor(w)).sum().backward()
    (tr * torch.tensor(w)).sum().backward()
    # torch's nanmean gives nan (inf * 0) at the NaNs of an all-NaN slice, whose mean is
    # NaN whatever they are; ours is 0 at every NaN, as for nansum
    theirs = np.where(np.isnan(a), 0.0, t.grad.numpy())
    np.testing.assert_allclose(x.grad.data, theirs, rtol=1e-14)
    assert np.all(x.grad.data[np.isnan(a)] == 0)


# ---------------------------------------------------------------- element-wise

def test_deg2rad_rad2deg_match_torch():
    a = RNG.uniform(-400, 400, 5)
    _same_grad(rg.deg2rad, torch.deg2rad, a)
    _same_grad(rg.rad2deg, torch.rad2deg, a)
    assert rg.deg2rad(rg.tensor([180])).dtype == rg.get_default_dtype()
    np.testing.assert_allclose(rg.deg2rad(rg.tensor([180.0, 90.0])).data, np.deg2rad([180, 90]))


@pytest.mark.parametrize("name", ["fmax", "fmin"])
def test_fmax_fmin_ignore_nans_with_torch_gradients(name):
    a = np.array([1.0, np.nan, 3.0, np.nan, 2.0, -1.0])
    b = np.array([2.0, 5.0, np.nan, np.nan, 2.0, -3.0])
    np.testing.assert_array_equal(getattr(rg, name)(rg.tensor(a), rg.tensor(b)).data,
                                  getattr(np, name)(a, b))
    _same_grad(getattr(rg, name), getattr(torch, name), a, b)
    np.testing.assert_array_equal(getattr(rg, name)(rg.tensor(a), 2.5).data,
                                  getattr(np, name)(a, 2.5))


def test_sinc_is_special_sinc():
    assert rg.sinc is rg.special.sinc
    x = np.array([-1.5, 0.0, 0.25, 2.0])
    np.testing.assert_allclose(rg.sinc(rg.tensor(x)).data, np.sinc(x), rtol=1e-15)
