"""Element-wise ops: the place to start reading the op table.

Each op is one row: its name, its NumPy forward, and the local derivative of
each input. For an element-wise op the rule `g * f'(x)` serves as both the
vjp (g a cotangent) and the jvp (g a tangent); `m` is the array namespace the
rule computes with (see `retrograd.primitive`), so the same rule runs on arrays,
on recorded tensors (higher derivatives) and on symbolic graphs. Broadcasting
between two inputs is undone by the runner, never inside a rule.

Conventions at non-differentiable points follow PyTorch: abs'(0) = 0,
relu'(0) = 0, sqrt'(0) = inf, clamp passes the gradient at its bounds, and ties
in maximum/minimum share the gradient equally and a NaN passes it to both inputs.
"""

from __future__ import annotations

import numpy as np

from ..grad_mode import state
from ..primitive import NUMPY, DtypeError, defop, elementwise


def zero_grad(m, g, out=None, *xs, **attrs):
    """The derivative of a piecewise-constant op (rounding, sign, ...): zeros, also where g
    is NaN or infinite (PyTorch's zeros_like(grad), not grad * 0), kept on g's graph."""
    if m is NUMPY:
        return np.zeros_like(g)
    return m.where(m.isfinite(g), g * 0.0, 0.0)


def _real_only(x, name):
    if isinstance(x, np.ndarray) and x.dtype.kind == "c":
        if state.complex_step:
            raise DtypeError(f"'{name}' is not analytic (complex-differentiable), so it cannot "
                             "be used with complex data (method='complex_step')")
        raise DtypeError(f"{name}(): does not support complex input (as in PyTorch)")


def _sigmoid(x):
    if x.dtype.kind == "c":
        return 1.0 / (1.0 + np.exp(-x))
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def _relu(x):
    _real_only(x, "relu")
    if x.dtype.kind in "fc":
        return np.maximum(x, 0, dtype=x.dtype)
    _no_bool(x, "relu")
    return np.maximum(x, 0)


def _no_bool(x, name):
    if x.dtype == np.bool_:
        # PyTorch: RuntimeError for relu, NotImplementedError for abs; both TypeErrors here
        # (imported at the error: the api package imports this module)
        from ..api._errors import ArgumentTypeError, DtypeError
        cls = ArgumentTypeError if name == "relu" else DtypeError
        raise cls(f"'{name}' is not defined for bool tensors (as in PyTorch); convert "
                  "with .long() or .float() first")


def _relu_into(x, out):
    return np.maximum(x, 0, out=out)


def _abs(x):
    _real_only(x, "abs")
    _no_bool(x, "abs")
    return np.abs(x)


def _sign(x):
    _real_only(x, "sign")
    r = np.sign(x)
    if r.dtype.kind == "f":  # sign(nan) is 0 in PyTorch (NaN in NumPy)
        r = np.where(r != r, r.dtype.type(0), r)
    return r


def _maximum(x, y):
    _real_only(x, "maximum")
    _real_only(y, "maximum")
    return np.maximum(x, y)


def _minimum(x, y):
    _real_only(x, "minimum")
    _real_only(y, "minimum")
    return np.minimum(x, y)


def _clamp(x, *, lo, hi):
    _real_only(x, "clamp")
    # the bound first: on a tie NumPy returns the second argument, so x is kept (-0.0
    # clamped at 0.0 stays -0.0, as in PyTorch); NaN on either side propagates
    if lo is not None:
        x = np.maximum(lo, x)
    if hi is not None:
        x = np.minimum(hi, x)
    return x


def _inside(m, x, lo, hi):
    """clamp's mask, as in PyTorch: lo <= x <= hi (bounds included; empty if lo > hi)."""
    if lo is None:
        return x <= hi
    if hi is None:
        return x >= lo
    return m.logical_and(x >= lo, x <= hi)


def _extreme_vjp(m, g, x, y, loses):
    """maximum/minimum's vjp, PyTorch's: g, halved on ties, zeroed where this input loses;
    a NaN on either side loses nothing, so both inputs get g (a `where`, not a product
    with a mask, so an infinite g gives 0, not NaN, where it loses)."""
    return m.where(loses, 0.0, m.where(x == y, g * 0.5, g))


