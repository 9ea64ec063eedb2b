"""`Adafactor` (PyTorch 2.13's `torch.optim.Adafactor`): Adam-like steps whose second
moment of a matrix is kept factored as row and column means (O(rows + cols) memory), with
a relative step size and update clipping (exposed as `rg.optim.Adafactor`).

Written like `adaptive.py`: eager updates follow PyTorch's single-tensor implementation
operation by operation over NumPy arrays; while `rg.jit` traces, the same update is made of
Tensor ops, the norms PyTorch reads with `.item()` staying tensors in the program.
"""

from __future__ import annotations

import math

import numpy as np

from ..primitive import ArgumentError
from ..tensor import Tensor
from .adaptive import _Stepper
from .optimizer import _bump, _check_tensor_lr, _new_step, _step_count, _Values, lr_value

__all__ = ["Adafactor"]


def _lerp_(a, b, w) -> None:
    """a.lerp_(b, w) with torch's two branches (w a Python float)."""
    if w < 0.5:
        a += w * (b - a)
    else:
        a[...] = b - (b - a) * (1 - w)


class Adafactor(_Stepper):
    """Adafactor (Shazeer and Stern) as in PyTorch: beta2_t = 1 - step^beta2_decay,
    rho_t = min(lr, 1/sqrt(step)), step size max(eps[1], RMS(p)) rho_t, the update
    g / sqrt(max(v, eps[0]^2)) divided by max(1, RMS(update) / d), decoupled weight decay.
    `eps[0]=None` means the parameter dtype's machine epsilon."""

    def __init__(self, params, lr: float = 1e-2, beta2_decay: float = -0.8,
                 eps: tuple[float | None, float] = (None, 1e-3), d: float = 1.0,
                 weight_decay: float = 0.0, *, foreach: bool | None = None,
                 maximize: bool = False) -> None:
        _check_tensor_lr(lr)
        if not isinstance(lr, (int, float, Tensor)) or isinstance(lr, bool) or not 0.0 <= lr:
            raise ArgumentError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= beta2_decay:
            raise ArgumentError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if len(eps) != 2:
            raise ArgumentError(f"eps should be a pair (eps1 or None, eps2), got {eps}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ArgumentError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ArgumentError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ArgumentError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ArgumentError(f"weight_decay should be >= 0 but is: {weight_decay}")
        super().__init__(params, dict(lr=lr, beta2_decay=beta2_decay, eps=tuple(eps), d=d,
                                      weight_decay=weight_decay, foreach=foreach,
                                      maximize=maximize))

    def _state_shape(self, p: Tensor, key: str) -> tuple:
        if key == "row_var":
            return p.shape[:-1] + (1,)
        if key == "col_var":
            return p.shape[:-2] + (1,) + p.shape[-1:]
        return p.shape

    def _update(self, group: dict, values: _Values) -> None:
        lr, decay, (eps1, eps2) = lr_value(group), group["beta2_decay"], group["eps"]
        clip, wd = group["d"], group["weight_decay"]
        of, traced = values.of, values.traced
        for p in group["params"]:
            if p.grad is None:
                continue
            if p.dtype.kind == "c":  # its factored moments are of rows and columns of reals
                raise RuntimeError("Adafactor does not support complex parameters")
            x = of(p)
            g = of(p.grad)
            if group["maximize"]:
                g = -g
            st = self.state.get(p)
            if st is None:
                st = self.state[p] = {"step": _new_step()}
                if p.grad.ndim > 1:
                    st["row_var"] = Tensor._wrap(np.zeros(p.shape[:-1] + (1,), p.data.dtype))
                    st["col_var"] = Tensor._wrap(np.zeros(p.shape[:-2] + (1,) + p.shape[-1:],
                                                          p.data.dtype))
                else:
                    st["variance"] = Tensor._wrap(np.zeros_like(p.data))
            e1 = float(np.finfo(p.data.dtype).eps) if eps1 is None else eps1
            t = _step_count(st, values)
            n = p.numel()
            if traced:
                self._traced(x, g, st, t, lr, decay, e1, eps2, clip, wd, n)
                continue
            w = t ** decay
            rho = min(lr, 1 / (t ** 0.5))
            alpha = max(eps2, float(np.sqrt(np.sum(x * x))) / (n ** 0.5)) * rho
            if wd != 0:
                x *= 1 - lr * wd
            if g.ndim > 1:
                row, col = of(st["row_var"]), of(st["col_var"])
                row_mean = np.sqrt(np.sum(g * g, axis=-1, keepdims=True)) ** 2 / g.shape[-1]
                _lerp_(row, row_mean, w)
                col_mean = np.sqrt(np.sum(g * g, axis=-2, keepdims=True)) ** 2 / g.shape[-2]
                _lerp_(col, col_mean, w)
                var = row @ col
                var /= np.maximum(row.mean(axis=-2, keepdims=True), e1)
            else:
                v = of(st["variance"])
                _lerp_(v, g * g, w)
                var = v.copy()
            update = 1 / np.sqrt(np.maximum(var, e1 * e1))
            update *= g
            denom = max(1.0, float(np.sqrt(np.sum(update * update))) / ((n ** 0.5) * clip))
            x += (-alpha / denom) * update
            for k in (p, *(v for v in st.values() if v.ndim)):
                _bump(k)

    @staticmethod
    def _traced(x, g, st, t, lr, decay, e1, eps2, clip, wd, n) -> None:
        w = t ** decay
        rho = (1 / t.sqrt()).clamp(max=lr)
        alpha = (x.norm() / math.sqrt(n)).clamp(min=eps2) * rho.to(x.dtype)
        if wd != 0:
            x *= 1 - lr * wd
        wx = w.to(x.dtype)
        if g.ndim > 1:
            row, col = st["row_var"], st["col_var"]
            row.copy_(row.lerp(g.norm(dim=-1, keepdim=True).square() / g.shape[-1], wx))
            col.copy_(col.lerp(g.norm(dim=-2, keepdim=True).square() / g.shape[-2], wx))
            var = (row @ col) / row.mean(dim=-2, keepdim=True).clamp(min=e1)
        else:
            v = st["variance"]
            v.copy_(v.lerp(g * g, wx))
            var = v.clone()
        update = var.clamp(min=e1 * e1).rsqrt() * g
        denom = (update.norm() / (math.sqrt(n) * clip)).clamp(min=1.0)
        x -= (alpha / denom) * update
