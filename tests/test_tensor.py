"""The Tensor, its dtypes, attributes, creation, operators and ops.

Gradients are compared with PyTorch where PyTorch has the same op; PyTorch
tensors are always built with an explicit dtype (another test module changes
torch's default).
"""

import numpy as np
import pytest
import torch

import retrograd as rg


def _grad_of(fn, value, dtype=rg.float64):
    x = rg.tensor(value, dtype=dtype, requires_grad=True)
    fn(x).sum().backward()
    return x.grad.numpy()


def _torch_grad_of(fn, value):
    x = torch.tensor(value, dtype=torch.float64, requires_grad=True)
    fn(x).sum().backward()
    return x.grad.numpy()


@pytest.fixture
def restore_default_dtype():
    before = rg.get_default_dtype()
    yield
    rg.set_default_dtype(before)


# ---------------------------------------------------------------- dtypes

def test_python_floats_and_float_lists_become_the_default_dtype_float32():
    assert rg.get_default_dtype() == np.float32
    assert rg.tensor(1.5).dtype == np.float32
    assert rg.tensor([1.0, 2.0]).dtype == np.float32
    assert rg.Tensor([[1.0], [2.5]]).dtype == np.float32


def test_python_ints_become_int64_and_bools_stay_bool():
    assert rg.tensor(3).dtype == np.int64
    assert rg.tensor([1, 2, 3]).dtype == np.int64
    assert rg.tensor(True).dtype == np.bool_
    assert rg.tensor([True, False]).dtype == np.bool_


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.int32, np.int8,
                                   np.uint8, np.bool_])
def test_numpy_arrays_keep_their_dtype(dtype):
    arr = np.zeros(3, dtype=dtype)
    assert rg.tensor(arr).dtype == dtype
    assert rg.tensor(np.ones((), dtype=dtype)).dtype == dtype


def test_dtype_argument_and_exported_dtypes_are_numpys():
    assert rg.float32 == np.dtype(np.float32) and rg.float64 == np.dtype(np.float64)
    assert rg.int64 == np.dtype(np.int64) and rg.bool_ == np.dtype(np.bool_)
    assert rg.tensor([1, 2], dtype=rg.float64).dtype == np.float64
    assert rg.tensor([1.5], dtype=np.float16).dtype == np.float16
    assert rg.tensor([1.0], dtype="int32").dtype == np.int32


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_python_scalars_do_not_upcast_a_tensor(dtype):
    t = rg.tensor([1.0, 2.0], dtype=dtype)
    for r in (t * 2.0, 2.0 * t, t + 1, 1 - t, t / 3.0, 3.0 / t, t ** 2.0, 2.0 ** t, -t):
        assert r.dtype == dtype


def test_int_tensor_meets_python_float_or_true_division_gives_default_float():
    assert (rg.tensor([1, 2]) * 2.5).dtype == np.float32
    assert (rg.tensor([1, 2]) / 2).dtype == np.float32
    assert (rg.tensor([1, 2]) * 2).dtype == np.int64
    np.testing.assert_allclose((rg.tensor([1, 2]) / 2).numpy(), [0.5, 1.0])


def test_set_default_dtype_changes_what_python_floats_become(restore_default_dtype):
    rg.set_default_dtype(rg.float64)
    assert rg.get_default_dtype() == np.float64
    assert rg.tensor(1.5).dtype == np.float64
    assert rg.zeros(2).dtype == np.float64 and rg.randn(2).dtype == np.float64
    assert rg.tensor([1, 2]).dtype == np.int64  # ints are unaffected
    rg.set_default_dtype(rg.float32)
    assert rg.tensor(1.5).dtype == np.float32


def test_set_default_dtype_refuses_a_non_float_dtype(restore_default_dtype):
    with pytest.raises(TypeError, match="float"):
        rg.set_default_dtype(rg.int64)
    assert rg.get_default_dtype() == np.float32


@pytest.mark.parametrize("data", [[1, 2], [True, False], np.arange(3, dtype=np.int32)])
def test_requires_grad_on_integer_or_bool_raises_type_error(data):
    with pytest.raises(TypeError, match="floating"):
        rg.tensor(data, requires_grad=True)
    t = rg.tensor(data)
    with pytest.raises(TypeError, match=str(t.dtype)):
        t.requires_grad_()
    assert t.requires_grad is False
    with pytest.raises(TypeError, match="floating"):
        rg.zeros(2, dtype=rg.int64, requires_grad=True)


