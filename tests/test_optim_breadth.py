"""RAdam, Adadelta, Rprop, ASGD, LBFGS, Adafactor, SparseAdam and the schedulers ConstantLR,
MultiplicativeLR, PolynomialLR, CosineAnnealingWarmRestarts, CyclicLR, ChainedScheduler
against PyTorch's: 20 steps on the same float64 model and batches (parameters equal to 1e-10
relative after every step), state_dict layout and an rg.save/rg.load round trip that
continues identically, rg.jit replays of a step, lr sequences over 50 steps, and the
exception types for bad hyper-parameters."""

import copy

import numpy as np
import pytest
import torch

import retrograd as rg
import retrograd.nn as nn

RNG = np.random.default_rng(0)
RTOL = 1e-10

CASES = [
    ("RAdam", {}), ("RAdam", {"lr": 0.05, "weight_decay": 0.1}),
    ("RAdam", {"lr": 0.05, "weight_decay": 0.1, "decoupled_weight_decay": True,
               "betas": (0.5, 0.9)}),
    ("RAdam", {"lr": 0.05, "maximize": True, "betas": (0.5, 0.6)}),
    ("Adadelta", {}), ("Adadelta", {"lr": 0.5, "rho": 0.5, "weight_decay": 0.1,
                                    "maximize": True}),
    ("Rprop", {}), ("Rprop", {"lr": 0.05, "etas": (0.3, 1.5), "step_sizes": (1e-3, 0.1)}),
    ("Rprop", {"maximize": True}),
    ("ASGD", {}), ("ASGD", {"lr": 0.05, "t0": 5, "lambd": 0.01, "weight_decay": 0.1}),
    ("ASGD", {"lr": 0.05, "alpha": 0.5, "maximize": True}),
    ("Adafactor", {}), ("Adafactor", {"lr": 0.05, "weight_decay": 0.1, "d": 1.5,
                                      "beta2_decay": -0.5}),
    ("Adafactor", {"eps": (1e-6, 1e-2), "maximize": True}),
]
IDS = [f"{n}-{i}" for i, (n, _) in enumerate(CASES)]


def _models():
    torch.manual_seed(0)
    ref = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
    ref = ref.double()
    mod = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2)).double()
    mod.load_state_dict({k: v.detach().numpy() for k, v in ref.state_dict().items()})
    return mod, ref


def _batches(n):
    return [(RNG.standard_normal((16, 4)), RNG.standard_normal((16, 2))) for _ in range(n)]


def _loss(mod, x, y):
    return ((mod(rg.tensor(x)) - rg.tensor(y)) ** 2).mean()


def _loss_t(ref, x, y):
    return ((ref(torch.tensor(x)) - torch.tensor(y)) ** 2).mean()


def _step(mod, opt, x, y):
    opt.zero_grad()
    _loss(mod, x, y).backward()
    opt.step()


def _step_t(ref, opt, x, y):
    opt.zero_grad()
    _loss_t(ref, x, y).backward()
    opt.step()


def _same_params(mod, ref, rtol=RTOL, atol=1e-14):
    for p, q in zip(mod.parameters(), ref.parameters()):
        np.testing.assert_allclose(p.numpy(), q.detach().numpy(), rtol=rtol, atol=atol)


def _same_state(sd, sd_t):
    assert sorted(sd["state"]) == sorted(sd_t["state"])
    for i, st in sd["state"].items():
        assert sorted(st) == sorted(sd_t["state"][i]), i
        for k, v in st.items():
            ref_v = sd_t["state"][i][k]
            if isinstance(ref_v, torch.Tensor):
                arr = np.asarray(v.numpy() if isinstance(v, rg.Tensor) else v)
                assert arr.shape == tuple(ref_v.shape), k
                np.testing.assert_allclose(arr, ref_v.numpy(), rtol=1e-9, atol=1e-12,
                                           err_msg=k)
            else:
                assert v == ref_v, k
    # every hyper-parameter we keep is one of PyTorch's, with its value
    for g, g_t in zip(sd["param_groups"], sd_t["param_groups"]):
        assert set(g) <= set(g_t)
        for k, v in g.items():
            assert v == g_t[k] or (isinstance(v, tuple) and list(v) == list(g_t[k])), k


