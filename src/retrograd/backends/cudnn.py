"""`rg.backends.cudnn`: cuDNN's switches. retrograd does not use cuDNN, so the flags are
kept only so scripts can set and read them; `is_available()` is False."""

from __future__ import annotations

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
