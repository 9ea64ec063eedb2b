"""Element-wise math, integer operators and logic against PyTorch: accuracy of erf and kin,
integer wrap-around and division semantics, result dtypes, errors, rg.sym derivatives.

(Values and gradients of every differentiable op on its samples are covered by the
generated tests in test_ops.py, test_forward.py and test_jit.py.)
"""

import math

import numpy as np
import pytest
import torch

import retrograd as rg

RNG = np.random.default_rng(0)


def _np(t):
    return t.detach().numpy() if isinstance(t, torch.Tensor) else t.data


# ---------------------------------------------------------------- the error function

def _erf_points():
    return np.concatenate([RNG.uniform(-6, 6, 4000), RNG.uniform(-0.6, 0.6, 1000),
                           RNG.uniform(-27, 27, 500), RNG.standard_normal(500) * 1e-6,
                           [0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 2.0, 4.0, 8.0, 26.0, 1e-300]])


@pytest.mark.parametrize("name", ["erf", "erfc"])
def test_erf_and_erfc_agree_with_torch_to_float64_rounding(name):
    x = _erf_points()
    ours = getattr(rg, name)(rg.tensor(x, dtype=rg.float64)).data
    ref = getattr(torch, name)(torch.tensor(x)).numpy()
    np.testing.assert_allclose(ours, ref, rtol=1e-15, atol=0)
    # and with the C library's (correctly rounded to ~1 ulp) scalar function
    lib = np.array([getattr(math, name)(v) for v in x])
    np.testing.assert_allclose(ours, lib, rtol=1e-15, atol=0)


def test_erfinv_agrees_with_torch_and_inverts_erf():
    y = np.concatenate([RNG.uniform(-1, 1, 4000), 1 - 10.0 ** RNG.uniform(-15, -1, 500),
                        -(1 - 10.0 ** RNG.uniform(-15, -1, 500)), RNG.standard_normal(200) * 1e-9,
                        [0.0, 0.5, -0.5, 0.9999999]])
    ours = rg.erfinv(rg.tensor(y, dtype=rg.float64)).data
    np.testing.assert_allclose(ours, torch.erfinv(torch.tensor(y)).numpy(), rtol=1e-15, atol=0)
    x = RNG.uniform(-2, 2, 1000)  # beyond, erf(x) rounds too close to 1 to invert well
    np.testing.assert_allclose(rg.erfinv(rg.erf(rg.tensor(x, dtype=rg.float64))).data, x,
                               rtol=1e-13)


def test_erf_family_special_values_and_float32():
    special = np.array([np.nan, np.inf, -np.inf, 30.0, -30.0])
    for name in ("erf", "erfc"):
        np.testing.assert_array_equal(getattr(rg, name)(rg.tensor(special)).data,
                                      getattr(torch, name)(torch.tensor(special)).numpy())
    ends = np.array([1.0, -1.0, 1.5, -2.0, np.nan, 0.0])
    np.testing.assert_array_equal(rg.erfinv(rg.tensor(ends, dtype=rg.float64)).data,
                                  torch.erfinv(torch.tensor(ends)).numpy())
    x32 = RNG.uniform(-3, 3, 100).astype(np.float32)
    for name in ("erf", "erfc", "erfinv"):
        v = x32 / 3 if name == "erfinv" else x32
        out = getattr(rg, name)(rg.tensor(v))
        assert out.dtype == np.float32
        np.testing.assert_allclose(out.data, getattr(torch, name)(torch.tensor(v)).numpy(),
                                   rtol=2e-6, atol=1e-7)


def test_integer_input_of_a_float_function_gives_the_default_float():
    for name in ("erf", "log2", "exp2", "rsqrt", "reciprocal", "asinh", "expm1"):
        out = getattr(rg, name)(rg.tensor([1, 2, 3]))
        ref = getattr(torch, name)(torch.tensor([1, 2, 3]))
        assert out.dtype == np.float32 and ref.dtype == torch.float32, name
        np.testing.assert_allclose(out.data, ref.numpy(), rtol=1e-6)


# ---------------------------------------------------------------- rounding

