"""Gaps found by running PyTorch's OptimizerInfo database (optim_db: every optimizer with its
argument combinations and its bad arguments) and the LR schedulers on retrograd: each case
is rebuilt by hand and compared with torch computed here (parameters, state, exception
types)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import retrograd as rg


def _params(lib, complex_: bool = True):
    """The same float64 parameters in torch or retrograd: a matrix, a vector, a 0-d one and
    (optionally) a complex one."""
    rs = np.random.RandomState(0)
    arrs = [rs.randn(3, 4), rs.randn(5), np.array(rs.randn())]
    if complex_:
        arrs.append(rs.randn(2, 3) + 1j * rs.randn(2, 3))
    if lib is torch:
        return [torch.nn.Parameter(torch.tensor(a)) for a in arrs]
    return [rg.nn.Parameter(rg.tensor(a)) for a in arrs]


def _loss(lib, params, k: int):
    """A smooth loss whose gradient changes with the step k (real and complex parts)."""
    tot = 0
    for i, p in enumerate(params):
        c = 0.3 * (i + 1) * (-1) ** k + 0.1 * k
        if p.is_complex():
            tot = tot + ((p * p.conj()).real * (1 + 0.1 * i)).sum() + (p.real * c).sum()
        else:
            tot = tot + (lib.sin(p) * c).sum() + 0.5 * (p * p).sum()
    return tot


def _steps(lib, opt, params, ks, closure: bool = False) -> None:
    for k in ks:
        def clos(k=k):
            opt.zero_grad()
            lo = _loss(lib, params, k)
            lo.backward()
            return lo
        if closure:
            opt.step(clos)
        else:
            clos()
            opt.step()


def _to_rg(x):
    """A torch state_dict (or part) with its tensors as retrograd tensors."""
    if isinstance(x, torch.Tensor):
        return rg.tensor(x.detach().numpy().copy())
    if isinstance(x, dict):
        return {k: _to_rg(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return type(x)(_to_rg(v) for v in x)
    return x


def _same_params(tp, rp, rtol: float = 1e-9) -> None:
    for a, b in zip(tp, rp):
        np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), rtol=rtol,
                                   atol=1e-12)


# --------------------------------------------- load_state_dict into a complex parameter

@pytest.mark.parametrize("name", ["ASGD", "NAdam"])
def test_loading_real_state_into_complex_param_keeps_its_dtype(name):
    """PyTorch casts loaded state to the parameter's dtype only for a real floating
    parameter: a complex one keeps ASGD's float32 eta/mu and NAdam's mu_product real (they
    were cast to complex128, and the next step failed with float() of a complex)."""
    tp, rp = _params(torch), _params(rg)
    to = getattr(torch.optim, name)(tp, lr=0.01)
    _steps(torch, to, tp, range(3))
    sd = to.state_dict()
    tp2 = [torch.nn.Parameter(p.detach().clone()) for p in tp]
    rp2 = [rg.nn.Parameter(rg.tensor(p.detach().numpy().copy())) for p in tp]
    del rp
    to2 = getattr(torch.optim, name)(tp2, lr=0.01)
    ro2 = getattr(rg.optim, name)(rp2, lr=0.01)
    to2.load_state_dict(sd)
    ro2.load_state_dict(_to_rg(sd))
    for k, v in to2.state[tp2[3]].items():
        assert str(ro2.state[rp2[3]][k].dtype) == str(v.dtype).split(".")[1], k
    _steps(torch, to2, tp2, range(3, 5))
    _steps(rg, ro2, rp2, range(3, 5))
    _same_params(tp2, rp2)


# -------------------------------------------------------------------- Tensor lr

def test_lbfgs_takes_a_tensor_lr():
    """LBFGS(lr=tensor) works in torch (it was refused): same steps, and the step size t in
    the state is a Tensor as torch's."""
    tp, rp = _params(torch, False), _params(rg, False)
    to = torch.optim.LBFGS(tp, lr=torch.tensor(0.5), max_iter=4)
    ro = rg.optim.LBFGS(rp, lr=rg.tensor(0.5), max_iter=4)
    _steps(torch, to, tp, range(2), closure=True)
    _steps(rg, ro, rp, range(2), closure=True)
    _same_params(tp, rp, rtol=1e-7)
    t_t, t_r = to.state[tp[0]]["t"], ro.state[rp[0]]["t"]
    assert isinstance(t_t, torch.Tensor) and isinstance(t_r, rg.Tensor)
    assert str(t_r.dtype) == "float32" and float(t_r) == pytest.approx(float(t_t))