@pytest.mark.parametrize("name,kw", CASES, ids=IDS)
def test_optimizer_matches_torch_for_20_steps(name, kw):
    mod, ref = _models()
    opt = getattr(rg.optim, name)(mod.parameters(), **kw)
    opt_t = getattr(torch.optim, name)(ref.parameters(), **kw)
    for x, y in _batches(20):
        _step(mod, opt, x, y)
        _step_t(ref, opt_t, x, y)
        _same_params(mod, ref)
    _same_state(opt.state_dict(), opt_t.state_dict())


@pytest.mark.parametrize("name,kw", CASES[::2], ids=IDS[::2])
def test_save_load_round_trip_continues_identically(name, kw, tmp_path):
    batches = _batches(8)
    mod, _ = _models()
    twin = copy.deepcopy(mod)
    opt = getattr(rg.optim, name)(mod.parameters(), **kw)
    for x, y in batches:
        _step(mod, opt, x, y)
    opt2 = getattr(rg.optim, name)(twin.parameters(), **kw)
    for x, y in batches[:4]:
        _step(twin, opt2, x, y)
    rg.save(opt2.state_dict(), tmp_path / "opt.pt")
    opt3 = getattr(rg.optim, name)(twin.parameters(), **kw)
    opt3.load_state_dict(rg.load(tmp_path / "opt.pt"))
    for x, y in batches[4:]:
        _step(twin, opt3, x, y)
    for p, q in zip(mod.parameters(), twin.parameters()):
        np.testing.assert_array_equal(p.numpy(), q.numpy())


@pytest.mark.parametrize("name,kw", CASES[1::2], ids=IDS[1::2])
def test_traced_step_replays_like_eager(name, kw):
    """rg.jit of opt.step() (gradients set eagerly each time) updates the parameters and the
    state as eager steps do, past the steps where the update changes branch."""
    ws = [rg.tensor(RNG.standard_normal((4, 3)), requires_grad=True),
          rg.tensor(RNG.standard_normal(3), requires_grad=True)]
    twins = [rg.tensor(w.numpy().copy(), requires_grad=True) for w in ws]
    opt = getattr(rg.optim, name)(ws, **kw)
    opt2 = getattr(rg.optim, name)(twins, **kw)
    traced = rg.jit(lambda: opt2.step())
    for _ in range(10):
        for w, t in zip(ws, twins):
            g = RNG.standard_normal(w.shape)
            w.grad, t.grad = rg.tensor(g.copy()), rg.tensor(g.copy())
        opt.step()
        traced()
    for w, t in zip(ws, twins):
        np.testing.assert_allclose(t.numpy(), w.numpy(), rtol=1e-13, atol=1e-15)
    assert traced.trace_count <= 2


BAD = [
    ("RAdam", {"lr": -1.0}), ("RAdam", {"eps": -1.0}), ("RAdam", {"betas": (1.0, 0.9)}),
    ("RAdam", {"betas": (0.9, -0.1)}), ("RAdam", {"weight_decay": -1.0}),
    ("Adadelta", {"rho": 1.5}), ("Adadelta", {"eps": -1.0}), ("Adadelta", {"lr": -1.0}),
    ("Adadelta", {"weight_decay": -0.5}),
    ("Rprop", {"etas": (1.5, 1.2)}), ("Rprop", {"etas": (0.5, 0.9)}), ("Rprop", {"lr": -1.0}),
    ("ASGD", {"lr": -1.0}), ("ASGD", {"weight_decay": -1.0}),
    ("Adafactor", {"lr": -1.0}), ("Adafactor", {"beta2_decay": 0.5}),
    ("Adafactor", {"eps": (-1.0, 1e-3)}), ("Adafactor", {"eps": (None, -1.0)}),
    ("Adafactor", {"d": 0.5}), ("Adafactor", {"weight_decay": -1.0}),
    ("SparseAdam", {"lr": 0.0}), ("SparseAdam", {"eps": 0.0}),
    ("SparseAdam", {"betas": (0.9, 1.0)}), ("SparseAdam", {"betas": (-0.1, 0.9)}),
]


