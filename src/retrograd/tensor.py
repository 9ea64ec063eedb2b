"""`Tensor`: a NumPy array that remembers the op that made it.

This module holds the class's data and autograd metadata (the grad, the node
that made it, version counters, hooks) and the conversions; it imports neither
the engine nor the op table. Arithmetic and the op methods (`t.exp()`,
`t + u`, `t[i] = v`, `t.backward()`) are bound onto the class in one place,
`retrograd.methods`.
"""

from __future__ import annotations

import copy
import warnings
import weakref

import numpy as np

from . import devices, sharing
from .dtypes import as_array, get_default_dtype, is_float
from .grad_mode import state
from .size import Shape, Size

_SCALARS = (int, float, complex)

_HIDDEN_ROOTS: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
_HIDDEN_OWNERS: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
"""By id: the stand-ins an in-place view op (`t_`, `as_strided_`, ...) makes for a tensor's
former self, root of its view chain from then on, and that tensor (their owner). No
tensor the user holds, so `_base` names the owner instead: None for the owner itself
(PyTorch's `x.t_()` leaves `x._base` None), the owner for views taken of it since."""
_new = object.__new__


_tuple_new = tuple.__new__


class _Size(int):
    """`t.size` is an int (NumPy); calling it, `t.size()`, gives the shape (PyTorch)."""

    def __new__(cls, value, shape):
        obj = super().__new__(cls, value)
        obj._shape = shape
        return obj

    def __call__(self, dim=None):
        return _tuple_new(Shape, self._shape) if dim is None else self._shape[dim]


class _HookHandle:
    def __init__(self, hooks, fn):
        self._hooks, self._fn = hooks, fn

    def remove(self) -> None:
        if self._fn in self._hooks:
            self._hooks.remove(self._fn)


# What `repr` prints; `rg.set_printoptions` (api/torch_misc.py) changes it.
PRINT_OPTIONS = {"precision": 4, "threshold": 100, "edgeitems": 3, "linewidth": 75,
                 "sci_mode": None}


class GradDtypeError(TypeError, RuntimeError):
    """requires_grad on a tensor that is not floating: a TypeError (the contract) and
    PyTorch's RuntimeError, so ported `except RuntimeError` code catches it too."""


def _check_grad(t: Tensor, g) -> None:
    """Refuse, as PyTorch does, a .grad that is not a tensor of the tensor's shape, dtype
    and device (an optimizer would otherwise broadcast or promote it silently)."""
    if not isinstance(g, Tensor):
        raise TypeError(f"assigned grad expected to be a Tensor or None but got grad of type "
                        f"{type(g).__name__}")
    if g is t:
        raise RuntimeError("can't assign a tensor as its own grad")
    if g.data.shape != t.data.shape:
        raise RuntimeError(f"attempting to assign a gradient of size '{list(g.data.shape)}' to "
                           f"a tensor of size '{list(t.data.shape)}'. Please ensure that the "
                           f"gradient and the tensor are the same size")
    if g.data.dtype != t.data.dtype:
        raise RuntimeError(f"attempting to assign a gradient with dtype '{g.data.dtype}' to a "
                           f"tensor with dtype '{t.data.dtype}'. Please ensure that the "
                           f"gradient and the tensor have the same dtype")
    if g.data.__class__ is not t.data.__class__ and g.device != t.device:
        raise RuntimeError(f"attempting to assign a gradient on {g.device} to a tensor on "
                           f"{t.device}. Please ensure that the gradient and the tensor are on "
                           f"the same device")