def test_lbfgs_tensor_lr_with_scheduler_as_torch():
    """With a Tensor lr, torch's LBFGS saves t = lr, the lr Tensor itself, so the scheduler's
    in-place update of the lr shows in the next step's curvature pair s = d * t: retrograd
    saved a copy, and the runs parted after the first scheduler step."""
    seqs = []
    for lib in (torch, rg):
        p = lib.nn.Parameter(lib.tensor([1.5, -2.0, 0.7], dtype=lib.float64))
        opt = lib.optim.LBFGS([p], lr=lib.tensor(1.0), max_iter=5)
        sched = lib.optim.lr_scheduler.ExponentialLR(opt, gamma=0.5)
        for k in range(3):
            def clos(k=k, opt=opt, p=p, lib=lib):
                opt.zero_grad()
                lo = ((p - 1) ** 4).sum() + (lib.sin(p) * (k + 1)).sum()
                lo.backward()
                return lo
            opt.step(clos)
            sched.step()
        assert opt.state[p]["t"] is opt.param_groups[0]["lr"]
        seqs.append(p.detach().numpy().copy())
    np.testing.assert_allclose(seqs[1], seqs[0], rtol=1e-10)


@pytest.mark.parametrize("max_iter", [1, 3])
@pytest.mark.parametrize("lr", [1, 0.5])
def test_lbfgs_step_size_state_type_as_torch(lr, max_iter):
    """LBFGS's saved step size `t`: a 0-d Tensor after the first iteration's
    min(1, 1/|g|_1) * lr (retrograd saved a float), the plain lr later, as torch's."""
    got = []
    for lib in (torch, rg):
        p = lib.nn.Parameter(lib.tensor([3.0, -6.0, 1.5], dtype=lib.float64))
        opt = lib.optim.LBFGS([p], lr=lr, max_iter=max_iter)

        def clos(opt=opt, p=p):
            opt.zero_grad()
            lo = ((p - 1) ** 4).sum() + (p ** 2).sum()
            lo.backward()
            return lo
        opt.step(clos)
        t = opt.state[p]["t"]
        got.append((type(t).__name__, str(getattr(t, "dtype", "")).replace("torch.", ""),
                    float(t)))
    assert got[1][:2] == got[0][:2] and got[1][2] == pytest.approx(got[0][2], rel=1e-12)


@pytest.mark.parametrize("name", ["SparseAdam", "Adafactor"])
def test_tensor_lr_accepted_by_constructor(name):
    """SparseAdam and Adafactor take a 1-element Tensor lr, as torch's (they refused it)."""
    to = getattr(torch.optim, name)(_params(torch, False), lr=torch.tensor(0.01))
    ro = getattr(rg.optim, name)(_params(rg, False), lr=rg.tensor(0.01))
    assert float(ro.param_groups[0]["lr"]) == pytest.approx(float(to.param_groups[0]["lr"]))


def test_adafactor_tensor_lr_steps_as_torch():
    tp, rp = _params(torch, False), _params(rg, False)
    to = torch.optim.Adafactor(tp, lr=torch.tensor(0.01, dtype=torch.float64))
    ro = rg.optim.Adafactor(rp, lr=rg.tensor(0.01, dtype=rg.float64))
    _steps(torch, to, tp, range(3))
    _steps(rg, ro, rp, range(3))
    _same_params(tp, rp)


@pytest.mark.parametrize("name", ["Muon", "Adafactor", "SparseAdam", "LBFGS"])
def test_two_element_tensor_lr_is_a_value_error(name):
    """A Tensor lr with 2 elements: torch's ValueError (Muon raised a RuntimeError from
    bool())."""
    lr_t = torch.tensor([1e-3, 1e-3])
    with pytest.raises(ValueError, match="1-element"):
        getattr(torch.optim, name)([torch.nn.Parameter(torch.ones(2, 2))], lr=lr_t)
    with pytest.raises(ValueError, match="1-element"):
        getattr(rg.optim, name)([rg.nn.Parameter(rg.ones(2, 2))], lr=rg.tensor([1e-3, 1e-3]))


