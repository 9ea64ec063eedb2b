"""More first-order optimizers with PyTorch's maths, defaults and state layout: `RAdam`,
`Adadelta`, `Rprop`, `ASGD` (exposed as `rg.optim.*`).

Written like those in `adaptive.py`: each update is Python operators over "values" (the
parameters' NumPy arrays in eager mode, the Tensors themselves while `rg.jit` traces), in
place, with state in tensors; the eager arithmetic follows PyTorch's single-tensor
implementations operation by operation, so runs agree to rounding. Where PyTorch branches
on a state value (RAdam's rectification test, ASGD's averaging), the traced update selects
with `where` so the recorded program stays right for every later step.
"""

from __future__ import annotations

import numpy as np

from ..primitive import ArgumentError
from ..tensor import Tensor
from .adaptive import _check, _grad, _scalar_dtype, _Stepper, _zeros
from .optimizer import _bump, _impl_flags, _new_step, _step_count, _Values, lr_value

__all__ = ["RAdam", "Adadelta", "Rprop", "ASGD"]


def _betas(betas) -> tuple:
    if len(betas) != 2:
        raise ArgumentError(f"Invalid beta parameters: {betas} (two values in [0, 1))")
    for i, b in enumerate(betas):
        if not 0.0 <= b < 1.0:
            raise ArgumentError(f"Invalid beta parameter at index {i}: {b} (must be in [0, 1))")
    return tuple(betas)


def _bump_all(p: Tensor, st: dict) -> None:
    for t in (p, *(v for v in st.values() if isinstance(v, Tensor) and v.ndim)):
        _bump(t)


class RAdam(_Stepper):
    """Rectified Adam (Liu et al.): Adam whose adaptive step is scaled by the variance
    rectification term once the approximated SMA length rho_t exceeds 5, and plain
    bias-corrected momentum before; L2 or (`decoupled_weight_decay`) AdamW-style decay."""

    def __init__(self, params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0,
                 decoupled_weight_decay: bool = False, *, foreach: bool | None = None,
                 maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False) -> None:
        flags = _impl_flags(foreach, differentiable, None, capturable)
        del flags["fused"]
        _check("epsilon", eps)
        betas = _betas(betas)
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      maximize=maximize,
                                      decoupled_weight_decay=decoupled_weight_decay, **flags))

    def _update(self, group: dict, values: _Values) -> None:
        lr, (beta1, beta2), eps = lr_value(group), group["betas"], group["eps"]
        wd = group["weight_decay"]
        of, traced = values.of, values.traced
        w1 = 1.0 - beta1
        rho_inf = 2 / (1 - beta2) - 1
        for p in group["params"]:
            if p.grad is None:
                continue
            x = of(p)
            st = self.state.get(p)
            if st is None:
                st = self.state[p] = {"step": _new_step(),
                                      "exp_avg": _zeros(p), "exp_avg_sq": _zeros(p)}
            t = _step_count(st, values)
            if wd and group["decoupled_weight_decay"]:
                x *= 1 - lr * wd
                d = _grad(p, of, group["maximize"], 0.0, x)
            else:
                d = _grad(p, of, group["maximize"], wd, x)
            m, v = of(st["exp_avg"]), of(st["exp_avg_sq"])
            if w1 < 0.5:  # torch.lerp, branch for branch
                m += w1 * (d - m)
            else:
                m[...] = d - (d - m) * (1 - w1)
            v *= beta2
            v += (1 - beta2) * d * d
            bc1 = 1 - beta1 ** t
            bc2 = 1 - beta2 ** t
            corrected = m / values.scalar(bc1, p.dtype)
            rho_t = rho_inf - 2 * t * (beta2 ** t) / bc2
            if traced and rho_inf > 5.0:  # else rho_t <= rho_inf <= 5 at every step
                rect2 = (rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2)
                                                               * rho_t)
                ok = rho_t > 5.0
                root = values.sqrt(rect2.where(ok, 1.0))
                adaptive = values.scalar(bc2 ** 0.5, p.dtype) / (values.sqrt(v) + eps)
                update = (adaptive * values.scalar(root, p.dtype)).where(ok, 1.0)
                x -= corrected * lr * update
            elif not traced and rho_t > 5.0:  # rho_inf > 5 too: no division by zero
                rect2 = ((rho_t - 4) * (rho_t - 2) * rho_inf
                         / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
                adaptive = bc2 ** 0.5 / (np.sqrt(v) + eps)
                x -= corrected * lr * adaptive * rect2 ** 0.5
            else:
                x -= corrected * lr
            if not traced:
                _bump_all(p, st)


class Adadelta(_Stepper):
    """Adadelta (Zeiler): v = rho v + (1 - rho) g^2; delta = sqrt(u + eps) / sqrt(v + eps) g;
    u = rho u + (1 - rho) delta^2; p -= lr delta."""

    def __init__(self, params, lr: float = 1.0, rho: float = 0.9, eps: float = 1e-6,
                 weight_decay: float = 0, foreach: bool | None = None, *,
                 capturable: bool = False, maximize: bool = False,
                 differentiable: bool = False) -> None:
        flags = _impl_flags(foreach, differentiable, None, capturable)
        del flags["fused"]
        if not isinstance(rho, (int, float)) or not 0.0 <= rho <= 1.0:
            raise ArgumentError(f"Invalid rho value: {rho!r} (must be in [0, 1])")
        _check("epsilon", eps)
        super().__init__(params, dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay,
                                      maximize=maximize, **flags))

    def _update(self, group: dict, values: _Values) -> None:
        lr, rho, eps = lr_value(group), group["rho"], group["eps"]
        of, traced = values.of, values.traced
        for p in group["params"]:
            if p.grad is None:
                continue
            x = of(p)
            st = self.state.get(p)
            if st is None:
                st = self.state[p] = {"step": _new_step(),
                                      "square_avg": _zeros(p), "acc_delta": _zeros(p)}
            _step_count(st, values)
            d = _grad(p, of, group["maximize"], group["weight_decay"], x)
            v, u = of(st["square_avg"]), of(st["acc_delta"])
            v *= rho
            v += (1 - rho) * d * d
            std = values.sqrt(v + eps)
            delta = values.sqrt(u + eps)
            delta /= std
            delta *= d
            u *= rho
            u += (1 - rho) * delta * delta
            x -= lr * delta
            if not traced:
                _bump_all(p, st)