# ---------------------------------------------------------------- attributes

def test_shape_dtype_ndim_size():
    t = rg.tensor(np.zeros((2, 3, 4), dtype=np.float64))
    assert t.shape == (2, 3, 4) and t.dtype == np.float64 and t.ndim == 3
    assert t.size == 24 and isinstance(t.size, int)
    s = rg.tensor(5.0)
    assert s.shape == () and s.ndim == 0 and s.size == 1


def test_T_reverses_the_dimensions_and_is_differentiable():
    x = rg.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    assert x.T.shape == (3, 2)
    np.testing.assert_array_equal(x.T.numpy(), np.arange(6.0).reshape(2, 3).T)
    (x.T * rg.tensor(np.arange(6.0).reshape(3, 2))).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.arange(6.0).reshape(3, 2).T)


def test_grad_requires_grad_is_leaf_and_grad_fn():
    x = rg.tensor([1.0, 2.0], requires_grad=True)
    c = rg.tensor([3.0, 4.0])
    assert x.grad is None and x.requires_grad and x.is_leaf and x.grad_fn is None
    assert not c.requires_grad and c.is_leaf
    y = x * c
    assert y.requires_grad and not y.is_leaf and y.grad_fn.name == "mul"
    assert (x + 1).grad_fn.name == "add" and x.exp().grad_fn.name == "exp"
    assert (c * 2).grad_fn is None and not (c * 2).requires_grad
    y.sum().backward()
    assert isinstance(x.grad, rg.Tensor)
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 4.0])


def test_grad_has_the_leaf_dtype_and_shape():
    x = rg.tensor([1.0, 2.0], requires_grad=True)
    (x * np.array([3.0, 4.0])).sum().backward()  # the product is float64
    assert x.grad.dtype == np.float32 and x.grad.shape == (2,)
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 4.0])
    s = rg.tensor(2.0, dtype=rg.float64, requires_grad=True)
    (s * s).backward()
    assert s.grad.shape == () and s.grad.dtype == np.float64 and s.grad.item() == 4.0


def test_item_numpy_tolist():
    t = rg.tensor([[1.5, 2.5]])
    assert rg.tensor([3.5]).item() == 3.5 and isinstance(rg.tensor(2).item(), int)
    assert isinstance(t.numpy(), np.ndarray) and t.numpy().dtype == np.float32
    assert t.tolist() == [[1.5, 2.5]]
    with pytest.raises(RuntimeError, match=r"\(1, 2\)"):
        t.item()


def test_detach_shares_data_and_leaves_the_graph():
    x = rg.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    d = y.detach()
    assert not d.requires_grad and d.grad_fn is None and d.is_leaf
    assert np.shares_memory(d.numpy(), y.numpy())
    (d * x).sum().backward()  # d is a constant here: d(d*x)/dx = d, not 4x
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 4.0])


def test_requires_grad_underscore_returns_self_and_switches():
    t = rg.tensor([1.0, 2.0])
    assert t.requires_grad_() is t and t.requires_grad
    assert t.requires_grad_(False) is t and not t.requires_grad


def test_retain_grad_keeps_a_non_leaf_grad():
    x = rg.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    y.retain_grad()
    (y * y).sum().backward()
    np.testing.assert_allclose(y.grad.numpy(), [6.0, 12.0])


def test_register_hook_sees_the_gradient_and_a_returned_tensor_replaces_it():
    seen = []
    x = rg.tensor([1.0, 2.0], requires_grad=True)
    x.register_hook(lambda g: seen.append(g.numpy().copy()))
    mid = x * 2
    mid.register_hook(lambda g: g * 10)
    (mid * mid).sum().backward()
    # d/dmid = 2*mid = [4, 8], times 10 by the hook, times 2 through mid = x*2
    np.testing.assert_allclose(x.grad.numpy(), [80.0, 160.0])
    np.testing.assert_allclose(seen[0], [80.0, 160.0])
    t = torch.tensor([1.0, 2.0], requires_grad=True)
    tm = t * 2
    tm.register_hook(lambda g: g * 10)
    (tm * tm).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy())


def test_leaf_hook_return_replaces_what_is_accumulated():
    x = rg.tensor([1.0, 2.0], requires_grad=True)
    x.register_hook(lambda g: g * 0 + 7.0)
    (x * x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [7.0, 7.0])


