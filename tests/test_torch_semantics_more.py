"""More PyTorch semantics, each compared with torch itself: sign of NaN, median's tied
gradient over all entries, exception types (bool relu, bitwise ops of floats, operators
whose shapes do not broadcast), the dtype inferred from Python complex numbers, and the
integer inputs PyTorch's relu6 / hardtanh / softsign / tanhshrink / threshold accept."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import retrograd as rg
import retrograd.nn.functional as F

NAN = float("nan")


def _same(ours, theirs, atol=1e-6):
    assert str(ours.dtype) == str(theirs.dtype).replace("torch.", "")
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(np.asarray(ours.tolist()), theirs.detach().numpy(), atol=atol,
                               rtol=1e-6)


def _raises_like(ours, theirs):
    """Our call raises an instance of the exception class torch's call raises."""
    with pytest.raises(Exception) as t:
        theirs()
    with pytest.raises(t.type) as o:
        ours()
    return o.value


# ---------------------------------------------------------------- sign

@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sign_of_nan_is_zero_with_zero_gradient(dtype):
    vals = [NAN, -1.5, 0.0, -0.0, 2.0, float("inf"), -float("inf")]
    x = rg.tensor(vals, dtype=getattr(np, dtype), requires_grad=True)
    t = torch.tensor(vals, dtype=getattr(torch, dtype), requires_grad=True)
    y, yt = rg.sign(x), torch.sign(t)
    _same(y, yt)
    y.sum().backward()
    yt.sum().backward()
    _same(x.grad, t.grad)
    _same(x.detach().sign_(), t.detach().clone().sign_())


# ---------------------------------------------------------------- median

@pytest.mark.parametrize("vals", [
    [1.0, 2.0, 2.0, 2.0, 3.0],
    [[1.0, 2.0], [2.0, 3.0]],
    [3.0, 2.0, 1.0, 2.0, 5.0, 2.0],
    [1.0, NAN, NAN, 2.0],
    [1.0, float("inf"), float("inf"), float("inf")],
    [4.0, 1.0, 7.0],
])
def test_median_over_all_entries_shares_the_gradient_among_ties(vals):
    x = rg.tensor(vals, dtype=np.float64, requires_grad=True)
    t = torch.tensor(vals, dtype=torch.float64, requires_grad=True)
    m, mt = rg.median(x), torch.median(t)
    _same(m, mt)
    (m * m).backward() if np.isfinite(mt.item()) else m.backward()
    (mt * mt).backward() if np.isfinite(mt.item()) else mt.backward()
    _same(x.grad, t.grad)


def test_median_gradcheck_and_integer_input():
    x = rg.tensor([0.3, -1.2, 2.0, 0.7, 1.1], dtype=np.float64, requires_grad=True)
    assert rg.gradcheck(rg.median, (x,))
    _same(rg.median(rg.tensor([[2, 2], [1, 3]])), torch.median(torch.tensor([[2, 2], [1, 3]])))


def test_median_keepdim_without_dim_is_a_type_error():
    x, t = rg.ones(2, 3), torch.ones(2, 3)
    _raises_like(lambda: rg.median(x, keepdim=True), lambda: torch.median(t, keepdim=True))
    _raises_like(lambda: x.median(keepdim=True), lambda: t.median(keepdim=True))
    v, i = rg.median(x, 1, keepdim=True)  # with a dim keepdim still works
    _same(v, torch.median(t, 1, keepdim=True).values)


# ---------------------------------------------------------------- exception types

@pytest.mark.parametrize("fn", ["relu", "relu_", "method", "F", "module"])
def test_relu_of_bool_raises_runtime_error(fn):
    calls = {"relu": lambda m, x: m.relu(x), "relu_": lambda m, x: m.relu_(x),
             "method": lambda m, x: x.relu(), "F": lambda m, x: m.nn.functional.relu(x),
             "module": lambda m, x: m.nn.ReLU()(x)}[fn]
    e = _raises_like(lambda: calls(rg, rg.tensor([True, False])),
                     lambda: calls(torch, torch.tensor([True, False])))
    assert isinstance(e, RuntimeError) and isinstance(e, TypeError) and "bool" in str(e)


def test_abs_of_bool_raises_not_implemented_error():
    _raises_like(lambda: rg.abs(rg.tensor([True])), lambda: torch.abs(torch.tensor([True])))


