"""`rg.library`: PyTorch's custom-operator API (`torch.library.custom_op`), so code that
wraps a NumPy or hand-written kernel as an operator runs unchanged.

    @rg.library.custom_op("mylib::numpy_sin", mutates_args=())
    def numpy_sin(x: rg.Tensor) -> rg.Tensor:
        return rg.from_numpy(np.sin(x.numpy()))

    numpy_sin.register_autograd(backward, setup_context=setup_context)
    numpy_sin(x), rg.ops.mylib.numpy_sin(x)

As in PyTorch, the body runs without recording (below autograd): its gradient is the
registered `backward` (an `rg.autograd.Function` made of `setup_context` and
`backward`), and backward through an operator without one raises. An output may not
alias an input; an argument named in `mutates_args` has its version bumped, so a
gradient that saved it before refuses. `register_fake` and `register_vmap` are kept
but not used (retrograd has no fake tensors), and `register_kernel` for "cpu" replaces
the body.
"""

from __future__ import annotations

import inspect
import re
import sys
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from .autograd import Function
from .grad_mode import no_grad, state
from .tensor import Tensor

__all__ = ["custom_op", "CustomOpDef", "register_autograd", "register_fake",
           "register_kernel", "register_vmap"]

_NAME = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)::([A-Za-z_][A-Za-z0-9_]*)$")
_OPS: dict[str, CustomOpDef] = {}


class _Namespace:
    """`rg.ops.<namespace>`: the custom operators defined in it, by name."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, op: str):
        if op.startswith("__"):
            raise AttributeError(op)
        try:
            return _OPS[f"{self._name}::{op}"]
        except KeyError:
            raise AttributeError(f"'_OpNamespace' '{self._name}' object has no attribute "
                                 f"'{op}'") from None


def _publish(namespace: str) -> None:
    """Make `rg.ops.<namespace>` reach the namespace's operators (`torch.ops.ns.op`)."""
    table = sys.modules[__package__ + ".ops"]
    current = getattr(table, namespace, None)
    if isinstance(current, _Namespace):
        return
    if current is not None:
        raise ValueError(f"custom_op: the namespace '{namespace}' is taken by a built-in "
                         "name of rg.ops; choose another")
    setattr(table, namespace, _Namespace(namespace))


def _check_annotations(fn: Callable) -> inspect.Signature:
    sig = inspect.signature(fn)
    for p in sig.parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise ValueError(f"infer_schema(func): Parameter {p.name} is *args or **kwargs; "
                             "a custom op takes named parameters only")
        if p.annotation is inspect.Parameter.empty:
            raise ValueError(f"infer_schema(func): Parameter {p.name} must have a type "
                             f"annotation. Got func with signature {sig})")
    if sig.return_annotation is inspect.Signature.empty:
        raise ValueError(f"infer_schema(func): No return type annotation was provided. "
                         f"Got func with signature {sig})")
    return sig