def test_rounding_values_dtypes_and_zero_gradients():
    x = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, -1.7, 1.2, 3.14159, -0.0])
    for name in ("floor", "ceil", "trunc", "round", "frac"):
        t = rg.tensor(x, dtype=rg.float64, requires_grad=True)
        tt = torch.tensor(x, requires_grad=True)
        out, ref = getattr(rg, name)(t), getattr(torch, name)(tt)
        np.testing.assert_array_equal(out.data, ref.detach().numpy())
        out.sum().backward()
        ref.sum().backward()
        np.testing.assert_array_equal(t.grad.data, tt.grad.numpy())
    for d in (2, 1, -1):
        np.testing.assert_allclose(rg.round(rg.tensor(x * 37, dtype=rg.float64), decimals=d).data,
                                   torch.round(torch.tensor(x * 37), decimals=d).numpy())
    i = rg.tensor([3, -4, 5])
    for name in ("floor", "ceil", "trunc", "round"):
        out = getattr(rg, name)(i)
        assert out.dtype == np.int64
        np.testing.assert_array_equal(out.data, [3, -4, 5])
    assert rg.tensor([1.25]).round(decimals=1).dtype == np.float32
    with pytest.raises(TypeError, match="decimals"):
        rg.round(rg.tensor([1.5]), decimals=1.5)
    with pytest.raises(TypeError, match="frac"):
        rg.frac(rg.tensor([1, 2]))


def test_nan_to_num_values_and_gradient_like_torch():
    x = np.array([1.0, np.nan, np.inf, -np.inf, -2.0])
    for kw in ({}, {"nan": 2.0, "posinf": 9.0, "neginf": -9.0}, {"posinf": 1e10}):
        t = rg.tensor(x, dtype=rg.float64, requires_grad=True)
        tt = torch.tensor(x, requires_grad=True)
        out, ref = rg.nan_to_num(t, **kw), torch.nan_to_num(tt, **kw)
        np.testing.assert_array_equal(out.data, ref.detach().numpy())
        out.sum().backward()
        ref.sum().backward()
        np.testing.assert_array_equal(t.grad.data, tt.grad.numpy())
    f32 = rg.tensor([np.inf, -np.inf], dtype=rg.float32).nan_to_num()
    np.testing.assert_array_equal(f32.data, torch.tensor([np.inf, -np.inf]).float()
                                  .nan_to_num().numpy())


# ---------------------------------------------------------------- two inputs

_BINARY = ["atan2", "hypot", "copysign", "logaddexp", "logaddexp2", "xlogy", "fmod",
           "remainder", "floor_divide"]


@pytest.mark.parametrize("name", _BINARY)
def test_binary_result_dtypes_follow_torch_promotion(name):
    a32 = np.array([1.5, -2.5, 3.0], np.float32)
    a64 = np.array([0.5, 2.0, -1.5])
    ints = np.array([3, -7, 5])
    pairs = [(a32, a64), (ints, a32), (ints, 2.5), (a32, 2), (ints, 2), (a64, a32), (2.0, ints)]
    for x, y in pairs:
        rx = rg.tensor(x) if isinstance(x, np.ndarray) else x
        ry = rg.tensor(y) if isinstance(y, np.ndarray) else y
        tx = torch.tensor(x) if isinstance(x, np.ndarray) else x
        ty = torch.tensor(y) if isinstance(y, np.ndarray) else y
        try:
            ref = getattr(torch, name)(tx, ty)
        except (RuntimeError, TypeError):
            continue
        out = getattr(rg, name)(rx, ry)
        assert str(out.dtype) == str(ref.dtype).replace("torch.", ""), (name, x, y)
        np.testing.assert_allclose(out.data, ref.numpy(), rtol=1e-6)


def test_lerp_scalar_and_tensor_weights_and_errors():
    s, e = RNG.standard_normal((3, 4)), RNG.standard_normal((3, 4))
    for w in (0.3, 0.7, 1.5, RNG.uniform(-1, 2, (4,))):
        ts, te = rg.tensor(s, requires_grad=True, dtype=rg.float64), rg.tensor(
            e, requires_grad=True, dtype=rg.float64)
        qs, qe = torch.tensor(s, requires_grad=True), torch.tensor(e, requires_grad=True)
        rw = rg.tensor(w, dtype=rg.float64) if isinstance(w, np.ndarray) else w
        qw = torch.tensor(w) if isinstance(w, np.ndarray) else w
        out, ref = rg.lerp(ts, te, rw), torch.lerp(qs, qe, qw)
        np.testing.assert_allclose(out.data, ref.detach().numpy(), rtol=1e-15, atol=1e-16)
        out.sum().backward()
        ref.sum().backward()
        np.testing.assert_allclose(ts.grad.data, qs.grad.numpy(), rtol=1e-15)
        np.testing.assert_allclose(te.grad.data, qe.grad.numpy(), rtol=1e-15)
    with pytest.raises(TypeError, match="weight"):
        rg.lerp(rg.tensor([1.0]), rg.tensor([2.0]), "half")
    with pytest.raises(TypeError, match="end"):
        rg.lerp(rg.tensor([1.0]), rg.tensor([2.0], dtype=rg.float64), 0.5)