@pytest.mark.parametrize("name", ["Adam", "AdamW"])
def test_adam_tensor_lr_or_betas_with_foreach_refused(name):
    """Adam/AdamW refuse a Tensor lr (or Tensor betas) with foreach=True and capturable=False
    with ValueError, as torch (a Tensor lr was accepted; Tensor betas gave a TypeError)."""
    for kw_t, kw_r in [(dict(lr=torch.tensor(1e-3)), dict(lr=rg.tensor(1e-3))),
                       (dict(betas=(torch.tensor(0.9), torch.tensor(0.99))),
                        dict(betas=(rg.tensor(0.9), rg.tensor(0.99))))]:
        with pytest.raises(ValueError, match="foreach=True") as et:
            getattr(torch.optim, name)([torch.nn.Parameter(torch.ones(2))], foreach=True, **kw_t)
        with pytest.raises(ValueError, match="foreach=True") as er:
            getattr(rg.optim, name)([rg.nn.Parameter(rg.ones(2))], foreach=True, **kw_r)
        assert str(er.value).split(" as a")[0] == str(et.value).split(" as a")[0]


@pytest.mark.parametrize("kw", [dict(), dict(amsgrad=True), dict(weight_decay=0.1),
                                dict(fused=True), dict(maximize=True)])
@pytest.mark.parametrize("name", ["Adam", "AdamW"])
@pytest.mark.parametrize("bdtype", ["float32", "float64"])
def test_adam_tensor_betas_step_as_torch(name, kw, bdtype):
    """Tensor betas (torch takes them; retrograd raised TypeError): float32 ones make the bias
    corrections float32 (the cube as b*b*b, lr / bc as reciprocal * lr), as torch's
    single-tensor step; its fused step reads them as doubles. Kept as 0-d Tensors."""
    tp, rp = _params(torch, not kw.get("fused")), _params(rg, not kw.get("fused"))
    to = getattr(torch.optim, name)(tp, lr=0.01, betas=(
        torch.tensor([0.9], dtype=getattr(torch, bdtype)),
        torch.tensor(0.999, dtype=getattr(torch, bdtype))), **kw)
    ro = getattr(rg.optim, name)(rp, lr=0.01, betas=(
        rg.tensor([0.9], dtype=bdtype), rg.tensor(0.999, dtype=bdtype)), **kw)
    _steps(torch, to, tp, range(1))  # step 1: beta ** 1 is exact on every CPU
    _steps(rg, ro, rp, range(1))
    _same_params(tp, rp, rtol=1e-13)  # float64 bias corrections would be ~1e-9 off here
    # later steps: torch's float32 beta ** step is its vectorised pow, whose last bit
    # depends on the CPU (0.999 ** 3 differs by an ulp between AVX2 and AVX-512 hosts)
    _steps(torch, to, tp, range(1, 4))
    _steps(rg, ro, rp, range(1, 4))
    _same_params(tp, rp, rtol=1e-13 if bdtype == "float64" else 1e-7)
    b = ro.param_groups[0]["betas"]
    assert isinstance(b[0], rg.Tensor) and b[0].shape == () and str(b[0].dtype) == bdtype


def test_adam_two_element_tensor_beta_is_a_runtime_error():
    """torch's range check on a 2-element beta fails as bool() of a Tensor: RuntimeError."""
    for lib in (torch, rg):
        with pytest.raises(RuntimeError):
            lib.optim.Adam([lib.nn.Parameter(lib.ones(2))],
                           betas=(lib.tensor([0.9, 0.9]), lib.tensor(0.99)))


# ----------------------------------------------------------------- named parameters

def test_named_and_unnamed_params_mixed_is_a_value_error():
    for lib in (torch, rg):
        w, b = lib.nn.Parameter(lib.ones(2)), lib.nn.Parameter(lib.ones(2))
        with pytest.raises(ValueError, match="Some param names are missing"):
            lib.optim.SGD([("weight", w), b], lr=0.1)


def test_param_groups_with_and_without_names_refused():
    """A group with names added to an optimizer whose groups have none (and the reverse):
    torch's ValueError (retrograd accepted both)."""
    for lib in (torch, rg):
        w, b = lib.nn.Parameter(lib.ones(2)), lib.nn.Parameter(lib.ones(2))
        with pytest.raises(ValueError, match="cannot add param group with names"):
            lib.optim.Adam([{"params": [w], "lr": 0.01}, {"params": [("bias", b)]}])
        w, b = lib.nn.Parameter(lib.ones(2)), lib.nn.Parameter(lib.ones(2))
        opt = lib.optim.SGD([("weight", w)], lr=0.1)
        with pytest.raises(ValueError, match="cannot add param group without names"):
            opt.add_param_group({"params": [b]})


