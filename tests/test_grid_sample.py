"""grid_sample and affine_grid against PyTorch: values in float32 and float64 for every
mode, padding and align_corners, 4-D and 5-D, with grids reaching past [-1, 1] and points
exactly on the borders and on pixel centres; float64 gradients (first and second order)
in the input, the grid and theta; forward mode; bad arguments refused with torch's
exception types."""

import itertools
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import retrograd as rg
import retrograd.nn.functional as F

TOL = {"float32": dict(rtol=1e-5, atol=1e-5), "float64": dict(rtol=1e-11, atol=1e-12)}

# Grid values that land exactly on pixel centres, clip borders and reflection folds for
# the image sizes below (W = 4 without align_corners, W = 5 and H = 3 with it), and far
# outside.
EXACT = np.array([-1.0, 1.0, 0.0, -0.75, 0.75, -0.5, 0.5, -0.25, 0.25, -1.25, 1.25, -2.0,
                  2.0, -3.5, 3.0, 1.5])

CONFIGS = [(nd, mode, pad, align)
           for nd in (2, 3) for mode in ("bilinear", "nearest", "bicubic")
           for pad in ("zeros", "border", "reflection") for align in (False, True)
           if not (nd == 3 and mode == "bicubic")]


def _ids(c):
    return "{}d-{}-{}-{}".format(*c)


def _arrays(nd, align, seed=0):
    """An image and a grid: random points in [-1.6, 1.6] and the exact values above."""
    rng = np.random.default_rng(seed)
    spatial = ((3, 5) if align else (3, 4)) if nd == 2 else ((2, 3, 5) if align else (2, 3, 4))
    x = rng.standard_normal((2, 3) + spatial)
    out = (3, 4) if nd == 2 else (2, 2, 4)
    grid = rng.uniform(-1.6, 1.6, (2,) + out + (nd,))
    flat = grid.reshape(-1)
    flat[:len(EXACT)] = EXACT
    flat[-len(EXACT):] = EXACT[::-1]
    return x, grid


def _ours(x, grid, dtype, requires_grad=False):
    return (rg.tensor(x.astype(dtype), requires_grad=requires_grad),
            rg.tensor(grid.astype(dtype), requires_grad=requires_grad))


def _theirs(x, grid, dtype, requires_grad=False):
    t = getattr(torch, dtype)
    return (torch.tensor(x, dtype=t, requires_grad=requires_grad),
            torch.tensor(grid, dtype=t, requires_grad=requires_grad))


# ---------------------------------------------------------------- grid_sample


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("config", CONFIGS, ids=_ids)
def test_values_match_torch(config, dtype):
    nd, mode, pad, align = config
    x, grid = _arrays(nd, align)
    out = F.grid_sample(*_ours(x, grid, dtype), mode=mode, padding_mode=pad,
                        align_corners=align)
    ref = TF.grid_sample(*_theirs(x, grid, dtype), mode=mode, padding_mode=pad,
                         align_corners=align)
    assert out.shape == tuple(ref.shape) and out.dtype == np.dtype(dtype)
    np.testing.assert_allclose(out.data, ref.numpy(), **TOL[dtype])


@pytest.mark.parametrize("config", CONFIGS, ids=_ids)
def test_gradients_match_torch_first_and_second_order(config):
    """Input and grid gradients, then the gradient of a weighting of both (the second
    derivative, through create_graph), in float64."""
    nd, mode, pad, align = config
    x, grid = _arrays(nd, align, seed=1)
    rng = np.random.default_rng(2)
    xs, ts = _ours(x, grid, "float64", True), _theirs(x, grid, "float64", True)
    out = F.grid_sample(*xs, mode=mode, padding_mode=pad, align_corners=align)
    ref = TF.grid_sample(*ts, mode=mode, padding_mode=pad, align_corners=align)
    v = rng.standard_normal(out.shape)
    gs = rg.autograd.grad(out, list(xs), rg.tensor(v), create_graph=True)
    tgs = torch.autograd.grad(ref, list(ts), torch.tensor(v), create_graph=True)
    for g, tg in zip(gs, tgs):
        assert g.shape == tuple(tg.shape)
        np.testing.assert_allclose(g.data, tg.detach().numpy(), **TOL["float64"])
    if mode == "nearest":
        assert not np.any(gs[1].data)  # torch: a zero grid gradient
    ws = [rng.standard_normal(g.shape) for g in gs]
    total = sum((g * rg.tensor(w)).sum() for g, w in zip(gs, ws))
    ttotal = sum((tg * torch.tensor(w)).sum() for tg, w in zip(tgs, ws))
    hs = rg.autograd.grad(total, list(xs), allow_unused=True)
    ths = torch.autograd.grad(ttotal, list(ts), allow_unused=True)
    for h, th, x in zip(hs, ths, xs):
        want = np.zeros(x.shape) if th is None else th.numpy()
        got = np.zeros(x.shape) if h is None else h.data
        np.testing.assert_allclose(got, want, **TOL["float64"])