def _extreme_jvp(m, t, x, y, wins):
    """maximum/minimum's jvp, PyTorch's: x's tangent weighted 1 where x wins, 1/2 on ties,
    0 elsewhere and y's by the rest, so at a NaN only y's tangent passes (as in PyTorch,
    whose forward and backward modes differ there)."""
    return t * m.where(x == y, 0.5, m.cast(wins, dtype=t.dtype))


# One input: the rule is g times the local derivative.
neg = elementwise("neg", np.negative, lambda m, g, out, x: -g, into=np.negative)
exp = elementwise("exp", np.exp, lambda m, g, out, x: g * out, save_out=True, reads=(),
                  into=np.exp)
log = elementwise("log", np.log, lambda m, g, out, x: g / x, into=np.log)
log1p = elementwise("log1p", np.log1p, lambda m, g, out, x: g / (x + 1.0), into=np.log1p)
sqrt = elementwise("sqrt", np.sqrt, lambda m, g, out, x: g / (out * 2.0), save_out=True,
                   reads=(), into=np.sqrt)
sin = elementwise("sin", np.sin, lambda m, g, out, x: g * m.cos(x), into=np.sin)
cos = elementwise("cos", np.cos, lambda m, g, out, x: g * -m.sin(x), into=np.cos)
tan = elementwise("tan", np.tan, lambda m, g, out, x: g * (out * out + 1.0), save_out=True,
                  reads=(), into=np.tan)
tanh = elementwise("tanh", np.tanh, lambda m, g, out, x: g * (1.0 - out * out), save_out=True,
                   reads=(), into=np.tanh)
sigmoid = elementwise("sigmoid", _sigmoid, lambda m, g, out, x: g * (out * (1.0 - out)),
                      save_out=True, reads=(), fresh=True)
def _relu_d(m, g, out, x):
    """g where the output is positive or NaN (PyTorch passes the gradient at NaN), else 0;
    recorded (create_graph) as a function of the output, so the gradient stays connected
    to x with a zero second derivative, as PyTorch's is."""
    if m is NUMPY:
        return np.where(out <= 0, 0.0, g)
    return m.where(out <= 0, out * 0.0, g)


relu = elementwise("relu", _relu, _relu_d, save_out=True, reads=(), smooth=False,
                   into=_relu_into)
abs = elementwise("abs", _abs, lambda m, g, out, x: g * m.sign(x), smooth=False)
sign = elementwise("sign", _sign, zero_grad, smooth=False)
clamp = elementwise("clamp", _clamp,  # a `where`, not a product with the mask: an infinite
                    # g (sqrt'(0) after clamp(min=0)) gives 0 outside the bounds, as PyTorch's
                    lambda m, g, out, x, lo, hi: m.where(_inside(m, x, lo, hi), g, 0.0),
                    smooth=False)


# clamp with tensor bounds, PyTorch's rules: reverse mode gives x the gradient where
# lo <= x <= hi, lo where x < lo < hi and hi where x > hi or hi < lo (so x < lo == hi gives
# it to no one); forward mode takes hi's tangent where lo > hi, else lo's where x < lo, hi's
# where x > hi, x's elsewhere (at a tie with one bound: the bound's tangent).
def _clamp_t(x, lo, hi):
    _real_only(x, "clamp")
    return np.minimum(np.maximum(x, lo), hi)


def _clamp_min_t(x, lo):
    _real_only(x, "clamp")
    return np.maximum(x, lo)


def _clamp_max_t(x, hi):
    _real_only(x, "clamp")
    return np.minimum(x, hi)


def _pick(m, mask, v):
    return m.where(mask, v, 0.0)


clamp_t = defop(
    "clamp_t", _clamp_t,
    (lambda m, g, out, x, lo, hi: _pick(m, m.logical_and(x >= lo, x <= hi), g),
     lambda m, g, out, x, lo, hi: _pick(m, m.logical_and(x < lo, lo < hi), g),
     lambda m, g, out, x, lo, hi: _pick(m, m.logical_or(x > hi, hi < lo), g)),
    (lambda m, t, out, x, lo, hi: m.where(
        m.logical_or(lo > hi, m.logical_or(x < lo, x > hi)), 0.0, t),
     lambda m, t, out, x, lo, hi: m.where(lo > hi, 0.0, _pick(m, x < lo, t)),
     lambda m, t, out, x, lo, hi: m.where(
        lo > hi, t, m.where(x < lo, 0.0, _pick(m, x > hi, t)))),
    broadcast=True, smooth=False)
