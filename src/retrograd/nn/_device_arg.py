"""PyTorch's `device=` argument of layer constructors (`nn.Linear(4, 2, device=dev)`).

Layers take `device` where PyTorch does (just before `dtype`, so positional calls line
up) and build their parameters on the host; `accept_device` wraps each such `__init__`
so that, when a device is given, the finished layer is moved there with `.to(device)`.
"""

from __future__ import annotations

import functools
import inspect


def _wrap(init):
    sig = inspect.signature(init)

    @functools.wraps(init)
    def __init__(self, *args, **kwargs):
        init(self, *args, **kwargs)
        device = sig.bind(self, *args, **kwargs).arguments.get("device")
        if device is not None:
            self.to(device)

    __init__._moves_to_device = True
    return __init__


def accept_device(classes) -> None:
    """Wrap the `__init__` of every class (and base) in `classes` that takes `device`."""
    for cls in classes:
        for base in cls.__mro__:
            init = base.__dict__.get("__init__")
            if init is None or getattr(init, "_moves_to_device", False) or \
                    not base.__module__.startswith("retrograd."):
                continue
            try:
                params = inspect.signature(init).parameters
            except (TypeError, ValueError):
                continue
            if "device" in params:
                base.__init__ = _wrap(init)
