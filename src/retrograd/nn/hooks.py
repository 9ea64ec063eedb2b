"""`Module.register_forward_pre_hook`, `register_forward_hook`,
`register_full_backward_pre_hook` and `register_full_backward_hook`, as in PyTorch.

`Module.__call__` is a plain call of `forward` (the hot path has no hook lists), so
the first hook registered on a module gives that module a class of its own whose
`__call__` runs the module's hooks around the base class's call (the approach of
`nn/utils/_hooks.py`). Containers call such a module through `__call__`, so its
hooks run wherever it sits. The hooks live in the module's `_forward_pre_hooks` and
`_forward_hooks` (ordered dicts by handle id, as PyTorch's), and a handle's
`remove()` takes its hook out.

Backward hooks work as PyTorch's `BackwardHook` does: while a module with backward
hooks runs, its tensor inputs and its outputs pass through identity Functions, whose
backward rules see the gradients: the outputs' one runs the pre-hooks
(`hook(module, grad_output)`, may replace grad_output), the inputs' one the hooks
(`hook(module, grad_input, grad_output)`, may replace grad_input). When no input
needs a gradient, the hooks run from the outputs' rule with grad_input all None.
"""

from __future__ import annotations

import functools
import itertools
import warnings
from collections import OrderedDict
from collections.abc import Callable

__all__ = ["RemovableHandle", "register_forward_pre_hook", "register_forward_hook",
           "register_full_backward_hook", "register_full_backward_pre_hook"]

_ids = itertools.count()


class RemovableHandle:
    """Removes its hook with `remove()` (or on leaving a `with` block). Like
    `torch.utils.hooks.RemovableHandle`."""

    def __init__(self, table: OrderedDict, extra: dict | None = None) -> None:
        self.id = next(_ids)
        self._table = table
        self.extra_tables = () if extra is None else (extra,)

    def remove(self) -> None:
        self._table.pop(self.id, None)
        for extra in self.extra_tables:
            extra.pop(self.id, None)

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc) -> None:
        self.remove()


_NO_HOOKS: dict = {}  # the local tables of a module without hooks of its own

# The global hooks of `torch.nn.modules.module.register_module_*`: they run on every
# module call, before the module's own hooks. `Module.__call__` checks one flag
# (`hooks.GLOBAL_CALL_HOOKS`), kept up to date by `_refresh_global`.
GLOBAL_CALL_HOOKS = False
_global_forward_pre_hooks: OrderedDict = OrderedDict()
_global_forward_hooks: OrderedDict = OrderedDict()
_global_forward_hooks_with_kwargs: OrderedDict = OrderedDict()
_global_forward_hooks_always_called: OrderedDict = OrderedDict()
_global_backward_hooks: OrderedDict = OrderedDict()
_global_backward_pre_hooks: OrderedDict = OrderedDict()
_global_buffer_registration_hooks: OrderedDict = OrderedDict()
_global_module_registration_hooks: OrderedDict = OrderedDict()
_global_parameter_registration_hooks: OrderedDict = OrderedDict()
_global_is_full_backward_hook: bool | None = None


def _refresh_global() -> None:
    """Set `Module.__call__`'s flag: whether any global call hook is registered."""
    global GLOBAL_CALL_HOOKS
    GLOBAL_CALL_HOOKS = bool(_global_forward_pre_hooks or _global_forward_hooks
                             or _global_backward_hooks or _global_backward_pre_hooks)


class _GlobalHandle(RemovableHandle):
    """A global hook's handle: removing it also updates `Module.__call__`'s flag."""

    def remove(self) -> None:
        super().remove()
        _refresh_global()


