"""`rg.nn`: modules with PyTorch's habits.

A `Module` registers the `Parameter`s and sub-modules assigned to its
attributes, in assignment order, so `parameters()`, `state_dict()` and
`load_state_dict()` see them under PyTorch's dotted names (`0.weight`,
`encoder.fc.bias`, ...). `train()`/`eval()` switch layers such as `Dropout`.
Parameters are also kept as plain attributes, so `self.weight` costs no
lookup hook in the forward pass.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, NamedTuple

import numpy as np

from .. import ops
from ..dtypes import as_array, get_default_dtype
from ..engine import apply, apply1
from ..tensor import Tensor, clear_grads
from . import functional, init
from . import functional as F

__all__ = [
    "Parameter", "Module", "Sequential", "ModuleList", "Identity", "Linear", "Conv2d",
    "MaxPool2d", "AvgPool2d", "Flatten", "Dropout", "ReLU", "Tanh", "Sigmoid", "Softmax",
    "LogSoftmax", "MSELoss", "CrossEntropyLoss", "NLLLoss", "BCEWithLogitsLoss", "functional",
    "init",
]


class Parameter(Tensor):
    """A tensor that a `Module` registers as a learnable parameter (requires grad by default).

    It shares the array of the tensor or array it is made from.
    """

    __slots__ = ()

    def __init__(self, data=None, requires_grad: bool = True):
        if data is None:
            arr = np.empty(0, dtype=get_default_dtype())
        elif isinstance(data, Tensor):
            arr = data.data
        else:
            arr = as_array(data)
        Tensor.__init__(self, arr)
        if requires_grad:
            self.requires_grad_(True)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()


class _IncompatibleKeys(NamedTuple):
    missing_keys: list
    unexpected_keys: list


class Module:
    """Base class of layers and models: subclass, assign layers in `__init__`, write `forward`."""

    training: bool

    def __init__(self) -> None:
        d = self.__dict__
        d["training"] = True
        d["_parameters"] = {}
        d["_buffers"] = {}
        d["_non_persistent"] = set()
        d["_modules"] = {}

    # ------------------------------------------------------------ registration

    def _registries(self):
        d = self.__dict__
        if "_parameters" not in d:
            raise AttributeError(f"cannot assign parameters or modules before "
                                 f"{type(self).__name__}.__init__() calls super().__init__()")
        return d["_parameters"], d["_modules"], d["_buffers"]

    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(value, Parameter):
            params, modules, buffers = self._registries()
            modules.pop(name, None)
            buffers.pop(name, None)
            params[name] = value
        elif isinstance(value, Module):
            params, modules, buffers = self._registries()
            params.pop(name, None)
            buffers.pop(name, None)
            modules[name] = value
        else:
            d = self.__dict__
            if name in d.get("_parameters", ()):
                if value is not None:
                    raise TypeError(f"cannot assign a {type(value).__name__} to parameter "
                                    f"'{name}' (a Parameter or None is expected)")
                d["_parameters"][name] = None
            elif name in d.get("_modules", ()):
                if value is not None:
                    raise TypeError(f"cannot assign a {type(value).__name__} to sub-module "
                                    f"'{name}' (a Module or None is expected)")
                d["_modules"][name] = None
            elif name in d.get("_buffers", ()):
                if value is not None and not isinstance(value, Tensor):
                    raise TypeError(f"cannot assign a {type(value).__name__} to buffer '{name}' "
                                    "(a Tensor or None is expected)")
                d["_buffers"][name] = value
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        for reg in ("_parameters", "_modules", "_buffers"):
            self.__dict__.get(reg, {}).pop(name, None)
        self.__dict__.get("_non_persistent", set()).discard(name)
        object.__delattr__(self, name)

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Register `param` (or None) under `name`."""
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot register a {type(param).__name__} as parameter '{name}' "
                            "(a Parameter or None is expected)")
        self._registries()[0][name] = param
        object.__setattr__(self, name, param)

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """A tensor that belongs to the module's state but is not learned (e.g. running stats)."""
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot register a {type(tensor).__name__} as buffer '{name}' "
                            "(a Tensor or None is expected)")
        self._registries()[2][name] = tensor
        if persistent:
            self._non_persistent.discard(name)
        else:
            self._non_persistent.add(name)
        object.__setattr__(self, name, tensor)

    def add_module(self, name: str, module: Module | None) -> None:
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module")
        if not isinstance(name, str) or "." in name or name == "":
            raise KeyError(f"module name must be a non-empty string without '.', got {name!r}")
        self._registries()[1][name] = module
        object.__setattr__(self, name, module)

    register_module = add_module

    # ------------------------------------------------------------ traversal

    def named_modules(self, memo: set | None = None, prefix: str = "",
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Module]]:
        """This module and all below it, depth first (PyTorch's order), without recursion."""
        seen = memo if memo is not None else set()
        stack = [(prefix, self)]
        while stack:
            name, mod = stack.pop()
            if remove_duplicate:
                if id(mod) in seen:
                    continue
                seen.add(id(mod))
            yield name, mod
            children = [(f"{name}.{k}" if name else k, m) for k, m in mod._modules.items()
                        if m is not None]
            stack.extend(reversed(children))

    def modules(self) -> Iterator[Module]:
        for _, m in self.named_modules():
            yield m

    def named_children(self) -> Iterator[tuple[str, Module]]:
        seen = set()
        for name, m in self._modules.items():
            if m is not None and id(m) not in seen:
                seen.add(id(m))
                yield name, m

    def children(self) -> Iterator[Module]:
        for _, m in self.named_children():
            yield m

    def _named_members(self, registry: str, prefix: str, recurse: bool,
                       remove_duplicate: bool = True):
        seen = set()
        mods = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse \
            else [(prefix, self)]
        for mod_name, mod in mods:
            for name, v in getattr(mod, registry).items():
                if v is None or (remove_duplicate and id(v) in seen):
                    continue
                seen.add(id(v))
                yield (f"{mod_name}.{name}" if mod_name else name), v

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True) -> Iterator[tuple[str, Parameter]]:
        return self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = "", recurse: bool = True,
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Tensor]]:
        return self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def apply(self, fn) -> Module:
        """Call `fn(module)` on every sub-module, then on this one (PyTorch's order)."""
        for m in reversed(list(self.modules())):
            fn(m)
        return self

    # ------------------------------------------------------------ modes and grads

    def train(self, mode: bool = True) -> Module:
        """Training mode (dropout active); `eval()` is `train(False)`."""
        if not isinstance(mode, bool):
            raise ValueError(f"training mode is expected to be a bool, got {mode!r}")
        for m in self.modules():
            m.__dict__["training"] = mode
        return self

    def eval(self) -> Module:
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clear every parameter's gradient (to None by default, as PyTorch does)."""
        clear_grads(self.parameters(), set_to_none)

    def to(self, dtype) -> Module:
        """Convert floating parameters and buffers to `dtype`, in place (same objects)."""
        dt = np.dtype(dtype)
        if dt.kind not in "fc":
            raise TypeError(f"Module.to() only accepts floating dtypes, got {dt}")
        for t in list(self.parameters()) + list(self.buffers()):
            if t.data.dtype.kind in "fc" and t.data.dtype != dt:
                t.data = t.data.astype(dt)
                if t.grad is not None:
                    t.grad = Tensor._wrap(t.grad.data.astype(dt))
        return self

    def double(self) -> Module:
        return self.to(np.float64)

    def float(self) -> Module:
        return self.to(np.float32)

    # ------------------------------------------------------------ state

    def _state_items(self, prefix: str = ""):
        """(name, tensor) for every parameter and persistent buffer, duplicates kept."""
        for mod_name, mod in self.named_modules(prefix=prefix, remove_duplicate=False):
            p = f"{mod_name}." if mod_name else ""
            for name, v in mod._parameters.items():
                if v is not None:
                    yield p + name, v
            for name, v in mod._buffers.items():
                if v is not None and name not in mod._non_persistent:
                    yield p + name, v

    def state_dict(self, destination: dict | None = None, prefix: str = "",
                   keep_vars: bool = False) -> OrderedDict:
        """Parameters and persistent buffers by dotted name (detached, sharing the arrays)."""
        out = OrderedDict() if destination is None else destination
        for name, t in self._state_items(prefix.rstrip(".")):
            out[name] = t if keep_vars else t.detach()
        return out

    def load_state_dict(self, state_dict: Mapping, strict: bool = True,
                        assign: bool = False) -> _IncompatibleKeys:
        """Copy values into this module's parameters and buffers, all or nothing.

        Everything is checked first: with `strict`, missing and unexpected keys
        are errors; a wrong shape or a non-numeric value always is. On any error
        a RuntimeError names every problem and nothing is changed.
        """
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"expected a mapping of names to tensors, got "
                            f"{type(state_dict).__name__}")
        own = OrderedDict(self._state_items())
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        problems, updates = [], []
        for k, t in own.items():
            if k not in state_dict:
                continue
            v = state_dict[k]
            arr = v.data if isinstance(v, Tensor) else v
            try:
                arr = np.asarray(arr)
            except Exception:  # noqa: BLE001 - anything that is not array-like
                arr = None
            if arr is None or arr.dtype.kind not in "biufc":
                problems.append(f"value for {k!r} is not numeric (got {type(v).__name__})")
            elif arr.shape != t.shape:
                problems.append(f"size mismatch for {k}: copying a param with shape "
                                f"{arr.shape} from checkpoint, the shape in current model is "
                                f"{t.shape}")
            else:
                updates.append((t, arr))
        errors = list(problems)
        if strict and unexpected:
            errors.insert(0, "Unexpected key(s) in state_dict: "
                          + ", ".join(f'"{k}"' for k in unexpected) + ".")
        if strict and missing:
            errors.insert(0, "Missing key(s) in state_dict: "
                          + ", ".join(f'"{k}"' for k in missing) + ".")
        if errors:
            raise RuntimeError(f"Error(s) in loading state_dict for {type(self).__name__}:\n\t"
                               + "\n\t".join(errors))
        for t, arr in updates:
            if assign:
                t.data = np.array(arr, dtype=t.data.dtype)
            else:
                t.data[...] = arr
            init._bump(t)
        return _IncompatibleKeys(missing, unexpected)

    # ------------------------------------------------------------ calling

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} does not define forward()")

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    def extra_repr(self) -> str:
        return ""

    def __repr__(self) -> str:
        lines = []
        extra = self.extra_repr()
        if extra:
            lines = extra.split("\n")
        for name, m in self._modules.items():
            body = repr(m).replace("\n", "\n  ")
            lines.append(f"({name}): {body}")
        main = type(self).__name__ + "("
        if lines:
            if len(lines) == 1 and not self._modules:
                return main + lines[0] + ")"
            main += "\n  " + "\n  ".join(lines) + "\n"
        return main + ")"


