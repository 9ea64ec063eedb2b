"""Where the samplers' random numbers come from: a `generator=` of the caller's (a
`numpy.random.Generator`), or else retrograd's global generator, which `rg.manual_seed`
seeds."""

from __future__ import annotations

import numpy as np

from ... import creation


def rng(generator) -> np.random.Generator:
    """The generator to draw from; anything but None or a NumPy Generator is refused."""
    if generator is None:
        return creation.generator()
    if isinstance(generator, np.random.Generator):
        return generator
    raise TypeError("generator must be None or a numpy.random.Generator (retrograd has no "
                    f"Generator class of its own), got {type(generator).__name__}")
