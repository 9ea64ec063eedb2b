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
gradient that saved it before refuses. `register_vmap`'s rule is what `rg.func.vmap`
runs (without one, the operator once per batch element, as torch's fallback); forward
mode (`rg.func.jvp`, `jacfwd`) through an operator refuses (torch.library has no
forward rule; torch.func.jvp silently gives a zero tangent). Lists of tensors as
arguments and results, and keyword-only arguments, reach `setup_context` and `backward`
as in torch. `register_fake` is kept but not used (retrograd has no fake tensors), and
`register_kernel` for "cpu" replaces the body.
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
        self._functions: dict[tuple, type[Function]] = {}  # by argument structure
        self._out_spec: tuple = ("one",)  # the last call's result structure
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
        self._functions = {}

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
        """The batching rule `fn(info, in_dims, *args, **kwonly) -> (outputs, out_dims)` that
        `rg.func.vmap` runs the operator by."""
        def register(f: Callable) -> Callable:
            self._vmap = f
            self._functions = {}
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

    def _autograd_function(self, names: tuple, in_spec: tuple) -> type[Function]:
        """The Function that runs the operator where autograd or a transform sees it (one
        per argument structure). Its inputs are the arguments with each list of tensors
        spread out, its outputs the result's tensors (lists spread out too); the user's
        `setup_context`, `backward` and vmap rule see the operator's own structure, as in
        torch: keyword-only arguments apart, a list of gradients for a list."""
        key = (names, in_spec)
        if key in self._functions:
            return self._functions[key]
        op, backward, setup, vmap = self, self._backward, self._setup_context, self._vmap
        kwonly = {p.name for p in self._sig.parameters.values() if p.kind is p.KEYWORD_ONLY}
        npos = sum(1 for n in names if n not in kwonly)

        def forward(*flat):
            flat_out, op._out_spec = _flatten_out(op._run(names, _unflatten(in_spec, flat)))
            return flat_out

        if backward is None:
            def backward(ctx, *grads):
                raise RuntimeError(f"Trying to backward through {op._namespace}."
                                   f"{op._opname}.default but no autograd formula was "
                                   "registered. Please use register_autograd to add one.")

        def setup_context(ctx, inputs, output):
            ctx._rg_out_spec = op._out_spec
            if setup is None:
                return
            values = _unflatten(in_spec, inputs)
            out = _unflatten_out(ctx._rg_out_spec, output)
            if kwonly:  # torch's form for an operator with keyword-only arguments
                setup(ctx, values[:npos], dict(zip(names[npos:], values[npos:])), out)
            else:
                setup(ctx, values, out)

        def run_backward(ctx, *grads):
            spec = ctx._rg_out_spec
            per = _unflatten_out(spec, grads, grads=True)  # one gradient per output
            res = backward(ctx, *(per if spec[0] == "tuple" else (per,)))
            res = list(res) if isinstance(res, (tuple, list)) else [res]
            if len(res) != npos:
                raise RuntimeError(f"{op._name}: backward returned {len(res)} gradients but "
                                   f"the operator takes {npos} positional inputs")
            res += [None] * (len(names) - npos)  # keyword-only arguments get none
            return tuple(_flatten_grads(in_spec, res))

        def jvp(ctx, *tangents):
            raise NotImplementedError(
                f"{op._name}: forward-mode derivatives (rg.func.jvp, jacfwd, hessian, hvp) "
                "through a custom op are not supported: it has no jvp rule (torch.library "
                "registers none); write the function with rg ops, or as an "
                "rg.autograd.Function with a jvp staticmethod")

        body = {"forward": staticmethod(forward), "backward": staticmethod(run_backward),
                "setup_context": staticmethod(setup_context), "jvp": staticmethod(jvp)}
        if vmap is not None:
            def run_vmap(info, in_dims, *flat):
                values, dims = _unflatten(in_spec, flat), _unflatten(in_spec, in_dims)
                kw = dict(zip(names[npos:], values[npos:]))
                out, out_dims = vmap(info, dims[:npos], *values[:npos], **kw)
                flat_out, op._out_spec = _flatten_out(out)
                return flat_out, tuple(_flatten_dims(op._out_spec, out_dims))
            body["vmap"] = staticmethod(run_vmap)
        else:  # torch's fallback: the operator once per batch element, results stacked
            body["generate_vmap_rule"] = True
        fn = self._functions[key] = type(f"{self._opname}_Backward", (Function,), body)
        return fn

    def __call__(self, *args, **kwargs):
        try:
            bound = self._sig.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{self._name}: {e}") from None
        bound.apply_defaults()
        names, values = tuple(bound.arguments), tuple(bound.arguments.values())
        wants = state.enabled and any(t.requires_grad for v in values for t in _tensors(v))
        if not wants and (state.forward is None or not any(
                t._fw is not None for v in values for t in _tensors(v))):
            return self._run(names, values)
        # through autograd, or a transform whose tangents or batches reach an input: the
        # registered gradient, the registered vmap rule, or a refusal (never a tangent
        # silently dropped by a kernel that reads NumPy)
        spec = _in_spec(values)
        out = self._autograd_function(names, spec).apply(*_flatten_in(values))
        return _unflatten_out(self._out_spec, out if isinstance(out, tuple) else (out,))


def _is_tensor_list(v) -> bool:
    return isinstance(v, (list, tuple)) and bool(v) and all(isinstance(u, Tensor) for u in v)


def _in_spec(values: tuple) -> tuple:
    """Per argument: None, or (list or tuple, length) for a list of tensors."""
    return tuple((type(v), len(v)) if _is_tensor_list(v) else None for v in values)


def _flatten_in(values: tuple) -> tuple:
    flat = []
    for v in values:
        if _is_tensor_list(v):
            flat.extend(v)
        else:
            flat.append(v)
    return tuple(flat)


def _unflatten(spec: tuple, flat) -> tuple:
    """The arguments (or per-argument in_dims) from their spread-out form."""
    out, k = [], 0
    for s in spec:
        if s is None:
            out.append(flat[k])
            k += 1
        else:
            out.append(s[0](flat[k:k + s[1]]))
            k += s[1]
    return tuple(out)


def _flatten_out(out) -> tuple[tuple, tuple]:
    """A result's tensors, spread out, and its spec: ("one",) for a lone tensor, else
    ("tuple" or "list", per item: "t", (list or tuple, n) or ("v", the value))."""
    if isinstance(out, Tensor):
        return (out,), ("one",)
    items = out if isinstance(out, tuple) else (out,)
    flat, spec = [], []
    for v in items:
        if isinstance(v, Tensor):
            flat.append(v)
            spec.append("t")
        elif _is_tensor_list(v):
            flat.extend(v)
            spec.append((type(v), len(v)))
        else:
            spec.append(("v", v))
    return tuple(flat), ("tuple" if isinstance(out, tuple) else "list", tuple(spec))


def _unflatten_out(spec: tuple, flat, grads: bool = False):
    """`_flatten_out`'s inverse; with `grads`, a non-tensor output's slot is None (the
    gradient torch passes for it)."""
    if spec[0] == "one":
        return flat[0]
    out, k = [], 0
    for s in spec[1]:
        if s == "t":
            out.append(flat[k])
            k += 1
        elif s[0] == "v":
            out.append(None if grads else s[1])
        else:
            out.append(s[0](flat[k:k + s[1]]))
            k += s[1]
    return tuple(out) if spec[0] == "tuple" else out[0]


def _flatten_dims(spec: tuple, out_dims) -> list:
    """A vmap rule's out_dims, one per spread-out output tensor."""
    if spec[0] == "one":
        return [out_dims[0] if isinstance(out_dims, (tuple, list)) else out_dims]
    dims = out_dims if isinstance(out_dims, tuple) and spec[0] == "tuple" else (out_dims,)
    res = []
    for s, d in zip(spec[1], dims if len(dims) == len(spec[1]) else dims * len(spec[1])):
        if s == "t":
            res.append(d)
        elif s[0] != "v":
            res.extend(d if isinstance(d, (list, tuple)) else [d] * s[1])
    return res


def _flatten_grads(spec: tuple, grads: list) -> list:
    """Gradients per argument (a list of them for a list argument), spread out as the
    Function's inputs are."""
    res = []
    for s, g in zip(spec, grads):
        if s is None:
            res.append(g)
        elif g is None:
            res.extend([None] * s[1])
        else:
            if len(g) != s[1]:
                raise RuntimeError(f"backward returned {len(g)} gradients for a list of "
                                   f"{s[1]} tensors")
            res.extend(g)
    return res


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
    """`torch.library.register_vmap`: the operator's batching rule for `rg.func.vmap`."""
    return _op(op).register_vmap(fn)
