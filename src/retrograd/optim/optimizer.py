"""The `Optimizer` base class, and SGD, Adam and AdamW with PyTorch's maths, defaults and
state layout.

Updates change each parameter in place (no graph is recorded) and bump its
version counter, so backward through a graph that saved the old values raises
instead of giving a silently wrong gradient. The arithmetic follows PyTorch's
single-tensor implementations operation by operation (including `lerp` for
Adam's first moment), so runs agree to rounding.

State (momentum buffers, moments, step counts) is kept in tensors changed in
place, so that a step traced by `rg.jit` reads and writes it like a parameter.
Each update is written once, with Python operators, over "values": the
parameters' NumPy arrays in eager mode (fast), or the Tensors themselves while
`rg.jit` traces (in-place Tensor ops, which the trace replays). A new optimizer
written with Tensor ops and in-place updates is traced the same way.
"""

from __future__ import annotations

import copy
import functools
import warnings
from collections import OrderedDict, defaultdict
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import devices, engine, ops
from ..dtypes import get_default_dtype
from ..grad_mode import enable_grad, no_grad, state
from ..primitive import ArgumentError
from ..tensor import Tensor, clear_grads

__all__ = ["Optimizer", "SGD", "Adam", "AdamW"]


class _Required:
    def __repr__(self) -> str:
        return "<required parameter>"


required = _Required()


def _impl_flags(foreach, differentiable: bool, fused, capturable: bool | None = None) -> dict:
    """PyTorch's implementation switches (`foreach`, `capturable`, `differentiable`, `fused`),
    checked as PyTorch checks them and kept in the groups. retrograd has one implementation,
    so `foreach`, `fused` and `capturable` change nothing; `differentiable=True` (a step
    recorded for autograd) is refused rather than silently not recorded."""
    if fused and foreach:
        raise RuntimeError("`fused` and `foreach` cannot be `True` together.")
    if differentiable:
        raise NotImplementedError("differentiable=True is not supported: retrograd's optimizer "
                                  "steps are not recorded for autograd")
    flags = {"foreach": foreach}
    if capturable is not None:
        flags["capturable"] = capturable
    flags.update(differentiable=differentiable, fused=fused)
    return flags


_FUSED_DEVICES = ["mps", "cuda", "xpu", "hpu", "cpu", "mtia", "privateuseone"]


def _check_fused(opt: Any, group: dict, kernel: str = "") -> None:
    """PyTorch's `fused=True` refusal of complex parameters, made before the group's update:
    Adam/AdamW check every parameter met without state (`kernel` empty); SGD and Adagrad
    check the optimizer's first parameter with a gradient once, and a complex one later
    fails in their fused kernel (`kernel` names it: "sgd" or "adagrad"), as in PyTorch."""
    if not group.get("fused"):
        return
    for p in group["params"]:
        if p.grad is None or p.is_floating_point():
            if p.grad is not None and kernel:
                opt._need_fused_check = False
            continue
        if kernel and not getattr(opt, "_need_fused_check", True):
            if kernel == "sgd":
                name = "ComplexDouble" if str(p.dtype) == "complex128" else "ComplexFloat"
                raise NotImplementedError(f'"fused_sgd_kernel" not implemented for {name!r}')
            raise RuntimeError("`fused` does not support sparse grad or complex param")
        if not kernel and opt.state.get(p):
            continue
        raise RuntimeError("`fused=True` requires all the params to be floating point Tensors of "
                           f"supported devices: {_FUSED_DEVICES} but {p.dtype} and {p.device.type}")


_global_step_pre_hooks: OrderedDict = OrderedDict()
_global_step_post_hooks: OrderedDict = OrderedDict()


def register_optimizer_step_pre_hook(hook: Callable):
    """`hook(optimizer, args, kwargs)` before every optimizer's step (may return new
    (args, kwargs)); returns a handle whose `remove()` unregisters it."""
    from ..utils.hooks import RemovableHandle

    handle = RemovableHandle(_global_step_pre_hooks)
    _global_step_pre_hooks[handle.id] = hook
    return handle