def call_with_hooks(self, local: dict, call: Callable, args: tuple, kwargs: dict):
    """`call(*args, **kwargs)` with the global hooks and the module's own (`local`, its
    hook tables) around it, in PyTorch's order: global pre-hooks, own pre-hooks, the
    call, global forward hooks, own forward hooks; backward hooks global first."""
    kw_hooks = local.get("_forward_hooks_with_kwargs", _NO_HOOKS)
    own_pre = local.get("_forward_pre_hooks", _NO_HOOKS)
    for hid, hook in (*_global_forward_pre_hooks.items(), *own_pre.items()):
        if hid in kw_hooks:
            res = hook(self, args, kwargs)
            if res is not None:
                if not (isinstance(res, tuple) and len(res) == 2):
                    raise RuntimeError("a forward pre-hook registered with_kwargs=True must "
                                       f"return None or (args, kwargs), got {res!r}")
                args, kwargs = res
        else:
            res = hook(self, args)
            if res is not None:
                args = res if isinstance(res, tuple) else (res,)
    bw = None
    bw_hooks = [*_global_backward_hooks.values(),
                *local.get("_backward_hooks", _NO_HOOKS).values()]
    bw_pre = [*_global_backward_pre_hooks.values(),
              *local.get("_backward_pre_hooks", _NO_HOOKS).values()]
    if (bw_hooks or bw_pre) and _grad_enabled():
        bw = _BackwardHooks(self, bw_hooks, bw_pre)
        args = bw.wrap_inputs(args)
    own_fwd = local.get("_forward_hooks", _NO_HOOKS)
    always = local.get("_forward_hooks_always_called", _NO_HOOKS)
    out = None
    called = set()

    def run(hid, hook, out):
        res = (hook(self, args, kwargs, out)
               if hid in kw_hooks or hid in _global_forward_hooks_with_kwargs
               else hook(self, args, out))
        return out if res is None else res

    try:
        out = call(*args, **kwargs)
        for hid, hook in (*_global_forward_hooks.items(), *own_fwd.items()):
            called.add(hid)
            out = run(hid, hook, out)
    except Exception:
        for hid, hook in (*_global_forward_hooks.items(), *own_fwd.items()):
            if (hid in always or hid in _global_forward_hooks_always_called) \
                    and hid not in called:  # as torch: warn, go on, re-raise
                try:
                    out = run(hid, hook, out)
                except Exception as e:
                    warnings.warn(f"forward hook with always_call=True raised: {e}",
                                  stacklevel=2)
        raise
    if bw is not None:  # after the forward hooks: grad_output is the final output's
        out = bw.wrap_outputs(out)
    return out


def _hooked_class(base: type) -> type:
    # the call without hooks: Module's `_call_plain` unless a subclass has its own __call__
    owner = next(c for c in base.__mro__ if "__call__" in c.__dict__)
    plain = owner.__dict__.get("_call_plain", base.__call__)

    def __call__(self, *args, **kwargs):
        return call_with_hooks(self, self.__dict__, functools.partial(plain, self),
                               args, kwargs)

    return type(base.__name__, (base,), {"__call__": __call__,
                                         "__qualname__": base.__qualname__,
                                         "__module__": base.__module__})


def _tables(module) -> dict:
    d = module.__dict__
    if "_forward_hooks" not in d:
        d["_forward_pre_hooks"] = OrderedDict()
        d["_forward_hooks"] = OrderedDict()
        d["_forward_hooks_with_kwargs"] = {}
        d["_backward_hooks"] = OrderedDict()
        d["_backward_pre_hooks"] = OrderedDict()
        d["_forward_hooks_always_called"] = OrderedDict()
        module.__class__ = _hooked_class(module.__class__)
    return d


def _register(module, table_name: str, hook: Callable, prepend: bool,
              with_kwargs: bool, always_call: bool = False) -> RemovableHandle:
    if not callable(hook):
        raise TypeError(f"hook must be callable, got {type(hook).__name__}")
    d = _tables(module)
    table = d[table_name]
    handle = RemovableHandle(table, d["_forward_hooks_with_kwargs"])
    table[handle.id] = hook
    if prepend:
        table.move_to_end(handle.id, last=False)
    if with_kwargs:
        d["_forward_hooks_with_kwargs"][handle.id] = True
    if always_call:
        d["_forward_hooks_always_called"][handle.id] = True
        handle.extra_tables = (*handle.extra_tables, d["_forward_hooks_always_called"])
    return handle


def register_forward_pre_hook(module, hook: Callable, *, prepend: bool = False,
                              with_kwargs: bool = False) -> RemovableHandle:
    """`hook(module, args)` before each forward (returning None or new args); with
    `with_kwargs=True`, `hook(module, args, kwargs)` returning None or (args, kwargs)."""
    return _register(module, "_forward_pre_hooks", hook, prepend, with_kwargs)


