"""The shared graph IR: hash-consing, walks, the interpreter and code generation."""

import gc
import math

import numpy as np
import pytest

import retrograd as rg
from retrograd import ir, ops
from retrograd.grad_mode import state


def test_hash_consing_returns_one_node_per_structure():
    g = ir.Graph()
    x, y = g.var("x"), g.var("y")
    assert g.var("x") is x
    a = g.node("mul", (x, y))
    assert g.node("mul", [x, y]) is a
    assert g.node("mul", (y, x)) is not a  # the IR itself does not reorder
    s1 = g.node("sum", (a,), {"axis": (0, 1), "keepdims": False})
    s2 = g.node("sum", (a,), {"keepdims": False, "axis": [0, 1]})
    assert s1 is s2
    assert g.node("sum", (a,), {"axis": (0, 1), "keepdims": True}) is not s1
    assert s1.attr("axis") == (0, 1) and s1.attr("missing", 7) == 7
    assert len(g) == 6


def test_attr_keys_tell_apart_what_evaluates_differently():
    k = ir.attr_key
    assert k(0.0) != k(-0.0)
    assert k(float("nan")) == k(float("nan"))
    assert len({k(1), k(1.0), k(True)}) == 3
    assert k(slice(1, None, 2)) == k(slice(1, None, 2)) != k(slice(1, 3, 2))
    assert k((1, 2)) == k([1, 2])
    a = np.arange(3.0)
    assert k(a) == k(np.arange(3.0)) != k(np.arange(3))
    big = np.zeros(1000)
    assert k(big) == k(big) != k(np.zeros(1000))
    assert k(np.float32(1.5)) != k(np.float64(1.5))
    hash(k((slice(None), np.array([0, 2]), None, Ellipsis)))  # any index is a usable key


def test_weak_graph_forgets_unreferenced_nodes():
    g = ir.Graph(weak=True)
    x = g.var("x")
    n = x
    for _ in range(100):
        n = g.node("sin", (n,))
    assert len(g) == 101
    del n
    gc.collect()
    assert len(g) == 1
    assert g.var("x") is x


def test_toposort_and_walks_are_iterative():
    g = ir.Graph()
    x = g.var("x")
    n = x
    for _ in range(100_000):
        n = g.node("neg", (n,))
    order = ir.toposort([n])
    assert len(order) == 100_001
    assert order[0] is x and order[-1] is n
    dep = ir.depends_on(order, [x])
    assert len(dep) == len(order)
    assert ir.evaluate([n], {x: np.float64(2.0)})[0] == 2.0


def test_toposort_puts_inputs_first_and_counts_shared_nodes_once():
    g = ir.Graph()
    x, y = g.var("x"), g.var("y")
    a = g.node("add", (x, y))
    b = g.node("mul", (a, a))
    c = g.node("sub", (b, a))
    order = ir.toposort([c, b])
    assert len(order) == 5
    pos = {n: k for k, n in enumerate(order)}
    for n in order:
        assert all(pos[i] < pos[n] for i in n.inputs)
    us = ir.users(order)
    assert us[a] == [b, c] and us[c] == []
    assert ir.depends_on(order, [y]) == {y, a, b, c}


def _program():
    """A graph over several kinds of op: arithmetic, matmul, reductions, indexing, where."""
    g = ir.Graph()
    x, w = g.var("x"), g.var("w")
    h = g.node("matmul", (x, w))
    t = g.node("tanh", (h,))
    s = g.node("sum", (t,), {"axis": 1, "keepdims": True})
    r = g.node("div", (t, s))
    sl = g.node("getitem", (r,), {"idx": (slice(None), slice(0, 2))})
    c = g.node("gt", (sl, g.const(0.0)))
    out = g.node("where", (c, sl, g.const(np.float64(-1.0))))
    red = g.node("reshape", (out,), {"shape": (-1,)})
    return g, x, w, [out, red]


def _numpy_reference(xv, wv):
    t = np.tanh(xv @ wv)
    r = t / t.sum(axis=1, keepdims=True)
    sl = r[:, 0:2]
    out = np.where(sl > 0, sl, -1.0)
    return out, out.reshape(-1)


