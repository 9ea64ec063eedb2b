"""rg.optim against torch.optim: 20 training steps from the same weights on the same batches
(float64) give the same losses to 1e-8, for the MLP and the CNN of `retrograd train`."""

import io

import numpy as np
import pytest
import torch

import retrograd as rg
from retrograd import nn, optim
from retrograd import serialization as ser
from retrograd.cli.train import build_model
from retrograd.nn import functional as F

torch.set_num_threads(1)  # tiny ops: PyTorch's thread pool only adds overhead
STEPS = 20


def _torch_twin(name):
    T = torch.nn
    if name == "mlp":
        return T.Sequential(T.Linear(64, 128), T.ReLU(), T.Linear(128, 64), T.ReLU(),
                            T.Linear(64, 10))
    return T.Sequential(T.Conv2d(1, 16, 3, padding=1), T.ReLU(), T.MaxPool2d(2), T.Flatten(),
                        T.Linear(256, 10))


def _batches(name, seed=0):
    r = np.random.default_rng(seed)
    shape = (16, 64) if name == "mlp" else (16, 1, 8, 8)
    return [(r.uniform(0, 1, shape), r.integers(0, 10, 16)) for _ in range(STEPS)]


def _trajectories(name, opt_name, kw, seed=0):
    rg.manual_seed(seed)
    ours = build_model(name).double()
    theirs = _torch_twin(name).double()
    theirs.load_state_dict({k: torch.tensor(v.data) for k, v in ours.state_dict().items()})
    opt = getattr(optim, opt_name)(ours.parameters(), **kw)
    topt = getattr(torch.optim, opt_name)(theirs.parameters(), **kw)
    a, b = [], []
    for x, y in _batches(name, seed):
        loss = F.cross_entropy(ours(rg.Tensor(x)), rg.Tensor(y))
        opt.zero_grad()
        loss.backward()
        opt.step()
        a.append(loss.item())
        tloss = torch.nn.functional.cross_entropy(theirs(torch.tensor(x)), torch.tensor(y))
        topt.zero_grad()
        tloss.backward()
        topt.step()
        b.append(tloss.item())
    return np.array(a), np.array(b), ours, theirs


CONFIGS = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.05, momentum=0.9)),
    ("SGD", dict(lr=0.05, momentum=0.9, nesterov=True)),
    ("SGD", dict(lr=0.05, momentum=0.9, weight_decay=1e-2, dampening=0.1)),
    ("SGD", dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=5e-3)),
    ("Adam", dict(lr=1e-2)),
    ("Adam", dict(lr=1e-2, betas=(0.8, 0.99), weight_decay=1e-2)),
    ("Adam", dict(lr=1e-2, amsgrad=True)),
    ("AdamW", dict(lr=1e-2)),
    ("AdamW", dict(lr=1e-2, weight_decay=0.1, eps=1e-6)),
]


@pytest.mark.parametrize("name", ["mlp", "cnn"])
@pytest.mark.parametrize("opt_name,kw", CONFIGS, ids=[f"{o}-{i}" for i, (o, _) in
                                                       enumerate(CONFIGS)])
def test_matches_pytorch_for_20_steps(name, opt_name, kw):
    ours, theirs, model, tmodel = _trajectories(name, opt_name, kw)
    assert np.max(np.abs(ours - theirs)) < 1e-8, np.abs(ours - theirs)
    tparams = dict(tmodel.named_parameters())
    rg.manual_seed(0)
    start = build_model(name).state_dict()
    assert any(np.abs(p.data - start[k].data).max() > 1e-3  # the weights really moved
               for k, p in model.named_parameters())
    for k, p in model.named_parameters():
        np.testing.assert_allclose(p.data, tparams[k].detach().numpy(), rtol=1e-9, atol=1e-10)


def test_parity_test_can_tell_optimizers_apart():
    """Adam with L2 and AdamW with decoupled decay must give different trajectories."""
    adam, _, _, _ = _trajectories("mlp", "Adam", dict(lr=1e-2, weight_decay=0.1))
    adamw, _, _, _ = _trajectories("mlp", "AdamW", dict(lr=1e-2, weight_decay=0.1))
    assert np.max(np.abs(adam - adamw)) > 1e-6


def test_defaults_are_pytorchs():
    p = nn.Parameter(rg.zeros(2))
    tp = torch.nn.Parameter(torch.zeros(2))
    for name in ("SGD", "Adam", "AdamW"):
        ours = getattr(optim, name)([p]).defaults
        theirs = getattr(torch.optim, name)([tp]).defaults
        for k, v in ours.items():
            assert theirs[k] == v, (name, k)


def _train(model, opt, steps, seed):
    r = np.random.default_rng(seed)
    for _ in range(steps):
        x = rg.Tensor(r.standard_normal((8, 4)).astype(np.float32))
        y = rg.Tensor(r.integers(0, 3, 8))
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()


