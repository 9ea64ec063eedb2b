"""Tensor methods PyTorch code reaches for that are not `rg.*` functions: memory facts
(`stride`, `storage_offset`, `is_contiguous`, `data_ptr`, `element_size`, `nbytes`),
type names and conversions (`type`, `type_as`), siblings (`new_zeros`, `new_full`,
`new_tensor`, ...), `reshape_as`, `detach_`, `retains_grad`, `x.where(cond, y)`.

`bind(Tensor)` puts these, the PyTorch spellings (`api/torch_names.py`), the random
fills (`api/rng.py`) and the generated in-place forms (`api/inplace.py`) on the class;
`methods.py` calls it once. Strides and offsets describe our arrays as PyTorch
would describe its tensors: in elements, the offset counted from the start of the
memory block the data lives in (a view's offset is its distance from its base).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from .. import creation, devices, ops
from .._values import batch_like
from ..dtypes import get_default_dtype
from ..engine import apply
from ..layouts import check_keywords
from ..primitive import ArgumentError
from ..tensor import Tensor
from . import activations, inplace, rng, sparse_dense, torch_names
from ._args import dim_alias
from ._errors import DtypeError
from .elementwise import where as _where
from .shape import broadcast_to, reshape

# ---------------------------------------------------------------- memory facts


def _ptr(arr) -> int:
    """The address of an array's first element (host or device)."""
    iface = getattr(arr, "__array_interface__", None) or \
        getattr(arr, "__cuda_array_interface__", None)
    if iface is not None:
        return int(iface["data"][0])
    return int(arr.data.ptr)  # a CuPy-like array without the interfaces


