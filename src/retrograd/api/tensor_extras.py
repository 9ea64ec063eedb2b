"""Tensor methods PyTorch has that fit nowhere else: shape changes in place (`squeeze_`,
`unsqueeze_`, `t_`, `transpose_`, `swapaxes_`, `swapdims_`), `resize_`/`resize_as_`,
`as_strided`, the `unsafe_*` splits, `new_empty_strided`, post-accumulate-grad hooks,
`apply_`/`map_`, `share_memory_`/`is_shared` (memory shared between processes: see
`retrograd.sharing`), and the flags retrograd has no use for (`is_inference`, `is_conj`,
`is_neg`, `is_pinned`; `pin_memory` returns self).

An in-place shape change rebinds the tensor to the view op's result (same memory,
the op recorded with the old tensor's history as input), as PyTorch does; like other
in-place ops it is refused on a leaf that requires grad, on a dual/batched tensor
inside forward mode or vmap, and while rg.jit traces.

`as_strided` reads the tensor's elements in row-major order as its storage (what
torch does for a contiguous tensor; a non-contiguous one is refused): a strided view
(the `as_strided_view` op), differentiable, which writes go through.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable

import numpy as np

from .. import creation, devices, engine, ops, sharing
from .._values import batched, per_element, values_of
from ..grad_mode import state
from ..primitive import ArgumentError as _ArgumentError
from ..tensor import _HIDDEN_OWNERS, _HIDDEN_ROOTS, Tensor, _HookHandle


def _inplace_view(name: str, fn: Callable) -> Callable:
    def method(self, *args, **kwargs):
        if state.enabled and self.requires_grad and self.grad_fn is None:
            raise RuntimeError(f"{name}(): a leaf tensor that requires grad (shape "
                               f"{self.shape}) is being used in an in-place operation")
        root = (getattr(self, "_view", None) or (None,))[0]
        if state.enabled and root is not None and root.requires_grad and root.grad_fn is None \
                and self.data.__class__ is np.ndarray \
                and np.may_share_memory(self.data, root.data):
            raise RuntimeError(f"{name}(): a view (shape {self.shape}) of a leaf tensor that "
                               "requires grad is being used in an in-place operation")
        if state.tracer is not None:
            raise RuntimeError(f"{name}(): in-place shape changes are not supported under "
                               "rg.jit; use the out-of-place form")
        if self._fw is not None and state.forward is not None:
            raise RuntimeError(f"{name}(): in-place shape change of a tensor that carries a "
                               "forward-mode tangent or vmap batch; use the out-of-place form")
        old = Tensor._wrap(self.data)
        old.grad_fn, old.requires_grad, old._vc = self.grad_fn, self.requires_grad, self._cell()
        old._vc[0] += 1  # before the view op records its input: older saved values go stale
        engine.mark_inplace()
        res = fn(old, *args, **kwargs)
        self.data = res.data
        if res.grad_fn is not None:
            self.grad_fn = res.grad_fn
        _rebind_views(self, old, res)
        return self
    method.__name__ = method.__qualname__ = name
    method.__doc__ = (f"In-place `{name[:-1]}`: self becomes the view (PyTorch's "
                      f"`Tensor.{name}`).")
    return method


def _rebind_views(self: Tensor, old: Tensor, res: Tensor) -> None:
    """After self became `res` (a view of `old`, self's former data and history): self is
    now a view, of its former root's memory; the views taken from self while it was a root
    (recorded ones, which a later write through them rebases) get `old` as their root, whose
    layout their view ops were taken from (they would read self's new layout otherwise)."""
    rv = getattr(res, "_view", None)
    if rv is None:
        return
    mine = getattr(self, "_view", None)
    if mine is not None:  # self was a view already: one more op from the same root
        self._view = (mine[0], mine[1] + rv[1])
        return
    self._view = rv
    _HIDDEN_ROOTS[id(old)] = old
    _HIDDEN_OWNERS[id(old)] = self
    views, self._views = getattr(self, "_views", None), None
    keep = [weakref.ref(self)]
    for ref in views or ():
        w = ref()
        wv = getattr(w, "_view", None)
        if w is not None and wv is not None and wv[0] is self:
            w._view = (old, wv[1])
            keep.append(ref)
    old._views = keep


def _sizes(args, what: str) -> tuple:
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = tuple(args[0])
    sizes = tuple(int(s) for s in args)
    if any(s < 0 for s in sizes):
        raise RuntimeError(f"{what}(): negative dimension in size {sizes}")
    return sizes


def resize_(self, *sizes) -> Tensor:
    """Give self the shape `sizes`, keeping its first elements in row-major order (new ones are
    zeros; torch leaves them uninitialised). Refused on a tensor that requires grad, as in
    torch. Like `torch.Tensor.resize_`."""
    sizes = _sizes(sizes, "resize_")
    if state.forward is not None and state.forward.vmapped:  # before the grad check: say vmap
        raise RuntimeError("resize_() inside rg.func.vmap: an in-place change of a tensor's "
                           "storage cannot be batched; resize outside the function")
    if self.requires_grad:
        raise RuntimeError(f"resize_(): cannot resize a tensor that requires grad (shape "
                           f"{self.shape}); resize self.detach() instead")
    if state.tracer is not None:
        from .._values import jit_error_type
        raise jit_error_type()("resize_() inside rg.jit: it replaces the tensor's storage, "
                               "which a trace cannot replay; resize outside the function")
    n = int(np.prod(sizes))
    xp = devices.namespace_of(self.data)
    flat = self.data.reshape(-1)
    if n <= flat.size:
        new = flat[:n].reshape(sizes)
    else:
        new = xp.zeros(n, dtype=self.data.dtype)
        if creation.DETERMINISTIC[0] and creation.DETERMINISTIC[2]:
            creation.fill_uninitialized(new)  # the new elements, as PyTorch's
        new[:flat.size] = flat
        new = new.reshape(sizes)
    self.data = new
    self._cell()[0] += 1
    engine.mark_inplace()
    return self


def resize_as_(self, tensor: Tensor, memory_format=None) -> Tensor:
    """`resize_` to `tensor`'s shape. Like `torch.Tensor.resize_as_`."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"resize_as_(): 'tensor' must be a Tensor, got {type(tensor).__name__}")
    return resize_(self, tensor.shape)


def _offset_in_base(self) -> int:
    """Where self starts in its base's elements (PyTorch's storage offset of a view of a
    contiguous base); 0 for a tensor that is no view."""
    base = self._base
    d = self.data
    if base is None or not base.data.flags.c_contiguous or d.__class__ is not np.ndarray:
        return 0
    return (d.__array_interface__["data"][0]
            - base.data.__array_interface__["data"][0]) // d.itemsize


def as_strided(self, size, stride, storage_offset: int | None = None) -> Tensor:
    """The elements at `storage_offset + sum(i_k * stride_k)` of the storage, shaped `size`:
    a differentiable strided view (writes through it reach self). Like
    `torch.Tensor.as_strided` on a contiguous tensor (a non-contiguous one is refused): the
    storage is self's elements in row-major order, for a view of a contiguous base its
    base's (`storage_offset` counts from the base's first element; None: self's own
    offset), of which only those from self's first element on can be read here."""
    size, stride = tuple(int(s) for s in size), tuple(int(s) for s in stride)
    start = _offset_in_base(self)
    storage_offset = 0 if storage_offset is None else int(storage_offset) - start
    if storage_offset < 0 <= storage_offset + start:
        raise RuntimeError(f"as_strided(): storage offset {storage_offset + start} lies before "
                           f"this view's first element (its offset in its base is {start}); "
                           "call as_strided on the base instead")
    if len(size) != len(stride):
        raise RuntimeError(f"as_strided(): mismatch in length of strides and shape: size {size}, "
                           f"stride {stride}")
    if any(s < 0 for s in size) or any(s < 0 for s in stride) or storage_offset + start < 0:
        raise RuntimeError(f"as_strided(): size {size}, stride {stride} and storage offset "
                           f"{storage_offset + start} must be non-negative")
    d = self.data
    if not d.flags.c_contiguous:  # torch would read the storage behind the view
        raise RuntimeError(f"as_strided(): supported on contiguous tensors only (shape "
                           f"{self.shape} is a non-contiguous view); call .contiguous() first")
    need = storage_offset + sum((n - 1) * s for n, s in zip(size, stride)) + 1 \
        if all(size) else 0
    if need > d.size:
        raise RuntimeError(f"as_strided(): size {size}, stride {stride} and storage offset "
                           f"{storage_offset} need {need} elements, out of bounds for a tensor "
                           f"of {d.size}")
    return engine.apply(ops.as_strided_view, self, size=size, stride=stride,
                        offset=storage_offset)