def test_repr_shows_data_dtype_and_grad_fn():
    x = rg.tensor([1.5, 2.0], requires_grad=True)
    r = repr(x * 2)
    assert "3." in r and "4." in r and "float32" in r and "mul" in r
    r = repr(rg.tensor([7, 8]))
    assert "7" in r and "8" in r and "int64" in r
    assert "1.5" in repr(x) and "requires_grad=True" in repr(x)


# ---------------------------------------------------------------- creation

@pytest.mark.parametrize("make", [rg.zeros, rg.ones, rg.rand, rg.randn])
def test_creation_shape_as_ints_or_tuple_dtype_and_requires_grad(make):
    assert make(2, 3).shape == (2, 3) and make((2, 3)).shape == (2, 3)
    assert make(4).shape == (4,)
    assert make(2).dtype == np.float32
    assert make(2, dtype=rg.float64).dtype == np.float64
    t = make(2, 2, requires_grad=True)
    assert t.requires_grad and t.is_leaf


def test_creation_values():
    np.testing.assert_array_equal(rg.zeros(2, 2).numpy(), np.zeros((2, 2)))
    np.testing.assert_array_equal(rg.ones(3).numpy(), np.ones(3))
    f = rg.full((2, 3), 1.5)
    assert f.dtype == np.float32 and f.shape == (2, 3) and np.all(f.numpy() == 1.5)
    assert rg.full((2,), 4, dtype=rg.float64).dtype == np.float64
    base = rg.tensor(np.ones((2, 3), dtype=np.float64))
    z = rg.zeros_like(base)
    assert z.shape == (2, 3) and z.dtype == np.float64 and not z.numpy().any()
    o = rg.ones_like(base, requires_grad=True)
    assert o.requires_grad and np.all(o.numpy() == 1)
    np.testing.assert_array_equal(rg.arange(5).numpy(), np.arange(5))
    assert rg.arange(5).dtype == np.int64 and rg.arange(0.0, 1.0, 0.25).dtype == np.float32
    np.testing.assert_allclose(rg.arange(1, 2, 0.25).numpy(), [1, 1.25, 1.5, 1.75])
    np.testing.assert_allclose(rg.linspace(0, 1, 5).numpy(), np.linspace(0, 1, 5))
    assert rg.linspace(0, 1, 5).dtype == np.float32
    np.testing.assert_array_equal(rg.eye(3).numpy(), np.eye(3))
    assert rg.eye(2, 3, dtype=rg.float64).shape == (2, 3)
    u = rg.rand(1000).numpy()
    assert u.min() >= 0 and u.max() < 1


def test_manual_seed_makes_rand_and_randn_reproducible():
    rg.manual_seed(1234)
    a, b = rg.randn(5, 3), rg.rand(4)
    rg.manual_seed(1234)
    np.testing.assert_array_equal(rg.randn(5, 3).numpy(), a.numpy())
    np.testing.assert_array_equal(rg.rand(4).numpy(), b.numpy())
    rg.manual_seed(1235)
    assert not np.array_equal(rg.randn(5, 3).numpy(), a.numpy())


# ---------------------------------------------------------------- operators