@pytest.mark.parametrize("opt_name,kw", [("SGD", dict(lr=0.1, momentum=0.9)),
                                         ("Adam", dict(lr=0.01, amsgrad=True)),
                                         ("AdamW", dict(lr=0.01))])
def test_state_dict_round_trip_through_a_checkpoint(opt_name, kw):
    rg.manual_seed(0)
    a = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
    opt_a = getattr(optim, opt_name)(a.parameters(), **kw)
    _train(a, opt_a, 5, seed=1)
    buf = io.BytesIO()
    ser.save({"model": a.state_dict(), "opt": opt_a.state_dict()}, buf)
    buf.seek(0)
    ck = ser.load(buf)
    b = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
    b.load_state_dict(ck["model"])
    opt_b = getattr(optim, opt_name)(b.parameters(), lr=123.0)
    opt_b.load_state_dict(ck["opt"])
    assert opt_b.param_groups[0]["lr"] == kw["lr"]
    _train(a, opt_a, 5, seed=2)
    _train(b, opt_b, 5, seed=2)
    for p, q in zip(a.parameters(), b.parameters()):
        np.testing.assert_array_equal(p.data, q.data)


def test_zero_grad_and_missing_grads():
    p = nn.Parameter(rg.ones(3))
    q = nn.Parameter(rg.ones(3))
    opt = optim.SGD([p, q], lr=0.5, momentum=0.9)
    (p * 2.0).sum().backward()
    opt.step()  # q has no grad: left alone
    np.testing.assert_allclose(p.data, 0.0)
    np.testing.assert_allclose(q.data, 1.0)
    opt.zero_grad()
    assert p.grad is None
    (p * 2.0).sum().backward()
    opt.zero_grad(set_to_none=False)
    np.testing.assert_array_equal(p.grad.data, 0.0)


def test_param_groups_have_their_own_lr():
    p, q = nn.Parameter(rg.ones(2)), nn.Parameter(rg.ones(2))
    opt = optim.SGD([{"params": [p]}, {"params": [q], "lr": 0.5}], lr=0.1)
    (p.sum() + q.sum()).backward()
    opt.step()
    np.testing.assert_allclose(p.data, 0.9)
    np.testing.assert_allclose(q.data, 0.5)


def test_closure_is_called():
    p = nn.Parameter(rg.ones(2))
    opt = optim.Adam([p], lr=0.1)

    def closure():
        opt.zero_grad()
        loss = (p * p).sum()
        loss.backward()
        return loss

    assert opt.step(closure).item() == pytest.approx(2.0)
    assert (p.data < 1).all()


@pytest.mark.parametrize("make,match", [
    (lambda p: optim.SGD([p], lr=-1.0), "Invalid learning rate"),
    (lambda p: optim.SGD([p], lr=0.1, nesterov=True), "Nesterov"),
    (lambda p: optim.SGD([p], lr=0.1, momentum=0.9, nesterov=True, dampening=0.1), "Nesterov"),
    (lambda p: optim.SGD([p], lr=0.1, momentum=-0.5), "momentum"),
    (lambda p: optim.Adam([p], betas=(0.9, 1.0)), "beta"),
    (lambda p: optim.Adam([p], eps=-1.0), "epsilon"),
    (lambda p: optim.AdamW([p], weight_decay=-1.0), "weight_decay"),
    (lambda p: optim.SGD([], lr=0.1), "empty parameter list"),
    (lambda p: optim.SGD([p * 2.0], lr=0.1), "non-leaf"),
])
def test_bad_arguments(make, match):
    with pytest.raises(ValueError, match=match):
        make(nn.Parameter(rg.ones(2)))


def test_backward_through_a_graph_saved_before_step_raises():
    """The update is in place: an old graph whose gradient needs an updated weight (the
    second layer's, for the first's gradient) must refuse, not give a stale gradient, as
    torch's does (a one-layer graph reads no weight: it is still right, in both)."""
    import torch
    for L, o in ((rg, optim), (torch, torch.optim)):
        net = L.nn.Sequential(L.nn.Linear(3, 2), L.nn.Tanh(), L.nn.Linear(2, 1))
        opt = o.SGD(net.parameters(), lr=0.1)
        loss = net(L.randn(4, 3)).sum()
        loss.backward(retain_graph=True)
        opt.step()
        with pytest.raises(RuntimeError, match="modified by an in.?place operation"):
            loss.backward()


def test_step_records_no_graph():
    p = nn.Parameter(rg.ones(2))
    opt = optim.Adam([p])
    (p * p).sum().backward()
    opt.step()
    assert p.is_leaf and p.grad_fn is None and p.requires_grad


def test_duplicate_parameters_warn_as_torch_does():
    """torch warns ("in future, this will cause an error") and keeps the group."""
    for lib in (torch, rg):
        p = lib.nn.Parameter(lib.ones(2))
        with pytest.warns(UserWarning, match="duplicate parameters"):
            lib.optim.SGD([p, p], lr=0.1)
