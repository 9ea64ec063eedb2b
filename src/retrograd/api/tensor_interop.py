"""Tensor methods for handing a tensor's memory or identity to other code: the DLPack
protocol (`__dlpack__`, `__dlpack_device__`, so `torch.from_dlpack(t)` and
`np.from_dlpack(t)` share an rg tensor's memory), `as_subclass` (the same data, and the
same history, as an instance of a Tensor subclass), `output_nr` (which output of its
grad_fn a tensor is, in PyTorch's numbering) and `set_` (make a tensor use another's
memory; `tensor_methods` holds the storage classes it also takes). `methods.py` puts
them on the class with `bind`; `output_nr` is computed in `api/output_numbers.py`.
"""

from __future__ import annotations

import numpy as np

from .. import devices, engine
from .._values import jit_error_type, values_of
from ..grad_mode import state
from ..tensor import Tensor
from .output_numbers import output_nr
from .tensor_methods import _root, _Storage
from .tensor_methods import storage_offset as tensor_storage_offset


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


def set_(self, source=None, storage_offset=None, size=None, stride=None) -> Tensor:
    """Make self use other memory, in place: `set_(t)` takes tensor t's memory, shape and
    strides (writes through either show in both); `set_(t or storage, storage_offset,
    size, stride=None)` a strided window of that memory block (offset in elements from the
    block's start, or from a tensor source's first element; contiguous strides when None;
    read-only where two positions are one element); `set_(storage)` the whole block;
    `set_()` an empty tensor. The version counter moves on, as for any in-place op. Like
    `torch.Tensor.set_`, except: refused on a leaf that requires grad while recording (as
    there), on a tensor with history or from a source that requires grad while recording
    (PyTorch records a node whose backward raises), under rg.jit and vmap, and where the
    window reaches past the block's end (PyTorch grows the storage then)."""
    if state.tracer is not None:
        raise jit_error_type()("set_() inside rg.jit: it swaps the tensor's memory, which a "
                               "trace cannot replay; call it outside the function")
    fw = state.forward is not None and (self._fw is not None or getattr(source, "_fw", None)
                                        is not None)
    if fw:
        raise RuntimeError("set_(): swapping the memory of a tensor that carries a "
                           "forward-mode tangent or vmap batch (or taking such a tensor's) "
                           "is not supported; call it outside forward mode")
    if state.enabled and self.requires_grad and self.grad_fn is None:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                           "operation.")
    if self.grad_fn is not None:
        raise RuntimeError(f"set_(): self (shape {self.shape}) has a history (grad_fn "
                           f"{self.grad_fn.name}), which a new memory block would not match "
                           "(PyTorch's backward through it raises); use self.detach()")
    if isinstance(source, Tensor) and source.requires_grad and state.enabled:
        raise RuntimeError("set_(): the source requires grad, and the result would have no "
                           "usable history (PyTorch's backward through it raises); pass "
                           "source.detach(), or call it under no_grad")
    arr = _set_source(self, source, storage_offset, size, stride)
    self.data = arr
    self._view = None  # no longer the memory of the tensor it was a view of
    self._cell()[0] += 1
    engine.mark_inplace()
    return self


def _set_source(self, source, storage_offset, size, stride):
    """The array self takes in `set_`: checked against self's dtype and device."""

    if source is None:
        if storage_offset is not None or size is not None or stride is not None:
            raise TypeError("set_(): storage_offset, size and stride need a source")
        return devices.namespace_of(self.data).empty((0,), dtype=self.data.dtype)
    if isinstance(source, Tensor):
        arr, block = source.data, _root(source.data)
    elif isinstance(source, _Storage):
        arr, block = None, source._root
    else:
        raise TypeError(f"set_(): source must be a Tensor or a storage, got "
                        f"{type(source).__name__}")
    if block.__class__ is not self.data.__class__ or (
            block.__class__ is not np.ndarray and devices.device_of(block) != self.device):
        raise RuntimeError(f"set_(): the source is on {devices.device_of(block)}, self on "
                           f"{self.device}; both must be on the same device")
    typed = arr is not None or getattr(source, "_typed", False)
    if typed and block.dtype != self.data.dtype:
        raise RuntimeError(f"Could not set tensor of type {block.dtype} to a tensor of type "
                           f"{self.data.dtype}")
    if arr is not None and storage_offset is None and size is None and stride is None:
        return arr
    if storage_offset is not None and size is None:
        raise TypeError("set_(): storage_offset needs size (and optionally stride) too: "
                        "set_(source, storage_offset, size, stride=None)")
    if not block.flags.c_contiguous or block.__class__ is not np.ndarray:
        raise RuntimeError("set_(): a window of a memory block needs a contiguous host "
                           "block")
    item = self.data.dtype.itemsize
    elems = block.reshape(-1).view(np.uint8)
    elems = elems[:elems.size // item * item].view(self.data.dtype)
    if storage_offset is None:  # set_(storage): the whole block, 1-d
        return elems
    if arr is not None:  # a tensor's window starts at its first element, as PyTorch's
        storage_offset = int(storage_offset) + tensor_storage_offset(source)
    return _window(elems, storage_offset, size, stride)


def _window(elems: np.ndarray, offset, size, stride) -> np.ndarray:
    """`size` elements of the 1-d `elems` at `offset + sum(i_k * stride_k)`."""
    offset = int(offset)
    size = tuple(int(n) for n in size)
    if stride is None:
        stride, step = [], 1
        for n in reversed(size):
            stride.insert(0, step)
            step *= max(n, 1)
    stride = tuple(int(s) for s in stride)
    if offset < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {offset}")
    if len(size) != len(stride):
        raise RuntimeError(f"unequal size length ({len(size)}) and stride length "
                           f"({len(stride)})")
    if any(n < 0 for n in size) or any(s < 0 for s in stride):
        raise RuntimeError(f"set_(): sizes {list(size)} and strides {list(stride)} must be "
                           "non-negative")
    need = offset + sum((n - 1) * s for n, s in zip(size, stride)) + 1 if all(size) else 0
    offset = offset if need else min(offset, elems.size)  # no elements: any offset will do
    if need > elems.size:
        raise RuntimeError(f"set_(): size {list(size)}, stride {list(stride)} and storage "
                           f"offset {offset} need {need} elements, but the block holds "
                           f"{elems.size} (PyTorch would grow the storage; retrograd cannot "
                           "grow memory in place)")
    # on `elems` itself (its base chain reaches the block: storage_offset, untyped_storage)
    out = np.ndarray(size, elems.dtype, elems, offset * elems.itemsize,
                     tuple(s * elems.itemsize for s in stride))
    if _self_overlapping(size, stride):  # read-only, as expand()'s: an in-place write would
        out.flags.writeable = False      # be computed aside and copied back element by element
    return out


def _self_overlapping(size: tuple, stride: tuple) -> bool:
    """Whether two positions of the window are one element (a stride 0, or steps that
    interleave)."""
    extent = 1
    for s, n in sorted((s, n) for n, s in zip(size, stride) if n > 1):
        if s < extent:
            return True
        extent += (n - 1) * s
    return False


def bind(cls) -> None:
    """Put this module's methods on `cls` (the Tensor class)."""
    cls.__dlpack__ = dlpack
    cls.__dlpack_device__ = dlpack_device
    cls.as_subclass = as_subclass
    cls.set_ = set_
    cls.output_nr = property(output_nr, doc=output_nr.__doc__)
