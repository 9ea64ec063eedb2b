"""Loose ends of earlier porting rounds, each compared with torch computed here: the
global module hooks of `torch.nn.modules.module`, and small edge cases."""

from __future__ import annotations

import pytest
import torch

import retrograd as rg

tm = pytest.importorskip("torch.nn.modules.module")


def _shape(x):
    if hasattr(x, "shape"):
        return tuple(x.shape)
    if isinstance(x, tuple):
        return tuple(_shape(a) for a in x)
    return x


def _global_hook_log(lib, nn, M) -> list:
    log = []
    handles = [
        M.register_module_forward_pre_hook(lambda m, a: log.append(("gpre", type(m).__name__))),
        M.register_module_forward_hook(
            lambda m, a, o: log.append(("gfwd", type(m).__name__, _shape(o)))),
        M.register_module_full_backward_pre_hook(
            lambda m, go: log.append(("gbpre", type(m).__name__, _shape(go)))),
        M.register_module_full_backward_hook(
            lambda m, gi, go: log.append(("gbw", type(m).__name__, _shape(gi), _shape(go)))),
    ]
    try:
        net = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2)).double()
        net[0].register_forward_pre_hook(lambda m, a: log.append(("lpre",)))
        net[0].register_forward_hook(lambda m, a, o: log.append(("lfwd",)))
        net[2].register_full_backward_hook(lambda m, gi, go: log.append(("lbw",)))
        net[2].register_full_backward_pre_hook(lambda m, go: log.append(("lbpre",)))
        x = lib.ones(5, 3, dtype=lib.float64, requires_grad=True)
        net(x).sum().backward()
    finally:
        for h in handles:
            h.remove()
    log.append("removed")
    net(x).sum().backward()
    return log


def test_global_call_hooks_run_in_torchs_order_and_go_away_on_remove():
    from retrograd.nn.modules import module as rm

    assert _global_hook_log(rg, rg.nn, rm) == _global_hook_log(torch, torch.nn, tm)


def _hook_kinds_log(lib, nn, M) -> list:
    log = []

    class Boom(nn.Module):
        def forward(self, x, scale=1.0):
            if scale < 0:
                raise ValueError("neg")
            return x * scale

    b, x = Boom(), lib.ones(2, dtype=lib.float64)
    h = M.register_module_forward_hook(lambda m, a, k, o: log.append(sorted(k)),
                                       with_kwargs=True)
    b(x, scale=2.0)
    h.remove()
    h = M.register_module_forward_hook(lambda m, a, o: log.append(("always", o)),
                                       always_call=True)
    with pytest.raises(ValueError):
        b(x, scale=-1.0)
    h.remove()
    h1 = M.register_module_forward_hook(lambda m, a, o: o * 2 if isinstance(m, nn.Tanh) else None)
    h2 = M.register_module_forward_pre_hook(
        lambda m, a: (a[0] + 1,) if isinstance(m, nn.Tanh) else None)
    log.append(nn.Tanh()(lib.zeros(2, dtype=lib.float64)).tolist())
    h1.remove()
    h2.remove()
    hs = [M.register_module_buffer_registration_hook(
              lambda m, n, t: log.append(("buf", n, None if t is None else _shape(t)))),
          M.register_module_module_registration_hook(
              lambda m, n, s: log.append(("mod", n, type(s).__name__))),
          M.register_module_parameter_registration_hook(
              lambda m, n, p: log.append(("par", n, _shape(p))))]
    nn.BatchNorm1d(3)
    seq = nn.Sequential(nn.Linear(2, 2))
    seq.add_module("x", nn.ReLU())
    seq.x = None

    class C(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(lib.zeros(2))
            self.register_buffer("b", lib.zeros(3))
            self.b = lib.ones(3)
            self.register_buffer("nb", None)
            self.register_parameter("q", None)

    C()
    hs.append(M.register_module_parameter_registration_hook(
        lambda m, n, p: nn.Parameter(lib.ones(7, 2)) if n == "weight" else None))
    log.append(("replaced", _shape(nn.Linear(2, 3).weight)))
    for h in hs:
        h.remove()
    M.register_module_full_backward_hook(lambda *a: None).remove()  # fixes the kind
    with pytest.raises(RuntimeError):
        M.register_module_backward_hook(lambda *a: None)
    return log


def test_global_hook_kinds_and_registration_hooks_match_torch():
    from retrograd.nn.modules import module as rm

    assert _hook_kinds_log(rg, rg.nn, rm) == _hook_kinds_log(torch, torch.nn, tm)
