"""`rg.nn.grad.conv{1,2,3}d_{input,weight}` against `torch.nn.grad`'s."""

import numpy as np
import pytest

import retrograd as rg

torch = pytest.importorskip("torch")

CASES = [
    (1, (2, 4, 9), (6, 4, 3), {}),
    (1, (2, 4, 10), (6, 2, 3), dict(stride=2, padding=1, dilation=2, groups=2)),
    (2, (2, 4, 7, 6), (6, 4, 3, 2), {}),
    (2, (2, 4, 8, 7), (6, 2, 3, 2), dict(stride=(2, 1), padding=1, dilation=(1, 2), groups=2)),
    (3, (1, 2, 5, 6, 4), (3, 2, 2, 3, 2), dict(stride=2, padding=(1, 0, 1))),
]


@pytest.mark.parametrize("n,xs,ws,kw", CASES)
def test_conv_grads_match_torch(n, xs, ws, kw):
    rng = np.random.default_rng(len(xs) + len(kw))
    x, w = rng.normal(size=xs), rng.normal(size=ws)
    conv = getattr(torch.nn.functional, f"conv{n}d")
    y = conv(torch.tensor(x), torch.tensor(w), **kw)
    g = rng.normal(size=tuple(y.shape))
    want_in = getattr(torch.nn.grad, f"conv{n}d_input")(xs, torch.tensor(w), torch.tensor(g), **kw)
    want_w = getattr(torch.nn.grad, f"conv{n}d_weight")(torch.tensor(x), ws, torch.tensor(g), **kw)
    got_in = getattr(rg.nn.grad, f"conv{n}d_input")(xs, rg.tensor(w), rg.tensor(g), **kw)
    got_w = getattr(rg.nn.grad, f"conv{n}d_weight")(rg.tensor(x), ws, rg.tensor(g), **kw)
    np.testing.assert_allclose(got_in.numpy(), want_in.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(got_w.numpy(), want_w.numpy(), rtol=1e-10, atol=1e-12)


def test_conv2d_input_is_differentiable_in_weight_and_grad_output():
    rng = np.random.default_rng(1)
    w, g = rng.normal(size=(3, 2, 3, 3)), rng.normal(size=(2, 3, 4, 4))
    tw, tg = (torch.tensor(v, requires_grad=True) for v in (w, g))
    (torch.nn.grad.conv2d_input((2, 2, 6, 6), tw, tg) ** 2).sum().backward()
    rw, rgo = (rg.tensor(v, requires_grad=True) for v in (w, g))
    (rg.nn.grad.conv2d_input((2, 2, 6, 6), rw, rgo) ** 2).sum().backward()
    np.testing.assert_allclose(rw.grad.numpy(), tw.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(rgo.grad.numpy(), tg.grad.numpy(), rtol=1e-10)


def test_bad_sizes_are_refused():
    w, g = rg.ones(3, 2, 3, 3), rg.ones(2, 3, 4, 4)
    with pytest.raises(ValueError, match="input_size"):
        rg.nn.grad.conv2d_input((2, 2, 6), w, g)
    with pytest.raises(ValueError, match="grad_output"):
        rg.nn.grad.conv2d_input((2, 2, 7, 7), w, g)