def test_param_group_params_as_a_set_is_a_type_error():
    """A group's params given as a set (unordered): torch's TypeError."""
    for lib in (torch, rg):
        with pytest.raises(TypeError, match="ordered collections"):
            lib.optim.SGD([{"params": {lib.nn.Parameter(lib.ones(2))}}], lr=0.1)


# ------------------------------------------------------------------------ swa_utils

def _swalr(lib, strategy: str):
    p = lib.nn.Parameter(lib.ones(2, dtype=lib.float64))
    opt = lib.optim.SGD([p], lr=0.5)
    return opt, lib.optim.swa_utils.SWALR(opt, swa_lr=0.05, anneal_epochs=4,
                                          anneal_strategy=strategy)


def test_swalr_state_dict_saves_the_strategy_by_name():
    """SWALR's state_dict holds `_anneal_strategy`, not the `anneal_func` function (which
    rg.save cannot write), and loading it restores the function: a checkpoint of a 'linear'
    SWALR loaded into a 'cos' one anneals linearly, as torch's."""
    seqs = {}
    for lib in (torch, rg):
        opt, lin = _swalr(lib, "linear")
        for _ in range(2):
            opt.step()
            lin.step()
        sd = lin.state_dict()
        assert "anneal_func" not in sd and sd["_anneal_strategy"] == "linear"
        opt2, cos = _swalr(lib, "cos")
        opt2.load_state_dict(opt.state_dict())
        cos.load_state_dict(sd)
        seq = []
        for _ in range(4):
            opt2.step()
            cos.step()
            seq.append(float(opt2.param_groups[0]["lr"]))
        seqs[lib] = seq
    np.testing.assert_allclose(seqs[rg], seqs[torch], rtol=1e-12)


def test_swa_multi_avg_fn_weight_as_torch():
    """get_swa_multi_avg_fn with AveragedModel's int64 count: torch's 1 / (n + 1) is a
    float32 weight (1/3 rounded), so the float64 average differs from the exact one by ~1e-9;
    retrograd used the exact weight."""
    rs = np.random.RandomState(0)
    ws = [rs.randn(4, 3) for _ in range(4)]
    out = {}
    for lib in (torch, rg):
        m = lib.nn.Linear(3, 4, bias=False).double()
        avg = lib.optim.swa_utils.AveragedModel(
            m, multi_avg_fn=lib.optim.swa_utils.get_swa_multi_avg_fn())
        for w in ws:
            with lib.no_grad():
                m.weight.copy_(lib.tensor(w))
            avg.update_parameters(m)
        out[lib] = avg.module.weight.detach().numpy()
    np.testing.assert_allclose(out[rg], out[torch], rtol=0, atol=1e-15)


# --------------------------------------------------- load_state_dict's param groups

def test_loaded_groups_are_copies_of_the_saved_ones():
    """torch's load_state_dict deep-copies the saved groups: a Tensor lr (or betas) is not
    shared with the optimizer saved, so a scheduler stepping that one leaves the loaded one
    alone (retrograd shared them), and a key the saved group lacks is dropped."""
    got = []
    for lib in (torch, rg):
        p, q = lib.nn.Parameter(lib.ones(2)), lib.nn.Parameter(lib.ones(2))
        kw = dict(lr=lib.tensor(0.01), betas=(lib.tensor(0.9), lib.tensor(0.99)))
        o1 = lib.optim.Adam([p], **kw)
        o2 = lib.optim.Adam([q], lr=lib.tensor(0.02))
        o2.param_groups[0]["custom"] = 1
        o2.load_state_dict(o1.state_dict())
        sched = lib.optim.lr_scheduler.StepLR(o1, 1, 0.5)
        p.grad = lib.ones(2)
        o1.step()
        sched.step()
        g1, g2 = o1.param_groups[0], o2.param_groups[0]
        got.append((float(g1["lr"]), float(g2["lr"]), g2["lr"] is g1["lr"],
                    g2["betas"][0] is g1["betas"][0], "custom" in g2, sorted(g2)))
    assert got[1] == got[0]


# ------------------------------------------------------------- a number "step" loaded

