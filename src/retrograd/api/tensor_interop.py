"""Tensor methods for handing a tensor's memory or identity to other code: the DLPack
protocol (`__dlpack__`, `__dlpack_device__`, so `torch.from_dlpack(t)` and
`np.from_dlpack(t)` share an rg tensor's memory), `as_subclass` (the same data, and the
same history, as an instance of a Tensor subclass), `output_nr` (which output of its
grad_fn a tensor is, in PyTorch's numbering) and `set_` (make a tensor use another's
memory). `tensor_methods.bind` puts them on the class.
"""

from __future__ import annotations

import weakref

from .._values import values_of
from ..tensor import Tensor


def dlpack(self, *, stream=None, max_version=None, dl_device=None, copy=None):
    """`Tensor.__dlpack__`: the array's DLPack capsule, for another library's
    `from_dlpack`; a tensor that requires grad is refused (its history would be lost), as
    PyTorch refuses it."""
    if self.requires_grad:
        raise BufferError("Can't export tensors that require gradient, use tensor.detach()")
    arr = values_of(self, "__dlpack__", "pass the tensor itself")
    kwargs = {k: v for k, v in (("stream", stream), ("max_version", max_version),
                                ("dl_device", dl_device), ("copy", copy)) if v is not None}
    return arr.__dlpack__(**kwargs)


def dlpack_device(self) -> tuple:
    """`Tensor.__dlpack_device__`: the DLPack (device type, index) of the data."""
    return self.data.__dlpack_device__()


def as_subclass(self, cls) -> Tensor:
    """The same data as an instance of `cls`, a subclass of Tensor (or Tensor itself): a
    view (no copy; in-place writes show in both, which share a version counter) that
    carries the history, so backward through it reaches this tensor. `cls.__init__` is
    not called. Like `torch.Tensor.as_subclass` (ops on the result give plain tensors:
    retrograd has no `__torch_function__` to keep the subclass)."""
    if not isinstance(cls, type):
        raise TypeError(f"cls must be a type (got {type(cls).__name__})")
    if not issubclass(cls, Tensor):
        raise TypeError("Creating a Tensor subclass from a class that does not inherit from "
                        "Tensor is not possible. Make sure your class inherits from Tensor.")
    out = self.view(self.shape)
    if cls is not type(out):
        try:
            out.__class__ = cls
        except TypeError as e:  # a subclass with slots of its own: another memory layout
            raise TypeError(f"as_subclass(): {cls.__name__} adds __slots__ to Tensor's, so a "
                            f"tensor cannot be viewed as one ({e})") from None
    return out


_NUMBERED: dict = {}
"""id(tensor) -> (weak reference to it, to its grad_fn then, its output number): the
outputs after the first of a function PyTorch records as one node with several outputs
(split, chunk, unbind, aminmax, var_mean, linalg.qr, ...), where retrograd records one
node per output."""


def _forget(key: int):
    def gone(ref) -> None:
        if _NUMBERED.get(key, (None,))[0] is ref:
            del _NUMBERED[key]
    return gone


def number_outputs(outs):
    """`outs` (a tuple of tensors), each remembered as output k of one PyTorch node, for
    `output_nr`; only outputs that were recorded (have a grad_fn) are numbered."""
    for k, t in enumerate(outs):
        if k and isinstance(t, Tensor) and t.grad_fn is not None:
            key = id(t)
            _NUMBERED[key] = (weakref.ref(t, _forget(key)), weakref.ref(t.grad_fn), k)
    return outs


def output_nr(self) -> int:
    """Which output of its grad_fn this tensor is, numbered as PyTorch numbers them: k for
    the k-th piece of split/chunk/unbind or the k-th result of aminmax, var_mean,
    std_mean, linalg.qr/svd/eigh/eig/slogdet; 0 otherwise (a leaf, a one-output op, or
    after an in-place op gave the tensor a new grad_fn). Like `torch.Tensor.output_nr`."""
    entry = _NUMBERED.get(id(self))
    node = self.grad_fn
    if entry is None or node is None or entry[0]() is not self or entry[1]() is not node:
        return 0
    return entry[2]


def bind(cls) -> None:
    """Put this module's methods on `cls` (the Tensor class)."""
    cls.__dlpack__ = dlpack
    cls.__dlpack_device__ = dlpack_device
    cls.as_subclass = as_subclass
    cls.output_nr = property(output_nr, doc=output_nr.__doc__)
