"""PyTorch's behaviour for argument forms found by sweeping torch.nn.functional's and
torch.nn's keyword arguments against retrograd: 2-d nearest's doubled size, negative pads in
every mode, MultiheadAttention's returned weights under dropout, losses over broadcast
shapes, NumPy integers as layer arguments, F.linear's 1-d weight and broadcast bias, empty
adaptive outputs, and antialiased (and Lanczos) interpolation. Each is checked against
torch, values and gradients."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import retrograd as rg

F = rg.nn.functional


def _both(fn_name, arrays, **kw):
    """(torch result, rg result), or the exception type where one raises."""
    out = []
    for m, f in ((torch, getattr(TF, fn_name)), (rg, getattr(F, fn_name))):
        try:
            out.append(f(*[m.tensor(a) for a in arrays], **kw))
        except Exception as e:  # noqa: BLE001 - compared below
            out.append(type(e))
    return out


@pytest.mark.parametrize("scale", [2.0, 2.3, 2.49, 2.7, 1.5])
@pytest.mark.parametrize("width", [1, 3, 4, 7])
def test_nearest_2d_doubled_size_halves_the_index(scale, width):
    """PyTorch's 2-d nearest reads source j >> 1 wherever an output is twice its input,
    whatever the scale factor (2.3 on width 3 gives width 6: [0, 0, 1, 1, 2, 2])."""
    x = np.arange(2.0 * width).reshape(1, 1, 2, width)
    t, r = _both("interpolate", [x], scale_factor=scale)
    np.testing.assert_array_equal(r.numpy(), t.numpy())


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_negative_pads_match_torch(mode, n):
    """Reflect and replicate pad the whole input and then crop; circular crops first; a
    crop beyond the input (or an empty reflect/replicate result) is refused as torch
    refuses it. Circular cases where torch reads uninitialised memory (a positive pad wider
    than what is left after the crops) must be refused here."""
    x = np.arange(float(n)).reshape(1, 1, n)
    for b, a in itertools.product(range(-6, 7), repeat=2):
        if b >= 0 and a >= 0:
            continue
        t, r = _both("pad", [x], pad=(b, a), mode=mode)
        torch_garbage = mode == "circular" and n - max(-b, 0) - max(-a, 0) < max(b, a, 0)
        if torch_garbage:
            assert isinstance(r, type), (b, a)
        elif isinstance(t, type):
            assert isinstance(r, type) and issubclass(r, Exception), (b, a)
        else:
            assert not isinstance(r, type), (b, a, r)
            np.testing.assert_array_equal(r.numpy(), t.numpy(), err_msg=str((b, a)))


def test_negative_pads_gradients_match_torch():
    x = np.random.default_rng(0).standard_normal((2, 3, 5, 6))
    for mode, pad in [("reflect", (-1, 3, 2, -2)), ("replicate", (4, -2, -3, 2)),
                      ("circular", (-2, 3, 1, -1))]:
        grads = []
        for m, f in ((torch, TF.pad), (rg, F.pad)):
            tx = m.tensor(x, requires_grad=True)
            y = f(tx, pad, mode=mode)
            (y * m.tensor(np.arange(y.numel(), dtype=np.float64).reshape(tuple(y.shape)))) \
                .sum().backward()
            grads.append(tx.grad.numpy())
        np.testing.assert_allclose(grads[1], grads[0], err_msg=mode)


def test_attention_weights_are_returned_after_dropout():
    """In training with dropout, the returned per-head weights are the ones the output was
    computed with (PyTorch's): out = concat_h(weights_h @ v_h) W_o^T + b_o."""
    rg.manual_seed(3)
    mha = rg.nn.MultiheadAttention(8, 2, dropout=0.5, batch_first=True)
    q = rg.randn(2, 5, 8)
    out, w = mha(q, q, q, average_attn_weights=False)
    assert w.shape == (2, 2, 5, 5)
    assert not np.allclose(w.numpy().sum(-1), 1.0)  # dropped and rescaled
    wv = mha.in_proj_weight.numpy()[16:]
    bv = mha.in_proj_bias.numpy()[16:]
    v = (q.numpy() @ wv.T + bv).reshape(2, 5, 2, 4).transpose(0, 2, 1, 3)
    heads = (w.numpy() @ v).transpose(0, 2, 1, 3).reshape(2, 5, 8)
    want = heads @ mha.out_proj.weight.numpy().T + mha.out_proj.bias.numpy()
    np.testing.assert_allclose(out.detach().numpy(), want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss"])
@pytest.mark.parametrize("shapes", [((5, 1), (5,)), ((3, 1), (1, 3)), ((4,), (2, 4))])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_losses_warn_and_broadcast_as_torch(name, shapes, reduction):
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal(shapes[0]), rng.standard_normal(shapes[1])
    res = []
    for m, f in ((torch, getattr(TF, name)), (rg, getattr(F, name))):
        ta, tb = m.tensor(a, requires_grad=True), m.tensor(b, requires_grad=True)
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            y = f(ta, tb, reduction=reduction)
        assert any("different to the input size" in str(s.message) for s in seen), m
        y.sum().backward()
        res.append((y.detach().numpy(), ta.grad.numpy(), tb.grad.numpy()))
    for r, t in zip(res[1], res[0]):
        assert r.shape == t.shape
        np.testing.assert_allclose(r, t, rtol=1e-12, atol=1e-12)


def test_loss_shapes_that_do_not_broadcast_are_refused():
    with pytest.raises(ValueError, match=r"\(3,\).*\(4,\)"):
        F.mse_loss(rg.ones(3), rg.ones(4))


def test_numpy_integers_as_layer_arguments():
    conv = rg.nn.Conv2d(3, 4, np.int64(3), stride=np.int32(2), padding=np.int64(1))
    assert conv.kernel_size == (3, 3) and conv.stride == (2, 2) and conv.padding == (1, 1)
    pad = rg.nn.ReflectionPad2d(np.int64(1))
    assert pad(rg.ones(1, 1, 3, 3)).shape == (1, 1, 5, 5)
    assert rg.nn.ConvTranspose1d(2, 2, np.int64(3)).kernel_size == (3,)


@pytest.mark.parametrize("xs, ws, bs", [
    ((5, 4), (4,), None), ((4,), (4,), None), ((5, 4), (3, 4), (1,)), ((5, 4), (3, 4), ()),
    ((5, 4), (3, 4), (5, 3)), ((2, 5, 4), (3, 4), (1, 3)), ((5, 4), (4,), (1,)),
    ((5, 4), (3, 4), (2, 5, 3))])
def test_linear_one_d_weight_and_broadcast_bias(xs, ws, bs):
    rng = np.random.default_rng(2)
    arrays = [rng.standard_normal(s) for s in (xs, ws) + (() if bs is None else (bs,))]
    res = []
    for m, f in ((torch, TF.linear), (rg, F.linear)):
        ts = [m.tensor(a, requires_grad=True) for a in arrays]
        try:
            y = f(*ts)
        except Exception as e:  # noqa: BLE001 - compared below
            res.append(type(e))
            continue
        y.sum().backward()
        res.append([y.detach().numpy()] + [t.grad.numpy() for t in ts])
    if isinstance(res[0], type):
        assert isinstance(res[1], type) and issubclass(res[1], Exception)
        return
    for r, t in zip(res[1], res[0]):
        assert r.shape == t.shape
        np.testing.assert_allclose(r, t, rtol=1e-12)


def test_empty_adaptive_outputs():
    for fn, x, size in [("adaptive_avg_pool2d", (1, 2, 3, 4), (0, 2)),
                        ("adaptive_max_pool2d", (1, 2, 3, 4), (2, 0)),
                        ("adaptive_avg_pool1d", (1, 2, 3), 0),
                        ("adaptive_max_pool1d", (1, 2, 3), 0)]:
        t, r = _both(fn, [np.ones(x, np.float32)], output_size=size)
        assert r.shape == tuple(t.shape) and r.dtype == rg.float32, fn
    t, r = _both("interpolate", [np.ones((1, 1, 1, 4))], scale_factor=0.5, mode="area")
    assert r.shape == tuple(t.shape) == (1, 1, 0, 2)
    with pytest.raises(ValueError):
        F.interpolate(rg.ones(1, 1, 1), scale_factor=0.5, mode="linear")


AA_CASES = [((8, 8), dict(size=(3, 4))), ((5, 13), dict(size=(11, 2))),
            ((17, 6), dict(scale_factor=0.37)), ((9, 7), dict(scale_factor=(2.5, 0.5))),
            ((6, 6), dict(size=(6, 6))), ((12, 10), dict(scale_factor=0.5,
                                                          recompute_scale_factor=True)),
            ((17, 3), dict(size=(6, 1)))]


@pytest.mark.parametrize("mode, corners", [("bilinear", None), ("bilinear", True),
                                           ("bicubic", False), ("bicubic", True),
                                           ("lanczos", None)])
@pytest.mark.parametrize("case", range(len(AA_CASES)))
def test_antialiased_interpolation_matches_torch(mode, corners, case):
    """Values and gradients in float64. Where the output is one column wide and the
    height changes too, PyTorch's contiguous forward disagrees with its own backward and
    with its channels-last forward; retrograd matches those two (the reference here is
    then torch's channels-last result)."""
    (h, w), kw = AA_CASES[case]
    x = np.random.default_rng(case).standard_normal((2, 3, h, w))
    tx = torch.tensor(x, requires_grad=True)
    rx = rg.tensor(x, requires_grad=True)
    ty = TF.interpolate(tx.contiguous(memory_format=torch.channels_last), mode=mode,
                        antialias=True, align_corners=corners, **kw)
    ry = F.interpolate(rx, mode=mode, antialias=True, align_corners=corners, **kw)
    assert ry.shape == tuple(ty.shape)
    np.testing.assert_allclose(ry.numpy(), ty.detach().numpy(), rtol=1e-10, atol=1e-12)
    g = np.random.default_rng(9).standard_normal(ry.shape)
    ty.backward(torch.tensor(g))
    ry.backward(rg.tensor(g))
    np.testing.assert_allclose(rx.grad.numpy(), tx.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_antialias_float32_and_refusals():
    x = np.random.default_rng(4).standard_normal((1, 3, 40, 37)).astype(np.float32)
    for mode in ("bilinear", "bicubic", "lanczos"):
        t = TF.interpolate(torch.tensor(x), size=(9, 14), mode=mode, antialias=True)
        r = F.interpolate(rg.tensor(x), size=(9, 14), mode=mode, antialias=True)
        assert r.dtype == rg.float32
        np.testing.assert_allclose(r.numpy(), t.numpy(), rtol=1e-5, atol=1e-5)
    for kw in [dict(mode="nearest", antialias=True), dict(mode="area", antialias=True),
               dict(mode="lanczos"), dict(mode="lanczos", antialias=True, align_corners=True)]:
        with pytest.raises(ValueError):
            F.interpolate(rg.tensor(x), size=(9, 14), **kw)
        with pytest.raises(ValueError):
            TF.interpolate(torch.tensor(x), size=(9, 14), **kw)


def test_antialias_replays_under_jit():
    f = rg.jit(lambda a: F.interpolate(a, size=(5, 4), mode="bicubic", antialias=True))
    for seed in (0, 1):
        x = np.random.default_rng(seed).standard_normal((1, 2, 11, 9))
        want = TF.interpolate(torch.tensor(x), size=(5, 4), mode="bicubic", antialias=True)
        np.testing.assert_allclose(f(rg.tensor(x)).numpy(), want.numpy(), rtol=1e-10)