_CALL = Module.__call__


class _ModuleSequence(Module):
    """What Sequential and ModuleList share: length, iteration and append."""

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def append(self, module: Module):
        self.add_module(str(len(self._modules)), module)
        return self


class Sequential(_ModuleSequence):
    """Modules applied one after another; registered as `0`, `1`, ... (or by the given names)."""

    def __init__(self, *args: Module) -> None:
        super().__init__()
        if len(args) == 1 and isinstance(args[0], Mapping):
            for name, m in args[0].items():
                self.add_module(name, m)
        else:
            for i, m in enumerate(args):
                self.add_module(str(i), m)

    def forward(self, x):
        for m in self._modules.values():
            # straight to forward() unless a subclass changed __call__: one call less per layer
            x = m.forward(x) if m.__class__.__call__ is _CALL else m(x)
        return x

    def __getitem__(self, idx):
        items = list(self._modules.items())
        if isinstance(idx, slice):
            return Sequential(OrderedDict(items[idx]))
        try:
            return items[idx][1]
        except (IndexError, TypeError):
            raise IndexError(f"index {idx!r} is out of range for a Sequential of "
                             f"{len(items)} modules") from None


class ModuleList(_ModuleSequence):
    """A list of modules whose parameters are registered (`0`, `1`, ...)."""

    def __init__(self, modules: Iterable[Module] | None = None) -> None:
        super().__init__()
        for m in modules or ():
            self.append(m)

    def extend(self, modules: Iterable[Module]) -> ModuleList:
        for m in modules:
            self.append(m)
        return self

    def __getitem__(self, idx):
        items = list(self._modules.values())
        if isinstance(idx, slice):
            return ModuleList(items[idx])
        return items[idx]


