"""`Tensor.as_strided` is a strided view, as PyTorch's: values, gradients (overlapping
windows sum), writes through it reaching the base, and a base written after the view."""

import numpy as np
import pytest

import retrograd as rg

torch = pytest.importorskip("torch")


def _both(fn, *arrays, grad=True):
    outs = []
    for lib in (torch, rg):
        ts = [lib.tensor(a, requires_grad=grad) for a in arrays]
        outs.append((fn(lib, *ts), ts))
    return outs


@pytest.mark.parametrize("size,stride,offset", [
    ((4, 3), (2, 1), 1), ((3, 2), (1, 3), 0), ((2, 3), (0, 2), 0), ((2, 2, 2), (4, 1, 2), 1),
])
def test_values_and_gradients(size, stride, offset):
    x = np.arange(12.0).reshape(3, 4) / 7
    g = np.linspace(-1, 1, int(np.prod(size))).reshape(size)
    (tw, (tx,)), (rw, (rx,)) = _both(lambda L, x: x.as_strided(size, stride, offset), x)
    np.testing.assert_array_equal(rw.numpy(), tw.detach().numpy())
    tw.backward(torch.tensor(g))
    rw.backward(rg.tensor(g))
    np.testing.assert_allclose(rx.grad.numpy(), tx.grad.numpy(), rtol=1e-14)


def test_top_level_form_and_second_derivative():
    x = np.linspace(0.5, 2.0, 8)

    def f(L, x):
        w = L.as_strided(x, (3, 4), (2, 1))
        g, = L.autograd.grad((w ** 3).sum(), x, create_graph=True)
        return g

    (tg, (tx,)), (rg_, (rx,)) = _both(f, x)
    np.testing.assert_allclose(rg_.detach().numpy(), tg.detach().numpy(), rtol=1e-14)
    (tg ** 2).sum().backward()
    (rg_ ** 2).sum().backward()
    np.testing.assert_allclose(rx.grad.numpy(), tx.grad.numpy(), rtol=1e-13)


def test_write_through_the_view_reaches_the_base():
    for lib in (torch, rg):
        base = lib.zeros(6)
        v = base.as_strided((2, 2), (3, 1), 1)
        v.add_(lib.tensor([[1.0, 2.0], [3.0, 4.0]]))
        if lib is torch:
            want = base.numpy().copy()
        else:
            np.testing.assert_array_equal(base.numpy(), want)


def test_recorded_write_through_the_view_gives_torch_gradients():
    x = np.linspace(-1.0, 1.0, 6)
    s = np.array([[2.0, -1.0], [0.5, 3.0]])

    def f(L, x, s):
        base = x * 1.0
        base.as_strided((2, 2), (3, 1), 1).mul_(s)
        return (base ** 2).sum()

    (tl, (tx, ts)), (rl, (rx, rs)) = _both(f, x, s)
    np.testing.assert_allclose(rl.item(), tl.item(), rtol=1e-14)
    tl.backward()
    rl.backward()
    np.testing.assert_allclose(rx.grad.numpy(), tx.grad.numpy(), rtol=1e-14)
    np.testing.assert_allclose(rs.grad.numpy(), ts.grad.numpy(), rtol=1e-14)


def test_view_sees_a_later_write_into_the_base():
    for lib in (torch, rg):
        base = lib.arange(6.0)
        v = base.as_strided((3,), (2,), 0)
        base.mul_(10)
        if lib is torch:
            want = v.numpy().copy()
        else:
            np.testing.assert_array_equal(v.numpy(), want)


def test_bad_arguments_refused():
    x = rg.arange(6.0)
    with pytest.raises(RuntimeError, match="out of bounds"):
        x.as_strided((3,), (3,), 0)
    with pytest.raises(RuntimeError, match="mismatch"):
        x.as_strided((3,), (1, 1))
    with pytest.raises(RuntimeError, match="contiguous"):
        x[::2].as_strided((2,), (1,))
