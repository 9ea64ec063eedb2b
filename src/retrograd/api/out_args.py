"""PyTorch's `out=` keyword on the top-level functions that lack one of their own, and
the number constants `rg.e`, `rg.pi`, `rg.inf`, `rg.nan` (`torch.nan` in examples).

`torch.logical_and(a, b, out=c)` writes the result into `c` (cast to its dtype, which
must be of the result's category or higher; an empty `c` is resized) and returns `c`;
functions returning a named pair (`sort`, `topk`, `aminmax`, ...) take a tuple of
tensors, one per field. The wrapped functions are bound at package level only: the
functions in their own modules, and the Tensor methods, are unchanged.
"""

from __future__ import annotations

import functools
import inspect
import math

import numpy as np

from ..tensor import Tensor
from .torch_names import _into

CONSTANTS = {"e": math.e, "pi": math.pi, "inf": math.inf, "nan": math.nan}

# The top-level functions whose torch counterpart takes `out=` (creation functions and
# samplers, which take it themselves or make their values in out's dtype, are left out).
OUT_NAMES = """
abs absolute acos acosh addbmm addcdiv addcmul addmm addmv addr all amax amin aminmax
angle any arccos arccosh arcsin arcsinh arctan arctan2 arctanh asin asinh atan atan2 atanh
baddbmm bitwise_and bitwise_left_shift bitwise_not bitwise_or bitwise_right_shift
bitwise_xor bmm bucketize cat ceil cholesky cholesky_inverse cholesky_solve clamp clip
column_stack complex concat concatenate conj_physical copysign cos cosh cross cummax cummin
cumprod cumsum deg2rad diag digamma div divide dot dstack erf erfc erfinv exp exp2 expm1
fix float_power floor floor_divide fmax fmin fmod frac frexp gather gcd geqrf ger heaviside
histc histogram hstack hypot i0 igamma igammac index_add index_copy index_reduce
index_select inner inverse isneginf isposinf kron kthvalue lcm ldexp lerp lgamma log log10
log1p log2 logaddexp logaddexp2 logcumsumexp logical_and logical_not logical_or logical_xor
logit logsumexp lu_solve lu_unpack masked_select matrix_power maximum minimum mm mode
msort mv mvlgamma nan_to_num nanmean nanquantile nextafter nonzero ormqr outer polar
polygamma qr quantile rad2deg reciprocal remainder renorm round row_stack rsqrt
searchsorted sgn sigmoid sign signbit sin sinc sinh sort sqrt square stack std_mean svd
take take_along_dim tan tanh topk triangular_solve tril triu true_divide trunc var_mean vdot
vstack where xlogy
""".split()


# rg.special's functions whose torch.special counterpart takes `out=` (all but softmax and
# log_softmax).
SPECIAL_OUT_NAMES = """
airy_ai bessel_j0 bessel_j1 bessel_y0 bessel_y1 chebyshev_polynomial_t chebyshev_polynomial_u
chebyshev_polynomial_v chebyshev_polynomial_w digamma entr erf erfc erfcx erfinv exp2 expit
expm1 gammainc gammaincc gammaln hermite_polynomial_h hermite_polynomial_he i0 i0e i1 i1e
laguerre_polynomial_l legendre_polynomial_p log1p log_ndtr logit logsumexp modified_bessel_i0
modified_bessel_i1 modified_bessel_k0 modified_bessel_k1 multigammaln ndtr ndtri polygamma psi
round scaled_modified_bessel_k0 scaled_modified_bessel_k1 shifted_chebyshev_polynomial_t
shifted_chebyshev_polynomial_u shifted_chebyshev_polynomial_v shifted_chebyshev_polynomial_w
sinc spherical_bessel_j0 xlog1py xlogy zeta
""".split()


# Functions whose own `out` takes only None (NumPy passes `out=None` to the Tensor methods
# they are bound as, and torch's methods take no out): at package level they take torch's
# `out=` all the same (`torch.max(heat, g, out=heat[y0:y1, x0:x1])` in CenterNet's targets).
OUT_METHODS = ("max", "min", "sum", "prod", "mean", "std", "var", "norm", "nansum")