def test_interpreter_runs_any_op_of_the_table():
    g, x, w, outs = _program()
    rng = np.random.default_rng(0)
    xv, wv = rng.normal(size=(4, 3)), rng.normal(size=(3, 5))
    got = ir.evaluate(outs, {x: xv, w: wv})
    for a, b in zip(got, _numpy_reference(xv, wv)):
        np.testing.assert_array_equal(a, b)


def test_interpreter_names_a_missing_variable():
    g, x, w, outs = _program()
    with pytest.raises(ir.UnboundVariableError, match="'w'"):
        ir.evaluate(outs, {x: np.ones((2, 3))})


def test_compiled_code_equals_the_interpreter():
    g, x, w, outs = _program()
    fn = ir.compile(outs, [x, w])
    assert "def f(a0, a1):" in fn.source and "_matmul(" in fn.source
    rng = np.random.default_rng(1)
    xv, wv = rng.normal(size=(4, 3)), rng.normal(size=(3, 5))
    for a, b in zip(fn(xv, wv), ir.evaluate(outs, {x: xv, w: wv})):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="'w'"):
        ir.compile(outs, [x])


def test_compiled_code_handles_constants_without_a_literal():
    g = ir.Graph()
    x = g.var("x")
    arr = np.array([1.0, 2.0])
    out = g.node("add", (g.node("mul", (x, g.const(arr))), g.const(math.inf)))
    out2 = g.node("mul", (x, g.const(-2.5)))
    fn = ir.compile([out, out2], [x], single=False)
    a, b = fn(np.array([3.0, 4.0]))
    np.testing.assert_array_equal(a, [np.inf, np.inf])
    np.testing.assert_array_equal(b, [-7.5, -10.0])


def test_deep_graph_compiles_without_recursion():
    g = ir.Graph()
    x = g.var("x")
    n = x
    for _ in range(20_000):
        n = g.node("sin", (n,))
    fn = ir.compile([n], [x], single=True)
    assert fn(np.float64(0.3)) == ir.evaluate([n], {x: np.float64(0.3)})[0]


def test_dump_is_a_flat_listing():
    g = ir.Graph()
    x, y = g.var("x"), g.var("y")
    s = g.node("sum", (g.node("mul", (x, g.const(2.0))),), {"axis": 0})
    text = ir.dump([g.node("add", (s, y))])
    assert text.splitlines() == [
        "%t0 = mul %x 2.0",
        "%t1 = sum %t0 axis=0",
        "%t2 = add %t1 %y",
        "return %t2",
    ]


class _Recorder:
    """What rg.jit's tracer does: each Tensor op recorded becomes one IR node."""

    def __init__(self, inputs):
        self.graph = ir.Graph()
        self.nodes = {id(t): self.graph.var(f"arg{k}") for k, t in enumerate(inputs)}
        self.keep = list(inputs)

    def _node_of(self, v):
        if isinstance(v, rg.Tensor):
            n = self.nodes.get(id(v))
            return n if n is not None else self.graph.const(v.data)
        return self.graph.const(v)

    def record(self, op, inputs, attrs, out):
        node = self.graph.node(op.name, [self._node_of(i) for i in inputs], attrs)
        self.nodes[id(out)] = node
        self.keep.append(out)

    def refuse(self, what):
        raise RuntimeError(what)


def test_tensor_ops_trace_into_the_ir():
    rng = np.random.default_rng(2)
    x = rg.tensor(rng.normal(size=(3, 4)))
    w = rg.tensor(rng.normal(size=(4, 2)))
    rec = _Recorder([x, w])
    prev = state.tracer
    state.tracer = rec
    try:
        h = (x @ w).tanh()
        y = (h * 2.0 + 1.0).sum(dim=1) / h.shape[1]
    finally:
        state.tracer = prev
    out = rec.nodes[id(y)]
    vars_ = [rec.graph.var("arg0"), rec.graph.var("arg1")]
    got = ir.evaluate([out], dict(zip(vars_, [x.data, w.data])))[0]
    np.testing.assert_allclose(got, y.data, rtol=1e-12)
    assert all(n.op in ops.OPS or n.is_leaf for n in ir.toposort([out]))
