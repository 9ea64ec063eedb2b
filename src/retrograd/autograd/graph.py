"""`rg.autograd.graph`: `save_on_cpu`, a context manager that changes nothing here.

PyTorch's `save_on_cpu` moves the tensors that backward needs to host memory. The
values, and so every gradient, are the same either way, so retrograd accepts it and
keeps saved values where they are. `saved_tensors_hooks` (user pack/unpack functions
around each saved tensor) is not provided: the engine stores raw arrays for its
rules and has no place to call them.
"""

from __future__ import annotations

__all__ = ["save_on_cpu"]


class save_on_cpu:
    """Accepted for `torch.autograd.graph.save_on_cpu(pin_memory, device_type)`; saved
    values stay where they are (results are identical)."""

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda") -> None:
        self.pin_memory, self.device_type = pin_memory, device_type

    def __enter__(self) -> save_on_cpu:
        return self

    def __exit__(self, *exc) -> None:
        pass
