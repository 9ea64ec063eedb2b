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
}