_UFUNC_OPERATORS = {
    np.add: "add", np.subtract: "sub", np.multiply: "mul", np.true_divide: "truediv",
    np.floor_divide: "floordiv", np.remainder: "mod", np.power: "pow", np.matmul: "matmul",
    np.bitwise_and: "and", np.bitwise_or: "or", np.bitwise_xor: "xor",
    np.left_shift: "lshift", np.right_shift: "rshift", np.equal: "eq", np.not_equal: "ne",
    np.less: "lt", np.less_equal: "le", np.greater: "gt", np.greater_equal: "ge",
}
"""NumPy's ufuncs behind Python's binary operators: with a tensor among the operands, the
tensor's operator (reflected where the tensor is on the right)."""
_REFLECTED = {"eq": "eq", "ne": "ne", "lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}


def _wrapped_result(value):
    """A NumPy ufunc's result as PyTorch's `__array_wrap__` gives it: a Tensor, bools as
    uint8."""
    if value is None:
        return None
    arr = np.asarray(value)
    return Tensor(arr.astype(np.uint8) if arr.dtype == np.bool_ else arr)


def _values_for_numpy(values, ufunc, untracked: bool = False):
    """The arrays of the tensors among `values` (a tuple), for a NumPy ufunc; refused for
    a tensor that requires grad (its gradient would be lost), as PyTorch refuses, unless
    `untracked`: a write into NumPy arrays (`p.data -= B @ A`, retrograd's `.data` being
    an array), which PyTorch's `.data` also does outside autograd."""
    out = []
    for v in values:
        if isinstance(v, Tensor):
            if v.requires_grad and not untracked:
                raise RuntimeError(f"Can't call numpy() on Tensor that requires grad (NumPy's "
                                   f"{ufunc.__name__} was given one). Use tensor.detach()."
                                   "numpy() instead, or the retrograd function of that name")
            v = v.__array__()
        out.append(v)
    return tuple(out)


def _plain_reduce(t, protocol: int) -> tuple:
    """`object.__reduce_ex__` without the view bookkeeping (`_view`, `_views`): weak
    references cannot be pickled (a tensor some view was taken of could not be saved or sent
    to a DataLoader worker), and a copy's data no longer aliases the copied root, so the
    copy is an ordinary tensor, as PyTorch's."""
    red = object.__reduce_ex__(t, protocol)
    state = red[2] if len(red) > 2 else None
    if isinstance(state, tuple) and len(state) == 2 and isinstance(state[1], dict) \
            and (state[1].get("_view") is not None or state[1].get("_views") is not None):
        slots = dict(state[1], _view=None, _views=None)
        red = red[:2] + ((state[0], slots),) + red[3:]
    return red


class Tensor:
    """An n-dimensional array with reverse-mode autograd.

    `Tensor(data, requires_grad=False, dtype=None)`: Python floats become the
    default dtype (float32), ints int64, bools bool; NumPy arrays keep theirs.
    """

    __slots__ = ("data", "_grad", "grad_fn", "requires_grad", "_vc", "_hooks", "_fw",
                 "_view", "_views", "__weakref__", "__dict__")
    # __dict__: the user's own attributes, as torch tensors take them (learn2learn's
    # `p.update = g` on a non-leaf parameter); made on first use, so tensors cost nothing
    # None on most tensors (read with getattr(t, name, None), as a copy or a subclass may
    # leave them unset): _view, on a view op's output,
    # the root tensor it views and the view ops from there, ((op, attrs), ...), so an
    # in-place write into the view can rebase the root's history; _views, on a non-leaf
    # root, weak references to its recorded views, whose histories a write into the root
    # (or into one of them) makes anew (`api.inplace`)
    __array_priority__ = 1000

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        """NumPy meeting a tensor. An operator (`array * tensor`, `np.float64(2) < t`) is
        the tensor's own (reflected) operator, so it records and gives a Tensor; any other
        ufunc (`np.sqrt(t)`, `np.add.reduce(t)`) computes on the values and gives a new
        Tensor without history (bool results as uint8), as PyTorch's `__array_wrap__`
        does; it is refused for a tensor that requires grad, as there. With `out=` arrays
        (`arr += t`, `p.data -= (B @ A) * s` as LoRA's merge writes it) the arrays are the
        result, computed from the values without history, as PyTorch's `p.data -= ...`."""
        if method == "__call__" and len(inputs) == 2 and not kwargs:
            name = _UFUNC_OPERATORS.get(ufunc)
            if name is not None:
                a, b = inputs
                if isinstance(a, Tensor):  # np.greater(t, 0) itself (`t > x` never gets here)
                    out = getattr(a, f"__{name}__")(b)
                    # PyTorch's __array_wrap__ gives bools as uint8
                    return out.to(np.uint8) if name in _REFLECTED else out
                return getattr(b, f"__{_REFLECTED.get(name, 'r' + name)}__")(a)
        if "out" in kwargs:
            outs = kwargs["out"]
            kwargs["out"] = _values_for_numpy(outs, ufunc)
            untracked = all(not isinstance(o, Tensor) for o in outs)
            return getattr(ufunc, method)(*_values_for_numpy(inputs, ufunc, untracked),
                                          **kwargs)
        result = getattr(ufunc, method)(*_values_for_numpy(inputs, ufunc), **kwargs)
        if isinstance(result, tuple):
            return tuple(_wrapped_result(r) for r in result)
        return _wrapped_result(result)

    def __init__(self, data=(), requires_grad: bool = False, dtype=None, *sizes):
        if type(data) is int and type(requires_grad) is int:
            # Tensor(2, 3): PyTorch's sizes form, a zero-filled float tensor (one int alone
            # stays a 0-d tensor: internal code wraps Python scalars with Tensor(x))
            dims = (data, requires_grad) + (() if dtype is None else (dtype,)) + sizes
            if not all(type(d) is int and d >= 0 for d in dims):
                raise TypeError(f"Tensor(*sizes): sizes must be non-negative ints, got {dims}")
            data, requires_grad, dtype = np.zeros(dims), False, get_default_dtype()
        elif isinstance(data, Size) and dtype is None and not sizes:
            # Tensor(w.size()): a torch.Size is a shape, not data (DDPG's fanin_init)
            data, dtype = np.zeros(tuple(data)), get_default_dtype()
        elif sizes:
            raise TypeError("Tensor(data, requires_grad=False, dtype=None): too many arguments")
        source = data if isinstance(data, Tensor) else None
        if source is not None:
            data = data.data.copy() if dtype is None else data.data
        arr = as_array(data, dtype)
        if arr.dtype.kind in "OUSVMm":  # objects, strings, bytes, records, dates: PyTorch's
            raise TypeError(f"cannot make a tensor of NumPy dtype {arr.dtype}; "  # TypeError
                            "expected numbers (or bools) or arrays of them")
        self.data = arr
        self._grad = None
        self.grad_fn = None
        self.requires_grad = False
        self._vc = None
        self._hooks = None
        self._fw = None  # forward-mode tangents: {level: tangent Tensor} (forward.py)
        self._view = self._views = None
        if requires_grad:
            self.requires_grad_(True)
        if source is not None and source._fw is not None and state.forward is not None:
            state.forward.detached(source, self)  # rg.func.vmap: the copy keeps the batch
        if state.tracer is not None:  # rg.jit: a copy of a traced tensor, or a constant
            if source is not None:
                state.tracer.copied(self, source)
            else:
                state.tracer.constant(self)

    @property
    def grad(self) -> Tensor | None:
        """The gradient that backward() accumulated into this leaf (None until then). On a
        non-leaf that does not retain its grad: None, with PyTorch's UserWarning."""
        g = self._grad
        if g is None and self.grad_fn is not None:
            _warn_non_leaf_grad(self)
        return g

    @grad.setter
    def grad(self, value: Tensor | None) -> None:
        if value is not None:
            _check_grad(self, value)
        self._grad = value

    def __reduce_ex__(self, protocol):
        """Pickled as usual, except a tensor in shared memory (`share_memory_()`): then by
        the shared file, so the receiving process maps the same memory (as PyTorch's)."""
        path = sharing.shared_path(self.data)
        if path is None:
            return _plain_reduce(self, protocol)
        return (_rebuild_shared, (type(self), path, self.data.dtype.str, self.data.shape,
                                  self.requires_grad))

    def __deepcopy__(self, memo: dict) -> Tensor:
        """Python's default deep copy (a shared tensor's copy is private, as in PyTorch).
        A non-leaf that requires grad is refused, as PyTorch does: its copy would carry a
        copy of the graph, whose backward reaches copies of the leaves, not the leaves."""
        if self.grad_fn is not None:
            raise RuntimeError(
                "Only Tensors created explicitly by the user (graph leaves) support the "
                "deepcopy protocol at the moment. If you were attempting to deepcopy a "
                "module, this may be because of a torch.nn.utils.weight_norm usage (or a "
                "pruned module built with grad enabled); detach() the tensor first")
        return copy._reconstruct(self, memo, *_plain_reduce(self, 4))

    @staticmethod
    def _wrap(arr: np.ndarray) -> Tensor:
        """A constant tensor around an existing array, without checks."""
        t = _new(Tensor)  # not a classmethod calling __new__: this is every op's hot path
        t.data = arr
        t._grad = None
        t.grad_fn = None
        t.requires_grad = False
        t._vc = None
        t._hooks = None
        t._fw = None
        t._view = t._views = None
        return t

    def _cell(self) -> list:
        """This tensor's version counter (shared with its views), made on first use.

        A node that saved this tensor's value as its output is given the counter
        then, so that its backward sees later in-place changes; so is a node whose
        forward handed its backward a stash (`Op.saving`), which may share the output's
        memory (standardize's xhat, an RNN's outputs): a change drops the stash.
        """
        vc = self._vc
        if vc is None:
            vc = self._vc = [0]
            node = self.grad_fn
            if node is not None and (node.out is self.data or (
                    node.out is not None and node.op.saving is not None)):
                node.out_vc = vc
        return vc

    # ------------------------------------------------------------ attributes

    @property
    def shape(self) -> Shape:
        """The shape, an `rg.Size` (a tuple, as NumPy's; `.numel()` as torch.Size)."""
        return _tuple_new(Shape, self.data.shape)

    @property
    def dtype(self) -> np.dtype:
        return self.data.dtype

    @property
    def ndim(self) -> int:
        return self.data.ndim

    @property
    def size(self) -> int:
        return _Size(self.data.size, self.data.shape)

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

    @property
    def device(self) -> devices.device:
        """Where the data lives: "cpu", or "cuda:N" for a CuPy array on GPU N."""
        d = self.data
        return devices.CPU if d.__class__ is np.ndarray else devices.device_of(d)

    @property
    def is_cuda(self) -> bool:
        return self.data.__class__ is not np.ndarray and self.device.type == "cuda"

    @property
    def _version(self) -> int:
        return 0 if self._vc is None else self._vc[0]

    @property
    def _base(self):
        """The tensor this one is a view of (for a view of a view, the first tensor that is
        not a view), or None: PyTorch's `Tensor._base`. A view op whose result is a copy
        (a reshape of a strided tensor, advanced indexing) makes no view. A dtype view
        (`view(dtype)`) is not one in PyTorch: None there, and for views of it too (PyTorch
        names the dtype view their base; the chain kept here does not hold it)."""
        v = getattr(self, "_view", None)
        if v is None or any(op.name == "bitcast" for op, _ in v[1]):
            return None
        root = v[0]
        if _HIDDEN_ROOTS.get(id(root)) is root:
            owner = _HIDDEN_OWNERS.get(id(root))
            if owner is None or owner is self:
                return None
            root = owner
        vc = getattr(self, "_vc", None)
        return root if vc is not None and vc is getattr(root, "_vc", None) else None

    def _is_view(self) -> bool:
        """Whether this tensor is a view of another (`_base` is not None), as PyTorch's."""
        return self._base is not None

    def dim(self) -> int:
        return self.data.ndim

    def numel(self) -> int:
        return self.data.size

    def __len__(self) -> int:
        if self.data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.data.shape[0]

    def __iter__(self):
        if self.data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self.data.shape[0]))

    # ------------------------------------------------------------ conversion

    def _scalar_check(self, what: str) -> None:
        if state.tracer is not None:
            state.tracer.refuse(what)
        if state.forward is not None and state.forward.vmapped:  # rg.func.vmap
            state.forward.check_read(self, what)
        if self.data.size != 1:
            raise RuntimeError(f"{what} needs a tensor with one element, got shape {self.shape}")

    def item(self):
        """The single value as a Python number."""
        self._scalar_check("item()")
        return self.data.item()

    def numpy(self, *, force: bool = False) -> np.ndarray:
        """The data as a NumPy array (shared, not copied); a device tensor must be copied to
        the host first, with `.cpu()`, or with `force=True` (PyTorch's spelling of that)."""
        if self.data.__class__ is not np.ndarray:
            if force:
                return self.detach().cpu().numpy()
            _on_device(self, "numpy()")
        if state.tracer is not None:
            state.tracer.refuse("numpy()")
        if state.forward is not None and state.forward.vmapped:  # rg.func.vmap
            state.forward.check_read(self, "numpy()")
        return self.data

    def tolist(self):
        if state.tracer is not None:
            state.tracer.refuse("tolist()")
        if state.forward is not None and state.forward.vmapped:  # rg.func.vmap
            state.forward.check_read(self, "tolist()")
        return self.data.tolist()

    def __array__(self, dtype=None, copy=None):
        if state.tracer is not None:
            state.tracer.refuse("conversion to a NumPy array")
        if state.forward is not None and state.forward.vmapped:  # rg.func.vmap
            state.forward.check_read(self, "conversion to a NumPy array")
        if self.data.__class__ is not np.ndarray:
            _on_device(self, "conversion to a NumPy array")
        return self.data if dtype is None else self.data.astype(dtype)

    def __array_wrap__(self, array, context=None, return_scalar: bool = False):
        """The result of a NumPy function that computed on the values (np.clip, np.cumprod,
        np.reshape, np.round of a tensor: latent-diffusion's cosine schedule clips a
        tensor with np.clip, then calls .numpy()) as a Tensor, as PyTorch's
        `__array_wrap__` gives: bool results as uint8, sharing the array's memory.
        Refused for a tensor that requires grad (PyTorch refuses its conversion to an
        array), so no history is silently dropped."""
        if self.requires_grad:
            raise RuntimeError("a NumPy function of a tensor that requires grad: its result "
                               "would have no history; use tensor.detach() first (as "
                               "PyTorch's conversion to an array asks)")
        if array.dtype == np.bool_:
            array = array.astype(np.uint8)
        return Tensor._wrap(np.asarray(array))

    def _scalar_value(self, what: str, error: type = RuntimeError):
        """The one element as a 0-d array: PyTorch converts any one-element tensor (shape
        (1,) or (1, 1) too: `int(torch.randint(W, (1,)))`), where NumPy 2 takes only 0-d.
        More elements raise `error`, PyTorch's type for that conversion."""
        if self.data.size != 1 and error is not RuntimeError:
            raise error(f"{what} needs a tensor with one element, got shape {self.shape}")
        self._scalar_check(what)
        return self.data if self.data.ndim == 0 else self.data.reshape(())

    def __bool__(self) -> bool:
        return bool(self._scalar_value("bool()"))

    def __float__(self) -> float:
        return float(self._scalar_value("float()", ValueError))

    def __int__(self) -> int:
        return int(self._scalar_value("int()", ValueError))

    def __complex__(self) -> complex:
        return complex(self._scalar_value("complex()", ValueError))

    def __index__(self) -> int:
        if self.dtype.kind not in "iub":  # PyTorch reads a bool tensor as 0 or 1 here
            raise TypeError(f"only integer tensors can be used as an index, not {self.dtype}")
        return int(self._scalar_value("index", TypeError))

    def __hash__(self) -> int:
        return id(self)

    def __format__(self, spec: str) -> str:
        """A 0-d tensor formats as its Python number (`f"{loss:.4f}"`), as in PyTorch;
        other tensors take only an empty spec."""
        if self.data.ndim == 0:
            return self.item().__format__(spec)
        return object.__format__(self, spec)

    def __repr__(self) -> str:
        if self.data.__class__ is not np.ndarray and self.device == "meta":  # no values
            size = tuple(self.data.shape)
            return f"tensor(..., device='meta', size={size}, dtype={self.data.dtype})"
        o = PRINT_OPTIONS
        fmt = None
        if o["sci_mode"] is True and self.data.dtype.kind == "f":
            fmt = {"float_kind": lambda v, p=o["precision"]: f"{v:.{p}e}"}
        body = np.array2string(devices.host(self.data), separator=", ",
                               precision=o["precision"], threshold=o["threshold"],
                               edgeitems=o["edgeitems"], max_line_width=o["linewidth"],
                               suppress_small=o["sci_mode"] is False, formatter=fmt,
                               prefix="tensor(")
        extra = f", dtype={self.data.dtype}"
        if self.data.__class__ is not np.ndarray:
            extra = f", device='{self.device}'" + extra
        if self.grad_fn is not None:
            extra += f", grad_fn=<{self.grad_fn.name}>"
        elif self.requires_grad:
            extra += ", requires_grad=True"
        return f"tensor({body}{extra})"

    # ------------------------------------------------------------ autograd

    def detach(self) -> Tensor:
        """The same data (shared), cut from the graph."""
        t = Tensor._wrap(self.data)
        t._vc = self._cell()
        if self._fw is not None and state.forward is not None and state.forward.vmapped:
            state.forward.detached(self, t)  # a batched tensor stays batched
        return t

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        if requires_grad and not is_float(self.data.dtype):
            raise GradDtypeError(f"only floating-point tensors can require gradients, got dtype "
                            f"{self.data.dtype}; convert with .float() or .double() first")
        if not requires_grad and self.grad_fn is not None:
            raise RuntimeError("requires_grad_(False) is only allowed on leaf tensors; use "
                               "detach() for a non-leaf")
        self.requires_grad = bool(requires_grad)
        return self

    def retain_grad(self) -> None:
        """Keep `.grad` on a non-leaf tensor after backward."""
        if not self.requires_grad:
            raise RuntimeError("retain_grad() on a tensor that does not require grad")
        if self.grad_fn is not None:
            self.grad_fn.retain = weakref.ref(self)

    def register_hook(self, hook) -> _HookHandle:
        """Call `hook(grad)` when the gradient arrives; a tensor it returns replaces it."""
        fn = hook
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that does not require grad")
        if self.grad_fn is not None:
            self.grad_fn._register_grad_hook(fn)
            return _HookHandle(self.grad_fn.hooks, fn)
        if self._hooks is None:
            self._hooks = []
        self._hooks.append(fn)
        return _HookHandle(self._hooks, fn)

