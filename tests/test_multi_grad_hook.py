"""`register_multi_grad_hook` and `Variable._execution_engine.queue_callback`, against
torch: the same calls, in the same order, with the same gradients."""

import numpy as np
import pytest
import torch

import retrograd as rg

A, B, C = np.array([1.0, -2.0]), np.array([0.5, 3.0]), np.array([-1.5, 2.5])


def _log_value(g):
    return None if g is None else np.asarray(g.detach().numpy()).round(12).tolist()


def _scenario(lib, name):
    a, b, c = (lib.tensor(v, requires_grad=True) for v in (A, B, C))
    log = []
    reg = lib.autograd.graph.register_multi_grad_hook
    if name == "leaves":
        reg((a, b, c), lambda gs: log.append(
            ("all", [_log_value(g) for g in gs], a.grad is None)))
        reg((a, b), lambda g: log.append(("any", _log_value(g))), mode="any")
        (a * 2 + b * 3).sum().backward()
        (a * 5).sum().backward()
    elif name == "non_leaves":
        y, z = a * 2, a * b
        reg((y, z), lambda gs: log.append(("all", [_log_value(g) for g in gs])))
        (y * z).sum().backward(retain_graph=True)
        (y.sum() * 3).backward()
    elif name == "mixed":
        y = (a * b).sin()
        reg((y, c, a), lambda gs: log.append(("all", [_log_value(g) for g in gs],
                                              a.grad is None)))
        (y * c).sum().backward()
    elif name == "removed":
        h = reg((a, b), lambda gs: log.append("called"))
        h.remove()
        (a * b).sum().backward()
        log.append(_log_value(a.grad))
    elif name == "twice_in_one_graph":
        y = a * 3
        reg((y,), lambda gs: log.append(("all", [_log_value(g) for g in gs])))
        (y * y + y).sum().backward()
    return log


@pytest.mark.parametrize("name", ["leaves", "non_leaves", "mixed", "removed",
                                  "twice_in_one_graph"])
def test_multi_grad_hook_as_torchs(name):
    assert _scenario(rg, name) == _scenario(torch, name)


@pytest.mark.parametrize("lib", [rg, torch], ids=["rg", "torch"])
def test_multi_grad_hook_bad_arguments(lib):
    a = lib.tensor(A, requires_grad=True)
    with pytest.raises(ValueError, match="mode"):
        lib.autograd.graph.register_multi_grad_hook((a,), lambda g: None, mode="every")
    with pytest.raises(AssertionError):
        lib.autograd.graph.register_multi_grad_hook((lib.tensor(A),), lambda g: None)


def _callback_order(lib):
    a = lib.tensor(A, requires_grad=True)
    y = a * 2
    log = []

    def hook(g):
        log.append(("hook", a.grad is None))
        lib.autograd.Variable._execution_engine.queue_callback(
            lambda: log.append(("callback", _log_value(a.grad))))

    y.register_hook(hook)
    (y * y).sum().backward()
    return log


def test_queue_callback_runs_after_the_gradients_are_written_as_torchs():
    assert _callback_order(rg) == _callback_order(torch)


@pytest.mark.parametrize("lib", [rg, torch], ids=["rg", "torch"])
def test_queue_callback_outside_backward_is_refused(lib):
    with pytest.raises(RuntimeError, match="during backward"):
        lib.autograd.Variable._execution_engine.queue_callback(lambda: None)
