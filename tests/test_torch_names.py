"""PyTorch's names that ported code reaches for, each against torch: `rg.add(..., alpha=)`,
`rg.sub`, `rg.pow`, the comparisons, `rg.equal`, `rg.t`, the predicates, `rg.as_tensor`,
`rg.asarray`, `rg.from_numpy`, dtype queries (`result_type`, `promote_types`,
`can_cast`, `finfo`, `iinfo`), grad-mode switches, the generator's state, thread
counts, broadcasting, one-sided clamps; Tensor methods (`stride`, `storage_offset`,
`type`, `new_*`, `detach_`, ...); the generated in-place forms (`x.exp_()`, ...) with
their autograd and errors; and the random fills and samplers.

Each comparison checks values, dtype, shape and `requires_grad` of the result;
differentiable ones their float64 gradients against torch and finite differences;
a bad call raises the exception type torch raises.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import retrograd as rg

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

TORCH_DTYPES = {
    np.dtype(np.float16): torch.float16, np.dtype(np.float32): torch.float32,
    np.dtype(np.float64): torch.float64, np.dtype(np.int8): torch.int8,
    np.dtype(np.int16): torch.int16, np.dtype(np.int32): torch.int32,
    np.dtype(np.int64): torch.int64, np.dtype(np.uint8): torch.uint8,
    np.dtype(np.bool_): torch.bool, np.dtype(np.complex64): torch.complex64,
    np.dtype(np.complex128): torch.complex128,
}
NP_DTYPES = {v: k for k, v in TORCH_DTYPES.items()}


def both(value, dtype=None, grad: bool = False):
    """The same data as a retrograd and a torch tensor (Python numbers take each library's
    default dtypes, which agree)."""
    if dtype is None and not isinstance(value, np.ndarray):
        ours, theirs = rg.tensor(value, requires_grad=grad), torch.tensor(value,
                                                                           requires_grad=grad)
        assert ours.dtype == NP_DTYPES[theirs.dtype]
        return ours, theirs
    arr = np.array(value, dtype=dtype)
    return (rg.tensor(arr.copy(), requires_grad=grad),
            torch.tensor(arr.copy(), requires_grad=grad))


def same(ours, theirs, tol: float = 0.0) -> None:
    """Values, dtype, shape and requires_grad of a result agree with torch's."""
    assert isinstance(ours, rg.Tensor), type(ours)
    assert ours.dtype == NP_DTYPES[theirs.dtype], (ours.dtype, theirs.dtype)
    assert ours.shape == tuple(theirs.shape), (ours.shape, theirs.shape)
    assert ours.requires_grad == theirs.requires_grad
    want = theirs.detach().numpy()
    if tol:
        np.testing.assert_allclose(ours.detach().numpy(), want, rtol=tol, atol=tol)
    else:
        np.testing.assert_array_equal(ours.detach().numpy(), want)


def raises_like(ours, theirs) -> Exception:
    """`ours()` raises an exception of the type `theirs()` raises in torch."""
    with pytest.raises(Exception) as info:
        theirs()
    with pytest.raises(info.type) as mine:
        ours()
    return mine.value


def convert(x, to_torch: bool):
    """A case's operand for one library: our tensors become torch's, numbers stay."""
    if isinstance(x, rg.Tensor) and to_torch:
        return torch.tensor(x.numpy().copy(), requires_grad=x.requires_grad)
    return x


# ---------------------------------------------------------------- the names exist

FUNCTIONS = """add sub subtract mul multiply pow neg negative positive rsub true_divide eq ne lt
    le gt ge greater greater_equal less less_equal not_equal equal clone detach numel t
    is_tensor is_floating_point is_nonzero is_same_size as_tensor asarray from_numpy
    scalar_tensor result_type promote_types can_cast finfo iinfo set_grad_enabled
    inference_mode is_inference_mode_enabled seed initial_seed get_rng_state set_rng_state
    get_num_threads set_num_threads broadcast_to broadcast_tensors broadcast_shapes concat
    clamp_min clamp_max normal bernoulli poisson""".split()
METHODS = """eq ne lt le gt ge greater greater_equal less less_equal not_equal equal add sub
    multiply subtract negative positive type_as reshape_as new_zeros new_ones new_full
    new_empty new_tensor is_floating_point is_signed is_contiguous is_cpu stride
    storage_offset nelement ndimension element_size itemsize nbytes get_device data_ptr
    retains_grad detach_ type broadcast_to where clamp_min clamp_max clamp_ clip_
    clamp_min_ clamp_max_ normal_ uniform_ bernoulli_ exponential_ geometric_ cauchy_
    log_normal_ random_ fill_diagonal_ bernoulli""".split()


def test_every_name_of_the_brief_is_in_torch_and_in_retrograd():
    assert [n for n in FUNCTIONS if not hasattr(torch, n)] == []
    assert [n for n in FUNCTIONS if not hasattr(rg, n)] == []
    assert [n for n in METHODS if not hasattr(torch.Tensor, n)] == []
    assert [n for n in METHODS if not hasattr(rg.Tensor, n)] == []
    assert "add" in rg.__all__ and "finfo" in rg.__all__


# ---------------------------------------------------------------- add, sub, mul, rsub

F32 = rg.tensor(np.array([1.5, -2.0, 3.25], np.float32))
I64 = rg.tensor(np.array([1, -2, 3]))
I32 = rg.tensor(np.array([4, 5, -6], np.int32))
U8 = rg.tensor(np.array([1, 2, 250], np.uint8))
B = rg.tensor(np.array([True, False, True]))
F64_0D = rg.tensor(np.array(2.5))
COL = rg.tensor(np.array([[1.0], [-0.5]], np.float32))

OPERANDS = [(F32, F32), (F32, I64), (I64, I32), (I32, 2), (I64, 2.5), (U8, 3), (B, B),
            (B, 2), (I64, B), (F32, F64_0D), (I32, F64_0D), (COL, F32), (F32, True),
            (2, I64), (1.5, F32), (F32, 1 + 2j)]


@pytest.mark.parametrize("x,y", OPERANDS)
@pytest.mark.parametrize("name", ["add", "mul", "multiply"])
def test_add_and_mul_values_and_dtypes(name, x, y):
    same(getattr(rg, name)(x, y), getattr(torch, name)(convert(x, True), convert(y, True)))


@pytest.mark.parametrize("x,y", [p for p in OPERANDS if not any(
    isinstance(v, bool) or (isinstance(v, rg.Tensor) and v.dtype == np.bool_) for v in p)])
@pytest.mark.parametrize("name", ["sub", "subtract"])
def test_sub_values_and_dtypes(name, x, y):
    same(getattr(rg, name)(x, y), getattr(torch, name)(convert(x, True), convert(y, True)))


@pytest.mark.parametrize("x,y,alpha", [(F32, F32, 2), (F32, I64, -0.5), (I64, I32, 3),
                                       (I64, 2, 2), (I64, 2.5, 0.5), (B, B, 2), (B, B, 0),
                                       (B, B, False), (B, True, 0), (COL, F32, 1.5),
                                       (I64, B, 2), (U8, 3, 2)])
def test_add_alpha(x, y, alpha):
    same(rg.add(x, y, alpha=alpha), torch.add(convert(x, True), convert(y, True), alpha=alpha))
    if isinstance(x, rg.Tensor):
        same(x.add(y, alpha=alpha), convert(x, True).add(convert(y, True), alpha=alpha))


@pytest.mark.parametrize("x,y,alpha", [(F32, F32, 2), (F32, I64, -0.5), (I64, I32, 3),
                                       (I64, 2, 2), (COL, F32, 1.5), (F32, 2, 3)])
def test_sub_and_rsub_alpha(x, y, alpha):
    tx, ty = convert(x, True), convert(y, True)
    same(rg.sub(x, y, alpha=alpha), torch.sub(tx, ty, alpha=alpha))
    same(x.sub(y, alpha=alpha), tx.sub(ty, alpha=alpha))
    same(x.subtract(y, alpha=alpha), tx.subtract(ty, alpha=alpha))
    same(rg.rsub(x, y, alpha=alpha), torch.rsub(tx, ty, alpha=alpha))


def test_add_sub_rsub_mul_gradients_in_float64():
    x, tx = both([[0.5, -1.0, 2.0]], np.float64, grad=True)
    y, ty = both([[1.5], [-0.25]], np.float64, grad=True)
    for f, tf in [(lambda a, b: rg.add(a, b, alpha=-2.5), lambda a, b: torch.add(a, b, alpha=-2.5)),
                  (lambda a, b: rg.sub(a, b, alpha=3), lambda a, b: torch.sub(a, b, alpha=3)),
                  (lambda a, b: rg.rsub(a, b, alpha=0.5), lambda a, b: torch.rsub(a, b, alpha=0.5)),
                  (lambda a, b: a.add(b, alpha=2) * rg.mul(a, b),
                   lambda a, b: a.add(b, alpha=2) * torch.mul(a, b))]:
        out, tout = f(x, y), tf(tx, ty)
        same(out, tout, 1e-12)
        g = rg.autograd.grad(out.sum(), (x, y))
        tg = torch.autograd.grad(tout.sum(), (tx, ty))
        for a, b in zip(g, tg):
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12)
        assert rg.gradcheck(f, (x, y))