class Identity(Module):
    def forward(self, x):
        return x


def _dtype(dtype):
    return get_default_dtype() if dtype is None else np.dtype(dtype)


def _weight_and_bias(layer: Module, shape: tuple, bias: bool, dtype) -> None:
    """A layer's `weight` of `shape` and `bias` (one per output, or None), initialised."""
    dt = _dtype(dtype)
    layer.weight = Parameter(np.empty(shape, dtype=dt))
    if bias:
        layer.bias = Parameter(np.empty(shape[0], dtype=dt))
    else:
        layer.register_parameter("bias", None)
    layer.reset_parameters()


class Linear(Module):
    """y = x @ weight.T + bias; weight (out_features, in_features), PyTorch's initialisation."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True,
                 dtype=None) -> None:
        super().__init__()
        if in_features < 0 or out_features < 0:
            raise ValueError(f"Linear: feature sizes must be non-negative, got "
                             f"({in_features}, {out_features})")
        self.in_features, self.out_features = in_features, out_features
        _weight_and_bias(self, (out_features, in_features), bias, dtype)

    def reset_parameters(self) -> None:
        init._default_layer_init(self.weight, self.bias)

    def forward(self, x):
        b = self.bias
        if x.__class__ is Tensor and x.data.ndim and x.data.shape[-1] == self.in_features \
                and self.weight.data.shape == (self.out_features, self.in_features) \
                and (b is None or b.data.shape == (self.out_features,)):
            return apply(ops.linear, x, self.weight, b)  # checked: skip F.linear's checks
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


def _pair(v, name: str) -> tuple[int, int]:
    if isinstance(v, (int, np.integer)):
        return (int(v), int(v))
    t = tuple(int(a) for a in v)
    if len(t) != 2:
        raise ValueError(f"{name} must be an int or a pair of ints, got {v!r}")
    return t


class Conv2d(Module):
    """2-D convolution over (N, C, H, W); weight (out, in/groups, kh, kw) as in PyTorch."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 dilation=1, groups: int = 1, bias: bool = True, padding_mode: str = "zeros",
                 dtype=None) -> None:
        super().__init__()
        if groups <= 0 or in_channels % groups or out_channels % groups:
            raise ValueError(f"Conv2d: in_channels ({in_channels}) and out_channels "
                             f"({out_channels}) must be divisible by groups ({groups})")
        if padding_mode != "zeros":
            raise ValueError(f"Conv2d: only padding_mode='zeros' is supported, got "
                             f"{padding_mode!r}")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size = _pair(kernel_size, "kernel_size")
        self.stride = _pair(stride, "stride")
        self.dilation = _pair(dilation, "dilation")
        if isinstance(padding, str):
            if padding == "valid":
                padding = 0
            elif padding == "same":
                if self.stride != (1, 1):
                    raise ValueError("Conv2d: padding='same' needs stride 1")
                total = [d * (k - 1) for d, k in zip(self.dilation, self.kernel_size)]
                if any(t % 2 for t in total):
                    raise ValueError("Conv2d: padding='same' with an even effective kernel size "
                                     "needs asymmetric padding, which is not supported")
                padding = (total[0] // 2, total[1] // 2)
            else:
                raise ValueError(f"Conv2d: padding must be an int, a pair, 'valid' or 'same', "
                                 f"got {padding!r}")
        self.padding = _pair(padding, "padding")
        self.groups = groups
        _weight_and_bias(self, (out_channels, in_channels // groups) + self.kernel_size, bias,
                         dtype)

    def reset_parameters(self) -> None:
        init._default_layer_init(self.weight, self.bias)

    def forward(self, x):
        return F.conv2d(x, self.weight, self.bias, self.stride, self.padding, self.dilation,
                        self.groups)

    def extra_repr(self) -> str:
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
             f"stride={self.stride}")
        if self.padding != (0, 0):
            s += f", padding={self.padding}"
        if self.dilation != (1, 1):
            s += f", dilation={self.dilation}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        return s


class MaxPool2d(Module):
    def __init__(self, kernel_size, stride=None, padding=0, dilation=1) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.dilation = padding, dilation

    def forward(self, x):
        return F.max_pool2d(x, self.kernel_size, self.stride, self.padding, self.dilation)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}")