def stride(self, dim=None, *, axis=None):
    """The step, in elements, between neighbours along each dimension (a tuple), or along
    `dim` (an int). 0 along an expanded dimension, negative along a NumPy-flipped one.
    Like `torch.Tensor.stride`."""
    dim = dim_alias(dim, axis, "stride")
    arr = self.data
    steps = tuple(s // arr.itemsize for s in arr.strides)
    if arr.size == 0 and not any(steps):  # NumPy's strides of new empty memory are 0s;
        steps, step = [], 1               # PyTorch's are row-major, a 0 size taken as 1
        for n in reversed(arr.shape):
            steps.append(step)
            step *= max(n, 1)
        steps = tuple(reversed(steps))
    if dim is None:
        return steps
    if not isinstance(dim, (int, np.integer)) or isinstance(dim, bool):
        raise TypeError(f"stride(): dim must be an int, got {dim!r}")
    if not arr.ndim:
        raise IndexError(f"stride(): dim {dim} given but the tensor has no dimensions")
    if not -arr.ndim <= dim < arr.ndim:
        raise IndexError(f"stride(): dimension out of range (expected to be in range of "
                         f"[{-arr.ndim}, {arr.ndim - 1}], but got {dim})")
    return steps[dim]


def storage_offset(self) -> int:
    """How many elements the first element lies past the start of the memory block the
    data lives in: 0 for a tensor that owns its memory, `k` for a view starting `k`
    elements into its base. Like `torch.Tensor.storage_offset`."""
    arr = root = self.data
    while root.base is not None and root.base.__class__ is arr.__class__:
        root = root.base
    return (_ptr(arr) - _ptr(root)) // arr.itemsize


def is_contiguous(self, memory_format=None) -> bool:
    """True if the elements lie in memory in row-major order without gaps (`memory_format`
    is accepted and ignored: there is one layout). Like `torch.Tensor.is_contiguous`."""
    return bool(self.data.flags.c_contiguous)


def contiguous(self, memory_format=None) -> Tensor:
    """self if its elements are in row-major order (`is_contiguous`), else a row-major
    copy that stays in the graph. Like `torch.Tensor.contiguous`."""
    if self.data.flags.c_contiguous:
        return self
    return apply(ops.contiguous, self)


def data_ptr(self) -> int:
    """The memory address of the first element. Like `torch.Tensor.data_ptr`."""
    return _ptr(self.data)


class _Storage:
    """What `untyped_storage()` / `storage()` return: the memory block under a tensor (the
    root array its data views), for the questions ported code asks of it: where it starts
    (`data_ptr`), how large it is (`nbytes`, `size`), and which device holds it. Made by
    the tensor methods (`_of`), or by the public classes' constructors (a new block)."""

    _typed = False

    @classmethod
    def _of(cls, root) -> _Storage:
        obj = object.__new__(cls)
        obj._root = root
        return obj

    def data_ptr(self) -> int:
        return _ptr(self._root)

    def nbytes(self) -> int:
        return int(self._root.nbytes)

    def size(self) -> int:
        """Bytes (untyped), or elements of the tensor's dtype (typed)."""
        return int(self._root.size if self._typed else self._root.nbytes)

    def __len__(self) -> int:
        return self.size()

    def element_size(self) -> int:
        return int(self._root.itemsize) if self._typed else 1

    @property
    def dtype(self):
        return self._root.dtype if self._typed else np.dtype(np.uint8)

    @property
    def device(self):
        return devices.device_of(self._root)

    def tolist(self) -> list:
        """The elements (typed) or bytes (untyped) as Python numbers."""
        arr = devices.host(self._root).reshape(-1)
        return (arr if self._typed else arr.view(np.uint8)).tolist()

    def __eq__(self, other) -> bool:  # the same memory block
        return isinstance(other, _Storage) and self.data_ptr() == other.data_ptr() and \
            self.nbytes() == other.nbytes()

    __hash__ = None

    def __repr__(self) -> str:
        return f"<{type(self).__name__} of {self.size()} on {self.device}>"


def _new_block(what: str, size, dtype) -> np.ndarray:
    """A new memory block for a storage constructor: `size` zeros, or the given numbers."""
    if isinstance(size, (int, np.integer)) and not isinstance(size, bool):
        if size < 0:
            raise RuntimeError(f"{what}: size must be non-negative, got {size}")
        return np.zeros(int(size), dtype)
    if isinstance(size, Sequence):  # a str too: its items are refused, as PyTorch's
        for v in size:
            if isinstance(v, bool) or not isinstance(v, (int, float, np.number)):
                raise RuntimeError(f"{what}: tried to construct a storage from a sequence "
                                   f"({type(size).__name__}), but one of the items was of "
                                   f"type {type(v).__name__} instead of a number")
        return np.array(size, dtype)
    raise TypeError(f"{what}: expected a size (int) or a sequence of numbers, got "
                    f"{type(size).__name__}")


def _host_only(what: str, device) -> None:
    if device is not None and devices.parse(device)[0] != "cpu":
        raise RuntimeError(f"{what}: only CPU storages can be constructed, got device "
                           f"{device!r}")


class UntypedStorage(_Storage):
    """A memory block counted in bytes: `t.untyped_storage()`, or
    `UntypedStorage(size=0)` (a new block of `size` zero bytes) / `UntypedStorage([..])`
    (those bytes). Like `torch.UntypedStorage`."""

    def __init__(self, size=0, *, device=None) -> None:
        _host_only("UntypedStorage()", device)
        self._root = _new_block("UntypedStorage()", size, np.uint8)


class TypedStorage(_Storage):
    """A memory block counted in elements of a dtype: `t.storage()`, or
    `TypedStorage(size=0, dtype=None)` (a new block of `size` zeros of `dtype`, the default
    dtype when None) / `TypedStorage([..], dtype=...)`. Like `torch.TypedStorage`."""

    _typed = True

    def __init__(self, size=0, *, dtype=None, device=None) -> None:
        _host_only("TypedStorage()", device)
        dtype = get_default_dtype() if dtype is None else np.dtype(dtype)
        self._root = _new_block("TypedStorage()", size, dtype)

    def untyped(self) -> UntypedStorage:
        """The same block, in bytes."""
        return UntypedStorage._of(self._root)


def _root(arr):
    while arr.base is not None and arr.base.__class__ is arr.__class__:
        arr = arr.base
    return arr


def untyped_storage(self) -> UntypedStorage:
    """The memory block the data lies in, in bytes (views share their base's). Like
    `torch.Tensor.untyped_storage`: `a.untyped_storage().data_ptr() ==
    b.untyped_storage().data_ptr()` says whether two tensors share memory."""
    return UntypedStorage._of(_root(self.data))


def storage(self) -> TypedStorage:
    """The memory block the data lies in, counted in elements of its dtype. Like
    `torch.Tensor.storage` (PyTorch's TypedStorage)."""
    return TypedStorage._of(_root(self.data))


def element_size(self) -> int:
    """Bytes per element. Like `torch.Tensor.element_size`."""
    return self.data.itemsize


def nelement(self) -> int:
    """The number of elements (`numel`). Like `torch.Tensor.nelement`."""
    return self.data.size


def ndimension(self) -> int:
    """The number of dimensions (`dim`). Like `torch.Tensor.ndimension`."""
    return self.data.ndim


def get_device(self) -> int:
    """The index of the device holding the data: -1 on the CPU. Like
    `torch.Tensor.get_device`."""
    if self.data.__class__ is np.ndarray:
        return -1
    return devices.parse(self.device)[1] or 0


def is_signed(self) -> bool:
    """False for bool and unsigned integer dtypes, True otherwise. Like
    `torch.Tensor.is_signed`."""
    return self.data.dtype.kind not in "bu"


# ---------------------------------------------------------------- type names

_TYPE_NAMES = {np.dtype(k): v for k, v in (
    (np.float32, "FloatTensor"), (np.float64, "DoubleTensor"), (np.float16, "HalfTensor"),
    (np.int64, "LongTensor"), (np.int32, "IntTensor"), (np.int16, "ShortTensor"),
    (np.int8, "CharTensor"), (np.uint8, "ByteTensor"), (np.bool_, "BoolTensor"),
    (np.complex64, "ComplexFloatTensor"), (np.complex128, "ComplexDoubleTensor"))}
_BY_TYPE_NAME = {v: k for k, v in _TYPE_NAMES.items()}
_TYPE_STRING = re.compile(r"torch\.(cuda\.)?(\w+)")


def tensor_type(self, dtype=None, non_blocking: bool = False, **kwargs):
    """With no argument, PyTorch's name of the tensor's type ('torch.FloatTensor',
    'torch.cuda.LongTensor', ...); with a dtype or such a name, the tensor converted to
    it (self if nothing changes). Like `torch.Tensor.type`."""
    if dtype is None:
        name = _TYPE_NAMES.get(self.data.dtype)
        if name is None:
            raise DtypeError(f"type(): PyTorch has no tensor type name for dtype {self.dtype}")
        return ("torch.cuda." if self.is_cuda else "torch.") + name
    if isinstance(dtype, str):
        m = _TYPE_STRING.fullmatch(dtype)
        if m is None or m.group(2) not in _BY_TYPE_NAME:
            raise ArgumentError(f"type(): invalid type: {dtype!r} (expected a name such as "
                                "'torch.FloatTensor' or 'torch.cuda.LongTensor')")
        target = devices.device("cuda") if m.group(1) else devices.CPU
        t = self if (self.device == target or (m.group(1) and self.is_cuda)) else self.to(target)
        return t.to(_BY_TYPE_NAME[m.group(2)])
    legacy = getattr(dtype, "legacy_dtype", None)  # x.type(rg.LongTensor)
    return self.to(legacy if isinstance(legacy, np.dtype) else np.dtype(dtype))


def type_as(self, other: Tensor) -> Tensor:
    """self in `other`'s dtype and on its device (self if already so). Like
    `torch.Tensor.type_as`. `other` may also be a tensor's `.data` array (a NumPy or CuPy
    array here, a tensor in PyTorch), as in `x.type_as(src.data)`."""
    if devices.is_device_array(other) or isinstance(other, np.ndarray):
        other = Tensor._wrap(other)
    if not isinstance(other, Tensor):
        raise TypeError(f"type_as(): 'other' must be a Tensor, not {type(other).__name__}")
    return self.to(other.device, other.dtype)


def reshape_as(self, other: Tensor) -> Tensor:
    """self reshaped to `other`'s shape. Like `torch.Tensor.reshape_as`."""
    if not isinstance(other, Tensor):
        raise TypeError(f"reshape_as(): 'other' must be a Tensor, not {type(other).__name__}")
    return reshape(self, *other.shape)


# ---------------------------------------------------------------- siblings: new_*

def _size(fn: str, size: tuple) -> tuple:
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    size = tuple(creation._index_size(s) for s in size)  # a one-element int tensor: an int
    for s in size:
        if not isinstance(s, (int, np.integer)) or isinstance(s, bool):
            raise TypeError(f"{fn}(): size must be ints or a tuple of ints, got {size!r}")
        if s < 0:
            raise ArgumentError(f"{fn}(): size {size} has a negative dimension")
    return tuple(int(s) for s in size)


def _where_to(self, dtype, device):
    return (self.data.dtype if dtype is None else np.dtype(dtype),
            (None if self.data.__class__ is np.ndarray else self.device)
            if device is None else device)


def new_zeros(self, *sizes, size=None, dtype=None, device=None, requires_grad: bool = False,
              layout=None, pin_memory: bool = False) -> Tensor:
    """Zeros of `size`, in self's dtype and on its device unless given. Like
    `torch.Tensor.new_zeros` (`layout`/`pin_memory`: checked, see `layouts`)."""
    check_keywords("new_zeros", layout_=layout, pin_memory=pin_memory)
    dt, dev = _where_to(self, dtype, device)
    shape = _size("new_zeros", sizes if size is None else (size,))  # size=: torch's keyword
    return batch_like(creation.zeros(shape, dtype=dt, device=dev, requires_grad=requires_grad),
                      self)


def new_ones(self, *sizes, size=None, dtype=None, device=None, requires_grad: bool = False,
             layout=None, pin_memory: bool = False) -> Tensor:
    """Ones of `size`, in self's dtype and on its device unless given. Like
    `torch.Tensor.new_ones` (`layout`/`pin_memory`: checked, see `layouts`)."""
    check_keywords("new_ones", layout_=layout, pin_memory=pin_memory)
    dt, dev = _where_to(self, dtype, device)
    shape = _size("new_ones", sizes if size is None else (size,))  # size=: torch's keyword
    return batch_like(creation.ones(shape, dtype=dt, device=dev, requires_grad=requires_grad),
                      self)


def new_empty(self, *sizes, size=None, dtype=None, device=None, requires_grad: bool = False,
              layout=None, pin_memory: bool = False) -> Tensor:
    """An uninitialised tensor of `size` (here: zeros), in self's dtype and on its device
    unless given. Like `torch.Tensor.new_empty`."""
    return creation.uninitialized(new_zeros(self, *sizes, size=size, dtype=dtype,
                                            device=device, requires_grad=requires_grad,
                                            layout=layout, pin_memory=pin_memory))


def new_full(self, size, fill_value, *, dtype=None, device=None,
             requires_grad: bool = False, layout=None, pin_memory: bool = False) -> Tensor:
    """`fill_value` in a tensor of `size` (a sequence), in self's dtype (the value cast to
    it) and on its device unless given. Like `torch.Tensor.new_full`."""
    check_keywords("new_full", layout_=layout, pin_memory=pin_memory)
    if not isinstance(size, (tuple, list)):
        raise TypeError(f"new_full(): size must be a tuple of ints, not {type(size).__name__}")
    dt, dev = _where_to(self, dtype, device)
    return batch_like(creation.full(_size("new_full", (size,)), fill_value, dtype=dt,
                                    device=dev, requires_grad=requires_grad), self)


def new_tensor(self, data, *, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """A new tensor holding a copy of `data` (numbers, lists, arrays, tensors: detached),
    in self's dtype and on its device unless given. Like `torch.Tensor.new_tensor`."""
    dt, dev = _where_to(self, dtype, device)
    if isinstance(data, Tensor):
        data = data.detach()
    t = creation.tensor(data, dtype=dt, device=dev)  # a copy: the dtype is always given
    return t.requires_grad_(True) if requires_grad else t


# ---------------------------------------------------------------- autograd facts

def retains_grad(self) -> bool:
    """True for a non-leaf tensor whose `.grad` is kept after backward (`retain_grad()`
    was called). Like `torch.Tensor.retains_grad`."""
    node = self.grad_fn
    ref = getattr(node, "retain", None) if node is not None else None
    return ref is not None and ref() is self


def detach_(self) -> Tensor:
    """Cut self from the graph in place: it becomes a leaf that does not require grad.
    A view cannot be detached in place (use `detach()`). Like `torch.Tensor.detach_`."""
    node = self.grad_fn
    if node is not None and getattr(node.op, "view", False):
        raise RuntimeError(f"detach_(): can't detach a view (from '{node.name}', shape "
                           f"{self.shape}) in place; use detach() instead")
    self.grad_fn = None
    self.requires_grad = False
    return self


def where_method(self, condition, other) -> Tensor:
    """self where `condition` holds, else `other` (`rg.where(condition, self, other)`). Like
    `torch.Tensor.where`."""
    c = condition if isinstance(condition, Tensor) else Tensor(condition)
    return _where(c, self, other)


# ---------------------------------------------------------------- binding

_SPELLINGS = ("eq ne lt le gt ge greater greater_equal less less_equal not_equal equal add sub "
              "subtract multiply pow neg negative positive t clamp_min clamp_max "
              "is_floating_point is_nonzero is_same_size").split()


def bind(cls) -> None:
    """Put the methods of this module, PyTorch's spellings, the random fills and the
    in-place forms on `cls` (the Tensor class)."""
    for name in _SPELLINGS:
        setattr(cls, name, getattr(torch_names, name))
    for f in (stride, storage_offset, is_contiguous, contiguous, data_ptr, element_size,
              nelement, ndimension, get_device, is_signed, type_as, reshape_as, new_zeros,
              new_ones, new_empty, new_full, new_tensor, detach_):
        setattr(cls, f.__name__, f)
    cls.type = tensor_type
    cls.where = where_method
    cls.broadcast_to = broadcast_to
    cls.retains_grad = property(retains_grad)
    cls.is_cpu = property(lambda self: self.data.__class__ is np.ndarray,
                          doc="True if the data is in host memory (a NumPy array).")
    cls.itemsize = property(element_size, doc="Bytes per element (`element_size()`).")
    cls.nbytes = property(lambda self: self.data.size * self.data.itemsize,
                          doc="Bytes the elements take: numel() * element_size().")
    # storage kinds retrograd never has: code written for PyTorch asks (`if g.is_sparse:`)
    cls.is_meta = property(lambda self: self.data.__class__ is not np.ndarray
                           and self.device == "meta",
                           doc="True for a tensor on the 'meta' device (shape only).")
    cls.untyped_storage = untyped_storage
    cls.storage = storage
    for flag in ("is_sparse", "is_sparse_csr", "is_quantized", "is_mkldnn",
                 "is_nested", "is_mps", "is_xla", "is_xpu", "is_ipu", "is_mtia", "is_maia",
                 "is_vulkan"):
        setattr(cls, flag, property(_false, doc="Always False: retrograd tensors are dense "
                                                "arrays on the host or a CUDA device."))
    cls.hardshrink = activations.hardshrink
    cls.prelu = activations.prelu
    cls.to_dense = lambda self, dtype=None, *, masked_grad=None: \
        self if dtype is None else self.to(dtype)
    rng.bind(cls)
    inplace.bind(cls)
    sparse_dense.bind(cls)  # to_sparse(): a dense copy


def _false(self) -> bool:
    return False
