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



def _same_run(losses, params, t_losses, t_params, rtol: float, tol: float) -> None:
    """The losses of a run, then each parameter at its end, against torch's."""
    np.testing.assert_allclose(losses, t_losses, rtol=rtol)
    for a, b in zip(params, t_params, strict=True):
        close(a, b, tol=tol)

def test_optimizer_state_dict_hooks_match_torch():
    tlog, tl, tp = _state_dict_hooks_program(torch)
    rlog, rl, rp = _state_dict_hooks_program(rg)
    assert rlog == tlog
    _same_run(rl, rp, tl, tp, 1e-12, 1e-12)


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


def _sign_sgd_program(lib):
    """A hand-written optimizer in the style of papers' repos: a `__setstate__` that
    calls the base's, state created lazily, a scheduler on top, then a deep copy."""

    class SignSGD(lib.optim.Optimizer):
        def __init__(self, params, lr=1e-2, momentum=0.9):
            super().__init__(params, dict(lr=lr, momentum=momentum))

        def __setstate__(self, state):
            super().__setstate__(state)
            for group in self.param_groups:
                group.setdefault("nesterov", False)

        @lib.no_grad()
        def step(self, closure=None):
            loss = None
            if closure is not None:
                with lib.enable_grad():
                    loss = closure()
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    state = self.state[p]
                    if len(state) == 0:
                        state["step"] = 0
                        state["buf"] = lib.zeros_like(p, memory_format=lib.preserve_format)
                    state["step"] += 1
                    state["buf"].mul_(group["momentum"]).add_(p.grad,
                                                              alpha=1 - group["momentum"])
                    p.add_(lib.sign(state["buf"]), alpha=-group["lr"])
            return loss

    m = _mlp(lib)
    X, Y = _data()
    x, y = lib.tensor(X), lib.tensor(Y)
    opt = SignSGD(m.parameters(), lr=0.01)
    opt.register_step_post_hook(lambda *a: None)
    sched = lib.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.05, total_steps=12,
                                              cycle_momentum=False)

    def closure():
        opt.zero_grad()
        loss = lib.nn.functional.mse_loss(m(x), y)
        loss.backward()
        return loss

    losses = []
    for _ in range(12):
        losses.append(opt.step(closure).item())
        sched.step()
    twin = copy.deepcopy(opt)
    info = (twin.param_groups[0]["nesterov"], len(twin.state),
            len(getattr(twin, "_optimizer_step_post_hooks", {})),
            sorted(twin.defaults.items()))
    return losses, info, [p.detach().numpy() for p in m.parameters()]


def test_custom_optimizer_with_setstate_deepcopies_as_torch():
    tl, tinfo, tp = _sign_sgd_program(torch)
    rl, rinfo, rp = _sign_sgd_program(rg)
    assert rinfo == tinfo
    _same_run(rl, rp, tl, tp, 1e-12, 1e-12)


@pytest.mark.parametrize("name", ["RAdam", "NAdam", "Adadelta", "Adagrad", "Adamax", "ASGD",
                                  "RMSprop"])
def test_default_hyperparameters_have_torchs_types(name):
    """A saved param group holds torch's defaults as torch's types (weight_decay 0, an int)."""
    groups = []
    for lib in (torch, rg):
        p = lib.nn.Parameter(lib.ones(2, dtype=lib.float64))
        g = getattr(lib.optim, name)([p]).state_dict()["param_groups"][0]
        groups.append({k: (type(v).__name__, v) for k, v in g.items()})
    assert groups[1] == groups[0]


def test_rmsprop_takes_maximize_positionally():
    for lib in (torch, rg):
        p = lib.nn.Parameter(lib.ones(2, dtype=lib.float64))
        opt = lib.optim.RMSprop([p], 0.01, 0.99, 1e-8, 0, 0, False, False, None, True)
        assert opt.param_groups[0]["maximize"] is True


def _step_hook_order(lib):
    import importlib

    hooks = importlib.import_module(lib.__name__ + ".optim.optimizer")
    m = _mlp(lib)
    opt = lib.optim.SGD(m.parameters(), lr=0.1)
    calls = []
    handles = [hooks.register_optimizer_step_pre_hook(lambda o, a, k: calls.append("gpre")),
               hooks.register_optimizer_step_post_hook(lambda o, a, k: calls.append("gpost"))]
    opt.register_step_pre_hook(lambda o, a, k: calls.append("pre"))
    opt.register_step_post_hook(lambda o, a, k: calls.append("post"))
    try:
        opt.step()
    finally:
        for h in handles:
            h.remove()
    return calls


def test_step_hooks_run_in_torchs_order():
    """Global pre-hooks, own pre-hooks, the step, own post-hooks, then global post-hooks."""
    assert _step_hook_order(rg) == _step_hook_order(torch)