clamp_min_t = defop(
    "clamp_min_t", _clamp_min_t,
    (lambda m, g, out, x, lo: _pick(m, x >= lo, g),
     lambda m, g, out, x, lo: _pick(m, x < lo, g)),
    (lambda m, t, out, x, lo: _pick(m, x > lo, t),
     lambda m, t, out, x, lo: m.where(x > lo, 0.0, t)),
    broadcast=True, smooth=False)
clamp_max_t = defop(
    "clamp_max_t", _clamp_max_t,
    (lambda m, g, out, x, hi: _pick(m, x <= hi, g),
     lambda m, g, out, x, hi: _pick(m, x > hi, g)),
    (lambda m, t, out, x, hi: _pick(m, x < hi, t),
     lambda m, t, out, x, hi: m.where(x < hi, 0.0, t)),
    broadcast=True, smooth=False)


def _fmax(x, y):
    _real_only(x, "fmax")
    return np.fmax(x, y)


def _fmax_keeps_x(m, x, y, tie: bool):
    """Where fmax takes x: x >= y (reverse mode) or x > y (forward mode, PyTorch's rule
    there), or y is NaN."""
    return m.logical_or(x >= y if tie else x > y, m.isnan(y))


fmax = defop(
    "fmax", _fmax,
    (lambda m, g, out, x, y: m.where(_fmax_keeps_x(m, x, y, True), g, 0.0),
     lambda m, g, out, x, y: m.where(_fmax_keeps_x(m, x, y, True), 0.0, g)),
    (lambda m, t, out, x, y: m.where(_fmax_keeps_x(m, x, y, False), t, 0.0),
     lambda m, t, out, x, y: m.where(_fmax_keeps_x(m, x, y, False), 0.0, t)),
    broadcast=True, smooth=False)
"""The element-wise maximum ignoring NaN, with PyTorch's derivatives: on a tie reverse mode
gives x the gradient, forward mode takes y's tangent."""

# Two inputs.
add = elementwise("add", np.add, lambda m, g, out, x, y: g, lambda m, g, out, x, y: g, reads=(),
                  into=np.add)
sub = elementwise("sub", np.subtract, lambda m, g, out, x, y: g, lambda m, g, out, x, y: -g,
                  reads=(), into=np.subtract)
mul = elementwise("mul", np.multiply, lambda m, g, out, x, y: g * y,
                  lambda m, g, out, x, y: g * x, reads="others", into=np.multiply)
# y's rule reads x and y, not the output (PyTorch's -g * ((x / y) / y)): an in-place op on
# the quotient (y.clamp_()) leaves the division's backward valid, as in PyTorch
div = elementwise("div", np.true_divide, lambda m, g, out, x, y: g / y,
                  lambda m, g, out, x, y: -g * ((x / y) / y), reads={0: (1,), 1: (0, 1)},
                  into=np.true_divide)
# PyTorch's pow of a float tensor to a Python number: these exponents are not its pow
# routine but products, a reciprocal or a square root (x ** 3 is x * x * x, rounded twice;
# NumPy's power of 3 rounds once and differs in the last bit for a quarter of the values)
_NUMBER_POWERS = {3.0: lambda x: x * x * x, -2.0: lambda x: np.reciprocal(x * x),
                  0.5: np.sqrt, -0.5: lambda x: np.reciprocal(np.sqrt(x)),
                  -1.0: np.reciprocal}
# the number exponents whose forward or first derivative (x ** (y - 1)) is one of those
NUMBER_POWERS_FLAGGED = frozenset(_NUMBER_POWERS) | {e + 1 for e in _NUMBER_POWERS} - {0.0}


def _power(x, y, *, number: bool = False):
    """x ** y; `number`: y is a 0-d float exponent that was a Python number, computed as
    PyTorch's kernel for a number exponent does (a 0-d tensor exponent goes to pow)."""
    if number:
        special = _NUMBER_POWERS.get(float(y))
        if special is not None:
            return special(x)
    elif _half_exponent(x, y):
        return _pow_half(x, np.power(x, y))
    return np.power(x, y)


