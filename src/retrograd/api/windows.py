"""Convolution and pooling on NCHW tensors (`rg.nn.functional` re-exports them)."""

from __future__ import annotations

import builtins

import numpy as np

from .. import ops
from ..engine import apply
from ..tensor import Tensor
from ._args import _t
from .linalg import matmul
from .reductions import max, mean
from .shape import permute


def _pair_arg(v, name):
    if isinstance(v, (int, np.integer)):
        return (int(v), int(v))
    v = tuple(int(a) for a in v)
    if len(v) != 2:
        raise ValueError(f"{name} must be an int or a pair of ints, got {v}")
    return v


def _windows(x, kernel, stride, padding, dilation, name, pad_value=0.0):
    x = _t(x)
    if x.ndim != 4:
        raise ValueError(f"{name}: expected input of shape (N, C, H, W), got {x.shape}")
    k = _pair_arg(kernel, "kernel_size")
    s = _pair_arg(stride if stride is not None else k, "stride")
    p = _pair_arg(padding, "padding")
    d = _pair_arg(dilation, "dilation")
    h, w = x.shape[2] + 2 * p[0], x.shape[3] + 2 * p[1]
    oh = (h - d[0] * (k[0] - 1) - 1) // s[0] + 1
    ow = (w - d[1] * (k[1] - 1) - 1) // s[1] + 1
    if oh <= 0 or ow <= 0 or builtins.min(s) <= 0:
        raise ValueError(f"{name}: kernel {k} (stride {s}, padding {p}, dilation {d}) does not "
                         f"fit input of shape {x.shape}")
    cols = apply(ops.unfold, x, kernel=k, stride=s, padding=p, dilation=d, pad_value=pad_value)
    return cols, oh, ow


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1) -> Tensor:
    """2-D convolution with PyTorch's layouts: input (N, C, H, W), weight (O, C/groups, kh, kw)."""
    x, w = _t(input), _t(weight)
    if w.ndim != 4:
        raise ValueError(f"conv2d: weight must have shape (O, C/groups, kh, kw), got {w.shape}")
    if x.ndim != 4:
        raise ValueError(f"conv2d: expected input of shape (N, C, H, W), got {x.shape}")
    o, cg, kh, kw = w.shape
    n, c = x.shape[:2]
    if c != cg * groups or o % groups:
        raise ValueError(f"conv2d: input has {c} channels but weight {w.shape} with groups="
                         f"{groups} expects {cg * groups}")
    cols, oh, ow = _windows(x, (kh, kw), stride, padding, dilation, "conv2d")
    # (N, C, kh, kw, OH, OW) -> (G, C/G*kh*kw, N*OH*OW): one matrix product per group
    cols = permute(cols, 1, 2, 3, 0, 4, 5).reshape(groups, cg * kh * kw, n * oh * ow)
    out = matmul(w.reshape(groups, o // groups, cg * kh * kw), cols)
    out = permute(out.reshape(o, n, oh, ow), 1, 0, 2, 3)
    if bias is not None:
        out = out + _t(bias).reshape(1, o, 1, 1)
    return out


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1) -> Tensor:
    x = _t(input)
    cols, oh, ow = _windows(x, kernel_size, stride, padding, dilation, "max_pool2d",
                            pad_value=-np.inf)
    n, c = x.shape[:2]
    return max(cols.reshape(n, c, -1, oh, ow), 2)


def avg_pool2d(input, kernel_size, stride=None, padding=0) -> Tensor:
    """Average over windows, padding counted as zeros (PyTorch's count_include_pad=True)."""
    x = _t(input)
    cols, oh, ow = _windows(x, kernel_size, stride, padding, 1, "avg_pool2d")
    n, c = x.shape[:2]
    return mean(cols.reshape(n, c, -1, oh, ow), 2)
