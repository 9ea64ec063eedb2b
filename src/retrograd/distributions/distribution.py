"""The base class of `rg.distributions` and the checks behind `validate_args`.

A distribution holds its parameters as tensors broadcast to one batch shape;
`log_prob`, `cdf`, `entropy`, `mean`, ... are compositions of differentiable ops,
so gradients flow to parameters and values in both modes and to every order.
`rsample` draws with the reparameterisation trick (differentiable in the
parameters); `sample` draws without a graph. Draws come from retrograd's global
generator, so `rg.manual_seed` makes them reproducible.
"""

from __future__ import annotations

import numpy as np

from ..api._args import _t
from ..dtypes import get_default_dtype
from ..grad_mode import no_grad
from ..primitive import ArgumentError, ShapeError
from ..tensor import Tensor

_VALIDATE_DEFAULT = [True]


def _shape(sample_shape) -> tuple:
    if isinstance(sample_shape, (int, np.integer)):
        return (int(sample_shape),)
    return tuple(int(s) for s in sample_shape)


def refuse_no_samples(n: int) -> None:
    """PyTorch's categorical draws (Categorical, OneHotCategorical, Multinomial) go
    through `torch.multinomial`, which refuses to draw zero samples: a `sample_shape`
    with a 0 (or a Multinomial of total_count 0) raises RuntimeError there, not an
    empty result."""
    if n <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")


def broadcast_all(*values) -> tuple:
    """The parameters as floating tensors of one dtype, broadcast to one shape (Python
    numbers take the tensors' dtype, or the default dtype when there is no tensor)."""
    tensors = [v for v in values if isinstance(v, Tensor)]
    floats = [t.data.dtype for t in tensors if t.data.dtype.kind == "f"]
    dtype = np.result_type(*floats) if floats else np.dtype(get_default_dtype())
    out = []
    for v in values:
        t = _t(v) if isinstance(v, Tensor) else Tensor(np.asarray(v, dtype=dtype))
        out.append(t if t.data.dtype == dtype else t.to(dtype))
    try:
        shape = np.broadcast_shapes(*(t.shape for t in out))
    except ValueError:  # a RuntimeError too, as torch's broadcast_tensors raises
        raise ShapeError(f"distribution parameters of shapes "
                         f"{', '.join(str(tuple(t.shape)) for t in out)} do not broadcast "
                         f"to one shape") from None
    return tuple(t if t.shape == shape else t.expand(*shape) for t in out)


