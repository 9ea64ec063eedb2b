"""`rg.accelerator`: the device-agnostic questions PyTorch code asks before choosing a device.

Scripts written for PyTorch 2.6+ open with
`torch.accelerator.current_accelerator() if torch.accelerator.is_available() else "cpu"`;
here the only accelerator is CUDA through CuPy (`rg.cuda`), so every answer comes from it.
"""

from __future__ import annotations

from contextlib import contextmanager

from . import cuda
from .devices import device

__all__ = ["is_available", "current_accelerator", "device_count", "current_device_index",
           "current_device_idx", "set_device_index", "set_device_idx", "synchronize",
           "device_index"]


def is_available() -> bool:
    """Whether an accelerator (a CUDA GPU through CuPy) can be used."""
    return cuda.is_available()


def current_accelerator(check_available: bool = False) -> device | None:
    """The accelerator's device type (`device("cuda")`), or None when there is none."""
    return device("cuda") if cuda.is_available() else None


def device_count() -> int:
    """How many accelerator devices there are (0 without one)."""
    return cuda.device_count()


def _require() -> None:
    if not cuda.is_available():
        raise RuntimeError("Cannot access accelerator device when none is available.")


def current_device_index() -> int:
    """The index of the accelerator device in use; RuntimeError without one, as in PyTorch."""
    _require()
    return cuda.current_device()


current_device_idx = current_device_index


def set_device_index(device, /) -> None:
    """Choose the accelerator device; only index 0 (or the bare type) is supported here."""
    _require()
    idx = device if isinstance(device, int) else getattr(device, "index", None)
    if idx not in (None, 0, -1):
        raise RuntimeError(f"set_device_index: only device 0 is supported, got {device!r}")


set_device_idx = set_device_index


def synchronize(device=None, /) -> None:
    """Wait for queued work on the accelerator; RuntimeError without one, as in PyTorch."""
    _require()
    cuda.synchronize()


@contextmanager
def device_index(device, /):
    """Context manager selecting an accelerator device; None means no change."""
    if device is not None:
        set_device_index(device)
    yield
