"""nn.Module, autograd.Function and optimizer behaviour found different from torch by
porting training-loop code; each case runs the same code under torch and retrograd and
compares what user code sees."""

from __future__ import annotations

import copy
import io

import numpy as np
import pytest
import torch

import retrograd as rg

LIBS = [torch, rg]


def _both(fn):
    return [fn(lib) for lib in LIBS]


def test_multi_output_function_backward_runs_once_with_every_gradient():
    def run(L):
        calls = []

        class Two(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2, x * 3

            @staticmethod
            def backward(ctx, g1, g2):
                calls.append((g1.tolist(), g2.tolist()))
                return g1 * g1 + 3 * g2  # not linear in the gradients: one call matters

        x = L.tensor([1.0, 2.0], requires_grad=True)
        a, b = Two.apply(x)
        (a.sum() + 10 * b.sum()).backward()
        out = [calls[:], x.grad.tolist()]
        calls.clear()
        a, b = Two.apply(x)
        (gx,) = L.autograd.grad((b * b).sum(), x, create_graph=True)  # a unused: zeros
        out += [calls[:], gx.tolist()]
        return out

    t, r = _both(run)
    assert t == r
    assert len(r[0]) == 1


def test_full_backward_hook_with_two_inputs_runs_once():
    def run(L):
        seen = []

        class Mul(L.nn.Module):
            def forward(self, x, y):
                return x * y

        m = Mul()
        m.register_full_backward_hook(
            lambda mod, gi, go: seen.append([g.tolist() for g in gi]))
        x = L.tensor([1.0, 2.0], requires_grad=True)
        y = L.tensor([3.0, 4.0], requires_grad=True)
        m(x, y).sum().backward()
        return seen

    t, r = _both(run)
    assert t == r and len(r) == 1


def test_backward_hook_sees_the_gradient_of_the_forward_hooks_output():
    def run(L):
        seen = []
        L.manual_seed(0)
        lin = L.nn.Linear(2, 2)
        lin.register_forward_hook(lambda m, i, o: o * 3)
        lin.register_full_backward_hook(lambda m, gi, go: seen.append(go[0].tolist()))
        lin(L.ones(1, 2, requires_grad=True)).sum().backward()
        return seen

    t, r = _both(run)
    assert t == r


def test_forward_hook_always_call_runs_when_forward_raises():
    def run(L):
        fired = []

        class Boom(L.nn.Module):
            def forward(self, x):
                raise KeyError("boom")

        m = Boom()
        m.register_forward_hook(lambda mod, i, o: fired.append(o), always_call=True)
        m.register_forward_hook(lambda mod, i, o: fired.append("plain"))
        with pytest.raises(KeyError):
            m(L.ones(1))
        return fired

    t, r = _both(run)
    assert t == r == [None]


def test_apply_is_post_order_and_visits_shared_modules_per_place():
    def run(L):
        names = []
        shared = L.nn.Linear(1, 1)
        net = L.nn.Sequential(L.nn.Sequential(shared, L.nn.ReLU()), L.nn.Tanh(),
                              L.nn.Sequential(shared))
        net.apply(lambda m: names.append(type(m).__name__))
        return names

    t, r = _both(run)
    assert t == r


def test_train_and_eval_call_each_childs_own_train():
    def run(L):
        calls = []

        class Frozen(L.nn.Module):
            def train(self, mode=True):
                calls.append(mode)
                return super().train(False)  # e.g. keep batch norm statistics frozen

        net = L.nn.Sequential(Frozen(), L.nn.Linear(1, 1))
        net.eval()
        net.train()
        return calls, net[0].training, net[1].training

    t, r = _both(run)
    assert t == r


def test_optimizer_state_is_a_defaultdict_for_custom_optimizers():
    def run(L):
        class Counting(L.optim.Optimizer):
            def __init__(self, params):
                super().__init__(params, dict(lr=0.1))

            def step(self, closure=None):
                for g in self.param_groups:
                    for p in g["params"]:
                        state = self.state[p]
                        if len(state) == 0:
                            state["n"] = 0
                        state["n"] += 1

        p = L.nn.Parameter(L.ones(2))
        opt = Counting([p])
        opt.step()
        opt.step()
        return opt.state[p]["n"]

    assert _both(run) == [2, 2]


def test_optimizer_takes_named_parameters():
    def run(L):
        L.manual_seed(0)
        m = L.nn.Linear(2, 1)
        opt = L.optim.SGD(m.named_parameters(), lr=0.1)
        return opt.param_groups[0]["param_names"], len(opt.param_groups[0]["params"])

    t, r = _both(run)
    assert t == r


def test_loaded_step_counts_stay_tensors():
    def run(L):
        p = L.nn.Parameter(L.ones(2))
        opt = L.optim.Adam([p], lr=0.1)
        p.grad = L.ones(2)
        opt.step()
        new = L.optim.Adam([p], lr=0.1)
        new.load_state_dict(opt.state_dict())
        step = new.state_dict()["state"][0]["step"]
        return isinstance(step, L.Tensor), float(step), str(step.dtype).split(".")[-1]

    t, r = _both(run)
    assert t == r


def test_deepcopy_of_a_parameter_drops_its_grad():
    def run(L):
        m = L.nn.Linear(2, 2)
        m.weight.grad = L.ones(2, 2)
        c = copy.deepcopy(m)
        return c.weight.grad is None, type(c.weight).__name__, c.weight is not m.weight

    t, r = _both(run)
    assert t == r


def test_save_and_load_keep_parameters_and_requires_grad():
    buf = io.BytesIO()
    p = rg.nn.Parameter(rg.ones(2))
    frozen = rg.nn.Parameter(rg.ones(2), requires_grad=False)
    rg.save({"p": p, "f": frozen, "t": rg.ones(2, requires_grad=True), "u": rg.ones(2)}, buf)
    buf.seek(0)
    d = rg.load(buf)
    tbuf = io.BytesIO()
    torch.save({"p": torch.nn.Parameter(torch.ones(2)),
                "f": torch.nn.Parameter(torch.ones(2), requires_grad=False),
                "t": torch.ones(2, requires_grad=True), "u": torch.ones(2)}, tbuf)
    tbuf.seek(0)
    td = torch.load(tbuf)
    for k in "pftu":
        assert type(d[k]).__name__ == type(td[k]).__name__
        assert d[k].requires_grad == td[k].requires_grad
        np.testing.assert_array_equal(d[k].detach().numpy(), td[k].detach().numpy())


def test_reprs_of_module_lists_and_losses_print_as_torch():
    def build(L):
        return [L.nn.ModuleList([L.nn.Linear(2, 2) for _ in range(3)] + [
            L.nn.ReLU(), L.nn.Sequential(L.nn.Linear(2, 3), L.nn.Tanh()),
            L.nn.Sequential(L.nn.Linear(2, 3), L.nn.Tanh())]),
            L.nn.ModuleList(), L.nn.MSELoss(reduction="sum"), L.nn.HuberLoss(delta=2.0)]

    t, r = _both(lambda L: [repr(m) for m in build(L)])
    assert t == r