@pytest.mark.parametrize("name,kw", BAD, ids=[f"{n}-{i}" for i, (n, _) in enumerate(BAD)])
def test_bad_hyperparameters_raise_torchs_type(name, kw):
    with pytest.raises(Exception) as e_t:
        getattr(torch.optim, name)([torch.zeros(2, requires_grad=True)], **kw)
    with pytest.raises(e_t.type):
        getattr(rg.optim, name)([rg.zeros(2, requires_grad=True)], **kw)


def _factor(epoch):
    return 0.95


SCHEDULERS = {
    "ConstantLR": ("SGD", lambda m, o: m.ConstantLR(o, factor=0.5, total_iters=7)),
    "ConstantLR-default": ("SGD", lambda m, o: m.ConstantLR(o)),
    "MultiplicativeLR": ("SGD", lambda m, o: m.MultiplicativeLR(o, _factor)),
    "MultiplicativeLR-lambda": ("SGD", lambda m, o: m.MultiplicativeLR(
        o, lambda e: 0.9 + e / 1000)),
    "PolynomialLR": ("SGD", lambda m, o: m.PolynomialLR(o, total_iters=30, power=2.0)),
    "PolynomialLR-default": ("SGD", lambda m, o: m.PolynomialLR(o)),
    "CosineAnnealingWarmRestarts": ("SGD", lambda m, o: m.CosineAnnealingWarmRestarts(
        o, T_0=7, eta_min=0.01)),
    "CosineAnnealingWarmRestarts-mult": ("SGD", lambda m, o: m.CosineAnnealingWarmRestarts(
        o, T_0=3, T_mult=2)),
    "CyclicLR-triangular": ("SGD", lambda m, o: m.CyclicLR(o, 0.01, 0.1, step_size_up=4)),
    "CyclicLR-triangular2": ("SGD", lambda m, o: m.CyclicLR(
        o, [0.01, 0.02], 0.1, step_size_up=3, step_size_down=5, mode="triangular2")),
    "CyclicLR-exp_range": ("Adam", lambda m, o: m.CyclicLR(
        o, 0.01, [0.1, 0.2], step_size_up=6, mode="exp_range", gamma=0.97)),
    "CyclicLR-scale_fn": ("SGD", lambda m, o: m.CyclicLR(
        o, 0.01, 0.1, step_size_up=5, scale_fn=lambda x: 1 / (1 + x), scale_mode="iterations",
        cycle_momentum=False)),
    "ChainedScheduler": ("SGD", lambda m, o: m.ChainedScheduler(
        [m.ConstantLR(o, factor=0.3, total_iters=4), m.ExponentialLR(o, gamma=0.9)])),
    "ChainedScheduler-cosine": ("SGD", lambda m, o: m.ChainedScheduler(
        [m.CosineAnnealingWarmRestarts(o, T_0=5), m.MultiplicativeLR(o, _factor)], o)),
}


def _sched_pair(name):
    kind, make = SCHEDULERS[name]
    w = [rg.zeros(3, requires_grad=True)], [rg.zeros(2, requires_grad=True)]
    w_t = [torch.zeros(3, requires_grad=True)], [torch.zeros(2, requires_grad=True)]
    kw = {"momentum": 0.9} if kind == "SGD" else {}
    opt = getattr(rg.optim, kind)([{"params": w[0]}, {"params": w[1], "lr": 0.2}], lr=0.1,
                                  **kw)
    opt_t = getattr(torch.optim, kind)([{"params": w_t[0]}, {"params": w_t[1], "lr": 0.2}],
                                       lr=0.1, **kw)
    return opt, make(rg.optim.lr_scheduler, opt), opt_t, make(torch.optim.lr_scheduler, opt_t)