def test_arithmetic_errors_are_torchs():
    fl, tfl = both([1.0, 2.0, 3.0])
    it, tit = both([1, 2, 3])
    bo, tbo = both([True, False, True])
    cases = [
        (lambda: rg.add(it, it, alpha=2.5), lambda: torch.add(tit, tit, alpha=2.5)),
        (lambda: rg.add(it, fl, alpha=True), lambda: torch.add(tit, tfl, alpha=True)),
        (lambda: rg.add(fl, fl, alpha=1j), lambda: torch.add(tfl, tfl, alpha=1j)),
        (lambda: rg.sub(it, 2, alpha=2.5), lambda: torch.sub(tit, 2, alpha=2.5)),
        (lambda: rg.sub(bo, bo), lambda: torch.sub(tbo, tbo)),
        (lambda: rg.sub(it, bo), lambda: torch.sub(tit, tbo)),
        (lambda: it.sub(bo), lambda: tit.sub(tbo)),
        (lambda: rg.rsub(bo, bo), lambda: torch.rsub(tbo, tbo)),
        (lambda: rg.add(fl, rg.zeros(2)), lambda: torch.add(tfl, torch.zeros(2))),
        (lambda: rg.mul(fl, rg.zeros(2)), lambda: torch.mul(tfl, torch.zeros(2))),
        (lambda: rg.neg(bo), lambda: torch.neg(tbo)),
        (lambda: bo.neg(), lambda: tbo.neg()),
        (lambda: rg.positive(bo), lambda: torch.positive(tbo)),
        (lambda: rg.add(fl, fl, out=rg.zeros(3, dtype=rg.int64)),
         lambda: torch.add(tfl, tfl, out=torch.zeros(3, dtype=torch.int64))),
    ]
    for ours, theirs in cases:
        raises_like(ours, theirs)
    x, tx = both([1.0, 2.0], grad=True)
    raises_like(lambda: rg.add(x, x, out=rg.zeros(2)),
                lambda: torch.add(tx, tx, out=torch.zeros(2)))
    assert "alpha" in str(raises_like(lambda: rg.add(it, it, alpha=2.5),
                                      lambda: torch.add(tit, tit, alpha=2.5)))


def test_out_writes_into_the_given_tensor_in_its_dtype():
    fl, tfl = both([1.0, 2.0, 3.0])
    out, tout = rg.zeros(3, dtype=rg.float64), torch.zeros(3, dtype=torch.float64)
    assert rg.add(fl, fl, alpha=2, out=out) is out
    torch.add(tfl, tfl, alpha=2, out=tout)
    same(out, tout)
    bout, tbout = rg.zeros(3), torch.zeros(3)
    rg.eq(fl, 2, out=bout), torch.eq(tfl, 2, out=tbout)
    same(bout, tbout)
    empty, tempty = rg.zeros(0), torch.zeros(0)
    rg.mul(fl, 3, out=empty), torch.mul(tfl, 3, out=tempty)
    same(empty, tempty)
    small, tsmall = rg.zeros(2), torch.zeros(2)
    with pytest.warns(UserWarning, match="resized"):  # torch resizes with a warning
        rg.add(fl, fl, out=small)
    with pytest.warns(UserWarning, match="resized"):
        torch.add(tfl, tfl, out=tsmall)
    same(small, tsmall)


def test_neg_negative_positive():
    x, tx = both([[1.5, -2.0]], np.float64, grad=True)
    for name in ("neg", "negative"):
        same(getattr(rg, name)(x), getattr(torch, name)(tx))
        same(getattr(x, name)(), getattr(tx, name)())
    it, tit = both([1, -2])
    same(rg.neg(it), torch.neg(tit))
    assert rg.positive(x) is x and x.positive() is x
    (g,) = rg.autograd.grad(rg.neg(x).sum(), (x,))
    np.testing.assert_array_equal(g.numpy(), -np.ones((1, 2)))


# ---------------------------------------------------------------- pow

POW_CASES = [(F32, 2), (F32, 0.5), (I64, 2), (I64, 2.5), (B, 2), (B, True), (B, False),
             (B, 2.5), (2, I64), (2.0, F32), (2, B), (True, I64), (I64, I64),
             (rg.tensor([1, 2, 3]), rg.tensor([1, -1, 2])),
             (rg.tensor([-2, -1, 0, 1, 2, 3]), rg.tensor(-1)),
             (rg.tensor([-1, -1, 0]), rg.tensor([-3, -2, -1])),
             (2, rg.tensor([-1, 2])), (-1, rg.tensor([-1, 2, -2])),
             (rg.tensor([2]), rg.tensor([-1.0])), (I64, -1.0), (U8, 2), (F32, I64)]


@pytest.mark.parametrize("x,e", POW_CASES)
def test_pow_values_and_dtypes(x, e):
    ours = rg.pow(x, e)
    theirs = torch.pow(convert(x, True), convert(e, True))
    same(ours, theirs, 1e-6 if theirs.dtype.is_floating_point else 0)
    if isinstance(x, rg.Tensor):
        same(x.pow(e), convert(x, True).pow(convert(e, True)),
             1e-6 if theirs.dtype.is_floating_point else 0)


def test_pow_gradients_in_float64():
    x, tx = both([0.5, 1.5, 2.0], np.float64, grad=True)
    e, te = both([2.0, -1.0, 0.5], np.float64, grad=True)
    for f, tf in [(rg.pow, torch.pow), (lambda a, b: rg.pow(2.5, b) * rg.pow(a, 3),
                                        lambda a, b: torch.pow(2.5, b) * torch.pow(a, 3))]:
        out, tout = f(x, e), tf(tx, te)
        same(out, tout, 1e-12)
        g = rg.autograd.grad(out.sum(), (x, e))
        tg = torch.autograd.grad(tout.sum(), (tx, te))
        for a, b in zip(g, tg):
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12)
        assert rg.gradcheck(f, (x, e))


def test_pow_errors_are_torchs():
    it, tit = both([1, 2, 3], np.int8)
    bo, tbo = both([True, False])
    raises_like(lambda: rg.pow(it, -1), lambda: torch.pow(tit, -1))
    raises_like(lambda: it.pow(-2), lambda: tit.pow(-2))
    raises_like(lambda: rg.pow(bo, bo), lambda: torch.pow(tbo, tbo))
    raises_like(lambda: rg.pow(2.0, 3), lambda: torch.pow(2.0, 3))


# ---------------------------------------------------------------- comparisons, equal

COMPARISONS = ("eq ne lt le gt ge greater greater_equal less less_equal not_equal").split()
CMP_OPERANDS = [(F32, F32), (F32, I64), (I64, 2), (I32, 2.5), (B, True), (COL, F32),
                (U8, 2), (F32, F64_0D), (rg.tensor([1.0, np.nan]), rg.tensor([1.0, np.nan]))]


@pytest.mark.parametrize("name", COMPARISONS)
def test_comparisons_as_functions_and_methods(name):
    for x, y in CMP_OPERANDS:
        tx, ty = convert(x, True), convert(y, True)
        same(getattr(rg, name)(x, y), getattr(torch, name)(tx, ty))
        same(getattr(x, name)(y), getattr(tx, name)(ty))
    x, tx = both([0.5, 2.0], grad=True)
    same(getattr(rg, name)(x, 1.0), getattr(torch, name)(tx, 1.0))  # no grad on a bool
    raises_like(lambda: getattr(rg, name)(F32, rg.zeros(2)),
                lambda: getattr(torch, name)(convert(F32, True), torch.zeros(2)))


def test_equal():
    pairs = [(F32, F32), (I64, rg.tensor([1.0, -2.0, 3.0])), (B, rg.tensor([1, 0, 1])),
             (B, I64), (F32, F32[:2]), (I64, I64.reshape(1, 3)),
             (rg.tensor([1.0, np.nan]), rg.tensor([1.0, np.nan])), (rg.zeros(0), rg.zeros(0))]
    for x, y in pairs:
        ours = rg.equal(x, y)
        assert type(ours) is bool
        assert ours == torch.equal(convert(x, True), convert(y, True))
        assert x.equal(y) == ours
    raises_like(lambda: rg.equal(I64, 2), lambda: torch.equal(convert(I64, True), 2))


# ---------------------------------------------------------------- copies and facts

