"""Modules that hold other modules: `Sequential` (applied in order) and `ModuleList`."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping

from .module import Module

__all__ = ["Sequential", "ModuleList"]

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

    def forward(self, x):
        for m in self._modules.values():
            # straight to forward() unless a subclass changed __call__: one call less per layer
            x = m.forward(x) if m.__class__.__call__ is _CALL else m(x)
        return x

    def __getitem__(self, idx):
        items = list(self._modules.items())
        if isinstance(idx, slice):
            return Sequential(OrderedDict(items[idx]))
        try:
            return items[idx][1]
        except (IndexError, TypeError):
            raise IndexError(f"index {idx!r} is out of range for a Sequential of "
                             f"{len(items)} modules") from None


class ModuleList(_ModuleSequence):
    """A list of modules whose parameters are registered (`0`, `1`, ...)."""

    def __init__(self, modules: Iterable[Module] | None = None) -> None:
        super().__init__()
        for m in modules or ():
            self.append(m)

    def extend(self, modules: Iterable[Module]) -> ModuleList:
        for m in modules:
            self.append(m)
        return self

    def __getitem__(self, idx):
        items = list(self._modules.values())
        if isinstance(idx, slice):
            return ModuleList(items[idx])
        return items[idx]
