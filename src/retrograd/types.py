"""`rg.types`: the type aliases of `torch.types`, for annotations in ported code."""

from __future__ import annotations

import os
from typing import IO

from .devices import device as _device_class
from .size import Size
from .tensor import Tensor

__all__ = ["Number", "Device", "FileLike", "Size", "Tensor"]

Number = int | float | bool
"""A Python number (torch.types.Number)."""
Device = _device_class | str | int | None
"""Anything a `device=` argument takes."""
FileLike = str | os.PathLike | IO[bytes]
"""A path or a binary file object, as `rg.save`/`rg.load` take."""
_TensorOrTensors = Tensor | tuple[Tensor, ...] | list[Tensor]
