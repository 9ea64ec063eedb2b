"""The NumPy fast paths the names transformer runs on, against PyTorch: index_add's sorted
sums (an embedding's backward), cross_entropy's rows dropped by ignore_index inside the
fused op, and scaled_dot_product_attention as one node."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import retrograd as rg
from retrograd.nn import functional as F

TF = torch.nn.functional
TOL = {np.float32: dict(rtol=2e-5, atol=2e-6), np.float64: dict(rtol=1e-12, atol=1e-13)}


# ---------------------------------------------------------------- index_add / embedding

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_embedding_backward_sums_repeated_rows_like_torch(dtype):
    rng = np.random.default_rng(0)
    w = rng.standard_normal((27, 16)).astype(dtype)
    idx = rng.integers(0, 27, (64, 16))
    idx[0, :5] = 3  # a run of one row, and rows never looked up
    idx[idx == 7] = 8
    g = rng.standard_normal((64, 16, 16)).astype(dtype)
    rw = rg.tensor(w, requires_grad=True)
    F.embedding(rg.tensor(idx), rw).backward(rg.tensor(g))
    tw = torch.tensor(w, requires_grad=True)
    TF.embedding(torch.tensor(idx), tw).backward(torch.tensor(g))
    np.testing.assert_allclose(rw.grad.data, tw.grad.numpy(), **TOL[dtype])
    assert rw.grad.dtype == w.dtype and not rw.grad.data[7].any()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape,dim,n", [((5, 7), 1, 40), ((3, 5, 4), 1, 33), ((6,), 0, 50),
                                         ((4, 3, 2), 0, 2), ((4, 3), 0, 1)])
def test_index_add_with_repeats_matches_torch(dtype, shape, dim, n):
    rng = np.random.default_rng(1)
    x = rng.standard_normal(shape).astype(dtype)
    idx = rng.integers(0, shape[dim], n)
    src_shape = list(shape)
    src_shape[dim] = n
    src = rng.standard_normal(src_shape).astype(dtype)
    rx, rs = rg.tensor(x, requires_grad=True), rg.tensor(src, requires_grad=True)
    tx, ts = torch.tensor(x, requires_grad=True), torch.tensor(src, requires_grad=True)
    out = rg.index_add(rx, dim, rg.tensor(idx), rs)
    tout = torch.index_add(tx, dim, torch.tensor(idx), ts)
    np.testing.assert_allclose(out.data, tout.detach().numpy(), **TOL[dtype])
    g = rng.standard_normal(shape).astype(dtype)
    out.backward(rg.tensor(g))
    tout.backward(torch.tensor(g))
    np.testing.assert_allclose(rx.grad.data, tx.grad.numpy(), **TOL[dtype])
    np.testing.assert_allclose(rs.grad.data, ts.grad.numpy(), **TOL[dtype])


# ---------------------------------------------------------------- cross_entropy, ignore_index

def _xent_pair(z, y, dtype, create_graph=False, **kw):
    rz = rg.tensor(z.astype(dtype), requires_grad=True)
    tz = torch.tensor(z.astype(dtype), requires_grad=True)
    loss = F.cross_entropy(rz, rg.tensor(y), **kw)
    tloss = TF.cross_entropy(tz, torch.tensor(y), **kw)
    return rz, tz, loss, tloss


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("smoothing", [0.0, 0.3])
@pytest.mark.parametrize("labels,ignore", [([1, -1, 2, 0, -1, -1], -1),
                                            ([2, 0, 2, 1, 3, 2], 2),
                                            ([-1] * 6, -1),
                                            ([0, 1, 2, 3, 0, 1], -1),
                                            ([0, -100, 1, 3, -100, 2], -100)])
def test_cross_entropy_drops_ignored_rows_in_one_node_like_torch(dtype, reduction, smoothing,
                                                                 labels, ignore):
    rng = np.random.default_rng(2)
    z = rng.standard_normal((6, 4)) * 3
    y = np.array(labels)
    rz, tz, loss, tloss = _xent_pair(z, y, dtype, ignore_index=ignore, reduction=reduction,
                                     label_smoothing=smoothing)
    assert loss.grad_fn.op.name == "cross_entropy"  # the fused op, not the composed path
    assert loss.dtype == rz.dtype and loss.shape == tuple(tloss.shape)
    np.testing.assert_allclose(loss.data, tloss.detach().numpy(), **TOL[dtype])
    g = rng.standard_normal(loss.shape).astype(dtype)
    loss.backward(rg.tensor(g))
    tloss.backward(torch.tensor(g))
    np.testing.assert_allclose(rz.grad.data, tz.grad.numpy(), **TOL[dtype])
    if reduction == "mean" and (y == ignore).all():
        assert np.isnan(loss.data) and not rz.grad.data.any()  # nan, and a zero gradient


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_cross_entropy_ignore_index_second_derivatives_match_torch(reduction):
    rng = np.random.default_rng(3)
    z = rng.standard_normal((5, 3))
    y = np.array([0, -1, 2, -1, 1])
    rz, tz, loss, tloss = _xent_pair(z, y, np.float64, ignore_index=-1, reduction=reduction,
                                     label_smoothing=0.1)
    v = rng.standard_normal((5, 3))
    (gz,) = rg.autograd.grad(loss, rz, create_graph=True)
    (rg.sum(gz * rg.tensor(v))).backward()
    (tgz,) = torch.autograd.grad(tloss, tz, create_graph=True)
    (tgz * torch.tensor(v)).sum().backward()
    np.testing.assert_allclose(gz.data, tgz.detach().numpy(), rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(rz.grad.data, tz.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_cross_entropy_forward_mode_with_ignored_rows_matches_torch():
    rng = np.random.default_rng(4)
    z, t = rng.standard_normal((5, 3)), rng.standard_normal((5, 3))
    for labels in ([0, -1, 2, -1, 1], [-1] * 5):
        y = np.array(labels)
        for reduction in ("mean", "sum", "none"):
            def f(z, reduction=reduction, y=y):
                return F.cross_entropy(z, rg.tensor(y), ignore_index=-1, reduction=reduction)
            _, tangent = rg.func.jvp(f, (rg.tensor(z),), (rg.tensor(t),))
            _, ttangent = torch.func.jvp(
                lambda z, reduction=reduction, y=y: TF.cross_entropy(
                    z, torch.tensor(y), ignore_index=-1, reduction=reduction),
                (torch.tensor(z),), (torch.tensor(t),))
            np.testing.assert_allclose(tangent.data, ttangent.numpy(), rtol=1e-12, atol=1e-13)


def test_cross_entropy_with_padding_replays_under_jit_with_each_calls_labels():
    rng = np.random.default_rng(5)
    w = rg.tensor(rng.standard_normal((4, 3)), requires_grad=True)
    x = rg.tensor(rng.standard_normal((6, 3)))

    def step(x, y):
        loss = F.cross_entropy(F.linear(x, w), y, ignore_index=-1)
        (g,) = rg.autograd.grad(loss, w)
        return loss, g

    fast = rg.jit(step)
    for labels in ([1, 2, -1, 0, -1, 3], [3, -1, -1, -1, 2, 2], [0, 1, 2, 3, 0, 1],
                   [-1] * 6):
        y = rg.tensor(np.array(labels))
        (v, g), (rv, rg_) = fast(x, y), step(x, y)
        np.testing.assert_allclose(v.data, rv.data, rtol=1e-12)
        np.testing.assert_allclose(g.data, rg_.data, rtol=1e-12)
    assert fast.trace_count == 1
    with pytest.raises(IndexError, match="target 4 is out of bounds"):
        fast(x, rg.tensor(np.array([0, 1, 4, -1, 0, 1])))


# ---------------------------------------------------------------- attention as one node

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("shapes", [((3, 4, 16, 8), (3, 4, 16, 8), (3, 4, 16, 8)),
                                    ((2, 5, 3), (2, 7, 3), (2, 7, 6)),
                                    ((6, 4), (3, 4), (3, 2))])
def test_attention_is_one_node_and_matches_torch(dtype, causal, shapes):
    rng = np.random.default_rng(6)
    arrays = [rng.standard_normal(s).astype(dtype) for s in shapes]
    rq, rk, rv = (rg.tensor(a, requires_grad=True) for a in arrays)
    tq, tk, tv = (torch.tensor(a, requires_grad=True) for a in arrays)
    out = F.scaled_dot_product_attention(rq, rk, rv, is_causal=causal)
    tout = TF.scaled_dot_product_attention(tq, tk, tv, is_causal=causal)
    assert out.grad_fn.op.name == "attention" and out.dtype == rq.dtype
    tol = dict(rtol=1e-4, atol=1e-5) if dtype == np.float32 else TOL[dtype]
    np.testing.assert_allclose(out.data, tout.detach().numpy(), **tol)
    g = rng.standard_normal(out.shape).astype(dtype)
    out.backward(rg.tensor(g))
    tout.backward(torch.tensor(g))
    for r, t in ((rq, tq), (rk, tk), (rv, tv)):
        np.testing.assert_allclose(r.grad.data, t.grad.numpy(), **tol)


def test_attention_rows_with_scores_beyond_exps_range_stay_exact():
    """A row whose scores spread further than exp's range: shifted by its own diagonal
    score it would overflow, so the row's maximum takes over."""
    rng = np.random.default_rng(7)
    q = rng.standard_normal((2, 4, 3))
    q[0, 3] *= 400.0
    q[1, 2] *= 300.0
    k, v = rng.standard_normal((2, 4, 3)), rng.standard_normal((2, 4, 3))
    for causal in (True, False):
        rq, rk, rv = (rg.tensor(a, requires_grad=True) for a in (q, k, v))
        tq, tk, tv = (torch.tensor(a, requires_grad=True) for a in (q, k, v))
        out = F.scaled_dot_product_attention(rq, rk, rv, is_causal=causal, scale=2.0)
        tout = TF.scaled_dot_product_attention(tq, tk, tv, is_causal=causal, scale=2.0)
        np.testing.assert_allclose(out.data, tout.detach().numpy(), rtol=1e-12, atol=1e-13)
        out.sum().backward()
        tout.sum().backward()
        for r, t in ((rq, tq), (rk, tk), (rv, tv)):
            np.testing.assert_allclose(r.grad.data, t.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_attention_second_derivatives_match_torch_math_path():
    rng = np.random.default_rng(8)
    arrays = [rng.standard_normal((2, 5, 3)) for _ in range(3)]
    rq, rk, rv = (rg.tensor(a, requires_grad=True) for a in arrays)
    tq, tk, tv = (torch.tensor(a, requires_grad=True) for a in arrays)
    out = F.scaled_dot_product_attention(rq, rk, rv, is_causal=True)
    with torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.MATH):
        tout = TF.scaled_dot_product_attention(tq, tk, tv, is_causal=True)
    c = rng.standard_normal(out.shape)
    grads = rg.autograd.grad(rg.sum(out * rg.tensor(c)), [rq, rk, rv], create_graph=True)
    tgrads = torch.autograd.grad((tout * torch.tensor(c)).sum(), [tq, tk, tv],
                                 create_graph=True)
    rg.sum(sum(rg.sum(gr * gr) for gr in grads)).backward()
    sum((t * t).sum() for t in tgrads).backward()
    for r, t in ((rq, tq), (rk, tk), (rv, tv)):
        np.testing.assert_allclose(r.grad.data, t.grad.numpy(), rtol=1e-9, atol=1e-11)


