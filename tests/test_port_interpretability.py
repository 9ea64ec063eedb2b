"""Interpretability and adversarial-robustness programs (pytorch-grad-cam, captum's
algorithms in plain torch, FGSM/PGD/C&W/TRADES tutorials, DeepDream, Fourier feature
visualisation) ported to retrograd, each compared with torch in float64; plus the gaps
the port found."""

from __future__ import annotations

import numpy as np
import pytest
import torch

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