def register_forward_hook(module, hook: Callable, *, prepend: bool = False,
                          with_kwargs: bool = False, always_call: bool = False
                          ) -> RemovableHandle:
    """`hook(module, args, output)` after each forward (returning None or a new output);
    with `with_kwargs=True`, `hook(module, args, kwargs, output)`; with `always_call=True`
    it runs even when the forward raises (output None), before the error propagates."""
    return _register(module, "_forward_hooks", hook, prepend, with_kwargs, always_call)


def _grad_enabled() -> bool:
    from ..grad_mode import state
    return state.enabled


def _identity_function():
    """The identity Function whose backward hands the gradients to a callback (made on
    first use: the autograd package imports nn)."""
    global _Identity
    if _Identity is None:
        from ..autograd._core import Function

        class _BackwardHookIdentity(Function):
            @staticmethod
            def forward(ctx, on_grads, *tensors):
                ctx.on_grads = on_grads
                ctx.set_materialize_grads(False)  # an unused output's gradient is None
                return tuple(t.view_as(t) for t in tensors)

            @staticmethod
            def backward(ctx, *grads):
                return (None, *ctx.on_grads(grads))

        _Identity = _BackwardHookIdentity
    return _Identity


_Identity = None


class _BackwardHooks:
    """One forward call's backward hooks: what the outputs' gradients were, for the
    inputs' rule to hand on."""

    def __init__(self, module, hooks: list, pre_hooks: list) -> None:
        self.module = module
        self.hooks, self.pre_hooks = hooks, pre_hooks  # fixed at the call, as torch's
        self.n_inputs = 0
        self.inputs_wrapped = False
        self.grad_output = None

    def wrap_inputs(self, args: tuple) -> tuple:
        from ..tensor import Tensor
        idx = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        self.n_inputs = len(idx)
        if not any(args[i].requires_grad for i in idx):
            return args
        self.inputs_wrapped = True
        new = _identity_function().apply(self._on_grad_inputs, *(args[i] for i in idx))
        args = list(args)
        for i, t in zip(idx, new):
            args[i] = t
        return tuple(args)

    def wrap_outputs(self, out):
        from ..tensor import Tensor
        single = isinstance(out, Tensor)
        outs = (out,) if single else out
        if not isinstance(outs, tuple):
            return out
        idx = [i for i, o in enumerate(outs) if isinstance(o, Tensor) and o.requires_grad]
        if not idx:
            return out
        self.n_outputs, self.out_idx = len(outs), idx
        new = _identity_function().apply(self._on_grad_outputs, *(outs[i] for i in idx))
        outs = list(outs)
        for i, t in zip(idx, new):
            outs[i] = t
        return outs[0] if single else tuple(outs)

    def _on_grad_outputs(self, grads):
        full = [None] * self.n_outputs
        for i, g in zip(self.out_idx, grads):
            full[i] = g
        grad_output = tuple(full)
        for hook in self.pre_hooks:
            grad_output = _replaced(hook(self.module, grad_output), grad_output,
                                    "backward pre-hook", "outputs")
        self.grad_output = grad_output
        if not self.inputs_wrapped:  # nothing will reach the inputs' rule: run them here
            for hook in self.hooks:
                if hook(self.module, (None,) * self.n_inputs, grad_output) is not None:
                    raise RuntimeError("a backward hook returned gradients for inputs that "
                                       "need none")
        return tuple(grad_output[i] for i in self.out_idx)

    def _on_grad_inputs(self, grads):
        grad_input = tuple(grads)
        for hook in self.hooks:
            grad_input = _replaced(hook(self.module, grad_input, self.grad_output), grad_input,
                                   "backward hook", "inputs")
        return grad_input


def _replaced(res, grads: tuple, who: str, what: str) -> tuple:
    """A hook's result `res` in place of `grads` (None keeps them; one per entry)."""
    if res is None:
        return grads
    res = res if isinstance(res, tuple) else (res,)
    if len(res) != len(grads):
        raise RuntimeError(f"{who} returned {len(res)} gradients for {len(grads)} {what}")
    return res


