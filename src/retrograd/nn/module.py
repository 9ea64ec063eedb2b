"""`Module`, the base class of every layer and model, and `Parameter`, the tensors it learns.

A `Module` registers the `Parameter`s, buffers and sub-modules assigned to its
attributes, in assignment order, so `parameters()`, `state_dict()` and
`load_state_dict()` see them under PyTorch's dotted names (`0.weight`,
`encoder.fc.bias`, ...). `train()`/`eval()` switch layers such as `Dropout`.
Parameters are also kept as plain attributes, so `self.weight` costs no
lookup hook in the forward pass.
"""

from __future__ import annotations

import functools
import warnings
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from typing import Any, NamedTuple

import numpy as np

from .. import devices
from ..dtypes import as_array, get_default_dtype
from ..primitive import ArgumentError
from ..tensor import Tensor, clear_grads
from . import hooks as _hooks
from . import init
from .hooks import _registration_hooks

__all__ = ["Parameter", "Buffer", "Module"]


def _shared_array(data) -> np.ndarray:
    """The array a Parameter or Buffer wraps: a tensor's own (shared), an empty one of the
    default dtype for None, else `data` as an array."""
    if data is None:
        return np.empty(0, dtype=get_default_dtype())
    return data.data if isinstance(data, Tensor) else as_array(data)


class Parameter(Tensor):
    """A tensor that a `Module` registers as a learnable parameter (requires grad by default).

    It shares the array of the tensor or array it is made from. Like torch's, it takes
    attributes of the user's (`p._no_weight_decay = True`, `p._optim = {...}` as Mamba and
    S4 mark parameters for their optimizer groups).
    """

    __slots__ = ()  # (user attributes: the __dict__ of Tensor)

    def __init__(self, data=None, requires_grad: bool = True):
        Tensor.__init__(self, _shared_array(data))
        if requires_grad:
            self.requires_grad_(True)

    def __setattr__(self, name: str, value) -> None:
        _set_checked(self, name, value)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    def __deepcopy__(self, memo: dict) -> Parameter:
        """A new parameter with a copy of the values and no `.grad`, as torch's."""
        if id(self) in memo:
            return memo[id(self)]
        new = type(self)(self.data.copy(), self.requires_grad)
        memo[id(self)] = new
        return new


class Buffer(Tensor):
    """A tensor that, assigned to a `Module` attribute, is registered as a buffer (saved in
    `state_dict` unless `persistent=False`), as `torch.nn.Buffer`. The module keeps a plain
    tensor sharing its array."""

    __slots__ = ("persistent",)

    def __init__(self, data=None, *, persistent: bool = True):
        Tensor.__init__(self, _shared_array(data))
        self.persistent = bool(persistent)

    def __setattr__(self, name: str, value) -> None:
        _set_checked(self, name, value)


def _set_checked(t: Tensor, name: str, value) -> None:
    """`param.data = tensor` (PyTorch's idiom for swapping a parameter's values) takes the
    tensor's array; anything but a tensor or an array there is refused, so the parameter
    never holds a non-array."""
    if name == "data" and not (value.__class__ is np.ndarray or devices.is_device_array(value)):
        if not isinstance(value, Tensor):
            raise TypeError(f"a parameter's .data must be a Tensor or an array, got "
                            f"{type(value).__name__}")
        value = value.data
    object.__setattr__(t, name, value)


# The writes of the load_state_dict under way: (tensor, array, assign), made once all is checked.
_EXTRA_STATE = "_extra_state"  # the key of get_extra_state()'s value, after the prefix

_PENDING_LOADS: ContextVar[list | None] = ContextVar("retrograd_pending_loads", default=None)


def _write_loaded(t: Tensor, arr, assign: bool) -> None:
    """Write a checked state_dict value into a parameter or buffer (in place, or a fresh
    array with `assign`), on the tensor's device, bumping its version."""
    if t.data.__class__ is not np.ndarray:  # a module on a device: values go there
        arr = devices.to(np.asarray(arr, dtype=t.data.dtype), t.device)
    if assign:  # the checkpoint's values and (floating) dtype, as PyTorch's assign=True
        keep = arr.dtype.kind in "fc" or not t.requires_grad
        t.data = arr.copy() if keep else arr.astype(t.data.dtype, copy=True)
    else:
        t.data[...] = arr
    init._bump(t)


class _IncompatibleKeys(NamedTuple):
    missing_keys: list
    unexpected_keys: list

    def __repr__(self) -> str:  # as PyTorch prints `model.load_state_dict(...)`'s result
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return (f"_IncompatibleKeys(missing_keys={self.missing_keys}, "
                f"unexpected_keys={self.unexpected_keys})")

    __str__ = __repr__