def _lr_of(p: Tensor, lr: float):
    """Rprop's first step size: `lr`, for a complex parameter `lr + lr j` (PyTorch's, so the
    imaginary part, stepped as a real number of its own, does not start at zero)."""
    return complex(lr, lr) if p.dtype.kind == "c" else lr


class Rprop(_Stepper):
    """Resilient backpropagation: each weight's step size grows by etas[1] while its gradient
    keeps its sign and shrinks by etas[0] when it flips (clamped to `step_sizes`); the
    weight moves by its step size against the gradient's sign (not after a flip)."""

    def __init__(self, params, lr: float = 1e-2, etas: tuple[float, float] = (0.5, 1.2),
                 step_sizes: tuple[float, float] = (1e-6, 50), *, capturable: bool = False,
                 foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False) -> None:
        flags = _impl_flags(foreach, differentiable, None, capturable)
        del flags["fused"]
        if len(etas) != 2 or not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ArgumentError(f"Invalid eta values: {etas} (need 0 < etas[0] < 1 < etas[1])")
        if len(step_sizes) != 2:
            raise ArgumentError(f"Invalid step_sizes: {step_sizes} (two values: min, max)")
        super().__init__(params, dict(lr=lr, etas=tuple(etas), step_sizes=tuple(step_sizes),
                                      maximize=maximize, **flags))

    def _update(self, group: dict, values: _Values) -> None:
        (eta_minus, eta_plus), (lo, hi) = group["etas"], group["step_sizes"]
        of, traced = values.of, values.traced
        for p in group["params"]:
            if p.grad is None:
                continue
            x = of(p)
            st = self.state.get(p)
            if st is None:
                st = self.state[p] = {
                    "step": _new_step(), "prev": _zeros(p),
                    "step_size": Tensor._wrap(np.full_like(p.data, _lr_of(p, lr_value(group))))}
            _step_count(st, values)
            d = _grad(p, of, group["maximize"], 0.0, x)
            prev, size = of(st["prev"]), of(st["step_size"])
            if traced:
                s = (d * prev).sign()
                factor = s.new_full((), eta_plus).where(s > 0, s.new_full((), eta_minus)
                                                        .where(s < 0, 1.0))
                size.copy_((size * factor).clamp(lo, hi))
                d = d.new_zeros(()).where(factor == eta_minus, d)
                x -= d.sign() * size
                prev.copy_(d)
            else:
                s = np.sign(d * prev)
                factor = np.where(s > 0, eta_plus, np.where(s < 0, eta_minus, 1.0))
                factor = factor.astype(size.dtype)
                size *= factor
                np.clip(size, lo, hi, out=size)
                d = np.where(factor == eta_minus, 0, d).astype(x.dtype)
                x -= np.sign(d) * size
                prev[...] = d
                _bump_all(p, st)


