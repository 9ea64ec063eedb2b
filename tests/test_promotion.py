"""Type promotion against PyTorch, generated: every binary op x every pair of dtypes x
{tensor with dimensions, 0-d tensor, Python scalar} on each side.

The result's dtype (and its values) must be PyTorch's; where PyTorch raises, retrograd
raises too. `maximum`/`minimum` also take Python numbers (PyTorch wants tensors there):
a number counts as a scalar, with `torch.result_type`'s rule.
"""

import itertools
import operator

import numpy as np
import pytest
import torch

import retrograd as rg

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


@pytest.fixture(autouse=True)
def _torch_default_float32():
    """Both libraries with float32 as the default float dtype (another test module may have
    changed torch's)."""
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float32)
    yield
    torch.set_default_dtype(old)  # 1 / 0 on purpose

DTYPES = ["bool", "int32", "int64", "float32", "float64"]
KINDS = ["tensor", "0-d", "scalar"]

# Values that no op here overflows or sends to a negative integer power.
_DATA = {"tensor": [1, 2, 0], "0-d": 2, "scalar": {"bool": True, "int": 3, "float": 1.5}}


def _operand(dtype, kind):
    """(retrograd operand, torch operand) of `dtype` and `kind`."""
    if kind == "scalar":
        v = _DATA["scalar"]["bool" if dtype == "bool" else "int" if "int" in dtype else "float"]
        return v, v
    arr = np.array(_DATA[kind], dtype=dtype)
    return rg.tensor(arr), torch.from_numpy(arr.copy())


def _sides():
    seen = set()
    for (da, ka), (db, kb) in itertools.product(itertools.product(DTYPES, KINDS), repeat=2):
        if ka == kb == "scalar":
            continue
        key = tuple(_scalar_key(d, k) for d, k in ((da, ka), (db, kb)))
        if key not in seen:  # a Python scalar is one of bool, int, float
            seen.add(key)
            yield da, ka, db, kb


def _scalar_key(dtype, kind):
    if kind != "scalar":
        return dtype, kind
    return ("bool" if dtype == "bool" else "int" if "int" in dtype else "float"), kind


def _torch_maximum(fn):
    def f(a, b):
        if not isinstance(a, torch.Tensor) or not isinstance(b, torch.Tensor):
            dt = torch.result_type(a, b)
            a = a.to(dt) if isinstance(a, torch.Tensor) else torch.tensor(a, dtype=dt)
            b = b.to(dt) if isinstance(b, torch.Tensor) else torch.tensor(b, dtype=dt)
        return fn(a, b)
    return f


_COND = np.array([True, False, True])

BINARY = {
    # name: (retrograd, torch)
    "add": (rg.add if hasattr(rg, "add") else operator.add, torch.add),
    "sub": (operator.sub, torch.sub),
    "mul": (operator.mul, torch.mul),
    "div": (operator.truediv, torch.div),
    "pow": (operator.pow, torch.pow),
    "maximum": (rg.maximum, _torch_maximum(torch.maximum)),
    "minimum": (rg.minimum, _torch_maximum(torch.minimum)),
    "where": (lambda a, b: rg.where(rg.tensor(_COND), a, b),
              lambda a, b: torch.where(torch.from_numpy(_COND), a, b)),
    "+": (operator.add, operator.add), "-": (operator.sub, operator.sub),
    "*": (operator.mul, operator.mul), "/": (operator.truediv, operator.truediv),
    "**": (operator.pow, operator.pow),
    "==": (operator.eq, operator.eq), "!=": (operator.ne, operator.ne),
    "<": (operator.lt, operator.lt), "<=": (operator.le, operator.le),
    ">": (operator.gt, operator.gt), ">=": (operator.ge, operator.ge),
    "&": (operator.and_, operator.and_), "|": (operator.or_, operator.or_),
    "^": (operator.xor, operator.xor),
}
BINARY["add"] = (operator.add, torch.add)
for _name, _fn in (("eq", operator.eq), ("ne", operator.ne), ("lt", operator.lt),
                   ("le", operator.le), ("gt", operator.gt), ("ge", operator.ge)):
    BINARY[_name] = (_fn, getattr(torch, _name))