def test_attention_block_trains_under_jit_like_eager():
    from retrograd.models.names import CausalSelfAttention

    rng = np.random.default_rng(9)
    rg.manual_seed(0)
    eager_attn = CausalSelfAttention(8, 2)
    rg.manual_seed(0)
    jit_attn = CausalSelfAttention(8, 2)

    def step(model, x):
        loss = rg.sum(model(x) ** 2)
        grads = rg.autograd.grad(loss, list(model.parameters()))
        return loss, grads

    fast = rg.jit(lambda x: step(jit_attn, x))
    for _ in range(3):
        x = rg.tensor(rng.standard_normal((3, 5, 8)).astype(np.float32))
        (lv, gs), (rlv, rgs) = fast(x), step(eager_attn, x)
        np.testing.assert_allclose(lv.data, rlv.data, rtol=1e-6)
        for a, b in zip(gs, rgs):
            assert a.dtype == b.dtype == np.float32
            np.testing.assert_allclose(a.data, b.data, rtol=1e-5, atol=1e-6)
    assert fast.trace_count == 1


# ---------------------------------------------------------------- tanh-GELU, tanh saved

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_tanh_gelu_saved_tanh_backward_matches_torch(dtype):
    rng = np.random.default_rng(10)
    x = np.concatenate([rng.standard_normal(500) * 3, [-30.0, -8.0, -1e-3, 0.0, 1e-3, 8.0, 30.0]])
    x = x.astype(dtype).reshape(-1, 3)
    rx, tx = rg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out = F.gelu(rx, approximate="tanh")
    tout = TF.gelu(tx, approximate="tanh")
    assert out.grad_fn.op.name == "gelu"
    np.testing.assert_allclose(out.data, tout.detach().numpy(), **TOL[dtype])
    with rg.no_grad():  # the unrecorded forward runs the same arithmetic
        np.testing.assert_array_equal(F.gelu(rg.tensor(x), approximate="tanh").data, out.data)
    g = rng.standard_normal(x.shape).astype(dtype)
    out.backward(rg.tensor(g))
    tout.backward(torch.tensor(g))
    np.testing.assert_allclose(rx.grad.data, tx.grad.numpy(), **TOL[dtype])
    fast = rg.jit(lambda a: rg.autograd.grad(rg.sum(F.gelu(a, approximate="tanh") * g), a)[0])
    for _ in range(2):
        got = fast(rg.tensor(x, requires_grad=True))
        np.testing.assert_allclose(got.data, tx.grad.numpy(), **TOL[dtype])
