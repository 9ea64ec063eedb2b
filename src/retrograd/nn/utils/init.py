"""`skip_init`: build a module without spending time (or random numbers) on initialising
its parameters."""

from __future__ import annotations

import inspect

from ... import creation

__all__ = ["skip_init"]


def skip_init(module_cls, *args, **kwargs):
    """`module_cls(*args, **kwargs)` with its parameters left uninitialised, as PyTorch's.

    PyTorch builds the module on the meta device; retrograd's layers take no `device`
    argument, so it builds the module on the host and puts the global generator back
    to its state before, so no random number is used up; `device=` moves it afterwards.
    """
    if not inspect.isclass(module_cls):
        raise TypeError(f"skip_init: module_cls must be a Module class, got "
                        f"{type(module_cls).__name__} instance {module_cls!r}")
    from ..module import Module

    if not issubclass(module_cls, Module):
        raise RuntimeError(f"Expected a Module; got {module_cls!r}")
    device = kwargs.pop("device", None)
    if "device" in inspect.signature(module_cls).parameters:
        kwargs["device"] = device
        device = None
    gen = creation._rng[0]
    saved = gen.bit_generator.state
    try:
        module = module_cls(*args, **kwargs)
    finally:
        gen.bit_generator.state = saved
    return module if device is None else module.to(device)