# Reductions whose `out=` also sets the dtype they compute in, as torch's: `torch.sum(x,
# out=o)` sums in o's dtype (an int64 `o` takes a float input's sum, truncated values).
_OUT_AS_DTYPE = frozenset({"sum", "prod", "nansum", "cumsum", "cumprod", "mean"})


# Kernels that refuse an `out=` overlapping one of their inputs (torch's assert_no_overlap:
# "unsupported operation: some elements of the input tensor and the written-to tensor refer
# to a single memory location"); elementwise ops and the others accept out=input.
_NO_OVERLAP = frozenset({"gather", "index_select", "take", "take_along_dim", "index_add",
                         "masked_select", "cat", "concat", "concatenate", "kthvalue", "cross",
                         "outer", "kron"})


def _check_no_overlap(name: str, out, args, kwargs) -> None:
    outs = [o for o in (out if isinstance(out, (tuple, list)) else (out,))
            if isinstance(o, Tensor)]
    ins = [a for v in (*args, *kwargs.values())
           for a in (v if isinstance(v, (tuple, list)) else (v,)) if isinstance(a, Tensor)]
    for o in outs:
        # index_add(x, ..., out=x) is torch's in-place form: only the other inputs count
        if any(np.may_share_memory(o.data, a.data) for a in ins
               if not (name == "index_add" and a is o and args and a is args[0])):
            raise RuntimeError(f"{name}(): unsupported operation: some elements of the input "
                               "tensor and the written-to tensor refer to a single memory "
                               "location. Please clone() the tensor before performing the "
                               "operation.")


def _takes_out(fn) -> bool:
    try:
        params = inspect.signature(fn, follow_wrapped=False).parameters
    except (TypeError, ValueError):
        return True  # a builtin we cannot read: leave it alone
    return "out" in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


def with_out(fn, name: str):
    """`fn` with PyTorch's keyword `out=`; without it, `fn` itself is called."""
    @functools.wraps(fn)
    def call(*args, out=None, **kwargs):
        if name in _OUT_AS_DTYPE and isinstance(out, Tensor) and kwargs.get("dtype") is None:
            kwargs["dtype"] = out.dtype
        if out is not None and name in _NO_OVERLAP:
            _check_no_overlap(name, out, args, kwargs)
        result = fn(*args, **kwargs)
        if out is None:
            return result
        if isinstance(result, tuple):
            if not isinstance(out, (tuple, list)) or len(out) != len(result):
                raise TypeError(f"{name}(): argument 'out' must be a tuple of "
                                f"{len(result)} Tensors")
            outs = tuple(_into(name, r, o) for r, o in zip(result, out))
            return type(result)(*outs) if hasattr(result, "_fields") else outs
        # clamp with number bounds is one of torch's same-dtype kernels; with tensor bounds
        # it casts like the binary ops
        same = name in ("clamp", "clip") and not any(
            isinstance(a, Tensor) for a in (*args[1:], *kwargs.values()))
        return _into(name, result, out, same)

    return call


def bind(namespace: dict, *shared) -> None:
    """Give the functions of `namespace` (the package's) that lack it an `out=`, and add
    the constants. A function that the modules in `shared` (rg.special, rg.functional)
    hold too is replaced there as well, so `rg.sinc is rg.special.sinc` stays true."""
    wrapped = {}
    todo = [(namespace, name) for name in OUT_NAMES + list(OUT_METHODS)]
    todo += [(vars(m), name) for m in shared for name in SPECIAL_OUT_NAMES]
    for ns, name in todo:
        fn = ns.get(name)
        if fn is not None and callable(fn) and id(fn) not in wrapped and (
                ns is namespace and name in OUT_METHODS or not _takes_out(fn)):
            wrapped[id(fn)] = with_out(fn, name)
    for ns in (namespace, *(vars(m) for m in shared)):  # aliases (concat, ...) stay aliases
        for name, fn in list(ns.items()):
            if callable(fn) and id(fn) in wrapped:
                ns[name] = wrapped[id(fn)]
    for name, value in CONSTANTS.items():
        namespace.setdefault(name, value)
