"""Tests for the scalar ``Value`` engine, micrograd-compatible.

PyTorch in float64 is the reference for values and gradients. The first two
tests follow micrograd's own engine tests (test/test_engine.py), rewritten.
"""

from __future__ import annotations

import gc
import math
import random
import sys
import weakref

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from retrograd.value import Value

try:
    import torch
except ImportError:  # the reference tests skip; the others still run
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is the reference")


def t64(x: float) -> torch.Tensor:
    """A float64 PyTorch scalar that records gradients."""
    return torch.tensor(x, dtype=torch.float64, requires_grad=True)


def close(a: float, b: float, rel: float = 1e-12, abs_: float = 1e-12) -> bool:
    """a == b up to rounding, with nan == nan and inf == inf."""
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b or math.isclose(a, b, rel_tol=rel, abs_tol=abs_)


# ---- micrograd's engine tests, against PyTorch ---------------------------------


def sanity_expression(x):
    """micrograd's sanity-check expression; works on Values and on tensors."""
    z = 2 * x + 2 + x
    q = z.relu() + z * x
    h = (z * z).relu()
    return h + q + q * x


@needs_torch
def test_sanity_check():
    x = Value(-4.0)
    y = sanity_expression(x)
    y.backward()

    xt = t64(-4.0)
    yt = sanity_expression(xt)
    yt.backward()

    # every number here is a small integer, so the match is exact
    assert y.data == yt.item()
    assert x.grad == xt.grad.item()


def more_ops_expression(a, b):
    """micrograd's longer expression (without in-place ``+=``, as for tensors)."""
    c = a + b
    d = a * b + b**3
    c = c + c + 1
    c = c + 1 + c + (-a)
    d = d + d * 2 + (b + a).relu()
    d = d + 3 * d + (b - a).relu()
    e = c - d
    f = e**2
    g = f / 2.0
    return g + 10.0 / f


@needs_torch
def test_more_ops():
    a, b = Value(-4.0), Value(2.0)
    g = more_ops_expression(a, b)
    g.backward()

    at, bt = t64(-4.0), t64(2.0)
    gt = more_ops_expression(at, bt)
    gt.backward()

    assert close(g.data, gt.item())
    assert close(a.grad, at.grad.item())
    assert close(b.grad, bt.grad.item())
    assert a.grad != 0 and b.grad != 0  # the comparison is not vacuous


def test_in_place_add_builds_new_nodes_like_micrograd():
    # micrograd's test writes c += c + 1; Value has no __iadd__, so += rebinds
    a = Value(-4.0)
    c = a + 1
    first = c
    c += c + 1
    assert c is not first
    c.backward()
    assert a.grad == 2.0


# ---- each op against PyTorch -----------------------------------------------------

# each function works on a Value and on a tensor alike
UNARY = [
    ("relu", lambda v: v.relu()),
    ("tanh", lambda v: v.tanh()),
    ("exp", lambda v: v.exp()),
    ("log", lambda v: v.log()),
    ("sigmoid", lambda v: v.sigmoid()),
    ("neg", lambda v: -v),
    ("square", lambda v: v**2),
    ("cube", lambda v: v**3),
    ("sqrt", lambda v: v**0.5),
    ("reciprocal", lambda v: v**-1),
    ("rtruediv", lambda v: 3.0 / v),
    ("rsub", lambda v: 1 - v),
    ("power0", lambda v: v**0),
]


@needs_torch
@pytest.mark.parametrize("name, f", UNARY, ids=[u[0] for u in UNARY])
@pytest.mark.parametrize("x", [-2.5, -1.0, -0.0, 0.0, 0.123, 1.0, 2.0, 30.0, 800.0])
def test_unary_matches_torch(name, f, x):
    v = Value(x)
    y = f(v)
    y.backward()

    xt = t64(x)
    yt = f(xt)
    yt.backward()

    want_y, want_grad = yt.item(), xt.grad.item()
    if name == "sqrt" and x == 0:
        # (-0.0) ** 0.5: Python and C99 pow give +0.0 (slope +inf), PyTorch -0.0 (-inf)
        want_y, want_grad = abs(want_y), abs(want_grad)
    assert isinstance(y.data, float) and isinstance(v.grad, float)
    assert close(y.data, want_y), (y.data, want_y)
    assert close(v.grad, want_grad), (v.grad, want_grad)


