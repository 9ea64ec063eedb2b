"""`Muon` (PyTorch 2.13's `torch.optim.Muon`): momentum SGD for 2-d weights whose update is
orthogonalised by a quintic Newton-Schulz iteration (exposed as `rg.optim.Muon`).

PyTorch runs the iteration in bfloat16, which NumPy lacks; its rounding matters at that
precision (about 1 in 100), so the iteration here rounds to bfloat16 after each operation
as PyTorch's kernels do (round to nearest even). Eager steps then agree with PyTorch's
except where PyTorch's float32 sums land on the other side of a bfloat16 rounding
boundary (a few matrices in a hundred, one element off by one bfloat16 step). While
`rg.jit` traces, the same rounding is built from Tensor ops (a bitcast to int64 and back).
"""

from __future__ import annotations

import math

import numpy as np

from ..primitive import ArgumentError
from ..tensor import Tensor
from .adaptive import _Stepper
from .optimizer import _bump, _check_tensor_lr, _Values, lr_value

__all__ = ["Muon"]

_A, _B, _C = 3.4445, -4.775, 2.0315


def _fma(a: np.ndarray, b, c: np.ndarray) -> np.ndarray:
    """a * b + c rounded once, as the fused multiply-add of PyTorch's CPU kernels: exact in
    float64 for float32 values; for float64, Dekker's product and Knuth's sum."""
    if a.dtype == np.float32:
        return (a.astype(np.float64) * np.float64(b) + c).astype(np.float32)
    b = np.asarray(b, a.dtype)
    p = a * b
    split = 134217729.0
    ca, cb = split * a, split * b
    ah, bh = ca - (ca - a), cb - (cb - b)
    al, bl = a - ah, b - bh
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    s = p + c
    z = s - p
    t = (p - (s - z)) + (c - z)
    return s + (t + e)


def _lerp(a: np.ndarray, b: np.ndarray, w: float) -> np.ndarray:
    """torch.lerp(a, b, w) as its vectorised CPU kernel computes it: fma(w, b - a, a) for
    |w| < 0.5, else fma(w - 1, b - a, b). The last bit matters here: bfloat16 rounding
    downstream turns a one-ulp difference into a 1e-2 one."""
    wt = a.dtype.type(w)
    d = b - a
    return _fma(d, wt, a) if abs(w) < 0.5 else _fma(d, wt - a.dtype.type(1), b)


def _bf16(v, traced: bool):
    """Round float64 values to the nearest bfloat16 (ties to even), as float64. Rounding
    from float64 rather than float32 keeps the error of the sums that produced `v` below
    PyTorch's own float32 accumulation error, so the two round the same way far more often."""
    if traced:
        u = v.view(np.int64)
        r = (u + ((1 << 44) - 1 + ((u >> 45) & 1))) & -(1 << 45)
        return r.view(np.float64)
    u = np.ascontiguousarray(v, np.float64).view(np.uint64)
    r = (u + np.uint64((1 << 44) - 1) + ((u >> 45) & np.uint64(1))) & ~np.uint64((1 << 45) - 1)
    out = r.view(np.float64)
    nan = np.isnan(v)
    return np.where(nan, np.nan, out) if nan.any() else out


def _newton_schulz(g, coefficients, steps: int, eps: float, traced: bool):
    """PyTorch's `_zeropower_via_newtonschulz`, about U V^T of the SVD U S V^T of `g`, as
    bfloat16 values in a float32 array. Each product and sum is exact in float64 (bfloat16
    operands) and is rounded once to bfloat16, as PyTorch's kernels round theirs."""
    if steps >= 100:
        raise ArgumentError("Number of steps must be less than 100 for computational efficiency")
    if len(coefficients) != 3:
        raise ArgumentError("Coefficients must be a tuple of exactly 3 values")
    a, b, c = (float(np.float32(k)) for k in coefficients)
    if traced:
        x = _bf16(g.to(np.float32).to(np.float64), True)
    else:
        x = _bf16(np.asarray(g, np.float32).astype(np.float64), False)
    tall = g.shape[0] > g.shape[1]
    if tall:
        x = x.T
    floor = float(np.float32(eps))
    if traced:
        norm = _bf16(x.norm(), True)
        x = _bf16(x / _bf16(norm.clamp(min=floor), True), True)
    else:
        norm = _bf16(np.sqrt(np.sum(x * x)), False)
        x = _bf16(x / _bf16(np.maximum(norm, floor), False), False)
    for _ in range(steps):
        gram = _bf16(x @ x.T, traced)
        update = _bf16(b * gram + c * (gram @ gram), traced)
        x = _bf16(a * x + update @ x, traced)
    x = x.T if tall else x
    return x.to(np.float32) if traced else x.astype(np.float32)