def _hook_table(name: str) -> property:
    """PyTorch's per-module hook dict `name` (e.g. `_forward_hooks`), made on first access:
    code that reads or fills these private dicts directly then works as with torch's."""

    def get(self):
        from .hooks import _tables
        return _tables(self)[name]

    def put(self, value) -> None:
        from .hooks import _tables
        _tables(self)[name] = value

    return property(get, put, doc=f"The module's `{name}` (PyTorch's private hook dict).")


class _Registry(dict):
    """A module's `_parameters`, `_buffers` or `_modules`. Attributes are read from the
    instance `__dict__` (no `__getattr__` on the hot path), so this dict's writes also set
    (or delete) the owner's attribute of that name: code that writes the registry itself,
    as PyTorch's users do (`m._parameters["weight"] = w - lr * g` in learn2learn's
    `update_module`, `clone_module`), is then seen by `forward`, as in PyTorch."""

    __slots__ = ("owner",)

    def __init__(self, owner, items=()) -> None:
        dict.__init__(self, items)
        self.owner = owner

    def _attrs(self) -> dict:
        """The owner's attributes; a scratch dict while unpickling (pickle fills the items
        before it sets `owner`, and the owner's own state holds the attributes then)."""
        owner = getattr(self, "owner", None)
        return {} if owner is None else owner.__dict__

    def __setitem__(self, name, value) -> None:
        dict.__setitem__(self, name, value)
        self._attrs()[name] = value

    def __delitem__(self, name) -> None:
        dict.__delitem__(self, name)
        self._attrs().pop(name, None)

    def pop(self, name, *default):
        if name in self:
            self._attrs().pop(name, None)
        return dict.pop(self, name, *default)

    def popitem(self):
        name, value = dict.popitem(self)
        self._attrs().pop(name, None)
        return name, value

    def setdefault(self, name, default=None):
        if name not in self:
            self[name] = default
        return dict.__getitem__(self, name)

    def update(self, *args, **kwargs) -> None:
        for name, value in dict(*args, **kwargs).items():
            self[name] = value

    def clear(self) -> None:
        for name in list(self):
            self._attrs().pop(name, None)
        dict.clear(self)

    def copy(self) -> dict:
        return dict(self)

    def __ior__(self, other):
        self.update(other)
        return self


_REGISTRY_NAMES = frozenset(("_parameters", "_buffers", "_modules"))


