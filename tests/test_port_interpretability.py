"""Interpretability and adversarial-robustness programs (pytorch-grad-cam, captum's
algorithms in plain torch, FGSM/PGD/C&W/TRADES tutorials, DeepDream, Fourier feature
visualisation) ported to retrograd, each compared with torch in float64; plus the gaps
the port found."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from port_compare import close

import retrograd as rg


def _net(L):
    nn = L.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.features = nn.Sequential(
                nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(inplace=True),
                nn.MaxPool2d(2), nn.Conv2d(4, 6, 3, padding=1), nn.ReLU())
            self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
            self.classifier = nn.Linear(6, 4)

        def forward(self, x):
            return self.classifier(L.flatten(self.avgpool(self.features(x)), 1))
    return Net()


def _pair():
    """The same small CNN in both libraries, float64, in eval mode."""
    torch.manual_seed(0)
    tm = _net(torch).double()
    bn = tm.features[1]
    with torch.no_grad():
        bn.running_mean.uniform_(-.2, .2)
        bn.running_var.uniform_(.5, 1.5)
    rm = _net(rg).double()
    rm.load_state_dict({k: rg.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    return tm.eval(), rm.eval()


def _x(seed=0, n=2, hw=8):
    return np.random.default_rng(seed).random((n, 3, hw, hw))


def test_inplace_write_into_backward_hooked_module_output_raises():
    """A full backward hook wraps the module's output in an identity Function returning a
    view; an in-place ReLU after it (grad-cam on a conv followed by ReLU(inplace=True))
    raised AttributeError (the Function's first input is the hook callback), where torch
    raises RuntimeError."""
    for L in (torch, rg):
        m = L.nn.Sequential(L.nn.Linear(3, 3), L.nn.ReLU(inplace=True)).double()
        m[0].register_full_backward_hook(lambda mod, gi, go: None)
        with pytest.raises(RuntimeError):
            m(L.ones(2, 3, dtype=L.float64))


def test_inplace_write_into_custom_function_view_output_raises():
    """A custom Function whose non-tensor first argument precedes the input it returns a
    view of: the in-place write is refused as in torch."""
    for L in (torch, rg):
        class Ident(L.autograd.Function):
            @staticmethod
            def forward(ctx, scale, x):
                return x.view_as(x)

            @staticmethod
            def backward(ctx, g):
                return None, g
        x = L.ones(3, dtype=L.float64, requires_grad=True) * 1
        y = Ident.apply(2.0, x)
        with pytest.raises(RuntimeError):
            y.mul_(2)


def test_per_example_saliency_through_inplace_relu_under_vmap():
    """torch.func's per-example saliency (vmap of grad, functional_call) of a CNN with
    ReLU(inplace=True): in-place writes into batched tensors used to be refused."""
    tm, rm = _pair()
    x = _x(1, n=3)
    res = []
    for L, m in ((torch, tm), (rg, rm)):
        params = {k: v.detach() for k, v in m.named_parameters()}
        buffers = {k: v.detach() for k, v in m.named_buffers()}

        def f(xi, m=m, L=L, params=params, buffers=buffers):
            return L.func.functional_call(m, (params, buffers), (xi.unsqueeze(0),))[0, 1]
        g = L.func.vmap(L.func.grad(f))(L.tensor(x))
        j = L.func.jacfwd(lambda v, m=m: m(v).sum(0))(L.tensor(x[:1]))
        res.append((g, j))
    for a, b in zip(*res[::-1]):
        close(a, b, tol=1e-12)


def test_inplace_ops_on_batched_and_dual_tensors_match_torch():
    """mul_, relu_, setitem and add_ on tensors batched by vmap or carrying jvp tangents
    (torch's relu_ saves its output, which the later writes change: its backward raises,
    so torch runs the same values with an out-of-place clamp)."""
    def f(L, v):
        h = v.sin()
        h.mul_(v)
        if L is rg:
            L.nn.functional.relu(h, inplace=True)
        else:
            h = h.clamp(min=0)
        h[0] = v[1]
        h.add_(1.0)
        return h
    x = np.linspace(-1, 1, 12).reshape(3, 4)
    res = []
    for L in (torch, rg):
        xt = L.tensor(x, requires_grad=True)
        out = L.func.vmap(lambda v, L=L: f(L, v))(xt)
        out.pow(2).sum().backward()
        res.append((out, xt.grad, L.func.jacfwd(lambda v, L=L: f(L, v))(L.tensor(x[0])),
                    L.func.jacrev(lambda v, L=L: f(L, v))(L.tensor(x[0])),
                    L.func.jvp(lambda v, L=L: f(L, v), (L.tensor(x[1]),), (L.tensor(x[2]),))[1]))
    for a, b in zip(*res[::-1]):
        close(a, b, tol=1e-12)
    with pytest.raises(RuntimeError, match="vmap"):  # an unbatched target, as torch.vmap
        rg.func.vmap(lambda v: rg.zeros(4, dtype=v.dtype).copy_(v))(rg.tensor(x))
