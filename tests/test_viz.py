"""rg.viz: DOT text and pictures of Value, Tensor, rg.sym and rg.jit graphs."""

from __future__ import annotations

import html
import re
import struct
import sys
import time
import warnings

import numpy as np
import pytest

import retrograd as rg
import retrograd.sym as S
import retrograd.viz as viz
from retrograd.value import Value

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


# ---------------------------------------------------------------- reading DOT back

def parse_dot(text: str) -> tuple[dict, dict, list]:
    """(value boxes {id: [fields]}, op ellipses {id: label}, edges [(src, dst)])."""
    boxes, ops, edges = {}, {}, []
    for line in text.splitlines():
        m = re.match(r'\s+(\w+) \[shape=record, label="\{ (.*) \}"', line)
        if m:
            boxes[m.group(1)] = [f.strip() for f in re.split(r"(?<!\\)\|", m.group(2))]
            continue
        m = re.match(r'\s+(\w+) \[shape=ellipse, label="(.*)"\];', line)
        if m:
            ops[m.group(1)] = m.group(2)
            continue
        m = re.match(r"\s+(\w+) -> (\w+)", line)
        if m:
            edges.append((m.group(1), m.group(2)))
    return boxes, ops, edges


def forward_steps(text: str) -> set:
    """Each op as (op label, (operand box fields...), result box fields), read from
    the edges operand -> op -> result."""
    boxes, ops, edges = parse_dot(text)
    steps = set()
    for op_id, label in ops.items():
        ins = tuple(" | ".join(boxes[s]) for s, d in edges if d == op_id)
        outs = [d for s, d in edges if s == op_id]
        assert len(outs) == 1, f"op {op_id} must feed exactly one box"
        steps.add((label, ins, " | ".join(boxes[outs[0]])))
    return steps


def lesson_graph():
    a, b, c, f = Value(2.0), Value(3.0), Value(-4.0), Value(-2.0)
    e = a * b
    d = e + c
    L = d * f
    L.backward()
    return L, {a: "a", b: "b", c: "c", d: "d", e: "e", f: "f", L: "L"}


# ---------------------------------------------------------------- Value graphs

def test_value_graph_has_the_lessons_boxes_ops_and_arrows():
    L, labels = lesson_graph()
    text = viz.to_dot(L, labels=labels)
    assert text.startswith("digraph") and "rankdir=LR" in text
    boxes, ops, edges = parse_dot(text)
    assert sorted(" | ".join(f) for f in boxes.values()) == sorted([
        "a | data 2.0 | grad -6.0", "b | data 3.0 | grad -4.0", "c | data -4.0 | grad -2.0",
        "d | data 2.0 | grad -2.0", "e | data 6.0 | grad -2.0", "f | data -2.0 | grad 2.0",
        "L | data -4.0 | grad 1.0"])
    assert sorted(ops.values()) == ["*", "*", "+"]
    assert len(edges) == 3 + 6  # op -> result, and two operands -> op for each of 3 ops
    a, b, c = "a | data 2.0 | grad -6.0", "b | data 3.0 | grad -4.0", "c | data -4.0 | grad -2.0"
    d, e, f = "d | data 2.0 | grad -2.0", "e | data 6.0 | grad -2.0", "f | data -2.0 | grad 2.0"
    L = "L | data -4.0 | grad 1.0"
    assert forward_steps(text) == {("*", (a, b), e), ("+", (e, c), d), ("*", (d, f), L)}
    assert "more" not in text  # small graphs are drawn whole


def test_value_graph_without_labels_and_a_value_used_three_times():
    x = Value(3.0)
    y = x * x + x
    y.backward()
    text = viz.to_dot(y)
    steps = forward_steps(text)
    assert ("*", ("data 3.0 | grad 7.0", "data 3.0 | grad 7.0"), "data 9.0 | grad 1.0") in steps
    assert ("+", ("data 9.0 | grad 1.0", "data 3.0 | grad 7.0"), "data 12.0 | grad 1.0") in steps
    boxes, _, _ = parse_dot(text)
    assert len(boxes) == 3  # x is one box, with three arrows out of it


def test_to_dot_is_deterministic_and_the_output_is_marked():
    L, labels = lesson_graph()
    assert viz.to_dot(L, labels=labels) == viz.to_dot(L, labels=labels)
    line = next(s for s in viz.to_dot(L, labels=labels).splitlines() if "{ L |" in s)
    assert "penwidth=2" in line