class AvgPool2d(Module):
    def __init__(self, kernel_size, stride=None, padding=0) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding

    def forward(self, x):
        return F.avg_pool2d(x, self.kernel_size, self.stride, self.padding)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class Flatten(Module):
    """Flatten dimensions start_dim..end_dim (default: all but the batch dimension)."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, x):
        return x.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Dropout(Module):
    """Zero elements with probability p in training mode (scaled by 1/(1-p)); identity in eval."""

    def __init__(self, p: float = 0.5) -> None:
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p

    def forward(self, x):
        return F.dropout(x, self.p, self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}"


class ReLU(Module):
    def forward(self, x):
        return apply1(ops.relu, x) if x.__class__ is Tensor else F.relu(x)


class Tanh(Module):
    def forward(self, x):
        return F.tanh(x)


class Sigmoid(Module):
    def forward(self, x):
        return F.sigmoid(x)


class Softmax(Module):
    def __init__(self, dim: int = -1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return F.softmax(x, self.dim)


class LogSoftmax(Softmax):
    def forward(self, x):
        return F.log_softmax(x, self.dim)


class MSELoss(Module):
    def __init__(self, reduction: str = "mean") -> None:
        super().__init__()
        self.reduction = reduction

    def forward(self, input, target):
        return F.mse_loss(input, target, self.reduction)


class CrossEntropyLoss(Module):
    def __init__(self, weight=None, ignore_index: int = -100, reduction: str = "mean",
                 label_smoothing: float = 0.0) -> None:
        super().__init__()
        self.weight, self.ignore_index = weight, ignore_index
        self.reduction, self.label_smoothing = reduction, label_smoothing

    def forward(self, input, target):
        return F.cross_entropy(input, target, self.weight, self.ignore_index, self.reduction,
                               self.label_smoothing)


class NLLLoss(Module):
    def __init__(self, weight=None, ignore_index: int = -100, reduction: str = "mean") -> None:
        super().__init__()
        self.weight, self.ignore_index, self.reduction = weight, ignore_index, reduction

    def forward(self, input, target):
        return F.nll_loss(input, target, self.weight, self.ignore_index, self.reduction)


class BCEWithLogitsLoss(Module):
    def __init__(self, weight=None, reduction: str = "mean", pos_weight=None) -> None:
        super().__init__()
        self.weight, self.reduction, self.pos_weight = weight, reduction, pos_weight

    def forward(self, input, target):
        return F.binary_cross_entropy_with_logits(input, target, self.weight, self.reduction,
                                                  self.pos_weight)

