"""Ports of scientific-ML and optimisation programs (PINNs, Hamiltonian nets, deep
equilibrium layers, optimizer sweeps) compared with PyTorch run inside each test."""

import copy

import numpy as np
import pytest
from port_compare import close

import retrograd as rg

torch = pytest.importorskip("torch")


def _mlp(lib, seed=0):
    rs = np.random.RandomState(seed)
    m = lib.nn.Sequential(lib.nn.Linear(3, 8), lib.nn.Tanh(), lib.nn.Linear(8, 1)).double()
    with lib.no_grad():
        for p in m.parameters():
            p.copy_(lib.tensor(rs.randn(*p.shape)))
    return m


def _data(seed=1):
    rs = np.random.RandomState(seed)
    return rs.randn(16, 3), rs.randn(16, 1)


def _state_dict_hooks_program(lib):
    """Every optimizer state-dict hook, as a checkpointing utility uses them: the log of
    the calls, what they see, and the training continued after a load with a new lr."""
    m = _mlp(lib)
    X, Y = _data()
    x, y = lib.tensor(X), lib.tensor(Y)
    opt = lib.optim.Adam([{"params": m[0].parameters()},
                          {"params": m[2].parameters(), "lr": 0.05}], lr=0.01)
    log = []
    opt.register_state_dict_pre_hook(lambda o: log.append("sd_pre"))
    opt.register_state_dict_pre_hook(lambda o: log.append("sd_pre_first"), prepend=True)

    def sd_post(o, sd):
        log.append(("sd_post", sorted(sd)))
        sd["extra"] = len(o.param_groups)
        return sd

    opt.register_state_dict_post_hook(sd_post)

    def load_pre(o, sd):
        log.append(("load_pre", sorted(sd)))
        sd.pop("extra")  # a shallow copy: the caller's dict keeps it

    h = opt.register_load_state_dict_pre_hook(load_pre)
    opt.register_load_state_dict_post_hook(
        lambda o: log.append(("load_post", [g["lr"] for g in o.param_groups])))
    losses = []
    for _ in range(4):
        opt.zero_grad(set_to_none=False)
        loss = lib.nn.functional.mse_loss(m(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    sd = copy.deepcopy(opt.state_dict())
    opt.load_state_dict(sd)
    log.append(("kept", sorted(sd)))
    h.remove()
    for g in opt.param_groups:
        g["lr"] *= 0.1
    for _ in range(4):
        opt.zero_grad()
        loss = lib.nn.functional.mse_loss(m(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return log, losses, [p.detach().numpy() for p in m.parameters()]


def test_optimizer_state_dict_hooks_match_torch():
    tlog, tl, tp = _state_dict_hooks_program(torch)
    rlog, rl, rp = _state_dict_hooks_program(rg)
    assert rlog == tlog
    np.testing.assert_allclose(rl, tl, rtol=1e-12)
    for a, b in zip(rp, tp):
        close(a, b, tol=1e-12)


def test_load_state_dict_pre_hook_may_return_a_new_dict():
    for lib in (torch, rg):
        m = _mlp(lib)
        opt = lib.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
        sd = opt.state_dict()
        sd["param_groups"][0]["lr"] = 0.5
        opt.register_load_state_dict_pre_hook(
            lambda o, d: {"state": d["state"], "param_groups": [
                dict(d["param_groups"][0], lr=0.25)]})
        opt.load_state_dict(sd)
        assert opt.param_groups[0]["lr"] == 0.25, lib.__name__


def test_lbfgs_load_state_dict_runs_the_hooks():
    m = _mlp(rg)
    opt = rg.optim.LBFGS(m.parameters())
    seen = []
    opt.register_load_state_dict_post_hook(lambda o: seen.append(type(o).__name__))
    opt.load_state_dict(opt.state_dict())
    assert seen == ["LBFGS"]
