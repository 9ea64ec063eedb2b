"""Where the samplers' random numbers come from: a `generator=` of the caller's (an
`rg.Generator` or a `numpy.random.Generator`), or else retrograd's global generator,
which `rg.manual_seed` seeds."""

from __future__ import annotations

import numpy as np

from ... import creation
from ...generator import numpy_generator


def rng(generator) -> np.random.Generator:
    """The generator to draw from: the global one, an rg.Generator's, or a NumPy one."""
    return numpy_generator(generator, creation.generator)