def test_clone_detach_numel_t():
    x, tx = both([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], np.float64, grad=True)
    c, tc = rg.clone(x), torch.clone(tx)
    same(c, tc)
    assert c.data is not x.data
    (g,) = rg.autograd.grad((rg.clone(x) * 3).sum(), (x,))
    np.testing.assert_array_equal(g.numpy(), np.full((2, 3), 3.0))
    d = rg.detach(x)
    same(d, torch.detach(tx))
    assert np.shares_memory(d.data, x.data)
    assert rg.numel(x) == torch.numel(tx) == 6
    for shape in [(), (3,), (2, 3)]:
        a, ta = both(np.arange(np.prod(shape), dtype=np.float64).reshape(shape), grad=True)
        same(rg.t(a), torch.t(ta))
        same(a.t(), ta.t())
    (g,) = rg.autograd.grad((rg.t(x) * rg.tensor([[1.0, 2.0]] * 3, dtype=rg.float64)).sum(),
                            (x,))
    np.testing.assert_array_equal(g.numpy(), [[1.0] * 3, [2.0] * 3])
    z, tz = both(np.zeros((2, 3, 4)))
    raises_like(lambda: rg.t(z), lambda: torch.t(tz))
    raises_like(lambda: z.t(), lambda: tz.t())
    raises_like(lambda: rg.numel(3), lambda: torch.numel(3))


def test_predicates():
    values = [[1.0, 2.0], [1, 2], [True], np.array([1 + 2j], np.complex64), np.zeros((0,)),
              [0.0], [3], [[1.0]]]
    for v in values:
        a, ta = both(v)
        assert rg.is_tensor(a) and not rg.is_tensor(np.asarray(v))
        assert rg.is_floating_point(a) == torch.is_floating_point(ta)
        assert a.is_floating_point() == ta.is_floating_point()
        assert a.is_signed() == ta.is_signed()
        for w in values:
            b, tb = both(w)
            assert rg.is_same_size(a, b) == torch.is_same_size(ta, tb)
        if ta.numel() == 1:
            assert rg.is_nonzero(a) == torch.is_nonzero(ta) == a.is_nonzero()
        else:
            raises_like(lambda a=a: rg.is_nonzero(a), lambda ta=ta: torch.is_nonzero(ta))
    u8, tu8 = both([1], np.uint8)
    assert u8.is_signed() == tu8.is_signed() is False
    raises_like(lambda: rg.is_floating_point(3.0), lambda: torch.is_floating_point(3.0))
    raises_like(lambda: rg.is_nonzero(3), lambda: torch.is_nonzero(3))
    raises_like(lambda: rg.is_same_size(F32, 3), lambda: torch.is_same_size(torch.zeros(3), 3))
    assert not rg.is_tensor(torch.zeros(1))


# ---------------------------------------------------------------- making tensors

def test_as_tensor_shares_memory_where_it_can():
    arr = np.arange(3.0)
    t = rg.as_tensor(arr)
    same(t, torch.as_tensor(arr.copy()))
    arr[0] = 7.0
    assert t.data[0] == 7.0
    assert rg.as_tensor(arr, dtype=rg.float64).data is arr
    c = rg.as_tensor(arr, dtype=rg.float32)
    assert c.dtype == np.float32 and not np.shares_memory(c.data, arr)
    same(rg.as_tensor([1, 2]), torch.as_tensor([1, 2]))
    same(rg.as_tensor([1.0, 2.0]), torch.as_tensor([1.0, 2.0]))
    same(rg.as_tensor(np.float64(2.0)), torch.as_tensor(np.float64(2.0)))
    x, tx = both([1.0, 2.0], grad=True)
    assert rg.as_tensor(x) is x
    y, ty = rg.as_tensor(x, dtype=rg.float64), torch.as_tensor(tx, dtype=torch.float64)
    same(y, ty)
    (g,) = rg.autograd.grad(y.sum(), (x,))
    assert g.dtype == np.float32


def test_asarray_copy_and_requires_grad():
    arr = np.arange(3.0)
    a = rg.asarray(arr)
    same(a, torch.asarray(arr.copy()))
    assert np.shares_memory(a.data, arr)
    assert not np.shares_memory(rg.asarray(arr, copy=True).data, arr)
    assert np.shares_memory(rg.asarray(arr, copy=False).data, arr)
    raises_like(lambda: rg.asarray(arr, copy=False, dtype=rg.float32),
                lambda: torch.asarray(arr, copy=False, dtype=torch.float32))
    raises_like(lambda: rg.asarray([1, 2], copy=False), lambda: torch.asarray([1, 2], copy=False))
    same(rg.asarray(3.0), torch.asarray(3.0))
    same(rg.asarray(3), torch.asarray(3))
    same(rg.asarray([1.5], dtype=rg.float64), torch.asarray([1.5], dtype=torch.float64))
    x, tx = both([1.0, 2.0], grad=True)
    assert rg.asarray(x) is x and rg.asarray(x, requires_grad=True) is x
    for kw in [dict(dtype=rg.float64), dict(copy=True), dict(requires_grad=False)]:
        tkw = {k: (torch.float64 if k == "dtype" else v) for k, v in kw.items()}
        same(rg.asarray(x, **kw), torch.asarray(tx, **tkw))
    f, tf = both([1.0])
    same(rg.asarray(f, requires_grad=True), torch.asarray(tf, requires_grad=True))
    i, ti = both([1])
    raises_like(lambda: rg.asarray(i, requires_grad=True),
                lambda: torch.asarray(ti, requires_grad=True))
    raises_like(lambda: rg.asarray([1, 2], requires_grad=True),
                lambda: torch.asarray([1, 2], requires_grad=True))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.int8, np.int16,
                                   np.int32, np.int64, np.uint8, np.bool_, np.complex64,
                                   np.complex128])
def test_from_numpy_shares_memory_and_keeps_the_dtype(dtype):
    arr = np.ones((2, 3), dtype)[:, 1:]
    t, tt = rg.from_numpy(arr), torch.from_numpy(arr.copy())
    same(t, tt)
    assert np.shares_memory(t.data, arr)
    arr[0, 0] = 0
    assert t.data[0, 0] == 0
    t.data[1, 1] = 0  # and back
    assert arr[1, 1] == 0


def test_from_numpy_errors():
    raises_like(lambda: rg.from_numpy([1, 2]), lambda: torch.from_numpy([1, 2]))
    raises_like(lambda: rg.from_numpy(np.array(["a"])), lambda: torch.from_numpy(np.array(["a"])))
    raises_like(lambda: rg.from_numpy(np.float64(1.0)), lambda: torch.from_numpy(np.float64(1.0)))
    big = np.zeros(2, ">f4")
    raises_like(lambda: rg.from_numpy(big), lambda: torch.from_numpy(big))


def test_scalar_tensor():
    for s, kw in [(3, {}), (True, {}), (2.5, {}), (3, {"dtype": rg.int64}),
                  (1.5, {"dtype": rg.float64}), (2, {"requires_grad": True}),
                  (1 + 2j, {"dtype": rg.complex64 if hasattr(rg, "complex64") else np.complex64})]:
        tkw = {k: (TORCH_DTYPES[np.dtype(v)] if k == "dtype" else v) for k, v in kw.items()}
        same(rg.scalar_tensor(s, **kw), torch.scalar_tensor(s, **tkw))
    raises_like(lambda: rg.scalar_tensor(F32), lambda: torch.scalar_tensor(torch.zeros(3)))
    raises_like(lambda: rg.scalar_tensor(1 + 2j), lambda: torch.scalar_tensor(1 + 2j))


# ---------------------------------------------------------------- dtypes

DTYPES = list(TORCH_DTYPES)


def test_promote_types_and_can_cast_over_every_pair():
    for a in DTYPES:
        for b in DTYPES:
            assert rg.promote_types(a, b) == NP_DTYPES[torch.promote_types(TORCH_DTYPES[a],
                                                                           TORCH_DTYPES[b])]
            assert rg.can_cast(a, b) == torch.can_cast(TORCH_DTYPES[a], TORCH_DTYPES[b])
    raises_like(lambda: rg.promote_types(rg.float32, "x"),
                lambda: torch.promote_types(torch.float32, "x"))


def test_result_type():
    operands = [F32, I64, I32, U8, B, F64_0D, rg.tensor(np.array(1, np.int8)), 2, 2.5, True,
                1 + 1j, rg.tensor(np.array([1 + 1j], np.complex64))]
    for x in operands:
        for y in operands:
            ours = rg.result_type(x, y)
            assert ours == NP_DTYPES[torch.result_type(convert(x, True), convert(y, True))], \
                (x, y)
    raises_like(lambda: rg.result_type(F32), lambda: torch.result_type(torch.zeros(1)))


@pytest.mark.parametrize("dtype", [None, np.float16, np.float32, np.float64, np.complex64,
                                   np.complex128])
