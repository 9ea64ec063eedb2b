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


# ---------------------------------------------------------------- linalg.ldl_*

def _symmetric(shape, dtype, hermitian):
    a = _r(*shape) + (1j * _r(*shape) if np.dtype(dtype).kind == "c" else 0)
    at = np.swapaxes(a, -1, -2)
    return (a + (np.conj(at) if hermitian else at)).astype(dtype)


LDL_CASES = [(np.float64, False, (4, 4)), (np.float32, False, (2, 3, 3)),
             (np.float64, True, (5, 5)), (np.complex128, False, (3, 3)),
             (np.complex128, True, (2, 4, 4)), (np.complex64, True, (3, 3))]


@pytest.mark.parametrize(("dtype", "hermitian", "shape"), LDL_CASES)
def test_ldl_factor_and_solve_match_torch(dtype, hermitian, shape):
    a = _symmetric(shape, dtype, hermitian)
    b = (_r(*shape[:-1], 2) + (1j * _r(*shape[:-1], 2) if np.dtype(dtype).kind == "c" else 0)
         ).astype(dtype)
    tol = dict(rtol=1e-4, atol=1e-5) if dtype in (np.float32, np.complex64) else {}
    want = torch.linalg.ldl_factor_ex(torch.tensor(a), hermitian=hermitian)
    got = rg.linalg.ldl_factor_ex(rg.tensor(a), hermitian=hermitian)
    _same(got.LD, want.LD, **tol)
    _same(got.pivots, want.pivots)
    _same(got.info, want.info)
    LD, piv = rg.linalg.ldl_factor(rg.tensor(a), hermitian=hermitian)
    np.testing.assert_array_equal(LD.data, got.LD.data)
    np.testing.assert_array_equal(piv.data, got.pivots.data)
    x_want = torch.linalg.ldl_solve(want.LD, want.pivots, torch.tensor(b), hermitian=hermitian)
    x_got = rg.linalg.ldl_solve(LD, piv, rg.tensor(b), hermitian=hermitian)
    _same(x_got, x_want, **tol)
    np.testing.assert_allclose(a @ x_got.data, b, **(tol or dict(rtol=1e-9, atol=1e-9)))


def test_ldl_two_by_two_pivots_zero_matrices_and_broadcast_batches():
    a = np.array([[0.0, 1.0, 2.0], [1.0, 0.0, 3.0], [2.0, 3.0, 0.0]])
    want = torch.linalg.ldl_factor(torch.tensor(a))
    got = rg.linalg.ldl_factor(rg.tensor(a))
    assert (want.pivots < 0).any()  # a 2x2 block of D
    _same(got.LD, want.LD)
    _same(got.pivots, want.pivots)
    b = _r(2, 3, 2)  # an unbatched factorisation against a batch of right-hand sides
    _same(rg.linalg.ldl_solve(*got, rg.tensor(b)),
          torch.linalg.ldl_solve(*want, torch.tensor(b)))
    # int64 pivots are accepted, as torch does
    _same(rg.linalg.ldl_solve(got.LD, got.pivots.to(np.int64), rg.tensor(b[0])),
          torch.linalg.ldl_solve(want.LD, want.pivots.long(), torch.tensor(b[0])))
    # batch (1,) against (4,): broadcast (torch 2.13 crashes here; the loop is the answer)
    a2 = _symmetric((1, 3, 3), np.float64, False)
    b2 = _r(4, 3, 2)
    LD, piv = rg.linalg.ldl_factor(rg.tensor(a2))
    x = rg.linalg.ldl_solve(LD, piv, rg.tensor(b2))
    for k in range(4):
        np.testing.assert_allclose(a2[0] @ x.data[k], b2[k], rtol=1e-9, atol=1e-9)
    empty = rg.linalg.ldl_factor(rg.zeros(0, 0))
    _same(empty.LD, torch.linalg.ldl_factor(torch.zeros(0, 0)).LD)
    _same(empty.pivots, torch.linalg.ldl_factor(torch.zeros(0, 0)).pivots)


def test_ldl_factor_reads_the_lower_triangle_only():
    a = _r(4, 4)
    got = rg.linalg.ldl_factor(rg.tensor(a))
    _same(got.LD, torch.linalg.ldl_factor(torch.tensor(a)).LD)
    sym_lower = np.tril(a) + np.tril(a, -1).T
    np.testing.assert_array_equal(rg.linalg.ldl_factor(rg.tensor(sym_lower)).LD.data,
                                  got.LD.data)


def test_ldl_factor_singular_info_and_errors():
    z = np.zeros((2, 3, 3))
    z[1] = np.eye(3)
    want = torch.linalg.ldl_factor_ex(torch.tensor(z))
    got = rg.linalg.ldl_factor_ex(rg.tensor(z))
    _same(got.info, want.info)
    _same(got.LD, want.LD)
    _same(got.pivots, want.pivots)
    with pytest.raises(RuntimeError):
        torch.linalg.ldl_factor(torch.tensor(z))
    with pytest.raises(RuntimeError, match="singular"):
        rg.linalg.ldl_factor(rg.tensor(z))
    with pytest.raises(RuntimeError, match="singular"):
        rg.linalg.ldl_factor_ex(rg.tensor(z), check_errors=True)


def test_ldl_has_no_derivative_as_in_torch():
    a = _symmetric((3, 3), np.float64, False)
    ta = torch.tensor(a, requires_grad=True)
    ra = rg.tensor(a, requires_grad=True)
    tLD, tp = torch.linalg.ldl_factor(ta)
    rLD, rp = rg.linalg.ldl_factor(ra)
    assert rLD.requires_grad == tLD.requires_grad is True
    assert rp.requires_grad == tp.requires_grad is False
    with pytest.raises(RuntimeError, match="not implemented"):
        tLD.sum().backward()
    with pytest.raises(RuntimeError, match="not implemented"):
        rLD.sum().backward()
    b = rg.tensor(_r(3, 1), requires_grad=True)
    x = rg.linalg.ldl_solve(rLD.detach(), rp, b)
    assert x.requires_grad
    with pytest.raises(RuntimeError, match="not implemented"):
        x.sum().backward()
    with rg.no_grad():
        assert not rg.linalg.ldl_factor(ra).LD.requires_grad