def register_optimizer_step_post_hook(hook: Callable):
    """`hook(optimizer, args, kwargs)` after every optimizer's step."""
    from ..utils.hooks import RemovableHandle

    handle = RemovableHandle(_global_step_post_hooks)
    _global_step_post_hooks[handle.id] = hook
    return handle


def _with_step_hooks(step: Callable) -> Callable:
    """`step` running the global and the optimizer's own step hooks around it (nothing
    extra when there are none)."""
    @functools.wraps(step)
    def hooked(self, *args, **kwargs):
        self.__dict__["_opt_called"] = True  # a scheduler stepped before this warns
        pre = self.__dict__.get("_optimizer_step_pre_hooks")
        post = self.__dict__.get("_optimizer_step_post_hooks")
        if not (pre or post or _global_step_pre_hooks or _global_step_post_hooks):
            return step(self, *args, **kwargs)
        args = (self, *args)  # as torch's: the hooks' args start with the optimizer
        for hook in list(_global_step_pre_hooks.values()) + list((pre or {}).values()):
            res = hook(self, args, kwargs)
            if res is not None:
                if not (isinstance(res, tuple) and len(res) == 2):
                    raise RuntimeError(f"a step pre-hook must return None or (args, kwargs), "
                                       f"got {res!r}")
                args, kwargs = res
        out = step(*args, **kwargs)
        # as torch's: the optimizer's own post-hooks first, then the global ones
        for hook in list((post or {}).values()) + list(_global_step_post_hooks.values()):
            hook(self, args, kwargs)
        return out
    hooked._step_hooked = True
    return hooked