@pytest.mark.parametrize("case", [
    "bitwise_and", "bitwise_or", "bitwise_xor", "&", "|", "^", "&=", "bitwise_not", "~",
    "int&float", "bitwise_left_shift", ">>",
])
def test_bitwise_of_floats_raises_torchs_type(case):
    def call(m, a, b):
        return {"bitwise_and": lambda: m.bitwise_and(a, b),
                "bitwise_or": lambda: m.bitwise_or(a, b),
                "bitwise_xor": lambda: m.bitwise_xor(a, b), "&": lambda: a & b, "|": lambda: a | b,
                "^": lambda: a ^ b, "&=": lambda: a.__iand__(b),
                "bitwise_not": lambda: m.bitwise_not(a), "~": lambda: ~a,
                "int&float": lambda: m.bitwise_and(b.long(), a),
                "bitwise_left_shift": lambda: m.bitwise_left_shift(a, b),
                ">>": lambda: a >> 1}[case]()
    e = _raises_like(lambda: call(rg, rg.ones(2), rg.ones(2)),
                     lambda: call(torch, torch.ones(2), torch.ones(2)))
    assert isinstance(e, TypeError)  # our old type still catches it
    assert "float32" in str(e)


@pytest.mark.parametrize("case", ["+", "r+", "-", "*", "/", "**", "<", "==", "!=", "&", "%",
                                  "//", "+=", "add_", "mixed dtypes", "int"])
def test_operators_on_shapes_that_do_not_broadcast_raise_runtime_error(case):
    def call(m, a, b):
        return {"+": lambda: a + b, "r+": lambda: b.__radd__(a), "-": lambda: a - b,
                "*": lambda: a * b, "/": lambda: a / b, "**": lambda: a ** b,
                "<": lambda: a < b, "==": lambda: a == b, "!=": lambda: a != b,
                "&": lambda: (a > 0) & (b > 0), "%": lambda: a % b, "//": lambda: a // b,
                "+=": lambda: a.__iadd__(b), "add_": lambda: a.add_(b),
                "mixed dtypes": lambda: a + b.double(), "int": lambda: a.long() * b.long(),
                }[case]()
    e = _raises_like(lambda: call(rg, rg.ones(2, 3), rg.ones(4)),
                     lambda: call(torch, torch.ones(2, 3), torch.ones(4)))
    assert isinstance(e, RuntimeError) and isinstance(e, ValueError)
    assert "(2, 3)" in str(e) and "(4,)" in str(e)


def test_list_operand_that_does_not_broadcast_names_the_shapes():
    # torch refuses a list operand outright; ours converts it, then refuses the shapes
    with pytest.raises(RuntimeError, match=r"\(2, 3\) and \(4,\)"):
        rg.ones(2, 3) + [1.0, 2.0, 3.0, 4.0]


def test_broadcasting_operators_still_work():
    x = rg.tensor([[1.0, 2.0, 3.0]], dtype=np.float64, requires_grad=True)
    y = rg.tensor([[1.0], [2.0]], dtype=np.float64, requires_grad=True)
    (x * y + x).sum().backward()
    t = torch.tensor([[1.0, 2.0, 3.0]], dtype=torch.float64, requires_grad=True)
    u = torch.tensor([[1.0], [2.0]], dtype=torch.float64, requires_grad=True)
    (t * u + t).sum().backward()
    _same(x.grad, t.grad)
    _same(y.grad, u.grad)


# ---------------------------------------------------------------- complex inference

_COMPLEX_CASES = {
    "list": lambda m: m.tensor([1 + 2j]),
    "scalar": lambda m: m.tensor(1j),
    "nested mixed": lambda m: m.tensor([[1j, 2], [3, 4.5]]),
    "mixed list": lambda m: m.tensor([1, 2.5, 1j]),
    "bool and complex": lambda m: m.tensor([True, 1j]),
    "numpy scalar": lambda m: m.tensor(np.complex128(1j)),
    "as_tensor": lambda m: m.as_tensor([1j, 2]),
    "full": lambda m: m.full((2,), 1j),
    "ndarray complex128": lambda m: m.tensor(np.array([1j])),
    "ndarray complex64": lambda m: m.tensor(np.array([1j], dtype=np.complex64)),
    "from_numpy": lambda m: m.from_numpy(np.array([1j])),
    "dtype=complex": lambda m: m.zeros(2, dtype=complex),
    "float32 * 1j": lambda m: m.ones(2) * 1j,
    "float64 + 1j": lambda m: m.ones(2, dtype=m.float64) + 1j,
}


@pytest.mark.parametrize("default", ["float32", "float64"])
@pytest.mark.parametrize("case", list(_COMPLEX_CASES))
def test_python_complex_numbers_take_the_default_complex_dtype(case, default):
    f = _COMPLEX_CASES[case]
    rg.set_default_dtype(getattr(np, default))
    torch.set_default_dtype(getattr(torch, default))
    try:
        ours, theirs = f(rg), f(torch)
    finally:
        rg.set_default_dtype(np.float32)
        torch.set_default_dtype(torch.float32)
    _same(ours, theirs)


# ---------------------------------------------------------------- integer activations

_INTS = {"int64": [-3, -1, 0, 1, 2, 7], "int32": [-3, -1, 0, 1, 2, 7], "int8": [-3, 0, 5],
         "uint8": [0, 1, 5, 9, 200]}