def _named_checkpoint(lib, tmp_path):
    """Save a model and an optimizer built on `named_parameters()`, resume both with a
    different lr, then continue training."""
    m = _mlp(lib)
    X, Y = _data()
    x, y = lib.tensor(X), lib.tensor(Y)
    opt = lib.optim.Adam(m.named_parameters(), lr=0.01, betas=(0.8, 0.9), amsgrad=True)
    for _ in range(3):
        opt.zero_grad()
        lib.nn.functional.mse_loss(m(x), y).backward()
        opt.step()
    path = str(tmp_path / f"{lib.__name__}.ckpt")
    lib.save({"model": m.state_dict(), "optim": opt.state_dict()}, path)
    ck = lib.load(path, weights_only=True) if lib is torch else lib.load(path)
    m2 = _mlp(lib, seed=5)
    m2.load_state_dict(ck["model"])
    opt2 = lib.optim.Adam(m2.named_parameters(), lr=0.5)
    opt2.load_state_dict(ck["optim"])
    group = {k: v for k, v in opt2.param_groups[0].items() if k != "params"}
    opt2.param_groups[0]["lr"] = 0.02
    losses = []
    for _ in range(3):
        opt2.zero_grad()
        loss = lib.nn.functional.mse_loss(m2(x), y)
        loss.backward()
        opt2.step()
        losses.append(loss.item())
    return group, losses


def test_named_parameter_checkpoint_resumes_as_torch(tmp_path):
    tg, tl = _named_checkpoint(torch, tmp_path)
    rgroup, rl = _named_checkpoint(rg, tmp_path)
    assert rgroup == tg
    assert type(rgroup["param_names"]) is type(tg["param_names"])
    assert type(rgroup["betas"]) is type(tg["betas"])
    np.testing.assert_allclose(rl, tl, rtol=1e-12)


# ---- whole programs, end to end ------------------------------------------------------