def _warn_non_leaf_grad(t: Tensor) -> None:
    """PyTorch's warning for `.grad` read on a non-leaf that does not retain its grad
    (a common mistake: the gradient is on the leaf)."""
    ref = getattr(t.grad_fn, "retain", None)
    if ref is not None and ref() is t:
        return
    warnings.warn(
        "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its "
        ".grad attribute won't be populated during autograd.backward(). If you indeed want "
        "the .grad field to be populated for a non-leaf Tensor, use .retain_grad() on the "
        "non-leaf Tensor. If you access the non-leaf Tensor by mistake, make sure you access "
        "the leaf Tensor instead.", UserWarning, stacklevel=3)


def _on_device(t: Tensor, what: str):
    raise TypeError(f"can't convert {t.device} device type tensor to numpy ({what}). Use "
                    "Tensor.cpu() to copy the tensor to host memory first.")


def clear_grads(params, set_to_none: bool = True) -> None:
    """Reset each tensor's `.grad` to None, or to zeros (Module and Optimizer.zero_grad)."""
    for p in params:
        if set_to_none:
            p.grad = None  # written, not read first: rg.jit needs no guard on it
        elif p.grad is not None:
            p.grad = Tensor._wrap(np.zeros_like(p.data))


def _initial_grad(t: Tensor, gradient, create_graph: bool, what: str):
    if gradient is None:
        if t.data.size != 1:
            raise RuntimeError(f"{what}: grad can be implicitly created only for scalar "
                               f"outputs; the output is not a scalar (shape {t.shape}), so pass "
                               "a gradient of that shape")
        d = t.data
        if d.dtype.kind == "c":  # which real loss is meant is ambiguous: refuse, as PyTorch
            raise RuntimeError(f"{what}: grad can be implicitly created only for real scalar "
                               f"outputs but got {d.dtype}; take .real, .abs() or pass a "
                               "gradient")
        if d.__class__ is np.ndarray:
            g = np.empty(d.shape, dtype=d.dtype)  # np.ones is a slower Python wrapper
            g.fill(1)
        else:
            g = devices.namespace_of(d).ones(d.shape, dtype=d.dtype)
        return Tensor._wrap(g) if create_graph else g
    if isinstance(gradient, Tensor):
        g = gradient
        if g.data.__class__ is not t.data.__class__ and g.device != t.device:
            raise RuntimeError(f"{what}: invalid gradient: expected device {t.device} but got "
                               f"{g.device}")
    elif t.data.__class__ is np.ndarray:
        g = Tensor(np.asarray(gradient, dtype=t.dtype))
    else:  # numbers or arrays, for a device output
        raw = gradient if devices.is_device_array(gradient) else np.asarray(gradient, t.dtype)
        g = Tensor._wrap(devices.to(raw, t.device, t.dtype))
    if g.shape != t.shape:
        raise RuntimeError(f"{what}: gradient has shape {g.shape} but the output has shape "
                           f"{t.shape}")
    return g if create_graph else g.data


def as_tensor(x, dtype=None) -> Tensor:
    return x if isinstance(x, Tensor) and dtype is None else Tensor(x, dtype=dtype)




def _rebuild_shared(cls: type, path: str, dtype: str, shape: tuple, requires_grad: bool):
    """A shared tensor unpickled: its array mapped from the file the sender shares."""
    arr = sharing.attach(path, dtype, shape)
    if cls is Tensor:
        t = Tensor._wrap(arr)
        if requires_grad:
            t.requires_grad_(True)
        return t
    return cls(arr, requires_grad)
