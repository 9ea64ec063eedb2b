"""`rg.utils.weak`: PyTorch's `torch.utils.weak`, weak references that compare by identity.
A tensor's `==` is elementwise, so a `weakref.WeakKeyDictionary` cannot hold tensors as
keys; these can:

- `WeakIdRef(obj)`: a weak reference hashed by `id(obj)` (kept after obj dies) and equal to
  another while both are alive and point to the same object (after that, only to itself);
- `WeakIdKeyDictionary` (also named `WeakTensorKeyDictionary`): a mapping whose keys are
  held weakly and told apart by identity; an entry goes when its key dies;
- `TensorWeakRef(t)`: a weak reference to a tensor, `.ref` the plain one, called for the
  tensor or None.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator, MutableMapping

from ..tensor import Tensor

__all__ = ["TensorWeakRef", "WeakIdRef", "WeakIdKeyDictionary", "WeakTensorKeyDictionary"]

ref = weakref.ref


class WeakIdRef(weakref.ref):
    """A weak reference compared by the identity of its referent (see the module)."""

    __slots__ = ("_id",)

    def __new__(cls, obj, callback=None):
        self = super().__new__(cls, obj, callback)
        self._id = id(obj)
        return self

    def __init__(self, obj, callback=None) -> None:
        super().__init__(obj, callback)

    def __hash__(self) -> int:
        return self._id

    def __eq__(self, other) -> bool:
        if not isinstance(other, WeakIdRef):
            return NotImplemented
        mine, theirs = self(), other()
        if mine is None or theirs is None:
            return self is other
        return mine is theirs

    def __ne__(self, other) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq


class WeakIdKeyDictionary(MutableMapping):
    """A dict whose keys are held weakly and compared by identity (see the module);
    `ref_type` is the reference class its keys are wrapped in."""

    def __init__(self, dict=None, ref_type: type = WeakIdRef) -> None:  # noqa: A002
        self._entries: dict = {}
        self._ref_type = ref_type
        owner = weakref.ref(self)

        def drop(key_ref) -> None:  # the key died: forget its entry (if the mapping lives)
            mapping = owner()
            if mapping is not None:
                mapping._entries.pop(key_ref, None)

        self._drop = drop
        if dict is not None:
            self.update(dict)

    def _key(self, key):
        return self._ref_type(key)

    def __getitem__(self, key):
        return self._entries[self._key(key)]

    def __setitem__(self, key, value) -> None:
        self._entries[self._ref_type(key, self._drop)] = value

    def __delitem__(self, key) -> None:
        del self._entries[self._key(key)]

    def __contains__(self, key) -> bool:
        try:
            r = self._key(key)
        except TypeError:  # an object that cannot be referenced weakly is never a key
            return False
        return r in self._entries

    def __iter__(self) -> Iterator:
        for r in list(self._entries):
            obj = r()
            if obj is not None:
                yield obj

    def __len__(self) -> int:
        return sum(1 for r in list(self._entries) if r() is not None)

    def copy(self) -> WeakIdKeyDictionary:
        """A new mapping with the same live entries."""
        new = type(self)(ref_type=self._ref_type)
        new.update(self.items())
        return new

    __copy__ = copy

    def __repr__(self) -> str:
        return f"<{type(self).__name__} at {id(self):#x}>"


WeakTensorKeyDictionary = WeakIdKeyDictionary


class TensorWeakRef:
    """A weak reference to a tensor: `.ref` the plain weak reference; calling it gives the
    tensor, or None once it is gone."""

    __slots__ = ("ref",)

    def __init__(self, tensor: Tensor) -> None:
        assert isinstance(tensor, Tensor), f"expected rg.Tensor, got {type(tensor)}."
        self.ref = weakref.ref(tensor)

    def __call__(self) -> Tensor | None:
        return self.ref()
