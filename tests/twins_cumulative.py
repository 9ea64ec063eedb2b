"""PyTorch twins of the cumulative family's ops (merged into test_ops.TORCH)."""

import torch


def _cumsum(x, axis, reverse=False):
    if reverse:
        return torch.flip(torch.cumsum(torch.flip(x, [axis]), axis), [axis])
    return torch.cumsum(x, axis)


TWINS = {
    "cumsum": _cumsum,
    "cumprod": lambda x, axis: torch.cumprod(x, axis),
    "logcumsumexp": lambda x, axis: torch.logcumsumexp(x, axis),
}