BINARY = [
    ("add", lambda a, b: a + b),
    ("sub", lambda a, b: a - b),
    ("mul", lambda a, b: a * b),
    ("div", lambda a, b: a / b),
    ("mixed", lambda a, b: (a * b + a / (b * b + 1)).tanh() * (a - 2 * b).sigmoid()),
]


@needs_torch
@pytest.mark.parametrize("name, f", BINARY, ids=[b[0] for b in BINARY])
@pytest.mark.parametrize("x, y", [(3.0, -2.0), (-0.5, 0.25), (1e-3, 7.0), (2.0, 2.0)])
def test_binary_matches_torch(name, f, x, y):
    a, b = Value(x), Value(y)
    out = f(a, b)
    out.backward()

    at, bt = t64(x), t64(y)
    outt = f(at, bt)
    outt.backward()

    assert close(out.data, outt.item())
    assert close(a.grad, at.grad.item())
    assert close(b.grad, bt.grad.item())


# Ops that keep values and gradients of moderate size, so that summing the
# gradient in another order than PyTorch cannot cancel away the precision.
OPS = {
    "add": (lambda a, b: a + b),
    "sub": (lambda a, b: a - b),
    "mul": (lambda a, b: a * b.tanh()),
    "div": (lambda a, b: a / (b * b + 1)),
    "tanh": (lambda a, b: a.tanh()),
    "sigmoid": (lambda a, b: b.sigmoid()),
    "relu": (lambda a, b: a.relu()),
    "square": (lambda a, b: b.sigmoid() ** 2),
    "scale": (lambda a, b: 0.5 * a + 1),
}


@needs_torch
@settings(max_examples=60, deadline=None)
@given(
    x=st.floats(-3, 3),
    y=st.floats(-3, 3),
    program=st.lists(
        st.tuples(st.sampled_from(sorted(OPS)), st.booleans()), min_size=1, max_size=12
    ),
)
def test_random_programs_match_torch(x, y, program):
    """Random op sequences over two running values, with shared subexpressions."""

    def run(a, b):
        for op, swap in program:
            c = OPS[op](a, b)
            a, b = (b, c) if swap else (c, a)
        return a * b + a

    va, vb = Value(x), Value(y)
    out = run(va, vb)
    out.backward()

    ta, tb = t64(x), t64(y)
    outt = run(ta, tb)
    outt.backward()

    assert close(out.data, outt.item(), rel=1e-9, abs_=1e-9)
    for v, t in ((va, ta), (vb, tb)):
        tg = 0.0 if t.grad is None else t.grad.item()
        assert close(v.grad, tg, rel=1e-9, abs_=1e-9)


# ---- micrograd compatibility -----------------------------------------------------


def test_mixed_python_and_numpy_numbers():
    np = pytest.importorskip("numpy")
    v = Value(3.0)
    for expr, expected in [
        (2 * v, 6.0), (v * 2, 6.0), (v + 1, 4.0), (1 + v, 4.0), (v - 1, 2.0),
        (1 - v, -2.0), (v / 2, 1.5), (6 / v, 2.0), (np.float64(2.0) * v, 6.0),
        (v * np.int64(2), 6.0), (-np.int64(1) * v, -3.0), (True + v, 4.0),
    ]:
        assert isinstance(expr, Value)
        assert expr.data == pytest.approx(expected, rel=1e-15)  # 6 / v is 6 * v**-1
        assert type(expr.data) is float
    assert type(Value(np.float64(1.5)).data) is float
    assert Value(7).data == 7.0 and type(Value(7).data) is float


def test_graph_attributes_read_like_micrograd():
    a, b = Value(2.0), Value(-3.0)
    c = a * b
    d = c + a
    e = d**2
    f = e.relu()
    q = a / b
    assert (c._op, d._op, e._op, f._op) == ("*", "+", "**2", "ReLU")
    assert (a**2.0)._op == "**2.0" and q._op == "*"
    assert {p._op for p in q._prev} == {"", "**-1"}  # a / b is a * b**-1
    assert c._prev == {a, b} and isinstance(c._prev, set)
    assert (a * a)._prev == {a}
    assert f._prev == {e} and a._prev == set()
    assert repr(Value(1.5)) == "Value(data=1.5, grad=0.0)"
    f.backward()
    assert repr(e) == f"Value(data={e.data}, grad=1.0)"