class Optimizer:
    """Base class: parameter groups, per-parameter state, `zero_grad`, `state_dict`."""

    _tensor_step = False  # built-in optimizers keep "step" as a 0-d Tensor (a loaded number too)

    def register_step_pre_hook(self, hook: Callable):
        """`hook(optimizer, args, kwargs)` before this optimizer's step (may return new
        (args, kwargs)); returns a handle whose `remove()` unregisters it."""
        from ..utils.hooks import RemovableHandle

        table = self.__dict__.setdefault("_optimizer_step_pre_hooks", OrderedDict())
        handle = RemovableHandle(table)
        table[handle.id] = hook
        return handle

    def register_step_post_hook(self, hook: Callable):
        """`hook(optimizer, args, kwargs)` after this optimizer's step."""
        from ..utils.hooks import RemovableHandle

        table = self.__dict__.setdefault("_optimizer_step_post_hooks", OrderedDict())
        handle = RemovableHandle(table)
        table[handle.id] = hook
        return handle

    def _add_hook(self, table_name: str, hook: Callable, prepend: bool = False):
        """Register `hook` in this optimizer's hook table `table_name` (first when
        `prepend`); returns a handle whose `remove()` unregisters it."""
        from ..utils.hooks import RemovableHandle

        table = self.__dict__.setdefault(table_name, OrderedDict())
        handle = RemovableHandle(table)
        table[handle.id] = hook
        if prepend:
            table.move_to_end(handle.id, last=False)
        return handle

    def register_state_dict_pre_hook(self, hook: Callable, prepend: bool = False):
        """`hook(optimizer)` before `state_dict()` builds the dict."""
        return self._add_hook("_optimizer_state_dict_pre_hooks", hook, prepend)

    def register_state_dict_post_hook(self, hook: Callable, prepend: bool = False):
        """`hook(optimizer, state_dict)` after `state_dict()`; a dict it returns replaces
        the result."""
        return self._add_hook("_optimizer_state_dict_post_hooks", hook, prepend)

    def register_load_state_dict_pre_hook(self, hook: Callable, prepend: bool = False):
        """`hook(optimizer, state_dict)` before `load_state_dict()` reads the dict (a
        shallow copy of it); a dict it returns is loaded instead."""
        return self._add_hook("_optimizer_load_state_dict_pre_hooks", hook, prepend)

    def register_load_state_dict_post_hook(self, hook: Callable, prepend: bool = False):
        """`hook(optimizer)` after `load_state_dict()` has restored the state."""
        return self._add_hook("_optimizer_load_state_dict_post_hooks", hook, prepend)

    def _hooks(self, table_name: str) -> list:
        return list(self.__dict__.get(table_name, {}).values())

    def __getstate__(self) -> dict:
        """What pickling or deep-copying keeps: everything but the hooks (as torch's)."""
        return {k: v for k, v in self.__dict__.items() if not k.startswith("_optimizer_")}

    def __setstate__(self, state: dict) -> None:
        """Restore a pickled optimizer; subclasses call it via `super().__setstate__`
        (e.g. to add a default for a newer hyper-parameter to old checkpoints)."""
        self.__dict__.update(state)
        self.defaults.setdefault("differentiable", False)

    def __init__(self, params, defaults: dict) -> None:
        cls = type(self)
        if not getattr(cls.step, "_step_hooked", False):  # the concrete class's step, once
            cls.step = _with_step_hooks(cls.step)
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of "
                            "Tensors or dicts, but got a Tensor")
        self.defaults = defaults
        self.state: dict = defaultdict(dict)  # state[p] of a new p is {}, as torch's
        self.param_groups: list[dict] = []
        groups = list(params)
        if not groups:
            raise ArgumentError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for g in groups:
            self.add_param_group(g)

    def add_param_group(self, param_group: dict) -> None:
        """Add a group of parameters with its own hyper-parameters (defaults fill the rest)."""
        if not isinstance(param_group, dict):
            raise TypeError(f"a param group must be a dict, got {type(param_group).__name__}")
        group = dict(param_group)
        params = group["params"]
        if isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, "
                            "but the ordering of tensors in sets will change between runs. "
                            "Please use a list instead.")
        params = [params] if isinstance(params, Tensor) else list(params)
        named = [isinstance(p, tuple) for p in params]
        if any(named):  # model.named_parameters(), as torch 2.13 takes: all named or none
            if not all(named):
                raise ArgumentError("all optimizer params should be with/without names. Some "
                                    "param names are missing")
            group["param_names"] = [p[0] for p in params]
            params = [p[1] for p in params]
        for k, p in enumerate(params):
            if not isinstance(p, Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, but parameter {k} is a "
                                f"{type(p).__name__}")
            if not p.is_leaf:
                raise ArgumentError(f"can't optimize a non-leaf Tensor (parameter {k}, shape "
                                    f"{p.shape})")
            # a frozen parameter (requires_grad=False) is accepted, as in PyTorch: it never
            # gets a .grad, and step() skips parameters without one
        ids = {id(p) for p in params}
        if len(ids) != len(params):  # torch warns (an error "in future") and keeps them
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in "
                          "future, this will cause an error", UserWarning, stacklevel=3)
        for other in self.param_groups:
            if ("param_names" in group) != ("param_names" in other):
                kind = "with names" if "param_names" in group else "without names"
                raise ArgumentError("all optimizer param groups should be with/without names. "
                                    f"cannot add param group {kind} to the optimizer")
            if ids & {id(p) for p in other["params"]}:
                raise ArgumentError("some parameters appear in more than one parameter group")
        group["params"] = params
        for name, default in self.defaults.items():
            if default is required and name not in group:
                raise ArgumentError(f"parameter group didn't specify a value of required "
                                    f"optimization parameter {name}")
            group.setdefault(name, default)
        self._validate(group)
        self.param_groups.append(group)

    def _validate(self, group: dict) -> None:
        lr = group.get("lr")
        if isinstance(lr, Tensor):  # kept as it is, so a scheduler can fill it in place
            if lr.numel() != 1:
                raise ArgumentError(f"Tensor lr must be 1-element (got shape {lr.shape})")
            lr = lr.data.reshape(()).item()
        elif isinstance(lr, np.ndarray):
            raise TypeError(f"a learning rate given as a NumPy array ({lr!r}) is not "
                            "supported: pass a float or a Tensor")
        if not isinstance(lr, (int, float)) or isinstance(lr, bool) or lr < 0:
            raise ArgumentError(f"Invalid learning rate: {lr}")
        wd = group.get("weight_decay", 0.0)
        if wd < 0:
            raise ArgumentError(f"Invalid weight_decay value: {wd}")

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clear the gradients (to None by default, as PyTorch does)."""
        for group in self.param_groups:
            clear_grads(group["params"], set_to_none)

    def _closure(self, closure: Callable | None):
        if closure is None:
            return None
        with enable_grad():
            return closure()

    def step(self, closure: Callable | None = None):
        raise NotImplementedError

    def state_dict(self) -> dict:
        """{'state': {index: {...}}, 'param_groups': [{..., 'params': [index, ...]}]}: the
        state's tensors themselves, as PyTorch's; the groups' settings copied. The state
        dict hooks run around it."""
        for hook in self._hooks("_optimizer_state_dict_pre_hooks"):
            hook(self)
        sd = self._plain_state_dict()
        for hook in self._hooks("_optimizer_state_dict_post_hooks"):
            res = hook(self, sd)
            if res is not None:
                sd = res
        return sd

    def _plain_state_dict(self) -> dict:
        index: dict[int, int] = {}
        groups = []
        for g in self.param_groups:
            packed = {k: v for k, v in g.items() if k != "params"}
            packed["params"] = []
            for p in g["params"]:
                index.setdefault(id(p), len(index))
                packed["params"].append(index[id(p)])
            groups.append(packed)
        state = {}
        for g in self.param_groups:
            for p in g["params"]:
                st = self.state.get(p)
                if st:
                    state[index[id(p)]] = {k: _saved(v) for k, v in st.items()}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore hyper-parameters and state saved by `state_dict()` (checked before use),
        with the load state dict hooks around it."""
        if isinstance(state_dict, dict):
            state_dict = state_dict.copy()  # as torch's: pre-hooks may edit it freely
        for hook in self._hooks("_optimizer_load_state_dict_pre_hooks"):
            res = hook(self, state_dict)
            if res is not None:
                state_dict = res
        self._plain_load_state_dict(state_dict)
        for hook in self._hooks("_optimizer_load_state_dict_post_hooks"):
            hook(self)

    def _plain_load_state_dict(self, state_dict: dict) -> None:
        try:
            saved_groups = state_dict["param_groups"]
            saved_state = state_dict["state"]
        except (KeyError, TypeError):
            raise ArgumentError("optimizer state_dict must have 'state' and 'param_groups'") \
                from None
        if len(saved_groups) != len(self.param_groups):
            raise ArgumentError(f"loaded state dict has {len(saved_groups)} parameter groups, the "
                                f"optimizer has {len(self.param_groups)}")
        by_index = {}
        for k, (mine, saved) in enumerate(zip(self.param_groups, saved_groups)):
            if len(saved["params"]) != len(mine["params"]):
                raise ArgumentError(f"parameter group {k} has {len(mine['params'])} parameters but "
                                    f"the loaded one has {len(saved['params'])}")
            for i, p in zip(saved["params"], mine["params"]):
                by_index[int(i)] = p
        new_state = {}
        for i, st in saved_state.items():
            p = by_index.get(int(i))
            if p is None:
                raise ArgumentError(f"loaded state refers to parameter index {i}, which does not "
                                    "exist")
            entry = {}
            for k, v in st.items():
                entry[k] = self._loaded_entry(k, v, p, i)
            new_state[p] = entry
        for mine, saved in zip(self.param_groups, saved_groups):
            # as torch's: each group becomes a deep copy of the saved one (a Tensor lr or
            # betas is not shared with the optimizer saved, whose scheduler would change
            # both; keys the saved group lacks go, a built-in setting then gets its default)
            # with its own params (and param_names unless the saved group has some)
            new = {"params": mine["params"]}
            if "param_names" in mine:
                new["param_names"] = mine["param_names"]
            for k, v in saved.items():
                if k != "params":
                    v = copy.deepcopy(v)
                    # a list where the group holds a tuple (betas from a JSON-like
                    # checkpoint) becomes one; param_names stays the list it is
                    new[k] = tuple(v) if isinstance(v, list) and isinstance(mine.get(k), tuple) \
                        else v
            for k, v in self.defaults.items():
                new.setdefault(k, v)
            mine.clear()
            mine.update(new)
        self.state = defaultdict(dict, new_state)

    def _loaded_entry(self, k: str, v, p: Tensor, i: int):
        """One loaded state entry, by PyTorch's rule: a step count as it is; any other tensor
        in the parameter's dtype if the parameter is real floating (a complex one's keeps its
        own dtype: ASGD's float32 `eta` stays real) and on its device, the loaded tensor
        itself when it already is; other values as they are."""
        if k == "step" and self._tensor_step and isinstance(v, (int, float)) \
                and not isinstance(v, bool):  # torch's __setstate__: a number step -> Tensor
            return _new_step(float(v))
        if not isinstance(v, (Tensor, np.ndarray)):
            return v
        if k == "step":
            return v if isinstance(v, Tensor) else Tensor._wrap(np.array(v))
        shape = self._state_shape(p, k)
        if v.ndim and tuple(v.shape) != tuple(shape):
            raise ArgumentError(f"state '{k}' for parameter {i} has shape {tuple(v.shape)}, "
                                f"the parameter has shape {p.shape}")
        dt = p.dtype if p.dtype.kind == "f" else v.dtype
        if isinstance(v, Tensor) and v.dtype == dt and v.device == p.device:
            return v  # PyTorch keeps the loaded tensor itself when nothing changes
        arr = np.array(devices.host(v.data if isinstance(v, Tensor) else v))
        return Tensor._wrap(devices.to(arr.astype(dt), p.device))

    def _state_shape(self, p: Tensor, key: str) -> tuple:
        """The shape a non-scalar state entry `key` of parameter `p` must have."""
        return p.shape

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__} ("]
        for i, g in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            for k in sorted(g):
                if k != "params":
                    lines.append(f"    {k}: {g[k]}")
        return "\n".join(lines) + "\n)"


def _saved(v):
    """One state entry for `state_dict`: the live tensor itself, as PyTorch's (later steps
    show in a state_dict taken earlier; deep-copy it to keep a snapshot)."""
    if isinstance(v, Tensor):
        return v
    if isinstance(v, np.ndarray) or devices.is_device_array(v):
        return Tensor._wrap(v)
    return v


def real_view(a):
    """A complex array's real and imaginary parts as one float array sharing its memory
    (torch.view_as_real, flattened): PyTorch's optimizers update a complex parameter, its
    gradient and its state as pairs of real numbers, so each part gets its own moments;
    a real array as it is."""
    if a.dtype.kind != "c":
        return a
    if a.flags.c_contiguous:
        return a.reshape(-1).view(a.real.dtype)
    if a.ndim and a.strides[-1] == a.itemsize:  # rows contiguous: view the last axis
        return a.view(a.real.dtype)
    raise NotImplementedError("an optimizer step on a complex parameter, gradient or state "
                              "that is not row-major is not supported: make the parameter "
                              "contiguous")


def _check_tensor_lr(lr, foreach: bool | None = None, capturable: bool = False) -> None:
    """PyTorch's first constructor checks of a Tensor lr: one element, and (Adam, AdamW)
    not with foreach=True unless capturable, which its foreach kernels cannot read."""
    if not isinstance(lr, Tensor):
        return
    if foreach and not capturable:
        raise ArgumentError("lr as a Tensor is not supported for capturable=False and "
                            "foreach=True")
    if lr.numel() != 1:
        raise ArgumentError(f"Tensor lr must be 1-element (got shape {lr.shape})")


def lr_value(group: dict) -> float:
    """The group's learning rate as a number: a Tensor lr (PyTorch allows one, which a
    scheduler then fills in place) is read at each step, so it is refused inside rg.jit,
    where its value would be frozen into the compiled step."""
    lr = group["lr"]
    if isinstance(lr, Tensor):
        if state.tracer is not None:
            state.tracer.refuse_tensor_lr()
        return lr.data.reshape(())[()]  # a NumPy scalar: PyTorch's arithmetic on it is
        # in the lr's own dtype (Adam's lr / bias correction, AdamW's 1 - lr * wd)
    return lr


def _betas_value(group: dict) -> tuple:
    """Adam's betas as numbers: Tensor betas (PyTorch allows them) as NumPy scalars of their
    dtype, so that the bias corrections 1 - beta^t are computed in it (float32 for
    torch.tensor(0.9)), as PyTorch's single-tensor step does; its fused step reads them as
    doubles. Refused inside rg.jit, like a Tensor lr."""
    betas = group["betas"]
    if not any(isinstance(b, Tensor) for b in betas):
        return betas
    if state.tracer is not None:
        raise NotImplementedError("Tensor betas in a traced (rg.jit) Adam step are not "
                                  "supported: pass floats")
    vals = tuple(b.data.reshape(())[()] if isinstance(b, Tensor) else b for b in betas)
    return tuple(float(b) for b in vals) if group.get("fused") else vals


class _Values:
    """How an update sees a tensor: its NumPy array in eager mode (a complex one as its real
    and imaginary parts, `real_view`), the Tensor itself while rg.jit traces (so every
    in-place update is an op of the trace)."""

    def __init__(self) -> None:
        self.traced = state.tracer is not None

    def of(self, t: Tensor):
        if self.traced:
            if t.data.dtype.kind == "c":
                raise NotImplementedError("a traced (rg.jit) optimizer step on a complex "
                                          "parameter is not supported: step it eagerly")
            return t
        return real_view(t.data)

    def copy(self, v):
        if self.traced:
            return v.clone()
        # an array: arithmetic on a 0-d parameter's array gives a NumPy scalar, whose copy
        # would be a scalar too, and a buffer updated in place must be an array
        return np.array(v) if isinstance(v, np.generic) else v.copy()

    def sqrt(self, v):
        return v.sqrt() if self.traced else np.sqrt(v)

    def maximum_(self, a, b) -> None:
        if self.traced:
            a.copy_(a.maximum(b))
        else:
            np.maximum(a, b, out=a)

    def scalar(self, v, dtype):
        """A 0-d float64 value (a Python float in eager mode) as a factor for `dtype` values:
        NumPy rounds a Python float to the array's dtype, so the tensor is cast the same."""
        return v.to(dtype) if self.traced else v

    def wrap(self, v) -> Tensor:
        return v if self.traced else Tensor._wrap(v)


def _new_step(value: float = 0.0) -> Tensor:
    """A parameter's step count: a 0-d tensor of the default float dtype (float32 unless
    set otherwise), as PyTorch's optimizers keep it, whatever the parameter's dtype."""
    return Tensor._wrap(np.array(value, dtype=get_default_dtype()))


def _step_count(st: dict, values: _Values):
    """Increment the per-parameter step count (`_new_step`) and return it: a Python float
    in eager mode, a float64 copy of the tensor while traced (the step's arithmetic is in
    float64 both ways, as PyTorch's, which reads it as a Python number)."""
    step = st.get("step")
    if not isinstance(step, Tensor):
        step = st["step"] = _new_step(0.0 if step is None else float(step))
    if values.traced:
        step += 1.0
        return step if step.dtype == np.float64 else step.to(np.float64)
    step.data += 1.0
    _bump(step)
    return float(step.data)


def _bump(p: Tensor) -> None:
    """Count an in-place change of `p`, as the Tensor's own in-place ops do (the engine is
    told once per step, by `engine.mark_inplace()` in `step`)."""
    cell = p._vc
    if cell is None:
        cell = p._cell()
    cell[0] += 1


class SGD(Optimizer):
    """Stochastic gradient descent with PyTorch's momentum, dampening, Nesterov and L2 decay.

    d = g + wd * p;  buf = momentum * buf + (1 - dampening) * d (buf = d at first);
    d = d + momentum * buf (Nesterov) or buf;  p -= lr * d.
    """

    def __init__(self, params, lr: float = 1e-3, momentum: float = 0, dampening: float = 0,
                 weight_decay: float = 0, nesterov: bool = False, *,
                 maximize: bool = False, foreach: bool | None = None,
                 differentiable: bool = False, fused: bool | None = None) -> None:
        if momentum < 0:
            raise ArgumentError(f"Invalid momentum value: {momentum}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ArgumentError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening,
                                      weight_decay=weight_decay, nesterov=nesterov,
                                      maximize=maximize,
                                      **_impl_flags(foreach, differentiable, fused)))

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
        _check_fused(self, group, "sgd")
        state = self.state
        lr = lr_value(group)
        momentum = group["momentum"]
        dampening = group["dampening"]
        wd = group["weight_decay"]
        nesterov = group["nesterov"]
        maximize = group["maximize"]
        traced = values.traced
        for p in group["params"]:
            g = p.grad
            if g is None:
                continue
            x = p if traced else p.data
            d = g if traced else g.data
            if maximize:
                d = -d
            if wd:
                d = d + wd * x
            if momentum:
                st = state.get(p)
                buf = None if st is None else st.get("momentum_buffer")
                if buf is None:
                    buf = values.wrap(values.copy(d))
                    state[p] = {"momentum_buffer": buf}
                    b = buf if traced else buf.data  # (SGD is linear: complex as it is)
                else:
                    b = buf if traced else buf.data
                    b *= momentum
                    b += d if dampening == 0 else (1 - dampening) * d
                    if not traced:
                        _bump(buf)
                d = d + momentum * b if nesterov else b
            x -= lr * d
            if not traced:
                cell = p._vc  # _bump(p), inline: this loop is the hot path of training
                if cell is None:
                    cell = p._cell()
                cell[0] += 1