def _momenta(opt):
    return [g.get("momentum", g.get("betas", (None,))[0]) for g in opt.param_groups]


@pytest.mark.parametrize("name", list(SCHEDULERS))
def test_scheduler_matches_torch_over_50_steps(name):
    opt, sched, opt_t, sched_t = _sched_pair(name)
    assert type(sched).__name__ == type(sched_t).__name__
    for _ in range(50):
        np.testing.assert_allclose(sched.get_last_lr(), sched_t.get_last_lr(), rtol=1e-13)
        np.testing.assert_allclose([g["lr"] for g in opt.param_groups],
                                   [g["lr"] for g in opt_t.param_groups], rtol=1e-13)
        np.testing.assert_allclose(_momenta(opt), _momenta(opt_t), rtol=1e-13)
        opt.step()
        opt_t.step()
        sched.step()
        sched_t.step()
    assert list(sched.state_dict()) == list(sched_t.state_dict())


@pytest.mark.parametrize("name", list(SCHEDULERS))
def test_scheduler_state_dict_round_trip(name, tmp_path):
    opt, sched, _, _ = _sched_pair(name)
    opt2, sched2, _, _ = _sched_pair(name)
    for _ in range(13):
        sched.step()
        sched2.step()
    rg.save({"opt": opt2.state_dict(), "sched": sched2.state_dict()}, tmp_path / "s.pt")
    opt3, sched3, _, _ = _sched_pair(name)
    saved = rg.load(tmp_path / "s.pt")
    opt3.load_state_dict(saved["opt"])
    sched3.load_state_dict(saved["sched"])
    assert sched3.get_last_lr() == sched.get_last_lr()
    for _ in range(20):
        sched.step()
        sched3.step()
        assert sched3.get_last_lr() == sched.get_last_lr()
        assert _momenta(opt3) == _momenta(opt)


@pytest.mark.parametrize("T_mult", [1, 2])
def test_cosine_warm_restarts_fractional_epochs(T_mult):
    opt, _, opt_t, _ = _sched_pair("ConstantLR")
    sched = rg.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=3, T_mult=T_mult)
    sched_t = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt_t, T_0=3, T_mult=T_mult)
    for epoch in range(8):
        for i in range(4):
            sched.step(epoch + i / 4)
            sched_t.step(epoch + i / 4)
            np.testing.assert_allclose(sched.get_last_lr(), sched_t.get_last_lr(), rtol=1e-13)
            assert sched.last_epoch == sched_t.last_epoch
    sched.step(26)
    sched_t.step(26)
    sched.step()
    sched_t.step()
    np.testing.assert_allclose(sched.get_last_lr(), sched_t.get_last_lr(), rtol=1e-13)


def _bad_scheduler_cases():
    return [
        lambda m, o: m.ConstantLR(o, factor=1.5),
        lambda m, o: m.ConstantLR(o, factor=-0.1),
        lambda m, o: m.MultiplicativeLR(o, 0.5),
        lambda m, o: m.MultiplicativeLR(o, [_factor] * 3),
        lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=0),
        lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=2.5),
        lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=0),
        lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=3, eta_min="0"),
        lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=3).step(-1),
        lambda m, o: m.CyclicLR(o, 0.01, 0.1, mode="sawtooth"),
        lambda m, o: m.CyclicLR(o, [0.01] * 3, 0.1),
        lambda m, o: m.CyclicLR(m.ConstantLR(o).optimizer.__class__, 0.01, 0.1),
        lambda m, o: m.ChainedScheduler([]),
        lambda m, o: m.ChainedScheduler([m.ReduceLROnPlateau(o)]),
    ]