def _adjusted_lr(lr: float, how: str | None, shape: tuple) -> float:
    rows, cols = shape[:2]
    if how is None or how == "original":
        return lr * math.sqrt(max(1, rows / cols))
    if how == "match_rms_adamw":
        return lr * 0.2 * math.sqrt(max(rows, cols))
    return lr


class Muon(_Stepper):
    """Muon (Jordan et al.): B = mu B + g; the Nesterov (or plain) momentum update is
    orthogonalised by `ns_steps` Newton-Schulz iterations, then p -= lr wd p (decoupled
    decay) and p -= lr' O, with lr' scaled for the matrix's shape (`adjust_lr_fn`:
    "original" sqrt(max(1, rows/cols)), or "match_rms_adamw" 0.2 sqrt(max(rows, cols))).
    Only for 2-d parameters; biases and embeddings belong to another optimizer."""

    def __init__(self, params, lr: float = 1e-3, weight_decay: float = 0.1,
                 momentum: float = 0.95, nesterov: bool = True,
                 ns_coefficients: tuple[float, float, float] = (_A, _B, _C),
                 eps: float = 1e-7, ns_steps: int = 5,
                 adjust_lr_fn: str | None = None) -> None:
        _check_tensor_lr(lr)
        if not 0.0 <= lr:
            raise ArgumentError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 <= momentum:
            raise ArgumentError(f"momentum should be >= 0 but is: {momentum}")
        if not 0.0 <= weight_decay:
            raise ArgumentError(f"weight decay should be >= 0 but is: {weight_decay}")
        if adjust_lr_fn is not None and adjust_lr_fn not in ("original", "match_rms_adamw"):
            raise ArgumentError(
                f"Adjust learning rate function {adjust_lr_fn} is not supported")
        super().__init__(params, dict(lr=lr, weight_decay=weight_decay, momentum=momentum,
                                      nesterov=nesterov, ns_coefficients=ns_coefficients,
                                      eps=eps, ns_steps=ns_steps, adjust_lr_fn=adjust_lr_fn))
        for group in self.param_groups:
            for p in group["params"]:
                if p.ndim != 2:
                    raise ArgumentError("Muon only supports 2D parameters whereas we found a "
                                        f"parameter with size: {tuple(p.shape)}")

    def _update(self, group: dict, values: _Values) -> None:
        lr, wd, mu = lr_value(group), group["weight_decay"], group["momentum"]
        of, traced = values.of, values.traced
        for p in group["params"]:
            if p.grad is None:
                continue
            if np.iscomplexobj(p.data):
                raise RuntimeError("Muon does not support complex parameters")
            x, g = of(p), of(p.grad)
            if g.ndim != 2:
                raise ArgumentError("Param gradient must be a 2D matrix")
            st = self.state.get(p)
            if st is None:
                st = self.state[p] = {"momentum_buffer": Tensor._wrap(np.zeros_like(p.data))}
            buf = of(st["momentum_buffer"])
            if traced:
                buf.copy_(buf.lerp(g, 1 - mu))
                update = g.lerp(buf, mu) if group["nesterov"] else buf
            else:
                buf[...] = _lerp(buf, g, 1 - mu)
                update = _lerp(g, buf, mu) if group["nesterov"] else buf
            o = _newton_schulz(update, group["ns_coefficients"], group["ns_steps"],
                               group["eps"], traced)
            step = _adjusted_lr(lr, group["adjust_lr_fn"], tuple(p.shape))
            x *= 1 - lr * wd
            x += -step * (o.to(x.dtype) if traced else o.astype(x.dtype, copy=False))
            if not traced:
                _bump(p)
                _bump(st["momentum_buffer"])