class Adam(Optimizer):
    """Adam (Kingma and Ba) with PyTorch's defaults, bias correction and optional AMSGrad.

    `weight_decay` here is L2 added to the gradient; `AdamW` decouples it.
    """

    _decoupled = False
    _tensor_step = True

    def __init__(self, params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, amsgrad: bool = False, *,
                 maximize: bool = False, foreach: bool | None = None, capturable: bool = False,
                 differentiable: bool = False, fused: bool | None = None,
                 decoupled_weight_decay: bool = False) -> None:
        _check_tensor_lr(lr, foreach, capturable)
        if not 0.0 <= eps:
            raise ArgumentError(f"Invalid epsilon value: {eps}")
        if len(betas) != 2 or not all(0.0 <= b < 1.0 for b in betas):
            raise ArgumentError(f"Invalid beta parameters: {betas} (each must be in [0, 1))")
        if all(isinstance(b, Tensor) for b in betas) and foreach and not capturable:
            raise ArgumentError("betas[0] as a Tensor is not supported for capturable=False "
                                "and foreach=True")
        if all(isinstance(b, Tensor) for b in betas):  # 1-element, kept 0-d (torch's _to_scalar)
            for k, b in enumerate(betas):
                if b.numel() != 1:
                    raise ArgumentError(f"Tensor betas[{k}] must be 1-element")
            betas = tuple(b.reshape(()) if b.ndim else b for b in betas)
        elif not all(isinstance(b, float) for b in betas):  # torch refuses betas=(0, 0.99)
            raise ValueError("betas must be either both floats or both Tensors, got "
                             f"{tuple(type(b).__name__ for b in betas)}")
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay, amsgrad=amsgrad,
                                      maximize=maximize,
                                      **_impl_flags(foreach, differentiable, fused, capturable),
                                      decoupled_weight_decay=bool(decoupled_weight_decay
                                                                  or self._decoupled)))

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
        _check_fused(self, group)
        state = self.state
        lr = lr_value(group)
        beta1, beta2 = _betas_value(group)
        eps = group["eps"]
        wd = group["weight_decay"]
        amsgrad = group["amsgrad"]
        maximize = group["maximize"]
        w1 = 1.0 - beta1
        traced = values.traced
        of = values.of
        for p in group["params"]:
            g = p.grad
            if g is None:
                continue
            x = of(p)
            d = of(g)
            if maximize:
                d = -d
            st = state.get(p)
            if st is None:
                st = state[p] = {"step": _new_step(),
                                 "exp_avg": Tensor._wrap(np.zeros_like(p.data)),
                                 "exp_avg_sq": Tensor._wrap(np.zeros_like(p.data))}
                if amsgrad:
                    st["max_exp_avg_sq"] = Tensor._wrap(np.zeros_like(p.data))
            t = _step_count(st, values)
            decay = 1.0
            if wd:
                if group.get("decoupled_weight_decay", self._decoupled):  # AdamW's form
                    decay = 1 - lr * wd
                else:
                    d = d + wd * x
            m = of(st["exp_avg"])
            v = of(st["exp_avg_sq"])
            factors = dict(lr=lr, beta1=beta1, beta2=beta2, eps=eps)
            if not amsgrad:  # the whole step as one op (one node when traced)
                if traced:
                    xs = engine.apply_many(ops.adam_step, x, d, m, v, t, decay=decay, **factors)
                    for a, b in zip((x, m, v), xs):
                        a.copy_(b)
                else:
                    ops.adam_step_(x, d, m, v, t, decay=decay, **factors)
                    _bump(p)
                    _bump(st["exp_avg"])
                    _bump(st["exp_avg_sq"])
                continue
            if traced:  # one node each (torch.lerp branch for branch; v beta2 + (1-beta2) d d)
                m.copy_(engine.apply(ops.adam_exp_avg, m, d, weight=w1))
                v.copy_(engine.apply(ops.adam_exp_avg_sq, v, d, beta=beta2))
            else:
                ops.lerp_(m, d, w1, out=m)
                ops.square_avg_(v, d, beta2, out=v)
            vmax = st.get("max_exp_avg_sq")
            if vmax is None:
                vmax = st["max_exp_avg_sq"] = Tensor._wrap(np.zeros_like(p.data))
            values.maximum_(of(vmax), v)
            vhat = of(vmax)
            if not traced:
                _bump(vmax)
            if traced:  # one node of the trace, reading the step count
                x.copy_(engine.apply(ops.adam_apply, x, m, vhat, t, decay=decay, **factors))
            else:
                ops.adam_update_(x, m, vhat, t, decay=decay, **factors)
            if not traced:
                _bump(p)
                _bump(st["exp_avg"])
                _bump(st["exp_avg_sq"])


class AdamW(Adam):
    """Adam with decoupled weight decay: p *= 1 - lr * weight_decay before the Adam update."""

    _decoupled = True

    def __init__(self, params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 1e-2, amsgrad: bool = False, *,
                 maximize: bool = False, foreach: bool | None = None, capturable: bool = False,
                 differentiable: bool = False, fused: bool | None = None) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize=maximize,
                         foreach=foreach, capturable=capturable,
                         differentiable=differentiable, fused=fused)