def as_strided_(self, size, stride, storage_offset: int | None = None) -> Tensor:
    """`as_strided` in place: self becomes the strided view (PyTorch's
    `Tensor.as_strided_`; `storage_offset` counts from self's base's first element)."""
    if storage_offset is not None:  # the in-place machinery applies it to a stand-in for
        storage_offset = int(storage_offset) - _offset_in_base(self)  # self, no view: relative
        if storage_offset < 0:
            raise RuntimeError(f"as_strided_(): storage offset {storage_offset} lies before "
                               "this view's first element; call it on the base instead")
    return _AS_STRIDED_INPLACE(self, size, stride, storage_offset)


def new_empty_strided(self, size, stride, dtype=None, device=None,
                      requires_grad: bool = False) -> Tensor:
    """A tensor of `size` with self's dtype and device unless given (zeros; the strides are
    checked, not kept). Like `torch.Tensor.new_empty_strided`."""
    size, stride = tuple(int(s) for s in size), tuple(int(s) for s in stride)
    if len(size) != len(stride):
        raise RuntimeError(f"new_empty_strided(): mismatch in length of strides and shape: "
                           f"size {size}, stride {stride}")
    t = creation.uninitialized(self.new_zeros(size, dtype=dtype, device=device))
    return t.requires_grad_(True) if requires_grad else t


