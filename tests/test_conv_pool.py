"""Convolution, pooling, padding and resampling against PyTorch: values and gradients in
float32 and float64 over a grid of arguments, bad arguments refused with clear errors, and
layers equal to torch's after loading the same weights."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import retrograd as rg
import retrograd.nn.functional as F

TOL = {"float32": dict(rtol=2e-4, atol=2e-5), "float64": dict(rtol=1e-9, atol=1e-10)}


def _compare(fn, tfn, arrays, dtype, nondiff=(), **kw):
    """fn(*tensors) against tfn(*torch tensors): value, then the gradient of a random
    weighting of the output with respect to every floating input."""
    ours = [rg.tensor(a.astype(dtype), requires_grad=i not in nondiff)
            if a.dtype.kind == "f" else rg.tensor(a) for i, a in enumerate(arrays)]
    theirs = [torch.tensor(a.astype(dtype), requires_grad=i not in nondiff)
              if a.dtype.kind == "f" else torch.tensor(a) for i, a in enumerate(arrays)]
    out = fn(*ours, **kw)
    ref = tfn(*theirs, **kw)
    tol = TOL[dtype]
    np.testing.assert_allclose(out.data, ref.detach().numpy(), **tol)
    assert out.dtype == np.dtype(dtype)
    w = np.random.default_rng(0).standard_normal(out.shape)
    (out * rg.tensor(w.astype(dtype))).sum().backward()
    (ref * torch.tensor(w.astype(dtype))).sum().backward()
    for x, t in zip(ours, theirs):
        if t.requires_grad:  # long sums (a weight's gradient): absolute error grows with scale
            ref_g = t.grad.numpy()
            scale = max(1.0, float(np.abs(ref_g).max())) if ref_g.size else 1.0
            np.testing.assert_allclose(x.grad.data, ref_g, rtol=tol["rtol"],
                                       atol=tol["atol"] * scale)


rng = np.random.default_rng(1)

CONV = [  # (nd, input shape, weight shape, kwargs)
    (1, (2, 4, 11), (6, 4, 3), dict(stride=2, padding=1)),
    (1, (2, 4, 9), (4, 2, 3), dict(padding="same", dilation=2, groups=2)),
    (1, (2, 4, 10), (6, 4, 4), dict(padding="same")),
    (1, (4, 9), (3, 4, 2), dict(padding="valid")),
    (2, (2, 3, 7, 8), (4, 3, 3, 3), dict(padding=1)),
    (2, (2, 4, 9, 7), (6, 2, 3, 2), dict(stride=(2, 1), padding=(1, 0), dilation=(1, 2),
                                         groups=2)),
    (2, (1, 4, 6, 6), (4, 1, 3, 3), dict(groups=4, padding="same")),
    (2, (2, 3, 6, 7), (2, 3, 2, 4), dict(padding="same", dilation=(2, 1))),
    (3, (1, 2, 5, 6, 5), (3, 2, 2, 3, 2), dict(stride=(1, 2, 1), padding=(1, 0, 1))),
    (3, (2, 4, 4, 5, 4), (4, 2, 3, 3, 3), dict(groups=2, padding="same")),
]
_CONVS = {1: (F.conv1d, TF.conv1d), 2: (F.conv2d, TF.conv2d), 3: (F.conv3d, TF.conv3d)}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("case", range(len(CONV)))
def test_conv_matches_torch(case, bias, dtype):
    nd, xs, ws, kw = CONV[case]
    arrays = [rng.standard_normal(xs), rng.standard_normal(ws)]
    if bias:
        arrays.append(rng.standard_normal(ws[0]))
    f, tf = _CONVS[nd]
    _compare(f, tf, arrays, dtype, **kw)


LARGE = [  # big enough for the contiguous-columns path of unit-stride convolution
    (1, (4, 8, 4096), (6, 4, 3), dict(padding=2, dilation=2, groups=2)),
    (2, (4, 8, 32, 32), (6, 8, 3, 3), dict(padding=1)),
    (2, (2, 8, 40, 48), (4, 2, 3, 5), dict(padding="same", groups=4)),
    (3, (1, 4, 8, 40, 40), (3, 4, 3, 3, 3), dict(padding=(1, 1, 1))),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", range(len(LARGE)))
def test_large_unit_stride_conv_takes_the_column_path_and_matches_torch(case, dtype,
                                                                        monkeypatch):
    from retrograd import ops
    calls = []

    def spy(f):
        return lambda *a, **k: calls.append(1) or f(*a, **k)

    for op in (ops.conv_cols, ops.conv_unit, ops.conv_unit_bias):  # (host float: conv_unit)
        for attr in ("forward", "saving"):  # (saving: the recorded forward)
            if getattr(op, attr) is not None:
                monkeypatch.setattr(op, attr, spy(getattr(op, attr)))
    nd, xs, ws, kw = LARGE[case]
    arrays = [rng.standard_normal(xs), rng.standard_normal(ws), rng.standard_normal(ws[0])]
    f, tf = _CONVS[nd]
    _compare(f, tf, arrays, dtype, **kw)
    assert calls


CONV_T = [  # (nd, input shape, weight shape, kwargs)
    (1, (2, 4, 7), (4, 3, 3), dict(stride=2, padding=1, output_padding=1)),
    (1, (2, 4, 5), (4, 2, 4), dict(groups=2, dilation=2)),
    (2, (2, 3, 5, 4), (3, 4, 3, 3), dict(stride=2, padding=1)),
    (2, (2, 4, 4, 5), (4, 3, 2, 3), dict(stride=(2, 3), padding=(0, 1), output_padding=(1, 2),
                                         groups=2)),
    (2, (1, 2, 3, 3), (2, 2, 3, 2), dict(dilation=(2, 1), stride=1)),
    (3, (1, 2, 3, 4, 3), (2, 3, 2, 2, 3), dict(stride=(2, 1, 2), padding=(0, 1, 1))),
]
_CONVS_T = {1: (F.conv_transpose1d, TF.conv_transpose1d),
            2: (F.conv_transpose2d, TF.conv_transpose2d),
            3: (F.conv_transpose3d, TF.conv_transpose3d)}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("case", range(len(CONV_T)))
def test_conv_transpose_matches_torch(case, bias, dtype):
    nd, xs, ws, kw = CONV_T[case]
    arrays = [rng.standard_normal(xs), rng.standard_normal(ws)]
    if bias:
        arrays.append(rng.standard_normal(ws[1] * kw.get("groups", 1)))
    f, tf = _CONVS_T[nd]
    _compare(f, tf, arrays, dtype, **kw)


def _distinct(shape):
    n = int(np.prod(shape))
    return (rng.permutation(n) * 0.1 + 0.01 * rng.random(n)).reshape(shape) - 0.05 * n


POOL = [  # (nd, input shape, kwargs)
    (1, (2, 3, 9), dict(kernel_size=3, stride=2, padding=1)),
    (1, (2, 3, 10), dict(kernel_size=2, ceil_mode=True, stride=3)),
    (1, (3, 10), dict(kernel_size=3, dilation=2)),
    (2, (2, 3, 8, 8), dict(kernel_size=2)),
    (2, (2, 3, 7, 9), dict(kernel_size=(3, 2), stride=(2, 1), padding=(1, 1))),
    (2, (1, 2, 9, 9), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
    (2, (1, 2, 9, 8), dict(kernel_size=2, dilation=2, stride=1)),
    (3, (1, 2, 5, 6, 5), dict(kernel_size=2, stride=(1, 2, 2), padding=(1, 0, 1))),
    (3, (1, 2, 6, 5, 5), dict(kernel_size=3, stride=2, ceil_mode=True)),
]
_MAX = {1: (F.max_pool1d, TF.max_pool1d), 2: (F.max_pool2d, TF.max_pool2d),
        3: (F.max_pool3d, TF.max_pool3d)}
_AVG = {1: (F.avg_pool1d, TF.avg_pool1d), 2: (F.avg_pool2d, TF.avg_pool2d),
        3: (F.avg_pool3d, TF.avg_pool3d)}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", range(len(POOL)))
def test_max_pool_matches_torch(case, dtype):
    nd, xs, kw = POOL[case]
    f, tf = _MAX[nd]
    _compare(f, tf, [_distinct(xs)], dtype, **kw)
    x = _distinct(xs)
    _, idx = f(rg.tensor(x), return_indices=True, **kw)
    _, tidx = tf(torch.tensor(x), return_indices=True, **kw)
    np.testing.assert_array_equal(idx.data, tidx.numpy())


def test_max_pool_ties_and_nan_like_torch():
    """Ties send the whole gradient to the first maximum; the last NaN of a window wins."""
    x = np.zeros((1, 2, 6, 6))
    x[0, 1, 1, 1] = np.nan
    x[0, 1, 2, 2] = np.nan
    a, t = rg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out, idx = F.max_pool2d(a, 3, 1, 1, return_indices=True)
    tout, tidx = TF.max_pool2d(t, 3, 1, 1, return_indices=True)
    np.testing.assert_array_equal(out.data, tout.detach().numpy())
    np.testing.assert_array_equal(idx.data, tidx.numpy())
    out.sum().backward()
    tout.sum().backward()
    np.testing.assert_array_equal(a.grad.data, t.grad.numpy())


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("include", [True, False])
@pytest.mark.parametrize("case", range(len(POOL)))
def test_avg_pool_matches_torch(case, include, dtype):
    nd, xs, kw = POOL[case]
    kw = {k: v for k, v in kw.items() if k != "dilation"}
    f, tf = _AVG[nd]
    _compare(f, tf, [rng.standard_normal(xs)], dtype, count_include_pad=include, **kw)


@pytest.mark.parametrize("nd", [2, 3])
def test_avg_pool_divisor_override(nd):
    f, tf = _AVG[nd]
    xs = (2, 3) + (7,) * nd
    _compare(f, tf, [rng.standard_normal(xs)], "float64", kernel_size=3, stride=2, padding=1,
             ceil_mode=True, divisor_override=5)


@pytest.mark.parametrize("nd", [1, 2])
def test_max_unpool_inverts_max_pool_like_torch(nd):
    xs = (2, 3) + (8, 9)[:nd]
    x = _distinct(xs)
    pool = (F.max_pool1d, F.max_pool2d)[nd - 1]
    tpool = (TF.max_pool1d, TF.max_pool2d)[nd - 1]
    unpool = (F.max_unpool1d, F.max_unpool2d)[nd - 1]
    tunpool = (TF.max_unpool1d, TF.max_unpool2d)[nd - 1]
    _, idx = pool(rg.tensor(x), 2, return_indices=True)
    _, tidx = tpool(torch.tensor(x), 2, return_indices=True)
    v = rng.standard_normal(idx.shape)
    _compare(lambda a, i: unpool(a, i, 2, output_size=xs[2:]),
             lambda a, i: tunpool(a, i, 2, output_size=xs[2:]), [v, idx.data], "float64")
    np.testing.assert_array_equal(tidx.numpy(), idx.data)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("nd,xs,out", [(1, (2, 3, 10), 4), (1, (2, 3, 7), 7),
                                       (2, (2, 3, 9, 7), (4, 3)),
                                       (2, (1, 2, 8, 8), (2, None)), (2, (2, 5, 5), 1),
                                       (3, (1, 2, 5, 6, 7), (2, 3, 4))])
def test_adaptive_avg_pool_matches_torch(nd, xs, out, dtype):
    f = (F.adaptive_avg_pool1d, F.adaptive_avg_pool2d, F.adaptive_avg_pool3d)[nd - 1]
    tf = (TF.adaptive_avg_pool1d, TF.adaptive_avg_pool2d, TF.adaptive_avg_pool3d)[nd - 1]
    _compare(f, tf, [rng.standard_normal(xs)], dtype, output_size=out)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("nd,xs,out", [(1, (2, 3, 10), 4), (1, (2, 3, 9), 3),
                                       (2, (2, 3, 9, 7), (4, 3)), (2, (1, 2, 8, 8), (4, 4)),
                                       (2, (2, 5, 5), 2)])
def test_adaptive_max_pool_matches_torch(nd, xs, out, dtype):
    f = (F.adaptive_max_pool1d, F.adaptive_max_pool2d)[nd - 1]
    tf = (TF.adaptive_max_pool1d, TF.adaptive_max_pool2d)[nd - 1]
    x = _distinct(xs)
    _compare(f, tf, [x], dtype, output_size=out)
    _, idx = f(rg.tensor(x), out, return_indices=True)
    _, tidx = tf(torch.tensor(x), out, return_indices=True)
    np.testing.assert_array_equal(idx.data, tidx.numpy())


PADS = [((2, 3, 5), (1, 2)), ((2, 3, 5), (-1, 2)), ((2, 3, 5, 6), (1, 2, 3, 0)),
        ((2, 3, 5, 6), (2, -1, 1, 1)), ((3, 5, 6), (4, 4, 3, 1)),
        ((1, 2, 4, 5, 6), (1, 1, 2, 0, 1, 3)), ((3, 5), (2, 1))]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
@pytest.mark.parametrize("case", range(len(PADS)))
def test_pad_matches_torch(case, mode, dtype):
    xs, p = PADS[case]
    if mode == "reflect" and any(a >= n for a, n in zip(p, np.repeat(xs[::-1], 2))):
        pytest.skip("reflect needs padding < size")
    if mode != "constant" and len(xs) - len(p) // 2 not in (1, 2):
        pytest.skip("torch pads 1 to 3 dims after batch and channel")
    kw = dict(value=0.5) if mode == "constant" else {}
    _compare(lambda x: F.pad(x, p, mode, **kw), lambda x: TF.pad(x, p, mode, **kw),
             [rng.standard_normal(xs)], dtype)


INTERP = [  # (input shape, kwargs)
    ((2, 3, 5), dict(scale_factor=2, mode="nearest")),
    ((2, 3, 7), dict(size=4, mode="nearest")),
    ((2, 3, 7), dict(size=10, mode="nearest-exact")),
    ((2, 3, 5), dict(scale_factor=1.7, mode="linear")),
    ((2, 3, 5), dict(size=9, mode="linear", align_corners=True)),
    ((2, 3, 4, 5), dict(scale_factor=2, mode="nearest")),
    ((2, 3, 4, 5), dict(size=(7, 3), mode="bilinear")),
    ((2, 3, 4, 5), dict(size=(7, 3), mode="bilinear", align_corners=True)),
    ((2, 3, 4, 5), dict(scale_factor=(1.5, 2.3), mode="bilinear")),
    ((2, 3, 4, 5), dict(scale_factor=(1.5, 2.3), mode="bilinear",
                        recompute_scale_factor=True)),
    ((2, 3, 4, 5), dict(size=(9, 8), mode="bicubic")),
    ((2, 3, 6, 5), dict(size=(3, 8), mode="bicubic", align_corners=True)),
    ((2, 3, 4, 5), dict(scale_factor=0.6, mode="bicubic")),
    ((1, 2, 3, 4, 5), dict(size=(5, 3, 7), mode="trilinear")),
    ((1, 2, 3, 4, 5), dict(scale_factor=2, mode="nearest-exact")),
    ((2, 3, 9, 7), dict(size=(4, 3), mode="area")),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", range(len(INTERP)))
def test_interpolate_matches_torch(case, dtype):
    xs, kw = INTERP[case]
    _compare(F.interpolate, TF.interpolate, [rng.standard_normal(xs)], dtype, **kw)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("xs,r", [((2, 8, 3, 4), 2), ((9, 2, 2), 3), ((2, 3, 18, 2, 3), 3)])
def test_pixel_shuffle_and_unshuffle_match_torch(xs, r, dtype):
    _compare(F.pixel_shuffle, TF.pixel_shuffle, [rng.standard_normal(xs)], dtype,
             upscale_factor=r)
    big = xs[:-3] + (xs[-3] // (r * r), xs[-2] * r, xs[-1] * r)
    _compare(F.pixel_unshuffle, TF.pixel_unshuffle, [rng.standard_normal(big)], dtype,
             downscale_factor=r)


def test_second_derivatives_match_torch():
    """Through create_graph: conv2d, conv_transpose1d, max_pool2d, bicubic, reflect pad."""
    x = rng.standard_normal((2, 2, 6, 6))
    w = rng.standard_normal((3, 2, 3, 3))

    def f(lib, F_, x, w):
        h = F_.conv2d(x, w, padding=1)
        h = F_.max_pool2d(lib.tanh(h), 2)
        h = F_.pad(h, (1, 1, 1, 1), mode="reflect")
        h = F_.interpolate(h, size=(7, 5), mode="bicubic")
        return (h * h).sum()

    a, b = rg.tensor(x, requires_grad=True), rg.tensor(w, requires_grad=True)
    ta, tb = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    ga = rg.autograd.grad(f(rg, F, a, b), [a, b], create_graph=True)
    tga = torch.autograd.grad(f(torch, TF, ta, tb), [ta, tb], create_graph=True)
    h = rg.autograd.grad(sum((g * g).sum() for g in ga), [a, b])
    th = torch.autograd.grad(sum((g * g).sum() for g in tga), [ta, tb])
    for u, v in zip(h, th):
        np.testing.assert_allclose(u.data, v.numpy(), rtol=1e-8, atol=1e-9)


def test_jit_replays_a_small_cnn():
    w = rg.tensor(rng.standard_normal((4, 2, 3, 3)), requires_grad=True)
    wt = rg.tensor(rng.standard_normal((4, 2, 2, 2)), requires_grad=True)

    def loss(x, w, wt):
        h = F.max_pool2d(F.conv2d(F.pad(x, (1, 1, 1, 1), mode="circular"), w), 2, ceil_mode=True)
        h = F.conv_transpose2d(h, wt, stride=2)
        return F.interpolate(h, scale_factor=1.5, mode="bilinear").sum()

    eager = rg.func.grad(loss, argnums=(1, 2))
    fast = rg.jit(eager)
    x1, x2 = (rg.tensor(rng.standard_normal((2, 2, 7, 7))) for _ in range(2))
    fast(x1, w, wt)
    for u, v in zip(fast(x2, w, wt), eager(x2, w, wt)):
        np.testing.assert_allclose(u.data, v.data, rtol=1e-12, atol=1e-12)


# ---------------------------------------------------------------- bad arguments

BAD = [
    (lambda: F.conv2d(rg.zeros(1, 3, 2, 2), rg.zeros(4, 3, 3, 3)), ValueError,
     r"kernel of size \(3, 3\).*larger than the padded input \(2, 2\)"),
    (lambda: F.conv2d(rg.zeros(1, 4, 5, 5), rg.zeros(6, 3, 3, 3), groups=2), ValueError,
     r"4 channels.*groups=2 expects 6"),
    (lambda: F.conv2d(rg.zeros(1, 4, 5, 5), rg.zeros(5, 2, 3, 3), groups=2), ValueError,
     r"out_channels \(5.*divisible by groups \(2\)"),
    (lambda: F.conv2d(rg.zeros(4, 5), rg.zeros(4, 4, 3, 3)), ValueError,
     r"conv2d: expected a 3-D \(unbatched\) or 4-D input.*\(4, 5\)"),
    (lambda: F.conv1d(rg.zeros(1, 2, 5), rg.zeros(3, 2, 3), padding=-1), ValueError,
     r"padding must be non-negative"),
    (lambda: F.conv1d(rg.zeros(1, 2, 5), rg.zeros(3, 2, 3), padding="same", stride=2),
     ValueError, r"'same' is not supported for strided"),
    (lambda: F.conv1d(rg.zeros(1, 2, 5), rg.zeros(3, 2, 3), padding="full"), ValueError,
     r"padding must be .*'same'"),
    (lambda: F.conv_transpose2d(rg.zeros(1, 2, 4, 4), rg.zeros(2, 3, 3, 3), stride=2,
                                output_padding=2), ValueError,
     r"output_padding \(2, 2\) must be smaller than either stride \(2, 2\)"),
    (lambda: F.conv2d(rg.zeros(1, 2, 5, 5), rg.zeros(3, 2, 3, 3), bias=rg.zeros(4)),
     ValueError, r"bias must have shape \(3,\)"),
    (lambda: F.max_pool2d(rg.zeros(1, 1, 2, 2), 3), ValueError,
     r"kernel_size \(3, 3\).*larger than the padded input.*\(1, 1, 2, 2\)"),
    (lambda: F.max_pool2d(rg.zeros(1, 1, 6, 6), 2, padding=2), ValueError,
     r"padding \(2, 2\) should be at most half of kernel_size"),
    (lambda: F.max_pool1d(rg.zeros(5), 2), ValueError, r"max_pool1d: expected a 2-D"),
    (lambda: F.avg_pool2d(rg.zeros(1, 1, 4, 4), 2, divisor_override=0), ValueError,
     r"divisor_override must be a non-zero int"),
    (lambda: F.pad(rg.zeros(1, 2, 3), (1, 2, 3)), ValueError, r"even number"),
    (lambda: F.pad(rg.zeros(1, 2, 3), (1, 1), mode="wrap"), ValueError, r"mode must be one"),
    (lambda: F.pad(rg.zeros(1, 2, 3), (3, 1), mode="reflect"), ValueError,
     r"smaller than its dimension.*\(1, 2, 3\)"),
    (lambda: F.pad(rg.zeros(1, 2, 3), (-2, -2)), ValueError, r"negative size"),
    (lambda: F.interpolate(rg.zeros(1, 2, 3), size=4, mode="bilinear"), ValueError,
     r"mode 'bilinear' needs a 4-D input, got shape \(1, 2, 3\)"),
    (lambda: F.interpolate(rg.zeros(1, 2, 3), size=4, mode="cubic"), ValueError,
     r"mode must be one of"),
    (lambda: F.interpolate(rg.zeros(1, 2, 3), size=4, scale_factor=2), ValueError,
     r"exactly one of size and scale_factor"),
    (lambda: F.interpolate(rg.zeros(1, 2, 3), size=4, align_corners=True), ValueError,
     r"align_corners option can only be set"),
    (lambda: F.pixel_shuffle(rg.zeros(1, 3, 2, 2), 2), ValueError, r"divisible by"),
    (lambda: F.max_unpool2d(rg.zeros(1, 1, 2, 2), rg.tensor(np.full((1, 1, 2, 2), 99)), 2),
     IndexError, r"indices must lie in \[0, 16\)"),
    (lambda: F.adaptive_avg_pool2d(rg.zeros(1, 2, 4, 4), (2, -1)), ValueError,
     r"output_size must be non-negative"),
]


@pytest.mark.parametrize("case", range(len(BAD)))
def test_bad_arguments_are_refused_with_a_clear_message(case):
    call, exc, pattern = BAD[case]
    with pytest.raises(exc, match=pattern):
        call()


# ---------------------------------------------------------------- layers

LAYERS = [  # (name, args, kwargs, input shape)
    ("Conv1d", (4, 6, 3), dict(stride=2, padding=1), (2, 4, 9)),
    ("Conv1d", (4, 6, 4), dict(padding="same", padding_mode="reflect", groups=2), (2, 4, 9)),
    ("Conv2d", (3, 4, 3), dict(padding=1, padding_mode="circular"), (2, 3, 6, 5)),
    ("Conv2d", (4, 6, (3, 2)), dict(padding="same", dilation=(1, 2), groups=2,
                                    padding_mode="replicate"), (2, 4, 6, 7)),
    ("Conv2d", (3, 4, 3), dict(padding="valid", bias=False), (2, 3, 6, 5)),
    ("Conv3d", (2, 4, 2), dict(stride=(1, 2, 1), padding=1), (1, 2, 4, 5, 3)),
    ("ConvTranspose1d", (4, 6, 3), dict(stride=2, padding=1, output_padding=1), (2, 4, 5)),
    ("ConvTranspose2d", (4, 6, 3), dict(stride=2, groups=2, dilation=1), (2, 4, 3, 4)),
    ("ConvTranspose3d", (2, 3, 2), dict(stride=2, padding=(0, 1, 0)), (1, 2, 3, 3, 2)),
    ("MaxPool1d", (3,), dict(stride=2, padding=1, ceil_mode=True), (2, 3, 10)),
    ("MaxPool2d", (2,), {}, (2, 3, 6, 6)),
    ("MaxPool3d", (2,), dict(stride=1), (1, 2, 3, 4, 3)),
    ("AvgPool1d", (3,), dict(stride=2, padding=1, count_include_pad=False), (2, 3, 10)),
    ("AvgPool2d", (3,), dict(stride=2, padding=1, ceil_mode=True, divisor_override=4),
     (2, 3, 7, 7)),
    ("AvgPool3d", (2,), {}, (1, 2, 4, 4, 4)),
    ("AdaptiveAvgPool1d", (4,), {}, (2, 3, 10)),
    ("AdaptiveAvgPool2d", ((3, 2),), {}, (2, 3, 7, 5)),
    ("AdaptiveMaxPool2d", ((3, 2),), {}, (2, 3, 7, 5)),
    ("Upsample", (), dict(scale_factor=2, mode="bilinear", align_corners=False), (2, 3, 4, 4)),
    ("Upsample", (), dict(size=(5, 7), mode="nearest"), (2, 3, 4, 4)),
    ("PixelShuffle", (2,), {}, (2, 8, 3, 3)),
    ("PixelUnshuffle", (2,), {}, (2, 2, 4, 6)),
    ("ZeroPad2d", ((1, 2, 0, 1),), {}, (2, 3, 4, 4)),
    ("ConstantPad1d", (2, 1.5), {}, (2, 3, 4)),
    ("ConstantPad2d", (1, -0.5), {}, (2, 3, 4, 4)),
    ("ReflectionPad1d", ((2, 1),), {}, (2, 3, 4)),
    ("ReflectionPad2d", (1,), {}, (2, 3, 4, 4)),
    ("ReplicationPad1d", (3,), {}, (2, 3, 4)),
    ("ReplicationPad2d", ((1, 0, 2, 1),), {}, (2, 3, 4, 4)),
]


@pytest.mark.parametrize("case", range(len(LAYERS)))
def test_layer_matches_torch_with_the_same_weights(case):
    name, args, kw, xs = LAYERS[case]
    ours = getattr(rg.nn, name)(*args, **kw, **({"dtype": rg.float64} if "Conv" in name else {}))
    theirs = getattr(torch.nn, name)(*args, **kw).double()
    for pname, p in theirs.named_parameters():
        assert getattr(ours, pname).shape == tuple(p.shape)
        getattr(ours, pname).data[...] = p.detach().numpy()
    x = _distinct(xs) if "Max" in name else rng.standard_normal(xs)
    a, t = rg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out, ref = ours(a), theirs(t)
    np.testing.assert_allclose(out.data, ref.detach().numpy(), rtol=1e-10, atol=1e-12)
    w = rng.standard_normal(out.shape)
    (out * rg.tensor(w)).sum().backward()
    (ref * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(a.grad.data, t.grad.numpy(), rtol=1e-10, atol=1e-12)
    for pname, p in theirs.named_parameters():
        np.testing.assert_allclose(getattr(ours, pname).grad.data, p.grad.numpy(), rtol=1e-10,
                                   atol=1e-12)
    assert type(ours).__name__ == name


def test_unpool_layers_and_return_indices_match_torch():
    x = _distinct((2, 3, 6, 8))
    pool, tpool = rg.nn.MaxPool2d(2, return_indices=True), torch.nn.MaxPool2d(2,
                                                                              return_indices=True)
    out, idx = pool(rg.tensor(x))
    tout, tidx = tpool(torch.tensor(x))
    back = rg.nn.MaxUnpool2d(2)(out, idx, output_size=(6, 8))
    tback = torch.nn.MaxUnpool2d(2)(tout, tidx, output_size=(6, 8))
    np.testing.assert_array_equal(back.data, tback.numpy())
    m, i = rg.nn.AdaptiveMaxPool2d(3, return_indices=True)(rg.tensor(x))
    tm, ti = torch.nn.AdaptiveMaxPool2d(3, return_indices=True)(torch.tensor(x))
    np.testing.assert_array_equal(i.data, ti.numpy())
    np.testing.assert_array_equal(m.data, tm.numpy())


def test_conv_transpose_output_size_like_torch():
    ours, theirs = rg.nn.ConvTranspose2d(2, 3, 3, stride=2), torch.nn.ConvTranspose2d(2, 3, 3,
                                                                                      stride=2)
    x = rng.standard_normal((1, 2, 4, 4)).astype(np.float32)
    assert ours(rg.tensor(x), output_size=(10, 9)).shape == \
        tuple(theirs(torch.tensor(x, dtype=torch.float32), output_size=(10, 9)).shape)
    with pytest.raises(ValueError, match="not reachable"):
        ours(rg.tensor(x), output_size=(12, 9))


@pytest.mark.parametrize("name,args", [("Conv1d", (4, 6, 3)), ("Conv2d", (3, 8, (3, 2))),
                                       ("Conv3d", (2, 4, 2)), ("ConvTranspose2d", (6, 4, 3))])
def test_layer_init_is_kaiming_uniform_like_torch(name, args):
    """kaiming_uniform(a=sqrt(5)): U(-1/sqrt(fan_in), 1/sqrt(fan_in)), bias the same bound."""
    layer = getattr(rg.nn, name)(*args, groups=2) if args[0] % 2 == 0 and args[1] % 2 == 0 \
        else getattr(rg.nn, name)(*args)
    w = layer.weight.data
    fan_in = int(np.prod(w.shape[1:]))
    bound = 1 / np.sqrt(fan_in)
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.6 * bound
    assert np.abs(layer.bias.data).max() <= bound


def test_layer_bad_arguments():
    with pytest.raises(ValueError, match=r"must be divisible by groups \(3\)"):
        rg.nn.Conv2d(4, 6, 3, groups=3)
    with pytest.raises(ValueError, match="padding_mode must be one of"):
        rg.nn.Conv1d(2, 2, 3, padding_mode="wrap")
    with pytest.raises(ValueError, match="only padding_mode='zeros'"):
        rg.nn.ConvTranspose2d(2, 2, 3, padding_mode="reflect")
    with pytest.raises(ValueError, match="'same' is not supported for strided"):
        rg.nn.Conv2d(2, 2, 3, stride=2, padding="same")


@pytest.mark.parametrize("name,args", [
    ("conv1d", [(2, 3, 9), (4, 3, 2)]), ("conv2d", [(2, 3, 6, 5), (4, 3, 3, 2)]),
    ("conv3d", [(1, 2, 4, 4, 3), (3, 2, 2, 2, 2)]),
    ("conv_transpose1d", [(2, 3, 5), (3, 4, 3)]),
    ("conv_transpose2d", [(2, 3, 4, 4), (3, 2, 3, 3)]),
    ("conv_transpose3d", [(1, 2, 3, 3, 2), (2, 2, 2, 2, 2)]),
    ("max_pool1d", [(2, 3, 8)]), ("max_pool2d", [(2, 3, 6, 6)]), ("max_pool3d", [(1, 2, 4, 4, 4)]),
    ("avg_pool1d", [(2, 3, 8)]), ("adaptive_avg_pool1d", [(2, 3, 8)]),
    ("pixel_shuffle", [(2, 8, 3, 3)]),
    ("pixel_unshuffle", [(2, 2, 4, 4)])])
def test_top_level_names_match_torch(name, args):
    """rg.<name> where torch has torch.<name>, same positional arguments."""
    arrays = [_distinct(s) for s in args]
    extra = {"max_pool1d": (2,), "max_pool2d": (2,), "max_pool3d": (2,), "avg_pool1d": (3,),
             "adaptive_avg_pool1d": (3,), "pixel_shuffle": (2,),
             "pixel_unshuffle": (2,)}.get(name, ())
    ours = getattr(rg, name)(*[rg.tensor(a) for a in arrays], *extra)
    theirs = getattr(torch, name)(*[torch.tensor(a) for a in arrays], *extra)
    np.testing.assert_allclose(ours.data, theirs.numpy(), rtol=1e-10, atol=1e-12)