_ACTS = {
    "relu6": lambda f, t: f.relu6(t),
    "hardtanh": lambda f, t: f.hardtanh(t),
    "hardtanh float bounds": lambda f, t: f.hardtanh(t, -1.5, 2.7),
    "hardtanh wide": lambda f, t: f.hardtanh(t, 0, 300),
    "hardtanh -0.5": lambda f, t: f.hardtanh(t, -0.5, 3),
    "softsign": lambda f, t: f.softsign(t),
    "tanhshrink": lambda f, t: f.tanhshrink(t),
    "threshold": lambda f, t: f.threshold(t, 1.5, 5.5),
    "threshold -0.5": lambda f, t: f.threshold(t, -0.5, 9),
    "threshold -1": lambda f, t: f.threshold(t, -1, 3),
    "threshold -1.0": lambda f, t: f.threshold(t, -1.0, 3),
    "threshold value 300": lambda f, t: f.threshold(t, 0, 300),
    "threshold value -255": lambda f, t: f.threshold(t, 0, -255),
    "threshold 127.5": lambda f, t: f.threshold(t, 127.5, 1),
}


@pytest.mark.parametrize("dtype", list(_INTS))
@pytest.mark.parametrize("case", list(_ACTS))
def test_activations_of_integer_tensors_as_torch(case, dtype):
    f = _ACTS[case]
    x, t = rg.tensor(_INTS[dtype], dtype=getattr(np, dtype)), \
        torch.tensor(_INTS[dtype], dtype=getattr(torch, dtype))
    try:
        theirs = f(TF, t)
    except RuntimeError:
        e = _raises_like(lambda: f(F, x), lambda: f(TF, t))
        assert str(x.shape) in str(e) or dtype in str(e)
        return
    ours = f(F, x)
    _same(ours, theirs, atol=1e-4)
    assert not ours.requires_grad


def test_integer_activations_in_place_and_default_dtype():
    for name, f in [("relu6", lambda m, v: m.relu6(v, inplace=True)),
                    ("threshold_", lambda m, v: m.threshold_(v, 0, 4)),
                    ("hardtanh_", lambda m, v: m.hardtanh_(v))]:
        x, t = rg.tensor([-3, 1, 9]), torch.tensor([-3, 1, 9])
        y, u = f(F, x), f(TF, t)
        assert x.tolist() == t.tolist() and y.tolist() == u.tolist(), name
        assert y is x
    rg.set_default_dtype(np.float64)
    torch.set_default_dtype(torch.float64)
    try:
        _same(F.softsign(rg.tensor([-2, 3])), TF.softsign(torch.tensor([-2, 3])))
        _same(F.tanhshrink(rg.tensor([-2, 3])), TF.tanhshrink(torch.tensor([-2, 3])))
    finally:
        rg.set_default_dtype(np.float32)
        torch.set_default_dtype(torch.float32)


@pytest.mark.parametrize("name", ["relu6", "hardtanh", "softsign", "tanhshrink", "threshold"])
def test_activations_of_bool_are_refused_as_torch(name):
    def call(f, t):
        return f.threshold(t, 0, 1) if name == "threshold" else getattr(f, name)(t)
    _raises_like(lambda: call(F, rg.tensor([True, False])),
                 lambda: call(TF, torch.tensor([True, False])))


def test_float_activations_unchanged_with_gradients():
    x = rg.tensor([-2.0, -0.5, 0.3, 1.5, 7.0], dtype=np.float64, requires_grad=True)
    for name in ["relu6", "hardtanh", "softsign", "tanhshrink"]:
        assert rg.gradcheck(getattr(F, name), (x,)), name
        t = torch.tensor(x.tolist(), dtype=torch.float64, requires_grad=True)
        getattr(TF, name)(t).sum().backward()
        x.grad = None
        getattr(F, name)(x).sum().backward()
        _same(x.grad, t.grad)


@pytest.mark.parametrize("call", [
    lambda m: m.ones(2, 3) @ m.ones(4, 5),
    lambda m: m.matmul(m.ones(3), m.ones(4)),
    lambda m: m.maximum(m.ones(2), m.ones(3)),
    lambda m: m.where(m.ones(2) > 0, m.ones(3), m.ones(2)),
    lambda m: m.atan2(m.ones(2), m.ones(3)),
    lambda m: m.fft.fft(m.ones(4), norm="bad"),
], ids=["matmul-op", "matmul-1d", "maximum", "where", "atan2", "fft-norm"])
def test_shape_and_argument_errors_are_runtime_errors_as_torch(call):
    """PyTorch raises RuntimeError; ours is also a ValueError (Python's kind), and names
    the shapes."""
    with pytest.raises(RuntimeError):
        call(torch)
    with pytest.raises(RuntimeError) as info:
        call(rg)
    assert isinstance(info.value, ValueError)
    msg = str(info.value)
    assert "shapes" in msg or "normalization" in msg, msg