def _tensors(value) -> list[Tensor]:
    if isinstance(value, Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [v for v in value if isinstance(v, Tensor)]
    return []


class CustomOpDef:
    """A custom operator: call it as the function it wraps. Like PyTorch's `CustomOpDef`."""

    def __init__(self, name: str, fn: Callable, mutates_args, sig: inspect.Signature) -> None:
        self._name = name
        self._namespace, self._opname = _NAME.match(name).groups()
        self._init_fn = fn
        self._kernel = fn
        self._sig = sig
        self._mutates = mutates_args
        self._backward = self._setup_context = None
        self._fake = self._vmap = None
        self._function: type[Function] | None = None
        self.__name__ = self._opname
        self.__doc__ = fn.__doc__

    def __repr__(self) -> str:
        return f"<CustomOpDef({self._name})>"

    @property
    def default(self) -> CustomOpDef:
        """The operator's only overload (`torch.ops.ns.op.default`)."""
        return self

    # ------------------------------------------------------------ registration

    def register_autograd(self, backward: Callable, /, *,
                          setup_context: Callable | None = None) -> None:
        """The gradient: `backward(ctx, *grads)` returns one gradient per input (None for
        a non-tensor), after `setup_context(ctx, inputs, output)` saved what it needs."""
        if not callable(backward):
            raise TypeError(f"register_autograd: backward must be callable, got "
                            f"{type(backward).__name__}")
        self._backward, self._setup_context = backward, setup_context
        self._function = None

    def register_fake(self, fn: Callable, /) -> Callable:
        """Kept for PyTorch's spelling; retrograd has no fake tensors, so it is not called."""
        self._fake = fn
        return fn

    def register_kernel(self, device_types, fn: Callable | None = None, /):
        """A body for `device_types` ("cpu" replaces the one given to `custom_op`; others
        are kept for the devices they name)."""
        def register(f: Callable) -> Callable:
            kinds = [device_types] if isinstance(device_types, str) or device_types is None \
                else list(device_types)
            if None in kinds or "cpu" in kinds:
                self._kernel = f
            return f
        return register if fn is None else register(fn)

    def register_vmap(self, fn: Callable | None = None, /):
        """Kept for PyTorch's spelling; not used by `rg.vmap`."""
        def register(f: Callable) -> Callable:
            self._vmap = f
            return f
        return register if fn is None else register(fn)

    def register_torch_dispatch(self, torch_dispatch_class, fn: Callable | None = None, /):
        """Kept for PyTorch's spelling; retrograd has no tensor subclasses to dispatch."""
        return (lambda f: f) if fn is None else fn

    # ------------------------------------------------------------ calling

    def _run(self, names, values):
        with no_grad():
            out = self._kernel(**dict(zip(names, values)))
        mutated = names if self._mutates == "unknown" else self._mutates
        for name, value in zip(names, values):
            if name in mutated:  # written in place: saved values of it are now stale
                for t in _tensors(value):
                    t._cell()[0] += 1
        inputs = [t for v in values for t in _tensors(v)]
        for o in _tensors(out) if not isinstance(out, tuple) else [
                t for v in out for t in _tensors(v)]:
            if any(o is t or (o.data.__class__ is np.ndarray
                              and t.data.__class__ is np.ndarray
                              and np.may_share_memory(o.data, t.data)) for t in inputs):
                raise RuntimeError(f"{self._opname} (custom op {self._name}): The output of "
                                   "this custom operator must not alias an input or another "
                                   "output; return a copy (x.clone()) instead")
        return out

    def _autograd_function(self, names) -> type[Function]:
        if self._function is not None:
            return self._function
        op, backward, setup = self, self._backward, self._setup_context

        def forward(*values):
            return op._run(names, values)

        if backward is None:
            def backward(ctx, *grads):
                raise RuntimeError(f"Trying to backward through {op._namespace}."
                                   f"{op._opname}.default but no autograd formula was "
                                   "registered. Please use register_autograd to add one.")

        body = {"forward": staticmethod(forward), "backward": staticmethod(backward),
                "setup_context": staticmethod(setup or (lambda ctx, inputs, output: None))}
        self._function = type(f"{self._opname}_Backward", (Function,), body)
        return self._function

    def __call__(self, *args, **kwargs):
        try:
            bound = self._sig.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{self._name}: {e}") from None
        bound.apply_defaults()
        names, values = tuple(bound.arguments), tuple(bound.arguments.values())
        wants = state.enabled and any(t.requires_grad for v in values for t in _tensors(v))
        if not wants:
            return self._run(names, values)
        if any(isinstance(v, (list, tuple)) and _tensors(v) and any(
                t.requires_grad for t in _tensors(v)) for v in values):
            raise NotImplementedError(f"{self._name}: gradients through a list of tensors "
                                      "passed to a custom op are not supported; pass the "
                                      "tensors as separate arguments")
        return self._autograd_function(names).apply(*values)


def custom_op(name: str, fn: Callable | None = None, /, *, mutates_args,
              device_types=None, schema: str | None = None, tags=None):
    """Wrap `fn` (type-annotated) as the operator `name` ("namespace::op"), reachable as
    `rg.ops.namespace.op`; as a decorator without `fn`. Like `torch.library.custom_op`."""
    match = _NAME.match(name) if isinstance(name, str) else None
    if match is None:
        raise ValueError(f"custom_op: expected a name 'namespace::op_name', got {name!r}")
    if mutates_args != "unknown" and (isinstance(mutates_args, str)
                                      or not isinstance(mutates_args, Iterable)):
        raise ValueError(f"custom_op: mutates_args must be an iterable of argument names or "
                         f"'unknown', got {mutates_args!r}")

    def wrap(f: Callable) -> CustomOpDef:
        sig = inspect.signature(f) if schema is not None else _check_annotations(f)
        if mutates_args != "unknown":
            unknown = set(mutates_args) - set(sig.parameters)
            if unknown:
                raise ValueError(f"custom_op {name}: mutates_args names {sorted(unknown)}, "
                                 f"which are not parameters of {f.__name__}")
        op = CustomOpDef(name, f, mutates_args, sig)
        _publish(match.group(1))
        _OPS[name] = op
        return op

    return wrap if fn is None else wrap(fn)


def _op(op) -> CustomOpDef:
    if isinstance(op, CustomOpDef):
        return op
    if isinstance(op, str) and op in _OPS:
        return _OPS[op]
    raise ValueError(f"expected a custom op or the name of one ('namespace::op'), got {op!r}")


def register_autograd(op, backward: Callable, /, *, setup_context: Callable | None = None,
                      lib: Any = None) -> None:
    """`torch.library.register_autograd(op, backward, setup_context=...)`."""
    _op(op).register_autograd(backward, setup_context=setup_context)


def register_fake(op, fn: Callable | None = None, /, *, lib: Any = None, _stacklevel=1):
    """`torch.library.register_fake` (kept; not called: there are no fake tensors)."""
    target = _op(op)
    return target.register_fake if fn is None else target.register_fake(fn)


def register_kernel(op, device_types, fn: Callable | None = None, /, *, lib: Any = None):
    """`torch.library.register_kernel`: a body for `device_types`."""
    return _op(op).register_kernel(device_types, fn)


def register_vmap(op, fn: Callable | None = None, /, *, lib: Any = None):
    """`torch.library.register_vmap` (kept; not used by `rg.vmap`)."""
    return _op(op).register_vmap(fn)
