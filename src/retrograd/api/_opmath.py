"""float16 computed in float32, as PyTorch's CPU kernels compute half precision ("opmath"):
a standard deviation, a norm or a normalisation of float16 values accumulates in float32
and rounds once at the end, so 300.0 * 300.0 summed does not overflow to inf, nor does a
layer norm of such values come out all zeros."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable

import numpy as np

from ..tensor import Tensor

HALF = np.dtype(np.float16)


def _to_half(out):
    if isinstance(out, Tensor):
        return out.to(HALF) if out.dtype == np.float32 else out
    if isinstance(out, tuple):
        items = [_to_half(o) for o in out]
        return type(out)(*items) if hasattr(out, "_fields") else type(out)(items)
    return out


def float16_in_float32(*names: str, follow_input: bool = False) -> Callable:
    """Decorate a function whose first argument is its input: when that input is a float16
    tensor (and no `dtype=` is asked for), the arguments `names` (the input's included)
    that are float16 tensors run as float32 and float32 results come back as float16.
    Only when every floating tensor among `names` is float16 (a mixture promotes as
    before), or, with `follow_input` (a normalisation layer, whose float32 parameters may
    meet a float16 input), whatever the others are."""
    def decorate(fn: Callable) -> Callable:
        sig = inspect.signature(fn)
        first = next(iter(sig.parameters))

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            x = args[0] if args else kwargs.get(first)
            if x.__class__ is not Tensor or x.data.dtype is not HALF \
                    or kwargs.get("dtype") is not None:  # (NumPy's dtypes are singletons)
                return fn(*args, **kwargs)
            bound = sig.bind(*args, **kwargs)
            given = [(n, bound.arguments.get(n)) for n in names]
            given = [(n, v) for n, v in given if isinstance(v, Tensor) and v.dtype.kind == "f"]
            if not follow_input and any(v.dtype != HALF for _, v in given):
                return fn(*args, **kwargs)
            for name, v in given:
                if v.dtype == HALF:
                    bound.arguments[name] = v.to(np.float32)
            return _to_half(fn(*bound.args, **bound.kwargs))
        wrapper.__signature__ = sig  # fn's own parameters: out_args sees it takes no out=
        return wrapper
    return decorate