def test_binary_operators_values_and_gradients_match_torch():
    a = np.array([[0.5, -1.5], [2.0, 3.0]])
    b = np.array([[1.5, 2.0], [-0.5, 1.25]])

    def run(lib, x, y):
        return [x + y, x - y, x * y, x / y, x ** 2, abs(x) ** y, x @ y, -x]

    ra, rb = (rg.tensor(v, requires_grad=True) for v in (a, b))
    ta, tb = (torch.tensor(v, requires_grad=True) for v in (a, b))
    rs, ts = run(rg, ra, rb), run(torch, ta, tb)
    for r, t in zip(rs, ts):
        np.testing.assert_allclose(r.numpy(), t.detach().numpy(), rtol=1e-12)
    sum(r.sum() for r in rs).backward()
    sum(t.sum() for t in ts).backward()
    np.testing.assert_allclose(ra.grad.numpy(), ta.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(rb.grad.numpy(), tb.grad.numpy(), rtol=1e-10)


def test_reflected_operators_with_python_numbers():
    x = rg.tensor([1.0, 2.0, 4.0], dtype=rg.float64, requires_grad=True)
    ys = [3 + x, 3 - x, 3 * x, 3 / x, 2 ** x]
    expect = [[4, 5, 7], [2, 1, -1], [3, 6, 12], [3, 1.5, 0.75], [2, 4, 16]]
    for y, e in zip(ys, expect):
        assert isinstance(y, rg.Tensor)
        np.testing.assert_allclose(y.numpy(), e)
    sum(y.sum() for y in ys).backward()
    v = np.array([1.0, 2.0, 4.0])
    np.testing.assert_allclose(x.grad.numpy(), 1 - 1 + 3 - 3 / v ** 2 + np.log(2) * 2 ** v)


def test_numpy_arrays_on_the_left_give_tensors_and_gradients():
    x = rg.tensor([1.0, 2.0], dtype=rg.float64, requires_grad=True)
    a = np.array([3.0, 5.0])
    ys = [a + x, a - x, a * x, a / x, a ** x, np.eye(2) @ x]
    for y in ys:
        assert isinstance(y, rg.Tensor) and y.requires_grad
    np.testing.assert_allclose(ys[1].numpy(), [2.0, 3.0])
    np.testing.assert_allclose(ys[3].numpy(), [3.0, 2.5])
    sum(y.sum() for y in ys).backward()
    v = np.array([1.0, 2.0])
    np.testing.assert_allclose(x.grad.numpy(), 1 - 1 + a - a / v ** 2 + np.log(a) * a ** v + 1)


@pytest.mark.parametrize("op", ["lt", "le", "gt", "ge", "eq", "ne"])
def test_comparisons_return_bool_tensors_without_gradient(op):
    x = rg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    other = rg.tensor([2.0, 2.0, 2.0], requires_grad=True)
    for y in (other, 2.0, 2, np.array([2.0, 2.0, 2.0])):
        r = getattr(x, f"__{op}__")(y)
        assert isinstance(r, rg.Tensor) and r.dtype == np.bool_
        assert not r.requires_grad and r.grad_fn is None
        expect = getattr(np, {"lt": "less", "le": "less_equal", "gt": "greater",
                              "ge": "greater_equal", "eq": "equal",
                              "ne": "not_equal"}[op])([1, 2, 3], 2)
        np.testing.assert_array_equal(r.numpy(), expect)


def test_argmax_argmin_carry_no_gradient():
    x = rg.tensor([[1.0, 5.0, 2.0], [7.0, 0.0, 3.0]], requires_grad=True)
    for r in (x.argmax(), x.argmin(dim=1), rg.argmax(x, axis=0)):
        assert r.dtype == np.int64 and not r.requires_grad and r.grad_fn is None
    assert x.argmax().item() == 3
    np.testing.assert_array_equal(x.argmin(dim=1).numpy(), [0, 1])


# ---------------------------------------------------------------- reductions

X23 = np.array([[1.0, -2.0, 3.0], [0.5, 4.0, -1.5]])


@pytest.mark.parametrize("name", ["sum", "mean", "prod", "logsumexp", "max", "min"])
@pytest.mark.parametrize("dim,keep", [(None, False), (0, False), (1, True), ((0, 1), False),
                                      (-1, False), ((0, 1), True)])
def test_reductions_dim_keepdim_and_axis_keepdims_match_torch(name, dim, keep):
    tfn = {"max": torch.amax, "min": torch.amin}.get(name, getattr(torch, name))
    kwargs = {} if dim is None else {"dim": dim}
    if dim is None and name == "logsumexp":  # torch.logsumexp needs a dim
        kwargs = {"dim": (0, 1)}
    x = rg.tensor(X23, requires_grad=True)
    y = getattr(x, name)(**kwargs, keepdim=keep) if kwargs else getattr(x, name)()
    if name in ("max", "min") and isinstance(dim, int):  # PyTorch's (values, indices)
        pair = getattr(torch, name)(torch.tensor(X23), dim, keepdim=keep)
        np.testing.assert_array_equal(y.indices.numpy(), pair.indices.numpy())
        y = y.values
    y2 = getattr(rg, name)(rg.tensor(X23), axis=kwargs.get("dim"), keepdims=keep)
    t = torch.tensor(X23, requires_grad=True)
    if name == "prod" and isinstance(dim, tuple):  # torch.prod reduces one dim
        ty = t.reshape(-1).prod().reshape((1, 1) if keep else ())
    elif kwargs:
        ty = tfn(t, **kwargs, keepdim=keep)
    else:
        ty = tfn(t)
    assert y.shape == tuple(ty.shape) == y2.shape
    np.testing.assert_allclose(y.numpy(), ty.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(y2.numpy(), ty.detach().numpy(), rtol=1e-12)
    w = np.arange(1.0, 1.0 + ty.numel()).reshape(tuple(ty.shape))
    (y * rg.tensor(w)).sum().backward()
    (ty * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-10)


def test_reductions_refuse_both_dim_and_axis():
    with pytest.raises(TypeError, match="dim"):
        rg.tensor(X23).sum(dim=0, axis=0)


@pytest.mark.parametrize("name", ["max", "min"])
def test_max_min_with_dim_return_values_and_indices(name):
    x = rg.tensor(X23)
    r = getattr(x, name)(dim=1)
    want = getattr(torch, name)(torch.tensor(X23), dim=1)
    np.testing.assert_array_equal(r.values.numpy(), want.values.numpy())
    np.testing.assert_array_equal(r[1].numpy(), want.indices.numpy())
    r = getattr(rg, name)(x, 0, True)
    assert r.values.shape == r.indices.shape == (1, 3)
    r = getattr(x, name)(axis=1)  # NumPy's spelling: the values alone
    assert isinstance(r, rg.Tensor)
    np.testing.assert_array_equal(r.numpy(), getattr(X23, name)(axis=1))


@pytest.mark.parametrize("name", ["var", "std"])
def test_var_std_correction_unbiased_ddof(name):
    x = rg.tensor(X23, requires_grad=True)
    fn = getattr(x, name)
    tfn = getattr(torch.tensor(X23), name)
    np.testing.assert_allclose(fn().numpy(), tfn().numpy())  # correction=1 by default
    np.testing.assert_allclose(fn().numpy(), getattr(np, name)(X23, ddof=1))
    for corr in (0, 1, 2):
        ref = getattr(np, name)(X23, axis=1, ddof=corr)
        np.testing.assert_allclose(fn(dim=1, correction=corr).numpy(), ref)
        np.testing.assert_allclose(fn(axis=1, ddof=corr).numpy(), ref)
        np.testing.assert_allclose(tfn(dim=1, correction=corr).numpy(), ref)
    np.testing.assert_allclose(fn(dim=0, unbiased=False).numpy(),
                               getattr(np, name)(X23, axis=0, ddof=0))
    np.testing.assert_allclose(fn(dim=0, unbiased=True, keepdim=True).numpy(),
                               getattr(np, name)(X23, axis=0, ddof=1, keepdims=True))
    with pytest.raises(TypeError, match="correction"):
        fn(correction=1, ddof=1)
    t = torch.tensor(X23, requires_grad=True)
    fn(dim=1, correction=0).sum().backward()
    getattr(t, name)(dim=1, correction=0).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-10)


# ---------------------------------------------------------------- shapes

def test_split_with_chunk_size_and_list_of_sizes():
    x = rg.tensor(np.arange(10.0).reshape(5, 2), requires_grad=True)
    parts = x.split(2)
    assert [p.shape for p in parts] == [(2, 2), (2, 2), (1, 2)]
    np.testing.assert_array_equal(parts[2].numpy(), [[8.0, 9.0]])
    parts = rg.split(x, [1, 4])
    assert [p.shape for p in parts] == [(1, 2), (4, 2)]
    cols = rg.split(x, 1, dim=1)
    assert [c.shape for c in cols] == [(5, 1), (5, 1)]
    (parts[0] * 3).sum().backward()
    expect = np.zeros((5, 2))
    expect[0] = 3
    np.testing.assert_array_equal(x.grad.numpy(), expect)
    with pytest.raises(ValueError, match="5"):
        rg.split(x, [1, 2])


def test_gradient_through_broadcasting_is_reduced_to_each_operand_shape():
    a = rg.tensor(np.ones((3, 1)), requires_grad=True)
    b = rg.tensor(np.arange(4.0), requires_grad=True)
    (a * b).sum().backward()
    assert a.grad.shape == (3, 1) and b.grad.shape == (4,)
    np.testing.assert_allclose(a.grad.numpy(), np.full((3, 1), 6.0))
    np.testing.assert_allclose(b.grad.numpy(), np.full(4, 3.0))


def test_shape_ops_match_torch():
    v = np.arange(24.0).reshape(2, 3, 4)

    def run(lib, x):
        return [x.reshape(4, 6), x.flatten(), x.transpose(0, 2), x.permute(1, 2, 0),
                x.unsqueeze(1).expand(2, 5, 3, 4), x[:, :1].squeeze(1), lib.cat([x, x], 1),
                lib.stack([x, x], 2), lib.einsum("ijk,ikl->ijl", x, x.transpose(1, 2))]

    x = rg.tensor(v, requires_grad=True)
    t = torch.tensor(v, requires_grad=True)
    rs, ts = run(rg, x), run(torch, t)
    w = []
    for r, tt in zip(rs, ts):
        assert r.shape == tuple(tt.shape)
        np.testing.assert_allclose(r.numpy(), tt.detach().numpy())
        w.append(np.cos(np.arange(r.size)).reshape(r.shape))
    sum((r * rg.tensor(c)).sum() for r, c in zip(rs, w)).backward()
    sum((tt * torch.tensor(c)).sum() for tt, c in zip(ts, w)).backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-10)


