"""PyTorch's top-level in-place functions: `rg.sin_(x)` is `x.sin_()`, `rg.clamp_(x, -1,
1)` is `x.clamp_(-1, 1)`, ... (`torch.sin_` and its kin). Each calls the Tensor method
of the same name, so values, version counters, autograd checks and errors are the
method's own."""

from __future__ import annotations

from collections.abc import Callable

from ..tensor import Tensor

NAMES = (
    "abs_", "acos_", "acosh_", "arccos_", "arccosh_", "arcsin_", "arcsinh_", "arctan_",
    "arctanh_", "asin_", "asinh_", "atan_", "atanh_", "ceil_", "cos_", "cosh_", "deg2rad_",
    "erf_", "erfc_", "exp2_", "exp_", "expm1_", "fix_", "floor_", "frac_", "log10_",
    "log1p_", "log2_", "log_", "neg_", "negative_", "rad2deg_", "reciprocal_", "round_",
    "rsqrt_", "sigmoid_", "sin_", "sinc_", "sinh_", "sqrt_", "square_", "tan_", "tanh_",
    "trunc_", "clamp_", "clamp_max_", "clamp_min_", "clip_", "fill_", "zero_", "logit_",
    "nan_to_num_", "xlogy_", "gcd_", "lcm_", "ldexp_", "i0_", "conj_physical_", "resize_as_",
)


def _make(name: str) -> Callable:
    def inplace(input, *args, **kwargs):
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}(): argument 'input' must be a Tensor, not "
                            f"{type(input).__name__}")
        return getattr(input, name)(*args, **kwargs)

    inplace.__name__ = inplace.__qualname__ = name
    inplace.__doc__ = (f"`input.{name}(...)`, in place; returns `input`. Like "
                       f"`torch.{name}`.")
    return inplace


FUNCTIONS = {n: _make(n) for n in NAMES}
globals().update(FUNCTIONS)  # each is this module's name too (where its __module__ points)
__all__ = list(NAMES)
