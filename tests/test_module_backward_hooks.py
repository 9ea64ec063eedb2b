"""Module backward hooks, Function's setup_context form and Module.half, against torch."""

import numpy as np
import pytest
import torch

import retrograd as rg

W = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]


def _record(lib, replace_input: bool, replace_output: bool):
    m = lib.nn.Linear(3, 2)
    with lib.no_grad():
        m.weight.copy_(lib.tensor(W))
        m.bias.zero_()
    rec = []

    def pre(mod, go):
        rec.append(("pre", [g.tolist() for g in go]))
        return (go[0] * 3,) if replace_output else None

    def full(mod, gi, go):
        rec.append(("full", [None if g is None else g.tolist() for g in gi],
                    [g.tolist() for g in go]))
        return (gi[0] * 2,) if replace_input and gi[0] is not None else None

    h1 = m.register_full_backward_pre_hook(pre)
    m.register_full_backward_hook(full)
    x = lib.tensor([[1.0, 1.0, 1.0]], requires_grad=True)
    m(x).sum().backward()
    rec.append(("x.grad", x.grad.tolist()))
    m(lib.tensor([[1.0, 2.0, 0.5]])).pow(2).sum().backward()  # an input without grad
    rec.append(("w.grad", m.weight.grad.tolist()))
    h1.remove()
    m(lib.tensor([[1.0, 1.0, 1.0]], requires_grad=True)).sum().backward()
    return rec


@pytest.mark.parametrize("replace_input", [False, True])
@pytest.mark.parametrize("replace_output", [False, True])
def test_full_backward_hooks_like_torch(replace_input, replace_output):
    got = _record(rg, replace_input, replace_output)
    want = _record(torch, replace_input, replace_output)
    assert len(got) == len(want)
    for a, b in zip(got, want):
        assert repr(a) == repr(b)  # small integers: exact in float32 on both sides


def test_hook_on_a_layer_inside_a_model_sees_its_gradients():
    def grads(lib):
        lib.manual_seed(0)
        seen = {}
        net = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.Tanh(), lib.nn.Linear(4, 1))
        with lib.no_grad():
            for p, v in zip(net.parameters(), [np.full((4, 3), 0.1), np.arange(4.0) / 10,
                                               np.ones((1, 4)), np.zeros(1)]):
                p.copy_(lib.tensor(v, dtype=p.dtype))
        net[1].register_full_backward_hook(
            lambda mod, gi, go: seen.update(gi=gi[0].tolist(), go=go[0].tolist()))
        net(lib.tensor([[1.0, -1.0, 2.0]])).sum().backward()
        return seen
    got, want = grads(rg), grads(torch)
    np.testing.assert_allclose(got["gi"], want["gi"], rtol=1e-6)
    np.testing.assert_allclose(got["go"], want["go"], rtol=1e-6)


def test_a_hook_returning_the_wrong_count_is_refused():
    m = rg.nn.Linear(3, 2)
    m.register_full_backward_hook(lambda mod, gi, go: (gi[0], gi[0]))
    with pytest.raises(RuntimeError, match="backward hook returned 2"):
        m(rg.ones(1, 3, requires_grad=True)).sum().backward()


def test_function_setup_context_form_like_torch():
    def run(lib):
        class Cube(lib.autograd.Function):
            @staticmethod
            def forward(a, k):
                return a * a * a * k

            @staticmethod
            def setup_context(ctx, inputs, output):
                ctx.save_for_backward(inputs[0])
                ctx.k = inputs[1]

            @staticmethod
            def backward(ctx, g):
                (a,) = ctx.saved_tensors
                return 3 * a * a * g * ctx.k, None

        a = lib.tensor([1.0, 2.0], requires_grad=True)
        out = Cube.apply(a, 2.0)
        out.sum().backward()
        return out.tolist(), a.grad.tolist()
    assert run(rg) == run(torch)


def test_half_and_bfloat16():
    m = rg.nn.Linear(3, 2).half()
    assert m.weight.dtype == np.float16 and m.bias.dtype == np.float16
    t = torch.nn.Linear(3, 2).half()
    assert str(t.weight.dtype) == "torch.float16"
    with pytest.raises(TypeError, match="bfloat16"):
        rg.nn.Linear(3, 2).bfloat16()


def test_unused_output_gets_none_in_grad_output_as_torch():
    """An output the loss does not use has grad_output None in the hooks (not zeros)."""
    def run(lib):
        class Two(lib.nn.Module):
            def forward(self, x, y):
                return x * 2, x * 3, y * 4

        m, seen = Two(), []

        def show(gs):
            return [None if g is None else g.tolist() for g in gs]

        m.register_full_backward_pre_hook(lambda mod, go: seen.append(("pre", show(go))))
        m.register_full_backward_hook(
            lambda mod, gi, go: seen.append(("hook", show(gi), show(go))))
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = lib.tensor([3.0], requires_grad=True)
        a, b, c = m(x, y)
        (a.sum() + 5 * c.sum()).backward()
        return seen, x.grad.tolist(), y.grad.tolist()

    assert run(rg) == run(torch)