# ---------------------------------------------------------------- indexing

def test_basic_indexing_values_and_gradient():
    v = np.arange(12.0).reshape(3, 4)
    x = rg.tensor(v, requires_grad=True)
    np.testing.assert_array_equal(x[1].numpy(), v[1])
    np.testing.assert_array_equal(x[:, 1:3].numpy(), v[:, 1:3])
    np.testing.assert_array_equal(x[..., None, -1].numpy(), v[..., None, -1])
    assert x[2, 3].shape == ()
    (x[1:, ::2] * 2).sum().backward()
    expect = np.zeros((3, 4))
    expect[1:, ::2] = 2
    np.testing.assert_array_equal(x.grad.numpy(), expect)


def test_integer_array_indexing_with_repeats_accumulates():
    v = np.arange(5.0)
    for idx in ([0, 2, 2, 4, 2], np.array([0, 2, 2, 4, 2]), rg.tensor([0, 2, 2, 4, 2])):
        x = rg.tensor(v, requires_grad=True)
        y = x[idx]
        np.testing.assert_array_equal(y.numpy(), [0, 2, 2, 4, 2])
        (y * rg.tensor([1.0, 2.0, 3.0, 4.0, 5.0], dtype=rg.float64)).sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), [1, 0, 10, 0, 4])
    t = torch.tensor(v, requires_grad=True)
    (t[[0, 2, 2, 4, 2]] * torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0],
                                       dtype=torch.float64)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), t.grad.numpy())