def _synced(build):
    tm, rm = build(torch), build(rg)
    rm.load_state_dict({k: rg.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    return tm, rm


def _pinn_net(lib):
    nn = lib.nn
    return nn.Sequential(nn.Linear(2, 12), nn.Tanh(), nn.Linear(12, 12), nn.Tanh(),
                         nn.Linear(12, 1)).double()


def _burgers_program(lib, m):
    """A Burgers PINN: u_t, u_x, u_xx by autograd.grad(create_graph=True), Adam then
    LBFGS(strong_wolfe) with a closure."""
    rs = np.random.RandomState(2)
    xt = rs.rand(24, 2) * np.array([2.0, 1.0]) - np.array([1.0, 0.0])
    x = lib.tensor(xt[:, :1], requires_grad=True)
    t = lib.tensor(xt[:, 1:], requires_grad=True)
    x0 = lib.tensor(np.linspace(-1, 1, 8)[:, None])
    nu = 0.01 / np.pi

    def loss_fn():
        u = m(lib.cat([x, t], dim=1))
        u_t = lib.autograd.grad(u, t, grad_outputs=lib.ones_like(u), create_graph=True)[0]
        u_x = lib.autograd.grad(u, x, grad_outputs=lib.ones_like(u), create_graph=True)[0]
        u_xx = lib.autograd.grad(u_x, x, grad_outputs=lib.ones_like(u_x), create_graph=True)[0]
        f = u_t + u * u_x - nu * u_xx
        u0 = m(lib.cat([x0, lib.zeros_like(x0)], dim=1))
        return lib.mean(f ** 2) + lib.mean((u0 + lib.sin(np.pi * x0)) ** 2)

    opt = lib.optim.Adam(m.parameters(), lr=1e-2)
    losses = []
    for _ in range(10):
        opt.zero_grad()
        loss = loss_fn()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    lbfgs = lib.optim.LBFGS(m.parameters(), lr=1.0, max_iter=8, history_size=5,
                            line_search_fn="strong_wolfe")

    def closure():
        lbfgs.zero_grad()
        loss = loss_fn()
        loss.backward()
        return loss

    losses.append(lbfgs.step(closure).item())
    losses.append(lbfgs.step(closure).item())
    return losses, [p.detach().numpy() for p in m.parameters()]


def test_burgers_pinn_adam_then_lbfgs_matches_torch():
    tm, rm = _synced(_pinn_net)
    tl, tp = _burgers_program(torch, tm)
    rl, rp = _burgers_program(rg, rm)
    _same_run(rl, rp, tl, tp, 1e-8, 1e-7)


def _deq_net(lib):
    nn = lib.nn

    class DEQ(nn.Module):
        """Fixed point z = tanh(W z + U x) under no_grad; the implicit backward solves
        g = J^T g + grad by a hook that calls autograd.grad with a vector."""

        def __init__(self, d=5):
            super().__init__()
            self.f = nn.Linear(d, d, bias=False)
            self.u = nn.Linear(d, d)

        def cell(self, z, x):
            return lib.tanh(0.3 * self.f(z) + self.u(x))

        def forward(self, x):
            with lib.no_grad():
                z = lib.zeros_like(x)
                for _ in range(100):
                    z_new = self.cell(z, x)
                    done = lib.norm(z_new - z) < 1e-12
                    z = z_new
                    if done:
                        break
            z = self.cell(z, x)
            z0 = z.clone().detach().requires_grad_()
            f0 = self.cell(z0, x)

            def backward_hook(grad):
                g = grad
                for _ in range(100):
                    g_new = lib.autograd.grad(f0, z0, g, retain_graph=True)[0] + grad
                    done = lib.norm(g_new - g) < 1e-12
                    g = g_new
                    if done:
                        break
                return g

            z.register_hook(backward_hook)
            return z

    return DEQ().double()


def _deq_program(lib, m):
    rs = np.random.RandomState(4)
    x, y = lib.tensor(rs.randn(4, 5)), lib.tensor(rs.randn(4, 5))
    opt = lib.optim.SGD(m.parameters(), lr=0.05, momentum=0.9, nesterov=True)
    losses, grads = [], []
    for _ in range(4):
        loss = ((m(x) - y) ** 2).sum()
        opt.zero_grad()
        loss.backward()
        grads.append([p.grad.detach().numpy().copy() for p in m.parameters()])
        opt.step()
        losses.append(loss.item())
    return losses, grads


def test_deep_equilibrium_implicit_backward_matches_torch():
    tm, rm = _synced(_deq_net)
    tl, tg = _deq_program(torch, tm)
    rl, rgr = _deq_program(rg, rm)
    np.testing.assert_allclose(rl, tl, rtol=1e-10)
    for a_step, b_step in zip(rgr, tg):
        for a, b in zip(a_step, b_step):
            close(a, b, tol=1e-9)


_SWEEP = [("SGD", dict(lr=0.1, momentum=0.9, dampening=0.1, weight_decay=1e-3)),
          ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, maximize=True)),
          ("Adam", dict(lr=0.01, amsgrad=True, weight_decay=0.01, betas=(0.8, 0.9))),
          ("AdamW", dict(lr=0.01, amsgrad=True, maximize=True, foreach=True)),
          ("RAdam", dict(lr=0.01, decoupled_weight_decay=True, weight_decay=0.1)),
          ("NAdam", dict(lr=0.01, momentum_decay=0.01, decoupled_weight_decay=True,
                         weight_decay=0.1)),
          ("Adadelta", dict(lr=0.5, rho=0.8, weight_decay=0.1)),
          ("Adagrad", dict(lr=0.1, lr_decay=0.01, initial_accumulator_value=0.1)),
          ("Adamax", dict(lr=0.01, weight_decay=0.1)),
          ("ASGD", dict(lr=0.01, t0=5, lambd=1e-3, alpha=0.5, weight_decay=0.01)),
          ("Rprop", dict(lr=0.01, etas=(0.3, 1.5), step_sizes=(1e-4, 1.0))),
          ("RMSprop", dict(lr=0.01, centered=True, momentum=0.9, weight_decay=0.1))]


def _sweep_program(lib, name, kw):
    """Two parameter groups (the second with its own lr and weight decay), a StepLR, and
    a hand change of every group's lr midway: 20 steps."""
    m = _mlp(lib)
    X, Y = _data()
    x, y = lib.tensor(X), lib.tensor(Y)
    opt = getattr(lib.optim, name)([{"params": m[0].parameters()},
                                    {"params": m[2].parameters(), "lr": 0.02,
                                     "weight_decay": 0.05}], **kw)
    sched = lib.optim.lr_scheduler.StepLR(opt, 4, gamma=0.5)
    losses = []
    for i in range(20):
        opt.zero_grad()
        loss = lib.nn.functional.mse_loss(m(x), y)
        loss.backward()
        opt.step()
        sched.step()
        losses.append(loss.item())
        if i == 10:
            for g in opt.param_groups:
                g["lr"] *= 2
    return losses, [p.detach().numpy() for p in m.parameters()]


@pytest.mark.parametrize("name,kw", _SWEEP, ids=[f"{n}-{i}" for i, (n, _) in enumerate(_SWEEP)])
def test_optimizer_sweep_with_groups_and_schedule_matches_torch(name, kw):
    tl, tp = _sweep_program(torch, name, kw)
    rl, rp = _sweep_program(rg, name, kw)
    _same_run(rl, rp, tl, tp, 1e-10, 1e-9)


