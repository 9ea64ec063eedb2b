"""`rg.utils.hooks.RemovableHandle`: the handle PyTorch code returns from its own
`register_*_hook` methods, removing the hook from the dict it was stored in."""

from __future__ import annotations

import itertools
import weakref
from typing import Any

__all__ = ["RemovableHandle"]


def _ref(d):
    """A weak reference where the dict allows one (an OrderedDict), else a strong one (a
    plain dict cannot be referenced weakly)."""
    try:
        return weakref.ref(d)
    except TypeError:
        return lambda: d


class RemovableHandle:
    """`RemovableHandle(hooks_dict)`: `handle.id` is a fresh key to store the hook under
    (`hooks_dict[handle.id] = hook`); `remove()` deletes it (also from `extra_dict`),
    and leaving a `with handle:` block does too."""

    _ids = itertools.count()

    def __init__(self, hooks_dict: Any, *, extra_dict: Any = None) -> None:
        self.hooks_dict_ref = _ref(hooks_dict)
        self.id = next(RemovableHandle._ids)
        extras = extra_dict if isinstance(extra_dict, (list, tuple)) else \
            ([] if extra_dict is None else [extra_dict])
        self.extra_dict_ref = tuple(_ref(d) for d in extras)

    def remove(self) -> None:
        """Delete the hook from its dict (and the extra dicts); a second call does nothing."""
        for ref in (self.hooks_dict_ref, *self.extra_dict_ref):
            d = ref()
            if d is not None and self.id in d:
                del d[self.id]

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc) -> None:
        self.remove()