@pytest.mark.parametrize("config", [c for c in CONFIGS if c[1] != "nearest"], ids=_ids)
def test_forward_mode_is_the_transpose_of_torchs_backward(config):
    """<u, J v> from our jvp equals <J^T u, v> from torch's vjp, in input and grid."""
    nd, mode, pad, align = config
    x, grid = _arrays(nd, align, seed=3)
    rng = np.random.default_rng(4)
    tx, tg = rng.standard_normal(x.shape), rng.standard_normal(grid.shape)
    out, tangent = rg.func.jvp(
        lambda a, b: F.grid_sample(a, b, mode=mode, padding_mode=pad, align_corners=align),
        (rg.tensor(x), rg.tensor(grid)), (rg.tensor(tx), rg.tensor(tg)))
    u = rng.standard_normal(out.shape)
    xt, gt = _theirs(x, grid, "float64", True)
    ref = TF.grid_sample(xt, gt, mode=mode, padding_mode=pad, align_corners=align)
    vx, vg = torch.autograd.grad(ref, [xt, gt], torch.tensor(u))
    want = float((vx.numpy() * tx).sum() + (vg.numpy() * tg).sum())
    np.testing.assert_allclose(float((tangent.data * u).sum()), want, rtol=1e-10)


def _away_from_kinks(rng, shape, sizes, align):
    """Normalised coordinates whose pixel positions are 0.1 to 0.4 from whole and half
    pixels (where the weights bend, nearest jumps and reflection folds)."""
    nd = shape[-1]
    cols = []
    for k in range(nd):
        size = sizes[nd - 1 - k]
        c = rng.integers(-2, size + 1, shape[:-1]) + rng.uniform(0.1, 0.4, shape[:-1]) \
            + 0.5 * rng.integers(0, 2, shape[:-1])
        cols.append(c * 2 / (size - 1) - 1 if align else (2 * c + 1) / size - 1)
    return np.stack(cols, -1)


@pytest.mark.parametrize("config", [(2, "bicubic", "reflection", False),
                                    (2, "bilinear", "border", True),
                                    (3, "bilinear", "reflection", False),
                                    (3, "nearest", "zeros", True)], ids=_ids)
def test_gradcheck_against_finite_differences(config):
    nd, mode, pad, align = config
    rng = np.random.default_rng(5)
    spatial = (3, 4) if nd == 2 else (2, 3, 3)
    x = rg.tensor(rng.standard_normal((1, 2) + spatial), requires_grad=True)
    grid = rg.tensor(_away_from_kinks(rng, (1, 2, 2, nd) if nd == 2 else (1, 2, 1, 2, 3),
                                      spatial, align), requires_grad=True)

    def f(a, b):
        return F.grid_sample(a, b, mode=mode, padding_mode=pad, align_corners=align)
    assert rg.gradcheck(f, [x, grid])
    assert rg.gradgradcheck(f, [x, grid])


def test_grid_sampler_takes_integer_modes_as_torch():
    x, grid = _arrays(2, False, seed=6)
    for interp, pad, align in itertools.product((0, 1, 2), (0, 1, 2), (False, True)):
        out = rg.grid_sampler(*_ours(x, grid, "float64"), interp, pad, align)
        ref = torch.grid_sampler(*_theirs(x, grid, "float64"), interp, pad, align)
        np.testing.assert_allclose(out.data, ref.numpy(), **TOL["float64"])