def _both(fn):
    """The exception types torch and retrograd raise for fn(M) (M = torch or rg)."""
    out = []
    for M, lin in ((torch, torch.linalg), (rg, rg.linalg)):
        with pytest.raises(Exception) as e:  # noqa: PT011 - the types are compared below
            fn(M, lin)
        out.append(e.type)
    return out


@pytest.mark.parametrize("bad", [
    lambda M, lin: lin.ldl_factor(M.zeros(3, 4, dtype=M.float64)),
    lambda M, lin: lin.ldl_factor(M.zeros(3, dtype=M.float64)),
    lambda M, lin: lin.ldl_factor(M.zeros(3, 3, dtype=M.int64)),
    lambda M, lin: lin.ldl_factor_ex(M.zeros(2, 3, dtype=M.float64)),
    lambda M, lin: lin.ldl_solve(M.eye(3, dtype=M.float64), M.ones(3, dtype=M.int32),
                                 M.ones(3, 2, dtype=M.float32)),  # dtypes differ
    lambda M, lin: lin.ldl_solve(M.eye(3, dtype=M.float64), M.ones(3, dtype=M.float64),
                                 M.ones(3, 2, dtype=M.float64)),  # float pivots
    lambda M, lin: lin.ldl_solve(M.eye(3, dtype=M.float64), M.ones(3, dtype=M.int32),
                                 M.ones(4, 2, dtype=M.float64)),  # B's rows
    lambda M, lin: lin.ldl_solve(M.eye(3, dtype=M.float64), M.ones(2, dtype=M.int32),
                                 M.ones(3, 2, dtype=M.float64)),  # pivots' shape
    lambda M, lin: lin.ldl_solve(M.eye(3, dtype=M.float64), M.ones(3, dtype=M.int32),
                                 M.ones(3, dtype=M.float64)),  # 1-d B
    lambda M, lin: lin.ldl_solve(M.eye(3, dtype=M.float64), 5 * M.ones(3, dtype=M.int32),
                                 M.ones(3, 2, dtype=M.float64)),  # |pivot| > n
    lambda M, lin: lin.ldl_solve(M.eye(3, dtype=M.float64), M.zeros(3, dtype=M.int32),
                                 M.ones(3, 2, dtype=M.float64)),  # pivot 0
    lambda M, lin: lin.ldl_solve(M.ones(2, 3, dtype=M.float64), M.ones(2, dtype=M.int32),
                                 M.ones(2, 2, dtype=M.float64)),  # LD not square
])
def test_ldl_bad_input_raises_like_torch(bad):
    want, got = _both(bad)
    assert issubclass(got, want), (got, want)


# ---------------------------------------------------------------- hash_tensor

@pytest.mark.parametrize("dim", [None, 0, 2, (0, 2), (-1, 0), [], (1,)])
@pytest.mark.parametrize("keepdim", [False, True])
def test_hash_tensor_matches_torch(dim, keepdim):
    x = _r(3, 4, 5).astype(np.float32)
    kw = {} if dim is None else {"dim": dim}
    want = torch.hash_tensor(torch.tensor(x), keepdim=keepdim, **kw)
    got = rg.hash_tensor(rg.tensor(x), keepdim=keepdim, **kw)
    _same(got, want)
    np.testing.assert_array_equal(rg.tensor(x).hash_tensor(keepdim=keepdim, **kw).data,
                                  got.data)


@pytest.mark.parametrize("arr", [
    np.array([[1, -2, 0], [4, 5, 6]], np.int32), np.array([-1, 2, 7], np.int8),
    np.array([200, 2, 9], np.uint8), np.array([True, False, True]),
    np.array([1.5, -3.25], np.float16), np.array([np.nan, -0.0, np.inf]), np.array(3.5),
    np.arange(-7, 6, dtype=np.int64)])
def test_hash_tensor_dtypes_match_torch(arr):
    _same(rg.hash_tensor(rg.tensor(arr)), torch.hash_tensor(torch.tensor(arr)))


def test_hash_tensor_ignores_gradients_and_refuses_like_torch():
    x = rg.tensor(_r(2, 3), requires_grad=True)
    h = rg.hash_tensor(x, 1)
    assert not h.requires_grad
    _same(h, torch.hash_tensor(torch.tensor(x.data, requires_grad=True), 1))
    for bad, kw in [(np.zeros(0), {}), (np.zeros((2, 0)), {"dim": 1}),
                    (np.ones(3, np.complex64), {}), (np.ones(3, np.uint32), {}),
                    (np.ones((2, 3)), {"dim": 2}), (np.ones(3), {"mode": 1})]:
        with pytest.raises(Exception) as want:  # noqa: PT011 - the types are compared below
            torch.hash_tensor(torch.tensor(bad), **kw)
        with pytest.raises(want.type):
            rg.hash_tensor(rg.tensor(bad), **kw)


# ---------------------------------------------------------------- api/torch_additions.py

def _grads(fn_t, fn_r, *arrays):
    """Values and float64 gradients of a random weighting, torch against retrograd."""
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    rs = [rg.tensor(a, requires_grad=True) for a in arrays]
    want, got = fn_t(*ts), fn_r(*rs)
    _same(got, want)
    w = _r(*want.shape)
    (want * torch.tensor(w)).sum().backward()
    (got * rg.tensor(w)).sum().backward()
    for t, r in zip(ts, rs):
        _same(r.grad, t.grad)


