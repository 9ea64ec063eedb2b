"""`functional_call`: run a module with some of its parameters and buffers replaced by
given tensors, without changing the module (the values are swapped in for the call and
the module's own put back afterwards). `rg.func.functional_call` is the current name;
`rg.nn.utils.stateless.functional_call` is PyTorch's deprecated one, and warns."""

from __future__ import annotations

import warnings
from contextlib import contextmanager

from ...primitive import ArgumentError
from ...tensor import Tensor
from ..module import Module

__all__ = ["functional_call"]

_MISSING = object()


def _owner(module: Module, name: str) -> tuple[Module, str]:
    """The sub-module holding the dotted `name`, and the last part of it."""
    *path, attr = name.split(".")
    mod = module
    for part in path:
        sub = mod.__dict__.get("_modules", {}).get(part)
        if sub is None:
            raise AttributeError(f"{type(mod).__name__} has no sub-module '{part}' (while "
                                 f"looking up '{name}')")
        mod = sub
    return mod, attr


def _untie(module: Module, values: dict, tie_weights: bool) -> dict:
    """With `tie_weights`, a value given for one name of a tensor shared by several names
    (tied weights) is used for all of them; different values for tied names are an error."""
    if not tie_weights:
        return dict(values)
    names_of: dict = {}
    for reg in ("named_parameters", "named_buffers"):
        for n, t in getattr(module, reg)(remove_duplicate=False):
            names_of.setdefault(id(t), []).append(n)
    out = dict(values)
    for names in names_of.values():
        if len(names) < 2:
            continue
        given = [n for n in names if n in values]
        if not given:
            continue
        first = values[given[0]]
        for n in given[1:]:
            if values[n] is not first:
                raise ArgumentError(f"functional_call got multiple values for keys {given}, "
                                    "which are tied. Consider using tie_weights=False")
        for n in names:
            out.setdefault(n, first)
    return out


@contextmanager
def _reparametrize_module(module: Module, values: dict, tie_weights: bool = True,
                          strict: bool = False):
    values = _untie(module, values, tie_weights)
    if strict:
        own = {n for n, _ in module.named_parameters(remove_duplicate=False)} | \
            {n for n, _ in module.named_buffers(remove_duplicate=False)}
        missing = sorted(own - set(values))
        unexpected = sorted(set(values) - own)
        if missing or unexpected:
            msg = []
            if unexpected:
                msg.append("Unexpected key(s): " + ", ".join(repr(k) for k in unexpected) + ".")
            if missing:
                msg.append("Missing key(s): " + ", ".join(repr(k) for k in missing) + ".")
            raise RuntimeError(f"Error(s) in reparametrizing for {type(module).__name__}:\n\t"
                               + "\n\t".join(msg))
    saved = []
    try:
        for name, value in values.items():
            mod, attr = _owner(module, name)
            d = mod.__dict__
            regs = [r for r in ("_parameters", "_buffers") if attr in d.get(r, ())]
            saved.append((mod, attr, d.get(attr, _MISSING),
                          [(r, d[r][attr]) for r in regs]))
            for r in regs:
                d[r][attr] = value
            d[attr] = value
        yield
    finally:
        for mod, attr, old, regs in reversed(saved):
            d = mod.__dict__
            if old is _MISSING:
                d.pop(attr, None)
            else:
                d[attr] = old
            for r, v in regs:
                d[r][attr] = v


def _functional_call(module: Module, parameter_and_buffer_dicts, args=None, kwargs=None, *,
                     tie_weights: bool = True, strict: bool = False):
    if isinstance(parameter_and_buffer_dicts, dict):
        values = parameter_and_buffer_dicts
    elif isinstance(parameter_and_buffer_dicts, (tuple, list)):
        values = {}
        for d in parameter_and_buffer_dicts:
            if not isinstance(d, dict):
                raise ArgumentError("Expected all elements of parameter_and_buffer_dicts to be "
                                    f"dictionaries, got {type(d).__name__}")
            repeated = [k for k in d if k in values]
            if repeated:
                raise ArgumentError(f"{repeated} appeared in multiple dictionaries; behavior of "
                                    "functional call is ambiguous")
            values.update(d)
    else:
        raise ArgumentError("Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of "
                            f"dicts, but got {type(parameter_and_buffer_dicts).__name__}")
    for k, v in values.items():
        if not isinstance(v, Tensor) and v is not None:
            raise TypeError(f"functional_call: the value for '{k}' is a {type(v).__name__}, "
                            "not a Tensor")
    if kwargs is None:
        kwargs = {}
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    with _reparametrize_module(module, values, tie_weights=tie_weights, strict=strict):
        return module(*args, **kwargs)


def functional_call(module: Module, parameters_and_buffers: dict, args=None, kwargs=None, *,
                    tie_weights: bool = True, strict: bool = False):
    """Deprecated PyTorch spelling of `rg.func.functional_call` (warns, then calls it)."""
    warnings.warn("`torch.nn.utils.stateless.functional_call` is deprecated as of PyTorch "
                  "2.0 and will be removed in a future version of PyTorch. Please use "
                  "`torch.func.functional_call` instead which is a drop-in replacement.",
                  FutureWarning, stacklevel=2)
    return _functional_call(module, parameters_and_buffers, args, kwargs,
                            tie_weights=tie_weights, strict=strict)