def register_post_accumulate_grad_hook(self, hook: Callable) -> _HookHandle:
    """Call `hook(self)` after backward has accumulated a gradient into this leaf's `.grad`
    (not for `rg.autograd.grad`). Like `torch.Tensor.register_post_accumulate_grad_hook`."""
    if not self.requires_grad:
        raise RuntimeError("register_post_accumulate_grad_hook(): cannot register a hook on a "
                           "tensor that does not require grad")
    if self.grad_fn is not None:
        raise RuntimeError("register_post_accumulate_grad_hook(): post accumulate grad hooks "
                           "cannot be registered on non-leaf tensors")
    key = id(self)
    hooks = engine.POST_ACCUMULATE.get(key)
    if hooks is None:
        hooks = engine.POST_ACCUMULATE[key] = []
        weakref.finalize(self, engine.POST_ACCUMULATE.pop, key, None)
    hooks.append(hook)
    return _HookHandle(hooks, hook)


def _refuse_grad(self, name: str) -> None:
    if self.requires_grad:
        raise RuntimeError(f"{name}(): can't call it on a tensor that requires grad (shape "
                           f"{self.shape}); use tensor.detach().{name}(...) instead")
    if self.data.__class__ is not np.ndarray:
        raise TypeError(f"{name}(): only implemented on CPU tensors, got device {self.device}")
    if state.tracer is not None:
        raise RuntimeError(f"{name}(): calls Python per element, which rg.jit cannot trace")


def _write(self, values: np.ndarray) -> Tensor:
    self.data[...] = values
    self._cell()[0] += 1
    engine.mark_inplace()
    return self


def apply_(self, callable: Callable) -> Tensor:  # noqa: A002 - PyTorch's name
    """Replace each element `v` by `callable(v)` (a Python number), in place; CPU only, not
    for tensors that require grad. Like `torch.Tensor.apply_`."""
    _refuse_grad(self, "apply_")
    out = np.array([callable(v) for v in self.data.reshape(-1).tolist()],
                   dtype=self.data.dtype).reshape(self.shape)
    return _write(self, out)


def map_(self, tensor: Tensor, callable: Callable) -> Tensor:  # noqa: A002
    """Replace each element `v` by `callable(v, w)`, `w` the matching element of `tensor`
    broadcast to self's shape, in place. Like `torch.Tensor.map_`."""
    _refuse_grad(self, "map_")
    other = tensor.data if isinstance(tensor, Tensor) else np.asarray(tensor)
    try:
        other = np.broadcast_to(devices.host(other), self.shape)
    except ValueError:
        raise RuntimeError(f"map_(): 'tensor' of shape {np.shape(other)} cannot be broadcast "
                           f"to self's shape {self.shape}") from None
    pairs = zip(self.data.reshape(-1).tolist(), other.reshape(-1).tolist())
    out = np.array([callable(a, b) for a, b in pairs], dtype=self.data.dtype)
    return _write(self, out.reshape(self.shape))


