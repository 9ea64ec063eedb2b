"""`rg.backends.mps`: Apple's Metal backend, which retrograd does not have."""

from __future__ import annotations


def is_available() -> bool:
    """Whether the MPS device can be used: never here."""
    return False


def is_built() -> bool:
    """Whether retrograd was built with MPS: never."""
    return False