def test_micrograd_style_values_and_label_attributes():
    class MicroValue:  # the shape of micrograd's Value in the lesson: Value(2.0, label='a')
        def __init__(self, data, children=(), op="", label=""):
            self.data, self.grad = data, 0.0
            self._prev, self._op, self.label = set(children), op, label

    a = MicroValue(2.0, label="a")
    b = MicroValue(-3.0, label="b")
    out = MicroValue(-6.0, (a, b), "*", label="out")
    a.grad, b.grad, out.grad = -3.0, 2.0, 1.0
    steps = forward_steps(viz.to_dot(out))
    (op, ins, res), = steps
    assert op == "*" and res == "out | data -6.0 | grad 1.0"
    assert sorted(ins) == ["a | data 2.0 | grad -3.0", "b | data -3.0 | grad 2.0"]
    # a labels= mapping wins over the attribute
    assert "{ A | data 2.0" in viz.to_dot(out, labels={a: "A"})


def test_values_made_the_micrograd_way_and_special_characters_escaped():
    x = Value(0.5)
    out = Value(x.data * 2, (x,), "dbl")
    out._backward = lambda: None
    text = viz.to_dot(out, labels={x: 'x{1}|"q"<b>'})
    boxes, ops, _ = parse_dot(text)
    assert list(ops.values()) == ["dbl"]
    assert r'x\{1\}\|\"q\"\<b\>' in text  # record specials escaped, so dot reads one field


def test_topological_order_and_operands_follow_the_lesson():
    a, b, c, f = Value(2.0), Value(3.0), Value(-4.0), Value(-2.0)
    L = (a * b + c) * f
    order = viz.topological_order(L)
    assert " ".join(str(v._op or v.data) for v in order) == "2.0 3.0 * -4.0 + -2.0 *"
    assert order[0] is a and order[1] is b and order[-1] is L
    e = a * b
    assert viz.operands(e) == (a, b)
    assert viz.operands(a) == ()


# ---------------------------------------------------------------- Tensor graphs

def test_tensor_graph_of_the_notes_example():
    x1 = rg.tensor([2.0], dtype=rg.float64, requires_grad=True)
    x2 = rg.tensor([5.0], dtype=rg.float64, requires_grad=True)
    y = rg.log(x1) + x1 * x2 - rg.exp(x2)
    y.backward(rg.ones_like(y))
    text = viz.to_dot(y, labels={x1: "x1", x2: "x2", y: "y"})
    boxes, ops, edges = parse_dot(text)
    assert sorted(ops.values()) == ["add", "exp", "log", "mul", "sub"]
    flat = {" | ".join(f) for f in boxes.values()}
    assert "x1 | (1,) float64 | data [2.0] | grad [5.5]" in flat
    assert "x2 | (1,) float64 | data [5.0] | grad [-146.413]" in flat
    assert "y | (1,) float64 | data [-137.72]" in flat  # no .grad kept on a non-leaf
    assert "(1,) float64 | data [148.413]" in flat
    steps = forward_steps(text)
    assert ("exp", ("x2 | (1,) float64 | data [5.0] | grad [-146.413]",),
            "(1,) float64 | data [148.413]") in steps
    assert len(boxes) == 7 and len(edges) == 5 + 8


def test_drawing_non_leaf_tensors_warns_nothing():
    # viz reads each box's gradient itself; the user-facing warning for reading `.grad` on a
    # non-leaf (retrograd's and PyTorch's) is for user code, not for the picture
    x = rg.tensor([1.0, 2.0], requires_grad=True)
    y = (x * 3).sum()
    y.backward()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        text = viz.to_dot(y)
    with pytest.warns(UserWarning, match="not a leaf"):
        assert y.grad is None  # the warning itself is still there for user code
    assert "grad [3.0, 3.0]" in text


def test_tensor_boxes_show_shape_dtype_and_a_few_numbers():
    w = rg.tensor(np.arange(1000.0).reshape(10, 100), requires_grad=True)
    out = (w * 2.0).sum()
    out.backward()
    text = viz.to_dot(out, labels={w: "w"})
    boxes, ops, _ = parse_dot(text)
    wbox = next(f for f in boxes.values() if f[0] == "w")
    assert wbox[1] == "(10, 100) float64"  # a NumPy array keeps its dtype
    assert wbox[2] == "data [0.0, 1.0, 2.0, …]" and wbox[3] == "grad [2.0, 2.0, 2.0, …]"
    assert max(len(line) for line in text.splitlines()) < 200  # never the whole array
    assert ["const", "2.0"] in boxes.values()  # the Python number, as a constant box
    assert any(v.startswith("sum") for v in ops.values())
    leaf = rg.tensor([1.0, 2.0], requires_grad=True)  # before backward: "grad None"
    assert "grad None" in viz.to_dot(leaf * 3.0)