def _false(self) -> bool:
    return False


def _self(self, *args, **kwargs) -> Tensor:
    return self


def is_inference(self) -> bool:
    """Always False: retrograd has no inference tensors (see `rg.inference_mode`)."""
    return False


def is_conj(self) -> bool:
    """Always False: conjugation is eager, there is no lazy conjugate bit."""
    return False


def is_neg(self) -> bool:
    """Always False: negation is eager, there is no lazy negative bit."""
    return False


def resolve_neg(self) -> Tensor:
    """Self: there is no lazy negative bit to resolve. Like `torch.Tensor.resolve_neg`."""
    return self


def share_memory_(self) -> Tensor:
    """Move the values into memory shared between processes (in place; see
    `retrograd.sharing`): processes forked afterwards, and those the tensor is pickled to,
    read and write the same values, as with PyTorch's shared storages."""
    self.data = sharing.share(self.data)
    return self


def pin_memory(self, device=None) -> Tensor:
    """Self: there is no pinned host memory (torch copies into page-locked memory)."""
    return self


def is_shared(self) -> bool:
    """Whether the values are in shared memory (`share_memory_`)."""
    return sharing.is_shared(self.data)


def is_pinned(self, device=None) -> bool:
    """Always False (see `pin_memory`)."""
    return False


def new(self, *args, dtype=None, device=None) -> Tensor:
    """The legacy constructor: `t.new(2, 3)` or `t.new(rg.Size([2, 3]))` (zeros of that
    shape), `t.new([1, 2])` (that data), `t.new()` (empty), in `t`'s dtype and device.
    Like `torch.Tensor.new`; prefer `new_zeros` / `new_tensor`."""
    from ..creation import tensor as _tensor
    from ..creation import zeros as _zeros
    from ..size import Size

    dt = self.dtype if dtype is None else np.dtype(dtype)
    dev = self.device if device is None else device
    if not args:
        return _zeros(0, dtype=dt, device=dev)
    if len(args) == 1 and isinstance(args[0], Tensor):
        if args[0].dtype != dt:
            raise TypeError(f"new(): expected a tensor of dtype {dt}, got {args[0].dtype}")
        return Tensor._wrap(args[0].data)  # torch's legacy form aliases the tensor
    if len(args) == 1 and isinstance(args[0], Size):
        args = tuple(args[0])
    if all(isinstance(a, (int, np.integer)) and not isinstance(a, bool) for a in args):
        return _zeros(*args, dtype=dt, device=dev)
    if len(args) > 1:
        raise TypeError(f"new(): expected sizes (ints) or one sequence of data, got "
                        f"{len(args)} arguments")
    return _tensor(args[0], dtype=dt, device=dev)


def dim_order(self) -> tuple[int, ...]:
    """The dimensions from the outermost in memory to the innermost (by decreasing stride;
    (0, 1, ..., n-1) for a row-major tensor). Like `torch.Tensor.dim_order`."""
    strides = [abs(s) for s in self.data.strides]
    return tuple(sorted(range(self.ndim), key=lambda d: -strides[d]))


def nonzero_static(input: Tensor, *, size: int, fill_value: int = -1) -> Tensor:  # noqa: A002
    """`nonzero(input)` cut or padded with `fill_value` rows to exactly `size` rows (an
    int64 (size, ndim) tensor). Like `torch.nonzero_static`."""
    if not isinstance(input, Tensor):
        raise TypeError(f"nonzero_static(): argument 'input' must be a Tensor, not "
                        f"{type(input).__name__}")
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 0:
        raise _ArgumentError(f"nonzero_static: 'size' must be an non-negative integer, got "
                            f"{size!r}")
    if batched(input):  # inside vmap: each batch element's, as torch.func.vmap's fallback
        r = per_element(lambda x: nonzero_static(x, size=size, fill_value=fill_value), input)
        if r is not None:
            return r
    values = values_of(input, "nonzero_static", "compare with a mask instead")
    idx = np.argwhere(devices.host(values))[:size]
    out = np.full((int(size), input.ndim), fill_value, dtype=np.int64)
    out[:len(idx)] = idx
    return Tensor._wrap(out)


_AS_STRIDED_INPLACE = _inplace_view("as_strided_", as_strided)
