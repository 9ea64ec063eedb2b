"""The record of a primitive op and the registry the op table fills.

An `Op` holds a NumPy forward and, per input, a vjp rule and a jvp rule. A rule
is `rule(m, g, out, *inputs, **attrs)`: `m` is the array namespace it computes
with, `g` the incoming cotangent (vjp) or an input's tangent (jvp), `out` the
op's output, then the op's inputs and attributes; it returns that input's
contribution. The same rule runs on arrays (`m` is `NUMPY`, each op's forward),
on recorded tensors (`m` is the engine's `TENSOR`, so a backward can itself be
differentiated) and on symbolic nodes (`rg.sym`): a rule calls other ops only
as `m.<name>(inputs..., attr=...)`.

This module imports nothing of retrograd: the engine reads these records, and
the op table (`retrograd.ops`) registers itself here.
"""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace

OPS: dict[str, Op] = {}
"""Every registered op, by name."""

NUMPY = SimpleNamespace()
"""Rules computing on arrays: `NUMPY.<name>` is that op's NumPy forward."""


class ShapeError(ValueError, RuntimeError):
    """Shapes that do not broadcast, or do not fit the operation (PyTorch: RuntimeError);
    both, so `except RuntimeError` in ported code and `except ValueError` catch it."""


class ArgumentError(ValueError, RuntimeError):
    """An argument out of its range: a negative standard deviation, a probability
    outside [0, 1], an empty input without an identity ... (PyTorch: RuntimeError).
    Defined in the core, beside ShapeError, so modules below the API raise it too."""


class DtypeError(TypeError, NotImplementedError):
    """A dtype the operation does not support, or a result that cannot be written into
    a tensor of a lower category (PyTorch: RuntimeError or NotImplementedError)."""


def broadcast_error(name: str, datas, error: Exception) -> Exception:
    """NumPy's broadcasting ValueError from an op's forward as a ShapeError naming the op
    and the shapes; any other error unchanged."""
    if error.__class__ is ValueError and "operands could not be broadcast" in str(error):
        shapes = " and ".join(str(tuple(getattr(d, "shape", ()))) for d in datas)
        return ShapeError(f"{name}(): shapes {shapes} do not broadcast")
    return error


