"""Convolution's cache-blocked op (`conv`, `conv_bias`): values and the three gradients
against PyTorch over strides, paddings ('same' included), dilations, groups, with and
without bias, in 1, 2 and 3 dimensions, float32 and float64, batches that the chunk size
does not divide; only some inputs wanting gradients; a broadcast gradient; second
derivatives, forward mode and vmap (the generic rules); the batch split over threads."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import retrograd as rg
import retrograd.nn.functional as F
from retrograd import ops, threads
from retrograd.ops import conv_fast

_FNS = {1: (F.conv1d, TF.conv1d), 2: (F.conv2d, TF.conv2d), 3: (F.conv3d, TF.conv3d)}

CASES = [  # (input shape, weight shape, kwargs)
    ((5, 4, 7, 6), (6, 4, 3, 3), dict(padding=1)),
    ((5, 4, 9, 8), (6, 2, 3, 2), dict(stride=(2, 1), padding=(1, 2), dilation=(1, 2),
                                      groups=2)),
    ((7, 3, 11), (4, 3, 3), dict(padding="same", dilation=2)),
    ((3, 4, 6, 7), (4, 4, 2, 2), dict(padding="same")),             # uneven 'same'
    ((3, 6, 8, 8), (6, 1, 3, 3), dict(stride=2, groups=6)),          # depthwise
    ((5, 2, 5, 4, 6), (3, 2, 2, 3, 2), dict(stride=(2, 1, 2), padding=1)),
    ((4, 3, 10), (5, 3, 4), dict(stride=3, padding=2, dilation=2)),
    ((3, 2, 4, 5), (2, 2, 1, 1), dict()),                            # 1x1 kernel
]


def _arrays(case, seed=0):
    xs, ws, kw = CASES[case]
    r = np.random.default_rng(seed)
    return r.standard_normal(xs), r.standard_normal(ws), r.standard_normal(ws[0]), kw


def _chunks_of(monkeypatch, per):
    """Make chunks of `per` samples (a batch of 5 or 7 is then not a multiple of 2 or 3)."""
    made = []
    plan = conv_fast._Plan.__init__

    def init(self, *a):
        plan(self, *a)
        self.per = min(per, self.n)
        self.blocks = [(s, min(self.n, s + self.per)) for s in range(0, self.n, self.per)]
        made.append(self.per)

    monkeypatch.setattr(conv_fast._Plan, "__init__", init)
    return made


@pytest.mark.parametrize("per", [1, 2, 3])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_values_and_gradients_match_torch(case, bias, dtype, per, monkeypatch):
    plans = _chunks_of(monkeypatch, per)
    x, w, b, kw = _arrays(case)
    f, tf = _FNS[x.ndim - 2]
    ours = [rg.tensor(a.astype(dtype), requires_grad=True) for a in (x, w, b)]
    theirs = [torch.tensor(a.astype(dtype), requires_grad=True) for a in (x, w, b)]
    out = f(ours[0], ours[1], ours[2] if bias else None, **kw)
    ref = tf(theirs[0], theirs[1], theirs[2] if bias else None, **kw)
    tol = dict(rtol=2e-4, atol=2e-4) if dtype == "float32" else dict(rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(out.numpy(), ref.detach().numpy(), **tol)
    assert out.dtype == np.dtype(dtype) and out.shape == tuple(ref.shape)
    seed = np.random.default_rng(1).standard_normal(out.shape).astype(dtype)
    out.backward(rg.tensor(seed))
    ref.backward(torch.tensor(seed))
    for a, t in zip(ours[:3 if bias else 2], theirs):
        assert a.grad.dtype == np.dtype(dtype)
        np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy(), **tol)
    assert len(plans) >= 2  # the forward and the backward went the blocked way


@pytest.mark.parametrize("wants", [(True, False, False), (False, True, True),
                                   (False, False, True), (True, False, True)])
def test_only_some_inputs_want_gradients(wants):
    x, w, b, kw = _arrays(1, seed=2)
    ours = [rg.tensor(a, requires_grad=r) for a, r in zip((x, w, b), wants)]
    theirs = [torch.tensor(a, requires_grad=r) for a, r in zip((x, w, b), wants)]
    g = np.random.default_rng(3).standard_normal(TF.conv2d(*theirs, **kw).shape)
    F.conv2d(*ours, **kw).backward(rg.tensor(g))
    TF.conv2d(*theirs, **kw).backward(torch.tensor(g))
    for a, t, r in zip(ours, theirs, wants):
        if r:
            np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-10)
        else:
            assert a.grad is None


def test_broadcast_gradient_and_strided_input():
    """A gradient from `sum` (stride 0) and an input that is a transposed view."""
    x, w, b, kw = _arrays(0, seed=4)
    xt = np.ascontiguousarray(x.transpose(0, 1, 3, 2)).transpose(0, 1, 3, 2)
    ours = [rg.tensor(a, requires_grad=True) for a in (xt, w, b)]
    theirs = [torch.tensor(a, requires_grad=True) for a in (x, w, b)]
    (F.conv2d(*ours, **kw) * 2.0).sum().backward()
    (TF.conv2d(*theirs, **kw) * 2.0).sum().backward()
    for a, t in zip(ours, theirs):
        np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-10)


def test_twice_backward_with_retain_graph_accumulates():
    x, w, b, kw = _arrays(1, seed=5)
    ours = [rg.tensor(a, requires_grad=True) for a in (x, w, b)]
    theirs = [torch.tensor(a, requires_grad=True) for a in (x, w, b)]
    y, ty = F.conv2d(*ours, **kw), TF.conv2d(*theirs, **kw)
    g = np.random.default_rng(6).standard_normal(y.shape)
    for _ in range(2):
        y.backward(rg.tensor(g), retain_graph=True)
        ty.backward(torch.tensor(g), retain_graph=True)
    for a, t in zip(ours, theirs):
        np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("case", [1, 2, 5])
def test_second_derivatives_match_torch(case):
    x, w, b, kw = _arrays(case, seed=7)
    f, tf = _FNS[x.ndim - 2]
    ours = [rg.tensor(a, requires_grad=True) for a in (x, w, b)]
    theirs = [torch.tensor(a, requires_grad=True) for a in (x, w, b)]
    out, ref = f(*ours, **kw), tf(*theirs, **kw)
    v = np.random.default_rng(8).standard_normal(out.shape)
    gs = rg.autograd.grad((out * out).sum() * 0.5 + (out * rg.tensor(v)).sum(), ours,
                          create_graph=True)
    tgs = torch.autograd.grad((ref * ref).sum() * 0.5 + (ref * torch.tensor(v)).sum(), theirs,
                              create_graph=True)
    for g, tg in zip(gs, tgs):
        np.testing.assert_allclose(g.detach().numpy(), tg.detach().numpy(), rtol=1e-10,
                                   atol=1e-10)
    u = [np.random.default_rng(9 + i).standard_normal(g.shape) for i, g in enumerate(gs)]
    hs = rg.autograd.grad(sum((g * rg.tensor(a)).sum() for g, a in zip(gs, u)), ours)
    ths = torch.autograd.grad(sum((g * torch.tensor(a)).sum() for g, a in zip(tgs, u)), theirs)
    for h, th in zip(hs, ths):
        np.testing.assert_allclose(h.numpy(), th.numpy(), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("case", [1, 2, 5])
def test_forward_mode_and_vmap_match_torch(case):
    x, w, b, kw = _arrays(case, seed=10)
    f, tf = _FNS[x.ndim - 2]
    r = np.random.default_rng(11)
    tx, tw, tb = r.standard_normal(x.shape), r.standard_normal(w.shape), \
        r.standard_normal(b.shape)
    _, t = rg.func.jvp(lambda *a: f(*a, **kw), tuple(rg.tensor(a) for a in (x, w, b)),
                       tuple(rg.tensor(a) for a in (tx, tw, tb)))
    _, tref = torch.func.jvp(lambda *a: tf(*a, **kw), tuple(torch.tensor(a) for a in (x, w, b)),
                             tuple(torch.tensor(a) for a in (tx, tw, tb)))
    np.testing.assert_allclose(t.numpy(), tref.numpy(), rtol=1e-10, atol=1e-10)
    xb, wb = r.standard_normal((3,) + x.shape), r.standard_normal((3,) + w.shape)
    bb = r.standard_normal((3,) + b.shape)
    got = rg.func.vmap(lambda a, c, d: f(a, c, d, **kw))(rg.tensor(xb), rg.tensor(wb),
                                                         rg.tensor(bb))
    want = torch.func.vmap(lambda a, c, d: tf(a, c, d, **kw))(
        torch.tensor(xb), torch.tensor(wb), torch.tensor(bb))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-10, atol=1e-10)


def test_grad_under_jit_matches_torch():
    x, w, b, kw = _arrays(1, seed=12)

    def loss(a, c, d):
        return (F.conv2d(a, c, d, **kw) ** 2).sum()

    step = rg.jit(rg.func.grad(loss, argnums=(0, 1, 2)))
    theirs = [torch.tensor(a, requires_grad=True) for a in (x, w, b)]
    (TF.conv2d(*theirs, **kw) ** 2).sum().backward()
    for _ in range(2):  # traced, then replayed
        gs = step(*(rg.tensor(a) for a in (x, w, b)))
        for g, t in zip(gs, theirs):
            np.testing.assert_allclose(g.numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("case", [0, 5])
def test_batch_split_over_threads_matches_one_thread(case, monkeypatch):
    monkeypatch.setattr(threads, "_MIN_WORK", 1)  # small inputs: split them anyway
    pieces = []
    run = threads.run
    monkeypatch.setattr(threads, "run", lambda fn, p: pieces.append(len(p)) or run(fn, p))
    x, w, b, kw = _arrays(case, seed=13)
    f, _ = _FNS[x.ndim - 2]
    saved = threads.num_threads()
    results = []
    try:
        for k in (1, 2):
            threads.set_num_threads(k)
            ts = [rg.tensor(a.astype(np.float32), requires_grad=True) for a in (x, w, b)]
            y = f(*ts, **kw)
            (y * y).sum().backward()
            results.append([y.numpy()] + [t.grad.numpy() for t in ts])
    finally:
        threads.set_num_threads(saved)
    assert pieces.count(2) >= 2  # the forward and the backward ran in two pieces
    for one, two in zip(*results):
        np.testing.assert_array_equal(one, two)


def test_other_dtypes_keep_the_generic_path(monkeypatch):
    calls = []
    for op in (ops.conv, ops.conv_bias):
        for name in ("forward", "saving"):
            fn = getattr(op, name)
            monkeypatch.setattr(op, name, lambda *a, _f=fn, **k: calls.append(1) or _f(*a, **k))
    x, w, b, kw = _arrays(0, seed=14)
    y = F.conv2d(rg.tensor(x.astype(np.float16)), rg.tensor(w.astype(np.float16)), **kw)
    ref = TF.conv2d(torch.tensor(x), torch.tensor(w), **kw).numpy()
    assert y.dtype == np.float16
    np.testing.assert_allclose(y.numpy().astype(np.float64), ref, rtol=2e-2, atol=5e-2)
    assert not calls