def _run(fn, a, b):
    try:
        return fn(a, b), None
    except Exception as e:  # noqa: BLE001 - any refusal counts; compared below
        return None, e


def _np_dtype(t):
    return np.dtype(str(t.dtype).replace("torch.", ""))


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_result_dtype_and_values_match_torch(name):
    ours, theirs = BINARY[name]
    wrong = []
    for da, ka, db, kb in _sides():
        a, ta = _operand(da, ka)
        b, tb = _operand(db, kb)
        if name in ("add", "sub", "mul", "div", "pow", "eq", "ne", "lt", "le", "gt", "ge") \
                and ka == "scalar":
            continue  # torch.add(number, tensor) is not a form; the operators cover it
        want, terr = _run(theirs, ta, tb)
        got, err = _run(ours, a, b)
        case = f"{name}({da} {ka}, {db} {kb})"
        if terr is not None:
            if err is None:
                wrong.append(f"{case}: torch raises {type(terr).__name__}, we give {got.dtype}")
            continue
        if err is not None:
            wrong.append(f"{case}: we raise {err!r}, torch gives {want.dtype}")
            continue
        if got.dtype != _np_dtype(want):
            wrong.append(f"{case}: {got.dtype} != torch's {want.dtype}")
        elif got.shape != tuple(want.shape) or not np.allclose(
                got.data.astype(np.float64), want.numpy().astype(np.float64), equal_nan=True):
            wrong.append(f"{case}: values {got.data} != torch's {want.numpy()}")
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("default", [torch.float32, torch.float64])
def test_default_float_dtype_decides_integer_to_float_results(default):
    old = torch.get_default_dtype()
    torch.set_default_dtype(default)
    rg.set_default_dtype(str(default).replace("torch.", ""))
    try:
        i, ti = rg.tensor([1, 2]), torch.tensor([1, 2])
        pairs = [(i * 2.5, ti * 2.5), (i / i, ti / ti), (i.exp(), ti.exp()),
                 (rg.tensor(2).cos(), torch.tensor(2).cos()), (rg.sqrt(rg.tensor([True])),
                                                              torch.tensor([True]).sqrt()),
                 (rg.where(rg.tensor([True, False]), 1.0, 2), torch.where(
                     torch.tensor([True, False]), 1.0, 2))]
        for got, want in pairs:
            assert got.dtype == _np_dtype(want)
    finally:
        torch.set_default_dtype(old)
        rg.set_default_dtype(np.float32)


UNARY_FLOAT = ["exp", "log", "log1p", "sqrt", "sin", "cos", "tan", "tanh", "sigmoid"]


@pytest.mark.parametrize("name", UNARY_FLOAT + ["abs", "relu", "neg"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(3,), ()])
def test_unary_ops_on_every_dtype_match_torch(name, dtype, shape):
    arr = np.ones(shape, dtype=dtype) if dtype == "bool" else np.full(shape, 2, dtype=dtype)
    fn = (lambda t: -t) if name == "neg" else (lambda t: getattr(t, name)())
    want, terr = _run(lambda a, _: fn(a), torch.from_numpy(arr.copy()), None)
    got, err = _run(lambda a, _: fn(a), rg.tensor(arr), None)
    if terr is not None:
        assert err is not None, f"torch raises {terr!r}; we give {got.dtype}"
        return
    assert err is None, err
    assert got.dtype == _np_dtype(want)
    np.testing.assert_allclose(got.data.astype(float), want.numpy().astype(float), rtol=1e-6)


@pytest.mark.parametrize("da,db", list(itertools.product(DTYPES, DTYPES)))
def test_cat_and_stack_promote_like_torch(da, db):
    a, b = np.array([1, 0], dtype=da), np.array([0, 1], dtype=db)
    for ours, theirs in ((rg.cat, torch.cat), (rg.stack, torch.stack)):
        got = ours([rg.tensor(a), rg.tensor(b)])
        want = theirs([torch.from_numpy(a.copy()), torch.from_numpy(b.copy())])
        assert got.dtype == _np_dtype(want)
        np.testing.assert_array_equal(got.data, want.numpy())


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("bounds", [(0, 1), (0.5, None), (None, 1.5), (True, None), (1, 0)])
def test_clamp_promotes_like_torch(dtype, bounds):
    arr = np.array([0, 1, 2], dtype=dtype)
    want, terr = _run(lambda a, _: torch.clamp(a, *bounds), torch.from_numpy(arr.copy()), None)
    got, err = _run(lambda a, _: rg.clamp(a, *bounds), rg.tensor(arr), None)
    if terr is not None:
        assert err is not None
        return
    assert err is None, err
    assert got.dtype == _np_dtype(want)
    np.testing.assert_array_equal(got.data, want.numpy())


