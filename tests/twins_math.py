"""PyTorch twins of the element-wise math ops (`ops/math.py`), for the generated tests."""

import torch

TWINS = {
    "floor": torch.floor, "ceil": torch.ceil, "trunc": torch.trunc, "frac": torch.frac,
    "round": lambda x, decimals=0: torch.round(x, decimals=decimals),
    "nan_to_num": lambda x, nan, posinf, neginf: torch.nan_to_num(x, nan, posinf, neginf),
    "log2": torch.log2, "log10": torch.log10, "exp2": torch.exp2, "expm1": torch.expm1,
    "rsqrt": torch.rsqrt, "reciprocal": torch.reciprocal, "square": torch.square,
    "asin": torch.asin, "acos": torch.acos, "atan": torch.atan, "sinh": torch.sinh,
    "cosh": torch.cosh, "asinh": torch.asinh, "acosh": torch.acosh, "atanh": torch.atanh,
    "erf": torch.erf, "erfc": torch.erfc, "erfinv": torch.erfinv,
    "atan2": torch.atan2, "hypot": torch.hypot, "copysign": torch.copysign,
    "nextafter": torch.nextafter,
    "logaddexp": torch.logaddexp, "logaddexp2": torch.logaddexp2, "xlogy": torch.xlogy,
    "lerp": torch.lerp, "fmod": torch.fmod, "remainder": torch.remainder,
    "floor_divide": lambda x, y: torch.div(x, y, rounding_mode="floor"),
    "trunc_divide": lambda x, y: torch.div(x, y, rounding_mode="trunc"),
    "binary_cross_entropy": lambda x, t: torch.nn.functional.binary_cross_entropy(
        *torch.broadcast_tensors(x, t), reduction="none"),
    "bce_slope": lambda x, t: torch.ops.aten.binary_cross_entropy_backward(
        torch.ones(torch.broadcast_shapes(x.shape, t.shape), dtype=x.dtype),
        *torch.broadcast_tensors(x, t), None, 0),
}
