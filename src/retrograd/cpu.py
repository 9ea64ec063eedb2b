"""`rg.cpu`: `torch.cpu`'s names, so device-agnostic code that asks about the CPU
(`torch.cpu.is_available()`, `torch.cpu.amp.autocast`, `torch.cpu.synchronize()`) runs.

The CPU is always there, one device, and every operation has finished when it returns,
so the stream and synchronisation names do nothing.
"""

from __future__ import annotations

import contextlib
import sys
import types

from .amp import GradScaler, autocast, custom_bwd, custom_fwd

__all__ = ["amp", "is_available", "device_count", "current_device", "set_device",
           "synchronize", "is_initialized", "current_stream", "stream", "Stream", "Event"]


def is_available() -> bool:
    """`torch.cpu.is_available()`: always True."""
    return True


def is_initialized() -> bool:
    """`torch.cpu.is_initialized()`: always True."""
    return True


def device_count() -> int:
    """`torch.cpu.device_count()`: one CPU device."""
    return 1


def current_device() -> str:
    """`torch.cpu.current_device()`: 'cpu'."""
    return "cpu"


def set_device(device) -> None:
    """`torch.cpu.set_device`: nothing to choose; accepted and ignored, as in torch."""


def synchronize(device=None) -> None:
    """`torch.cpu.synchronize()`: CPU work is finished when each call returns."""


class Stream:
    """`torch.cpu.Stream`: the CPU runs one stream; waiting on it returns at once."""

    def __init__(self, priority: int = -1) -> None:
        self.priority = priority

    def wait_stream(self, stream) -> None:
        return None

    def synchronize(self) -> None:
        return None

    def query(self) -> bool:
        return True


class Event:
    """`torch.cpu.Event`: every event has happened when it is recorded."""

    def record(self, stream=None) -> None:
        return None

    def synchronize(self) -> None:
        return None

    def query(self) -> bool:
        return True

    def wait(self, stream=None) -> None:
        return None


_STREAM = Stream()


def current_stream(device=None) -> Stream:
    """`torch.cpu.current_stream()`: the one CPU stream."""
    return _STREAM


def stream(stream) -> contextlib.AbstractContextManager:
    """`torch.cpu.stream(s)`: a context that changes nothing."""
    return contextlib.nullcontext()


class _CpuAutocast(autocast):
    """`torch.cpu.amp.autocast(enabled=True, dtype=bfloat16, cache_enabled=True)`."""

    def __init__(self, enabled: bool = True, dtype=None, cache_enabled: bool = True) -> None:
        super().__init__("cpu", dtype="bfloat16" if dtype is None else dtype,
                         enabled=enabled, cache_enabled=cache_enabled)


class _CpuGradScaler(GradScaler):
    """`torch.cpu.amp.GradScaler(...)`: GradScaler("cpu", ...)."""

    def __init__(self, init_scale: float = 2.0 ** 16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000,
                 enabled: bool = True) -> None:
        super().__init__("cpu", init_scale, growth_factor, backoff_factor, growth_interval,
                         enabled)


# a module object under its dotted name, so `from torch.cpu.amp import autocast` imports
amp = types.ModuleType("retrograd.cpu.amp", "torch.cpu.amp's names: autocast and GradScaler "
                       "on device 'cpu', custom_fwd and custom_bwd.")
amp.autocast = _CpuAutocast
amp.GradScaler = _CpuGradScaler
amp.custom_fwd = custom_fwd
amp.custom_bwd = custom_bwd
sys.modules.setdefault(amp.__name__, amp)