class Op:
    """A primitive: a NumPy forward plus per-input vjp and jvp rules, and facts about it.

    Flags a rule's reader may need: `broadcast` (inputs broadcast against each
    other; the runner sums gradients back to each input's shape), `save_out` (rules
    read `out`; a tuple of input indices: only those inputs' rules read it), `reads`
    (indices of the inputs the rules read, for the in-place version check; None: all,
    "others": all but the one differentiated; a dict: for each input, the inputs its own
    rule reads, so only the rules a backward runs count), `view` (the output shares input 0's
    memory), `variadic` (any number of inputs; one rule, told `argnum`), `smooth`
    (twice differentiable almost everywhere),
    `saving` (an optional forward returning `(output, saved)`, used when the op is
    recorded: the vjp rules then get `saved` as their `out`, so a forward can hand
    its backward an intermediate without recomputing it).

    Facts for `rg.jit`: `fresh` (the forward returns a new array nothing else
    holds), `into` (the forward written as `f(*inputs, out=buffer)`, so a traced
    chain can reuse a dying buffer), `tuned` (the vjp rules have a NumPy fast path,
    so a traced backward runs each as one op), `fresh_vjps` (those fast paths
    return new arrays), `add_into` (`add_into(base, *inputs, **attrs)` adds the op's
    result onto `base` in base's buffer and returns it: a traced `x + op(...)` whose x
    dies there runs so, without the op's own full-size array; e.g. a slice's gradient),
    `donates` (a forward-only op with several outputs, run by `engine.apply_many`: its
    forward returns a tuple, output k may be written into input `donates[k]`'s buffer,
    and `into` takes `out=` a tuple of buffers or Nones; e.g. an optimizer's step),
    `tile` (with `add_into`: `(covers, first, set_into)`: when a traced sum of the op's
    results over one array covers it exactly once, `covers(attrs of each)` says so, the
    first is made by `first(g, **attrs)` without zeroing and the others are written in
    by `set_into(base, g, **attrs)`: a split's backward as a concatenation).
    """

    __slots__ = ("name", "forward", "vjps", "jvps", "broadcast", "save_out", "reads", "view",
                 "variadic", "smooth", "saving", "fresh", "into", "tuned", "fresh_vjps",
                 "read_cache", "simple", "add_into", "donates", "tile")

    def __init__(self, name: str, forward: Callable, vjps=None, jvps=None, *,
                 broadcast: bool = False, save_out: bool = False, reads=None,
                 view: bool = False, variadic: bool = False, smooth: bool = True,
                 saving: Callable | None = None, fresh: bool = False,
                 into: Callable | None = None, tuned: bool = False, fresh_vjps: bool = False,
                 add_into: Callable | None = None, donates: tuple | None = None,
                 tile: tuple | None = None):
        self.name = name
        self.forward = forward
        self.vjps = vjps            # tuple: one rule per input (None: not differentiable)
        self.jvps = jvps            # tuple: one rule per input, same arguments
        self.broadcast = broadcast
        self.save_out = save_out
        if reads is None and vjps is not None and not variadic:
            reads = tuple(range(len(vjps)))
        if view:  # shares input 0's memory but reads no value: a write into that memory
            reads = ()  # gives each live view a new history (`api.inplace.remake_views`)
        self.reads = reads
        self.view = view
        self.variadic = variadic
        self.smooth = smooth
        self.saving = saving
        self.fresh = fresh or into is not None
        self.into = into
        self.tuned = tuned
        self.fresh_vjps = fresh_vjps
        self.add_into = add_into
        self.donates = donates
        self.tile = tile
        self.read_cache = {}
        # One or two inputs and a rule for each: the backward walk calls the rule itself.
        self.simple = vjps is not None and len(vjps) <= 2 and None not in vjps and not variadic

    def backward(self, node, g, m, out=None) -> tuple | list:
        """Cotangents for the inputs in `node.needs`, reduced to their shapes.

        `out` is the op's output in `m`'s terms when the rules read it and `m` is
        not NUMPY (the caller re-records it); with NUMPY the node's saved array is used.
        """
        rules = self.vjps
        if rules is None:
            raise RuntimeError(f"op '{self.name}' is not differentiable")
        attrs = node.attrs
        if m is NUMPY:
            xs = node.datas
            out = node.out
        else:
            xs = node.inputs
        needs = node.needs
        if len(needs) == 1 and not self.variadic:  # the common case, unrolled
            i = needs[0]
            rule = rules[i]
            if rule is None:
                return (None,)
            if attrs:
                r = rule(m, g, out, *xs, **attrs)
            elif len(xs) == 1:  # called without * and **, which cost three times the call
                r = rule(m, g, out, xs[0])
            elif len(xs) == 2:
                r = rule(m, g, out, xs[0], xs[1])
            else:
                r = rule(m, g, out, *xs)
            if self.broadcast and r.shape != xs[i].shape:
                r = sum_to(m, r, xs[i].shape)
            if r.dtype.kind == "c" and xs[i].dtype.kind != "c":  # a real input's is real
                r = m.real(r)
            return (r,)
        results = []
        for i in needs:
            if self.variadic:
                r = rules[0](m, g, out, *xs, argnum=i, **attrs)
            else:
                rule = rules[i]
                if rule is None:
                    results.append(None)
                    continue
                r = rule(m, g, out, *xs, **attrs)
            if self.broadcast and r.shape != xs[i].shape:
                r = sum_to(m, r, xs[i].shape)
            if r.dtype.kind == "c" and xs[i].dtype.kind != "c":
                r = m.real(r)
            results.append(r)
        return results

    def __repr__(self) -> str:
        return f"Op({self.name})"


def defop(name: str, forward: Callable, vjps=None, jvps=None, **flags) -> Op:
    """Register an op: its forward, a vjp rule and a jvp rule per input (None: no gradient)."""
    op = Op(name, forward, vjps, jvps, **flags)
    OPS[name] = op
    setattr(NUMPY, name, forward)
    return op


def elementwise(name: str, forward: Callable, *derivs, **flags) -> Op:
    """An element-wise op: each rule is `g` times a local derivative, which serves as
    both the vjp and the jvp."""
    return defop(name, forward, derivs, derivs, broadcast=len(derivs) > 1, **flags)


def sum_to(m, g, shape: tuple):
    """Sum a broadcast gradient back down to `shape`."""
    lead = g.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(
        i + lead for i, s in enumerate(shape) if s == 1 and g.shape[i + lead] != 1)
    if axes:
        g = m.sum(g, axis=axes, keepdims=True)
    if lead or g.shape != tuple(shape):
        g = m.reshape(g, shape=tuple(shape))
    return g
