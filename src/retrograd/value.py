"""Scalar reverse-mode autodiff: the micrograd-compatible ``Value``.

``Value`` is the engine of the lesson: one float per node, ``+ - * / **``,
``relu() tanh() exp() log() sigmoid()`` and ``backward()``. Code written for
micrograd's ``Value`` (its ``nn.py`` and its demo included) runs unchanged and
gives the same numbers. Inside, three things differ from micrograd, on purpose:

* No closures. An op's output stores its children (``_a``, ``_b``) and its op;
  ``backward()`` works out the local derivatives from those (a one-input op
  stores its local derivative ``_d`` instead). Nothing points back at the
  output, so a graph has no reference cycles and reference counting frees it
  the moment its last name goes away.
* No recursion. ``backward()`` walks the graph with an explicit stack, so a
  chain of a million ops works (micrograd stops near a thousand).
* ``backward()`` may be called twice; see its docstring for what ``.grad``
  then holds.

Numbers follow IEEE float rules like NumPy and PyTorch: ``Value(0.0).log()``
is ``-inf`` and ``Value(1e3).exp()`` is ``inf`` rather than a Python exception.

Speed: Python's cyclic garbage collector exists for reference cycles, and a
graph of Values has none: a node refers only to floats, its op's name and older
nodes. So every node is taken off the collector's list when it is made
(``untrack`` from ``_cpython_speedups``, a no-op outside CPython), and reference
counting alone frees it, as it would anyway. The one exception is a node given a
Python function (micrograd's way to add an op, ``out._backward = f``): f usually
refers back to ``out``, so that node goes back on the list and its cycle is
collected as usual. What this saves is measured in ``benchmarks/README.md``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from numbers import Real

from ._cpython_speedups import track, untrack, warm_up

__all__ = ["Value"]

_new = object.__new__  # makes an empty Value without running __init__
_ADD = "+"  # the op strings that backward() tells apart
_MUL = "*"
_INF = math.inf
_NAN = math.nan


class Value:
    """A scalar in a computation graph: ``.data`` (a float) and ``.grad``."""

    # Slots, no __dict__: the garbage collector walks every live node now and
    # then, and its time grows with the size of a node. So other attributes
    # cannot be set on a Value.
    # data, grad  the number, and d(output)/d(this node): Python floats
    # _op         the op that made this node, spelt as micrograd spells it
    # _a, _b      the children of an op (_b is None for a one-input op);
    #             None on a leaf
    # _d          one-input op: d(this)/d(_a), worked out in the forward pass
    #             (+ and * need none: d/da is 1, or the other child's data).
    #             On a leaf, its running total of .grad, set aside while a
    #             backward() call sums this call's share (None at rest).
    # _n          None on a leaf; on any other node, how many parents still
    #             have to hand it gradient during backward() (0 at rest)
    # _custom     (children, backward function) of a node made the micrograd
    #             way to add an op: Value(data, children, op), then
    #             ``out._backward = f``; None on a leaf
    __slots__ = ("data", "grad", "_op", "_a", "_b", "_d", "_n", "_custom", "__weakref__")

    def __init__(self, data: float, _children: Iterable[Value] = (), _op: str = "") -> None:
        self.data = data if data.__class__ is float else _to_float(data)
        self.grad = 0.0
        self._op = _op
        self._a = None
        self._b = None
        self._d = None
        kids = tuple(_children)
        for kid in kids:
            if not isinstance(kid, Value):
                raise TypeError(f"Value children must be Values, got {type(kid).__name__}")
        self._custom = (kids, None) if kids else None
        self._n = 0 if kids else None
        if not kids:  # a node with children may get a Python function: see the docstring
            untrack(self)

    # ---- ops: each computes its result and keeps what its derivative needs ----

    def __add__(self, other: Value | float) -> Value:
        if other.__class__ is not Value:
            other = _lift(other)
        out = _new(Value)
        out.data = self.data + other.data
        out.grad = 0.0
        out._op = _ADD
        out._a = self
        out._b = other
        out._n = 0
        untrack(out)
        return out

    def __mul__(self, other: Value | float) -> Value:
        if other.__class__ is not Value:
            other = _lift(other)
        out = _new(Value)
        out.data = self.data * other.data
        out.grad = 0.0
        out._op = _MUL
        out._a = self
        out._b = other
        out._n = 0
        untrack(out)
        return out

    def __pow__(self, other: float) -> Value:
        if not isinstance(other, Real):
            raise _pow_type_error(self, other)
        x = self.data
        # d(x**n)/dx = n * x**(n-1); x**0 is constant even at x = 0
        local = 0.0 if other == 0 else other * _pow(x, other - 1)
        return _unary(self, _pow(x, other), f"**{other}", local)

    def __rpow__(self, other: float) -> Value:  # other ** self
        raise _pow_type_error(other, self)

    def relu(self) -> Value:
        x = self.data
        if x < 0:
            return _unary(self, 0.0, "ReLU", 0.0)
        return _unary(self, x, "ReLU", 1.0 if x > 0 else 0.0)

    def tanh(self) -> Value:
        t = math.tanh(self.data)
        return _unary(self, t, "tanh", 1.0 - t * t)

    def exp(self) -> Value:
        try:
            e = math.exp(self.data)
        except OverflowError:
            e = _INF
        return _unary(self, e, "exp", e)

    def log(self) -> Value:
        x = self.data
        if x > 0:
            y = math.log(x)
        else:
            y = -_INF if x == 0 else _NAN
        local = 1.0 / x if x != 0 else math.copysign(_INF, x)
        return _unary(self, y, "log", local)

    def sigmoid(self) -> Value:
        x = self.data
        if x >= 0:
            s = 1.0 / (1.0 + math.exp(-x))
        else:  # written so that exp cannot overflow
            e = math.exp(x)
            s = e / (1.0 + e)
        return _unary(self, s, "sigmoid", s * (1.0 - s))

    # ---- derived ops, written through the ones above (as micrograd does) --

    def __neg__(self) -> Value:  # -self
        return self * -1

    def __radd__(self, other: float) -> Value:  # other + self
        return self + other

    def __sub__(self, other: Value | float) -> Value:  # self - other
        return self + (-other)

    def __rsub__(self, other: float) -> Value:  # other - self
        return other + (-self)

    def __rmul__(self, other: float) -> Value:  # other * self
        return self * other

    def __truediv__(self, other: Value | float) -> Value:  # self / other
        return self * other**-1

    def __rtruediv__(self, other: float) -> Value:  # other / self
        return other * self**-1

    def __repr__(self) -> str:
        return f"Value(data={self.data}, grad={self.grad})"

    # ---- backward ------------------------------------------------------------

    def backward(self) -> None:
        """Compute d(self)/d(node) for every node ``self`` depends on.

        Nodes made by an op have their ``.grad`` *set* to it, so after any call
        they hold that call's gradient, as after micrograd's (single) call.
        Leaves, the Values you make yourself (parameters, inputs, constants),
        have it *added*, like PyTorch's ``.grad``: call ``backward()`` twice
        and each leaf holds exactly twice the gradient, so zero the leaves
        between steps (micrograd's ``zero_grad``).

        Two passes over the graph, both with an explicit stack (no recursion):
        count each node's parents, then hand gradients down, a node going as
        soon as all of its parents have handed it theirs (Kahn's algorithm).
        Not thread-safe: two threads must not run backward() on one graph.
        """
        if self._n is None:  # self is a leaf: d(self)/d(self) = 1
            self.grad += 1.0
            return
        leaves: list[Value] = []
        try:
            _count_parents(self, leaves)
            _send_gradients(self)
            for leaf in leaves:  # add this call's share to each leaf's running total
                leaf.grad = leaf._d + leaf.grad
                leaf._d = None
        except BaseException:  # e.g. from a user's _backward, or Ctrl-C
            _reset(self)  # leave the graph ready for another backward()
            raise

    # ---- micrograd's graph attributes, for code that reads them -------------

    @property
    def _prev(self) -> set[Value]:
        """The children, as a set (micrograd's type), for drawing the graph."""
        a = self._a
        if a is not None:
            return {a} if self._b is None else {a, self._b}
        return set(self._custom[0]) if self._custom is not None else set()

    @property
    def _backward(self) -> Callable[[], None]:
        """This node's step of the chain rule, as micrograd exposes it."""
        if self._a is not None:
            return self._chain_rule
        if self._custom is not None and self._custom[1] is not None:
            return self._custom[1]
        return _do_nothing

    @_backward.setter
    def _backward(self, fn: Callable[[], None]) -> None:
        # micrograd code adds an op with out = Value(data, children, op) and
        # then ``out._backward = f``, where f adds into the children's .grad.
        a = self._a
        if a is not None:  # an op's output becomes a node of that kind
            kids = (a,) if self._b is None else (a, self._b)
            self._a = self._b = None
        else:
            kids = self._custom[0] if self._custom is not None else ()
        self._custom = (kids, fn)
        track(self)  # fn may refer back to this node: a cycle to collect
        if self._n is None:  # a leaf: give it a turn in backward(), as micrograd does
            self._n = 0

    def _chain_rule(self) -> None:
        """Add this node's gradient times each local derivative into its children.

        The readable one-node form of what ``_send_gradients`` does inline.
        """
        a, b, g = self._a, self._b, self.grad
        if b is None:  # one-input op
            a.grad += self._d * g
        elif self._op is _MUL:  # d(a*b)/da = b, d(a*b)/db = a
            a.grad += b.data * g
            b.grad += a.data * g
        else:  # d(a+b)/da = d(a+b)/db = 1
            a.grad += g
            b.grad += g


# ---- backward's two passes ---------------------------------------------------
# This is the inner loop of every training step, so the code for the two
# children is written out rather than looped over.


def _count_parents(root: Value, leaves: list[Value]) -> None:
    """Pass 1: count the parents of each node under ``root`` and zero its grad;
    collect the leaves, setting their running totals aside in ``_d``."""
    stack = [root]
    while stack:
        v = stack.pop()
        c = v._a
        if c is None:  # made by Value(data, children, op)
            for c in v._custom[0]:
                n = c._n
                if n is None:
                    if c._d is None:
                        c._d = c.grad
                        c.grad = 0.0
                        leaves.append(c)
                else:
                    c._n = n + 1
                    if n == 0:
                        c.grad = 0.0
                        stack.append(c)
            continue
        n = c._n
        if n is None:  # a leaf, seen for the first time: set its total aside
            if c._d is None:
                c._d = c.grad
                c.grad = 0.0
                leaves.append(c)
        else:
            c._n = n + 1
            if n == 0:  # seen for the first time
                c.grad = 0.0
                stack.append(c)
        c = v._b
        if c is not None:
            n = c._n
            if n is None:
                if c._d is None:
                    c._d = c.grad
                    c.grad = 0.0
                    leaves.append(c)
            else:
                c._n = n + 1
                if n == 0:
                    c.grad = 0.0
                    stack.append(c)


def _send_gradients(root: Value) -> None:
    """Pass 2: hand each node's gradient to its children (the chain rule); a
    child goes on the stack once its last parent is done. Counts return to 0."""
    root.grad = 1.0
    stack = [root]
    while stack:
        v = stack.pop()
        g = v.grad
        a = v._a
        if a is None:  # made by Value(data, children, op)
            kids, fn = v._custom
            if fn is not None:
                fn()  # adds into the children's .grad itself
            for c in kids:
                n = c._n
                if n is not None:
                    n -= 1
                    c._n = n
                    if n == 0:
                        stack.append(c)
            continue
        b = v._b
        if b is None:  # one-input op
            a.grad += v._d * g
        elif v._op is _MUL:  # d(a*b)/da = b, d(a*b)/db = a
            a.grad += b.data * g
            b.grad += a.data * g
        else:  # d(a+b)/da = d(a+b)/db = 1
            a.grad += g
            b.grad += g
        n = a._n
        if n is not None:  # not a leaf
            n -= 1
            a._n = n
            if n == 0:  # all its parents are done: its gradient is complete
                stack.append(a)
        if b is not None:
            n = b._n
            if n is not None:
                n -= 1
                b._n = n
                if n == 0:
                    stack.append(b)


def _reset(root: Value) -> None:
    """After an error inside backward(): put every count and leaf total back."""
    seen = {id(root)}
    stack = [root]
    while stack:
        v = stack.pop()
        if v._n is None:  # a leaf
            if v._d is not None:
                v.grad = v._d
                v._d = None
            continue
        v._n = 0
        kids = (v._a, v._b) if v._a is not None else v._custom[0]
        for c in kids:
            if c is not None and id(c) not in seen:
                seen.add(id(c))
                stack.append(c)


# ---- helpers -------------------------------------------------------------------


def _unary(a: Value, data: float, op: str, local: float) -> Value:
    """The output node of a one-input op: child ``a``, d(out)/da = ``local``."""
    out = _new(Value)
    out.data = data
    out.grad = 0.0
    out._op = op
    out._a = a
    out._b = None
    out._d = local
    out._n = 0
    untrack(out)
    return out


def _lift(x: object) -> Value:
    """Wrap a plain number as a constant leaf, as micrograd does for ``v + 1``."""
    return x if isinstance(x, Value) else Value(x)


def _to_float(x: object) -> float:
    """``x`` as a Python float, or a TypeError that names its type."""
    if isinstance(x, Real):
        return float(x)
    if not isinstance(x, (str, bytes, bytearray, complex, Value)) and hasattr(x, "__float__"):
        try:
            return float(x)  # e.g. a 0-d NumPy array or a Decimal
        except (TypeError, ValueError):
            pass
    raise TypeError(f"Value() needs a real number (int or float), got {type(x).__name__}")


def _pow(x: float, n: float) -> float:
    """``x ** n`` under IEEE rules (C's pow): inf or nan instead of an exception."""
    try:
        r = x**n
    except ZeroDivisionError:  # 0.0 ** negative
        odd = n % 2 == 1
        return math.copysign(_INF, x) if odd else _INF
    except OverflowError:
        return -_INF if x < 0 and n % 2 == 1 else _INF
    return _NAN if r.__class__ is complex else r  # negative ** fraction


def _pow_type_error(base: object, exponent: object) -> TypeError:
    """The error for ``base ** exponent`` when the exponent is not a number."""
    if isinstance(exponent, Value):
        return TypeError(
            f"{type(base).__name__} ** Value is not supported: the exponent must be an int "
            "or float. For x ** y with x > 0, write (y * x.log()).exp()."
        )
    return TypeError(f"Value ** needs an int or float exponent, got {type(exponent).__name__}")


def _do_nothing() -> None:
    """The ``_backward`` of a leaf."""


def _tiny_step() -> None:
    """Build a tiny graph and run backward() on it: what ``warm_up`` runs at import, so that
    the first training steps already run specialised code."""
    x = Value(0.5)
    y = (x * x + 1.0).relu() * x**2 + x.tanh()
    y.backward()


warm_up(_tiny_step)