def test_finfo(dtype):
    ours = rg.finfo() if dtype is None else rg.finfo(dtype)
    theirs = torch.finfo() if dtype is None else torch.finfo(TORCH_DTYPES[np.dtype(dtype)])
    for attr in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype"):
        assert getattr(ours, attr) == getattr(theirs, attr), attr
        assert type(getattr(ours, attr)) is type(getattr(theirs, attr)), attr
    assert repr(ours) == repr(theirs)


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64, np.uint8])
def test_iinfo(dtype):
    ours, theirs = rg.iinfo(dtype), torch.iinfo(TORCH_DTYPES[np.dtype(dtype)])
    for attr in ("bits", "max", "min", "dtype"):
        assert getattr(ours, attr) == getattr(theirs, attr), attr
        assert type(getattr(ours, attr)) is type(getattr(theirs, attr)), attr
    assert repr(ours) == repr(theirs)


def test_finfo_iinfo_errors():
    raises_like(lambda: rg.finfo(rg.int32), lambda: torch.finfo(torch.int32))
    raises_like(lambda: rg.iinfo(rg.float32), lambda: torch.iinfo(torch.float32))
    raises_like(lambda: rg.iinfo(rg.bool_), lambda: torch.iinfo(torch.bool))


# ---------------------------------------------------------------- grad mode

def _mode_story(lib):
    """The grad and inference flags along one sequence of switches, in either library."""
    seen = []
    x = lib.ones(2, requires_grad=True)
    lib.set_grad_enabled(False)
    seen.append(lib.is_grad_enabled())
    lib.set_grad_enabled(True)
    seen.append(lib.is_grad_enabled())
    with lib.set_grad_enabled(False):
        seen.append(((x * 2).requires_grad, lib.is_grad_enabled()))
    seen.append(lib.is_grad_enabled())

    @lib.set_grad_enabled(False)
    def off():
        return lib.is_grad_enabled(), (x * 2).requires_grad

    seen.append(lib.is_grad_enabled())  # the decorator changes nothing outside
    seen.append(off())
    seen.append(lib.is_grad_enabled())

    @lib.inference_mode
    def bare():
        return lib.is_grad_enabled(), lib.is_inference_mode_enabled()

    @lib.inference_mode()
    def called():
        return lib.is_grad_enabled(), lib.is_inference_mode_enabled()

    @lib.inference_mode(False)
    def off_inference():
        return lib.is_grad_enabled(), lib.is_inference_mode_enabled()

    seen += [bare(), called(), off_inference(), lib.is_inference_mode_enabled()]
    with lib.inference_mode():
        seen.append((lib.is_grad_enabled(), lib.is_inference_mode_enabled(),
                     (x * 2).requires_grad))
        with lib.inference_mode(False):
            seen.append((lib.is_grad_enabled(), lib.is_inference_mode_enabled()))
        seen.append((lib.is_grad_enabled(), lib.is_inference_mode_enabled()))
    with lib.no_grad(), lib.inference_mode(False):
        seen.append(lib.is_grad_enabled())
    seen.append((lib.is_grad_enabled(), lib.is_inference_mode_enabled()))
    return seen


def test_set_grad_enabled_and_inference_mode_follow_torch():
    try:
        assert _mode_story(rg) == _mode_story(torch)
    finally:
        torch.set_grad_enabled(True)
        rg.set_grad_enabled(True)
    raises_like(lambda: rg.set_grad_enabled(1), lambda: torch.set_grad_enabled(1))
    assert rg.is_grad_enabled() and torch.is_grad_enabled()


# ---------------------------------------------------------------- generator, threads

def test_rng_state_round_trips_and_seeds():
    rg.manual_seed(123)
    assert rg.initial_seed() == 123
    state = rg.get_rng_state()
    assert isinstance(state, rg.Tensor) and state.dtype == np.uint8 and state.ndim == 1
    first = (rg.rand(4), rg.randn(3), rg.zeros(5).normal_(), rg.randint(0, 100, (3,)))
    rg.rand(10)
    rg.set_rng_state(state)
    again = (rg.rand(4), rg.randn(3), rg.zeros(5).normal_(), rg.randint(0, 100, (3,)))
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert rg.initial_seed() == 123
    s = rg.seed()
    assert isinstance(s, int) and rg.initial_seed() == s
    u = rg.rand(3)
    rg.manual_seed(s)
    np.testing.assert_array_equal(rg.rand(3).numpy(), u.numpy())
    assert rg.seed() != s


def test_set_rng_state_errors():
    raises_like(lambda: rg.set_rng_state(rg.zeros(3)), lambda: torch.set_rng_state(torch.zeros(3)))
    raises_like(lambda: rg.set_rng_state([1, 2]), lambda: torch.set_rng_state([1, 2]))
    raises_like(lambda: rg.set_rng_state(rg.zeros(3, dtype=rg.uint8)),
                lambda: torch.set_rng_state(torch.zeros(3, dtype=torch.uint8)))
    before = rg.get_rng_state()
    bad = rg.tensor(np.frombuffer(b'{"seed": 1, "state": {"bit_generator": "os"}}',
                                  np.uint8).copy())
    with pytest.raises(RuntimeError, match="get_rng_state"):
        rg.set_rng_state(bad)
    np.testing.assert_array_equal(rg.get_rng_state().numpy(), before.numpy())


def test_num_threads_reach_the_blas_library():
    from threadpoolctl import threadpool_info

    def blas():
        return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]

    old = rg.get_num_threads()
    assert old == max(blas())
    try:
        rg.set_num_threads(2)
        assert rg.get_num_threads() == 2 and set(blas()) == {2}
        rg.set_num_threads(1)
        assert rg.get_num_threads() == 1 and set(blas()) == {1}
    finally:
        rg.set_num_threads(old)
    raises_like(lambda: rg.set_num_threads(0), lambda: torch.set_num_threads(0))
    raises_like(lambda: rg.set_num_threads(2.0), lambda: torch.set_num_threads(2.0))


# ---------------------------------------------------------------- broadcasting, concat

def test_broadcast_shapes_tensors_to_and_concat():
    for shapes in [((2, 1), (3,)), ((2, 1), 3), (2, (3, 1)), (), ((1,), (4, 1), (2, 1, 1))]:
        assert rg.broadcast_shapes(*shapes) == tuple(torch.broadcast_shapes(*shapes))
    raises_like(lambda: rg.broadcast_shapes((2, 1), (3, 2)),
                lambda: torch.broadcast_shapes((2, 1), (3, 2)))
    raises_like(lambda: rg.broadcast_shapes((-1,)), lambda: torch.broadcast_shapes((-1,)))
    raises_like(lambda: rg.broadcast_shapes((2.0,)), lambda: torch.broadcast_shapes((2.0,)))
    x, tx = both([1.0, 2.0, 3.0], np.float64, grad=True)
    y, ty = both([[1], [2]])
    outs, touts = rg.broadcast_tensors(x, y), torch.broadcast_tensors(tx, ty)
    assert len(outs) == 2
    for a, b in zip(outs, touts):
        same(a, b)
    (g,) = rg.autograd.grad(outs[0].sum(), (x,))
    np.testing.assert_array_equal(g.numpy(), [2.0, 2.0, 2.0])
    assert rg.broadcast_tensors() == torch.broadcast_tensors() == ()
    raises_like(lambda: rg.broadcast_tensors(x, x[:2]), lambda: torch.broadcast_tensors(tx, tx[:2]))
    same(rg.broadcast_to(x, (2, 3)), torch.broadcast_to(tx, (2, 3)))
    same(x.broadcast_to((2, 3)), tx.broadcast_to((2, 3)))
    raises_like(lambda: rg.broadcast_to(x, (2, 2)), lambda: torch.broadcast_to(tx, (2, 2)))
    i, ti = both([1, 2, 3])
    same(rg.concat([i, i]), torch.concat([ti, ti]))
    same(rg.concat((y, y), dim=1), torch.concat((ty, ty), dim=1))


# ---------------------------------------------------------------- clamp_min, clamp_max