def _scheduler_warnings(lib, case):
    import warnings

    m = _mlp(lib)
    opt = lib.optim.SGD(m.parameters(), lr=0.1)
    if case == "plateau":
        sched = lib.optim.lr_scheduler.ReduceLROnPlateau(opt)
    else:
        sched = lib.optim.lr_scheduler.StepLR(opt, 2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if case == "before":  # the classic mistake: the schedule's first value is skipped
            sched.step()
        elif case == "after":
            opt.step()
            sched.step()
        elif case == "epoch":
            opt.step()
            sched.step(3)
        else:
            sched.step(1.0, epoch=2)
    return sorted({(w.category.__name__, str(w.message)[:40]) for w in caught})


@pytest.mark.parametrize("case", ["before", "after", "epoch", "plateau"])
def test_scheduler_warnings_match_torch(case):
    assert _scheduler_warnings(rg, case) == _scheduler_warnings(torch, case)


def _int_input_call(lib, name):
    x = lib.ones(3, dtype=lib.int64)
    F = lib.func
    if name == "vjp":
        return F.vjp(lambda v: v * 2, x)
    if name == "jvp":
        return F.jvp(lambda v: v * 2, (x,), (x,))
    if name == "linearize":
        return F.linearize(lambda v: v * 2, x)
    if name == "functional.jacobian":
        return lib.autograd.functional.jacobian(lambda v: v * 2, x)
    if name in ("grad", "grad_and_value", "hessian"):
        return getattr(F, name)(lambda v: (v * 2).sum())(x)
    return getattr(F, name)(lambda v: v * 2)(x)


@pytest.mark.parametrize("name", ["grad", "grad_and_value", "jacrev", "vjp", "jacfwd", "jvp",
                                  "hessian", "linearize", "functional.jacobian"])
def test_integer_inputs_to_transforms_raise_torchs_type(name):
    """A Newton solver handed an integer start point fails as in torch: RuntimeError in
    reverse mode, ValueError in forward mode (and TypeError, the contract, both ways)."""
    with pytest.raises(Exception) as t_err:
        _int_input_call(torch, name)
    with pytest.raises(TypeError) as r_err:
        _int_input_call(rg, name)
    assert isinstance(r_err.value, type(t_err.value))


def _get_lr_outside_step(lib, name):
    import warnings

    L = lib.optim.lr_scheduler
    m = _mlp(lib)
    opt = lib.optim.SGD(m.parameters(), lr=0.1)
    make = {"StepLR": lambda: L.StepLR(opt, 2), "OneCycleLR": lambda: L.OneCycleLR(opt, 1.0, 10),
            "CosineAnnealingWarmRestarts": lambda: L.CosineAnnealingWarmRestarts(opt, 3)}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sched = make[name]()
        for _ in range(3):
            opt.step()
            sched.step()
        inside = len(caught)
        lr = sched.get_lr()  # logging code calling get_lr() instead of get_last_lr()
    return inside, len(caught), lr


@pytest.mark.parametrize("name", ["StepLR", "OneCycleLR", "CosineAnnealingWarmRestarts"])
def test_get_lr_outside_step_warns_as_torch(name):
    ti, tn, tlr = _get_lr_outside_step(torch, name)
    ri, rn, rlr = _get_lr_outside_step(rg, name)
    assert (ri, rn) == (ti, tn)
    np.testing.assert_allclose(rlr, tlr, rtol=1e-12)


def _orthogonal_no_trivialization(lib, orthogonal_map, shape):
    """An orthogonal layer (Cayley / matrix-exp map without the trivialization, as in
    Lipschitz-constrained and Hamiltonian nets): registering it cannot invert the map, which
    torch skips (the original weight is kept as it is), then a few Adam steps."""
    rs = np.random.RandomState(23)
    lin = lib.nn.Linear(shape[1], shape[0]).double()
    with lib.no_grad():
        lin.weight.copy_(lib.tensor(rs.randn(*shape)))
        lin.bias.copy_(lib.tensor(rs.randn(shape[0])))
    lib.nn.utils.parametrizations.orthogonal(lin, orthogonal_map=orthogonal_map,
                                             use_trivialization=False)
    x, y = lib.tensor(rs.randn(8, shape[1])), lib.tensor(rs.randn(8, shape[0]))
    opt = lib.optim.Adam(lin.parameters(), lr=0.05)
    losses = []
    for _ in range(4):
        opt.zero_grad()
        loss = ((lin(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, lin.weight.detach().numpy()


@pytest.mark.parametrize("orthogonal_map", ["cayley", "matrix_exp", "householder"])
@pytest.mark.parametrize("shape", [(5, 5), (5, 3)])
def test_orthogonal_without_trivialization_matches_torch(orthogonal_map, shape):
    tl, tw = _orthogonal_no_trivialization(torch, orthogonal_map, shape)
    rl, rw = _orthogonal_no_trivialization(rg, orthogonal_map, shape)
    np.testing.assert_allclose(rl, tl, rtol=1e-9)
    close(rw, tw, tol=1e-9)