@pytest.mark.parametrize("name", ["Adam", "RMSprop", "NAdam", "Adagrad", "Rprop"])
def test_loaded_number_step_becomes_a_float32_tensor(name):
    """An old checkpoint's "step" saved as a number: torch's __setstate__ makes it a 0-d
    float32 Tensor on load (retrograd kept the number until the next step)."""
    got = []
    for lib in (torch, rg):
        p = lib.nn.Parameter(lib.tensor(np.arange(4.0)))
        opt = getattr(lib.optim, name)([p], lr=0.01)
        _steps(lib, opt, [p], range(2))
        sd = opt.state_dict()
        st = {k: (float(v) if k == "step" else v) for k, v in sd["state"][0].items()}
        sd = {"state": {0: st}, "param_groups": sd["param_groups"]}
        p2 = lib.nn.Parameter(lib.tensor(np.arange(4.0)))
        opt2 = getattr(lib.optim, name)([p2], lr=0.01)
        opt2.load_state_dict(sd)
        s = opt2.state_dict()["state"][0]["step"]
        got.append((type(s).__name__, str(s.dtype).replace("torch.", ""), float(s)))
    assert got[1] == got[0]


# ------------------------------------------------------------ whole-program comparisons

def _sd_close(a, b) -> None:
    """A torch optimizer/scheduler state (or part) and retrograd's: same structure, types
    and values."""
    if isinstance(a, torch.Tensor):
        assert isinstance(b, rg.Tensor) and tuple(a.shape) == tuple(b.shape)
        assert str(a.dtype).split(".")[1] == str(b.dtype)
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-9, atol=1e-12)
    elif isinstance(a, dict):
        assert set(a) == set(b), (sorted(map(str, a)), sorted(map(str, b)))
        for k in a:
            _sd_close(a[k], b[k])
    elif isinstance(a, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b)
        for x, y in zip(a, b):
            _sd_close(x, y)
    elif isinstance(a, float):
        assert isinstance(b, float) and b == pytest.approx(a, rel=1e-9, abs=1e-15)
    else:
        assert type(a) is type(b) and a == b, (a, b)


_DB = [("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.1)),
       ("Adam", dict(amsgrad=True, weight_decay=0.1)), ("AdamW", dict(lr=0.01)),
       ("RMSprop", dict(centered=True, momentum=0.1)), ("Adagrad", dict(lr_decay=0.5)),
       ("Adamax", dict(maximize=True)), ("NAdam", dict(decoupled_weight_decay=True,
                                                       weight_decay=0.1)),
       ("RAdam", dict(weight_decay=0.1)), ("Adadelta", dict(rho=0.95)),
       ("Rprop", dict(etas=(0.5, 1.5))), ("ASGD", dict(t0=2)), ("Adafactor", dict(lr=0.01))]


@pytest.mark.parametrize("name,kw", _DB, ids=[n for n, _ in _DB])
def test_optim_db_program_steps_state_and_round_trip(name, kw):
    """optim_db in miniature: matrix, vector, 0-d and complex parameters in two groups, 4
    steps, the whole state_dict, then torch's state_dict loaded into a fresh retrograd
    optimizer and 2 more steps."""
    cplx = name != "Adafactor"
    tp, rp = _params(torch, cplx), _params(rg, cplx)

    def groups(ps):
        return [{"params": ps[:2]}, {"params": ps[2:], "lr": 0.05}]
    to = getattr(torch.optim, name)(groups(tp), **kw)
    ro = getattr(rg.optim, name)(groups(rp), **kw)
    _steps(torch, to, tp, range(4))
    _steps(rg, ro, rp, range(4))
    _same_params(tp, rp)
    _sd_close(to.state_dict(), ro.state_dict())
    rp2 = [rg.nn.Parameter(rg.tensor(p.detach().numpy().copy())) for p in tp]
    ro2 = getattr(rg.optim, name)(groups(rp2), **kw)
    ro2.load_state_dict(_to_rg(to.state_dict()))
    _steps(torch, to, tp, range(4, 6))
    _steps(rg, ro2, rp2, range(4, 6))
    _same_params(tp, rp2)


def test_training_loop_param_groups_schedulers_program():
    """A GPT-style loop: AdamW with a no-decay group, linear warmup then cosine
    (SequentialLR), gradient clipping; losses, lrs, weights and the scheduler's state."""
    torch.manual_seed(0)
    tm = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))
    tm = tm.double()
    rm = rg.nn.Sequential(rg.nn.Linear(4, 8), rg.nn.Tanh(), rg.nn.Linear(8, 3)).double()
    rm.load_state_dict({k: rg.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    rs = np.random.RandomState(1)
    x, y = rs.randn(16, 4), rs.randint(0, 3, 16)
    out = {}
    for lib, m in ((torch, tm), (rg, rm)):
        decay = [p for n, p in m.named_parameters() if n.endswith("weight")]
        no_decay = [p for n, p in m.named_parameters() if n.endswith("bias")]
        opt = lib.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                               {"params": no_decay, "weight_decay": 0.0}], lr=3e-2,
                              betas=(0.9, 0.95))
        sched = lib.optim.lr_scheduler.SequentialLR(opt, [
            lib.optim.lr_scheduler.LinearLR(opt, start_factor=0.1, total_iters=3),
            lib.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=7, eta_min=1e-3)],
            milestones=[3])
        xs, ys = lib.tensor(x), lib.tensor(y)
        losses, lrs = [], []
        for _ in range(10):
            opt.zero_grad()
            loss = lib.nn.functional.cross_entropy(m(xs), ys)
            loss.backward()
            lib.nn.utils.clip_grad_norm_(m.parameters(), 0.5)
            opt.step()
            sched.step()
            losses.append(loss.item())
            lrs.append(sched.get_last_lr())
        sd = sched.state_dict()
        out[lib] = (losses, lrs, [p.detach().numpy() for p in m.parameters()],
                    {k: v for k, v in sd.items() if k != "_schedulers"}, sd["_schedulers"])
    (tl, tlr, tw, tsd, tsub), (rl, rlr, rw, rsd, rsub) = out[torch], out[rg]
    np.testing.assert_allclose(rl, tl, rtol=1e-10)
    np.testing.assert_allclose(rlr, tlr, rtol=1e-12)
    for a, b in zip(tw, rw):
        np.testing.assert_allclose(b, a, rtol=1e-9, atol=1e-12)
    _sd_close(tsd, rsd)
    _sd_close(tsub, rsub)


