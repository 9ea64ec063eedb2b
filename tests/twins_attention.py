"""PyTorch twins of fused attention (`ops/fused_attention.py`), for the generated tests."""

import torch


def _attention(q, k, v, scale, causal):
    """PyTorch's math path of scaled_dot_product_attention (its fused CPU kernel has no
    second derivative)."""
    s = q @ k.transpose(-2, -1) * scale
    if causal:
        seen = torch.ones(s.shape[-2:], dtype=torch.bool).tril()
        s = s.masked_fill(~seen, float("-inf"))
    return torch.softmax(s, -1) @ v


TWINS = {"attention": _attention}
