"""Containers: `Sequential` (applied in order), `ModuleList`, `ModuleDict`, and
`ParameterList`/`ParameterDict`, which register the parameters they hold."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping

from ..tensor import Tensor
from . import hooks as _hooks
from .module import Module, Parameter

__all__ = ["Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"]

_CALL = Module.__call__


class _ModuleSequence(Module):
    """What Sequential and ModuleList share: length, iteration and append."""

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def append(self, module: Module):
        self.add_module(str(len(self._modules)), module)
        return self

    def _key(self, idx) -> str:
        keys = list(self._modules)
        if isinstance(idx, bool) or not isinstance(idx, int):
            raise TypeError(f"{type(self).__name__} indices must be integers or slices, not "
                            f"{type(idx).__name__}")
        if not -len(keys) <= idx < len(keys):
            raise IndexError(f"index {idx} is out of range for a {type(self).__name__} of "
                             f"{len(keys)} modules")
        return keys[idx % len(keys)]

    def extend(self, modules: Iterable[Module]):
        """Append each of `modules` (Sequential's and ModuleList's `extend`, PyTorch's)."""
        for m in modules:
            self.append(m)
        return self

    __iadd__ = extend

    def insert(self, index: int, module: Module) -> None:
        """Put `module` before position `index` (the rest renumbered), as list.insert."""
        items = list(self._modules.values())
        items.insert(index, module)
        for k in list(self._modules):
            delattr(self, k)
        for i, m in enumerate(items):
            self.add_module(str(i), m)

    def pop(self, key: int = -1) -> Module:
        """Remove and return the module at `key` (the rest renumbered)."""
        m = self[key]
        del self[key]
        return m

    def __setitem__(self, idx: int, module: Module) -> None:
        """Replace the module at position `idx` (`model[2] = nn.Linear(8, 10)`)."""
        self.add_module(self._key(idx), module)

    def __delitem__(self, idx) -> None:
        """Remove the module(s) at `idx` (an int or a slice); the rest are renumbered
        0, 1, ..., as in PyTorch."""
        keys = list(self._modules)[idx] if isinstance(idx, slice) else [self._key(idx)]
        for k in keys:
            delattr(self, k)
        rest = list(self._modules.values())
        for k in list(self._modules):
            delattr(self, k)
        for i, m in enumerate(rest):
            self.add_module(str(i), m)


class Sequential(_ModuleSequence):
    """Modules applied one after another; registered as `0`, `1`, ... (or by the given names)."""

    def __init__(self, *args: Module) -> None:
        super().__init__()
        if len(args) == 1 and isinstance(args[0], Mapping):
            for name, m in args[0].items():
                self.add_module(name, m)
        else:
            for i, m in enumerate(args):
                self.add_module(str(i), m)

    def forward(self, input):
        if _hooks.GLOBAL_CALL_HOOKS:  # global hooks see every layer's call
            for m in self._modules.values():
                input = m(input)
            return input
        for m in self._modules.values():
            # straight to forward() unless a subclass changed __call__: one call less per layer
            input = m.forward(input) if m.__class__.__call__ is _CALL else m(input)
        return input

    def __getitem__(self, idx):
        items = list(self._modules.items())
        if isinstance(idx, slice):
            return Sequential(OrderedDict(items[idx]))
        try:
            return items[idx][1]
        except (IndexError, TypeError):
            raise IndexError(f"index {idx!r} is out of range for a Sequential of "
                             f"{len(items)} modules") from None

    def __add__(self, other: Sequential) -> Sequential:
        """A new Sequential of this one's modules then `other`'s, as in PyTorch."""
        return Sequential(*self, *other)

    def __mul__(self, other: int) -> Sequential:
        """A new Sequential of this one's modules `other` times over (the same modules, as
        in PyTorch: their parameters are shared)."""
        if not isinstance(other, int) or isinstance(other, bool):
            raise TypeError(f"unsupported operand type(s) for *: {type(self)} and {type(other)}")
        if other <= 0:
            raise ValueError(f"Non-positive multiplication factor {other} for {type(self)}")
        return Sequential(*(list(self) * other))

    __rmul__ = __mul__


class ModuleList(_ModuleSequence):
    """A list of modules whose parameters are registered (`0`, `1`, ...)."""

    def __repr__(self) -> str:
        """As torch prints it: a run of equal entries collapses to `(i-j): n x repr`."""
        runs: list[list] = []  # [first index, last index, repr]
        for i, m in enumerate(self._modules.values()):
            r = repr(m)
            if runs and runs[-1][2] == r:
                runs[-1][1] = i
            else:
                runs.append([i, i, r])
        if not runs:
            return f"{type(self).__name__}()"
        lines = [(f"({a}): {r}" if a == b else f"({a}-{b}): {b - a + 1} x {r}")
                 .replace("\n", "\n  ") for a, b, r in runs]
        return f"{type(self).__name__}(\n  " + "\n  ".join(lines) + "\n)"

    def __init__(self, modules: Iterable[Module] | None = None) -> None:
        super().__init__()
        for m in modules or ():
            self.append(m)

    def __getitem__(self, idx):
        items = list(self._modules.values())
        if isinstance(idx, slice):
            return ModuleList(items[idx])
        return items[idx]

    def __add__(self, other: Iterable[Module]) -> ModuleList:
        """A new ModuleList of this one's modules then `other`'s, as in PyTorch."""
        return ModuleList([*self, *other])


class ModuleDict(Module):
    """Modules by name (insertion order), registered under those names."""

    def __init__(self, modules: Mapping[str, Module] | Iterable | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        del self._modules[key]  # (the registry drops the attribute too)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __contains__(self, key: str) -> bool:
        return key in self._modules

    def keys(self):
        return self._modules.keys()

    def items(self):
        return self._modules.items()

    def values(self):
        return self._modules.values()

    def pop(self, key: str) -> Module:
        m = self._modules[key]
        del self[key]
        return m

    def clear(self) -> None:
        for k in list(self._modules):
            del self[k]

    def update(self, modules) -> None:
        items = modules.items() if isinstance(modules, Mapping) else modules
        for k, m in items:
            self[k] = m


def _as_parameter(value) -> Parameter:
    if isinstance(value, Parameter):
        return value
    if isinstance(value, Tensor):
        return Parameter(value)
    raise TypeError(f"a parameter container holds Parameters (or Tensors, which become "
                    f"Parameters), got {type(value).__name__}")


class ParameterList(Module):
    """A list of parameters, registered as `0`, `1`, ..."""

    def __init__(self, values: Iterable | None = None) -> None:
        super().__init__()
        for v in values or ():
            self.append(v)

    def __len__(self) -> int:
        return len(self._parameters)

    def __iter__(self) -> Iterator[Parameter]:
        return iter(self._parameters.values())

    def __getitem__(self, idx):
        items = list(self._parameters.values())
        if isinstance(idx, slice):
            return ParameterList(items[idx])
        return items[idx]

    def __setitem__(self, idx: int, value) -> None:
        n = len(self)
        if not -n <= idx < n:
            raise IndexError(f"index {idx} is out of range for a ParameterList of {n}")
        self.register_parameter(str(idx % n), _as_parameter(value))

    def append(self, value) -> ParameterList:
        self.register_parameter(str(len(self)), _as_parameter(value))
        return self

    def extend(self, values: Iterable) -> ParameterList:
        for v in values:
            self.append(v)
        return self

    def extra_repr(self) -> str:
        return "\n".join(f"({i}): Parameter containing: [{p.dtype} of size {p.shape}]"
                         for i, p in enumerate(self))


class ParameterDict(Module):
    """Parameters by name (insertion order), registered under those names."""

    def __init__(self, parameters=None) -> None:
        super().__init__()
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key: str) -> Parameter:
        return self._parameters[key]

    def __setitem__(self, key: str, value) -> None:
        self.register_parameter(key, _as_parameter(value))

    def __delitem__(self, key: str) -> None:
        del self._parameters[key]  # (the registry drops the attribute too)

    def __len__(self) -> int:
        return len(self._parameters)

    def __iter__(self) -> Iterator[str]:
        return iter(self._parameters)

    def __contains__(self, key: str) -> bool:
        return key in self._parameters

    def keys(self):
        return self._parameters.keys()

    def items(self):
        return self._parameters.items()

    def values(self):
        return self._parameters.values()

    def update(self, parameters) -> None:
        """Add or replace entries: an OrderedDict's, a ParameterDict's or pairs' in their
        order, a plain dict's by sorted key (PyTorch's rule)."""
        if isinstance(parameters, (OrderedDict, ParameterDict)):
            items = parameters.items()
        elif isinstance(parameters, Mapping):
            items = sorted(parameters.items())
        else:
            items = parameters
        for k, v in items:
            self[k] = v

    def get(self, key: str, default=None):
        return self._parameters.get(key, default)

    def pop(self, key: str) -> Parameter:
        v = self._parameters[key]
        del self[key]
        return v

    def setdefault(self, key: str, default=None) -> Parameter:
        if key not in self:
            self[key] = default
        return self[key]

    def clear(self) -> None:
        for k in list(self._parameters):
            del self[k]

    def extra_repr(self) -> str:
        return "\n".join(f"({k}): Parameter containing: [{p.dtype} of size {tuple(p.shape)}]"
                         for k, p in self._parameters.items() if p is not None)