def test_default_align_corners_warns_as_torch_and_is_false():
    x, grid = _arrays(2, False)
    with pytest.warns(UserWarning, match="align_corners=False"):
        out = F.grid_sample(*_ours(x, grid, "float64"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = TF.grid_sample(*_theirs(x, grid, "float64"))
    np.testing.assert_allclose(out.data, ref.numpy(), **TOL["float64"])


def test_requires_grad_follows_either_input():
    x, grid = _arrays(2, False)
    for rx, rgr in [(True, False), (False, True), (False, False)]:
        out = F.grid_sample(rg.tensor(x, requires_grad=rx), rg.tensor(grid, requires_grad=rgr),
                            mode="nearest", align_corners=False)
        assert out.requires_grad == (rx or rgr)


def test_empty_batch_and_empty_output_grid():
    for xs, gs in [((0, 2, 3, 4), (0, 2, 2, 2)), ((1, 2, 3, 4), (1, 0, 3, 2)),
                   ((2, 1, 2, 2, 2), (2, 1, 0, 2, 3))]:
        x = rg.tensor(np.ones(xs), requires_grad=True)
        grid = rg.tensor(np.zeros(gs), requires_grad=True)
        out = F.grid_sample(x, grid, align_corners=False)
        ref = TF.grid_sample(torch.ones(xs, dtype=torch.float64),
                             torch.zeros(gs, dtype=torch.float64), align_corners=False)
        assert out.shape == tuple(ref.shape)
        out.sum().backward()
        assert x.grad.shape == xs and grid.grad.shape == gs


def test_half_precision_matches_torch_loosely():
    x, grid = _arrays(2, False)
    out = F.grid_sample(*_ours(x, grid, "float16"), align_corners=False)
    ref = TF.grid_sample(*_theirs(x, grid, "float16"), align_corners=False)
    assert out.dtype == np.float16
    np.testing.assert_allclose(out.data.astype(np.float64), ref.double().numpy(), atol=2e-2)


def test_a_non_finite_grid_coordinate_gives_nan_there():
    """PyTorch's answer differs between its 2-D and 3-D kernels and between modes; ours is
    NaN, and the gradients stay finite."""
    x = rg.tensor(np.arange(12.0).reshape(1, 1, 3, 4), requires_grad=True)
    g = np.zeros((1, 1, 3, 2))
    g[0, 0, 0, 0], g[0, 0, 1, 1] = np.nan, np.inf
    grid = rg.tensor(g)
    for mode in ("bilinear", "nearest", "bicubic"):
        out = F.grid_sample(x, grid, mode=mode, padding_mode="border", align_corners=False)
        assert np.isnan(out.data[0, 0, 0, :2]).all() and np.isfinite(out.data[0, 0, 0, 2])
        (gx,) = rg.autograd.grad(out.sum(), [x])
        assert np.isfinite(gx.data).all()


def test_jit_replays_on_other_grids():
    x, grid = _arrays(2, False)
    grid2 = _arrays(2, False, seed=9)[1]

    def f(a, b):
        return F.grid_sample(a, b, mode="bicubic", padding_mode="reflection",
                             align_corners=False)
    j = rg.jit(f)
    j(rg.tensor(x), rg.tensor(grid))
    np.testing.assert_allclose(j(rg.tensor(x), rg.tensor(grid2)).data,
                               f(rg.tensor(x), rg.tensor(grid2)).data, rtol=1e-12)


def _same_error(ours, theirs, *words):
    with pytest.raises(Exception) as want:
        theirs()
    with pytest.raises(want.type) as got:
        ours()
    for w in words:
        assert w in str(got.value), (w, str(got.value))


def _pair(xs, gs, xdt="float64", gdt="float64"):
    rng = np.random.default_rng(0)
    x, g = rng.standard_normal(xs), rng.uniform(-1, 1, gs)
    return (rg.tensor(x.astype(xdt)), rg.tensor(g.astype(gdt)),
            torch.tensor(x.astype(xdt)), torch.tensor(g.astype(gdt)))


@pytest.mark.parametrize(("xs", "gs", "kw", "words"), [
    ((1, 2, 3, 3), (1, 2, 2, 3), {}, ["grid", "last dimension", "(1, 2, 2, 3)"]),
    ((1, 2, 3, 3), (2, 2, 2, 2), {}, ["batch size", "(1, 2, 3, 3)", "(2, 2, 2, 2)"]),
    ((1, 2, 3, 3), (1, 2, 2), {}, ["grid", "(1, 2, 2)"]),
    ((1, 2, 3, 3), (1, 1, 2, 2, 2), {}, ["grid", "(1, 1, 2, 2, 2)"]),
    ((2, 3), (2, 2), {}, ["input", "(2, 3)"]),
    ((1, 1, 2, 2, 2), (1, 1, 1, 1, 3), {"mode": "bicubic"}, ["bicubic", "4-D"]),
    ((1, 1, 0, 2), (1, 1, 1, 2), {}, ["empty", "(1, 1, 0, 2)"]),
    ((1, 2, 3, 3), (1, 2, 2, 2), {"mode": "linear"}, ["mode", "'linear'"]),
    ((1, 2, 3, 3), (1, 2, 2, 2), {"padding_mode": "circular"}, ["padding_mode", "circular"]),
])
def test_bad_arguments_raise_torchs_exception_type(xs, gs, kw, words):
    x, g, tx, tg = _pair(xs, gs)
    _same_error(lambda: F.grid_sample(x, g, align_corners=False, **kw),
                lambda: TF.grid_sample(tx, tg, align_corners=False, **kw), *words)


@pytest.mark.parametrize(("xdt", "gdt", "words"), [
    ("float32", "float64", ["dtype", "float32", "float64"]),
    ("float64", "int64", ["dtype", "int64"]),
    ("int64", "float64", ["floating point", "int64"]),
])
def test_bad_dtypes_raise_torchs_exception_type(xdt, gdt, words):
    x, g, tx, tg = _pair((1, 2, 3, 3), (1, 2, 2, 2), xdt, gdt)
    _same_error(lambda: F.grid_sample(x, g, align_corners=False),
                lambda: TF.grid_sample(tx, tg, align_corners=False), *words)


def test_grid_sampler_refuses_unknown_mode_numbers():
    x, g, _, _ = _pair((1, 2, 3, 3), (1, 2, 2, 2))
    with pytest.raises(RuntimeError, match="interpolation_mode"):
        rg.grid_sampler(x, g, 3, 0, False)
    with pytest.raises(RuntimeError, match="padding_mode"):
        rg.grid_sampler(x, g, 0, 5, False)


# ---------------------------------------------------------------- affine_grid

AFFINE = [(2, 3, (2, 1, 3, 4)), (3, 4, (2, 2, 2, 3, 4)), (2, 3, (1, 1, 1, 5)),
          (3, 4, (1, 1, 1, 1, 3)), (2, 3, (1, 2, 6, 7))]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("case", range(len(AFFINE)))
def test_affine_grid_values_and_theta_gradient_match_torch(case, align, dtype):
    rows, cols, size = AFFINE[case]
    theta = np.random.default_rng(case).standard_normal((size[0], rows, cols))
    t = rg.tensor(theta.astype(dtype), requires_grad=True)
    tt = torch.tensor(theta.astype(dtype), requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # unit sizes with align_corners: both warn
        out = F.affine_grid(t, size, align_corners=align)
        ref = TF.affine_grid(tt, size, align_corners=align)
    assert out.shape == tuple(ref.shape) and out.dtype == np.dtype(dtype)
    np.testing.assert_allclose(out.data, ref.detach().numpy(), **TOL[dtype])
    w = np.random.default_rng(9).standard_normal(out.shape)
    (out * rg.tensor(w.astype(dtype))).sum().backward()
    (ref * torch.tensor(w.astype(dtype))).sum().backward()
    np.testing.assert_allclose(t.grad.data, tt.grad.numpy(), rtol=1e-5 if dtype == "float32"
                               else 1e-11, atol=1e-4 if dtype == "float32" else 1e-11)
    gen = rg.affine_grid_generator(t.detach(), size, align)
    np.testing.assert_allclose(gen.data, torch.affine_grid_generator(
        tt.detach(), size, align).numpy(), **TOL[dtype])


def test_affine_grid_then_grid_sample_is_differentiable_in_theta():
    rng = np.random.default_rng(3)
    theta = rg.tensor(np.eye(2, 3)[None] + 0.1 * rng.standard_normal((1, 2, 3)),
                      requires_grad=True)
    x = rg.tensor(rng.standard_normal((1, 2, 4, 5)))

    def f(t):
        return F.grid_sample(x, F.affine_grid(t, (1, 2, 3, 3), align_corners=False),
                             align_corners=False)
    assert rg.gradcheck(f, [theta])
    tt = torch.tensor(theta.data, requires_grad=True)
    ref = TF.grid_sample(torch.tensor(x.data), TF.affine_grid(tt, (1, 2, 3, 3),
                                                              align_corners=False),
                         align_corners=False)
    ref.sum().backward()
    f(theta).sum().backward()
    np.testing.assert_allclose(theta.grad.data, tt.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_affine_grid_default_align_corners_warns():
    with pytest.warns(UserWarning, match="align_corners=False"):
        F.affine_grid(rg.tensor(np.eye(2, 3)[None]), (1, 1, 2, 2))


@pytest.mark.parametrize(("shape", "size", "dtype", "words"), [
    ((2, 2, 3), (2, 1, 4), "float64", ["4-D and 5-D", "(2, 1, 4)"]),
    ((2, 2, 3), (2, 1, 4, 4, 4), "float64", ["(N, 3, 4)", "(2, 2, 3)"]),
    ((2, 3), (2, 1, 4, 4), "float64", ["(N, 2, 3)", "(2, 3)"]),
    ((2, 2, 3), (2, 1, 4, 0), "float64", ["positive", "(2, 1, 4, 0)"]),
    ((2, 2, 3), (2, 1, 4, 4), "int64", ["floating point", "int64"]),
    ((2, 2, 3), (3, 1, 4, 4), "float64", ["theta", "(2, 2, 3)"]),
])
def test_affine_grid_bad_arguments_raise_torchs_exception_type(shape, size, dtype, words):
    theta = np.ones(shape, dtype=dtype)
    _same_error(lambda: F.affine_grid(rg.tensor(theta), size, align_corners=False),
                lambda: TF.affine_grid(torch.tensor(theta), size, align_corners=False),
                *words)
