"""Exceptions for bad arguments, PyTorch's way.

PyTorch raises RuntimeError (or NotImplementedError, one of its subclasses) for
problems that Python would call a TypeError or a ValueError. Each class here is
both, so `except RuntimeError` in ported code and `except TypeError` /
`except ValueError` in Python code catch the same error.
"""

from __future__ import annotations


class DtypeError(TypeError, NotImplementedError):
    """A dtype the operation does not support, or a result that cannot be written into
    a tensor of a lower category (PyTorch: RuntimeError or NotImplementedError)."""


class ShapeError(ValueError, RuntimeError):
    """Shapes that do not broadcast, or do not fit the operation (PyTorch: RuntimeError)."""


class ArgumentError(ValueError, RuntimeError):
    """An argument out of its range: a negative standard deviation, a probability
    outside [0, 1], an empty input without an identity ... (PyTorch: RuntimeError)."""


class ArgumentTypeError(TypeError, RuntimeError):
    """An argument of the wrong kind where PyTorch raises RuntimeError (a float thread
    count, a bool alpha for a numeric result)."""


ArgumentDtypeError = DtypeError  # the names the first users of this module gave them
ArgumentValueError = ArgumentError