@pytest.mark.parametrize(("p", "dim"), [(2, 0), (2, 1), (2, -1), (3, 2), (1, 0)])
def test_norm_except_dim(p, dim):
    v = _r(3, 4, 5)
    _grads(lambda t: torch.norm_except_dim(t, p, dim), lambda t: rg.norm_except_dim(t, p, dim),
           v)
    assert rg.gradcheck(lambda t: rg.norm_except_dim(t, p, dim), (rg.tensor(v,
                                                                             requires_grad=True),))


@pytest.mark.parametrize(("inp", "w", "args"), [
    ((2, 4, 7, 7), (6, 2, 3, 3), ([2, 1], [1, 0], [1, 2], False, [0, 0], 2)),
    ((2, 4, 7), (6, 4, 3), ([1], [2], [1], False, [0], 1)),
    ((1, 4, 5, 5, 5), (2, 4, 2, 2, 2), ([1] * 3, [0] * 3, [1] * 3, False, [0] * 3, 1)),
    ((2, 4, 5, 5), (4, 3, 3, 3), ([2, 2], [1, 1], [1, 1], True, [1, 0], 1)),
    ((2, 4, 6), (4, 1, 3), ([2], [0], [2], True, [1], 2)),
])
def test_convolution_matches_torch(inp, w, args):
    b = _r(w[0] if not args[3] else w[1] * args[5])
    _grads(lambda x, k, c: torch.convolution(x, k, c, *args),
           lambda x, k, c: rg.convolution(x, k, c, *args), _r(*inp), _r(*w), b)


def test_convolution_bad_input():
    x, w = _r(2, 4, 5, 5), _r(6, 4, 3, 3)
    for args in [([1, 1, 1], [0], [1], False, [0], 1), ([1], [0, 0, 0], [1], False, [0], 1)]:
        with pytest.raises(RuntimeError):
            torch.convolution(torch.tensor(x), torch.tensor(w), None, *args)
        with pytest.raises(RuntimeError):
            rg.convolution(rg.tensor(x), rg.tensor(w), None, *args)


@pytest.mark.parametrize("interp", [0, 1, 2])
@pytest.mark.parametrize("pad", [0, 1, 2])
@pytest.mark.parametrize("align", [False, True])
def test_grid_sampler_2d(interp, pad, align):
    _grads(lambda x, g: torch.grid_sampler_2d(x, g, interp, pad, align),
           lambda x, g: rg.grid_sampler_2d(x, g, interp, pad, align),
           _r(2, 3, 5, 5), RNG.uniform(-1.2, 1.2, (2, 4, 3, 2)))


def test_grid_sampler_3d_and_bad_codes():
    _grads(lambda x, g: torch.grid_sampler_3d(x, g, 0, 2, False),
           lambda x, g: rg.grid_sampler_3d(x, g, 0, 2, False),
           _r(1, 2, 3, 4, 3), RNG.uniform(-1.1, 1.1, (1, 2, 2, 3, 3)))
    with pytest.raises(RuntimeError):
        rg.grid_sampler_2d(rg.tensor(_r(1, 1, 3, 3)), rg.tensor(_r(1, 2, 2, 2)), 5, 0, False)
    with pytest.raises(RuntimeError):
        rg.grid_sampler_3d(rg.tensor(_r(1, 1, 3, 3, 3)), rg.tensor(_r(1, 2, 2, 2, 3)), 2, 0,
                           False)


def test_constants_and_removed_functions():
    assert rg.newaxis is torch.newaxis is None
    assert rg.tensor(_r(3))[:, rg.newaxis].shape == (3, 1)
    assert rg.has_lapack is True and rg.has_spectral is True
    assert rg.legacy_contiguous_format is rg.contiguous_format
    a = _r(3, 3)
    for n, args in [("solve", (a, a)), ("lstsq", (a, a)), ("eig", (a,)), ("symeig", (a,)),
                    ("matrix_rank", (a,))]:
        with pytest.raises(RuntimeError, match="removed"):
            getattr(torch, n)(*[torch.tensor(v) for v in args])
        with pytest.raises(RuntimeError, match="removed"):
            getattr(rg, n)(*[rg.tensor(v) for v in args])
        if n != "matrix_rank":
            with pytest.raises(RuntimeError, match="removed"):
                getattr(rg.tensor(a), n)(*[rg.tensor(v) for v in args[1:]])


def test_tensor_queries_match_torch():
    a = _r(2, 3)
    t, r = torch.tensor(a), rg.tensor(a)
    assert r.name is None and t.name is None
    with pytest.warns(UserWarning, match="volatile"):
        assert r.volatile is False
    assert r.is_distributed() is t.is_distributed() is False
    assert r.const_data_ptr() == r.data_ptr()
    assert r.is_set_to(r) and t.is_set_to(t)
    assert not r.is_set_to(r.clone()) and not t.is_set_to(t.clone())
    assert not r.is_set_to(r.T) and not t.is_set_to(t.T)
    assert r.is_set_to(r.detach()) and t.is_set_to(t.detach())
    fn = lambda v, x, y: v * 2 + x - y  # noqa: E731
    x, y = _r(3), _r(2, 3)
    want = torch.tensor(a).map2_(torch.tensor(x), torch.tensor(y), fn)
    got = rg.tensor(a).map2_(rg.tensor(x), rg.tensor(y), fn)
    _same(got, want)
    with pytest.raises(RuntimeError):
        rg.tensor(a, requires_grad=True).map2_(rg.tensor(x), rg.tensor(y), fn)


# ---------------------------------------------------------------- api/rnn_functional.py

