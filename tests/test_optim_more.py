"""RMSprop, Adagrad, Adamax and NAdam against PyTorch's (20 steps, float64, same weights and
batches), their state layout and resumption, rg.jit replays of a whole training step, and
gradient clipping (clip_grad_norm_ for each norm type, clip_grad_value_)."""

import copy

import numpy as np
import pytest
import torch

import retrograd as rg
import retrograd.nn as nn

RNG = np.random.default_rng(0)

CONFIGS = {
    "RMSprop": [{}, {"momentum": 0.9, "weight_decay": 0.1}, {"centered": True, "alpha": 0.9},
                {"centered": True, "momentum": 0.5, "maximize": True}],
    "Adagrad": [{}, {"lr_decay": 0.05, "weight_decay": 0.1},
                {"initial_accumulator_value": 0.5, "eps": 1e-6}],
    "Adamax": [{}, {"betas": (0.5, 0.9), "weight_decay": 0.1}, {"maximize": True}],
    "NAdam": [{}, {"weight_decay": 0.1}, {"weight_decay": 0.1, "decoupled_weight_decay": True,
                                          "momentum_decay": 0.01}],
}
CASES = [(name, kw) for name, kws in CONFIGS.items() for kw in kws]


def _models():
    ref = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
    ref = ref.double()
    mod = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2)).double()
    mod.load_state_dict({k: v.detach().numpy() for k, v in ref.state_dict().items()})
    return mod, ref


def _batches(n):
    return [(RNG.standard_normal((16, 4)), RNG.standard_normal((16, 2))) for _ in range(n)]


def _step(mod, opt, x, y):
    opt.zero_grad()
    loss = ((mod(rg.tensor(x)) - rg.tensor(y)) ** 2).mean()
    loss.backward()
    opt.step()
    return loss


def _step_t(ref, opt, x, y):
    opt.zero_grad()
    loss = ((ref(torch.tensor(x)) - torch.tensor(y)) ** 2).mean()
    loss.backward()
    opt.step()
    return loss


