"""`rg.backends.cudnn`: cuDNN's switches. retrograd does not use cuDNN, so the flags are
kept only so scripts can set and read them; `is_available()` is False."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

enabled: bool = True
benchmark: bool = False
deterministic: bool = False
allow_tf32: bool = True


def is_available() -> bool:
    """Whether cuDNN can be used: never, retrograd's GPU path is CuPy."""
    return False


def version() -> int | None:
    """cuDNN's version, None as it is not used."""
    return None


def set_flags(_enabled: bool | None = None, _benchmark: bool | None = None,
              _benchmark_limit: int | None = None, _deterministic: bool | None = None,
              _allow_tf32: bool | None = None, _fp32_precision: str | None = "none",
              _depthwise_kernel: str | None = None) -> tuple:
    """Set the switches given (None: leave it) and return the previous ones, as
    `torch.backends.cudnn.set_flags` (the precision and kernel choices are accepted and
    kept nowhere: nothing here reads them)."""
    global enabled, benchmark, deterministic, allow_tf32
    orig = (enabled, benchmark, None, deterministic, allow_tf32, "none", None)
    if _enabled is not None:
        enabled = bool(_enabled)
    if _benchmark is not None:
        benchmark = bool(_benchmark)
    if _deterministic is not None:
        deterministic = bool(_deterministic)
    if _allow_tf32 is not None:
        allow_tf32 = bool(_allow_tf32)
    return orig


@contextmanager
def flags(enabled: bool = False, benchmark: bool = False, benchmark_limit: int = 10,
          deterministic: bool = False, allow_tf32: bool = True, fp32_precision: str = "none",
          depthwise_kernel: str = "auto") -> Iterator[None]:
    """Within the block the switches take these values (the defaults turn cuDNN off) and
    then their previous ones again: ESPnet wraps its CTC loss in
    `torch.backends.cudnn.flags(deterministic=True)`."""
    orig = set_flags(enabled, benchmark, benchmark_limit, deterministic, allow_tf32,
                     fp32_precision, depthwise_kernel)
    try:
        yield
    finally:
        set_flags(*orig)