@pytest.mark.parametrize("k", range(len(_bad_scheduler_cases())))
def test_bad_scheduler_arguments_raise_torchs_type(k):
    make = _bad_scheduler_cases()[k]
    opt_t = torch.optim.SGD([torch.zeros(2, requires_grad=True)], lr=0.1, momentum=0.9)
    with pytest.raises(Exception) as e_t:
        make(torch.optim.lr_scheduler, opt_t)
    opt = rg.optim.SGD([rg.zeros(2, requires_grad=True)], lr=0.1, momentum=0.9)
    with pytest.raises(e_t.type):
        make(rg.optim.lr_scheduler, opt)


def test_cyclic_lr_needs_momentum_when_cycling():
    opt_t = torch.optim.Adagrad([torch.zeros(2, requires_grad=True)], lr=0.1)
    with pytest.raises(ValueError):
        torch.optim.lr_scheduler.CyclicLR(opt_t, 0.01, 0.1)
    opt = rg.optim.Adagrad([rg.zeros(2, requires_grad=True)], lr=0.1)
    with pytest.raises(ValueError, match="momentum"):
        rg.optim.lr_scheduler.CyclicLR(opt, 0.01, 0.1)


# L-BFGS: configurations whose iterations stay well-conditioned over 20 steps (with lr=1 and
# 20 inner iterations, rounding differences of 1e-16 in dot products grow chaotically).
LBFGS_CASES = [{"max_iter": 3, "lr": 0.5, "history_size": 5},
               {"line_search_fn": "strong_wolfe", "max_iter": 3, "history_size": 4},
               {"max_iter": 4, "history_size": 2, "lr": 0.3, "tolerance_change": 1e-4},
               {"max_iter": 3, "tolerance_grad": 0.05, "lr": 0.5}]


def _closure(mod, opt, x, y):
    def closure():
        opt.zero_grad()
        loss = _loss(mod, x, y)
        loss.backward()
        return loss
    return closure


def _closure_t(ref, opt, x, y):
    def closure():
        opt.zero_grad()
        loss = _loss_t(ref, x, y)
        loss.backward()
        return loss
    return closure


def _same_lbfgs_state(sd, sd_t):
    (st,), (st_t,) = sd["state"].values(), sd_t["state"].values()
    assert sorted(st) == sorted(st_t)
    for k, v_t in st_t.items():
        v = st[k]
        if isinstance(v_t, list):
            assert len(v) == len(v_t), k
            pairs = list(zip(v, v_t))
        else:
            pairs = [(v, v_t)]
        for a, b in pairs:
            if b is None:
                assert a is None, k
                continue
            a = np.asarray(a.numpy() if isinstance(a, rg.Tensor) else a)
            b = b.numpy() if isinstance(b, torch.Tensor) else np.asarray(b)
            assert a.shape == b.shape, k
            np.testing.assert_allclose(a, b, rtol=1e-8, atol=1e-12, err_msg=k)
    assert sd["param_groups"] == sd_t["param_groups"]


@pytest.mark.parametrize("kw", LBFGS_CASES, ids=[str(i) for i in range(len(LBFGS_CASES))])
def test_lbfgs_matches_torch_for_20_steps(kw):
    mod, ref = _models()
    opt = rg.optim.LBFGS(mod.parameters(), **kw)
    opt_t = torch.optim.LBFGS(ref.parameters(), **kw)
    for x, y in _batches(20):
        loss = opt.step(_closure(mod, opt, x, y))
        loss_t = opt_t.step(_closure_t(ref, opt_t, x, y))
        assert loss.item() == pytest.approx(loss_t.item(), rel=RTOL)
        # 20 quasi-Newton steps amplify the last bits of BLAS's dot products and torch's
        # threaded sums (which vary with the machine and its load: full-suite runs have
        # seen 3.1e-12 and 4.0e-10); parameters are ~0.02-100, so 1e-8 is still 8 digits
        _same_params(mod, ref, atol=1e-8)
    _same_lbfgs_state(opt.state_dict(), opt_t.state_dict())


