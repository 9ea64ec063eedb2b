"""A learning rate given as a Tensor, as PyTorch allows: the steps compute with its value
in its own dtype (as torch's), schedulers fill it in place, and rg.jit refuses it."""

import numpy as np
import pytest
import torch

import retrograd as rg

OPTIMIZERS = ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adamax", "NAdam", "RAdam",
              "Adadelta", "ASGD", "Rprop"]
EXTRA = {"SGD": dict(momentum=0.9, weight_decay=0.01), "Adam": dict(weight_decay=0.01),
         "AdamW": dict(weight_decay=0.1), "RMSprop": dict(momentum=0.5)}

SCHEDULERS = {
    "StepLR": dict(step_size=2, gamma=0.5), "ExponentialLR": dict(gamma=0.9),
    "CosineAnnealingLR": dict(T_max=5), "LinearLR": dict(start_factor=0.5, total_iters=4),
    "MultiStepLR": dict(milestones=[2, 5]), "LambdaLR": dict(lr_lambda=lambda e: 0.9 ** e),
    "ConstantLR": dict(factor=0.5, total_iters=3),
    "PolynomialLR": dict(total_iters=6, power=2.0),
    "CosineAnnealingWarmRestarts": dict(T_0=3), "ReduceLROnPlateau": dict(patience=1),
    "OneCycleLR": dict(max_lr=0.5, total_steps=10),
    "CyclicLR": dict(base_lr=0.01, max_lr=0.1, step_size_up=2),
    "MultiplicativeLR": dict(lr_lambda=lambda e: 0.95),
}


def _train(lib, opt_name, dtype, lr_dtype, sched=None, steps=8):
    w = lib.nn.Parameter(lib.tensor(np.array([1.0, -2.0, 0.5]), dtype=getattr(lib, dtype)))
    lr = lib.tensor(0.1, dtype=getattr(lib, lr_dtype))
    opt = getattr(lib.optim, opt_name)([w], lr=lr, **EXTRA.get(opt_name, {}))
    s = None if sched is None else getattr(lib.optim.lr_scheduler, sched)(
        opt, **SCHEDULERS[sched])
    lrs = []
    for _ in range(steps):
        opt.zero_grad()
        (w ** 2).sum().backward()
        opt.step()
        if s is not None:
            s.step(0.5) if sched == "ReduceLROnPlateau" else s.step()
        group_lr = opt.param_groups[0]["lr"]
        assert group_lr is lr  # the user's tensor stays the group's, filled in place
        lrs.append(float(group_lr))
    return w.detach().numpy().copy(), lrs


@pytest.mark.parametrize("name", OPTIMIZERS)
@pytest.mark.parametrize("dtype,lr_dtype", [("float64", "float32"), ("float64", "float64"),
                                            ("float32", "float32")])
def test_steps_with_a_tensor_lr_as_torchs(name, dtype, lr_dtype):
    got, _ = _train(rg, name, dtype, lr_dtype)
    want, _ = _train(torch, name, dtype, lr_dtype)
    tol = 1e-13 if dtype == "float64" else 1e-6
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


@pytest.mark.parametrize("sched", sorted(SCHEDULERS))
def test_schedulers_fill_a_tensor_lr_in_place_as_torchs(sched):
    got, got_lrs = _train(rg, "SGD", "float64", "float32", sched)
    want, want_lrs = _train(torch, "SGD", "float64", "float32", sched)
    np.testing.assert_allclose(got_lrs, want_lrs, rtol=1e-7)
    np.testing.assert_allclose(got, want, rtol=1e-7)


@pytest.mark.parametrize("lib", [rg, torch], ids=["rg", "torch"])
def test_tensor_lr_checks_as_torchs(lib):
    w = lib.nn.Parameter(lib.zeros(2))
    lib.optim.SGD([w], lr=lib.tensor([0.1]))  # one element, any shape
    with pytest.raises(ValueError, match="1-element"):
        lib.optim.SGD([w], lr=lib.tensor([0.1, 0.2]))
    with pytest.raises(ValueError, match="Invalid learning rate"):
        lib.optim.Adam([w], lr=lib.tensor(-0.1))


def test_a_tensor_lr_inside_rg_jit_is_refused():
    model = rg.nn.Linear(3, 1)
    opt = rg.optim.SGD(model.parameters(), lr=rg.tensor(0.1))

    @rg.jit
    def step(x):
        opt.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        opt.step()
        return loss

    with pytest.raises(RuntimeError, match="learning rate given as a Tensor"):
        step(rg.ones(4, 3))