class Module:
    """Base class of layers and models: subclass, assign layers in `__init__`, write `forward`."""

    training: bool

    _forward_hooks = _hook_table("_forward_hooks")
    _forward_pre_hooks = _hook_table("_forward_pre_hooks")
    _backward_hooks = _hook_table("_backward_hooks")
    _backward_pre_hooks = _hook_table("_backward_pre_hooks")
    _forward_hooks_with_kwargs = _hook_table("_forward_hooks_with_kwargs")
    _forward_pre_hooks_with_kwargs = _hook_table("_forward_hooks_with_kwargs")  # (one dict)
    _forward_hooks_always_called = _hook_table("_forward_hooks_always_called")

    @property
    def _non_persistent_buffers_set(self) -> set:
        """PyTorch's name for the set of buffers left out of `state_dict`."""
        return self.__dict__["_non_persistent"]

    def __init__(self) -> None:
        d = self.__dict__
        d["training"] = True
        d["_parameters"] = _Registry(self)
        d["_buffers"] = _Registry(self)
        d["_non_persistent"] = set()
        d["_modules"] = _Registry(self)

    # ------------------------------------------------------------ registration

    def _registries(self):
        d = self.__dict__
        if "_parameters" not in d:
            raise AttributeError(f"cannot assign parameters or modules before "
                                 f"{type(self).__name__}.__init__() calls super().__init__()")
        return d["_parameters"], d["_modules"], d["_buffers"]

    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(value, Buffer):
            params, modules, _ = self._registries()
            params.pop(name, None)
            modules.pop(name, None)
            self.register_buffer(name, Tensor._wrap(value.data), persistent=value.persistent)
            return
        if isinstance(value, Parameter):
            params, modules, buffers = self._registries()
            if name not in params and isinstance(getattr(type(self), name, None), property):
                # a parametrized tensor's property (torch's register_parameter refuses it)
                raise KeyError(f"attribute '{name}' already exists")
            modules.pop(name, None)
            buffers.pop(name, None)
            if _hooks._global_parameter_registration_hooks:
                value = _registration_hooks(_hooks._global_parameter_registration_hooks, self,
                                            name, value)
            params[name] = value
        elif isinstance(value, Module):
            params, modules, buffers = self._registries()
            if name in params:  # PyTorch checks the parameter slot first
                raise TypeError(f"cannot assign '{type(value).__name__}' as parameter '{name}' "
                                "(a Parameter or None expected)")
            buffers.pop(name, None)
            if _hooks._global_module_registration_hooks:
                value = _registration_hooks(_hooks._global_module_registration_hooks, self,
                                            name, value)
            modules[name] = value
        else:
            d = self.__dict__
            if name in d.get("_parameters", ()):
                if value is not None:
                    raise TypeError(f"cannot assign a {type(value).__name__} to parameter "
                                    f"'{name}' (a Parameter or None is expected)")
                d["_parameters"][name] = None
            elif name in d.get("_modules", ()):
                if value is not None:
                    raise TypeError(f"cannot assign a {type(value).__name__} to sub-module "
                                    f"'{name}' (a Module or None is expected)")
                if _hooks._global_module_registration_hooks:
                    value = _registration_hooks(_hooks._global_module_registration_hooks, self,
                                                name, value)
                d["_modules"][name] = value
            elif name in d.get("_buffers", ()):
                if value is not None and not isinstance(value, Tensor):
                    raise TypeError(f"cannot assign a {type(value).__name__} to buffer '{name}' "
                                    "(a Tensor or None is expected)")
                if _hooks._global_buffer_registration_hooks:
                    value = _registration_hooks(_hooks._global_buffer_registration_hooks, self,
                                                name, value)
                d["_buffers"][name] = value
            elif name in _REGISTRY_NAMES and isinstance(value, dict) and not (
                    isinstance(value, _Registry) and value.owner is self):
                # a registry replaced (learn2learn's `clone._parameters = ....copy()`):
                # this module's attributes follow the new one's entries
                for stale in d.get(name, ()):  # names the new registry lacks go
                    if stale not in value:
                        d.pop(stale, None)
                value = _Registry(self, value)
                d.update(value)
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        for reg in ("_parameters", "_modules", "_buffers"):
            dict.pop(self.__dict__.get(reg, {}), name, None)
        self.__dict__.get("_non_persistent", set()).discard(name)
        object.__delattr__(self, name)

    def _check_new_name(self, name, kind: str, registry: dict) -> None:
        """PyTorch's checks on a name being registered: a non-empty str without '.', not an
        attribute the module already has for something else."""
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string. Got {type(name).__name__}")
        if "." in name:
            raise KeyError(f'{kind} name can\'t contain ".", got: {name}')
        if name == "":
            raise KeyError(f'{kind} name can\'t be empty string ""')
        if name not in registry and hasattr(self, name):
            raise KeyError(f"attribute '{name}' already exists")

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Register `param` (or None) under `name`."""
        self._check_new_name(name, "parameter", self._registries()[0])
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot register a {type(param).__name__} as parameter '{name}' "
                            "(a Parameter or None is expected)")
        if param is not None and _hooks._global_parameter_registration_hooks:
            param = _registration_hooks(_hooks._global_parameter_registration_hooks, self,
                                        name, param)
        self._registries()[0][name] = param
        object.__setattr__(self, name, param)

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """A tensor that belongs to the module's state but is not learned (e.g. running stats)."""
        self._check_new_name(name, "buffer", self._registries()[2])
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot register a {type(tensor).__name__} as buffer '{name}' "
                            "(a Tensor or None is expected)")
        if _hooks._global_buffer_registration_hooks:
            tensor = _registration_hooks(_hooks._global_buffer_registration_hooks, self,
                                         name, tensor)
        self._registries()[2][name] = tensor
        if persistent:
            self._non_persistent.discard(name)
        else:
            self._non_persistent.add(name)
        object.__setattr__(self, name, tensor)

    def add_module(self, name: str, module: Module | None) -> None:
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        self._check_new_name(name, "module", self._registries()[1])
        if _hooks._global_module_registration_hooks:
            module = _registration_hooks(_hooks._global_module_registration_hooks, self,
                                         name, module)
        self._registries()[1][name] = module
        object.__setattr__(self, name, module)

    register_module = add_module

    # ------------------------------------------------------------ traversal

    def named_modules(self, memo: set | None = None, prefix: str = "",
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Module]]:
        """This module and all below it, depth first (PyTorch's order), without recursion."""
        seen = memo if memo is not None else set()  # modules, as PyTorch's memo holds
        stack = [(prefix, self)]
        while stack:
            name, mod = stack.pop()
            if remove_duplicate:
                if mod in seen:
                    continue
                seen.add(mod)
            yield name, mod
            children = [(f"{name}.{k}" if name else k, m) for k, m in mod._modules.items()
                        if m is not None]
            stack.extend(reversed(children))

    def modules(self) -> Iterator[Module]:
        for _, m in self.named_modules():
            yield m

    def named_children(self) -> Iterator[tuple[str, Module]]:
        seen = set()
        for name, m in self._modules.items():
            if m is not None and id(m) not in seen:
                seen.add(id(m))
                yield name, m

    def children(self) -> Iterator[Module]:
        for _, m in self.named_children():
            yield m

    def _named_members(self, registry: str, prefix: str, recurse: bool,
                       remove_duplicate: bool = True):
        seen = set()
        mods = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse \
            else [(prefix, self)]
        for mod_name, mod in mods:
            for name, v in getattr(mod, registry).items():
                if v is None or (remove_duplicate and id(v) in seen):
                    continue
                seen.add(id(v))
                yield (f"{mod_name}.{name}" if mod_name else name), v

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True) -> Iterator[tuple[str, Parameter]]:
        return self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = "", recurse: bool = True,
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Tensor]]:
        return self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def apply(self, fn) -> Module:
        """Call `fn(module)` on every sub-module, then on this one (PyTorch's order)."""
        for m in self.children():  # post-order; a shared module once per place it sits
            m.apply(fn)
        fn(self)
        return self

    # ------------------------------------------------------------ modes and grads

    def train(self, mode: bool = True) -> Module:
        """Training mode (dropout active); `eval()` is `train(False)`."""
        if not isinstance(mode, bool):
            raise ArgumentError(f"training mode is expected to be a bool, got {mode!r}")
        self.__dict__["training"] = mode
        for m in self.children():  # through each child's own train(), which may override
            m.train(mode)
        return self

    def eval(self) -> Module:
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def register_forward_pre_hook(self, hook, *, prepend: bool = False,
                                  with_kwargs: bool = False):
        """Run `hook(module, args)` before each forward (see `nn/hooks.py`)."""
        from .hooks import register_forward_pre_hook

        return register_forward_pre_hook(self, hook, prepend=prepend, with_kwargs=with_kwargs)

    def register_forward_hook(self, hook, *, prepend: bool = False, with_kwargs: bool = False,
                              always_call: bool = False):
        """Run `hook(module, args, output)` after each forward (see `nn/hooks.py`)."""
        from .hooks import register_forward_hook

        return register_forward_hook(self, hook, prepend=prepend, with_kwargs=with_kwargs,
                                     always_call=always_call)

    def get_submodule(self, target: str) -> Module:
        """The submodule at dotted path `target` ("" is self), as `named_modules` names it."""
        if target == "":
            return self
        mod = self
        for item in target.split("."):
            sub = mod.__dict__.get("_modules", {}).get(item)
            if sub is None:
                raise AttributeError(f"{type(mod).__name__} has no attribute `{item}`")
            mod = sub
        return mod

    def set_submodule(self, target: str, module: Module, strict: bool = False) -> None:
        """Put `module` at dotted path `target` (its parent must exist; with `strict`, so must
        the name being replaced). Like `torch.nn.Module.set_submodule`."""
        if target == "":
            raise ValueError("Cannot set the submodule without a target name!")
        if not isinstance(module, Module):
            raise ValueError(f"`module` is not an nn.Module, found {type(module)}")
        path, _, name = target.rpartition(".")
        parent = self.get_submodule(path)
        if strict and not hasattr(parent, name):
            raise AttributeError(f"{type(parent).__name__} has no attribute `{name}`")
        if hasattr(parent, name) and not isinstance(getattr(parent, name), Module):
            raise AttributeError(f"`{name}` is not an nn.Module")
        setattr(parent, name, module)

    def type(self, dst_type) -> Module:
        """Every parameter and buffer cast to `dst_type` (a dtype or a type name), integer
        ones included, as `torch.nn.Module.type`."""
        for mod in self.modules():
            for reg in (mod._parameters, mod._buffers):
                for t in reg.values():
                    if t is not None:
                        t.data = t.type(dst_type).data
                        if t.grad is not None:
                            t.grad = t.grad.type(dst_type)
        return self

    def compile(self, *args, **kwargs) -> None:
        """`torch.nn.Module.compile`: accepted; the module runs as it is (see `rg.compile`)."""

    def get_parameter(self, target: str):
        """The parameter at dotted path `target` ("layer.0.weight")."""
        path, _, name = target.rpartition(".")
        mod = self.get_submodule(path)
        if name not in mod.__dict__.get("_parameters", {}):
            raise AttributeError(f"{type(mod).__name__} has no parameter `{name}`")
        p = mod.__dict__["_parameters"][name]
        if p is None:
            raise AttributeError(f"`{name}` is not an nn.Parameter")
        return p

    def get_buffer(self, target: str):
        """The buffer at dotted path `target` ("bn.running_mean")."""
        path, _, name = target.rpartition(".")
        mod = self.get_submodule(path)
        if name not in mod.__dict__.get("_buffers", {}):
            raise AttributeError(f"{type(mod).__name__} has no buffer `{name}`")
        return mod.__dict__["_buffers"][name]

    def to_empty(self, *, device=None, recurse: bool = True) -> Module:
        """Move to `device` without keeping values (torch leaves them uninitialised; here
        they are zeros), for modules built on the meta device: parameters and buffers."""
        from .. import creation

        for t in list(self.parameters()) + list(self.buffers()):
            t.data = creation.zeros(*t.shape, dtype=t.dtype, device=device).data
            t.grad = None
        return self

    def share_memory(self) -> Module:
        """Move every parameter, buffer and gradient into memory shared between processes
        (`Tensor.share_memory_`), so worker processes train this module's own values
        (Hogwild); returns self."""
        for m in self.modules():
            for p in m._parameters.values():
                if p is not None:
                    p.share_memory_()
                    if p.grad is not None:
                        p.grad.share_memory_()
            for b in m._buffers.values():
                if b is not None:
                    b.share_memory_()
        return self

    def register_full_backward_hook(self, hook, prepend: bool = False):
        """Run `hook(module, grad_input, grad_output)` in backward (see `nn/hooks.py`)."""
        from .hooks import register_full_backward_hook

        return register_full_backward_hook(self, hook, prepend=prepend)

    def register_full_backward_pre_hook(self, hook, prepend: bool = False):
        """Run `hook(module, grad_output)` in backward (see `nn/hooks.py`)."""
        from .hooks import register_full_backward_pre_hook

        return register_full_backward_pre_hook(self, hook, prepend=prepend)

    def register_backward_hook(self, hook):
        """The deprecated form: registered as `register_full_backward_hook` (PyTorch's
        old hook saw the last op's inputs instead; the full hook is what it recommends)."""
        import warnings

        warnings.warn("register_backward_hook is deprecated; use register_full_backward_hook",
                      FutureWarning, stacklevel=2)
        return self.register_full_backward_hook(hook)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clear every parameter's gradient (to None by default, as PyTorch does)."""
        clear_grads(self.parameters(), set_to_none)

    def to(self, *args, **kwargs) -> Module:
        """Move parameters and buffers to a device and/or convert the floating ones to a
        dtype, in place (same objects, so an optimizer holding them follows): `to(dtype)`,
        `to(device)`, `to(device, dtype)`, `to(tensor)`, or by keyword."""
        from ..methods import _to_args

        target, dtype = _to_args(args, dict(kwargs))
        dt = None if dtype is None else np.dtype(dtype)
        if dt is not None and dt.kind not in "fc":
            raise TypeError(f"Module.to() only accepts floating dtypes, got {dt}")
        if dt is not None and dt.kind == "c":  # PyTorch's caution, word for word
            warnings.warn(
                "Complex modules are a new feature under active development whose design may "
                "change, and some modules might not work as expected when using complex tensors "
                "as parameters or buffers. Please file an issue at https://github.com/pytorch/"
                "pytorch/issues/new?template=bug-report.yml if a complex module does not work "
                "as expected.", stacklevel=2)
        for t in list(self.parameters()) + list(self.buffers()):
            if target is not None and t.device != target:
                t.data = devices.to(t.data, target)
                if t.grad is not None:
                    t.grad = Tensor._wrap(devices.to(t.grad.data, target))
            if dt is not None and t.data.dtype.kind in "fc" and t.data.dtype != dt:
                t.data = t.data.astype(dt)
                if t.grad is not None:
                    t.grad = Tensor._wrap(t.grad.data.astype(dt))
        return self

    def cuda(self, device=None) -> Module:
        """Move parameters and buffers to CUDA device `device` (default 0), in place."""
        return self.to(devices.device("cuda", device))

    def cpu(self) -> Module:
        """Move parameters and buffers to the host, in place."""
        return self.to("cpu")

    def _real_floating_to(self, dt) -> Module:
        """Real floating parameters and buffers (and their grads) cast to `dt`, in place;
        complex and integer ones kept, as PyTorch's double()/float()/half() do (`to(dtype)`
        casts complex ones too)."""
        dt = np.dtype(dt)
        for t in list(self.parameters()) + list(self.buffers()):
            if t.data.dtype.kind == "f" and t.data.dtype != dt:
                t.data = t.data.astype(dt)
                if t.grad is not None:
                    t.grad = Tensor._wrap(t.grad.data.astype(dt))
        return self

    def double(self) -> Module:
        """Real floating parameters and buffers to float64, in place (complex ones kept)."""
        return self._real_floating_to(np.float64)

    def float(self) -> Module:
        """Real floating parameters and buffers to float32, in place (complex ones kept)."""
        return self._real_floating_to(np.float32)

    def half(self) -> Module:
        """Real floating parameters and buffers to float16, in place (complex ones kept)."""
        return self._real_floating_to(np.float16)

    def bfloat16(self) -> Module:
        """Refused: NumPy has no bfloat16 (see `rg.bfloat16`)."""
        raise TypeError("Module.bfloat16(): retrograd has no bfloat16 (NumPy does not); use "
                        "half() or float()")

    # ------------------------------------------------------------ state

    _version = 1  # recorded in state_dict()._metadata, as PyTorch does

    def state_dict(self, destination: dict | None = None, prefix: str = "",
                   keep_vars: bool = False) -> OrderedDict:
        """Parameters and persistent buffers by dotted name (detached, sharing the arrays),
        PyTorch's way: each module's `_save_to_state_dict`, then its children's, with the
        state-dict pre- and post-hooks around, and each module's version in `_metadata`."""
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        local_metadata = {"version": type(self)._version}
        metadata = getattr(destination, "_metadata", None)
        if metadata is not None:
            metadata[prefix[:-1]] = local_metadata
        d = self.__dict__
        for hook in list(d.get("_state_dict_pre_hooks", {}).values()):
            hook(self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, mod in d["_modules"].items():
            if mod is not None:
                mod.state_dict(destination=destination, prefix=f"{prefix}{name}.",
                               keep_vars=keep_vars)
        for hook, public in list(d.get("_state_dict_hooks", {}).values()):
            res = hook(self, destination, prefix, local_metadata)
            if public and res is not None:
                raise RuntimeError("state_dict post-hook must return None")
            if res is not None:  # the private hook's form: a new state dict
                destination = res
        return destination

    def _save_to_state_dict(self, destination: dict, prefix: str, keep_vars: bool) -> None:
        """This module's own entries (PyTorch's protocol: subclasses override it): its
        parameters, persistent buffers, and `get_extra_state()` where a subclass has one."""
        for name, t in self._parameters.items():
            if t is not None:
                destination[prefix + name] = t if keep_vars else t.detach()
        for name, t in self._buffers.items():
            if t is not None and name not in self._non_persistent:
                destination[prefix + name] = t if keep_vars else t.detach()
        if type(self).get_extra_state is not Module.get_extra_state:
            destination[prefix + _EXTRA_STATE] = self.get_extra_state()

    def get_extra_state(self):
        """Extra state for `state_dict` (a subclass that keeps some overrides this and
        `set_extra_state`, as in PyTorch)."""
        raise RuntimeError("Reached a code path in Module.get_extra_state() that should never "
                           "be called: override it with set_extra_state")

    def set_extra_state(self, state) -> None:
        """Restore what `get_extra_state` gave (see there)."""
        raise RuntimeError("Reached a code path in Module.set_extra_state() that should never "
                           "be called: override it with get_extra_state")

    def _hook_table(self, name: str) -> OrderedDict:
        return self.__dict__.setdefault(name, OrderedDict())

    def _add_state_hook(self, table: str, entry, hook):
        from .hooks import RemovableHandle

        if not callable(hook):
            raise TypeError(f"hook must be callable, got {type(hook).__name__}")
        t = self._hook_table(table)
        handle = RemovableHandle(t)
        t[handle.id] = entry
        return handle

    def register_state_dict_pre_hook(self, hook):
        """`hook(module, prefix, keep_vars)` before this module's entries are saved."""
        return self._add_state_hook("_state_dict_pre_hooks", hook, hook)

    def register_state_dict_post_hook(self, hook):
        """`hook(module, state_dict, prefix, local_metadata)` after this module's entries
        (and its children's) are saved; it may change the dict in place, returns None."""
        return self._add_state_hook("_state_dict_hooks", (hook, True), hook)

    def _register_state_dict_hook(self, hook):
        """PyTorch's private form of the post-hook, which may return a new state dict."""
        return self._add_state_hook("_state_dict_hooks", (hook, False), hook)

    def register_load_state_dict_pre_hook(self, hook):
        """`hook(module, state_dict, prefix, local_metadata, strict, missing_keys,
        unexpected_keys, error_msgs)` before this module's keys are loaded; it may rename
        or drop keys in `state_dict`."""
        return self._add_state_hook("_load_state_dict_pre_hooks", hook, hook)

    def _register_load_state_dict_pre_hook(self, hook, with_module: bool = False):
        """PyTorch's private form of the load pre-hook, which checkpoint converters use
        (gpt-fast fuses `wq`/`wk`/`wv` into `wqkv` with it): called without the module,
        `hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
        error_msgs)`, unless `with_module`."""
        entry = hook if with_module else (lambda module, *args: hook(*args))
        return self._add_state_hook("_load_state_dict_pre_hooks", entry, hook)

    def register_load_state_dict_post_hook(self, hook):
        """`hook(module, incompatible_keys)` after the keys are checked; it may remove
        entries from `incompatible_keys.missing_keys` / `.unexpected_keys` before the
        strict check. Loading is all or nothing here, so the hook runs before the values
        are written (in PyTorch, after)."""
        return self._add_state_hook("_load_state_dict_post_hooks", hook, hook)

    def load_state_dict(self, state_dict: Mapping, strict: bool = True,
                        assign: bool = False) -> _IncompatibleKeys:
        """Copy values into this module's parameters and buffers, all or nothing.

        As in PyTorch, each module's `_load_from_state_dict` is called in turn (the
        module's own keys, then each child's on the keys under its prefix), so a subclass
        can rename or drop keys before calling super(); `state_dict._metadata` (module
        versions) is passed on as `local_metadata`. Everything is checked before anything
        is written: with `strict`, missing and unexpected keys are errors; a wrong shape
        or a non-numeric value always is. On any error a RuntimeError names every problem
        and nothing is changed.
        """
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"expected a mapping of names to tensors, got "
                            f"{type(state_dict).__name__}")
        metadata = getattr(state_dict, "_metadata", None)
        missing: list = []
        unexpected: list = []
        errors: list = []
        updates: list = []
        token = _PENDING_LOADS.set(updates)
        try:
            todo = [(self, OrderedDict(state_dict), "")]
            while todo:  # pre-order, children in registration order, as PyTorch's walk
                mod, local_sd, prefix = todo.pop()
                local_metadata = dict(metadata.get(prefix[:-1], {})) if metadata else {}
                if assign:
                    local_metadata["assign_to_params_buffers"] = True
                for hook in list(mod.__dict__.get("_load_state_dict_pre_hooks", {}).values()):
                    hook(mod, local_sd, prefix, local_metadata, strict, missing, unexpected,
                         errors)
                mod._load_from_state_dict(local_sd, prefix, local_metadata, True, missing,
                                          unexpected, errors)
                children = []
                for name, child in mod._modules.items():
                    if child is not None:
                        child_prefix = f"{prefix}{name}."
                        children.append((child, OrderedDict(
                            (k, v) for k, v in local_sd.items() if k.startswith(child_prefix)),
                            child_prefix))
                todo.extend(reversed(children))
        finally:
            _PENDING_LOADS.reset(token)
        keys = _IncompatibleKeys(missing, unexpected)
        for mod in self.modules():
            for hook in list(mod.__dict__.get("_load_state_dict_post_hooks", {}).values()):
                hook(mod, keys)
        if strict and unexpected:
            errors.insert(0, "Unexpected key(s) in state_dict: "
                          + ", ".join(f'"{k}"' for k in unexpected) + ".")
        if strict and missing:
            errors.insert(0, "Missing key(s) in state_dict: "
                          + ", ".join(f'"{k}"' for k in missing) + ".")
        if errors:
            raise RuntimeError(f"Error(s) in loading state_dict for {type(self).__name__}:\n\t"
                               + "\n\t".join(errors))
        for update in updates:
            if callable(update):  # a set_extra_state, after every check passed
                update()
            else:
                _write_loaded(*update)
        return keys

    def _load_from_state_dict(self, state_dict: Mapping, prefix: str, local_metadata: dict,
                              strict: bool, missing_keys: list, unexpected_keys: list,
                              error_msgs: list) -> None:
        """PyTorch's per-module loading step: this module's own parameters and persistent
        buffers from the keys `prefix + name`, missing ones and (with `strict`) keys under
        `prefix` that name nothing here noted in the lists. Subclasses override it to
        drop or rename keys (torchvision's FrozenBatchNorm2d drops `num_batches_tracked`)
        and call super(). Inside `load_state_dict` the writes wait until every module is
        checked; called on its own, it writes at once."""
        local = {n: v for n, v in self._parameters.items() if v is not None}
        local.update((n, v) for n, v in self._buffers.items()
                     if v is not None and n not in self._non_persistent)
        assign = bool(local_metadata.get("assign_to_params_buffers", False))
        pending = _PENDING_LOADS.get()
        for name, t in local.items():
            key = prefix + name
            if key not in state_dict:
                missing_keys.append(key)
                continue
            v = state_dict[key]
            if not isinstance(v, (Tensor, np.ndarray)):
                error_msgs.append(f'While copying the parameter named "{key}", expected a Tensor '
                                  f"(or a NumPy array) from checkpoint but received {type(v)}")
                continue
            arr = v.data if isinstance(v, Tensor) else v
            try:
                arr = devices.host(arr)
            except Exception:  # noqa: BLE001 - anything that is not array-like
                arr = None
            if arr is None or arr.dtype.kind not in "biufc":
                error_msgs.append(f"value for {key!r} is not numeric (got {type(v).__name__})")
            elif arr.shape != t.shape:
                error_msgs.append(f"size mismatch for {key}: copying a param with shape "
                                  f"{arr.shape} from checkpoint, the shape in current model is "
                                  f"{t.shape}")
            elif pending is not None:
                pending.append((t, arr, assign))
            else:
                _write_loaded(t, arr, assign)
        extra_key = prefix + _EXTRA_STATE
        has_extra = type(self).set_extra_state is not Module.set_extra_state
        if has_extra:
            if extra_key not in state_dict:
                missing_keys.append(extra_key)
            elif pending is not None:
                pending.append(functools.partial(self.set_extra_state, state_dict[extra_key]))
            else:
                self.set_extra_state(state_dict[extra_key])
        if strict:
            for key in state_dict:
                if key.startswith(prefix) and not (has_extra and key == extra_key):
                    first = key[len(prefix):].split(".", 1)[0]
                    if first not in self._modules and first not in local:
                        unexpected_keys.append(key)

    # ------------------------------------------------------------ calling

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} does not define forward()")

    def __call__(self, *args, **kwargs):
        if _hooks.GLOBAL_CALL_HOOKS:  # one cheap check; global hooks are for debugging
            return _hooks.call_with_hooks(self, _hooks._NO_HOOKS, self._call_plain, args,
                                          kwargs)
        if kwargs and "input" in kwargs:  # torch's keyword for the input of its layers
            args, kwargs = _input_keyword(type(self), args, kwargs)
        return self.forward(*args, **kwargs)

    def _call_plain(self, *args, **kwargs):
        """The call without hooks: `forward` (taking torch's `input=` keyword)."""
        if kwargs and "input" in kwargs:
            args, kwargs = _input_keyword(type(self), args, kwargs)
        return self.forward(*args, **kwargs)

    def extra_repr(self) -> str:
        return ""

    def __repr__(self) -> str:
        lines = []
        extra = self.extra_repr()
        if extra:
            lines = extra.split("\n")
        for name, m in self._modules.items():
            body = repr(m).replace("\n", "\n  ")
            lines.append(f"({name}): {body}")
        main = type(self).__name__ + "("
        if lines:
            if len(lines) == 1 and not self._modules:
                return main + lines[0] + ")"
            main += "\n  " + "\n  ".join(lines) + "\n"
        return main + ")"


_FIRST_IS_X: dict = {}  # layer class -> whether its forward names its input `x`


def _input_keyword(cls, args: tuple, kwargs: dict):
    """`layer(input=t)`, PyTorch's keyword for its layers' input, for retrograd's layers whose
    forward names it `x`; user modules keep Python's own rules."""
    first = _FIRST_IS_X.get(cls)
    if first is None:
        import inspect

        first = False
        fwd = cls.forward
        if getattr(fwd, "__module__", "").startswith("retrograd."):
            params = list(inspect.signature(fwd).parameters.values())[1:]
            first = bool(params) and params[0].name == "x" and \
                all(p.name != "input" for p in params)
        _FIRST_IS_X[cls] = first
    if first and not args:
        kwargs = dict(kwargs)
        args = (kwargs.pop("input"),)
    return args, kwargs