def test_custom_op_through_backward_attribute():
    """The micrograd way of adding an op: Value(data, children, op) + _backward."""

    def cube(x: Value) -> Value:
        out = Value(x.data**3, (x,), "cube")

        def _backward():
            x.grad += 3 * x.data**2 * out.grad

        out._backward = _backward
        return out

    x = Value(2.0)
    y = cube(x * 1.0) * 2.0
    assert y._prev and [p._op for p in y._prev if p._op] == ["cube"]
    y.backward()
    assert x.grad == 24.0  # d(2 x^3)/dx = 6 x^2

    # stepping _backward by hand, as the lesson does before writing backward()
    a, b = Value(3.0), Value(4.0)
    c = a * b
    c.grad = 1.0
    c._backward()
    assert (a.grad, b.grad) == (4.0, 3.0)
    a._backward()  # a leaf's step does nothing
    assert a.grad == 4.0


@pytest.mark.skipif(sys.implementation.name != "cpython", reason="CPython's collector API")
def test_nodes_are_off_the_cycle_collector_and_custom_op_cycles_are_still_collected():
    x = Value(2.0)
    y = (x * 3.0 + 1.0).tanh()
    assert not any(gc.is_tracked(v) for v in (x, y, y._a, y._a._a))

    def double(a: Value) -> Value:  # micrograd's way: the function refers back to `out`
        out = Value(a.data * 2, (a,), "double")

        def _backward():
            a.grad += 2 * out.grad

        out._backward = _backward
        return out

    out = double(x)
    assert gc.is_tracked(out)
    z = out * 1.0  # an op's output later given a function is tracked again too
    z._backward = lambda: None
    assert gc.is_tracked(z)
    probe = weakref.ref(out)
    del out, z
    assert probe() is not None  # the cycle outlives reference counting...
    gc.collect()
    assert probe() is None  # ...and the collector frees it


def test_cpython_speedups_degrade_to_no_ops(monkeypatch):
    from types import SimpleNamespace

    from retrograd import _cpython_speedups as speed

    calls = []
    monkeypatch.setattr(sys, "implementation", SimpleNamespace(name="pypy"))
    assert speed._c_functions() is None  # another interpreter: nothing from ctypes
    speed.warm_up(lambda: calls.append(1))
    assert calls == []
    monkeypatch.undo()

    ctypes = pytest.importorskip("ctypes")
    if sys.implementation.name != "cpython":
        return
    monkeypatch.setattr(ctypes, "pythonapi", SimpleNamespace())  # a C API without them
    assert speed._c_functions() is None
    monkeypatch.undo()

    obj = speed._Probe()
    speed.track(obj)  # already tracked: must be harmless (CPython's C function would abort)
    assert gc.is_tracked(obj)
    speed.untrack(obj)
    assert gc.is_tracked(obj) is not speed.ACTIVE
    speed.untrack(obj)  # twice is harmless too
    speed.track(obj)
    assert gc.is_tracked(obj)
    speed.warm_up(lambda: calls.append(1), times=3)
    assert len(calls) == (3 if sys.version_info >= (3, 11) else 0)


def test_custom_op_without_backward_stops_gradient():
    # micrograd's default _backward does nothing: no gradient reaches x
    x = Value(2.0)
    y = Value(x.data * 5, (x,), "opaque") + x
    y.backward()
    assert x.grad == 1.0


def test_error_inside_backward_leaves_graph_usable():
    calls = []

    def flaky_op(x: Value) -> Value:
        out = Value(x.data * 2, (x,), "flaky")

        def _backward():
            calls.append(1)
            if len(calls) == 1:
                raise RuntimeError("boom")
            x.grad += 2 * out.grad

        out._backward = _backward
        return out

    x = Value(1.5)
    h = x * x
    y = flaky_op(h) + h
    x.grad = 10.0
    with pytest.raises(RuntimeError, match="boom"):
        y.backward()
    assert x.grad == 10.0  # a failed call adds nothing to a leaf
    y.backward()
    assert x.grad == 10.0 + 3 * 2 * 1.5  # d(3 x^2)/dx


