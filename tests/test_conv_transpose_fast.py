"""Transposed convolution by output phases (ops phase_in / phase_fold and their adjoints):
values and gradients against PyTorch over strides, paddings, dilations, output paddings and
groups in 1, 2 and 3 dimensions; second derivatives; forward mode and vmap; a gradient
holding inf or NaN; the batch split over threads."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import retrograd as rg
import retrograd.nn.functional as F
from retrograd import ops, threads

_FNS = {1: (F.conv_transpose1d, TF.conv_transpose1d),
        2: (F.conv_transpose2d, TF.conv_transpose2d),
        3: (F.conv_transpose3d, TF.conv_transpose3d)}

CASES = [  # (input shape, weight shape, kwargs)
    ((3, 4, 6, 5), (4, 2, 3, 3), dict(stride=2, padding=1, output_padding=1)),
    ((2, 4, 5, 4), (4, 3, 3, 2), dict(stride=(3, 2), padding=(2, 0), dilation=(2, 1),
                                      output_padding=(1, 1))),
    ((2, 6, 4, 4), (6, 1, 2, 4), dict(stride=(1, 4), padding=(1, 3), output_padding=(0, 3),
                                      groups=3)),
    ((2, 2, 3, 3), (2, 2, 1, 1), dict(stride=3)),                  # phases with no tap
    ((2, 2, 3, 4), (2, 3, 5, 3), dict(stride=2, padding=(4, 2), dilation=(1, 2))),
    ((2, 3, 7), (3, 2, 4), dict(stride=3, padding=2, output_padding=2, dilation=2)),
    ((2, 4, 2, 3, 3), (4, 1, 2, 3, 2), dict(stride=(2, 1, 3), padding=(0, 1, 1),
                                            output_padding=(1, 0, 2), groups=2)),
]


def _arrays(case, seed=0):
    xs, ws, kw = CASES[case]
    r = np.random.default_rng(seed)
    return r.standard_normal(xs), r.standard_normal(ws), \
        r.standard_normal(ws[1] * kw.get("groups", 1)), kw


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_values_and_gradients_match_torch(case, bias, dtype, monkeypatch):
    calls = []
    forward = ops.phase_in.forward
    monkeypatch.setattr(ops.phase_in, "forward",
                        lambda *a, **k: calls.append(1) or forward(*a, **k))
    x, w, b, kw = _arrays(case)
    f, tf = _FNS[x.ndim - 2]
    ours = [rg.tensor(a.astype(dtype), requires_grad=True) for a in (x, w, b)]
    theirs = [torch.tensor(a.astype(dtype), requires_grad=True) for a in (x, w, b)]
    out = f(ours[0], ours[1], ours[2] if bias else None, **kw)
    ref = tf(theirs[0], theirs[1], theirs[2] if bias else None, **kw)
    tol = dict(rtol=2e-4, atol=2e-4) if dtype == "float32" else dict(rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(out.numpy(), ref.detach().numpy(), **tol)
    assert out.dtype == np.dtype(dtype)
    seed = np.random.default_rng(1).standard_normal(out.shape).astype(dtype)
    (out * rg.tensor(seed)).sum().backward()
    (ref * torch.tensor(seed)).sum().backward()
    for a, t in zip(ours[:3 if bias else 2], theirs):
        np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy(), **tol)
    assert calls  # it went through the phase frames


@pytest.mark.parametrize("case", [0, 1, 2, 6])
def test_second_derivatives_match_torch(case):
    x, w, b, kw = _arrays(case, seed=2)
    f, tf = _FNS[x.ndim - 2]
    ours = [rg.tensor(a, requires_grad=True) for a in (x, w, b)]
    theirs = [torch.tensor(a, requires_grad=True) for a in (x, w, b)]
    out, ref = f(*ours, **kw), tf(*theirs, **kw)
    v = np.random.default_rng(3).standard_normal(out.shape)
    gs = rg.autograd.grad((out * out).sum() * 0.5 + (out * rg.tensor(v)).sum(), ours,
                          create_graph=True)
    tgs = torch.autograd.grad((ref * ref).sum() * 0.5 + (ref * torch.tensor(v)).sum(), theirs,
                              create_graph=True)
    u = [np.random.default_rng(4 + i).standard_normal(g.shape) for i, g in enumerate(gs)]
    hs = rg.autograd.grad(sum((g * rg.tensor(a)).sum() for g, a in zip(gs, u)), ours)
    ths = torch.autograd.grad(sum((g * torch.tensor(a)).sum() for g, a in zip(tgs, u)), theirs)
    for h, th in zip(hs, ths):
        np.testing.assert_allclose(h.numpy(), th.numpy(), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("case", [0, 2, 5])
def test_forward_mode_and_vmap_match_torch(case):
    x, w, b, kw = _arrays(case, seed=5)
    f, tf = _FNS[x.ndim - 2]
    r = np.random.default_rng(6)
    tx, tw, tb = r.standard_normal(x.shape), r.standard_normal(w.shape), \
        r.standard_normal(b.shape)
    _, t = rg.func.jvp(lambda *a: f(*a, **kw), tuple(rg.tensor(a) for a in (x, w, b)),
                       tuple(rg.tensor(a) for a in (tx, tw, tb)))
    _, tref = torch.func.jvp(lambda *a: tf(*a, **kw), tuple(torch.tensor(a) for a in (x, w, b)),
                             tuple(torch.tensor(a) for a in (tx, tw, tb)))
    np.testing.assert_allclose(t.numpy(), tref.numpy(), rtol=1e-10, atol=1e-10)
    xb = r.standard_normal((3,) + x.shape)  # a batch of inputs, and of biases
    bb = r.standard_normal((3,) + b.shape)
    got = rg.func.vmap(lambda a, c: f(a, rg.tensor(w), c, **kw))(rg.tensor(xb), rg.tensor(bb))
    want = torch.func.vmap(lambda a, c: tf(a, torch.tensor(w), c, **kw))(torch.tensor(xb),
                                                                         torch.tensor(bb))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-10, atol=1e-10)


def test_inf_and_nan_in_the_gradient_spread_as_in_torch():
    """An inf at an edge output reaches the weight gradient as in PyTorch (inf, not the NaN
    that 0 * inf from the frame's off-input columns would give)."""
    x, w, b, kw = _arrays(0, seed=7)
    g = np.random.default_rng(8).standard_normal(
        TF.conv_transpose2d(torch.tensor(x), torch.tensor(w), **kw).shape)
    g[0, 1, -1, -1] = np.inf
    g[1, 0, 0, 3] = -np.inf
    g[2, 1, 5, -1] = np.nan
    ours = [rg.tensor(a, requires_grad=True) for a in (x, w)]
    theirs = [torch.tensor(a, requires_grad=True) for a in (x, w)]
    with np.errstate(invalid="ignore"):
        F.conv_transpose2d(*ours, **kw).backward(rg.tensor(g))
    TF.conv_transpose2d(*theirs, **kw).backward(torch.tensor(g))
    for a, t in zip(ours, theirs):
        np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("case", [0, 6])
def test_batch_split_over_threads_matches_one_thread(case, monkeypatch):
    from retrograd.ops import windows
    monkeypatch.setattr(threads, "_MIN_WORK", 1)  # small inputs: split them anyway
    monkeypatch.setattr(windows, "_COPY_WORK", 1)
    pieces = []
    run = threads.run
    monkeypatch.setattr(threads, "run", lambda fn, p: pieces.append(len(p)) or run(fn, p))
    x, w, b, kw = _arrays(case, seed=9)
    f, _ = _FNS[x.ndim - 2]
    saved = threads.num_threads()
    results = []
    try:
        for k in (1, 2):
            threads.set_num_threads(k)
            ts = [rg.tensor(a, requires_grad=True) for a in (x, w, b)]
            y = f(*ts, **kw)
            (y * y).sum().backward()
            results.append([y.numpy()] + [t.grad.numpy() for t in ts])
    finally:
        threads.set_num_threads(saved)
    assert pieces.count(2) >= 4  # each of the four phase ops ran in two pieces
    for one, two in zip(*results):
        np.testing.assert_array_equal(one, two)


def test_a_broadcast_gradient_with_inf_is_seen():
    """The finiteness check reads a broadcast gradient's one element per stride-0 axis."""
    x, w, b, kw = _arrays(0, seed=10)
    shape = TF.conv_transpose2d(torch.tensor(x), torch.tensor(w), **kw).shape
    g = np.broadcast_to(np.array([1.0, np.inf]).reshape(1, 2, 1, 1), shape)
    ours = [rg.tensor(a, requires_grad=True) for a in (x, w)]
    theirs = [torch.tensor(a, requires_grad=True) for a in (x, w)]
    with np.errstate(invalid="ignore"):
        F.conv_transpose2d(*ours, **kw).backward(rg.tensor(g))
    TF.conv_transpose2d(*theirs, **kw).backward(torch.tensor(np.ascontiguousarray(g)))
    for a, t in zip(ours, theirs):
        np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-10)
    from retrograd.ops.windows import _phase_fold_t  # the op itself on the stride-0 array
    geo = dict(ins=x.shape[2:], outs=tuple(shape[2:]), kernel=w.shape[2:], stride=(2, 2),
               padding=(1, 1), dilation=(1, 1))
    cols = _phase_fold_t(g, **geo).reshape(w.shape[1], 9, x.shape[0], 7, 6)  # frame 7x6
    assert not cols[..., 6:, :].any() and not cols[..., :, 5:].any()  # off-input: zeroed
    np.testing.assert_array_equal(cols.ravel(), _phase_fold_t(np.ascontiguousarray(g),
                                                              **geo).ravel())
