"""Adaptive-rate optimizers with PyTorch's maths, defaults and state layout: `RMSprop`, `Adagrad`,
`Adamax`, `NAdam` (exposed as `rg.optim.*`).

Written like `SGD` and `Adam`: each update is Python operators over "values" (the
parameters' NumPy arrays in eager mode, the Tensors themselves while `rg.jit`
traces), in place, with state in tensors, and the arithmetic follows PyTorch's
single-tensor implementations operation by operation, so runs agree to rounding.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .. import engine
from ..dtypes import get_default_dtype
from ..grad_mode import no_grad
from ..primitive import ArgumentError
from ..tensor import Tensor
from .optimizer import (
    Optimizer,
    _bump,
    _check_fused,
    _impl_flags,
    _new_step,
    _step_count,
    _Values,
    lr_value,
)

__all__ = ["RMSprop", "Adagrad", "Adamax", "NAdam"]


def _zeros(p: Tensor) -> Tensor:
    return Tensor._wrap(np.zeros_like(p.data))


def _check(name: str, value, low: float = 0.0, below: float | None = None) -> None:
    bad = not isinstance(value, (int, float)) or isinstance(value, bool) or value < low
    if below is not None and not bad:
        bad = value >= below
    if bad:
        rng = f"[{low}, {below})" if below is not None else f">= {low}"
        raise ArgumentError(f"Invalid {name} value: {value!r} (must be {rng})")


class _Stepper(Optimizer):
    """`step()` shared by these optimizers: one `_update(group, values)` per group."""

    _tensor_step = True

    def step(self, closure: Callable | None = None) -> Any:
        loss = None if closure is None else self._closure(closure)
        values = _Values()
        with no_grad():
            for group in self.param_groups:
                self._update(group, values)
        if not values.traced:
            engine.mark_inplace()
        return loss

    def _update(self, group: dict, values: _Values) -> None:
        raise NotImplementedError


def _grad(p: Tensor, of, maximize: bool, wd: float, x):
    d = of(p.grad)
    if maximize:
        d = -d
    if wd:
        d = d + wd * x
    return d


class RMSprop(_Stepper):
    """RMSprop: v = alpha v + (1 - alpha) g^2; p -= lr g / (sqrt(v) + eps), with PyTorch's
    momentum, centring (subtract the squared running mean of g) and L2 weight decay."""

    def __init__(self, params, lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8,
                 weight_decay: float = 0, momentum: float = 0, centered: bool = False,
                 capturable: bool = False, foreach: bool | None = None,
                 maximize: bool = False, differentiable: bool = False) -> None:
        _check("epsilon", eps)
        _check("momentum", momentum)
        _check("alpha", alpha)
        flags = _impl_flags(foreach, differentiable, None, capturable)
        # the groups' keys in PyTorch's order
        super().__init__(params, dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps,
                                      centered=centered, weight_decay=weight_decay,
                                      capturable=flags["capturable"], foreach=foreach,
                                      maximize=maximize, differentiable=flags["differentiable"]))

    def _update(self, group: dict, values: _Values) -> None:
        lr, alpha, eps = lr_value(group), group["alpha"], group["eps"]
        momentum, centered = group["momentum"], group["centered"]
        of, traced = values.of, values.traced
        for p in group["params"]:
            if p.grad is None:
                continue
            x = of(p)
            d = _grad(p, of, group["maximize"], group["weight_decay"], x)
            st = self.state.get(p)
            if st is None:
                st = self.state[p] = {"step": _new_step(),
                                      "square_avg": _zeros(p)}
                if momentum > 0:
                    st["momentum_buffer"] = _zeros(p)
                if centered:
                    st["grad_avg"] = _zeros(p)
            _step_count(st, values)
            v = of(st["square_avg"])
            v *= alpha
            v += (1 - alpha) * (d * d)
            if centered:
                ga = of(st["grad_avg"])
                w = 1 - alpha
                if w < 0.5:  # torch.lerp, branch for branch
                    ga += w * (d - ga)
                else:
                    ga[...] = d - (d - ga) * (1 - w)
                avg = values.sqrt(v - ga * ga)
            else:
                avg = values.sqrt(v)
            avg += eps
            if momentum > 0:
                buf = of(st["momentum_buffer"])
                buf *= momentum
                buf += d / avg
                x -= lr * buf
            else:
                x -= lr * (d / avg)
            if not traced:
                for t in (p, *(v for v in st.values() if isinstance(v, Tensor) and v.ndim)):
                    _bump(t)


class Adagrad(_Stepper):
    """Adagrad: s += g^2; p -= lr / (1 + (step - 1) lr_decay) * g / (sqrt(s) + eps).

    As in PyTorch, the state (`step`, `sum` filled with `initial_accumulator_value`) exists
    from construction on.
    """

    def __init__(self, params, lr: float = 1e-2, lr_decay: float = 0,
                 weight_decay: float = 0, initial_accumulator_value: float = 0,
                 eps: float = 1e-10, foreach: bool | None = None, *, maximize: bool = False,
                 differentiable: bool = False, fused: bool | None = None) -> None:
        flags = _impl_flags(foreach, differentiable, fused)
        _check("lr_decay", lr_decay)
        _check("initial_accumulator_value", initial_accumulator_value)
        _check("epsilon", eps)
        super().__init__(params, dict(lr=lr, lr_decay=lr_decay, weight_decay=weight_decay,
                                      initial_accumulator_value=initial_accumulator_value,
                                      eps=eps, maximize=maximize, **flags))
        for group in self.param_groups:
            for p in group["params"]:
                init = group["initial_accumulator_value"]
                if p.data.dtype.kind == "c":  # PyTorch: both parts start at the value
                    init = complex(init, init)
                self.state[p] = {"step": _new_step(),
                                 "sum": Tensor._wrap(np.full_like(p.data, init))}

    def _update(self, group: dict, values: _Values) -> None:
        _check_fused(self, group, "adagrad")
        lr, lr_decay, eps = lr_value(group), group["lr_decay"], group["eps"]
        of, traced = values.of, values.traced
        for p in group["params"]:
            if p.grad is None:
                continue
            x = of(p)
            d = _grad(p, of, group["maximize"], group["weight_decay"], x)
            st = self.state[p]
            t = _step_count(st, values)
            clr = values.scalar(lr / (1 + (t - 1) * lr_decay), p.dtype)
            s = of(st["sum"])
            s += d * d
            std = values.sqrt(s)
            std += eps
            x -= clr * (d / std)
            if not traced:
                _bump(p)
                _bump(st["sum"])


class Adamax(_Stepper):
    """Adamax (Adam with the infinity norm): u = max(beta2 u, |g| + eps);
    p -= lr / (1 - beta1^t) * m / u."""

    def __init__(self, params, lr: float = 2e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, foreach: bool | None = None,
                 *, maximize: bool = False, differentiable: bool = False,
                 capturable: bool = False) -> None:
        flags = _impl_flags(foreach, differentiable, None, capturable)
        del flags["fused"]  # (PyTorch's Adamax has no fused)
        _check("epsilon", eps)
        if len(betas) != 2:
            raise ArgumentError(f"Invalid beta parameters: {betas} (two values in [0, 1))")
        _check("beta1", betas[0], below=1.0)
        _check("beta2", betas[1], below=1.0)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay, maximize=maximize, **flags))

    def _update(self, group: dict, values: _Values) -> None:
        lr, (beta1, beta2), eps = lr_value(group), group["betas"], group["eps"]
        of, traced = values.of, values.traced
        w1 = 1.0 - beta1
        for p in group["params"]:
            if p.grad is None:
                continue
            x = of(p)
            d = _grad(p, of, group["maximize"], group["weight_decay"], x)
            st = self.state.get(p)
            if st is None:
                st = self.state[p] = {"step": _new_step(),
                                      "exp_avg": _zeros(p), "exp_inf": _zeros(p)}
            t = _step_count(st, values)
            m, u = of(st["exp_avg"]), of(st["exp_inf"])
            if w1 < 0.5:
                m += w1 * (d - m)
            else:
                m[...] = d - (d - m) * (1 - w1)
            u *= beta2
            values.maximum_(u, abs(d) + eps)
            clr = values.scalar(lr / (1 - beta1 ** t), p.dtype)
            x -= clr * (m / u)
            if not traced:
                _bump(p)
                _bump(st["exp_avg"])
                _bump(st["exp_inf"])


def _scalar_dtype() -> np.dtype:
    """PyTorch keeps optimizer scalars (NAdam's mu_product) in float64 only when that is
    the default dtype, else float32; so do we, to round alike."""
    return np.dtype(np.float64) if get_default_dtype() == np.float64 else np.dtype(np.float32)


class NAdam(_Stepper):
    """Adam with Nesterov momentum (Dozat), PyTorch's momentum decay schedule
    mu_t = beta1 (1 - 0.96^(t psi) / 2) and optional decoupled weight decay."""

    def __init__(self, params, lr: float = 2e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, momentum_decay: float = 4e-3,
                 decoupled_weight_decay: bool = False, *, foreach: bool | None = None,
                 maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False) -> None:
        flags = _impl_flags(foreach, differentiable, None, capturable)
        del flags["fused"]
        _check("epsilon", eps)
        _check("momentum_decay", momentum_decay)
        if len(betas) != 2:
            raise ArgumentError(f"Invalid beta parameters: {betas} (two values in [0, 1))")
        _check("beta1", betas[0], below=1.0)
        _check("beta2", betas[1], below=1.0)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay, momentum_decay=momentum_decay,
                                      decoupled_weight_decay=decoupled_weight_decay,
                                      maximize=maximize, **flags))

    def _update(self, group: dict, values: _Values) -> None:
        lr, (beta1, beta2), eps = lr_value(group), group["betas"], group["eps"]
        wd, psi = group["weight_decay"], group["momentum_decay"]
        of, traced = values.of, values.traced
        w1 = 1.0 - beta1
        for p in group["params"]:
            if p.grad is None:
                continue
            x = of(p)
            if wd and group["decoupled_weight_decay"]:
                x *= 1 - lr * wd
                d = _grad(p, of, group["maximize"], 0.0, x)
            else:
                d = _grad(p, of, group["maximize"], wd, x)
            st = self.state.get(p)
            if st is None:
                st = self.state[p] = {
                    "step": _new_step(),
                    "mu_product": Tensor._wrap(np.ones((), dtype=_scalar_dtype())),
                    "exp_avg": _zeros(p), "exp_avg_sq": _zeros(p)}
            t = _step_count(st, values)
            bc2 = 1 - beta2 ** t
            mu = beta1 * (1.0 - 0.5 * (0.96 ** (t * psi)))
            mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((t + 1) * psi)))
            mp = st["mu_product"]
            if not isinstance(mp, Tensor):  # loaded from a state_dict as a number
                mp = st["mu_product"] = Tensor._wrap(np.array(mp, dtype=_scalar_dtype()))
            if traced:  # as eager: the product rounded to mp's dtype, then used as float64
                mp.copy_(mp * mu.to(mp.dtype))
                mu_prod = mp.to(np.float64)
            else:
                np.multiply(mp.data, np.asarray(mu, dtype=mp.dtype), out=mp.data)  # stays 0-d
                _bump(mp)
                mu_prod = float(mp.data)
            m, v = of(st["exp_avg"]), of(st["exp_avg_sq"])
            if w1 < 0.5:
                m += w1 * (d - m)
            else:
                m[...] = d - (d - m) * (1 - w1)
            v *= beta2
            v += (1 - beta2) * (d * d)
            denom = values.sqrt(v / values.scalar(bc2, p.dtype))
            denom += eps
            mu_prod_next = mu_prod * mu_next
            x -= values.scalar(lr * (1.0 - mu) / (1.0 - mu_prod), p.dtype) * (d / denom)
            x -= values.scalar(lr * mu_next / (1.0 - mu_prod_next), p.dtype) * (m / denom)
            if not traced:
                _bump(p)
                _bump(st["exp_avg"])
                _bump(st["exp_avg_sq"])

