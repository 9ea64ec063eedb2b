# ruff: noqa: B023  (the lambdas are called at once, inside the loop)
"""Losses, normalisation functions, norms and misc functional ops against PyTorch:
values, dtypes, gradients (float64), errors; creation functions and bitcasts."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import retrograd as rg
import retrograd.nn.functional as F

RNG = np.random.default_rng(0)


def _pair(fn_rg, fn_t, *arrays, grad=True, atol=1e-10, diff=None):
    """Run both on the same float64 arrays; compare outputs and gradients (of the inputs
    numbered in `diff`, default all floating ones) of a random weighted sum of the output."""
    wants = [grad and a.dtype.kind == "f" and (diff is None or i in diff)
             for i, a in enumerate(arrays)]
    xs = [rg.tensor(a, requires_grad=r) for a, r in zip(arrays, wants)]
    ts = [torch.tensor(a, requires_grad=r) for a, r in zip(arrays, wants)]
    out, ref = fn_rg(*xs), fn_t(*ts)
    assert out.shape == tuple(ref.shape)
    assert str(out.dtype) == str(ref.dtype).replace("torch.", "")
    np.testing.assert_allclose(out.numpy(), ref.detach().numpy(), rtol=1e-9, atol=atol)
    if grad and ref.requires_grad:
        w = RNG.standard_normal(ref.shape)
        (out * rg.tensor(w)).sum().backward()
        (ref * torch.tensor(w)).sum().backward()
        for x, t in zip(xs, ts):
            if t.requires_grad:
                np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-8,
                                           atol=atol)


def _probs(*shape):
    return RNG.uniform(0.05, 0.95, shape)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_pointwise_losses_match_torch(reduction):
    x, y = RNG.standard_normal((4, 5)), RNG.standard_normal((4, 5))
    _pair(lambda a, b: F.l1_loss(a, b, reduction=reduction),
          lambda a, b: TF.l1_loss(a, b, reduction=reduction), x, y)
    for beta in (1.0, 0.5, 0.0):
        _pair(lambda a, b: F.smooth_l1_loss(a, b, reduction=reduction, beta=beta),
              lambda a, b: TF.smooth_l1_loss(a, b, reduction=reduction, beta=beta), x, y)
    for delta in (1.0, 0.3):
        _pair(lambda a, b: F.huber_loss(a, b, reduction=reduction, delta=delta),
              lambda a, b: TF.huber_loss(a, b, reduction=reduction, delta=delta), x, y)
    p, t, w = _probs(4, 5), _probs(4, 5), RNG.uniform(0.5, 2, (5,))
    _pair(lambda a, b: F.binary_cross_entropy(a, b, reduction=reduction),
          lambda a, b: TF.binary_cross_entropy(a, b, reduction=reduction), p, t)
    _pair(lambda a, b, c: F.binary_cross_entropy(a, b, c, reduction=reduction),
          lambda a, b, c: TF.binary_cross_entropy(a, b, c, reduction=reduction), p, t, w,
          diff=(0, 1))


def test_binary_cross_entropy_clamps_log_at_0_and_1():
    p = np.array([0.0, 1.0, 0.3, 1e-50])
    t = np.array([1.0, 0.0, 0.5, 1.0])
    out = F.binary_cross_entropy(rg.tensor(p), rg.tensor(t), reduction="none")
    ref = TF.binary_cross_entropy(torch.tensor(p), torch.tensor(t), reduction="none")
    np.testing.assert_allclose(out.numpy(), ref.numpy())
    x = rg.tensor(p, requires_grad=True)
    F.binary_cross_entropy(x, rg.tensor(t)).backward()
    assert np.isfinite(x.grad.numpy()).all()
    with pytest.raises(ValueError, match="between 0 and 1"):
        F.binary_cross_entropy(rg.tensor([1.5]), rg.tensor([1.0]))
    with pytest.raises(ValueError, match=r"target of shape \(3,\).*input \(3, 1\)"):
        F.binary_cross_entropy(rg.tensor(_probs(3, 1)), rg.tensor(_probs(3)))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none", "batchmean"])
@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div_matches_torch(reduction, log_target):
    x = np.log(_probs(3, 4))
    t = _probs(3, 4)
    t[0, 1] = 0.0  # 0 log 0 = 0
    if log_target:
        t = np.log(_probs(3, 4))
    _pair(lambda a, b: F.kl_div(a, b, reduction=reduction, log_target=log_target),
          lambda a, b: TF.kl_div(a, b, reduction=reduction, log_target=log_target), x, t)
    with pytest.raises(ValueError, match="reduction"):
        F.kl_div(rg.tensor(x), rg.tensor(t), reduction="avg")


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_ranking_and_embedding_losses_match_torch(reduction):
    a, b = RNG.standard_normal((6, 4)), RNG.standard_normal((6, 4))
    y = np.array([1.0, -1.0, 1.0, -1.0, -1.0, 1.0])
    for margin in (0.0, 0.3):
        _pair(lambda p, q, t: F.cosine_embedding_loss(p, q, t, margin, reduction=reduction),
              lambda p, q, t: TF.cosine_embedding_loss(p, q, t, margin, reduction=reduction),
              a, b, y, diff=(0, 1))
        _pair(lambda p, q, t: F.margin_ranking_loss(p, q, t, margin, reduction=reduction),
              lambda p, q, t: TF.margin_ranking_loss(p, q, t, margin, reduction=reduction),
              a[:, 0], b[:, 0], y, diff=(0, 1))
    with pytest.raises(ValueError, match=r"target must have shape \(6,\)"):
        F.cosine_embedding_loss(rg.tensor(a), rg.tensor(b), rg.tensor(y[:3]))


@pytest.mark.parametrize("shape,normalized", [((3, 5), (5,)), ((2, 3, 4), (3, 4)),
                                               ((2, 3, 4), (4,))])
def test_layer_norm_and_rms_norm_match_torch(shape, normalized):
    x = RNG.standard_normal(shape) * 3 + 1
    w, b = RNG.standard_normal(normalized), RNG.standard_normal(normalized)
    _pair(lambda a, c, d: F.layer_norm(a, normalized, c, d),
          lambda a, c, d: TF.layer_norm(a, normalized, c, d), x, w, b)
    _pair(lambda a: F.layer_norm(a, normalized, eps=0.1),
          lambda a: TF.layer_norm(a, normalized, eps=0.1), x)
    _pair(lambda a, c: F.rms_norm(a, normalized, c), lambda a, c: TF.rms_norm(a, normalized, c),
          x, w)
    _pair(lambda a: F.rms_norm(a, normalized, eps=0.01),
          lambda a: TF.rms_norm(a, normalized, eps=0.01), x)


def test_layer_norm_second_order_and_float32():
    x = rg.tensor(RNG.standard_normal((3, 4)), requires_grad=True)
    w = rg.tensor(RNG.standard_normal(4), requires_grad=True)
    assert rg.gradgradcheck(lambda a, c: F.layer_norm(a, (4,), c), (x, w))
    x32 = RNG.standard_normal((8, 16)).astype(np.float32)
    out = F.layer_norm(rg.tensor(x32), (16,))
    assert out.dtype == np.float32
    np.testing.assert_allclose(out.numpy(), TF.layer_norm(torch.tensor(x32), (16,)).numpy(),
                               atol=1e-5)


def test_layer_norm_errors_name_the_shapes():
    x = rg.randn(2, 3, 4)
    with pytest.raises(ValueError, match=r"normalized_shape=\[3\].*\[\*, 3\].*\[2, 3, 4\]"):
        F.layer_norm(x, (3,))
    with pytest.raises(ValueError, match=r"weight must have shape \(4,\), got \(3,\)"):
        F.layer_norm(x, 4, rg.ones(3))
    with pytest.raises(TypeError, match="floating"):
        F.layer_norm(rg.tensor([[1, 2]]), 2)


@pytest.mark.parametrize("shape,groups", [((2, 6, 5), 3), ((2, 4, 3, 3), 2), ((3, 4), 4)])
def test_group_norm_matches_torch(shape, groups):
    x = RNG.standard_normal(shape)
    c = shape[1]
    w, b = RNG.standard_normal(c), RNG.standard_normal(c)
    _pair(lambda a, p, q: F.group_norm(a, groups, p, q),
          lambda a, p, q: TF.group_norm(a, groups, p, q), x, w, b)
    with pytest.raises(ValueError, match=r"divisible by num_groups.*num_groups=5"):
        F.group_norm(rg.tensor(x), 5)


@pytest.mark.parametrize("shape", [(5, 3), (4, 3, 6), (2, 3, 4, 5)])
def test_batch_norm_training_and_eval_match_torch(shape):
    x = RNG.standard_normal(shape) * 2 + 0.5
    c = shape[1]
    w, b = RNG.standard_normal(c), RNG.standard_normal(c)
    rm, rv = RNG.standard_normal(c), RNG.uniform(0.5, 2, c)
    for training in (True, False):
        rm_r, rv_r = rg.tensor(rm.copy()), rg.tensor(rv.copy())
        rm_t, rv_t = torch.tensor(rm.copy()), torch.tensor(rv.copy())
        _pair(lambda a, p, q: F.batch_norm(a, rm_r, rv_r, p, q, training, 0.2),
              lambda a, p, q: TF.batch_norm(a, rm_t, rv_t, p, q, training, 0.2), x, w, b)
        np.testing.assert_allclose(rm_r.numpy(), rm_t.numpy(), rtol=1e-12)
        np.testing.assert_allclose(rv_r.numpy(), rv_t.numpy(), rtol=1e-12)
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        F.batch_norm(rg.randn(1, 3), None, None, training=True)
    with pytest.raises(ValueError, match=r"running_mean must have shape \(3,\)"):
        F.batch_norm(rg.randn(4, 3), rg.zeros(2), rg.ones(3))


@pytest.mark.parametrize("p", [2, 1, 3.5, float("inf"), 0, "fro"])
def test_norm_matches_torch(p):
    x = RNG.standard_normal((3, 4))
    for dim, keepdim in ((None, False), (1, False), (0, True), ((0, 1), False)):
        _pair(lambda a: a.norm(p, dim, keepdim), lambda a: a.norm(p, dim, keepdim), x,
              grad=p != 0)


def test_norm_gradient_at_zero_is_zero_like_torch():
    x = rg.zeros(3, 4, dtype=rg.float64, requires_grad=True)
    F.normalize(x, dim=1).sum().backward()
    t = torch.zeros(3, 4, dtype=torch.float64, requires_grad=True)
    TF.normalize(t, dim=1).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), t.grad.numpy())
    y = rg.zeros(4, dtype=rg.float64, requires_grad=True)
    rg.norm(y).backward()
    np.testing.assert_array_equal(y.grad.numpy(), np.zeros(4))


def test_normalize_cosine_similarity_cdist_match_torch():
    x, y = RNG.standard_normal((4, 5)), RNG.standard_normal((4, 5))
    for p, dim in ((2.0, 1), (1.0, 0), (3.0, -1)):
        _pair(lambda a: F.normalize(a, p, dim), lambda a: TF.normalize(a, p, dim), x)
    _pair(lambda a, b: F.cosine_similarity(a, b), lambda a, b: TF.cosine_similarity(a, b), x, y)
    _pair(lambda a, b: F.cosine_similarity(a, b, dim=0),
          lambda a, b: TF.cosine_similarity(a, b, dim=0), x, y[:1])
    a, b = RNG.standard_normal((2, 4, 3)), RNG.standard_normal((2, 5, 3))
    for p in (2.0, 1.0, 3.0):
        _pair(lambda u, v: rg.cdist(u, v, p), lambda u, v: torch.cdist(u, v, p), a, b,
              atol=1e-9)
    with pytest.raises(ValueError, match=r"same M.*\(2, 4, 3\) and \(2, 5, 2\)"):
        rg.cdist(rg.tensor(a), rg.tensor(b[..., :2]))


def test_std_mean_var_mean_match_torch():
    x = RNG.standard_normal((3, 4))
    for dim, corr in ((None, 1), (1, 0), ((0, 1), 1)):
        for rgf, tf in ((rg.std_mean, torch.std_mean), (rg.var_mean, torch.var_mean)):
            out = rgf(rg.tensor(x), dim, correction=corr)
            ref = tf(torch.tensor(x), dim, correction=corr)
            for o, r in zip(out, ref):
                np.testing.assert_allclose(o.numpy(), r.numpy(), rtol=1e-12)


def test_one_hot_and_embedding_match_torch():
    y = np.array([[0, 3], [2, 2]])
    out = F.one_hot(rg.tensor(y))
    ref = TF.one_hot(torch.tensor(y))
    assert out.dtype == np.int64 and out.shape == tuple(ref.shape)
    np.testing.assert_array_equal(out.numpy(), ref.numpy())
    np.testing.assert_array_equal(F.one_hot(rg.tensor(y), 6).numpy(),
                                  TF.one_hot(torch.tensor(y), 6).numpy())
    with pytest.raises(ValueError, match="num_classes=3"):
        F.one_hot(rg.tensor(y), 3)
    with pytest.raises(ValueError, match="non-negative"):
        F.one_hot(rg.tensor([-1, 0]))
    w = RNG.standard_normal((5, 3))
    idx = np.array([[0, 2, 2], [4, 1, 2]])
    for pad in (None, 2):
        _pair(lambda a: F.embedding(rg.tensor(idx), a, padding_idx=pad),
              lambda a: TF.embedding(torch.tensor(idx), a, padding_idx=pad), w)
    wr, wt = rg.tensor(w * 3), torch.tensor(w * 3)
    F.embedding(rg.tensor(idx), wr, max_norm=1.0)
    TF.embedding(torch.tensor(idx), wt, max_norm=1.0)
    np.testing.assert_allclose(wr.numpy(), wt.numpy(), rtol=1e-12)
    with pytest.raises(IndexError, match="index 5 is out of range for 5"):
        F.embedding(rg.tensor([5]), rg.tensor(w))


def test_channel_dropout_zeroes_whole_channels_and_scales():
    rg.manual_seed(0)
    x = rg.ones(8, 16, 3, 3)
    y = F.dropout2d(x, 0.5).numpy()
    per_channel = y.reshape(8, 16, -1)
    assert ((per_channel == 0).all(-1) | (per_channel == 2.0).all(-1)).all()
    assert 0 < (per_channel == 0).all(-1).sum() < 128
    assert F.dropout2d(x, 0.5, training=False) is x
    y1 = F.dropout1d(rg.ones(4, 6, 5), 0.3).numpy()
    assert ((y1 == 0).all(-1) | np.isclose(y1, 1 / 0.7).all(-1)).all()
    with pytest.warns(UserWarning, match="deprecated"):  # as torch: warns, drops elements
        F.dropout2d(rg.ones(2, 3), 0.5)
    rg.manual_seed(1)
    a = F.alpha_dropout(rg.randn(200000, dtype=rg.float64), 0.3, training=True).numpy()
    assert abs(a.mean()) < 0.02 and abs(a.std() - 1) < 0.02  # SELU's fixed point kept


def test_creation_functions_follow_torch_signatures_and_seed():
    x = rg.zeros(2, 3, dtype=rg.float64)
    assert rg.full_like(x, 7).dtype == np.float64 and (rg.full_like(x, 7).numpy() == 7).all()
    assert rg.empty(2, 3).shape == (2, 3) and rg.empty_like(x).dtype == np.float64
    assert rg.rand_like(x).dtype == np.float64 and rg.randn_like(x).shape == (2, 3)
    assert rg.randint(10, (3,)).dtype == np.int64
    r = rg.randint(3, 5, (100,)).numpy()
    assert r.min() >= 3 and r.max() <= 4
    rg.manual_seed(3)
    a = rg.randperm(10).numpy()
    rg.manual_seed(3)
    assert (rg.randperm(10).numpy() == a).all() and sorted(a) == list(range(10))
    probs = rg.tensor([[0.0, 1.0, 0.0], [0.5, 0.0, 0.5]])
    s = rg.multinomial(probs, 2, replacement=True).numpy()
    assert s.shape == (2, 2) and (s[0] == 1).all() and set(s[1]) <= {0, 2}
    s = rg.tensor([0.2, 0.0, 0.8]).multinomial(2).numpy()
    assert sorted(s) == [0, 2]
    with pytest.raises(ValueError, match="without replacement"):  # more than the categories
        rg.multinomial(probs, 4)
    with pytest.raises(TypeError, match="floating"):
        rg.rand_like(rg.tensor([1, 2]))


def test_dtype_conversions_and_view_dtype_bitcast_like_torch():
    a = RNG.standard_normal((2, 4)).astype(np.float32)
    t, x = torch.tensor(a), rg.tensor(a)
    for name in ("int", "long", "float", "double", "half", "bool", "short"):
        o, r = getattr(x, name)(), getattr(t, name)()
        assert str(o.dtype) == str(r.dtype).replace("torch.", "")
        np.testing.assert_array_equal(o.numpy(), r.numpy())
    for rd, td in ((rg.int32, torch.int32), (rg.float16, torch.float16), (rg.uint8, torch.uint8),
                   (rg.float64, torch.float64)):
        o, r = x.view(rd), t.view(td)
        assert o.shape == tuple(r.shape)
        np.testing.assert_array_equal(o.numpy(), r.numpy())
    v = x.view(rg.int32)
    v[0, 0] = 0  # shares memory, as a view
    assert x.numpy()[0, 0] == 0.0
    assert x.view(2, 4).shape == (2, 4) and x.view(-1).shape == (8,)
    with pytest.raises(RuntimeError, match="whole number"):
        rg.tensor(np.zeros((2, 3), np.float32)).view(rg.float64)


def test_prod_and_sum_take_dtype():
    x = rg.tensor([[1, 2], [3, 4]])
    assert x.prod().dtype == np.int64 and x.prod().item() == 24
    assert x.prod(1, dtype=rg.float64).dtype == np.float64
    assert x.sum(dtype=rg.float32).dtype == np.float32
    np.testing.assert_array_equal(x.prod(0).numpy(), torch.tensor([[1, 2], [3, 4]]).prod(0))
