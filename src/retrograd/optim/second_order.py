"""`LBFGS`: limited-memory BFGS with PyTorch's maths, defaults, state layout and its
optional strong-Wolfe line search (exposed as `rg.optim.LBFGS`).

L-BFGS re-evaluates a closure a data-dependent number of times per step, so the step is
plain Python over the flattened parameters' NumPy arrays (a host loop, as in PyTorch) and
is refused under `rg.jit` (trace the closure's model instead). The arithmetic follows
PyTorch's `lbfgs.py` line by line, so runs agree to rounding.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .. import devices, engine
from ..grad_mode import enable_grad, no_grad, state
from ..primitive import ArgumentError
from ..tensor import Tensor
from .optimizer import Optimizer, _bump, lr_value, real_view

__all__ = ["LBFGS"]


def _cubic_interpolate(x1, f1, g1, x2, f2, g2, bounds=None):
    if bounds is not None:
        xmin_bound, xmax_bound = bounds
    else:
        xmin_bound, xmax_bound = (x1, x2) if x1 <= x2 else (x2, x1)
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1 ** 2 - g1 * g2
    if d2_square >= 0:
        d2 = np.sqrt(d2_square)
        if x1 <= x2:
            min_pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
        else:
            min_pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
        return min(max(min_pos, xmin_bound), xmax_bound)
    return (xmin_bound + xmax_bound) / 2.0


def _strong_wolfe(obj_func, x, t, d, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9,
                  max_ls=25):
    """PyTorch's strong-Wolfe line search (bracketing, then cubic zoom)."""
    d_norm = np.abs(d).max()
    g = g.copy()
    f_new, g_new = obj_func(x, t, d)
    ls_func_evals = 1
    gtd_new = g_new.dot(d)
    t_prev, f_prev, g_prev, gtd_prev = 0, f, g, gtd
    done = False
    ls_iter = 0
    bracket_gtd = None
    while ls_iter < max_ls:
        if f_new > (f + c1 * t * gtd) or (ls_iter > 1 and f_new >= f_prev):
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new.copy()], [gtd_prev, gtd_new]
            break
        if abs(gtd_new) <= -c2 * gtd:
            bracket, bracket_f, bracket_g = [t], [f_new], [g_new]
            done = True
            break
        if gtd_new >= 0:
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new.copy()], [gtd_prev, gtd_new]
            break
        min_step = t + 0.01 * (t - t_prev)
        max_step = t * 10
        tmp = t
        t = _cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new,
                               bounds=(min_step, max_step))
        t_prev, f_prev, g_prev, gtd_prev = tmp, f_new, g_new.copy(), gtd_new
        f_new, g_new = obj_func(x, t, d)
        ls_func_evals += 1
        gtd_new = g_new.dot(d)
        ls_iter += 1
    if ls_iter == max_ls:
        bracket, bracket_f, bracket_g = [0, t], [f, f_new], [g, g_new]
    insuf_progress = False
    low_pos, high_pos = (0, 1) if bracket_f[0] <= bracket_f[-1] else (1, 0)
    while not done and ls_iter < max_ls:
        if abs(bracket[1] - bracket[0]) * d_norm < tolerance_change:
            break
        t = _cubic_interpolate(bracket[0], bracket_f[0], bracket_gtd[0], bracket[1],
                               bracket_f[1], bracket_gtd[1])
        eps = 0.1 * (max(bracket) - min(bracket))
        if min(max(bracket) - t, t - min(bracket)) < eps:
            if insuf_progress or t >= max(bracket) or t <= min(bracket):
                if abs(t - max(bracket)) < abs(t - min(bracket)):
                    t = max(bracket) - eps
                else:
                    t = min(bracket) + eps
                insuf_progress = False
            else:
                insuf_progress = True
        else:
            insuf_progress = False
        f_new, g_new = obj_func(x, t, d)
        ls_func_evals += 1
        gtd_new = g_new.dot(d)
        ls_iter += 1
        if f_new > (f + c1 * t * gtd) or f_new >= bracket_f[low_pos]:
            bracket[high_pos] = t
            bracket_f[high_pos] = f_new
            bracket_g[high_pos] = g_new.copy()
            bracket_gtd[high_pos] = gtd_new
            low_pos, high_pos = (0, 1) if bracket_f[0] <= bracket_f[1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (bracket[high_pos] - bracket[low_pos]) >= 0:
                bracket[high_pos] = bracket[low_pos]
                bracket_f[high_pos] = bracket_f[low_pos]
                bracket_g[high_pos] = bracket_g[low_pos]
                bracket_gtd[high_pos] = bracket_gtd[low_pos]
            bracket[low_pos] = t
            bracket_f[low_pos] = f_new
            bracket_g[low_pos] = g_new.copy()
            bracket_gtd[low_pos] = gtd_new
    return bracket_f[low_pos], bracket_g[low_pos], bracket[low_pos], ls_func_evals


def _arr(v):
    """A state entry as a NumPy value (flat vectors and 0-d scalars are kept as Tensors)."""
    if isinstance(v, Tensor):
        return np.array(devices.host(v.data))
    if isinstance(v, list):
        return [_arr(u) for u in v]
    return v


def _tensor(v):
    if isinstance(v, np.ndarray):
        return Tensor._wrap(v.copy())
    if isinstance(v, np.floating):
        return Tensor._wrap(np.array(v))
    if isinstance(v, list):
        return [_tensor(u) for u in v]
    return v


class LBFGS(Optimizer):
    """L-BFGS (after minFunc): `step(closure)` runs up to `max_iter` quasi-Newton iterations
    with a `history_size` curvature memory, a fixed step `lr` or the 'strong_wolfe' line
    search. One parameter group only, as in PyTorch."""

    def __init__(self, params, lr: float = 1, max_iter: int = 20, max_eval: int | None = None,
                 tolerance_grad: float = 1e-7, tolerance_change: float = 1e-9,
                 history_size: int = 100, line_search_fn: str | None = None) -> None:
        if isinstance(lr, Tensor):  # PyTorch takes a 1-element Tensor lr (checked by the base)
            pass
        elif not isinstance(lr, (int, float)) or isinstance(lr, bool) or lr < 0:
            raise ArgumentError(f"Invalid learning rate: {lr}")
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        super().__init__(params, dict(lr=lr, max_iter=max_iter, max_eval=max_eval,
                                      tolerance_grad=tolerance_grad,
                                      tolerance_change=tolerance_change,
                                      history_size=history_size,
                                      line_search_fn=line_search_fn))
        if len(self.param_groups) != 1:
            raise ArgumentError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]

    def _flat_grad(self) -> np.ndarray:
        """The gradients as one real vector (a complex one as its real and imaginary parts,
        as PyTorch's view_as_real)."""
        parts = [real_view(np.zeros(p.shape, dtype=p.data.dtype)).reshape(-1)
                 if p.grad is None else
                 real_view(np.ascontiguousarray(devices.host(p.grad.data))).reshape(-1)
                 for p in self._params]
        return np.concatenate(parts)

    def _add_grad(self, step_size, update: np.ndarray) -> None:
        offset = 0
        for p in self._params:
            x = real_view(p.data)
            n = x.size
            x += step_size * update[offset:offset + n].reshape(x.shape)
            _bump(p)
            offset += n

    def _set_param(self, saved: list) -> None:
        for p, x in zip(self._params, saved):
            p.data[...] = x
            _bump(p)

    def _directional_evaluate(self, closure, x, t, d):
        self._add_grad(t, d)
        with enable_grad():
            loss = float(closure())
        flat_grad = self._flat_grad()
        self._set_param(x)
        return loss, flat_grad

    def step(self, closure: Callable) -> Any:  # type: ignore[override]
        """One L-BFGS step; `closure` clears the gradients, recomputes the loss, calls
        `backward()` and returns the loss (it is called several times)."""
        if state.tracer is not None:
            raise RuntimeError("LBFGS.step cannot be traced by rg.jit: the number of closure "
                               "evaluations depends on the values; call it eagerly")
        if closure is None or not callable(closure):
            raise TypeError("LBFGS.step requires a closure that reevaluates the model and "
                            "returns the loss")
        try:
            with no_grad():
                return self._step(closure)
        finally:
            engine.mark_inplace()

    def _step(self, closure):
        group = self.param_groups[0]
        lr = lr_value(group)
        max_iter, max_eval = group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        line_search_fn, history_size = group["line_search_fn"], group["history_size"]

        st = self.state.setdefault(self._params[0], {})
        st.setdefault("func_evals", 0)
        st.setdefault("n_iter", 0)
        with enable_grad():
            orig_loss = closure()
        loss = float(orig_loss)
        current_evals = 1
        st["func_evals"] += 1
        flat_grad = self._flat_grad()
        if np.abs(flat_grad).max() <= tolerance_grad:
            return orig_loss

        d, t = _arr(st.get("d")), _arr(st.get("t"))
        old_dirs, old_stps = _arr(st.get("old_dirs")), _arr(st.get("old_stps"))
        ro, h_diag = _arr(st.get("ro")), _arr(st.get("H_diag"))
        prev_flat_grad, prev_loss = _arr(st.get("prev_flat_grad")), st.get("prev_loss")
        al = _arr(st["al"]) if "al" in st else None

        opt_cond = False
        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            st["n_iter"] += 1
            if st["n_iter"] == 1:
                d = -flat_grad
                old_dirs, old_stps, ro = [], [], []
                h_diag = 1
            else:
                y = flat_grad - prev_flat_grad
                s = d * t
                ys = y.dot(s)
                if ys > 1e-10:
                    if len(old_dirs) == history_size:
                        old_dirs.pop(0)
                        old_stps.pop(0)
                        ro.pop(0)
                    old_dirs.append(y)
                    old_stps.append(s)
                    ro.append(1.0 / ys)
                    h_diag = ys / y.dot(y)
                num_old = len(old_dirs)
                if al is None:
                    al = [None] * history_size
                q = -flat_grad
                for i in range(num_old - 1, -1, -1):
                    al[i] = old_stps[i].dot(q) * ro[i]
                    q += -al[i] * old_dirs[i]
                d = r = q * h_diag
                for i in range(num_old):
                    be_i = old_dirs[i].dot(r) * ro[i]
                    r += (al[i] - be_i) * old_stps[i]
            prev_flat_grad = flat_grad.copy()
            prev_loss = loss
            if st["n_iter"] == 1:
                t = min(1.0, 1.0 / np.abs(flat_grad).sum()) * lr
            else:
                t = lr
            gtd = flat_grad.dot(d)
            if gtd > -tolerance_change:
                break
            ls_func_evals = 0
            if line_search_fn is not None:
                if line_search_fn != "strong_wolfe":
                    raise RuntimeError("only 'strong_wolfe' is supported")
                x_init = [p.data.copy() for p in self._params]

                def obj_func(x, t, d):
                    return self._directional_evaluate(closure, x, t, d)

                loss, flat_grad, t, ls_func_evals = _strong_wolfe(
                    obj_func, x_init, t, d, loss, flat_grad, gtd,
                    max_ls=max_eval - current_evals)
                self._add_grad(t, d)
                opt_cond = np.abs(flat_grad).max() <= tolerance_grad
            else:
                self._add_grad(t, d)
                if n_iter != max_iter:
                    with enable_grad():
                        loss = float(closure())
                    flat_grad = self._flat_grad()
                    opt_cond = np.abs(flat_grad).max() <= tolerance_grad
                    ls_func_evals = 1
            current_evals += ls_func_evals
            st["func_evals"] += ls_func_evals
            if n_iter == max_iter or current_evals >= max_eval or opt_cond:
                break
            if np.abs(d * t).max() <= tolerance_change:
                break
            if abs(loss - prev_loss) < tolerance_change:
                break

        st["d"] = _tensor(d)
        # PyTorch's step size is a 0-d Tensor where it came from Tensor arithmetic (the first
        # iteration's min(1, 1/|g|_1) * lr, or a Tensor lr): a NumPy scalar here. After
        # t = lr it is the lr Tensor itself, so a scheduler's in-place update of the lr shows
        # in the next step's s = d * t, as in PyTorch
        if t is lr and isinstance(group["lr"], Tensor):
            st["t"] = group["lr"]
        else:
            st["t"] = Tensor._wrap(np.array(t)) if isinstance(t, np.floating) else t
        st["old_dirs"] = _tensor(old_dirs)
        st["old_stps"] = _tensor(old_stps)
        st["ro"] = _tensor(ro)
        st["H_diag"] = _tensor(h_diag)
        st["prev_flat_grad"] = _tensor(prev_flat_grad)
        st["prev_loss"] = prev_loss
        if al is not None:
            st["al"] = _tensor(al)
        return orig_loss

    def _plain_load_state_dict(self, state_dict: dict) -> None:
        """Restore the history saved by `state_dict()` (flat vectors of all parameters)."""
        sd = dict(state_dict)
        saved_state = sd.get("state", {})
        super()._plain_load_state_dict({"state": {}, "param_groups": sd["param_groups"]})
        if saved_state:
            (entry,) = saved_state.values()
            self.state = {self._params[0]: {k: _tensor(_arr(v)) for k, v in entry.items()}}