@pytest.mark.parametrize("kw", LBFGS_CASES[:2], ids=["fixed", "strong_wolfe"])
def test_lbfgs_save_load_round_trip(kw, tmp_path):
    batches = _batches(6)
    mod, _ = _models()
    twin = copy.deepcopy(mod)
    opt = rg.optim.LBFGS(mod.parameters(), **kw)
    for x, y in batches:
        opt.step(_closure(mod, opt, x, y))
    opt2 = rg.optim.LBFGS(twin.parameters(), **kw)
    for x, y in batches[:3]:
        opt2.step(_closure(twin, opt2, x, y))
    rg.save(opt2.state_dict(), tmp_path / "lbfgs.pt")
    opt3 = rg.optim.LBFGS(twin.parameters(), **kw)
    opt3.load_state_dict(rg.load(tmp_path / "lbfgs.pt"))
    for x, y in batches[3:]:
        opt3.step(_closure(twin, opt3, x, y))
    for p, q in zip(mod.parameters(), twin.parameters()):
        np.testing.assert_array_equal(p.numpy(), q.numpy())


def test_lbfgs_refuses_jit_groups_and_bad_arguments():
    w = rg.tensor([1.0, 2.0], requires_grad=True)
    opt = rg.optim.LBFGS([w])

    def closure():
        opt.zero_grad()
        loss = (w ** 2).sum()
        loss.backward()
        return loss

    with pytest.raises(RuntimeError, match="rg.jit"):
        rg.jit(lambda: opt.step(closure))()
    for bad_t, bad in [
        (lambda: torch.optim.LBFGS([torch.zeros(2, requires_grad=True)], lr=-1.0),
         lambda: rg.optim.LBFGS([rg.zeros(2, requires_grad=True)], lr=-1.0)),
        (lambda: torch.optim.LBFGS([{"params": [torch.zeros(2, requires_grad=True)]},
                                    {"params": [torch.zeros(2, requires_grad=True)]}]),
         lambda: rg.optim.LBFGS([{"params": [rg.zeros(2, requires_grad=True)]},
                                 {"params": [rg.zeros(2, requires_grad=True)]}])),
    ]:
        with pytest.raises(Exception) as e_t:
            bad_t()
        with pytest.raises(e_t.type):
            bad()
    t = torch.tensor([1.0, 2.0], requires_grad=True)
    opt_t = torch.optim.LBFGS([t], line_search_fn="backtracking")
    w2 = rg.tensor([1.0, 2.0], requires_grad=True)
    opt2 = rg.optim.LBFGS([w2], line_search_fn="backtracking")

    def closure_t():
        opt_t.zero_grad()
        loss = (t ** 2).sum()
        loss.backward()
        return loss

    def closure2():
        opt2.zero_grad()
        loss = (w2 ** 2).sum()
        loss.backward()
        return loss

    with pytest.raises(RuntimeError):
        opt_t.step(closure_t)
    with pytest.raises(RuntimeError, match="strong_wolfe"):
        opt2.step(closure2)


def test_sparse_adam_refuses_dense_gradients_as_torch():
    t = torch.zeros(3, requires_grad=True)
    opt_t = torch.optim.SparseAdam([t])
    (t * 2).sum().backward()
    with pytest.raises(RuntimeError):
        opt_t.step()
    w = rg.zeros(3, requires_grad=True)
    opt = rg.optim.SparseAdam([w])
    assert opt.param_groups[0]["betas"] == tuple(opt_t.param_groups[0]["betas"])
    assert set(opt.state_dict()["param_groups"][0]) == set(opt_t.state_dict()["param_groups"][0])
    opt.step()  # no gradient yet: nothing to do
    (w * 2).sum().backward()
    with pytest.raises(RuntimeError, match="dense gradients"):
        opt.step()
    np.testing.assert_array_equal(w.numpy(), np.zeros(3))
