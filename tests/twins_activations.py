"""PyTorch twins of the activation ops (`ops/activations.py`), for the generated tests."""

import torch
import torch.nn.functional as F

TWINS = {
    "gelu": lambda x, approximate: F.gelu(x, approximate=approximate),
    "silu": F.silu, "mish": F.mish, "logsigmoid": F.logsigmoid,
    "softplus": lambda x, beta, threshold: F.softplus(x, beta=beta, threshold=threshold),
    "elu": lambda x, alpha, scale, input_scale: torch.ops.aten.elu(x, alpha, scale,
                                                                   input_scale),
    "leaky_relu": lambda x, negative_slope: F.leaky_relu(x, negative_slope),
    "hardtanh": lambda x, min_val, max_val: F.hardtanh(x, min_val, max_val),
    "hardsigmoid": F.hardsigmoid, "hardswish": F.hardswish, "softsign": F.softsign,
    "threshold": lambda x, threshold, value: F.threshold(x, threshold, value),
    # PyTorch's _prelu_kernel and its backward, written out (the samples keep x off 0)
    "prelu": lambda x, w: torch.where(x > 0, x, x * w),
    "_prelu_gx": lambda g, x, w: torch.where(x > 0, g, g * w) + 0 * x,  # x: zero, connected
    "_prelu_gw": lambda g, x, w: torch.where(x > 0, 0.0, x * g) + 0 * w,
}