def test_micrograd_nn_runs_unchanged_with_same_numbers(monkeypatch):
    """micrograd's own nn.py, with its Value swapped for ours, on the demo's loss."""
    mg_engine = pytest.importorskip("micrograd.engine")
    mg_nn = pytest.importorskip("micrograd.nn")
    rng = random.Random(0)
    points = [(rng.uniform(-2, 2), rng.uniform(-2, 2)) for _ in range(20)]
    labels = [1 if x * y > 0 else -1 for x, y in points]

    def demo_step(value_cls):
        random.seed(1337)
        model = mg_nn.MLP(2, [8, 8, 1])
        inputs = [list(map(value_cls, row)) for row in points]
        scores = list(map(model, inputs))
        losses = [(1 + -yi * si).relu() for yi, si in zip(labels, scores)]
        loss = sum(losses) * (1.0 / len(losses)) + 1e-4 * sum(p * p for p in model.parameters())
        model.zero_grad()
        loss.backward()
        return loss.data, [p.grad for p in model.parameters()]

    want_loss, want_grads = demo_step(mg_engine.Value)
    monkeypatch.setattr(mg_nn, "Value", Value)
    got_loss, got_grads = demo_step(Value)
    assert got_loss == want_loss  # the forward pass is the same arithmetic
    assert any(g != 0 for g in got_grads)
    # gradients may differ in the last bit: the order of summing differs
    assert all(close(g, w, rel=1e-12, abs_=1e-15) for g, w in zip(got_grads, want_grads))


# ---- a micrograd-style MLP trains ------------------------------------------------


class Neuron:
    def __init__(self, nin: int, nonlin: bool = True):
        self.w = [Value(random.uniform(-1, 1)) for _ in range(nin)]
        self.b = Value(0)
        self.nonlin = nonlin

    def __call__(self, x):
        act = sum((wi * xi for wi, xi in zip(self.w, x)), self.b)
        return act.relu() if self.nonlin else act

    def parameters(self):
        return self.w + [self.b]


class Layer:
    def __init__(self, nin: int, nout: int, **kwargs):
        self.neurons = [Neuron(nin, **kwargs) for _ in range(nout)]

    def __call__(self, x):
        out = [n(x) for n in self.neurons]
        return out[0] if len(out) == 1 else out

    def parameters(self):
        return [p for n in self.neurons for p in n.parameters()]


class MLP:
    def __init__(self, nin: int, nouts: list[int]):
        sizes = [nin] + nouts
        self.layers = [
            Layer(sizes[i], sizes[i + 1], nonlin=i != len(nouts) - 1) for i in range(len(nouts))
        ]

    def __call__(self, x):
        for layer in self.layers:
            x = layer(x)
        return x

    def parameters(self):
        return [p for layer in self.layers for p in layer.parameters()]


def test_mlp_trains_on_toy_data():
    random.seed(0)
    xs = [[2.0, 3.0, -1.0], [3.0, -1.0, 0.5], [0.5, 1.0, 1.0], [1.0, 1.0, -1.0]]
    ys = [1.0, -1.0, -1.0, 1.0]
    model = MLP(3, [4, 4, 1])
    history = []
    for _ in range(60):
        preds = [model(x) for x in xs]
        loss = sum((p - y) ** 2 for p, y in zip(preds, ys))
        for p in model.parameters():
            p.grad = 0.0
        loss.backward()
        for p in model.parameters():
            p.data -= 0.02 * p.grad
        history.append(loss.data)
    assert history[-1] < 0.05 * history[0], history
    assert all(isinstance(p.grad, float) for p in model.parameters())


# ---- backward twice --------------------------------------------------------------


