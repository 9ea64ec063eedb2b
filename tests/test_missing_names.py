"""PyTorch names that retrograd lacked, against torch: `as_strided_scatter` (function and
method), `linalg.ldl_factor`, `ldl_factor_ex`, `ldl_solve`, and the others added with them.

Values, dtypes and shapes against torch; gradients against torch where torch's are right and
against finite differences (rg.gradcheck) always; bad input raising torch's exception type.
"""

import numpy as np
import pytest
import torch

import retrograd as rg

RNG = np.random.default_rng(11)


def _r(*shape):
    return RNG.standard_normal(shape)


def _same(got: rg.Tensor, want: torch.Tensor, rtol=1e-10, atol=1e-12) -> None:
    want = want.detach().resolve_conj().numpy()
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_allclose(got.data, want, rtol=rtol, atol=atol)


# ---------------------------------------------------------------- as_strided_scatter

WINDOWS = [((2, 2), (1, 2), 1), ((3,), (4,), 0), ((), (), 5), ((2, 0), (1, 1), 0),
           ((2, 2, 2), (6, 1, 2), 0), ((12,), (1,), 0)]
OVERLAPS = [((2, 3), (1, 1), None), ((2, 2), (1, 1), 0), ((3, 3), (2, 1), 1),
            ((2, 3, 2), (1, 2, 1), 0), ((3, 2, 2), (1, 1, 2), 0)]


@pytest.mark.parametrize(("size", "stride", "offset"), WINDOWS + OVERLAPS)
def test_as_strided_scatter_values_and_gradients(size, stride, offset):
    xs, ss, g = _r(3, 4), _r(*size), _r(3, 4)
    tx, ts = torch.tensor(xs, requires_grad=True), torch.tensor(ss, requires_grad=True)
    want = torch.as_strided_scatter(tx, ts, size, stride, offset)
    want.backward(torch.tensor(g))
    rx, rs = rg.tensor(xs, requires_grad=True), rg.tensor(ss, requires_grad=True)
    got = rg.as_strided_scatter(rx, rs, size, stride, offset)
    _same(got, want)  # overlapping windows too: the element torch's kernel writes last
    got.backward(rg.tensor(g))
    # torch's gradient for input is the output's *inside* the window (derivatives.yaml's
    # as_strided_scatter_backward copies the window's slice into zeros; albanD flagged it
    # in pytorch#77128): the true one is the output's *outside*, so the two sum to g.
    np.testing.assert_allclose(rx.grad.data + tx.grad.numpy(), g, rtol=1e-12, atol=1e-12)
    if (size, stride, offset) in WINDOWS:  # no position written twice: torch's is right
        _same(rs.grad, ts.grad)
    else:  # torch gives overwritten elements a gradient too; they have none
        kept = rg.as_strided_scatter(rg.zeros(12, dtype=np.float64).reshape(3, 4),
                                     rg.ones(*size, dtype=np.float64), size, stride, offset)
        assert rs.grad.data.sum() == pytest.approx((g * kept.data).sum())
        assert (rs.grad.data != 0).sum() == (kept.data != 0).sum()
    method = rx.detach().as_strided_scatter(rs.detach(), size, stride, offset)
    np.testing.assert_array_equal(method.data, got.data)


@pytest.mark.parametrize(("size", "stride", "offset"), [((2, 3), (1, 1), 0),
                                                        ((2, 2), (1, 2), 1)])
def test_as_strided_scatter_gradients_by_finite_differences(size, stride, offset):
    x = rg.tensor(_r(3, 4), requires_grad=True)
    src = rg.tensor(_r(*size), requires_grad=True)

    def f(a, b):
        return rg.as_strided_scatter(a, b, size, stride, offset) ** 2

    assert rg.gradcheck(f, (x, src))
    assert rg.gradgradcheck(f, (x, src))


def test_as_strided_scatter_forward_mode_matches_torch():
    xs, ss, tx_, ts_ = _r(3, 4), _r(2, 3), _r(3, 4), _r(2, 3)
    args = ((2, 3), (1, 1), 1)
    _, want = torch.func.jvp(lambda a, b: torch.as_strided_scatter(a, b, *args),
                             (torch.tensor(xs), torch.tensor(ss)),
                             (torch.tensor(tx_), torch.tensor(ts_)))
    _, got = rg.func.jvp(lambda a, b: rg.as_strided_scatter(a, b, *args),
                         (rg.tensor(xs), rg.tensor(ss)), (rg.tensor(tx_), rg.tensor(ts_)))
    _same(got, want)


def test_as_strided_scatter_dtypes_cast_src_to_input():
    for xd, sd in [(np.float64, np.float32), (np.int64, np.float64), (np.float32, np.int64)]:
        xs = np.arange(12).reshape(3, 4).astype(xd)
        ss = (np.arange(4).reshape(2, 2) * 1.5).astype(sd)
        want = torch.as_strided_scatter(torch.tensor(xs), torch.tensor(ss), (2, 2), (1, 2))
        got = rg.as_strided_scatter(rg.tensor(xs), rg.tensor(ss), (2, 2), (1, 2))
        _same(got, want)


@pytest.mark.parametrize(("size", "stride", "offset", "src_shape"), [
    ((2, 2), (1, 2), 20, (2, 2)),  # out of bounds
    ((2, 3), (1, 2), 0, (2, 2)),  # src of the wrong shape
    ((2, 2), (1, 2, 3), 0, (2, 2)),  # lengths differ
    ((2, 2), (-1, 2), 0, (2, 2)),  # negative stride
    ((2, 2), (1, 2), -1, (2, 2)),  # negative offset
    ((2, 2), (0, 1), 0, (2, 2)),  # a zero stride: one location written by several elements
])
def test_as_strided_scatter_bad_input_raises_like_torch(size, stride, offset, src_shape):
    xs, ss = _r(3, 4), _r(*src_shape)
    with pytest.raises(RuntimeError):
        torch.as_strided_scatter(torch.tensor(xs), torch.tensor(ss), size, stride, offset)
    with pytest.raises(RuntimeError):
        rg.as_strided_scatter(rg.tensor(xs), rg.tensor(ss), size, stride, offset)


def test_as_strided_scatter_refuses_a_non_contiguous_input():
    """torch reads a transposed input's storage in its memory order, which retrograd's
    layouts need not share: refused, as rg.as_strided does, never a different answer."""
    x = rg.tensor(_r(3, 4)).T
    with pytest.raises(RuntimeError, match="contiguous"):
        rg.as_strided_scatter(x, rg.tensor(_r(2, 2)), (2, 2), (1, 2))
    want = torch.as_strided_scatter(torch.tensor(x.data).contiguous(),
                                    torch.tensor(np.ones((2, 2))), (2, 2), (1, 2))
    _same(rg.as_strided_scatter(x.contiguous(), rg.ones(2, 2, dtype=np.float64), (2, 2),
                                (1, 2)), want)