# ---------------------------------------------------------------- rg.sym and rg.jit

def test_sym_expression_with_values_and_gradients():
    x, y = S.var("viz_x"), S.var("viz_y")
    z = (x + y) * y
    text = viz.to_dot(z, values={"viz_x": 3.0, "viz_y": 5.0})
    steps = forward_steps(text)
    assert ("+", ("viz_x | value 3.0 | grad 5.0", "viz_y | value 5.0 | grad 13.0"),
            "value 8.0 | grad 5.0") in steps or \
           ("+", ("viz_y | value 5.0 | grad 13.0", "viz_x | value 3.0 | grad 5.0"),
            "value 8.0 | grad 5.0") in steps
    assert any(op == "*" and res == "value 40.0 | grad 1.0" for op, _, res in steps)


def test_sym_expression_unbound_and_its_derivative_graph():
    x, y = S.var("viz_u"), S.var("viz_v")
    z = (12 - x * S.exp(y)) / (45 + x * y * S.exp(-x))
    text = viz.to_dot(z)  # no values: the structure, each op box saying what it computes
    boxes, ops, _ = parse_dot(text)
    assert ["viz_u"] in boxes.values() and ["viz_v"] in boxes.values()
    assert ["const", "value 12.0"] in boxes.values()
    assert sorted(ops.values()) == sorted(["-", "*", "exp", "/", "+", "*", "*", "exp", "-"])
    assert "value" not in " ".join(f for fs in boxes.values() for f in fs if "const" not in fs)
    dx = z.diff(x)
    d_text = viz.to_dot(dx, values={"viz_u": 3.0, "viz_v": 5.0})
    root = next(line for line in d_text.splitlines() if "penwidth=2" in line)
    assert "value -3.3473 | grad 1.0" in root


def test_jit_program():
    f = rg.jit(lambda a, b: (a * b + a.exp()).sum())
    f(rg.randn(3), rg.randn(3))
    text = viz.to_dot(f.graph)
    boxes, ops, _ = parse_dot(text)
    assert ["arg0", "(3,) float32"] in boxes.values()
    assert ["out", "() float32"] in boxes.values()
    assert {"mul", "exp", "add", "sum"} <= set(ops.values())


def test_bad_arguments():
    with pytest.raises(TypeError, match="Tensors, Values"):
        viz.to_dot(3.0)
    with pytest.raises(ValueError, match="max_nodes"):
        viz.to_dot(Value(1.0), max_nodes=0)
    with pytest.raises(ValueError, match=r"\.svg"):
        viz.draw(Value(1.0), "graph.jpg")


# ---------------------------------------------------------------- big graphs

def test_a_100000_node_value_chain_is_summarised_without_recursion():
    x = Value(0.5)
    y = x
    for _ in range(100_000):
        y = y * 1.0000001
    y.backward()
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(200)  # any recursion over the graph would fail at once
    try:
        t0 = time.perf_counter()
        text = viz.to_dot(y)
        seconds = time.perf_counter() - t0
    finally:
        sys.setrecursionlimit(limit)
    boxes, ops, edges = parse_dot(text)
    assert len(boxes) == viz.MAX_NODES
    total = 100_000 * 2 + 1  # each op's result and its constant, and x
    hidden = total - viz.MAX_NODES
    assert f'label="… {hidden} more nodes"' in text
    assert f"summarised: the {viz.MAX_NODES} values nearest the output, of {total}" in text
    assert ("more", "n0_op") not in edges  # the output's own operands are drawn
    assert sum(1 for s, _ in edges if s == "more") >= 1
    assert seconds < 30


def test_max_nodes_keeps_the_nodes_nearest_the_output():
    x = rg.tensor(1.0, dtype=rg.float64, requires_grad=True)
    y = x
    for _ in range(300):
        y = rg.sin(y)
    text = viz.to_dot(y, max_nodes=10)
    boxes, ops, edges = parse_dot(text)
    assert len(boxes) == 10 and len(ops) == 10
    assert "… 291 more nodes" in text
    assert [d for s, d in edges if s == "more"] == ["n9_op"]  # the deepest drawn op


# ---------------------------------------------------------------- pictures

