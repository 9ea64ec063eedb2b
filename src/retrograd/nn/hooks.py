"""`Module.register_forward_pre_hook` and `Module.register_forward_hook`, as in PyTorch.

`Module.__call__` is a plain call of `forward` (the hot path has no hook lists), so
the first hook registered on a module gives that module a class of its own whose
`__call__` runs the module's hooks around the base class's call (the approach of
`nn/utils/_hooks.py`). Containers call such a module through `__call__`, so its
hooks run wherever it sits. The hooks live in the module's `_forward_pre_hooks` and
`_forward_hooks` (ordered dicts by handle id, as PyTorch's), and a handle's
`remove()` takes its hook out.
"""

from __future__ import annotations

import itertools
from collections import OrderedDict
from collections.abc import Callable

__all__ = ["RemovableHandle", "register_forward_pre_hook", "register_forward_hook"]

_ids = itertools.count()


class RemovableHandle:
    """Removes its hook with `remove()` (or on leaving a `with` block). Like
    `torch.utils.hooks.RemovableHandle`."""

    def __init__(self, table: OrderedDict, extra: dict | None = None) -> None:
        self.id = next(_ids)
        self._table, self._extra = table, extra

    def remove(self) -> None:
        self._table.pop(self.id, None)
        if self._extra is not None:
            self._extra.pop(self.id, None)

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc) -> None:
        self.remove()


def _hooked_class(base: type) -> type:
    def __call__(self, *args, **kwargs):
        d = self.__dict__
        kw_hooks = d["_forward_hooks_with_kwargs"]
        for hid, hook in list(d["_forward_pre_hooks"].items()):
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
        out = base.__call__(self, *args, **kwargs)
        for hid, hook in list(d["_forward_hooks"].items()):
            res = (hook(self, args, kwargs, out) if hid in kw_hooks
                   else hook(self, args, out))
            if res is not None:
                out = res
        return out

    return type(base.__name__, (base,), {"__call__": __call__,
                                         "__qualname__": base.__qualname__,
                                         "__module__": base.__module__})


def _tables(module) -> dict:
    d = module.__dict__
    if "_forward_hooks" not in d:
        d["_forward_pre_hooks"] = OrderedDict()
        d["_forward_hooks"] = OrderedDict()
        d["_forward_hooks_with_kwargs"] = {}
        module.__class__ = _hooked_class(module.__class__)
    return d


def _register(module, table_name: str, hook: Callable, prepend: bool,
              with_kwargs: bool) -> RemovableHandle:
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
    with `with_kwargs=True`, `hook(module, args, kwargs, output)`."""
    return _register(module, "_forward_hooks", hook, prepend, with_kwargs)