def test_swa_ema_program():
    """The torch docs' SWA recipe plus an EMA copy: SGD with CosineAnnealingLR, then SWALR
    and AveragedModel (running mean via get_swa_multi_avg_fn, EMA with buffers), update_bn,
    and the averaged models' outputs and state."""
    torch.manual_seed(0)

    def build(lib):
        nn = lib.nn
        return nn.Sequential(nn.Linear(4, 6), nn.BatchNorm1d(6), nn.ReLU(), nn.Linear(6, 2))
    tm = build(torch).double()
    rm = build(rg).double()
    rm.load_state_dict({k: rg.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    rs = np.random.RandomState(2)
    x, y = rs.randn(24, 4), rs.randint(0, 2, 24)
    out = {}
    for lib, m in ((torch, tm), (rg, rm)):
        su = lib.optim.swa_utils
        swa = su.AveragedModel(m, multi_avg_fn=su.get_swa_multi_avg_fn())
        ema = su.AveragedModel(m, multi_avg_fn=su.get_ema_multi_avg_fn(0.9), use_buffers=True)
        opt = lib.optim.SGD(m.parameters(), lr=0.2, momentum=0.9)
        cos = lib.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=6)
        swalr = su.SWALR(opt, swa_lr=0.05, anneal_epochs=2, anneal_strategy="linear")
        xs, ys = lib.tensor(x), lib.tensor(y)
        lrs = []
        for epoch in range(7):
            for b in range(0, 24, 8):
                opt.zero_grad()
                lib.nn.functional.cross_entropy(m(xs[b:b + 8]), ys[b:b + 8]).backward()
                opt.step()
                ema.update_parameters(m)
            if epoch >= 3:
                swa.update_parameters(m)
                swalr.step()
            else:
                cos.step()
            lrs.append(opt.param_groups[0]["lr"])
        su.update_bn([(xs[b:b + 8], ys[b:b + 8]) for b in range(0, 24, 8)], swa)
        swa.eval()
        ema.eval()
        out[lib] = (lrs, swa(xs).detach().numpy(), ema(xs).detach().numpy(),
                    swa.state_dict(), ema.state_dict())
    (tl, ts, te, tsd, ted), (rl, rs_, re_, rsd, red) = out[torch], out[rg]
    np.testing.assert_allclose(rl, tl, rtol=1e-12)
    np.testing.assert_allclose(rs_, ts, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(re_, te, rtol=1e-9, atol=1e-12)
    _sd_close(tsd, rsd)
    _sd_close(ted, red)
