"""In-place writes into views of tensors that require grad, as PyTorch handles them: the
write is put into the root's history (a scatter of the written values into its old value,
as torch's CopySlices), the view becomes a view of that, and every other live view of the
root gets a history through the new one (as torch regenerates a view's grad_fn). Each
pattern's output and gradients are compared with torch's; where torch raises, retrograd
must raise too."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import retrograd as rg


def _relu_(m, t):
    return m.nn.functional.relu(t, inplace=True)


def _masked_softmax(m, x, valid):
    """d2l's masked_softmax: a masked write into a reshaped view of the scores."""
    shape = x.shape
    flat = x.reshape(-1, shape[-1])
    mask = m.arange(shape[-1])[None, :] >= valid.reshape(-1)[:, None]
    flat[mask] = -1e6
    return m.nn.functional.softmax(flat.reshape(shape), dim=-1)


def _p_reshape_setitem(m, x):
    y = (x * 2).reshape(-1, 4)
    y[y > 0.5] = -1.0
    return y


def _p_slice_mul(m, x):
    y = x * 2
    y[:, 0].mul_(3)
    return y


def _p_view_of_view(m, x):
    y = x * 2
    y.view(6, 4)[1:3].T.add_(1)
    return y


def _p_transpose_setitem(m, x):
    y = (x * 2).transpose(1, 2)
    y[0, 1] = 0.0
    return y


def _p_base_after_view(m, x):
    y = x * 2
    v, w = y[1], y[0]  # one overlaps the write, one does not
    y[0] = 0.0
    return v * 1 + w


def _p_two_views(m, x):
    y = x * 2
    a, b = y[:, :2], y[:, 1:]
    a.mul_(2)
    b.add_(x[:, :2] * 3)
    return y + a.sum() + b.sum()


def _p_repeat_writes(m, x):
    y = x * 3
    v = y[0]
    for _ in range(3):
        v.mul_(x[1])
    return y * v


def _p_relu_on_view(m, x):
    y = x * 2 - 1
    return _relu_(m, y[0]) * 1 + y.sum()


def _p_diagonal(m, x):
    y = x[0] @ x[0].T
    y.diagonal().mul_(2)
    y.diagonal().sub_(1)
    return y


def _p_grad_value_into_plain(m, x):
    z = m.zeros(3, 4, dtype=x.dtype)
    z[1:, 1:3] = x[0, :2, :2] * 5
    view = z[:, 2]
    return z * 2 + view.sum()


def _p_unsqueeze_fill(m, x):
    y = x * 2
    y.unsqueeze(0)[0, 0].fill_(2.0)
    return y


def _p_sigmoid_and_clamp(m, x):
    y = x + 0
    y[0].sigmoid_()
    y[1, :, ::2].clamp_(-0.2, 0.3)  # torch refuses: the sigmoid saved what this changes
    return y * y


def _p_strided_reshape_copy(m, x):
    y = (x * 2).transpose(1, 2)
    r = y.reshape(2, 12)  # a copy (not contiguous): the write stays in r
    r[0] = 7.0
    return y.sum() + r


def _p_masked_softmax(m, x):
    return _masked_softmax(m, x * 1, m.tensor([[1, 3, 2], [4, 2, 1]]))


PATTERNS = {f.__name__[3:]: f for f in [
    _p_reshape_setitem, _p_slice_mul, _p_view_of_view, _p_transpose_setitem,
    _p_base_after_view, _p_two_views, _p_repeat_writes, _p_relu_on_view, _p_diagonal,
    _p_grad_value_into_plain, _p_unsqueeze_fill, _p_strided_reshape_copy,
    _p_masked_softmax]}


@pytest.mark.parametrize("name", PATTERNS)
def test_writes_into_views_match_torch(name):
    x0 = np.random.default_rng(0).standard_normal((2, 3, 4))
    res = []
    for m in (torch, rg):
        x = m.tensor(x0, requires_grad=True)
        out = PATTERNS[name](m, x)
        (out * out).sum().backward()
        res.append((out.detach().numpy(), x.grad.numpy()))
    np.testing.assert_allclose(res[1][0], res[0][0], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(res[1][1], res[0][1], rtol=1e-10, atol=1e-10)


def test_second_derivatives_through_a_view_write():
    x0 = np.random.default_rng(1).standard_normal((3, 4))
    res = []
    for m in (torch, rg):
        x = m.tensor(x0, requires_grad=True)
        y = x * x
        y[1:, ::2].mul_(x[:2, 1::2])
        (g,) = m.autograd.grad(y.sum() ** 2, x, create_graph=True)
        (g * g).sum().backward()
        res.append((g.detach().numpy(), x.grad.numpy()))
    for a, b in zip(res[1], res[0]):
        np.testing.assert_allclose(a, b, rtol=1e-10)


@pytest.mark.parametrize("case", ["leaf_view", "saved_value", "saved_output"])
def test_refused_where_torch_refuses(case):
    for m in (torch, rg):
        x = m.tensor(np.ones((2, 3)), requires_grad=True)
        with pytest.raises(RuntimeError):
            if case == "leaf_view":
                x[0].mul_(2)
            elif case == "saved_value":
                y = x * 2
                z = y * y  # saves y
                y[0].mul_(2)
                z.sum().backward()
            else:
                y = x.exp()  # saves its output
                y[1].mul_(x[0])
                (y * 1).sum().backward()


def test_views_without_grad_and_no_grad_writes_keep_torch_values():
    x0 = np.arange(6.0).reshape(2, 3)
    outs = []
    for m in (torch, rg):
        x = m.tensor(x0, requires_grad=True)
        y = x * 1
        v = y[:, 1]
        with m.no_grad():
            v.mul_(10)
        (y * y).sum().backward()
        outs.append((y.detach().numpy(), x.grad.numpy()))
    for a, b in zip(outs[1], outs[0]):
        np.testing.assert_allclose(a, b)


def test_a_write_that_torch_refuses_is_right_here():
    """torch refuses `_p_sigmoid_and_clamp` (the clamp changes the view's counter, which
    sigmoid's saved output shares); retrograd's sigmoid saved its own result, so the
    gradient is exact: checked against the same computation written out of place."""
    x0 = np.random.default_rng(2).standard_normal((2, 3, 4))
    x = rg.tensor(x0, requires_grad=True)
    out = _p_sigmoid_and_clamp(rg, x)
    (out * out).sum().backward()
    t = torch.tensor(x0, requires_grad=True)
    y0 = torch.sigmoid(t[0])
    y1 = t[1].clone()
    y1[:, ::2] = t[1, :, ::2].clamp(-0.2, 0.3)
    ref = torch.stack([y0, y1]) ** 2
    (ref * ref).sum().backward()
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-10)
