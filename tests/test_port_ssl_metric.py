"""Ports of self-supervised, contrastive and metric-learning code (SimCLR, MoCo, SphereFace,
Barlow Twins, LARS, ...) run with torch and retrograd, compared value for value."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import retrograd as rg


def _np(t):
    return np.asarray(t.detach().numpy())


NAN_INF = [float("nan"), float("inf"), 1.0, -float("inf")]


@pytest.mark.parametrize("op", ["floor", "ceil", "round", "trunc", "sign", "angle"])
def test_piecewise_constant_grad_is_zero_under_nan_upstream(op):
    # SphereFace: k = floor(m * theta / pi) and (-1) ** k; the NaN of pow's log(-1) must not
    # leak through floor's zero derivative (torch: zeros_like(grad), not grad * 0)
    x = np.array([0.3, 1.7, -2.2, 4.0])
    res = []
    for lib in (torch, rg):
        k = lib.tensor(x, requires_grad=True)
        (getattr(lib, op)(k) * lib.tensor(NAN_INF)).sum().backward()
        res.append(_np(k.grad))
    np.testing.assert_array_equal(res[1], res[0])


def test_pow_zero_exponent_grad_is_zero_under_nan_upstream():
    res = []
    for lib in (torch, rg):
        k = lib.tensor([0.3, 1.7, -2.2, 0.0], requires_grad=True)
        (k ** 0 * lib.tensor(NAN_INF)).sum().backward()
        res.append(_np(k.grad))
    np.testing.assert_array_equal(res[1], res[0])


def _sphereface(lib, x, w, y, m=4):
    F = lib.nn.functional
    cos = (F.normalize(x, dim=1) @ F.normalize(w, dim=0)).clamp(-1 + 1e-7, 1 - 1e-7)
    th = lib.acos(cos)
    k = (m * th / math.pi).floor()
    phi = ((-1.0) ** k) * lib.cos(m * th) - 2 * k
    oh = F.one_hot(y, num_classes=w.shape[1]).to(cos.dtype)
    return F.cross_entropy(30 * (oh * phi + (1 - oh) * cos), y)


def test_sphereface_head_grads_match_torch():
    rs = np.random.RandomState(0)
    xn, wn, yn = rs.randn(8, 10), rs.randn(10, 3), rs.randint(0, 3, 8)
    res = []
    for lib in (torch, rg):
        x = lib.tensor(xn, requires_grad=True)
        w = lib.tensor(wn, requires_grad=True)
        loss = _sphereface(lib, x, w, lib.tensor(yn))
        loss.backward()
        res.append([_np(loss), _np(x.grad), _np(w.grad)])
    for a, b in zip(res[0], res[1]):
        np.testing.assert_allclose(b, a, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("call", [
    lambda lib, a, b, t: a.clone().add_(b, alpha=t),
    lambda lib, a, b, t: a.clone().sub_(b, alpha=t),
    lambda lib, a, b, t: a.add(b, alpha=t),
    lambda lib, a, b, t: lib.add(a, b, alpha=t),
    lambda lib, a, b, t: lib.sub(a, b, alpha=t),
])
def test_alpha_takes_a_zero_dim_tensor(call):
    # LAMB: p.add_(adam_step, alpha=-lr * trust_ratio) with trust_ratio a 0-d tensor
    res = []
    for lib in (torch, rg):
        a = lib.tensor([1.0, 2.0, 3.0])
        b = lib.tensor([0.5, -1.0, 2.0])
        res.append(_np(call(lib, a, b, lib.tensor(-0.25, dtype=lib.float64))))
    np.testing.assert_array_equal(res[1], res[0])
    assert res[1].dtype == res[0].dtype


@pytest.mark.parametrize("alpha", [np.array([2.0]), "grad", np.array(True)])
def test_alpha_tensor_refusals_match_torch(alpha):
    errs = []
    for lib in (torch, rg):
        t = (lib.tensor(2.0, requires_grad=True) if isinstance(alpha, str)
             else lib.tensor(alpha))
        with pytest.raises((TypeError, RuntimeError)) as info:
            lib.ones(3).add(lib.ones(3), alpha=t)
        errs.append(info.type)
    assert issubclass(errs[1], errs[0])


def _lamb(lib):
    class LAMB(lib.optim.Optimizer):
        def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-6, weight_decay=0.0):
            super().__init__(params, dict(lr=lr, betas=betas, eps=eps,
                                          weight_decay=weight_decay))

        @lib.no_grad()
        def step(self, closure=None):
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    grad, state = p.grad, self.state[p]
                    if len(state) == 0:
                        state["step"] = 0
                        state["exp_avg"] = lib.zeros_like(p)
                        state["exp_avg_sq"] = lib.zeros_like(p)
                    m, v = state["exp_avg"], state["exp_avg_sq"]
                    b1, b2 = group["betas"]
                    state["step"] += 1
                    m.mul_(b1).add_(grad, alpha=1 - b1)
                    v.mul_(b2).addcmul_(grad, grad, value=1 - b2)
                    weight_norm = p.pow(2).sum().sqrt().clamp(0, 10)
                    adam_step = m / v.sqrt().add(group["eps"])
                    if group["weight_decay"] != 0:
                        adam_step.add_(p, alpha=group["weight_decay"])
                    adam_norm = adam_step.pow(2).sum().sqrt()
                    trust = 1 if weight_norm == 0 or adam_norm == 0 else weight_norm / adam_norm
                    p.add_(adam_step, alpha=-group["lr"] * trust)
    return LAMB


def _lars(lib):
    class LARS(lib.optim.Optimizer):
        def __init__(self, params, lr, weight_decay=0.0, momentum=0.9, eta=0.001):
            super().__init__(params, dict(lr=lr, weight_decay=weight_decay, momentum=momentum,
                                          eta=eta, lars_exclude=False))

        @lib.no_grad()
        def step(self):
            for g in self.param_groups:
                for p in g["params"]:
                    dp = p.grad
                    if dp is None:
                        continue
                    if not g["lars_exclude"]:
                        dp = dp.add(p, alpha=g["weight_decay"])
                        pn, un = lib.norm(p), lib.norm(dp)
                        one = lib.ones_like(pn)
                        q = lib.where(pn > 0.0, lib.where(un > 0, g["eta"] * pn / un, one), one)
                        dp = dp.mul(q)
                    mu = self.state[p].setdefault("mu", lib.zeros_like(p))
                    mu.mul_(g["momentum"]).add_(dp)
                    p.add_(mu, alpha=-g["lr"])
    return LARS


@pytest.mark.parametrize("which", ["lars", "lamb"])
def test_lars_lamb_training_matches_torch(which):
    rs = np.random.RandomState(1)
    xn, yn = rs.randn(8, 10), rs.randint(0, 3, 8)
    init = [rs.randn(12, 10) * 0.5, rs.randn(12) * 0.5, rs.randn(12) * 0.5,
            rs.randn(12) * 0.5, rs.randn(3, 12) * 0.5, rs.randn(3) * 0.5]
    res = []
    for lib in (torch, rg):
        nn = lib.nn
        m = nn.Sequential(nn.Linear(10, 12), nn.BatchNorm1d(12), nn.ReLU(),
                          nn.Linear(12, 3)).double()
        with lib.no_grad():
            for p, w in zip(m.parameters(), init):
                p.copy_(lib.tensor(w))
        if which == "lars":
            opt = _lars(lib)([{"params": [p for p in m.parameters() if p.ndim > 1]},
                              {"params": [p for p in m.parameters() if p.ndim == 1],
                               "weight_decay": 0.0, "lars_exclude": True}],
                             lr=0.5, weight_decay=1e-4)
        else:
            opt = _lamb(lib)(m.parameters(), lr=0.01, weight_decay=0.01)
        out = []
        for _ in range(3):
            loss = nn.functional.cross_entropy(m(lib.tensor(xn)), lib.tensor(yn))
            opt.zero_grad()
            loss.backward()
            opt.step()
            out.append(_np(loss))
        res.append(out + [_np(p) for p in m.parameters()])
    for a, b in zip(res[0], res[1]):
        np.testing.assert_allclose(b, a, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("value", [np.float64(2.5), np.int32(3), np.complex128(1 + 2j), True])
def test_full_with_a_zero_dim_tensor_value_types_as_a_number(value):
    res = []
    for lib in (torch, rg):
        r = lib.full((2,), lib.tensor(np.array(value)))
        res.append(_np(r))
    assert res[1].dtype == res[0].dtype
    np.testing.assert_array_equal(res[1], res[0])


@pytest.mark.parametrize("bad", ["1d", "grad"])
def test_full_refuses_a_non_scalar_tensor_value(bad):
    for lib in (torch, rg):
        v = lib.tensor([2.5]) if bad == "1d" else lib.tensor(2.5, requires_grad=True)
        with pytest.raises(TypeError):
            lib.full((2,), v)


@pytest.mark.parametrize("call", [
    lambda lib, x, d: x.sum(d),
    lambda lib, x, d: x.mean(dim=d),
    lambda lib, x, d: x.softmax(d),
    lambda lib, x, d: lib.cat([x, x], d),
    lambda lib, x, d: x.argmax(d),
    lambda lib, x, d: x.sum((d, 0)),
])
def test_dim_takes_a_zero_dim_integer_tensor(call):
    res = []
    for lib in (torch, rg):
        x = lib.tensor(np.arange(6.0).reshape(2, 3))
        res.append(_np(call(lib, x, lib.tensor(1))))
    assert res[1].shape == res[0].shape
    np.testing.assert_allclose(res[1], res[0])


def test_dim_refuses_a_float_tensor():
    for lib in (torch, rg):
        with pytest.raises(TypeError):
            lib.ones(2, 3).sum(lib.tensor(1.0))


def test_soft_margin_loss_refuses_a_target_that_requires_grad():
    rs = np.random.RandomState(0)
    xn, tn = rs.randn(4, 3), np.sign(rs.randn(4, 3))
    for lib in (torch, rg):
        x, t = lib.tensor(xn, requires_grad=True), lib.tensor(tn, requires_grad=True)
        with pytest.raises(RuntimeError):
            lib.nn.functional.soft_margin_loss(x, t)
        with lib.no_grad():  # no graph: accepted, as torch
            lib.nn.SoftMarginLoss()(x, t)
    vals = [_np(lib.nn.functional.soft_margin_loss(lib.tensor(xn), lib.tensor(tn).detach()))
            for lib in (torch, rg)]
    np.testing.assert_allclose(vals[1], vals[0], rtol=1e-12)


def _simclr_moco(lib, w1, w2, xn, queue_init):
    nn, F = lib.nn, lib.nn.functional
    enc_q = nn.Sequential(nn.Linear(10, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 6))
    enc_q = enc_q.double()
    with lib.no_grad():
        enc_q[0].weight.copy_(lib.tensor(w1))
        enc_q[3].weight.copy_(lib.tensor(w2))
        enc_q[0].bias.zero_()
        enc_q[3].bias.fill_(0.1)
    enc_k = nn.Sequential(nn.Linear(10, 16), nn.BatchNorm1d(16), nn.ReLU(),
                          nn.Linear(16, 6)).double()
    enc_k.load_state_dict(enc_q.state_dict())
    for p in enc_k.parameters():
        p.requires_grad = False
    queue = F.normalize(lib.tensor(queue_init), dim=0)
    opt = lib.optim.SGD(enc_q.parameters(), lr=0.03, momentum=0.9, weight_decay=1e-4)
    x, out, ptr = lib.tensor(xn), [], 0
    for _ in range(3):
        # SimCLR NT-Xent on the two views
        z = F.normalize(enc_q(lib.cat([x + 0.1, x * 0.9], dim=0)), dim=1)
        n = z.shape[0] // 2
        sim = (z @ z.T / 0.5).masked_fill(lib.eye(2 * n, dtype=lib.bool), -float("inf"))
        labels = lib.cat([lib.arange(n, 2 * n), lib.arange(0, n)])
        nt_xent = nn.CrossEntropyLoss()(sim, labels)
        # MoCo v2: momentum update, einsum logits against the queue, enqueue
        q = F.normalize(enc_q(x[:4]), dim=1)
        with lib.no_grad():
            ks, qs = list(enc_k.parameters()), list(enc_q.parameters())
            lib._foreach_mul_(ks, 0.99)
            lib._foreach_add_(ks, qs, alpha=0.01)
            k = F.normalize(enc_k(x[4:]), dim=1)
        l_pos = lib.einsum("nc,nc->n", q, k).unsqueeze(-1)
        l_neg = lib.einsum("nc,ck->nk", q, queue.clone().detach())
        logits = lib.cat([l_pos, l_neg], dim=1) / 0.07
        moco = F.cross_entropy(logits, lib.zeros(logits.shape[0], dtype=lib.long))
        with lib.no_grad():
            queue[:, ptr:ptr + 4] = k.T
            ptr = (ptr + 4) % queue.shape[1]
        opt.zero_grad()
        (nt_xent + moco).backward()
        opt.step()
        out += [_np(nt_xent), _np(moco), _np(enc_q[0].weight.grad)]
    return out + [_np(queue)] + [_np(p) for p in enc_k.parameters()]


def test_simclr_moco_training_matches_torch():
    rs = np.random.RandomState(0)
    args = (rs.randn(16, 10) * 0.3, rs.randn(6, 16) * 0.3, rs.randn(8, 10), rs.randn(6, 8))
    for a, b in zip(_simclr_moco(torch, *args), _simclr_moco(rg, *args)):
        np.testing.assert_allclose(b, a, rtol=1e-9, atol=1e-12)


def _barlow_vicreg_dino(lib, w1, w2, xn):
    nn, F = lib.nn, lib.nn.functional

    def off_diagonal(x):
        n = x.shape[0]
        return x.flatten()[:-1].view(n - 1, n + 1)[:, 1:].flatten()

    proj = nn.Sequential(nn.Linear(10, 12, bias=False), nn.BatchNorm1d(12), nn.ReLU(True),
                         nn.Linear(12, 6, bias=False)).double()
    bn = nn.BatchNorm1d(6, affine=False).double()
    with lib.no_grad():
        proj[0].weight.copy_(lib.tensor(w1))
        proj[3].weight.copy_(lib.tensor(w2))
    center = lib.zeros(1, 6, dtype=lib.float64)
    opt = lib.optim.AdamW(proj.parameters(), lr=1e-2)
    x, out = lib.tensor(xn), []
    for _ in range(3):
        z1, z2 = proj(x), proj(x.flip(0) * 0.5 + x)
        c = bn(z1).T @ bn(z2)
        c.div_(8)
        barlow = lib.diagonal(c).add_(-1).pow_(2).sum() + 0.0051 * off_diagonal(c).pow_(2).sum()
        a = z1 - z1.mean(dim=0)
        std = lib.sqrt(a.var(dim=0) + 1e-4)
        cov = (a.T @ a) / 7
        vic = 25 * F.mse_loss(z1, z2) + lib.mean(F.relu(1 - std)) \
            + off_diagonal(cov).pow_(2).sum().div(6)
        t = F.softmax((z2.detach() - center) / 0.04, dim=-1)
        dino = lib.sum(-t * F.log_softmax(z1 / 0.1, dim=-1), dim=-1).mean()
        center = center * 0.9 + lib.sum(t, dim=0, keepdim=True) / len(t) * 0.1
        opt.zero_grad()
        (barlow + vic + dino).backward()
        lib.nn.utils.clip_grad_norm_(proj.parameters(), 3.0)
        opt.step()
        out += [_np(barlow), _np(vic), _np(dino), _np(center), _np(bn.running_var)]
    return out + [_np(p) for p in proj.parameters()]


def test_barlow_vicreg_dino_training_matches_torch():
    rs = np.random.RandomState(1)
    args = (rs.randn(12, 10) * 0.3, rs.randn(6, 12) * 0.3, rs.randn(8, 10))
    for a, b in zip(_barlow_vicreg_dino(torch, *args), _barlow_vicreg_dino(rg, *args)):
        np.testing.assert_allclose(b, a, rtol=1e-9, atol=1e-12)


@pytest.mark.filterwarnings("ignore:This overload")
@pytest.mark.parametrize("call", [
    lambda lib, x, a, b: x.addcmul_(0.25, a, b),
    lambda lib, x, a, b: x.addcdiv_(-0.5, a, b),
    lambda lib, x, a, b: x.addcmul_(lib.tensor(0.5, dtype=lib.float64), a, b),
    lambda lib, x, a, b: lib.addcmul(x, 0.5, a, b),
    lambda lib, x, a, b: x.addcdiv(2, a, b),
    lambda lib, x, a, b: x.add_(lib.tensor(-0.5), a),
    lambda lib, x, a, b: x.sub_(lib.tensor(-0.5), a),
    lambda lib, x, a, b: x.add(1e-2, a),
    lambda lib, x, a, b: lib.add(x, lib.tensor(3.0), a),
    lambda lib, x, a, b: x.sub(2, b),
])
def test_deprecated_value_first_overloads(call):
    # old LAMB/Adam code: v.mul_(b2).addcmul_(1 - b2, g, g); p.data.addcdiv_(-lr, m, denom);
    # p.data.add_(-lr * trust_ratio, step) with trust_ratio a 0-d tensor
    res = []
    for lib in (torch, rg):
        x = lib.tensor([1.0, 2.0, 3.0])
        a, b = lib.tensor([0.5, -1.0, 2.0]), lib.tensor([2.0, 4.0, -1.0])
        res.append(_np(call(lib, x, a, b)))
    np.testing.assert_allclose(res[1], res[0], rtol=1e-7)
    assert res[1].dtype == res[0].dtype


@pytest.mark.filterwarnings("ignore:This overload")
@pytest.mark.parametrize("call", [
    lambda lib, x, a: x.addcmul_(lib.tensor([0.5]), a, a),
    lambda lib, x, a: x.addcmul_(0.5, a, a, value=2),
    lambda lib, x, a: x.addcdiv(a, a, a),
    lambda lib, x, a: x.add(a, a),
    lambda lib, x, a: x.add(2.0, a, alpha=2),
])
def test_deprecated_value_first_overloads_refusals(call):
    for lib in (torch, rg):
        with pytest.raises(TypeError):
            call(lib, lib.ones(3), lib.ones(3))
