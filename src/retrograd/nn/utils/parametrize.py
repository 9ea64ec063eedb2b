"""`rg.nn.utils.parametrize`: a parameter or buffer seen through a function.

`register_parametrization(module, "weight", P)` moves `module.weight` to
`module.parametrizations.weight.original` and makes `module.weight` a property
computing `P(original)` on every access (or once per `cached()` block), as
PyTorch does, so the state_dict keys (`parametrizations.weight.original`,
`parametrizations.weight.0._u`, ...) are PyTorch's. Assigning `module.weight = X`
stores `P.right_inverse(X)` in the original.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from contextlib import contextmanager

from ...grad_mode import no_grad
from ...primitive import ArgumentError
from ...tensor import Tensor
from ..containers import ModuleDict, ModuleList
from ..module import Module, Parameter

__all__ = ["cached", "ParametrizationList", "register_parametrization", "is_parametrized",
           "remove_parametrizations", "type_before_parametrizations",
           "transfer_parametrizations_and_params"]

_cache_enabled = 0
_cache: dict = {}


@contextmanager
def cached():
    """Inside this block each parametrized tensor is computed once, at its first use."""
    global _cache_enabled
    _cache_enabled += 1
    try:
        yield
    finally:
        _cache_enabled -= 1
        if not _cache_enabled:
            _cache.clear()


def _register_parameter_or_buffer(module: Module, name: str, x: Tensor) -> None:
    if isinstance(x, Parameter):
        module.register_parameter(name, x)
    else:
        module.register_buffer(name, x)


def _maybe_set(dest: Tensor, src: Tensor) -> None:
    """Give `dest` the values (and shape) of `src`, keeping `dest` the same object."""
    from ..init import _bump

    dest.data = src.data
    _bump(dest)


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor, applied in order, and its `original` (or
    `original0`, `original1`, ... when the first one's right_inverse returns several)."""

    def __init__(self, modules: Sequence[Module], original: Tensor, unsafe: bool = False):
        if len(modules) == 0:
            raise ArgumentError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        original_shape, original_dtype = original.shape, original.dtype
        with no_grad():
            new = original
            for module in reversed(list(self)):
                if hasattr(module, "right_inverse"):
                    try:
                        new = module.right_inverse(new)
                    except NotImplementedError:
                        pass  # as torch's: a right_inverse that cannot invert acts as identity
        if not isinstance(new, (Tensor, Sequence)):
            raise ArgumentError("'right_inverse' must return a Tensor or a Sequence of tensors "
                                f"(list, tuple...). Got {type(new).__name__}")
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            if original.dtype != new.dtype:
                raise ArgumentError("When `right_inverse` outputs one tensor, it may not change "
                                    f"the dtype.\noriginal.dtype: {original.dtype}\n"
                                    f"right_inverse(original).dtype: {new.dtype}")
            if new is not original:
                with no_grad():
                    _maybe_set(original, new)
            _register_parameter_or_buffer(self, "original", original)
        else:
            for i, originali in enumerate(new):
                if not isinstance(originali, Tensor):
                    raise ArgumentError("'right_inverse' must return a Tensor or a Sequence of "
                                        f"tensors (list, tuple...). Got element {i} of the "
                                        f"sequence with type {type(originali).__name__}.")
                if isinstance(original, Parameter):
                    originali = Parameter(originali.detach(), original.requires_grad)
                else:
                    originali = originali.detach()
                    if original.requires_grad:
                        originali.requires_grad_(True)
                _register_parameter_or_buffer(self, f"original{i}", originali)
        if not self.unsafe:
            z = self()
            if not isinstance(z, Tensor):
                raise ArgumentError(f"A parametrization must return a tensor. Got "
                                    f"{type(z).__name__}.")
            if z.dtype != original_dtype:
                raise ArgumentError("Registering a parametrization may not change the dtype of "
                                    f"the tensor, unless `unsafe` flag is enabled.\n"
                                    f"unparametrized dtype: {original_dtype}\n"
                                    f"parametrized dtype: {z.dtype}")
            if z.shape != original_shape:
                raise ArgumentError("Registering a parametrization may not change the shape of "
                                    f"the tensor, unless `unsafe` flag is enabled.\n"
                                    f"unparametrized shape: {original_shape}\n"
                                    f"parametrized shape: {z.shape}")

    def right_inverse(self, value: Tensor) -> None:
        """Set the original(s) so that the parametrized tensor equals `value`."""
        with no_grad():
            for module in reversed(list(self)):
                if hasattr(module, "right_inverse"):
                    value = module.right_inverse(value)
                else:
                    raise RuntimeError(f"parametrization {type(module).__name__} does not "
                                       "implement right_inverse.")
            if self.is_tensor:
                if not isinstance(value, Tensor):
                    raise ArgumentError(f"`right_inverse` should return a tensor. Got "
                                        f"{type(value).__name__}")
                if value.dtype != self.original.dtype:
                    raise ArgumentError(f"The tensor returned by `right_inverse` has dtype "
                                        f"{value.dtype} while `original` has dtype "
                                        f"{self.original.dtype}")
                _maybe_set(self.original, value)
            else:
                if not isinstance(value, Sequence):
                    raise ArgumentError("'right_inverse' must return a sequence of tensors. "
                                        f"Got {type(value).__name__}.")
                if len(value) != self.ntensors:
                    raise ArgumentError("'right_inverse' must return a sequence of tensors of "
                                        f"length {self.ntensors}. Got a sequence of length "
                                        f"{len(value)}.")
                for i, t in enumerate(value):
                    _maybe_set(getattr(self, f"original{i}"), t)

    def forward(self) -> Tensor:
        """The parametrized tensor: the parametrizations applied to the original(s)."""
        mods = list(self)
        if self.is_tensor:
            x = mods[0](self.original)
        else:
            x = mods[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for m in mods[1:]:
            x = m(x)
        return x


def _inject_new_class(module: Module) -> None:
    """Give `module` a class of its own (`Parametrized<Name>`) to hold the properties."""
    cls = module.__class__

    def default_deepcopy(self, memo):
        obj = memo.get(id(self))
        if obj is not None:
            return obj
        replica = self.__new__(self.__class__)
        memo[id(self)] = replica
        replica.__dict__ = copy.deepcopy(self.__dict__, memo)
        return replica

    def getstate(self):
        raise RuntimeError("Serialization of parametrized modules is only supported through "
                           "state_dict().")

    dct = {"__getstate__": getstate}  # as torch: pickling the module itself is refused
    if not hasattr(cls, "__deepcopy__"):
        dct["__deepcopy__"] = default_deepcopy
    param_cls = type(f"Parametrized{cls.__name__}", (cls,), dct)
    module.__class__ = param_cls


def _inject_property(module: Module, tensor_name: str) -> None:
    def get_parametrized(self) -> Tensor:
        parametrization = self.parametrizations[tensor_name]
        if _cache_enabled:
            key = (id(self), tensor_name)
            tensor = _cache.get(key)
            if tensor is None:
                tensor = parametrization()
                _cache[key] = tensor
            return tensor
        return parametrization()

    def set_original(self, value: Tensor) -> None:
        self.parametrizations[tensor_name].right_inverse(value)

    setattr(module.__class__, tensor_name, property(get_parametrized, set_original))


def is_parametrized(module: Module, tensor_name: str | None = None) -> bool:
    """Whether `module` has any parametrization (or one on `tensor_name`)."""
    parametrizations = module.__dict__.get("parametrizations")
    if parametrizations is None or not isinstance(parametrizations, ModuleDict):
        return False
    if tensor_name is None:
        return len(parametrizations) > 0
    return tensor_name in parametrizations


def register_parametrization(module: Module, tensor_name: str, parametrization: Module, *,
                             unsafe: bool = False) -> Module:
    """Make `module.<tensor_name>` be `parametrization(original)`; a second registration on
    the same name chains after the first."""
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            y = getattr(module, tensor_name)
            x = parametrization(y)
            if not isinstance(x, Tensor):
                raise ArgumentError(f"A parametrization must return a tensor. Got "
                                    f"{type(x).__name__}.")
            if x.dtype != y.dtype:
                raise ArgumentError("Registering a parametrization may not change the dtype of "
                                    f"the tensor, unless the `unsafe` flag is enabled.\n"
                                    f"module.{tensor_name}.dtype: {y.dtype}\n"
                                    f"parametrization(module.{tensor_name}).dtype: {x.dtype}")
            if x.shape != y.shape:
                raise ArgumentError("Registering a parametrization may not change the shape of "
                                    f"the tensor, unless the `unsafe` flag is enabled.\n"
                                    f"module.{tensor_name}.shape: {y.shape}\n"
                                    f"parametrization(module.{tensor_name}).shape: {x.shape}")
        module.parametrizations[tensor_name].append(parametrization)
        module.parametrizations[tensor_name].unsafe |= unsafe
    elif tensor_name in module._buffers or tensor_name in module._parameters:
        original = getattr(module, tensor_name)
        parametrizations = ParametrizationList([parametrization], original, unsafe=unsafe)
        delattr(module, tensor_name)
        if not is_parametrized(module):
            _inject_new_class(module)
            module.parametrizations = ModuleDict()
        _inject_property(module, tensor_name)
        module.parametrizations[tensor_name] = parametrizations
    else:
        raise ArgumentError(f"Module '{module}' does not have a parameter, a buffer, or a "
                            f"parametrized element with name '{tensor_name}'")
    return module


def remove_parametrizations(module: Module, tensor_name: str,
                            leave_parametrized: bool = True) -> Module:
    """Undo the parametrizations on `tensor_name`: it becomes a plain parameter (or buffer)
    again, holding the parametrized value (or the original, with leave_parametrized=False)."""
    if not is_parametrized(module, tensor_name):
        raise ArgumentError(f"Module {module} does not have a parametrization on {tensor_name}")
    parametrizations = module.parametrizations[tensor_name]
    if parametrizations.is_tensor:
        original = parametrizations.original
        if leave_parametrized:
            with no_grad():
                t = getattr(module, tensor_name)
                _maybe_set(original, t)
    else:
        if not leave_parametrized:
            raise ArgumentError("Cannot leave unparametrized (`leave_parametrized=False`) a tensor "
                                "that is parametrized in terms of a sequence of tensors.")
        t = getattr(module, tensor_name)
        original = Parameter(t.detach(), True) if t.requires_grad else t.detach()
    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    _register_parameter_or_buffer(module, tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = module.__class__.__bases__[0]
    return module


def type_before_parametrizations(module: Module) -> type:
    """The module's class before any parametrization was registered."""
    if is_parametrized(module):
        return module.__class__.__bases__[0]
    return type(module)


def transfer_parametrizations_and_params(from_module: Module, to_module: Module,
                                         tensor_name: str | None = None) -> Module:
    """Register on `to_module` the parametrizations of `from_module` (all, or those of
    `tensor_name`), sharing their `original` tensors (the same objects, as in PyTorch), and
    creating the parameter on `to_module` first where it lacks it. Returns `to_module`."""
    if not is_parametrized(from_module):
        return to_module
    names = list(from_module.parametrizations) if tensor_name is None else [tensor_name]
    for name in names:
        plist = from_module.parametrizations[name]
        if not hasattr(to_module, name):
            setattr(to_module, name, Parameter(getattr(from_module, name)))
        for func in plist:
            register_parametrization(to_module, name, func)
        target = to_module.parametrizations[name]
        if "original" in plist._parameters or "original" in plist._buffers:
            target.original = plist.original
        else:
            num = 0
            while hasattr(plist, f"original{num}"):
                setattr(target, f"original{num}", getattr(plist, f"original{num}"))
                num += 1
    return to_module
