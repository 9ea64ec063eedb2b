"""PyTorch twins of the special functions (`ops/special.py`), for the generated tests.

Two of PyTorch's kernels need help to serve as references:
- its trigamma (digamma's derivative, polygamma(1, x)) is accurate to about 5e-10
  only; SciPy's, which retrograd uses, to the last place. The twin computes it as
  PyTorch's Hurwitz zeta(2, x), accurate to the last place, with derivative
  PyTorch's polygamma(2, x).
- its zeta, gammainc and gammaincc have no forward-mode rule; their twins give them
  PyTorch's own backward formulas in both modes: d/dq zeta(x, q) = -x zeta(x + 1, q),
  d/dx gammainc(a, x) = exp((a - 1) log x - x - lgamma(a)) (none in x, resp. a).
"""

import torch


class _Trigamma(torch.autograd.Function):
    @staticmethod
    def forward(x):
        return torch.special.zeta(2.0, x)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])
        ctx.x = inputs[0]

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * torch.special.polygamma(2, x)

    @staticmethod
    def jvp(ctx, t):
        return t * torch.special.polygamma(2, ctx.x)


class _Digamma(torch.autograd.Function):
    @staticmethod
    def forward(x):
        return torch.special.digamma(x)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])
        ctx.x = inputs[0]

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * _Trigamma.apply(x)

    @staticmethod
    def jvp(ctx, t):
        return t * _Trigamma.apply(ctx.x)


def _polygamma(n, x):
    return {0: _Digamma.apply, 1: _Trigamma.apply}.get(
        n, lambda x: torch.special.polygamma(n, x))(x)


class _Zeta(torch.autograd.Function):
    @staticmethod
    def forward(x, q):
        return torch.special.zeta(x, q)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(*inputs)
        ctx.inputs = inputs

    @staticmethod
    def backward(ctx, g):
        x, q = ctx.saved_tensors
        if ctx.needs_input_grad[0]:
            raise NotImplementedError("the derivative for 'zeta' in x is not implemented")
        return None, g * -x * _Zeta.apply(x + 1.0, q)

    @staticmethod
    def jvp(ctx, tx, tq):
        x, q = ctx.inputs  # tx is PyTorch's zero tangent of the constant x
        return tq * -x * _Zeta.apply(x + 1.0, q)


class _Gammainc(torch.autograd.Function):
    @staticmethod
    def forward(a, x, upper):
        return (torch.special.gammaincc if upper else torch.special.gammainc)(a, x)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(*inputs[:2])
        ctx.inputs = inputs

    @staticmethod
    def _dx(a, x, upper):
        a = a.to(x.dtype)  # an integer a: lgamma in x's precision, not the default float's
        d = torch.exp((a - 1) * torch.log(x) - x - torch.special.gammaln(a))
        return -d if upper else d

    @staticmethod
    def backward(ctx, g):
        a, x = ctx.saved_tensors
        return None, g * _Gammainc._dx(a, x, ctx.inputs[2]), None

    @staticmethod
    def jvp(ctx, ta, tx, _):
        a, x, upper = ctx.inputs  # ta is PyTorch's zero tangent of the constant a
        return tx * _Gammainc._dx(a, x, upper)


def _with_derivative(value, derivative):
    """A twin whose value is PyTorch's `value(x)` (which has no gradient in PyTorch) and whose
    derivative is `derivative(x)`, itself written with twins, so every order chains."""
    class _Fn(torch.autograd.Function):
        @staticmethod
        def forward(x):
            return value(x)

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])
            ctx.x = inputs[0]

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * derivative(x)

        @staticmethod
        def jvp(ctx, t):
            return t * derivative(ctx.x)

    return _Fn.apply


_S = torch.special
_j0 = _with_derivative(_S.bessel_j0, lambda x: -_j1(x))
_j1 = _with_derivative(_S.bessel_j1, lambda x: _j0(x) - _j1(x) / x)
_y0 = _with_derivative(_S.bessel_y0, lambda x: -_y1(x))
_y1 = _with_derivative(_S.bessel_y1, lambda x: _y0(x) - _y1(x) / x)
_k0 = _with_derivative(_S.modified_bessel_k0, lambda x: -_k1(x))
_k1 = _with_derivative(_S.modified_bessel_k1, lambda x: -_k0(x) - _k1(x) / x)
_k0e = _with_derivative(_S.scaled_modified_bessel_k0, lambda x: _k0e(x) - _k1e(x))
_k1e = _with_derivative(_S.scaled_modified_bessel_k1,
                        lambda x: _k1e(x) - _k0e(x) - _k1e(x) / x)


def _sph_j1(x):  # not in PyTorch: sin(x) / x**2 - cos(x) / x (samples keep away from 0)
    return torch.sin(x) / x ** 2 - torch.cos(x) / x


_sph_j0 = _with_derivative(_S.spherical_bessel_j0, lambda x: -_sph_j1(x))

TWINS = {
    "bessel_j0": _j0, "bessel_j1": _j1, "bessel_y0": _y0, "bessel_y1": _y1,
    "modified_bessel_k0": _k0, "modified_bessel_k1": _k1, "scaled_modified_bessel_k0": _k0e,
    "scaled_modified_bessel_k1": _k1e, "spherical_bessel_j0": _sph_j0,
    "spherical_bessel_j1": _sph_j1,
    "gammaln": torch.special.gammaln, "digamma": _Digamma.apply,
    "polygamma": lambda x, n: _polygamma(n, x),
    "erfcx": torch.special.erfcx, "ndtr": torch.special.ndtr, "ndtri": torch.special.ndtri,
    "log_ndtr": torch.special.log_ndtr,
    "i0": torch.special.i0, "i0e": torch.special.i0e, "i1": torch.special.i1,
    "i1e": torch.special.i1e, "entr": torch.special.entr, "sinc": torch.special.sinc,
    "xlog1py": torch.special.xlog1py,
    "zeta": lambda x, q, n=0: _Zeta.apply(x, q),
    "gammainc": lambda a, x: _Gammainc.apply(a, x, False),
    "gammaincc": lambda a, x: _Gammainc.apply(a, x, True),
}