@pytest.mark.parametrize("name", ["clamp_min", "clamp_max"])
def test_one_sided_clamps(name):
    x, tx = both([[-1.0, 0.5, np.nan, 2.0, 1.0]], np.float64, grad=True)
    for bound in [1.0, 0, rg.tensor([[0.0], [1.0]], dtype=rg.float64),
                  rg.tensor([1.0, 1.0, 1.0, np.nan, 1.0], dtype=rg.float64),
                  rg.tensor(1.0, dtype=rg.float64, requires_grad=True)]:
        tb = convert(bound, True)
        out, tout = getattr(rg, name)(x, bound), getattr(torch, name)(tx, tb)
        same(out, tout)
        same(getattr(x, name)(bound), getattr(tx, name)(tb))
        ins = [x] + ([bound] if isinstance(bound, rg.Tensor) and bound.requires_grad else [])
        tins = [tx] + ([tb] if isinstance(tb, torch.Tensor) and tb.requires_grad else [])
        w = np.arange(1.0, 1.0 + tout.numel()).reshape(tuple(tout.shape))
        g = rg.autograd.grad((out * rg.tensor(w)).nansum(), ins)
        tg = torch.autograd.grad((tout * torch.tensor(w)).nansum(), tins)
        for a, b in zip(g, tg):
            np.testing.assert_array_equal(a.numpy(), b.numpy())
    i, ti = both([1, 2, 3])
    for bound in [2, 2.5, rg.tensor([2, 2, 2]), rg.tensor(2.5)]:
        same(getattr(rg, name)(i, bound), getattr(torch, name)(ti, convert(bound, True)))
    bo, tbo = both([True, False])
    raises_like(lambda: getattr(rg, name)(bo, True), lambda: getattr(torch, name)(tbo, True))
    y, ty = both([0.5, 2.0], np.float64, grad=True)
    assert rg.gradcheck(lambda a: getattr(rg, name)(a, 1.0), (y,))


# ---------------------------------------------------------------- Tensor methods

def test_type_names_and_conversions():
    for v, dt in [([1.0], np.float32), ([1.0], np.float64), ([1.0], np.float16), ([1], np.int64),
                  ([1], np.int32), ([1], np.int16), ([1], np.int8), ([1], np.uint8),
                  ([True], np.bool_), ([1j], np.complex64), ([1j], np.complex128)]:
        a, ta = both(v, dt)
        assert a.type() == ta.type()
        assert a.type(a.type()) is a and a.type(a.dtype) is a
    x, tx = both([1.5, 2.5], grad=True)
    for target, ttarget in [(rg.float64, torch.float64), (rg.int32, torch.int32),
                            ("torch.DoubleTensor", "torch.DoubleTensor"),
                            ("torch.LongTensor", "torch.LongTensor")]:
        same(x.type(target), tx.type(ttarget))
    assert x.type(rg.float32) is x
    raises_like(lambda: x.type("float"), lambda: tx.type("float"))
    i, ti = both([1, 2])
    same(i.type_as(x), ti.type_as(tx))
    same(x.type_as(i), tx.type_as(ti))
    z, tz = both(np.zeros((2, 1)))
    same(x.reshape_as(z), tx.reshape_as(tz))


def test_new_siblings_take_dtype_and_device_from_self():
    f, tf = both([1.0, 2.0], np.float64)
    i, ti = both([1, 2])
    for a, ta in [(f, tf), (i, ti)]:
        same(a.new_zeros(2, 3), ta.new_zeros(2, 3))
        same(a.new_zeros((2, 3)), ta.new_zeros((2, 3)))
        same(a.new_ones([3]), ta.new_ones([3]))
        same(a.new_empty(0, 2).new_zeros(()), ta.new_empty(0, 2).new_zeros(()))
        assert a.new_empty(2, 2).shape == tuple(ta.new_empty(2, 2).shape)
        assert a.new_empty(2).dtype == NP_DTYPES[ta.new_empty(2).dtype]
        same(a.new_full((2,), 2.5), ta.new_full((2,), 2.5))
        same(a.new_full((2,), True), ta.new_full((2,), True))
        same(a.new_tensor([1, 2]), ta.new_tensor([1, 2]))
        same(a.new_tensor(np.arange(2.5)), ta.new_tensor(np.arange(2.5)))
        same(a.new_ones(2, dtype=rg.int8), ta.new_ones(2, dtype=torch.int8))
    same(f.new_zeros(2, requires_grad=True), tf.new_zeros(2, requires_grad=True))
    same(f.new_tensor([1.0], requires_grad=True), tf.new_tensor([1.0], requires_grad=True))
    src, tsrc = both([1.0, 2.0], grad=True)
    copy, tcopy = f.new_tensor(src), tf.new_tensor(tsrc)
    same(copy, tcopy)
    assert not np.shares_memory(copy.data, src.data)
    raises_like(lambda: f.new_full(2, 3.0), lambda: tf.new_full(2, 3.0))


def test_memory_facts():
    base = np.zeros((3, 4), np.float32)
    tbase = torch.zeros(3, 4)
    views = [(lambda a: a, lambda a: a), (lambda a: a.t(), lambda a: a.t()),
             (lambda a: a[1:, 2:], lambda a: a[1:, 2:]), (lambda a: a[:, 1], lambda a: a[:, 1]),
             (lambda a: a[::2, 1:], lambda a: a[::2, 1:]),
             (lambda a: a[2:].reshape(4), lambda a: a[2:].reshape(4)),
             (lambda a: a[0].expand(2, 4), lambda a: a[0].expand(2, 4)),
             (lambda a: a.permute(1, 0)[1:], lambda a: a.permute(1, 0)[1:]),
             (lambda a: a[1:, 1:].t().contiguous(), lambda a: a[1:, 1:].t().contiguous())]
    for f, tf in views:
        v, tv = f(rg.tensor(base)), tf(tbase)
        assert v.stride() == tv.stride()
        assert all(v.stride(d) == tv.stride(d) for d in range(-v.ndim, v.ndim))
        assert v.storage_offset() == tv.storage_offset()
        assert v.is_contiguous() == tv.is_contiguous()
        assert v.contiguous().is_contiguous()
        assert v.nelement() == tv.nelement() and v.ndimension() == tv.ndimension()
        assert v.element_size() == tv.element_size() and v.itemsize == tv.itemsize
        assert v.nbytes == tv.nbytes
        assert v.is_cpu is tv.is_cpu is True
        assert v.get_device() == tv.get_device() == -1
    x = rg.from_numpy(base)  # shares memory (rg.tensor copies, as torch.tensor does)
    assert x.data_ptr() == base.ctypes.data
    assert x[1:].data_ptr() == base.ctypes.data + 16
    raises_like(lambda: x.stride(2), lambda: tbase.stride(2))
    raises_like(lambda: rg.tensor(1.0).stride(0), lambda: torch.tensor(1.0).stride(0))
    for dt in (np.int8, np.float64, np.bool_, np.complex64):
        a, ta = both([1, 0], dt)
        assert a.element_size() == ta.element_size() and a.nbytes == ta.nbytes


def test_contiguous_copies_in_the_graph():
    x, tx = both(np.arange(6.0).reshape(2, 3), np.float64, grad=True)
    y, ty = (x * 1).t().contiguous(), (tx * 1).t().contiguous()
    same(y, ty)
    assert y.is_contiguous() and y.stride() == ty.stride()
    (g,) = rg.autograd.grad((y * rg.tensor(np.arange(6.0).reshape(3, 2))).sum(), (x,))
    (tg,) = torch.autograd.grad((ty * torch.tensor(np.arange(6.0).reshape(3, 2))).sum(), (tx,))
    np.testing.assert_array_equal(g.numpy(), tg.numpy())
    c = rg.tensor(np.ones((2, 2)))
    assert c.contiguous() is c


def test_retains_grad_and_detach_():
    x, tx = both([1.0, 2.0], np.float64, grad=True)
    y, ty = x * 2, tx * 2
    assert x.retains_grad == tx.retains_grad is False
    assert y.retains_grad == ty.retains_grad is False
    y.retain_grad(), ty.retain_grad()
    assert y.retains_grad == ty.retains_grad is True
    z, tz = x * 3, tx * 3
    assert z.detach_() is z
    tz.detach_()
    same(z, tz)
    assert z.is_leaf and z.grad_fn is None
    w, tw = both([1.0], grad=True)
    w.detach_(), tw.detach_()
    same(w, tw)
    v, tv = (x * 1)[0], (tx * 1)[0]
    raises_like(lambda: v.detach_(), lambda: tv.detach_())


def test_where_method():
    x, tx = both([1.0, 2.0, 3.0], np.float64, grad=True)
    c, tc = both([True, False, True])
    i, ti = both([5, 6, 7])
    for y, ty in [(0.5, 0.5), (i, ti), (2, 2)]:
        same(x.where(c, y), tx.where(tc, ty))
    same(i.where(c, 0.5), ti.where(tc, 0.5))
    raises_like(lambda: x.where(x, 2.0), lambda: tx.where(tx, 2.0))
    (g,) = rg.autograd.grad(x.where(c, 0.0).sum(), (x,))
    np.testing.assert_array_equal(g.numpy(), [1.0, 0.0, 1.0])


# ---------------------------------------------------------------- in-place forms