class ASGD(_Stepper):
    """Averaged SGD (Polyak and Juditsky): p = p (1 - lambd eta) - eta g, with the running
    average `ax` of the iterates from step t0 on; eta_t = lr / (1 + lambd lr t)^alpha."""

    def __init__(self, params, lr: float = 1e-2, lambd: float = 1e-4, alpha: float = 0.75,
                 t0: float = 1e6, weight_decay: float = 0, foreach: bool | None = None,
                 maximize: bool = False, differentiable: bool = False,
                 capturable: bool = False) -> None:
        flags = _impl_flags(foreach, differentiable, None, capturable)
        del flags["fused"]
        super().__init__(params, dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0,
                                      weight_decay=weight_decay, maximize=maximize, **flags))

    def _update(self, group: dict, values: _Values) -> None:
        lr, lambd, alpha, t0 = lr_value(group), group["lambd"], group["alpha"], group["t0"]
        of, traced = values.of, values.traced
        sdt = _scalar_dtype()
        for p in group["params"]:
            if p.grad is None:
                continue
            x = of(p)
            st = self.state.get(p)
            if st is None:
                st = self.state[p] = {
                    "step": _new_step(),
                    "eta": Tensor._wrap(np.array(lr, dtype=sdt)),
                    "mu": Tensor._wrap(np.ones((), dtype=sdt)),
                    "ax": _zeros(p)}
            for k in ("eta", "mu"):  # loaded from a state_dict as a number
                if not isinstance(st[k], Tensor):
                    st[k] = Tensor._wrap(np.array(st[k], dtype=sdt))
            t = _step_count(st, values)
            d = _grad(p, of, group["maximize"], group["weight_decay"], x)
            ax = of(st["ax"])
            eta, mu = st["eta"], st["mu"]
            if traced:
                e = eta.to(np.float64)
                x *= values.scalar(1 - lambd * e, p.dtype)
                x -= values.scalar(e, p.dtype) * d
                ax.copy_(x.where(mu == 1, ax + (x - ax) * values.scalar(mu.to(np.float64),
                                                                         p.dtype)))
                # rounded to the scalar dtype first, as torch.as_tensor(a float) rounds them
                eta.copy_((lr / ((1 + lambd * lr * t) ** alpha)).to(sdt))
                mu.copy_((1 / (t - t0).maximum(t.new_ones(()))).to(sdt))
            else:
                e = float(eta.data)
                x *= 1 - lambd * e
                x -= e * d
                m = float(mu.data)
                if m != 1:
                    ax += (x - ax) * m
                else:
                    ax[...] = x
                # rounded to the scalar dtype first, as torch.as_tensor(a float) rounds them
                eta.data = np.array(sdt.type(lr / ((1 + lambd * lr * t) ** alpha)),
                                    dtype=eta.data.dtype)
                mu.data = np.array(sdt.type(1 / max(1, t - t0)), dtype=mu.data.dtype)
                _bump(eta)
                _bump(mu)
                _bump_all(p, st)