@pytest.mark.parametrize("op", ["add_", "sub_", "mul_", "div_", "__iadd__", "__imul__",
                                "__itruediv__"])
@pytest.mark.parametrize("da,db,kb", [(a, b, k) for a in DTYPES for b in DTYPES
                                      for k in ("tensor", "0-d", "scalar")])
def test_in_place_refuses_what_torch_refuses(op, da, db, kb):
    arr = np.array([1, 2, 3], dtype=da)
    b, tb = _operand(db, kb)
    t, tt = rg.tensor(arr.copy()), torch.from_numpy(arr.copy())
    _, terr = _run(lambda x, y: getattr(x, op)(y), tt, tb)
    _, err = _run(lambda x, y: getattr(x, op)(y), t, b)
    if terr is not None:
        assert err is not None, f"torch raises {terr!r}"
        np.testing.assert_array_equal(t.data, arr)  # unchanged
        return
    assert err is None, err
    assert t.dtype == arr.dtype
    np.testing.assert_array_equal(t.data, tt.numpy())


@pytest.mark.parametrize("dtype", ["int32", "int64"])
@pytest.mark.parametrize("value", [0xFFFFFFFF, 2 ** 40 + 3, -(2 ** 35), 2 ** 63 - 1])
def test_python_ints_wrap_to_the_tensor_dtype(dtype, value):
    arr = np.array([1, -2, 7], dtype=dtype)
    t, tt = rg.tensor(arr), torch.from_numpy(arr.copy())
    for fn in (operator.or_, operator.and_, operator.xor, operator.add, operator.mul,
               operator.sub, operator.lt, operator.eq):
        want, got = fn(tt, value), fn(t, value)
        assert got.dtype == _np_dtype(want)
        np.testing.assert_array_equal(got.data, want.numpy())


def test_numpy_scalars_do_not_upcast():
    x = rg.tensor([1.0, 2.0])
    for s in (np.float64(2.0), np.int64(3), np.float32(0.5)):
        assert (x * s).dtype == np.float32 and (s * x).dtype == np.float32
    assert (rg.tensor([1, 2], dtype=rg.int64) * np.float64(0.5)).dtype == np.float32


def test_mixed_dtype_gradients_keep_each_operand_dtype():
    a = rg.tensor([1.0, 2.0], requires_grad=True)
    b = rg.tensor(3.0, dtype=rg.float64, requires_grad=True)
    ta = torch.tensor([1.0, 2.0], requires_grad=True)
    tb = torch.tensor(3.0, dtype=torch.float64, requires_grad=True)
    (a * b + a ** b).sum().backward()
    (ta * tb + ta ** tb).sum().backward()
    assert (a * b).dtype == np.float32
    assert a.grad.dtype == np.float32 and b.grad.dtype == np.float64
    np.testing.assert_allclose(a.grad.data, ta.grad.numpy(), rtol=1e-6)
    np.testing.assert_allclose(b.grad.data, tb.grad.numpy(), rtol=1e-6)


def test_jit_replays_promoted_dtypes():
    def f(x, i, z):
        return x + i, i * 2.5, x * z, rg.where(x > 1, i, 0.5), (i / i).exp()

    x = rg.tensor([1.0, 2.0])
    i = rg.tensor([1, 3])
    z = rg.tensor(2.0, dtype=rg.float64)
    eager = f(x, i, z)
    jf = rg.jit(f)
    jf(x, i, z)
    for e, j in zip(eager, jf(x * 2, i + 1, z)):
        assert e.dtype == j.dtype
    for e, j in zip(f(x * 2, i + 1, z), jf(x * 2, i + 1, z)):
        np.testing.assert_allclose(j.data, e.data)