# Torch's in-place methods that are not element-wise (they change a tensor's shape or
# metadata, or scatter along indices): no generated form is expected for them.
NOT_ELEMENTWISE = set("""squeeze_ unsqueeze_ t_ transpose_ swapaxes_ swapdims_ resize_
    resize_as_ set_ share_memory_ as_strided_ apply_ map_ map2_ index_fill_ index_copy_
    index_put_ index_reduce_ masked_scatter_ put_ renorm_ addbmm_ addmm_ addmv_ addr_
    baddbmm_ sparse_resize_ sparse_resize_and_clear_ resize_as_sparse_ copy_ zero_ fill_
    requires_grad_ detach_ normal_ uniform_ bernoulli_ exponential_ geometric_ cauchy_
    log_normal_ random_ fill_diagonal_ masked_fill_ scatter_ scatter_add_ scatter_reduce_
    index_add_ tril_ triu_""".split())


def test_every_torch_inplace_form_of_a_method_we_have_exists():
    missing = [n for n in dir(torch.Tensor)
               if n.endswith("_") and not n.startswith("_") and n not in NOT_ELEMENTWISE
               and hasattr(rg.Tensor, n[:-1]) and not hasattr(rg.Tensor, n)]
    assert missing == []
    assert rg.Tensor.sin_.__name__ == "sin_" and rg.Tensor.sin_.__doc__


UNARY = """abs acos asin atan ceil cos cosh deg2rad erf erfc exp exp2 expm1 fix floor frac
    log log10 log1p log2 neg negative rad2deg reciprocal relu round rsqrt sigmoid sign sin
    sinh sqrt square tan tanh trunc sinc lgamma digamma i0 logical_not""".split()


@pytest.mark.parametrize("name", UNARY)
def test_unary_inplace_against_torch(name):
    vals = [[0.25, 0.5, 0.75], [1.5, 2.5, 0.3]]
    for dt in (np.float64, np.float32, np.int64, np.bool_):
        data = np.array(vals, np.float64) * (3 if dt != np.bool_ else 1)
        a, ta = both(data.astype(dt), dt)
        try:
            expect = getattr(ta.clone(), name + "_")()
        except (TypeError, RuntimeError):  # torch refuses: so do we, changing nothing
            try:
                getattr(ta, name)()
            except (TypeError, RuntimeError):  # the op itself refuses the dtype
                kind = (TypeError, RuntimeError)
            else:  # the in-place write refuses the result's dtype: ours is a RuntimeError
                kind = RuntimeError
            with pytest.raises(kind):
                getattr(a, name + "_")()
            np.testing.assert_array_equal(a.numpy(), data.astype(dt))
            continue
        ref = a.data
        out = getattr(a, name + "_")()
        assert out is a and a.data is ref
        same(a, expect, 1e-6 if dt == np.float32 else 1e-12 if dt == np.float64 else 0)


BINARY = [("add", (2.0,)), ("sub", (1.5,)), ("mul", (2.0,)), ("pow", (2,)), ("pow", (0.5,)),
          ("atan2", (rg.tensor(0.5),)), ("hypot", (rg.tensor(2.0),)), ("copysign", (-1.0,)),
          ("fmod", (0.4,)),
          ("remainder", (0.4,)), ("floor_divide", (0.4,)), ("true_divide", (2,)),
          ("div", (2,)), ("divide", (4.0,)), ("xlogy", (2.0,)), ("eq", (0.5,)), ("ne", (0.5,)),
          ("lt", (0.5,)), ("le", (0.5,)), ("gt", (0.5,)), ("ge", (0.5,)), ("greater", (0.5,)),
          ("less_equal", (0.5,)), ("not_equal", (0.5,)), ("clamp", (0.3, 0.6)),
          ("clip", (None, 0.6)), ("clamp_min", (0.6,)), ("clamp_max", (0.6,)),
          ("logical_and", (rg.tensor(True),)), ("logical_or", (rg.tensor([False, True, True]),)),
          ("logical_xor", (rg.tensor(True),)),
          ("bitwise_and", (3,)), ("bitwise_or", (4,)), ("bitwise_xor", (5,)),
          ("lerp", (None, 0.25)), ("nan_to_num", ()), ("cumsum", (1,)), ("cumprod", (0,)),
          ("multiply", (3,)), ("subtract", (1,))]


@pytest.mark.parametrize("name,args", BINARY, ids=[f"{n}{a}" for n, a in BINARY])
def test_binary_inplace_against_torch(name, args):
    if not hasattr(torch.Tensor, name + "_"):
        pytest.fail(f"torch has no {name}_")  # the table must only hold torch's names
    for dt in (np.float64, np.int64, np.bool_):
        data = np.array([[0.25, 0.5, 0.75], [1.5, 2.5, 0.3]]) * (1 if dt == np.float64 else 3)
        a, ta = both(data.astype(dt), dt)
        if name == "lerp":
            args = (a * 2, 0.25)
        targs = tuple(convert(v, True) for v in args)
        try:
            expect = getattr(ta.clone(), name + "_")(*targs)
        except (TypeError, RuntimeError):  # torch refuses: so do we, changing nothing
            with pytest.raises((TypeError, RuntimeError)):
                getattr(a, name + "_")(*args)
            np.testing.assert_array_equal(a.numpy(), data.astype(dt))
            continue
        out = getattr(a, name + "_")(*args)
        assert out is a
        same(a, expect, 1e-12 if dt == np.float64 else 0)


def test_inplace_dtype_and_shape_refusals_are_torchs():
    cases = [("sqrt_", ()), ("exp_", ()), ("sigmoid_", ()), ("pow_", (2.5,)), ("clamp_", (0.5,)),
             ("atan2_", (1,)), ("xlogy_", (2,)), ("copysign_", (-1.0,)), ("erf_", ())]
    for name, args in cases:
        a, ta = both([1, 2, 3])
        e = raises_like(lambda a=a, n=name, v=args: getattr(a, n)(*v),
                        lambda a=ta, n=name, v=args: getattr(a, n)(*v))
        assert "int64" in str(e) and "float32" in str(e)
        np.testing.assert_array_equal(a.numpy(), [1, 2, 3])
    b, tb = both([True, False])
    raises_like(lambda: b.square_(), lambda: tb.square_())
    raises_like(lambda: b.neg_(), lambda: tb.neg_())
    x, tx = both([1.0, 2.0, 3.0])
    raises_like(lambda: x.atan2_(rg.ones(2, 3)), lambda: tx.atan2_(torch.ones(2, 3)))
    raises_like(lambda: x.clamp_min_(rg.zeros(2, 3)), lambda: tx.clamp_min_(torch.zeros(2, 3)))
    np.testing.assert_array_equal(x.numpy(), [1.0, 2.0, 3.0])


def test_inplace_on_a_leaf_that_requires_grad_is_refused_as_in_torch():
    x, tx = both([0.5, 1.0], grad=True)
    for name, args in [("exp_", ()), ("clamp_", (0.0, 1.0)), ("pow_", (2,)), ("eq_", (1.0,)),
                       ("normal_", ()), ("uniform_", ()), ("fill_diagonal_", (0,))]:
        if name == "fill_diagonal_":
            x, tx = both([[0.5, 1.0], [2.0, 3.0]], grad=True)
        raises_like(lambda a=x, n=name, v=args: getattr(a, n)(*v),
                    lambda a=tx, n=name, v=args: getattr(a, n)(*v))
        assert x.grad_fn is None and x.requires_grad
    with rg.no_grad():
        x.exp_()
    with torch.no_grad():
        tx.exp_()
    same(x, tx, 1e-6)


def test_autograd_through_inplace_on_a_non_leaf():
    """Gradients through in-place ops on non-leaves are torch's (sin_ needs its input,
    which the write overwrites: the op reads a copy), in float64, against torch and
    finite differences."""
    def chain(lib, x, w):
        y = x * 1.5
        y.sin_()
        y.multiply_(w)
        y.clamp_(-0.6, 0.9)
        y.pow_(2)
        y.atan2_(w)
        y.add_(x, alpha=0.5).exp_()
        return y

    x, tx = both([0.3, -0.8, 1.1, 2.0], np.float64, grad=True)
    w, tw = both([0.5, 2.0, -1.5, 0.7], np.float64, grad=True)
    out, tout = chain(rg, x, w), chain(torch, tx, tw)
    same(out, tout, 1e-12)
    g = rg.autograd.grad((out * out).sum(), (x, w))
    tg = torch.autograd.grad((tout * tout).sum(), (tx, tw))
    for a, b in zip(g, tg):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12, atol=1e-14)
    assert rg.gradcheck(lambda a, b: chain(rg, a, b), (x, w))
    assert rg.gradgradcheck(lambda a, b: chain(rg, a, b), (x, w))


def test_inplace_into_a_plain_tensor_from_one_that_requires_grad():
    plain, tplain = both([2.0, 3.0], np.float64)
    w, tw = both([0.5, -1.0], np.float64, grad=True)
    plain.atan2_(w), tplain.atan2_(tw)
    same(plain, tplain, 1e-12)
    assert not plain.is_leaf
    (g,) = rg.autograd.grad(plain.sum(), (w,))
    (tg,) = torch.autograd.grad(tplain.sum(), (tw,))
    np.testing.assert_allclose(g.numpy(), tg.numpy(), rtol=1e-12)