def test_two_dimensional_integer_array_indexing():
    v = np.arange(12.0).reshape(3, 4)
    x = rg.tensor(v, requires_grad=True)
    y = x[[0, 2, 0], [1, 3, 1]]
    np.testing.assert_array_equal(y.numpy(), [1.0, 11.0, 1.0])
    y.sum().backward()
    assert x.grad.numpy()[0, 1] == 2 and x.grad.numpy()[2, 3] == 1 and x.grad.numpy().sum() == 3


def test_boolean_indexing_values_and_gradient():
    v = np.array([[1.0, -2.0], [-3.0, 4.0]])
    x = rg.tensor(v, requires_grad=True)
    mask = x > 0
    y = x[mask]
    np.testing.assert_array_equal(y.numpy(), [1.0, 4.0])
    (y * y).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[2.0, 0.0], [0.0, 8.0]])
    x.grad = None
    x[np.array([False, True])].sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0.0, 0.0], [1.0, 1.0]])


# ---------------------------------------------------------------- non-differentiable points
# Conventions follow PyTorch: each is checked against its value and against torch.

def test_abs_derivative_at_zero_is_zero():
    v = [-2.0, 0.0, 3.0]
    np.testing.assert_array_equal(_grad_of(rg.abs, v), [-1.0, 0.0, 1.0])
    np.testing.assert_array_equal(_grad_of(rg.abs, v), _torch_grad_of(torch.abs, v))


def test_relu_derivative_at_zero_is_zero():
    v = [-2.0, 0.0, 3.0]
    np.testing.assert_array_equal(_grad_of(rg.relu, v), [0.0, 0.0, 1.0])
    np.testing.assert_array_equal(_grad_of(rg.relu, v), _torch_grad_of(torch.relu, v))