class Distribution:
    """PyTorch's `torch.distributions.Distribution`: shapes, validation, sampling."""

    has_rsample = False
    has_enumerate_support = False
    arg_constraints: dict = {}
    support = None
    _validate_args = False

    def __init__(self, batch_shape=(), event_shape=(), validate_args: bool | None = None):
        self._batch_shape = tuple(batch_shape)
        self._event_shape = tuple(event_shape)
        self._validate_args = _VALIDATE_DEFAULT[0] if validate_args is None else \
            bool(validate_args)
        if self._validate_args:
            for name, constraint in self.arg_constraints.items():
                if name not in self.__dict__ and name not in ("probs", "logits"):
                    continue
                value = self.__dict__.get(name)
                if value is None:
                    continue
                constraint.check_param(value, name, self)

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        """Whether distributions check their parameters and values by default."""
        _VALIDATE_DEFAULT[0] = bool(value)

    @property
    def batch_shape(self) -> tuple:
        return self._batch_shape

    @property
    def event_shape(self) -> tuple:
        return self._event_shape

    def _extended_shape(self, sample_shape=()) -> tuple:
        shape = _shape(sample_shape) + self._batch_shape + self._event_shape
        if any(s < 0 for s in shape):  # torch's RuntimeError, not NumPy's ValueError alone
            raise ArgumentError(f"Trying to create tensor with negative dimension: sample "
                                f"shape {tuple(_shape(sample_shape))}, full shape {shape}")
        return shape

    def expand(self, batch_shape, _instance=None):
        """The distribution with its batch dimensions broadcast to `batch_shape` (parameters
        are expanded views: no copy, gradients flow back to the originals)."""
        import copy

        batch_shape = _shape(batch_shape)
        try:
            np.broadcast_shapes(self._batch_shape, batch_shape)
        except ValueError:
            raise ArgumentError(f"{type(self).__name__}.expand: batch_shape {batch_shape} is not "
                                f"compatible with the batch shape {self._batch_shape}") from None
        if np.broadcast_shapes(self._batch_shape, batch_shape) != batch_shape:
            raise ArgumentError(f"{type(self).__name__}.expand: batch_shape {batch_shape} is not "
                                f"compatible with the batch shape {self._batch_shape}")
        new = copy.copy(self)
        nb = len(self._batch_shape)
        for key, value in list(self.__dict__.items()):
            if isinstance(value, Tensor) and tuple(value.shape[:nb]) == self._batch_shape:
                new.__dict__[key] = value.expand(*(batch_shape + tuple(value.shape[nb:])))
        new._batch_shape = batch_shape
        return new

    def _dtype(self) -> np.dtype:
        return next(v.data.dtype for v in self.__dict__.values() if isinstance(v, Tensor)
                    and v.data.dtype.kind == "f")

    def sample(self, sample_shape=()) -> Tensor:
        """A draw of shape sample_shape + batch_shape + event_shape, outside any graph."""
        with no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=()) -> Tensor:
        """A reparameterised draw, differentiable in the parameters."""
        raise NotImplementedError(f"{type(self).__name__} does not support rsample "
                                  "(its samples are not reparameterisable here); use sample()")

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """Every value of a discrete support along a new leading dimension."""
        raise NotImplementedError(f"{type(self).__name__} has no enumerate_support")

    def _get_checked_instance(self, cls, _instance=None):
        """A bare instance of `cls` for `expand` (torch's helper for subclasses)."""
        if _instance is None and type(self).__init__ != cls.__init__:
            raise NotImplementedError(f"Subclass {type(self).__name__} of {cls.__name__} "
                                      "that defines a custom __init__ method must also "
                                      "define a custom .expand() method.")
        return self.__new__(type(self)) if _instance is None else _instance

    def sample_n(self, n: int) -> Tensor:
        return self.sample((n,))

    def log_prob(self, value) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} has no log_prob")

    def cdf(self, value) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} has no cdf")

    def icdf(self, value) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} has no icdf")

    def entropy(self) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} has no entropy")

    def perplexity(self) -> Tensor:
        return self.entropy().exp()

    @property
    def mean(self) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} has no mean")

    @property
    def mode(self) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} has no mode")

    @property
    def variance(self) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} has no variance")

    @property
    def stddev(self) -> Tensor:
        return self.variance.sqrt()

    def _validate_sample(self, value) -> Tensor:
        """`value` as a tensor; with validation on, a ValueError unless it lies in the
        support and its trailing shape is the event shape."""
        if not self._validate_args:
            return _t(value)
        if not isinstance(value, Tensor):  # as torch, which validates by default
            raise ValueError("The value argument to log_prob must be a Tensor")
        n = len(self._event_shape)
        if n and tuple(value.shape[-n:]) != self._event_shape:
            raise ArgumentError(f"{type(self).__name__}: the value's trailing shape "
                                f"{tuple(value.shape[-n:])} is not the event shape "
                                f"{self._event_shape}")
        try:
            np.broadcast_shapes(value.shape, self._batch_shape + self._event_shape)
        except ValueError:
            raise ArgumentError(f"{type(self).__name__}: value of shape {value.shape} does not "
                                f"broadcast with batch_shape + event_shape "
                                f"{self._batch_shape + self._event_shape}") from None
        if self.support is not None and not self.support.holds_for(value, self):
            raise ArgumentError(f"Expected value argument of shape {value.shape} to be within the "
                                f"support ({self.support}) of the distribution "
                                f"{type(self).__name__}, but found invalid values")
        return value

    @staticmethod
    def _as_dtype_of(value, param: Tensor) -> Tensor:
        """`value` as a tensor of `param`'s dtype, as torch's `as_tensor(value,
        dtype=param.dtype)` in Gamma/HalfCauchy.log_prob (a float64 value under float32
        parameters gives a float32 log-density; a list is taken)."""
        v = _t(value)
        return v if v.dtype == param.dtype else v.to(param.dtype)

    def __repr__(self) -> str:
        # as torch: a one-element parameter by its value, a larger one by its shape
        params = ", ".join(f"{k}: {v}" if v.numel() == 1 else f"{k}: {v.shape}"
                           for k in self.arg_constraints
                           if isinstance(v := self.__dict__.get(k), Tensor))
        return f"{type(self).__name__}({params})"


# ---------------------------------------------------------------- constraints
# torch's constraint objects (rg.distributions.constraints), under the names the
# distributions here have always used (`C.real`, `C.positive`, ...).
from .constraints import *  # noqa: E402, F401, F403
from .constraints import (  # noqa: E402, F401
    Constraint,
    boolean,
    lower_cholesky,
    nonnegative,
    nonnegative_integer,
    positive,
    positive_definite,
    real,
    real_vector,
    simplex,
    unit_interval,
)