def test_inplace_bumps_the_version_and_a_saved_value_is_guarded():
    x, tx = both([0.5, 1.0], np.float64, grad=True)
    y, ty = x * 1, tx * 1
    z, tz = y.sin(), ty.sin()  # sin saves its input, y
    v = y._version
    y.exp_(), ty.exp_()
    assert y._version > v
    raises_like(lambda: z.sum().backward(), lambda: tz.sum().backward())
    base, tbase = both([[1.0, 2.0], [3.0, 4.0]], grad=True)
    b, tb = base * 1, tbase * 1
    b[0].exp_(), tb[0].exp_()  # a view of a tensor that requires grad: rebased, as torch
    (b * b).sum().backward(), (tb * tb).sum().backward()
    np.testing.assert_allclose(base.grad.numpy(), tbase.grad.numpy(), rtol=1e-6)
    with pytest.raises(RuntimeError, match="view"):
        base[0].exp_()  # a view of a leaf that requires grad: refused, as torch
    with pytest.raises(RuntimeError):
        tbase[0].exp_()


def test_inplace_inside_jit_replays_eagerly():
    def f(x):
        y = x * 2
        y.exp_()
        y.clamp_(max=10.0)
        return y.sum()

    fast = rg.jit(f)
    for v in ([0.5, 1.0], [2.0, -1.0]):
        x = rg.tensor(v, dtype=rg.float64)
        np.testing.assert_allclose(fast(x).item(), f(x).item(), rtol=1e-12)


# ---------------------------------------------------------------- random fills, samplers