@pytest.mark.parametrize("name,kw", CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_optimizer_matches_torch_for_20_steps(name, kw):
    torch.manual_seed(0)
    mod, ref = _models()
    opt = getattr(rg.optim, name)(mod.parameters(), lr=0.05, **kw)
    opt_t = getattr(torch.optim, name)(ref.parameters(), lr=0.05, **kw)
    for x, y in _batches(20):
        loss = _step(mod, opt, x, y)
        loss_t = _step_t(ref, opt_t, x, y)
        assert loss.item() == pytest.approx(loss_t.item(), rel=1e-9, abs=1e-12)
        for p, q in zip(mod.parameters(), ref.parameters()):
            np.testing.assert_allclose(p.numpy(), q.detach().numpy(), rtol=1e-6, atol=1e-9)
    # the same state entries, shapes and step counts as PyTorch's
    sd, sd_t = opt.state_dict(), opt_t.state_dict()
    assert sorted(sd["state"]) == sorted(sd_t["state"])
    for i, st in sd["state"].items():
        assert sorted(st) == sorted(sd_t["state"][i]), (name, i)
        for k, v in st.items():
            ref_v = sd_t["state"][i][k]
            assert tuple(np.shape(v.numpy() if isinstance(v, rg.Tensor) else v)) == \
                tuple(ref_v.shape), (name, k)
            np.testing.assert_allclose(np.asarray(v.numpy() if isinstance(v, rg.Tensor) else v),
                                       ref_v.numpy(), rtol=1e-6, atol=1e-9, err_msg=k)
    assert set(sd["param_groups"][0]) <= set(sd_t["param_groups"][0])


# NAdam is left out: on loading, PyTorch converts its float32 mu_product to the parameters'
# float64, so torch's own resumed run differs from the uninterrupted one (by about 1e-11);
# tests/test_optim_state_live.py checks retrograd's resumed NAdam against torch's.
@pytest.mark.parametrize("name", [n for n in CONFIGS if n != "NAdam"])
def test_state_dict_resumes_exactly(name):
    kw = CONFIGS[name][1]
    batches = _batches(8)
    mod, _ = _models()
    twin = copy.deepcopy(mod)
    opt = getattr(rg.optim, name)(mod.parameters(), lr=0.05, **kw)
    for x, y in batches:
        _step(mod, opt, x, y)
    opt2 = getattr(rg.optim, name)(twin.parameters(), lr=0.05, **kw)
    for x, y in batches[:4]:
        _step(twin, opt2, x, y)
    saved = copy.deepcopy(opt2.state_dict())
    opt3 = getattr(rg.optim, name)(twin.parameters(), lr=0.05, **kw)
    opt3.load_state_dict(saved)
    for x, y in batches[4:]:
        _step(twin, opt3, x, y)
    for p, q in zip(mod.parameters(), twin.parameters()):
        np.testing.assert_array_equal(p.numpy(), q.numpy())


@pytest.mark.parametrize("name", ["SGD", "Adam", "RMSprop", "Adagrad", "Adamax"])
def test_traced_step_replays_like_eager(name):
    """rg.jit of opt.step() (gradients set eagerly each time) updates the parameters and
    the optimizer state exactly as eager steps do."""
    kw = CONFIGS.get(name, [{}])[-1]
    ws = [rg.tensor(RNG.standard_normal((4, 3)), requires_grad=True),
          rg.tensor(RNG.standard_normal(3), requires_grad=True)]
    twins = [rg.tensor(w.numpy().copy(), requires_grad=True) for w in ws]
    opt = getattr(rg.optim, name)(ws, lr=0.05, **kw)
    opt2 = getattr(rg.optim, name)(twins, lr=0.05, **kw)

    traced = rg.jit(lambda: opt2.step())
    for _ in range(6):
        for w, t in zip(ws, twins):
            g = RNG.standard_normal(w.shape)
            w.grad, t.grad = rg.tensor(g.copy()), rg.tensor(g.copy())
        opt.step()
        traced()
    for w, t in zip(ws, twins):
        np.testing.assert_allclose(t.numpy(), w.numpy(), rtol=1e-13, atol=1e-15)
    assert traced.trace_count <= 2  # the state made at the first step changes the program once


def test_bad_hyperparameters_are_refused():
    p = [rg.zeros(2, requires_grad=True)]
    with pytest.raises(ValueError, match="epsilon"):
        rg.optim.RMSprop(p, eps=-1.0)
    with pytest.raises(ValueError, match="momentum"):
        rg.optim.RMSprop(p, momentum=-0.1)
    with pytest.raises(ValueError, match="lr_decay"):
        rg.optim.Adagrad(p, lr_decay=-1)
    with pytest.raises(ValueError, match="beta2"):
        rg.optim.Adamax(p, betas=(0.9, 1.0))
    with pytest.raises(ValueError, match="learning rate"):
        rg.optim.NAdam(p, lr=-1.0)


@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.0, float("inf")])
@pytest.mark.parametrize("max_norm", [0.1, 100.0])
def test_clip_grad_norm_matches_torch(norm_type, max_norm):
    grads = [RNG.standard_normal((3, 4)), RNG.standard_normal(5)]
    ps = [rg.zeros(g.shape, dtype=rg.float64, requires_grad=True) for g in grads]
    ts = [torch.zeros(g.shape, dtype=torch.float64, requires_grad=True) for g in grads]
    for p, t, g in zip(ps, ts, grads):
        p.grad, t.grad = rg.tensor(g.copy()), torch.tensor(g.copy())
    total = nn.utils.clip_grad_norm_(ps, max_norm, norm_type)
    total_t = torch.nn.utils.clip_grad_norm_(ts, max_norm, norm_type)
    assert total.item() == pytest.approx(total_t.item(), rel=1e-12)
    for p, t in zip(ps, ts):
        np.testing.assert_allclose(p.grad.numpy(), t.grad.numpy(), rtol=1e-12)


def test_clip_grad_norm_nonfinite_and_clip_grad_value():
    p = rg.zeros(3, dtype=rg.float64, requires_grad=True)
    p.grad = rg.tensor([1.0, np.inf, 2.0], dtype=rg.float64)
    with pytest.raises(RuntimeError, match="non-finite"):
        nn.utils.clip_grad_norm_(p, 1.0, error_if_nonfinite=True)
    q = rg.zeros(4, dtype=rg.float64, requires_grad=True)
    g = np.array([-3.0, -0.5, 0.2, 4.0])
    q.grad = rg.tensor(g.copy())
    t = torch.zeros(4, dtype=torch.float64, requires_grad=True)
    t.grad = torch.tensor(g.copy())
    nn.utils.clip_grad_value_([q], 1.0)
    torch.nn.utils.clip_grad_value_([t], 1.0)
    np.testing.assert_array_equal(q.grad.numpy(), t.grad.numpy())
    assert nn.utils.clip_grad_norm_([rg.zeros(2, requires_grad=True)], 1.0).item() == 0.0