def _run_both(fn_name, arrays, build):
    """fn(*build(M, tensors)) for torch and rg: values and float64 gradients of every
    output's sum with respect to every array."""
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    rs = [rg.tensor(a, requires_grad=True) for a in arrays]
    want = getattr(torch, fn_name)(*build(ts))
    got = getattr(rg, fn_name)(*build(rs))
    want = want if isinstance(want, tuple) else (want,)
    got = got if isinstance(got, tuple) else (got,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        _same(g, w)
    sum((w * k).sum() for k, w in enumerate(want, 1)).backward()
    sum((g * k).sum() for k, g in enumerate(got, 1)).backward()
    for t, r in zip(ts, rs):
        assert (r.grad is None) == (t.grad is None)  # unused arrays (no bias) have none
        if t.grad is not None:
            _same(r.grad, t.grad)


@pytest.mark.parametrize(("name", "gates"), [("lstm_cell", 4), ("gru_cell", 3),
                                             ("rnn_tanh_cell", 1), ("rnn_relu_cell", 1)])
@pytest.mark.parametrize("bias", [False, True])
def test_rnn_cells_match_torch(name, gates, bias):
    B, In, H = 3, 4, 5
    arrays = [_r(B, In), _r(B, H), _r(B, H), _r(gates * H, In), _r(gates * H, H),
              _r(gates * H), _r(gates * H)]

    def build(t):
        hx = (t[1], t[2]) if name == "lstm_cell" else t[1]
        return (t[0], hx, t[3], t[4]) + ((t[5], t[6]) if bias else ())

    _run_both(name, arrays, build)


@pytest.mark.parametrize("name", ["lstm", "gru", "rnn_tanh", "rnn_relu"])
@pytest.mark.parametrize(("layers", "bidirectional", "batch_first", "bias"),
                         [(1, False, False, True), (2, True, True, True),
                          (2, False, False, False)])
def test_rnn_sequences_match_torch(name, layers, bidirectional, batch_first, bias):
    T, B, In, H = 3, 2, 3, 4
    gates = {"lstm": 4, "gru": 3}.get(name, 1)
    dirs = 2 if bidirectional else 1
    params = []
    for layer in range(layers):
        for _ in range(dirs):
            width = In if layer == 0 else H * dirs
            params += [_r(gates * H, width), _r(gates * H, H)]
            params += [_r(gates * H), _r(gates * H)] if bias else []
    x = _r(B, T, In) if batch_first else _r(T, B, In)
    arrays = [x, _r(layers * dirs, B, H), _r(layers * dirs, B, H)] + params

    def build(t):
        hx = (t[1], t[2]) if name == "lstm" else t[1]
        return (t[0], hx, t[3:], bias, layers, 0.0, False, bidirectional, batch_first)

    _run_both(name, arrays, build)


def test_lstm_with_projections_and_gradcheck():
    T, B, In, H, P = 3, 2, 3, 4, 2
    arrays = [_r(T, B, In), _r(1, B, P), _r(1, B, H), _r(4 * H, In), _r(4 * H, P),
              _r(4 * H), _r(4 * H), _r(P, H)]
    _run_both("lstm", arrays, lambda t: (t[0], (t[1], t[2]), t[3:], True, 1, 0.0, False,
                                         False, False))
    xs = [rg.tensor(_r(2, 3), requires_grad=True), rg.tensor(_r(2, 2), requires_grad=True)]
    w = [rg.tensor(_r(6, 3)), rg.tensor(_r(6, 2))]
    assert rg.gradcheck(lambda x, h: rg.gru_cell(x, h, *w), xs)
    assert rg.gradgradcheck(lambda x, h: rg.gru_cell(x, h, *w), xs)


def test_rnn_bad_input_raises_like_torch():
    x, h = _r(3, 4), _r(3, 5)
    for name, wi, wh in [("gru_cell", _r(16, 4), _r(15, 5)), ("rnn_tanh_cell", _r(5, 3),
                                                                _r(5, 5))]:
        with pytest.raises(RuntimeError):
            getattr(torch, name)(torch.tensor(x), torch.tensor(h), torch.tensor(wi),
                                 torch.tensor(wh))
        with pytest.raises(RuntimeError):
            getattr(rg, name)(rg.tensor(x), rg.tensor(h), rg.tensor(wi), rg.tensor(wh))
    with pytest.raises(IndexError):
        torch.lstm_cell(torch.tensor(x[0]), (torch.tensor(h[0]),) * 2,
                        torch.tensor(_r(20, 4)), torch.tensor(_r(20, 5)))
    with pytest.raises(IndexError):
        rg.lstm_cell(rg.tensor(x[0]), (rg.tensor(h[0]),) * 2, rg.tensor(_r(20, 4)),
                     rg.tensor(_r(20, 5)))
    with pytest.raises(RuntimeError):  # a parameter missing
        rg.gru(rg.tensor(_r(2, 3, 4)), rg.tensor(_r(1, 3, 5)), [rg.tensor(_r(15, 4))], False,
               1, 0.0, False, False, False)


# ---------------------------------------------------------------- binomial

def test_binomial_draws_have_the_binomial_moments_and_torch_shapes():
    rg.manual_seed(3)
    n, p, k = 12.0, 0.3, 40000
    x = rg.binomial(rg.full((k,), n, dtype=np.float64), rg.full((k,), p, dtype=np.float64))
    assert x.dtype == np.float64
    mean, var = n * p, n * p * (1 - p)
    assert abs(x.data.mean() - mean) < 5 * np.sqrt(var / k)
    assert abs(x.data.var() - var) < 0.05 * var
    assert (x.data == np.round(x.data)).all() and x.data.min() >= 0 and x.data.max() <= n
    c, q = np.array([[3.0], [5.0]], np.float32), np.array([0.0, 1.0], np.float32)
    want = torch.binomial(torch.tensor(c), torch.tensor(q))  # p 0 and 1: no randomness
    _same(rg.binomial(rg.tensor(c), rg.tensor(q)), want)
    g1, g2 = rg.Generator().manual_seed(5), rg.Generator().manual_seed(5)
    a = rg.binomial(rg.full((5,), 9.0), rg.full((5,), 0.5), generator=g1)
    b = rg.binomial(rg.full((5,), 9.0), rg.full((5,), 0.5), generator=g2)
    np.testing.assert_array_equal(a.data, b.data)


def test_binomial_gradient_and_bad_input_like_torch():
    c, q = _r(3) ** 2 // 1 + 1, np.full(3, 0.4)
    tc, rc = torch.tensor(c, requires_grad=True), rg.tensor(c, requires_grad=True)
    t, r = torch.binomial(tc, torch.tensor(q)), rg.binomial(rc, rg.tensor(q))
    assert t.requires_grad and r.requires_grad
    with pytest.raises(RuntimeError, match="not implemented"):
        t.sum().backward()
    with pytest.raises(RuntimeError, match="not implemented"):
        r.sum().backward()
    for cc, qq in [(np.ones(3, np.int64), np.full(3, 0.5)),  # integer count
                   (np.ones(3), np.full(3, 0.5, np.float32)),  # dtypes differ
                   (np.ones(3), np.full(2, 0.5))]:  # shapes do not broadcast
        with pytest.raises(Exception) as want:  # noqa: PT011 - the types are compared below
            torch.binomial(torch.tensor(cc), torch.tensor(qq))
        with pytest.raises(want.type):
            rg.binomial(rg.tensor(cc), rg.tensor(qq))
    for cc, qq in [(np.full(2, -1.0), np.full(2, 0.5)), (np.full(2, 2.5), np.full(2, 0.5)),
                   (np.ones(2), np.full(2, 1.5))]:  # torch returns garbage here
        with pytest.raises(ValueError):
            rg.binomial(rg.tensor(cc), rg.tensor(qq))


# ---------------------------------------------------------------- api/native_norms.py

def _all_same(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        _same(g, w)


def test_native_layer_and_group_norm_match_torch():
    x, w, b = _r(2, 3, 4, 5), _r(4, 5), _r(4, 5)
    args_t = (torch.tensor(x, requires_grad=True), [4, 5], torch.tensor(w), torch.tensor(b),
              1e-5)
    args_r = (rg.tensor(x, requires_grad=True), [4, 5], rg.tensor(w), rg.tensor(b), 1e-5)
    want, got = torch.native_layer_norm(*args_t), rg.native_layer_norm(*args_r)
    _all_same(got, want)
    g = _r(2, 3, 4, 5)
    want[0].backward(torch.tensor(g))
    got[0].backward(rg.tensor(g))
    _same(args_r[0].grad, args_t[0].grad)
    w3, b3 = _r(3), _r(3)
    _all_same(rg.native_group_norm(rg.tensor(x), rg.tensor(w3), rg.tensor(b3), 2, 3, 20, 3,
                                   1e-5),
              torch.native_group_norm(torch.tensor(x), torch.tensor(w3), torch.tensor(b3), 2, 3,
                                      20, 3, 1e-5))
    _all_same(rg.native_group_norm(rg.tensor(x), None, None, 2, 3, 20, 1, 1e-3),
              torch.native_group_norm(torch.tensor(x), None, None, 2, 3, 20, 1, 1e-3))
    with pytest.raises(RuntimeError):
        rg.native_group_norm(rg.tensor(x), None, None, 2, 3, 20, 2, 1e-5)


@pytest.mark.parametrize("training", [True, False])
def test_native_batch_norm_matches_torch(training):
    x, w, b = _r(4, 3, 5), _r(3), _r(3)
    trm, trv = torch.tensor(_r(3)), torch.tensor(np.abs(_r(3)) + 0.5)
    rrm, rrv = rg.tensor(trm.numpy().copy()), rg.tensor(trv.numpy().copy())
    want = torch.native_batch_norm(torch.tensor(x), torch.tensor(w), torch.tensor(b), trm, trv,
                                   training, 0.2, 1e-5)
    got = rg.native_batch_norm(rg.tensor(x), rg.tensor(w), rg.tensor(b), rrm, rrv, training,
                               0.2, 1e-5)
    _all_same(got, want)
    _same(rrm, trm)
    _same(rrv, trv)
    if training:
        _all_same(rg.native_batch_norm(rg.tensor(x), None, None, None, None, True, 0.1, 1e-5),
                  torch.native_batch_norm(torch.tensor(x), None, None, None, None, True, 0.1,
                                          1e-5))
    else:  # torch 2.13 crashes the process here; refused
        with pytest.raises(RuntimeError, match="eval"):
            rg.native_batch_norm(rg.tensor(x), None, None, None, None, False, 0.1, 1e-5)


def test_native_dropout():
    x = rg.tensor(_r(50, 40), requires_grad=True)
    out, mask = rg.native_dropout(x, 0.3, True)
    assert mask.dtype == np.bool_ and out.shape == x.shape
    np.testing.assert_allclose(out.data, np.where(mask.data, x.data / 0.7, 0.0), rtol=1e-12)
    assert abs(mask.data.mean() - 0.7) < 0.05
    out.sum().backward()
    np.testing.assert_allclose(x.grad.data, np.where(mask.data, 1 / 0.7, 0.0), rtol=1e-12)
    for p in (0.0, 1.0):
        want = torch.native_dropout(torch.tensor(x.data), p, True)
        _all_same(rg.native_dropout(x.detach(), p, True), want)
    _all_same(rg.native_dropout(x.detach(), 0.5, False),
              torch.native_dropout(torch.tensor(x.data), 0.5, False))
    with pytest.raises(RuntimeError):
        rg.native_dropout(x, 1.5, True)


# ---------------------------------------------------------------- api/sym_shapes.py

@pytest.mark.parametrize(("name", "args"), [
    ("sym_max", (3, 5)), ("sym_max", (3.5, 2)), ("sym_max", (2.0, 2)), ("sym_max", (True, 2)),
    ("sym_min", (3, 5.0)), ("sym_min", (2, 2.0)), ("sym_int", (3.7,)), ("sym_int", (-3.7,)),
    ("sym_int", (True,)), ("sym_float", (3,)), ("sym_not", (True,)), ("sym_not", (0,)),
    ("sym_sqrt", (4,)), ("sym_sqrt", (2.0,)), ("sym_sum", ([1, 2, 3],)),
    ("sym_sum", ([1.5, 2],)), ("sym_sum", ([],)), ("sym_ite", (True, 1, 2)),
    ("sym_ite", (False, 1, 2)), ("sym_fresh_size", (5,)), ("sym_max", (np.int64(3), 5)),
    ("sym_int", (np.float64(2.5),))])
def test_sym_helpers_match_torch(name, args):
    want, got = getattr(torch, name)(*args), getattr(rg, name)(*args)
    assert got == want and type(got) is type(want)


def test_sym_helpers_checks_like_torch():
    assert rg.sym_constrain_range(5, min=0, max=10) is None
    assert rg.sym_constrain_range_for_size(5, max=10) is None
    for fn, size, kw in [("sym_constrain_range", 5, {"min": 6, "max": 10}),
                         ("sym_constrain_range_for_size", 1, {"min": 2}),
                         ("sym_constrain_range_for_size", -1, {})]:
        with pytest.raises(RuntimeError):
            getattr(torch, fn)(size, **kw)
        with pytest.raises(RuntimeError):
            getattr(rg, fn)(size, **kw)
    with pytest.raises(ValueError):
        rg.sym_sqrt(-1)
    assert rg.sym_int(rg.tensor(3.5)) == torch.sym_int(torch.tensor(3.5)) == 3


# ---------------------------------------------------------------- while_loop

def test_while_loop_matches_torch_values_and_gradients():
    x0 = _r(3)
    tx, rx = torch.tensor(x0, requires_grad=True), rg.tensor(x0, requires_grad=True)

    want = (torch.tensor(4), tx)  # torch.while_loop's eager meaning (the loop), without
    for _ in range(4):  # the seconds its torch.compile takes per call
        want = (want[0], want[1].sin() * 2)
    got = rg.while_loop(lambda i, v: i < 4, lambda i, v: (i + 1, v.sin() * 2),
                        (rg.tensor(0), rx))
    assert isinstance(got, tuple) and len(got) == 2
    _same(got[0], want[0])
    _same(got[1], want[1])
    want[1].sum().backward()
    got[1].sum().backward()
    _same(rx.grad, tx.grad)
    # a Python int carried along, a bare tensor body (torch 2.13 returns the bare tensor:
    # checked by hand, as each torch.while_loop call costs seconds of torch.compile), a loop
    # that never runs
    got = rg.while_loop(lambda i, n: i < n, lambda i, n: (i + 1, n), (rg.tensor(0), 3))
    _same(got[0], torch.tensor(3))
    assert got[1] == 3
    _same(rg.while_loop(lambda i: i < 3, lambda i: i + 1, (rg.tensor(0),)), torch.tensor(3))
    got = rg.while_loop(lambda v: False, lambda v: (v + 1,), (rx,))
    assert got[0] is rx


def test_while_loop_refuses_a_changing_carry():
    for body in [lambda i: (i + 1.0,), lambda i: (rg.stack([i, i]),), lambda i: (i + 1, i)]:
        with pytest.raises(RuntimeError):
            rg.while_loop(lambda i: i < 3, body, (rg.tensor(0),))
    with pytest.raises(TypeError):
        rg.while_loop(lambda i: i < 3, lambda i: (i + 1,), rg.tensor(0))
    with pytest.raises(ValueError):
        rg.while_loop(lambda i: i, lambda i: (i + 1,), (rg.zeros(2),))


# ---------------------------------------------------------------- F.grouped_mm

@pytest.mark.parametrize(("sa", "sb", "offs"), [
    ((6, 8), (3, 8, 4), [2, 4, 6]), ((6, 8), (3, 8, 4), [2, 2, 5]),
    ((3, 4, 16), (16, 8), [2, 4, 8]), ((4, 16), (16, 8), [4, 8, 12]),
    ((3, 4, 8), (3, 8, 4), None)])
def test_grouped_mm_matches_torch(sa, sb, offs):
    a, b = _r(*sa).astype(np.float32), _r(*sb).astype(np.float32)
    ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    ra, rb = rg.tensor(a, requires_grad=True), rg.tensor(b, requires_grad=True)
    to = None if offs is None else torch.tensor(offs, dtype=torch.int32)
    ro = None if offs is None else rg.tensor(np.array(offs, np.int32))
    want = torch.nn.functional.grouped_mm(ta, tb, offs=to)
    got = rg.nn.functional.grouped_mm(ra, rb, offs=ro)
    valid = np.ones(want.shape, bool)  # torch leaves rows/columns past offs[-1] uninitialised
    if offs is not None and len(sa) == 2 and len(sb) == 3:
        valid[offs[-1]:] = False
    if offs is not None and len(sa) == 3 and len(sb) == 2:
        valid[:, offs[-1]:] = False
    assert got.shape == tuple(want.shape) and got.dtype == np.float32
    np.testing.assert_allclose(got.data[valid], want.detach().numpy()[valid], rtol=1e-5,
                               atol=1e-5)
    assert (got.data[~valid] == 0).all()
    g = _r(*want.shape).astype(np.float32) * valid
    want.backward(torch.tensor(g))
    got.backward(rg.tensor(g))
    # past offs[-1] the operands are unused: torch's gradient there is uninitialised
    # memory, the true one zero
    ka, kb = ta.grad.numpy().copy(), tb.grad.numpy().copy()
    unused_a = unused_b = (slice(0, 0),)
    if offs is not None:
        end = offs[-1]
        if len(sa) == 2 and len(sb) == 2:
            unused_a, unused_b = (slice(None), slice(end, None)), (slice(end, None),)
        elif len(sa) == 2:
            unused_a = (slice(end, None),)
        else:
            unused_b = (slice(None), slice(end, None))
    assert (ra.grad.data[unused_a] == 0).all() and (rb.grad.data[unused_b] == 0).all()
    ka[unused_a], kb[unused_b] = 0, 0
    np.testing.assert_allclose(ra.grad.data, ka, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(rb.grad.data, kb, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(("sa", "sb", "offs", "kw"), [
    ((6, 8), (3, 8, 4), None, {}),  # offs missing
    ((3, 4, 8), (3, 8, 4), [1, 2, 3], {}),  # offs with two 3-d operands
    ((6, 8), (2, 8, 4), [2, 4, 6], {}),  # groups differ
    ((6, 8), (3, 8, 4), [2, 4, 6], {"bias": True}),
    ((6, 8), (3, 8, 4), [2, 4, 6], {"float64": True}),
    ((6, 8), (3, 8, 4), [2, 4, 6], {"int64_offs": True}),
])
def test_grouped_mm_bad_input_raises_like_torch(sa, sb, offs, kw):
    dt = np.float64 if kw.get("float64") else np.float32
    a, b = _r(*sa).astype(dt), _r(*sb).astype(dt)
    odt = np.int64 if kw.get("int64_offs") else np.int32
    for M, F in ((torch, torch.nn.functional), (rg, rg.nn.functional)):
        o = None if offs is None else M.tensor(np.array(offs, odt))
        bias = M.tensor(_r(3, 4).astype(dt)) if kw.get("bias") else None
        with pytest.raises(RuntimeError):
            F.grouped_mm(M.tensor(a), M.tensor(b), offs=o, bias=bias)
    with pytest.raises(RuntimeError, match="increase"):  # torch reads out of bounds here
        rg.nn.functional.grouped_mm(rg.tensor(_r(6, 8).astype(np.float32)),
                                    rg.tensor(_r(3, 8, 4).astype(np.float32)),
                                    offs=rg.tensor(np.array([4, 2, 7], np.int32)))


# ---------------------------------------------------------------- lobpcg

def _spd(n):
    m = _r(n, n)
    return m @ m.T + n * np.eye(n)


@pytest.mark.parametrize("kw", [dict(k=2), dict(k=2, largest=False), dict(k=3, B=True),
                                dict(k=2, B=True, largest=False), {}, dict(X=True)])
def test_lobpcg_matches_torch(kw):
    n = 12
    A, B, X = _spd(n), _spd(n), _r(n, 3)
    tk = {k: (torch.tensor(B) if k == "B" else torch.tensor(X) if k == "X" else v)
          for k, v in kw.items()}
    rk = {k: (rg.tensor(B) if k == "B" else rg.tensor(X) if k == "X" else v)
          for k, v in kw.items()}
    Et, Vt = torch.lobpcg(torch.tensor(A), **tk)
    Er, Vr = rg.lobpcg(rg.tensor(A), **rk)
    _same(Er, Et, rtol=1e-7)
    assert Vr.shape == tuple(Vt.shape)
    sign = np.sign((Vr.data * Vt.numpy()).sum(0))  # eigenvectors are defined up to sign
    np.testing.assert_allclose(Vr.data * sign, Vt.numpy(), atol=1e-5)


def test_lobpcg_gradients_and_errors():
    A = _spd(6)
    ta, ra = torch.tensor(A, requires_grad=True), rg.tensor(A, requires_grad=True)
    torch.lobpcg(ta, k=2)[0].sum().backward()
    rg.lobpcg(ra, k=2)[0].sum().backward()
    _same(ra.grad, ta.grad, rtol=1e-6, atol=1e-8)

    def f(a):
        return rg.lobpcg((a + a.mT) / 2, k=2)[0]

    assert rg.gradcheck(f, (rg.tensor(A, requires_grad=True),))
    A12, X2 = _spd(12), _r(12, 2)
    _same(rg.lobpcg(rg.tensor(A12), X=rg.tensor(X2), k=3)[0],  # min(k, block) pairs
          torch.lobpcg(torch.tensor(A12), X=torch.tensor(X2), k=3)[0], rtol=1e-7)
    assert rg.lobpcg(rg.tensor(_spd(12)), n=3)[0].shape == (1,)
    for kwargs in [dict(k=5), dict(X=_r(12, 5)), dict(n=5)]:
        with pytest.raises(ValueError):
            torch.lobpcg(torch.tensor(_spd(12)), **{k: torch.tensor(v) if k == "X" else v
                                                    for k, v in kwargs.items()})
        with pytest.raises(ValueError):
            rg.lobpcg(rg.tensor(_spd(12)), **{k: rg.tensor(v) if k == "X" else v
                                              for k, v in kwargs.items()})


# ---------------------------------------------------------------- embedding_renorm_

@pytest.mark.parametrize(("idx", "max_norm", "norm_type"), [
    ([0, 1, 0], 1.0, 2.0), ([[0, 1]], 1.0, 1.0), ([0, 3], 0.5, float("inf")), ([-1], 0.5, 2),
    ([4, 0, 3, 3], 0.7, 3.0)])
def test_embedding_renorm_matches_torch(idx, max_norm, norm_type):
    w = _r(5, 3) * 2
    tw, rw = torch.tensor(w), rg.tensor(w.copy())
    want = torch.embedding_renorm_(tw, torch.tensor(idx), max_norm, norm_type)
    got = rg.embedding_renorm_(rw, rg.tensor(idx), max_norm, norm_type)
    assert got is rw
    _same(got, want)


def test_embedding_renorm_bad_input_like_torch():
    leaf = np.ones((3, 2))
    for w, i in [(leaf, np.array([5])), (leaf, np.array([0.0])), (np.ones(3), np.array([0]))]:
        with pytest.raises(Exception) as want:  # noqa: PT011 - the types are compared below
            torch.embedding_renorm_(torch.tensor(w), torch.tensor(i), 1.0, 2.0)
        with pytest.raises(want.type):
            rg.embedding_renorm_(rg.tensor(w), rg.tensor(i), 1.0, 2.0)
    with pytest.raises(RuntimeError):
        torch.embedding_renorm_(torch.ones(3, 2, requires_grad=True), torch.tensor([0]), 0.5, 2)
    with pytest.raises(RuntimeError):
        rg.embedding_renorm_(rg.ones(3, 2, requires_grad=True), rg.tensor([0]), 0.5, 2)
    with rg.no_grad():
        w = rg.ones(3, 2, requires_grad=True)
        rg.embedding_renorm_(w, rg.tensor([0]), 0.5, 2)
    np.testing.assert_allclose(w.data[0], 0.5 / (np.sqrt(2) + 1e-7), rtol=1e-6)


# ---------------------------------------------------------------- segment_reduce

SEGMENTS = [
    (lambda: _r(5), dict(lengths=np.array([3, 0, 2]))),
    (lambda: _r(5), dict(lengths=np.array([3, 0, 2]), initial=0.25)),
    (lambda: _r(5), dict(offsets=np.array([1, 2, 5]))),
    (lambda: _r(3, 5, 2), dict(lengths=np.array([[1, 4], [2, 3], [5, 0]]), axis=1)),
    (lambda: _r(5, 2), dict(lengths=np.array([2, 3]))),
    (lambda: np.array([0.0, 3.0, 0.5, 2.0, 1.0]), dict(lengths=np.array([3, 2]))),
    (lambda: _r(5), dict(lengths=np.array([2, 2]), unsafe=True)),
]


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "max", "min"])
@pytest.mark.parametrize("case", range(len(SEGMENTS)))
def test_segment_reduce_matches_torch(reduce, case):
    make, kw = SEGMENTS[case]
    data = make()
    tk = {k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()}
    rk = {k: rg.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()}
    tx, rx = torch.tensor(data, requires_grad=True), rg.tensor(data, requires_grad=True)
    want = torch.segment_reduce(tx, reduce, **tk)
    got = rg.segment_reduce(rx, reduce, **rk)
    assert got.shape == tuple(want.shape)
    np.testing.assert_allclose(got.data, want.detach().numpy(), rtol=1e-12, equal_nan=True)
    g = _r(*want.shape)
    want.backward(torch.tensor(g))
    got.backward(rg.tensor(g))
    np.testing.assert_allclose(rx.grad.data, tx.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_segment_reduce_ties_share_the_gradient():
    """Ties of max/min split the gradient equally in each segment (torch's amax convention;
    torch 2.13's segment_reduce counts another segment's ties: [0, 3, 0], [2, 2] gives the two
    2s the whole gradient each)."""
    x = rg.tensor([0.0, 3.0, 0.0, 2.0, 2.0], requires_grad=True)
    rg.segment_reduce(x, "max", lengths=rg.tensor([3, 2])).backward(rg.tensor([1.0, 4.0]))
    np.testing.assert_array_equal(x.grad.data, [0, 1, 0, 2, 2])
    x.grad = None
    rg.segment_reduce(x, "min", lengths=rg.tensor([3, 2])).backward(rg.tensor([1.0, 4.0]))
    np.testing.assert_array_equal(x.grad.data, [0.5, 0, 0.5, 2, 2])
    assert rg.gradcheck(lambda v: rg.segment_reduce(v, "prod", lengths=rg.tensor([2, 1, 2])),
                        (rg.tensor(_r(5), requires_grad=True),))


@pytest.mark.parametrize("bad", [
    dict(reduce="foo", lengths=[5]), dict(lengths=[2, 2]), dict(lengths=[2, -1, 4]),
    dict(indices=[0, 0, 1, 1, 1]), dict(), dict(lengths=[5], axis=1, data2d=True),
    dict(lengths=[2.0, 3.0]), dict(lengths=[2, 3], long=True)])
def test_segment_reduce_bad_input_like_torch(bad):
    bad = dict(bad)
    data = _r(5, 2) if bad.pop("data2d", False) else _r(5)
    if bad.pop("long", False):
        data = np.arange(5)
    reduce = bad.pop("reduce", "sum")
    for M in (torch, rg):
        kw = {k: M.tensor(np.array(v)) if isinstance(v, list) else v for k, v in bad.items()}
        with pytest.raises(Exception) as e:  # noqa: PT011 - the types are compared below
            M.segment_reduce(M.tensor(data), reduce, **kw)
        if M is torch:
            want = e.type
        else:
            assert issubclass(e.type, want), (e.type, want)


def test_deprecated_resize_reshapes_like_torch():
    a = _r(6)
    tx, rx = torch.tensor(a, requires_grad=True), rg.tensor(a, requires_grad=True)
    with pytest.warns(UserWarning, match="deprecated"):
        want = tx.resize(2, 3)
    with pytest.warns(UserWarning, match="deprecated"):
        got = rx.resize(2, 3)
    _same(got, want)
    g = _r(2, 3)
    want.backward(torch.tensor(g))
    got.backward(rg.tensor(g))
    _same(rx.grad, tx.grad)
    with pytest.warns(UserWarning):
        _same(rx.resize_as(rg.zeros(3, 2)), tx.resize_as(torch.zeros(3, 2)))
    with pytest.warns(UserWarning), pytest.raises(RuntimeError):
        tx.resize(4)
    with pytest.warns(UserWarning), pytest.raises(RuntimeError):
        rx.resize(4)


def test_ldl_factor_blocked_size_matches_torch():
    """Past LAPACK's block size (torch queries the optimal workspace: the blocked sytrf)."""
    a = _symmetric((70, 70), np.float64, False)
    want = torch.linalg.ldl_factor(torch.tensor(a))
    got = rg.linalg.ldl_factor(rg.tensor(a))
    _same(got.pivots, want.pivots)
    _same(got.LD, want.LD, rtol=1e-8, atol=1e-10)
    b = _r(70, 3)
    x = rg.linalg.ldl_solve(*got, rg.tensor(b))
    np.testing.assert_allclose(a @ x.data, b, rtol=1e-8, atol=1e-8)