def test_xlogy_is_zero_where_x_is_zero_with_torch_gradients():
    x = np.array([0.0, 0.0, 2.0, 0.0, 1.5])
    y = np.array([0.0, 3.0, 4.0, np.nan, 0.5])
    tx, ty = rg.tensor(x, dtype=rg.float64, requires_grad=True), rg.tensor(
        y, dtype=rg.float64, requires_grad=True)
    qx, qy = torch.tensor(x, requires_grad=True), torch.tensor(y, requires_grad=True)
    out, ref = rg.xlogy(tx, ty), torch.xlogy(qx, qy)
    np.testing.assert_array_equal(out.data, ref.detach().numpy())
    out.sum().backward()
    ref.sum().backward()
    np.testing.assert_array_equal(tx.grad.data, qx.grad.numpy())
    np.testing.assert_array_equal(ty.grad.data, qy.grad.numpy())


def test_copysign_gradient_at_zero_and_negative_zero_sign():
    x, y = np.array([0.0, -2.0, 3.0, 1.0]), np.array([-1.0, 2.0, -0.0, 0.0])
    tx = rg.tensor(x, dtype=rg.float64, requires_grad=True)
    qx = torch.tensor(x, requires_grad=True)
    out, ref = rg.copysign(tx, rg.tensor(y, dtype=rg.float64)), torch.copysign(qx, torch.tensor(y))
    np.testing.assert_array_equal(np.signbit(out.data), np.signbit(ref.detach().numpy()))
    out.sum().backward()
    ref.sum().backward()
    np.testing.assert_array_equal(tx.grad.data, qx.grad.numpy())


# ---------------------------------------------------------------- integer operators

_INT_DTYPES = [np.int8, np.uint8, np.int16, np.int32, np.int64]