def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == PNG_SIGNATURE, "not a PNG file"
    assert data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def test_draw_png_svg_or_dot_text_whichever_this_machine_can(tmp_path):
    L, labels = lesson_graph()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        png = viz.draw(L, tmp_path / "lesson.png", labels=labels)
        svg = viz.draw(L, tmp_path / "lesson.svg", labels=labels)
    if viz.have_dot():
        assert png == tmp_path / "lesson.png" and svg == tmp_path / "lesson.svg"
        width, height = png_size(png.read_bytes())
        assert 300 < width < 5000 and 50 < height < 2000  # a wide, short picture (LR)
        text = html.unescape(svg.read_text())  # Graphviz writes "-" as &#45;
        assert "<svg" in text and "grad -6.0" in text and "data -4.0" in text
        assert not caught
    else:
        assert png == tmp_path / "lesson.dot" and svg == tmp_path / "lesson.dot"
        assert png.read_text() == viz.to_dot(L, labels=labels)
        assert any(issubclass(w.category, viz.GraphvizMissing) for w in caught)
    dot = viz.draw(L, tmp_path / "lesson.dot", labels=labels)  # DOT text needs no Graphviz
    assert dot.read_text() == viz.to_dot(L, labels=labels)


def test_without_the_dot_program_the_dot_text_is_written_and_explained(tmp_path, monkeypatch):
    L, labels = lesson_graph()
    monkeypatch.setattr(viz, "have_dot", lambda: False)
    with pytest.warns(viz.GraphvizMissing, match=r"dot -Tpng .*lesson\.dot -o .*lesson\.png"):
        written = viz.draw(L, tmp_path / "lesson.png", labels=labels)
    assert written == tmp_path / "lesson.dot"
    assert written.read_text() == viz.to_dot(L, labels=labels)
    assert not (tmp_path / "lesson.png").exists()
    path, message = viz.render(L, tmp_path / "g.svg")
    assert path == tmp_path / "g.dot" and "Graphviz" in message and "install" in message


def test_dot_vanishing_between_the_check_and_the_call(tmp_path, monkeypatch):
    graphviz = pytest.importorskip("graphviz")

    def missing(*args, **kwargs):
        raise graphviz.ExecutableNotFound(["dot"])

    monkeypatch.setattr(viz, "have_dot", lambda: True)
    monkeypatch.setattr(graphviz.Source, "pipe", missing)
    with pytest.warns(viz.GraphvizMissing):
        written = viz.draw(Value(1.0) * 2.0, tmp_path / "g.png")
    assert written.suffix == ".dot" and written.read_text().startswith("digraph")


def test_missing_graphviz_package_names_the_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "graphviz", None)  # import graphviz now fails
    with pytest.raises(ImportError, match=r"retrograd\[viz\]"):
        viz.draw(Value(1.0), tmp_path / "g.svg")
    assert viz.draw(Value(1.0), tmp_path / "g.dot").read_text().startswith("digraph")


def test_dot_failing_is_a_clear_error(tmp_path, monkeypatch):
    graphviz = pytest.importorskip("graphviz")

    def broken(*args, **kwargs):
        raise graphviz.CalledProcessError(1, ["dot"], stderr=b"Error: syntax error in line 1")

    monkeypatch.setattr(viz, "have_dot", lambda: True)
    monkeypatch.setattr(graphviz.Source, "pipe", broken)
    with pytest.raises(RuntimeError, match="could not draw .*syntax error in line 1"):
        viz.draw(Value(1.0), tmp_path / "g.svg")


def test_size_bounds_the_picture_and_rankdir_turns_it(tmp_path):
    x = Value(0.5)
    y = x
    for _ in range(60):  # a long chain: hundreds of inches wide when drawn left to right
        y = (y * 1.01).tanh()
    y.backward()
    text = viz.to_dot(y, rankdir="TB", size=(7.5, 10))
    assert "rankdir=TB" in text and 'size="7.5,10"' in text
    assert " size=" not in viz.to_dot(y)
    for bad in ((0, 10), (7.5, float("inf")), (7.5,), "big", (-1, -1)):
        with pytest.raises(ValueError, match="size"):
            viz.to_dot(y, size=bad)
    with pytest.raises(ValueError, match="rankdir"):
        viz.draw(y, tmp_path / "g.dot", rankdir="UP")
    if not viz.have_dot():
        return
    free = png_size(viz.draw(y, tmp_path / "free.png").read_bytes())
    bounded = png_size(viz.draw(y, tmp_path / "page.png", rankdir="TB",
                                size=(7.5, 10)).read_bytes())
    dpi = 96  # Graphviz's PNG resolution
    assert free[0] > 4 * 7.5 * dpi  # unbounded: far wider than a page
    assert bounded[0] <= 7.5 * dpi + 1 and bounded[1] <= 10 * dpi + 1
    assert bounded[1] > 10 * dpi * 0.9  # a tall chain fills the page's height