def test_sqrt_derivative_at_zero_is_inf():
    with np.errstate(divide="ignore"):
        g = _grad_of(rg.sqrt, [0.0, 4.0])
    np.testing.assert_array_equal(g, [np.inf, 0.25])
    np.testing.assert_array_equal(g, _torch_grad_of(torch.sqrt, [0.0, 4.0]))


def test_clamp_passes_gradient_one_at_its_bounds():
    v = [-3.0, -1.0, 0.5, 2.0, 5.0]
    g = _grad_of(lambda x: rg.clamp(x, -1.0, 2.0), v)
    np.testing.assert_array_equal(g, [0.0, 1.0, 1.0, 1.0, 0.0])
    np.testing.assert_array_equal(g, _torch_grad_of(lambda x: torch.clamp(x, -1.0, 2.0), v))
    g = _grad_of(lambda x: x.clamp(min=0.5), v)
    np.testing.assert_array_equal(g, [0.0, 0.0, 1.0, 1.0, 1.0])
    np.testing.assert_array_equal(g, _torch_grad_of(lambda x: x.clamp(min=0.5), v))


@pytest.mark.parametrize("name,tname", [("max", "amax"), ("min", "amin")])
def test_ties_in_max_min_reductions_share_the_gradient_equally(name, tname):
    v = [1.0, 3.0, 3.0, 0.0, 3.0] if name == "max" else [1.0, 0.0, 2.0, 0.0, 5.0]
    g = _grad_of(lambda x: getattr(x, name)(), v)
    share = 1 / 3 if name == "max" else 1 / 2
    expect = np.where(np.array(v) == getattr(np, name)(v), share, 0.0)
    np.testing.assert_allclose(g, expect)
    np.testing.assert_allclose(g, _torch_grad_of(getattr(torch, tname), v))
    m = [[2.0, 2.0, 1.0], [0.0, 5.0, 5.0]] if name == "max" else [[1.0, 1.0, 3.0],
                                                                  [0.0, 4.0, 0.0]]
    g = _grad_of(lambda x: getattr(x, name)(axis=1), m)
    np.testing.assert_allclose(g, [[0.5, 0.5, 0.0], [0.0, 0.5, 0.5]] if name == "max"
                               else [[0.5, 0.5, 0.0], [0.5, 0.0, 0.5]])
    np.testing.assert_allclose(g, _torch_grad_of(lambda x: getattr(torch, tname)(x, dim=1), m))
    # with a dim, PyTorch's pair: the values' gradient goes to the returned index alone
    g = _grad_of(lambda x: getattr(x, name)(dim=1).values, m)
    np.testing.assert_allclose(g, _torch_grad_of(
        lambda x: getattr(torch, name)(x, dim=1).values, m))


@pytest.mark.parametrize("name", ["maximum", "minimum"])
def test_ties_in_maximum_minimum_share_the_gradient_equally(name):
    a, b = [1.0, 2.0, 3.0], [3.0, 2.0, 1.0]
    x = rg.tensor(a, dtype=rg.float64, requires_grad=True)
    y = rg.tensor(b, dtype=rg.float64, requires_grad=True)
    getattr(rg, name)(x, y).sum().backward()
    tx = torch.tensor(a, dtype=torch.float64, requires_grad=True)
    ty = torch.tensor(b, dtype=torch.float64, requires_grad=True)
    getattr(torch, name)(tx, ty).sum().backward()
    win = [0.0, 0.5, 1.0] if name == "maximum" else [1.0, 0.5, 0.0]
    np.testing.assert_array_equal(x.grad.numpy(), win)
    np.testing.assert_array_equal(y.grad.numpy(), win[::-1])
    np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())
    np.testing.assert_array_equal(y.grad.numpy(), ty.grad.numpy())


def test_every_way_of_making_a_tensor_sets_every_slot():
    # apply1 and apply2 build their outputs without Tensor._wrap: a slot added to Tensor
    # and forgotten there would raise AttributeError only on first read.
    x = rg.tensor([1.0, 2.0], requires_grad=True)
    c = x.detach()
    made = [rg.Tensor._wrap(np.zeros(2)), rg.tensor([1.0]), rg.tanh(x), rg.tanh(c),
            x * 2.0, c * 2.0, x * c, x.sum(), x.detach()]
    for t in made:
        for name in rg.Tensor.__slots__:
            if name not in ("__weakref__", "_view", "_views"):  # those two: set only
                getattr(t, name)                               # where used, read by getattr