def _pair_int(dtype):
    info = np.iinfo(dtype)
    lo, hi = max(info.min, -1000), min(info.max, 1000)
    x = RNG.integers(lo, hi, 40, endpoint=True).astype(dtype)
    y = RNG.integers(lo, hi, 40, endpoint=True).astype(dtype)
    y[y == 0] = 3
    x[:3] = [info.max, info.min, info.max // 2 + 1]
    return x, y


@pytest.mark.parametrize("dtype", _INT_DTYPES)
def test_integer_operators_wrap_and_divide_like_torch(dtype):
    x, y = _pair_int(dtype)
    rx, ry, tx, ty = rg.tensor(x), rg.tensor(y), torch.tensor(x), torch.tensor(y)
    shifts = RNG.integers(0, 8 * np.dtype(dtype).itemsize + 2, 40).astype(dtype)
    rs, ts = rg.tensor(shifts), torch.tensor(shifts)
    cases = [
        (lambda a, b: a + b, rx, ry, tx, ty), (lambda a, b: a * b, rx, ry, tx, ty),
        (lambda a, b: a - b, rx, ry, tx, ty), (lambda a, b: a // b, rx, ry, tx, ty),
        (lambda a, b: a % b, rx, ry, tx, ty), (lambda a, b: a & b, rx, ry, tx, ty),
        (lambda a, b: a | b, rx, ry, tx, ty), (lambda a, b: a ^ b, rx, ry, tx, ty),
        (lambda a, b: a << b, rx, rs, tx, ts), (lambda a, b: a >> b, rx, rs, tx, ts),
        (lambda a, b: a // 7, rx, None, tx, None), (lambda a, b: 7 // a, ry, None, ty, None),
        (lambda a, b: a % -5, rx, None, tx, None), (lambda a, b: 100 % a, ry, None, ty, None),
        (lambda a, b: a << 2, rx, None, tx, None), (lambda a, b: 3 >> a, rs, None, ts, None),
        (lambda a, b: a >> 1, rx, None, tx, None), (lambda a, b: 6 ^ a, rx, None, tx, None),
        (lambda a, b: ~a, rx, None, tx, None),
        (lambda a, b: (a.fmod(b) if isinstance(a, rg.Tensor) else torch.fmod(a, b)),
         rx, ry, tx, ty),
    ]
    if np.dtype(dtype).kind == "i":
        cases.append((lambda a, b: (rg.div(a, b, rounding_mode="trunc") if isinstance(
            a, rg.Tensor) else torch.div(a, b, rounding_mode="trunc")), rx, ry, tx, ty))
    for k, (f, a, b, ta, tb) in enumerate(cases):
        out, ref = f(a, b), f(ta, tb)
        assert str(out.dtype) == str(ref.dtype).replace("torch.", ""), k
        np.testing.assert_array_equal(out.data, ref.numpy(), err_msg=f"case {k}")


def test_integer_division_by_zero_raises():
    x, zero = rg.tensor([1, 2]), rg.tensor([0, 1])
    for f in (lambda: x // zero, lambda: x % zero, lambda: rg.fmod(x, zero),
              lambda: rg.div(x, zero, rounding_mode="trunc"), lambda: x // 0):
        with pytest.raises(ZeroDivisionError):
            f()


def test_float_floor_division_and_remainder_like_torch():
    x = np.concatenate([RNG.uniform(-10, 10, 200), [5.0, -5.0, 0.0, -0.0, 7.5]])
    y = np.concatenate([RNG.uniform(-3, 3, 200), [0.0, 0.0, 2.0, -2.0, -2.5]])
    for mode in (None, "trunc", "floor"):
        out = rg.div(rg.tensor(x, dtype=rg.float64), rg.tensor(y, dtype=rg.float64),
                     rounding_mode=mode)
        ref = torch.div(torch.tensor(x), torch.tensor(y), rounding_mode=mode)
        np.testing.assert_array_equal(out.data, ref.numpy())
    x32, y32 = x.astype(np.float32), y.astype(np.float32)
    rx, ry, tx, ty = rg.tensor(x32), rg.tensor(y32), torch.tensor(x32), torch.tensor(y32)
    for f in (lambda a, b: a // b, lambda a, b: a % b, lambda a, b: a.fmod(b),
              lambda a, b: 2.5 % b, lambda a, b: 7.0 // b, lambda a, b: a % 1.5):
        np.testing.assert_array_equal(f(rx, ry).data, f(tx, ty).numpy())


def test_remainder_and_fmod_gradients_match_torch():
    x, y = RNG.uniform(-5, 5, (3, 4)), RNG.uniform(0.5, 2, (4,)) * RNG.choice([-1, 1], 4)
    for name in ("remainder", "fmod", "floor_divide"):
        tx, ty = rg.tensor(x, dtype=rg.float64, requires_grad=True), rg.tensor(
            y, dtype=rg.float64, requires_grad=True)
        qx, qy = torch.tensor(x, requires_grad=True), torch.tensor(y, requires_grad=True)
        getattr(rg, name)(tx, ty).sum().backward()
        if name == "floor_divide":  # torch.floor_divide has no derivative; div(floor) has
            torch.div(qx, qy, rounding_mode="floor").sum().backward()
        else:
            getattr(torch, name)(qx, qy).sum().backward()
        np.testing.assert_array_equal(tx.grad.data, qx.grad.numpy())
        np.testing.assert_array_equal(ty.grad.data, qy.grad.numpy())


def test_in_place_integer_operators():
    a = rg.tensor([7, -7, 12])
    t = torch.tensor([7, -7, 12])
    for op in ("//=", "%=", "&=", "|=", "^=", "<<=", ">>="):
        exec(f"a {op} k\nt {op} k", {"a": a, "t": t, "k": 1 if "<" in op or ">" in op else 3})
        np.testing.assert_array_equal(a.data, t.numpy(), err_msg=op)
    f = rg.tensor([7.5, -7.5])
    f //= 2
    np.testing.assert_array_equal(f.data, [3.0, -4.0])
    with pytest.raises(TypeError):
        f &= 1


def test_bitwise_errors_name_the_function():
    f = rg.tensor([1.0, 2.0])
    for call, name in ((lambda: f << 1, "bitwise_left_shift"), (lambda: f >> 1,
                                                                 "bitwise_right_shift"),
                       (lambda: rg.bitwise_and(f, 1), "bitwise_and"),
                       (lambda: rg.bitwise_not(f), "bitwise_not")):
        with pytest.raises(TypeError, match=name):
            call()
    with pytest.raises(ValueError, match="rounding_mode"):
        rg.div(f, f, rounding_mode="x")
    with pytest.raises(TypeError, match="bool"):
        rg.tensor([True]) // rg.tensor([True])


def test_bool_bitwise_and_logical_ops():
    a, b = np.array([True, False, True, False]), np.array([True, True, False, False])
    ra, rb, ta, tb = rg.tensor(a), rg.tensor(b), torch.tensor(a), torch.tensor(b)
    for f in (lambda x, y: x & y, lambda x, y: x | y, lambda x, y: x ^ y, lambda x, y: ~x):
        out, ref = f(ra, rb), f(ta, tb)
        assert out.dtype == np.bool_
        np.testing.assert_array_equal(out.data, ref.numpy())
    x, y = np.array([0.0, 1.5, -2.0, 0.0]), np.array([3, 0, 1, 0])
    for name in ("logical_and", "logical_or", "logical_xor"):
        out = getattr(rg, name)(rg.tensor(x), rg.tensor(y))
        ref = getattr(torch, name)(torch.tensor(x), torch.tensor(y))
        assert out.dtype == np.bool_
        np.testing.assert_array_equal(out.data, ref.numpy())
    np.testing.assert_array_equal(rg.logical_not(rg.tensor(x)).data,
                                  torch.logical_not(torch.tensor(x)).numpy())


# ---------------------------------------------------------------- predicates and reductions

def test_predicates_isclose_allclose():
    x = np.array([1.0, np.nan, np.inf, -np.inf, 0.0, 1e-9])
    y = np.array([1.0 + 1e-7, np.nan, np.inf, np.inf, 1e-9, 0.0])
    for name in ("isnan", "isinf", "isfinite"):
        np.testing.assert_array_equal(getattr(rg, name)(rg.tensor(x)).data,
                                      getattr(torch, name)(torch.tensor(x)).numpy())
        np.testing.assert_array_equal(getattr(rg.tensor([1, 2]), name)().data,
                                      getattr(torch.tensor([1, 2]), name)().numpy())
    for kw in ({}, {"equal_nan": True}, {"rtol": 0.0, "atol": 1e-8}):
        np.testing.assert_array_equal(
            rg.isclose(rg.tensor(x, dtype=rg.float64), rg.tensor(y, dtype=rg.float64), **kw).data,
            torch.isclose(torch.tensor(x), torch.tensor(y), **kw).numpy())
    assert rg.allclose(rg.tensor([1.0, 2.0]), rg.tensor([1.0, 2.0 + 1e-9])) is True
    assert rg.allclose(rg.tensor([1.0, 2.0]), rg.tensor([1.0, 2.1])) is False
    with pytest.raises(ValueError, match="rtol"):
        rg.isclose(rg.tensor([1.0]), rg.tensor([1.0]), rtol=-1)


def test_all_any_with_dims_like_torch():
    x = RNG.random((3, 4, 2)) > 0.3
    for name in ("all", "any"):
        for kw in ({}, {"dim": 1}, {"dim": -1, "keepdim": True}, {"dim": (0, 2)}):
            out = getattr(rg, name)(rg.tensor(x), **kw)
            ref = getattr(torch, name)(torch.tensor(x), **kw)
            assert out.dtype == np.bool_ and out.shape == tuple(ref.shape)
            np.testing.assert_array_equal(out.data, ref.numpy())
        f = rg.tensor(np.array([[0.0, 1.0], [2.0, 3.0]]))
        np.testing.assert_array_equal(getattr(f, name)(0).data,
                                      getattr(torch.tensor([[0.0, 1.0], [2.0, 3.0]]), name)(0))
    with pytest.raises(IndexError, match="dim"):
        rg.all(rg.tensor(x), dim=3)


def test_tensor_methods_exist_where_torch_has_them():
    t = rg.tensor([0.5, -0.25])
    for name in ("floor ceil trunc round frac log2 log10 exp2 expm1 rsqrt reciprocal square "
                 "asin acos atan sinh cosh asinh atanh erf erfc erfinv isnan isinf isfinite "
                 "logical_not nan_to_num all any").split():
        np.testing.assert_allclose(getattr(t, name)().data,
                                   getattr(torch.tensor([0.5, -0.25]), name)().numpy(),
                                   rtol=1e-6, err_msg=name)
    u = rg.tensor([1.5, 2.0])
    for name in ("atan2 hypot copysign logaddexp logaddexp2 xlogy fmod remainder floor_divide "
                 "div true_divide").split():
        np.testing.assert_allclose(getattr(t, name)(u).data,
                                   getattr(torch.tensor([0.5, -0.25]), name)(
                                       torch.tensor([1.5, 2.0])).numpy(), rtol=1e-6, err_msg=name)
    np.testing.assert_array_equal(t.div(u, rounding_mode="floor").data, [0.0, -1.0])


# ---------------------------------------------------------------- rg.sym

_SYM_UNARY = [("log2", 1.3), ("log10", 1.3), ("exp2", 0.4), ("expm1", 0.4), ("rsqrt", 1.3),
              ("reciprocal", -0.7), ("square", -0.7), ("asin", 0.4), ("acos", 0.4),
              ("atan", 0.4), ("sinh", 0.4), ("cosh", 0.4), ("asinh", 0.4), ("acosh", 1.3),
              ("atanh", 0.4), ("erf", 0.4), ("erfc", 0.4), ("erfinv", 0.4)]


@pytest.mark.parametrize("name,at", _SYM_UNARY)
def test_sym_first_and_second_derivatives_equal_torch(name, at):
    x = rg.sym.var("x")
    e = getattr(rg.sym, name)(x)
    d1 = e.grad([x])[0]
    d2 = d1.grad([x])[0]
    tx = torch.tensor(at, dtype=torch.float64, requires_grad=True)
    (g,) = torch.autograd.grad(getattr(torch, name)(tx), tx, create_graph=True)
    (h,) = torch.autograd.grad(g, tx)
    assert float(e.eval(x=at)) == pytest.approx(float(getattr(torch, name)(tx)), rel=1e-14)
    assert float(d1.eval(x=at)) == pytest.approx(float(g), rel=1e-13)
    assert float(d2.eval(x=at)) == pytest.approx(float(h), rel=1e-12, abs=1e-14)


@pytest.mark.parametrize("name", ["atan2", "hypot", "logaddexp", "logaddexp2", "xlogy"])
def test_sym_binary_gradients_equal_torch(name):
    x, y = rg.sym.var("x"), rg.sym.var("y")
    dx, dy = getattr(rg.sym, name)(x, y).grad([x, y])
    tx = torch.tensor(0.7, dtype=torch.float64, requires_grad=True)
    ty = torch.tensor(1.9, dtype=torch.float64, requires_grad=True)
    gx, gy = torch.autograd.grad(getattr(torch, name)(tx, ty), (tx, ty))
    assert float(dx.eval(x=0.7, y=1.9)) == pytest.approx(float(gx), rel=1e-13)
    assert float(dy.eval(x=0.7, y=1.9)) == pytest.approx(float(gy), rel=1e-13)
    f = rg.sym.compile([dx, dy], [x, y])
    v = np.linspace(0.5, 2.0, 5)
    got = f(v, v[::-1])
    tv = torch.tensor(v, requires_grad=True)
    tw = torch.tensor(v[::-1].copy(), requires_grad=True)
    ref = torch.autograd.grad(getattr(torch, name)(tv, tw).sum(), (tv, tw))
    for a, r in zip(got, ref):
        np.testing.assert_allclose(a, r.numpy(), rtol=1e-13)


def test_sym_parses_the_new_functions():
    e = rg.sym.parse("erf(x) * atan2(x, 2) + softplus(x)")
    assert float(e.eval(x=0.3)) == pytest.approx(
        math.erf(0.3) * math.atan2(0.3, 2) + math.log1p(math.exp(0.3)), rel=1e-14)


def test_sym_exports_the_new_functions_to_sympy():
    sp = pytest.importorskip("sympy")
    x, y = rg.sym.var("x"), rg.sym.var("y")
    for e, ref in ((rg.sym.erf(x).grad([x])[0], 2 / sp.sqrt(sp.pi) * sp.exp(-sp.Symbol("x") ** 2)),
                   (rg.sym.atan2(y, x), sp.atan2(sp.Symbol("y"), sp.Symbol("x")))):
        at = {"x": 0.7, "y": -1.3}
        assert float(e.to_sympy().subs(at)) == pytest.approx(float(ref.subs(at)), rel=1e-14)
    # pow's rule tests (x == 0) & (y >= 0): logic exports as a Piecewise condition
    d = (x ** y).grad([y])[0].to_sympy()
    assert float(d.subs({"x": 2.0, "y": 3.0})) == pytest.approx(8 * math.log(2), rel=1e-14)