def test_backward_twice_doubles_leaf_grads_exactly():
    random.seed(1)
    model = MLP(2, [5, 1])
    params = model.parameters()
    x = [Value(0.3), Value(-1.7)]
    loss = (model(x) - 0.25) ** 2 + 0.1 * sum(p * p for p in params)
    hidden = model.layers[0](x)  # a separate graph sharing the leaves

    residual = loss._a._a  # model(x) - 0.25, an intermediate

    loss.backward()
    once = [p.grad for p in params + x]
    residual_once = residual.grad
    loss.backward()
    twice = [p.grad for p in params + x]

    assert any(g != 0 for g in once)
    assert twice == [2 * g for g in once]  # exactly, not approximately
    assert residual_once == 2 * residual.data  # d(r^2)/dr
    assert residual.grad == residual_once  # intermediates are not double counted
    assert loss.grad == 1.0
    assert all(h.grad == 0.0 for h in hidden)  # untouched by a graph they are not in


def test_intermediate_grads_after_one_call_are_correct():
    a, b = Value(2.0), Value(-3.0)
    c = a * b  # -6
    d = c + a  # -4
    e = d * d  # 16, de/dd = 2d = -8
    e.backward()
    assert (e.grad, d.grad, c.grad) == (1.0, -8.0, -8.0)
    assert (a.grad, b.grad) == (-8.0 * b.data + -8.0, -8.0 * a.data)
    e.backward()
    assert (e.grad, d.grad, c.grad) == (1.0, -8.0, -8.0)


def test_backward_from_a_leaf():
    x = Value(4.0)
    x.backward()
    x.backward()
    assert x.grad == 2.0


# ---- depth and memory ------------------------------------------------------------


def test_million_op_chain_backward_and_delete():
    n_ops = 1_000_000
    gc_was_enabled = gc.isenabled()
    gc.disable()  # the GC only slows building; the walk is what is tested
    try:
        x, c = Value(3.0), Value(1.0)
        y = x
        for _ in range(n_ops // 2):
            y = (y * c).relu()  # two ops per turn
        y.backward()
        assert x.grad == 1.0
        assert c.grad == 3.0 * n_ops / 2
        y.backward()  # the second walk works too
        assert x.grad == 2.0
        deep = weakref.ref(y._a._a._a)
        del y  # freeing a million-deep chain must not overflow the C stack
        assert deep() is None
    finally:
        if gc_was_enabled:
            gc.enable()


def test_graph_freed_by_reference_counting_alone():
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        a, b = Value(1.5), Value(-0.5)
        h = a * b + a / b
        out = ((h.tanh() - h.exp() * 2) ** 2 + h.sigmoid() + (a * a).log() + (-b).relu())
        out.backward()
        assert out._prev and out._backward  # reading them must not tie the graph up
        refs = [weakref.ref(v) for v in (h, h._a, h._b, out, out._a)]
        ref_h = weakref.ref(h)
        del h
        assert ref_h() is not None  # out still needs it
        del out
        assert all(r() is None for r in refs)
        ref_a = weakref.ref(a)
        del a
        assert ref_a() is None  # even the leaves go
    finally:
        if gc_was_enabled:
            gc.enable()


# ---- errors ----------------------------------------------------------------------


def test_value_exponent_raises_type_error():
    with pytest.raises(TypeError, match=r"Value \*\* Value"):
        Value(1.0) ** Value(2.0)
    with pytest.raises(TypeError, match="exponent"):
        2.0 ** Value(2.0)
    with pytest.raises(TypeError, match="str"):
        Value(1.0) ** "2"


@pytest.mark.parametrize("bad", ["a", "1.5", b"1", 1 + 2j, [1.0], None])
def test_non_number_data_raises_type_error_naming_the_type(bad):
    with pytest.raises(TypeError, match=type(bad).__name__):
        Value(bad)


def test_non_number_operand_raises_type_error():
    with pytest.raises(TypeError, match="str"):
        Value(1.0) + "a"
    with pytest.raises(TypeError, match="children must be Values"):
        Value(1.0, (2.0,), "bad")


def test_ieee_edge_values():
    assert Value(0.0).log().data == -math.inf
    assert math.isnan(Value(-1.0).log().data)
    assert Value(1000.0).exp().data == math.inf
    assert Value(-1000.0).sigmoid().data == 0.0
    assert (1.0 / Value(0.0)).data == math.inf
    assert math.isnan((Value(-8.0) ** 0.5).data)
    x = Value(0.0)
    (x**0.5).backward()
    assert x.grad == math.inf
