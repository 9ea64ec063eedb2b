"""rg.optim.lr_scheduler against torch.optim.lr_scheduler: the learning rates (and, for
OneCycleLR, momentum) over 40 steps, the keys of state_dict, resuming from a state_dict,
and bad arguments."""

import math

import numpy as np
import pytest
import torch
from torch.optim import lr_scheduler as TL

import retrograd as rg
from retrograd.optim import lr_scheduler as L


def _opts(kind="SGD", groups=2):
    ws = [rg.zeros(2, requires_grad=True) for _ in range(groups)]
    ts = [torch.zeros(2, requires_grad=True) for _ in range(groups)]
    kw = {"momentum": 0.9} if kind == "SGD" else {}
    opt = getattr(rg.optim, kind)([{"params": [w], "lr": 0.1 * (i + 1)}
                                   for i, w in enumerate(ws)], lr=0.1, **kw)
    opt_t = getattr(torch.optim, kind)([{"params": [t], "lr": 0.1 * (i + 1)}
                                        for i, t in enumerate(ts)], lr=0.1, **kw)
    return opt, opt_t


def _lambda(e):
    return 0.95 ** e + 0.01 * (e % 3)


SCHEDULES = {
    "StepLR": lambda L, o: L.StepLR(o, 4, gamma=0.5),
    "MultiStepLR": lambda L, o: L.MultiStepLR(o, [3, 7, 7, 20], gamma=0.3),
    "ExponentialLR": lambda L, o: L.ExponentialLR(o, 0.9),
    "CosineAnnealingLR": lambda L, o: L.CosineAnnealingLR(o, 10, eta_min=0.001),
    "LinearLR": lambda L, o: L.LinearLR(o, start_factor=0.2, total_iters=8),
    "LambdaLR": lambda L, o: L.LambdaLR(o, _lambda),
    "OneCycleLR": lambda L, o: L.OneCycleLR(o, [1.0, 2.0], total_steps=41),
    "OneCycleLR-linear-3": lambda L, o: L.OneCycleLR(o, 1.0, total_steps=41,
                                                     anneal_strategy="linear",
                                                     three_phase=True),
    "SequentialLR": lambda L, o: L.SequentialLR(
        o, [L.LinearLR(o, start_factor=0.1, total_iters=5), L.ExponentialLR(o, 0.9),
            L.CosineAnnealingLR(o, 6)], milestones=[5, 15]),
}


@pytest.mark.parametrize("name", list(SCHEDULES))
@pytest.mark.parametrize("kind", ["SGD", "Adam"])
def test_learning_rates_match_torch_over_40_steps(name, kind):
    opt, opt_t = _opts(kind)
    sched, sched_t = SCHEDULES[name](L, opt), SCHEDULES[name](TL, opt_t)
    for _ in range(40):
        assert sched.get_last_lr() == pytest.approx(sched_t.get_last_lr(), rel=1e-12, abs=0)
        for g, gt in zip(opt.param_groups, opt_t.param_groups):
            assert g["lr"] == pytest.approx(gt["lr"], rel=1e-12)
            if kind == "SGD":
                assert g["momentum"] == pytest.approx(gt["momentum"], rel=1e-12)
            else:
                assert g["betas"] == pytest.approx(gt["betas"], rel=1e-12)
        opt.step()
        opt_t.step()
        sched.step()
        sched_t.step()
    assert sched.last_epoch == sched_t.last_epoch
    assert list(sched.state_dict()) == list(sched_t.state_dict())


def test_step_with_epoch_uses_the_closed_form():
    for make in (lambda L, o: L.StepLR(o, 3), lambda L, o: L.CosineAnnealingLR(o, 8),
                 lambda L, o: L.ExponentialLR(o, 0.8), lambda L, o: L.LinearLR(o),
                 lambda L, o: L.MultiStepLR(o, [2, 5])):
        opt, opt_t = _opts()
        sched, sched_t = make(L, opt), make(TL, opt_t)
        for epoch in (5, 2, 9):
            sched.step(epoch)
            with pytest.warns(UserWarning):
                sched_t.step(epoch)
            assert sched.get_last_lr() == pytest.approx(sched_t.get_last_lr(), rel=1e-12)


@pytest.mark.parametrize("mode,threshold_mode", [("min", "rel"), ("max", "abs")])
def test_reduce_lr_on_plateau_matches_torch(mode, threshold_mode):
    opt, opt_t = _opts()
    kw = dict(mode=mode, factor=0.5, patience=2, threshold=0.01, threshold_mode=threshold_mode,
              cooldown=1, min_lr=[0.01, 0.02])
    sched, sched_t = L.ReduceLROnPlateau(opt, **kw), TL.ReduceLROnPlateau(opt_t, **kw)
    metrics = [1.0, 0.9, 0.95, 0.92, 0.91, 0.99, 0.5, 0.5, 0.6, 0.7, 0.8, 0.4] * 3
    for m in metrics:
        sched.step(m)
        sched_t.step(m)
        assert sched.get_last_lr() == pytest.approx(sched_t.get_last_lr(), rel=1e-12)
        assert sched.num_bad_epochs == sched_t.num_bad_epochs
    assert list(sched.state_dict()) == list(sched_t.state_dict())
    assert min(sched.get_last_lr()) < 0.1  # it did reduce


@pytest.mark.parametrize("name", ["StepLR", "CosineAnnealingLR", "OneCycleLR", "SequentialLR",
                                  "LambdaLR"])
def test_state_dict_resumes_the_schedule(name):
    opt, _ = _opts()
    sched = SCHEDULES[name](L, opt)
    for _ in range(12):
        opt.step()
        sched.step()
    saved_opt, saved = opt.state_dict(), sched.state_dict()
    want = []
    for _ in range(10):
        opt.step()
        sched.step()
        want.append(sched.get_last_lr())
    opt2, _ = _opts()
    sched2 = SCHEDULES[name](L, opt2)
    opt2.load_state_dict(saved_opt)
    sched2.load_state_dict(saved)
    got = []
    for _ in range(10):
        opt2.step()
        sched2.step()
        got.append(sched2.get_last_lr())
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_bad_arguments_are_refused():
    opt, _ = _opts()
    with pytest.raises(TypeError, match="not an Optimizer"):
        L.StepLR(object(), 3)
    with pytest.raises(ValueError, match="start_factor"):
        L.LinearLR(opt, start_factor=0.0)
    with pytest.raises(ValueError, match="total_steps OR"):
        L.OneCycleLR(opt, 1.0)
    with pytest.raises(ValueError, match="Expected 2 lr_lambdas"):
        L.LambdaLR(opt, [_lambda])
    with pytest.raises(ValueError, match="milestone"):
        L.SequentialLR(opt, [L.StepLR(opt, 2), L.StepLR(opt, 3)], milestones=[])
    with pytest.raises(ValueError, match="factor"):
        L.ReduceLROnPlateau(opt, factor=1.5)
    one = L.OneCycleLR(opt, 1.0, total_steps=2)
    one.step()
    one.step()
    with pytest.raises(ValueError, match="Tried to step 3 times"):
        one.step()
    with pytest.raises(KeyError, match="initial_lr"):
        L.StepLR(_opts()[0], 3, last_epoch=4)
    assert math.isclose(L.StepLR(opt, 3).get_last_lr()[0], opt.param_groups[0]["lr"])
