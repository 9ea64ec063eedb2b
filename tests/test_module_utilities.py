"""Module lookups (get_submodule/get_parameter/get_buffer), to_empty, share_memory,
ModuleList.insert/pop, SyncBatchNorm and the optimizers' step hooks, against torch."""

import importlib

import numpy as np
import pytest
import torch

import retrograd as rg


def _net(lib):
    return lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.Sequential(lib.nn.BatchNorm1d(4)))


def test_lookups_like_torch():
    ours, theirs = _net(rg), _net(torch)
    assert ours.get_submodule("") is ours
    assert type(ours.get_submodule("1.0")).__name__ == type(theirs.get_submodule("1.0")).__name__
    assert ours.get_parameter("0.weight").shape == tuple(theirs.get_parameter("0.weight").shape)
    assert ours.get_buffer("1.0.running_var").shape == (4,)
    for bad in ("2", "0.nope"):
        with pytest.raises(AttributeError):
            theirs.get_submodule(bad)
        with pytest.raises(AttributeError):
            ours.get_submodule(bad)
    for lib_net in (ours, theirs):
        with pytest.raises(AttributeError):
            lib_net.get_parameter("0.nope")
        with pytest.raises(AttributeError):
            lib_net.get_buffer("1.0.weight")
    assert ours.share_memory() is ours
    e = rg.nn.Linear(3, 2).to_empty(device="cpu")
    assert e.weight.shape == (2, 3) and e.weight.requires_grad


def test_module_list_insert_and_pop_like_torch():
    def build(lib):
        ml = lib.nn.ModuleList([lib.nn.ReLU(), lib.nn.Tanh()])
        ml.insert(1, lib.nn.Sigmoid())
        ml.insert(0, lib.nn.Identity())
        popped = ml.pop(2)
        return [type(m).__name__ for m in ml], type(popped).__name__, list(dict(
            ml.named_children()))
    assert build(rg) == build(torch)


def test_sync_batchnorm_is_batchnorm_in_one_process_like_torch():
    x = np.random.default_rng(0).standard_normal((4, 3, 5))
    for train in (True, False):
        a, b = rg.nn.SyncBatchNorm(3), torch.nn.SyncBatchNorm(3).double()
        a.train(train)
        b.train(train)
        xa = rg.tensor(x, requires_grad=True)
        xb = torch.tensor(x, requires_grad=True)
        a.double()
        ya, yb = a(xa), b(xb)
        np.testing.assert_allclose(ya.data, yb.detach().numpy(), rtol=1e-10, atol=1e-12)
        (ya * ya).sum().backward()
        (yb * yb).sum().backward()
        np.testing.assert_allclose(xa.grad.data, xb.grad.numpy(), rtol=1e-8, atol=1e-10)
        np.testing.assert_allclose(a.running_mean.data, b.running_mean.numpy(), rtol=1e-10)


def test_convert_sync_batchnorm_keeps_parameters_like_torch():
    def conv(lib):
        lib.manual_seed(0)
        net = lib.nn.Sequential(lib.nn.Conv2d(2, 3, 1), lib.nn.BatchNorm2d(3),
                                lib.nn.Sequential(lib.nn.BatchNorm1d(3)))
        net[1].eval()
        w = net[1].weight
        out = lib.nn.SyncBatchNorm.convert_sync_batchnorm(net)
        return ([type(m).__name__ for m in out.modules()], out[1].weight is w,
                out[1].training, sorted(out.state_dict()))
    assert conv(rg) == conv(torch)


def test_sync_batchnorm_refuses_training_across_ranks(monkeypatch):
    monkeypatch.setenv("PMI_SIZE", "2")
    m = rg.nn.SyncBatchNorm(3)
    with pytest.raises(NotImplementedError, match="across ranks"):
        m(rg.ones(2, 3))
    m.eval()
    assert m(rg.ones(2, 3)).shape == (2, 3)


def test_step_hooks_like_torch():
    def run(lib):
        calls = []
        p = lib.nn.Parameter(lib.ones(2))
        opt = lib.optim.SGD([p], lr=0.5)
        h1 = opt.register_step_pre_hook(lambda o, a, k: calls.append(("pre", type(o).__name__)))
        opt.register_step_post_hook(lambda o, a, k: calls.append(("post", len(a), len(k))))
        mod = importlib.import_module(lib.__name__ + ".optim.optimizer")
        g = mod.register_optimizer_step_pre_hook(lambda o, a, k: calls.append(("global",)))
        (p * p).sum().backward()
        opt.step()
        h1.remove()
        g.remove()
        opt.step()
        return calls, p.tolist()
    assert run(rg) == run(torch)


def test_a_pre_hook_may_replace_the_arguments_and_a_bad_return_is_refused():
    p = rg.nn.Parameter(rg.ones(1))
    opt = rg.optim.SGD([p], lr=0.1)
    seen = []
    opt.register_step_pre_hook(lambda o, a, k: ((o, lambda: seen.append(1) or None), {}))
    opt.step()
    assert seen == [1]  # the closure the hook put in was called
    opt2 = rg.optim.SGD([p], lr=0.1)
    opt2.register_step_pre_hook(lambda o, a, k: 3)
    with pytest.raises(RuntimeError, match="pre-hook"):
        opt2.step()