def _pow_half(x, r):
    """NumPy's power with one exponent 0.5 is its sqrt; PyTorch's pow (a tensor exponent)
    is C's: +inf at -inf and +0 at -0. `r` mended there."""
    if x.ndim:
        if (np.isneginf(x) | (x == 0)).any():
            r = np.where(np.isneginf(x), np.inf, np.where(x == 0, 0.0, r)).astype(r.dtype)
        return r
    return r.dtype.type(np.inf if np.isneginf(x) else 0.0 if x == 0 else r)


def _half_exponent(x, y) -> bool:
    """Whether y is one exponent 0.5 for a host float array x (`_pow_half` applies)."""
    return (x.__class__ is np.ndarray and x.dtype.kind == "f" and getattr(y, "size", 0) == 1
            and y == 0.5)


def _pow_dx(m, g, out, x, y, *, number=False):
    """d/dx x**y = y x**(y-1), and 0 where y == 0 (also at x = 0, as in PyTorch); for one
    exponent in PyTorch's order g * (y * x**(y-1)), x**(y-1) by the forward's kernel."""
    if y.__class__ is np.ndarray and y.ndim == 0:  # one exponent: decide once, no `where`
        if y == 0:
            return zero_grad(m, g)
        return g * (y * (m.pow(x, y - 1, number=True) if number else x ** (y - 1)))
    return m.where(y == 0, 0.0, g * y * x ** (y - 1))  # (rg.sym's Horner rewrite reads this)


def _pow_dy(m, g, out, x, y, *, number=False):
    """d/dy x**y = x**y log x, and 0 where x == 0 and y >= 0 (so 0**y with y < 0 gives
    -inf), PyTorch's formula; a complex y counts as >= 0 when real and >= 0, as there (complex
    numbers have no order: NumPy's lexicographic one disagrees, and Tensors refuse it)."""
    complex_y = getattr(y, "dtype", None) is not None and y.dtype.kind == "c"  # (rg.sym: real)
    nonneg = m.logical_and(m.imag(y) == 0, m.real(y) >= 0) if complex_y else y >= 0
    return g * m.where(m.logical_and(x == 0, nonneg), 0.0, out * m.log(x))


def _power_into(x, y, *, number: bool = False, out=None):
    """`_power` written into `out` (rg.jit reuses a dying buffer)."""
    if number and float(y) in _NUMBER_POWERS:
        out[...] = _power(x, y, number=True)
        return out
    if not number and _half_exponent(x, y):
        out[...] = _power(x, y)
        return out
    return np.power(x, y, out=out)


pow = elementwise("pow", _power, _pow_dx, _pow_dy, save_out=(1,), into=_power_into)
maximum = defop("maximum", _maximum,
                (lambda m, g, out, x, y: _extreme_vjp(m, g, x, y, x < y),
                 lambda m, g, out, x, y: _extreme_vjp(m, g, x, y, x > y)),
                (lambda m, t, out, x, y: _extreme_jvp(m, t, x, y, x > y),
                 lambda m, t, out, x, y: t - _extreme_jvp(m, t, x, y, x > y)),
                broadcast=True, smooth=False)
minimum = defop("minimum", _minimum,
                (lambda m, g, out, x, y: _extreme_vjp(m, g, x, y, x > y),
                 lambda m, g, out, x, y: _extreme_vjp(m, g, x, y, x < y)),
                (lambda m, t, out, x, y: _extreme_jvp(m, t, x, y, x < y),
                 lambda m, t, out, x, y: t - _extreme_jvp(m, t, x, y, x < y)),
                broadcast=True, smooth=False)
where = elementwise("where", np.where, None,
                    lambda m, g, out, c, x, y: m.where(c, g, 0.0),
                    lambda m, g, out, c, x, y: m.where(c, 0.0, g), reads=(0,))

# Comparisons: results carry no gradient.
eq = defop("eq", np.equal)
ne = defop("ne", np.not_equal)


def _ordered(name: str, fn):
    """An order comparison: complex numbers have no order, so complex operands are refused
    (as torch; NumPy would compare them lexicographically)."""
    def forward(x, y):
        if getattr(x, "dtype", None) is not None and x.dtype.kind == "c" \
                or getattr(y, "dtype", None) is not None and y.dtype.kind == "c":
            raise DtypeError(f"{name}(): not implemented for complex tensors")
        return fn(x, y)
    return forward


lt = defop("lt", _ordered("lt", np.less))
le = defop("le", _ordered("le", np.less_equal))
gt = defop("gt", _ordered("gt", np.greater))
ge = defop("ge", _ordered("ge", np.greater_equal))