def test_fills_have_the_right_moments_dtype_and_shape():
    rg.manual_seed(0)
    n = 20000
    checks = [
        ("normal_", (1.0, 2.0), lambda v: (v.mean(), v.std()), (1.0, 2.0)),
        ("uniform_", (-1.0, 3.0), lambda v: (v.mean(), v.var()), (1.0, 16 / 12)),
        ("bernoulli_", (0.3,), lambda v: (v.mean(),), (0.3,)),
        ("exponential_", (2.0,), lambda v: (v.mean(), v.std()), (0.5, 0.5)),
        ("geometric_", (0.25,), lambda v: (v.mean(), v.min()), (4.0, 1.0)),
        ("cauchy_", (1.0, 2.0), lambda v: (np.median(v), np.median(np.abs(v - 1.0))),
         (1.0, 2.0)),
        ("log_normal_", (0.5, 0.4), lambda v: (np.log(v).mean(), np.log(v).std()), (0.5, 0.4)),
    ]
    for name, args, stats, want in checks:
        for dt in (np.float32, np.float64):
            x = rg.zeros(n, 1, dtype=dt)
            assert getattr(x, name)(*args) is x
            assert x.dtype == dt and x.shape == (n, 1)
            got = stats(x.numpy().astype(np.float64).ravel())
            np.testing.assert_allclose(got, want, rtol=0.05, atol=0.02, err_msg=name)
    u = rg.zeros(n, dtype=rg.float32).uniform_(2.0, 2.5)
    assert u.numpy().min() >= 2.0 and u.numpy().max() < 2.5
    c = rg.zeros(n, dtype=np.complex128).normal_(1.0, 2.0)
    np.testing.assert_allclose([c.numpy().real.mean(), c.numpy().real.var(),
                                c.numpy().imag.mean(), c.numpy().imag.var()],
                               [1.0, 2.0, 1.0, 2.0], rtol=0.05, atol=0.05)
    p = rg.tensor(np.repeat([[0.1], [0.9]], n // 2, axis=1))
    bb = rg.zeros(2, n // 2, dtype=rg.int64).bernoulli_(p)
    np.testing.assert_allclose(bb.numpy().mean(axis=1), [0.1, 0.9], atol=0.02)
    assert bb.dtype == np.int64
    g = rg.zeros(n, dtype=rg.int32).geometric_(0.5)
    assert g.dtype == np.int32 and abs(g.numpy().mean() - 2.0) < 0.05


def test_random_ranges_follow_torch():
    rg.manual_seed(1)
    for dt, args, lo, hi in [(np.int64, (2, 5), 2, 4), (np.float32, (3,), 0, 2),
                             (np.int8, (), 0, 127), (np.uint8, (), 0, 255), (np.bool_, (), 0, 1),
                             (np.int16, (-5, None), -5, 32767), (np.float32, (), 0, 2 ** 24),
                             (np.float64, (-3, 3), -3, 2), (np.int64, (), 0, 2 ** 63 - 1)]:
        x = rg.zeros(4000, dtype=dt).random_(*args)
        v = x.numpy().astype(np.float64)
        assert x.dtype == dt and v.min() >= lo and v.max() <= hi, (dt, args)
        assert np.all(v == np.round(v))
        if hi - lo < 50:
            assert set(np.unique(v)) == set(range(lo, hi + 1))
        else:
            assert v.max() > lo + (hi - lo) * 0.9
    x = rg.zeros(100, dtype=rg.int64).random_(to=3)
    assert set(np.unique(x.numpy())) == {0, 1, 2}
    x = rg.zeros(100, dtype=rg.int64).random_(**{"from": 7, "to": 9})
    assert set(np.unique(x.numpy())) == {7, 8}


def test_fill_errors_are_torchs():
    f, tf = both(np.zeros(3))
    i, ti = both(np.zeros(3, np.int64))
    bo, tbo = both(np.zeros(3, bool))
    cases = [("normal_", i, ti, ()), ("normal_", f, tf, (0.0, -1.0)), ("normal_", bo, tbo, ()),
             ("uniform_", f, tf, (1.0, 0.0)), ("uniform_", i, ti, ()),
             ("bernoulli_", f, tf, (1.5,)), ("bernoulli_", f, tf, (torch.tensor([0.0, 2.0, 0.0]),)),
             ("bernoulli_", f, tf, (torch.tensor([0.0, 1.0]),)),
             ("bernoulli_", f, tf, (torch.tensor([1, 1, 1]),)),
             ("exponential_", f, tf, (0.0,)), ("exponential_", i, ti, ()),
             ("geometric_", f, tf, (0.0,)), ("geometric_", f, tf, (1.0,)),
             ("geometric_", bo, tbo, (0.5,)), ("cauchy_", f, tf, (0.0, 0.0)),
             ("cauchy_", i, ti, ()), ("log_normal_", f, tf, (0.0, -1.0)),
             ("log_normal_", i, ti, ()), ("random_", f, tf, (5, 2)), ("random_", f, tf, (-5,)),
             ("random_", rg.zeros(3, dtype=rg.uint8), torch.zeros(3, dtype=torch.uint8), (-1, 3)),
             ("random_", bo, tbo, (0, 3)),
             ("random_", rg.zeros(3, dtype=rg.int8), torch.zeros(3, dtype=torch.int8), (0, 300)),
             ("fill_diagonal_", f, tf, (1.0,)),
             ("fill_diagonal_", rg.zeros(2, 3, 3), torch.zeros(2, 3, 3), (1.0,))]
    for name, ours, theirs, args in cases:
        ours_args = tuple(convert(rg.tensor(a.numpy()), False) if isinstance(a, torch.Tensor)
                          else a for a in args)
        before = ours.numpy().copy()
        raises_like(lambda a=ours, n=name, v=ours_args: getattr(a, n)(*v),
                    lambda a=theirs, n=name, v=args: getattr(a, n)(*v))
        np.testing.assert_array_equal(ours.numpy(), before)


@pytest.mark.parametrize("shape,wrap", [((3, 3), False), ((3, 4), False), ((7, 3), False),
                                        ((7, 3), True), ((3, 7), True), ((4, 3), True),
                                        ((3, 3, 3), False), ((2, 2, 2, 2), True), ((0, 2), False)])
def test_fill_diagonal_against_torch(shape, wrap):
    for dt, value in [(np.float32, 2.5), (np.int64, 1.5), (np.bool_, 1)]:
        a, ta = both(np.zeros(shape, dt), dt)
        assert a.fill_diagonal_(value, wrap=wrap) is a
        same(a, ta.fill_diagonal_(value, wrap=wrap))
    a, ta = both(np.ones((2, 2)))
    same(a.fill_diagonal_(rg.tensor(3.0)), ta.fill_diagonal_(torch.tensor(3.0)))


def test_fill_gradient_is_zero_where_written():
    x, tx = both(np.arange(1.0, 10.0).reshape(3, 3), np.float64, grad=True)
    y, ty = x * 2, tx * 2
    y.fill_diagonal_(0.0), ty.fill_diagonal_(0.0)
    same(y, ty)
    (g,) = rg.autograd.grad(y.sum(), (x,))
    (tg,) = torch.autograd.grad(ty.sum(), (tx,))
    np.testing.assert_array_equal(g.numpy(), tg.numpy())
    z, tz = x * 2, tx * 2
    z.normal_(), tz.normal_()
    (g,) = rg.autograd.grad(z.sum(), (x,))
    np.testing.assert_array_equal(g.numpy(), np.zeros((3, 3)))


def test_fills_are_reproducible_with_manual_seed():
    def draws():
        rg.manual_seed(7)
        return [rg.zeros(5).normal_(), rg.zeros(5).uniform_(), rg.zeros(5).bernoulli_(),
                rg.zeros(5).exponential_(), rg.zeros(5).random_(10),
                rg.normal(0.0, 1.0, size=(5,)), rg.bernoulli(rg.full((5,), 0.5)),
                rg.poisson(rg.full((5,), 3.0))]

    for a, b in zip(draws(), draws()):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    gen = np.random.default_rng(3)
    x = rg.zeros(4).normal_(generator=gen)
    np.testing.assert_array_equal(x.numpy(),
                                  np.random.default_rng(3).normal(0, 1, 4).astype(np.float32))


def test_normal_overloads():
    rg.manual_seed(2)
    m, tm = both(np.zeros((2, 3)), np.float64, grad=True)
    s, ts = both(np.ones(3), np.float32)
    cases = [((m, 1.0), (tm, 1.0)), ((m, s), (tm, ts)), ((0.0, s), (0.0, ts)),
             ((m[0].float(), s.double()), (tm[0].float(), ts.double())),
             ((m, rg.ones(3, dtype=rg.int64)), (tm, torch.ones(3, dtype=torch.int64)))]
    for args, targs in cases:
        ours, theirs = rg.normal(*args), torch.normal(*targs)
        assert ours.shape == tuple(theirs.shape) and ours.dtype == NP_DTYPES[theirs.dtype]
        assert ours.requires_grad == theirs.requires_grad
    out = rg.normal(2.0, 3.0, size=(2,), dtype=rg.float64)
    assert out.dtype == np.float64 and out.shape == (2,)
    assert rg.normal(0.0, 1.0, (4, 5)).dtype == np.float32
    assert rg.normal(0.0, 1.0, size=(2,), requires_grad=True).requires_grad
    big = rg.normal(rg.full((40000,), 3.0), rg.full((40000,), 0.5))
    np.testing.assert_allclose([big.numpy().mean(), big.numpy().std()], [3.0, 0.5], rtol=0.02)
    y = rg.normal(m, 1.0)
    (g,) = rg.autograd.grad((y * y).sum(), (m,))
    (tg,) = torch.autograd.grad((torch.normal(tm, 1.0) ** 2).sum(), (tm,))
    np.testing.assert_array_equal(g.numpy(), tg.numpy())  # zero, as in torch


def test_normal_errors_are_torchs():
    m, tm = both(np.zeros(2))
    i, ti = both([1, 2])
    cases = [(lambda: rg.normal(m, -1.0), lambda: torch.normal(tm, -1.0)),
             (lambda: rg.normal(i, 1.0), lambda: torch.normal(ti, 1.0)),
             (lambda: rg.normal(m, rg.tensor([1.0, -1.0])),
              lambda: torch.normal(tm, torch.tensor([1.0, -1.0]))),
             (lambda: rg.normal(0.0, rg.tensor([1.0, -1.0])),
              lambda: torch.normal(0.0, torch.tensor([1.0, -1.0]))),
             (lambda: rg.normal(rg.zeros(2, 3), rg.ones(5)),
              lambda: torch.normal(torch.zeros(2, 3), torch.ones(5))),
             (lambda: rg.normal(0.0, 1.0), lambda: torch.normal(0.0, 1.0)),
             (lambda: rg.normal(0.0, i), lambda: torch.normal(0.0, ti))]
    for ours, theirs in cases:
        raises_like(ours, theirs)


def test_bernoulli_and_poisson():
    rg.manual_seed(3)
    n = 20000
    p = rg.tensor(np.tile([0.0, 0.2, 1.0], n // 3), dtype=rg.float64)
    b = rg.bernoulli(p)
    assert b.dtype == np.float64 and b.shape == p.shape
    v = b.numpy().reshape(-1, 3)
    np.testing.assert_allclose(v.mean(axis=0), [0.0, 0.2, 1.0], atol=0.02)
    h = rg.bernoulli(rg.zeros(n), 0.5)
    assert h.dtype == np.float32 and abs(h.numpy().mean() - 0.5) < 0.02
    m = rg.zeros(n).bernoulli(0.25)
    assert abs(m.numpy().mean() - 0.25) < 0.02
    q = rg.tensor(np.full(n, 0.75)).bernoulli()
    assert abs(q.numpy().mean() - 0.75) < 0.02
    rates = rg.tensor(np.tile([0.0, 1.5, 20.0], n // 3).astype(np.float32))
    po = rg.poisson(rates)
    assert po.dtype == np.float32 and po.shape == rates.shape
    pv = po.numpy().reshape(-1, 3)
    np.testing.assert_allclose(pv.mean(axis=0), [0.0, 1.5, 20.0], rtol=0.03, atol=0.01)
    np.testing.assert_allclose(pv.var(axis=0), [0.0, 1.5, 20.0], rtol=0.06, atol=0.01)
    for f, tf in [(rg.bernoulli, torch.bernoulli), (rg.poisson, torch.poisson)]:
        x, tx = both([0.5, 0.25], np.float64, grad=True)
        same_grad = f(x).requires_grad == tf(tx).requires_grad is True
        assert same_grad
        (g,) = rg.autograd.grad(f(x).sum(), (x,))
        np.testing.assert_array_equal(g.numpy(), [0.0, 0.0])
    cases = [("bernoulli", ([2.0],), {}), ("bernoulli", ([1, 0],), {}),
             ("bernoulli", ([0.0, 0.0],), {"p": 1.5}), ("poisson", ([-1.0],), {}),
             ("poisson", ([1, 2],), {})]
    for name, (v,), kw in cases:
        raises_like(lambda n=name, v=v, kw=kw: getattr(rg, n)(rg.tensor(v), **kw),
                    lambda n=name, v=v, kw=kw: getattr(torch, n)(torch.tensor(v), **kw))
    raises_like(lambda: rg.zeros(3).bernoulli(rg.ones(3)),
                lambda: torch.zeros(3).bernoulli(torch.ones(3)))


def test_draws_fills_and_siblings_stay_on_the_stand_in_device():
    import fake_device

    fake_device.install()
    try:
        x = rg.zeros(2, 3, device="cuda")
        made = [x.normal_(), x.uniform_(), x.bernoulli_(0.5), x.random_(5), x.fill_diagonal_(1.0),
                x.exp_(), x.clamp_min_(0.5), x.new_zeros(2), x.new_full((2,), 1.0),
                x.new_tensor([1.0]), x.type_as(x), rg.normal(x, 1.0), rg.bernoulli(x / x.max()),
                rg.poisson(x), rg.add(x, x, alpha=2), rg.pow(2, x), rg.eq(x, 1.0),
                rg.clamp_max(x, x[0]), x.t().contiguous()]
        for t in made:
            assert t.device == "cuda:0" and isinstance(t.data, fake_device.FakeArray)
        assert x.get_device() == 0 and not x.is_cpu and x.type() == "torch.cuda.FloatTensor"
        assert rg.equal(x, x) and not rg.equal(x, x + 1)
    finally:
        fake_device.uninstall()


def test_storage_flags_conversions_and_activation_methods_as_torch():
    """Code written for PyTorch asks `g.is_sparse`, calls `x.cfloat()`, `x.hardshrink()`."""
    x = np.array([[0.3, -1.2, 0.7], [2.0, -0.1, -0.6]])
    r, t = rg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    for flag in ("is_sparse", "is_sparse_csr", "is_quantized", "is_meta", "is_mkldnn",
                 "is_nested", "is_mps", "is_xla"):
        assert getattr(r, flag) is getattr(t, flag) is False, flag
    for name in ("cfloat", "cdouble"):
        got, want = getattr(r, name)(), getattr(t, name)()
        assert str(got.dtype) == str(want.dtype).replace("torch.", ""), name
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy())
    assert r.to_dense() is r
    w = np.array([0.25])
    for got, want in ((r.hardshrink(0.5), t.hardshrink(0.5)),
                      (r.prelu(rg.tensor(w)), t.prelu(torch.tensor(w)))):
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy())
        g, = rg.autograd.grad(got.sum(), [r])
        h, = torch.autograd.grad(want.sum(), [t])
        np.testing.assert_allclose(g.numpy(), h.numpy())