def register_full_backward_hook(module, hook: Callable, *, prepend: bool = False
                                ) -> RemovableHandle:
    """`hook(module, grad_input, grad_output)` when the gradients with respect to the
    module's tensor inputs are computed; it may return new grad_input (a tuple)."""
    return _register(module, "_backward_hooks", hook, prepend, False)


def register_full_backward_pre_hook(module, hook: Callable, *, prepend: bool = False
                                    ) -> RemovableHandle:
    """`hook(module, grad_output)` when the gradients with respect to the module's
    outputs are computed; it may return new grad_output (a tuple)."""
    return _register(module, "_backward_pre_hooks", hook, prepend, False)


def _register_global(table: OrderedDict, hook: Callable, extra: dict | None = None
                     ) -> RemovableHandle:
    if not callable(hook):
        raise TypeError(f"hook must be callable, got {type(hook).__name__}")
    handle = _GlobalHandle(table, extra)
    table[handle.id] = hook
    _refresh_global()
    return handle


def register_module_forward_pre_hook(hook: Callable) -> RemovableHandle:
    """`hook(module, args)` before every module's forward (before the module's own
    pre-hooks); it may return new args. For debugging and profiling, as torch's."""
    return _register_global(_global_forward_pre_hooks, hook)


def register_module_forward_hook(hook: Callable, *, with_kwargs: bool = False,
                                 always_call: bool = False) -> RemovableHandle:
    """`hook(module, args, output)` (with `with_kwargs`, `hook(module, args, kwargs,
    output)`) after every module's forward, before the module's own forward hooks; with
    `always_call` it runs even when the forward raises."""
    handle = _register_global(_global_forward_hooks, hook)
    for flag, table in ((with_kwargs, _global_forward_hooks_with_kwargs),
                        (always_call, _global_forward_hooks_always_called)):
        if flag:
            table[handle.id] = True
        handle.extra_tables = (*handle.extra_tables, table)
    return handle


def _backward_kind(full: bool) -> None:
    global _global_is_full_backward_hook
    if _global_is_full_backward_hook is (not full):
        raise RuntimeError("Cannot use both regular backward hooks and full backward hooks as a "
                           "global Module hook. Please use only one of them.")
    _global_is_full_backward_hook = full


def register_module_full_backward_hook(hook: Callable) -> RemovableHandle:
    """`hook(module, grad_input, grad_output)` for every module's backward, before the
    module's own backward hooks; it may return new grad_input."""
    _backward_kind(True)
    return _register_global(_global_backward_hooks, hook)


def register_module_backward_hook(hook: Callable) -> RemovableHandle:
    """The deprecated global backward hook: run as a full backward hook (torch's old one
    saw the last op's gradients instead); it cannot be mixed with full ones."""
    _backward_kind(False)
    warnings.warn("register_module_backward_hook is deprecated; use "
                  "register_module_full_backward_hook", FutureWarning, stacklevel=2)
    return _register_global(_global_backward_hooks, hook)


def register_module_full_backward_pre_hook(hook: Callable) -> RemovableHandle:
    """`hook(module, grad_output)` for every module's backward, before the module's own
    backward pre-hooks; it may return new grad_output."""
    return _register_global(_global_backward_pre_hooks, hook)


def register_module_buffer_registration_hook(hook: Callable) -> RemovableHandle:
    """`hook(module, name, buffer)` whenever a buffer is registered (`register_buffer`
    or assignment); it may return a new buffer."""
    return _register_global(_global_buffer_registration_hooks, hook)


def register_module_module_registration_hook(hook: Callable) -> RemovableHandle:
    """`hook(module, name, submodule)` whenever a sub-module is registered
    (`add_module` or assignment); it may return a new sub-module."""
    return _register_global(_global_module_registration_hooks, hook)


def register_module_parameter_registration_hook(hook: Callable) -> RemovableHandle:
    """`hook(module, name, param)` whenever a parameter is registered
    (`register_parameter` or assignment); it may return a new parameter."""
    return _register_global(_global_parameter_registration_hooks, hook)


def _registration_hooks(table: OrderedDict, module, name: str, value):
    """`value` after the global registration hooks of `table` (each may replace it)."""
    for hook in list(table.values()):
        res = hook(module, name, value)
        if res is not None:
            value = res
    return value
