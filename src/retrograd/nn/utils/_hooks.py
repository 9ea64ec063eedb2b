"""Forward pre-hooks for the old `weight_norm` / `spectral_norm` utilities.

retrograd's `Module.__call__` has no hook list, so the first such utility applied to a
module gives it a class of its own whose `__call__` runs the hooks kept in the
module's `_norm_hooks` (name -> hook) before `forward`, as PyTorch's
`register_forward_pre_hook` does; removing the last hook restores the class.
"""

from __future__ import annotations

from ..module import Module


def _hooked_class(base: type) -> type:
    def __call__(self, *args, **kwargs):
        for hook in list(self.__dict__["_norm_hooks"].values()):
            hook(self, args)
        return base.__call__(self, *args, **kwargs)

    return type(base.__name__, (base,), {"__call__": __call__, "_hooked_base": base})


def hooks(module: Module) -> dict:
    """The module's norm hooks by parameter name (empty when it has none)."""
    return module.__dict__.get("_norm_hooks", {})


def add_hook(module: Module, name: str, hook) -> None:
    """Run `hook(module, inputs)` before each forward of `module`."""
    if "_norm_hooks" not in module.__dict__:
        base = module.__class__
        module.__class__ = _hooked_class(base)
        module.__dict__["_norm_hooks"] = {}
    module.__dict__["_norm_hooks"][name] = hook


def remove_hook(module: Module, name: str) -> None:
    """Drop the hook on `name`; with none left the module gets its own class back."""
    table = module.__dict__["_norm_hooks"]
    del table[name]
    if not table and "_hooked_base" in module.__class__.__dict__:
        module.__class__ = module.__class__.__dict__["_hooked_base"]
        del module.__dict__["_norm_hooks"]
