"""Pictures of computation graphs: `to_dot` and `draw` (the `[viz]` extra).

    import retrograd as rg
    import retrograd.viz
    a, b = rg.Value(2.0), rg.Value(3.0)
    L = (a * b + 1.0).relu()
    L.backward()
    rg.viz.draw(L, "graph.svg", labels={a: "a", b: "b", L: "L"})

Drawn the way the lesson draws it: one box per value (its label, data and
grad), one ellipse per op, arrows in the forward direction (operands -> op ->
result), left to right. Works for `rg.Value` (and micrograd's own `Value`),
`rg.Tensor` (from its `grad_fn` nodes), `rg.sym` expressions (values and
gradients from `Expr.trace`) and `rg.jit` programs (`jitted.graph`).

`to_dot` needs nothing but Python. `draw` writes DOT text for a `.dot` path,
and renders `.svg`/`.png` through the `graphviz` package and Graphviz's `dot`
program; without `dot` it writes the DOT text next to the path and says how
to get pictures. Every walk is a loop, never recursion, and a graph of more
than `max_nodes` values is summarised: the values nearest the output are drawn
and one note stands for the rest.
"""

from __future__ import annotations

import shutil
import warnings
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .primitive import ArgumentError
from .tensor import Tensor as _Tensor

__all__ = ["to_dot", "draw", "render", "have_dot", "operands", "topological_order",
           "GraphvizMissing", "FORMATS", "MAX_NODES"]

FORMATS = ("svg", "png", "dot")  # what `draw` writes, chosen by the path's suffix
MAX_NODES = 200  # value boxes drawn before a graph is summarised

HOW_TO_GET_DOT = (
    "install Graphviz's `dot` program (apt-get install graphviz, brew install graphviz, "
    "conda install graphviz, or https://graphviz.org/download/) and run "
    "`dot -T{fmt} {dot} -o {pic}`"
)


class GraphvizMissing(UserWarning):
    """`draw` found no `dot` program and wrote DOT text instead of a picture."""


# ---------------------------------------------------------------- reading graphs
# Each kind of graph is read through three functions of one object: its
# operands (in order), the name of the op that made it (None for a leaf), and
# the fields of its box. Python numbers inside a Tensor graph become `_Number`s.

class _Number:
    """A Python number that a Tensor op took as an operand (drawn as a constant)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


class _Reader:
    """How to read one kind of graph. `by_id`: objects whose `==` is not identity
    (Tensors compare element-wise) are told apart by `id` instead of by themselves."""

    def __init__(self, operands: Callable[[Any], Sequence], op: Callable[[Any], str | None],
                 fields: Callable[[Any, str | None], list[str]], by_id: bool = False) -> None:
        self.operands = operands
        self.op = op
        self.fields = fields
        self.by_id = by_id


def _value_operands(v: Any) -> tuple:
    """A Value's children in order: rg.Value keeps them as `_a`, `_b` (or in `_custom`),
    micrograd as the set `_prev` (whose order Python does not fix)."""
    a = getattr(v, "_a", None)
    if a is not None:
        b = getattr(v, "_b", None)
        return (a,) if b is None else (a, b)
    custom = getattr(v, "_custom", None)  # nodes built micrograd's way: (children, backward)
    if custom:
        return tuple(custom[0])
    return tuple(v._prev)


def _value_op(v: Any) -> str | None:
    if not _value_operands(v):
        return None
    return str(getattr(v, "_op", "") or "op")


def _value_fields(v: Any, label: str | None) -> list[str]:
    fields = [] if label is None else [label]
    fields.append(f"data {_num(v.data)}")
    grad = getattr(v, "grad", None)
    if grad is not None:
        fields.append(f"grad {_num(grad)}")
    return fields


def _tensor_operands(t: Any) -> tuple:
    if isinstance(t, _Number):
        return ()
    node = t.grad_fn
    if node is None:
        return ()
    return tuple(x if isinstance(x, _Tensor) else _Number(x) for x in node.inputs)


def _tensor_op(t: Any) -> str | None:
    if isinstance(t, _Number):
        return None
    node = t.grad_fn
    if node is None:
        return None
    attrs = getattr(node, "attrs", None)
    return node.name + _attrs_text(attrs.items() if attrs else ())


def _tensor_fields(t: Any, label: str | None) -> list[str]:
    if isinstance(t, _Number):
        return [label or "const", _array_text(t.value)]
    fields = [] if label is None else [label]
    fields.append(f"{_shape_text(t.shape)} {t.dtype}")
    fields.append(f"data {_array_text(t.data)}")
    grad = t._grad if hasattr(t, "_grad") else t.grad  # no non-leaf `.grad` warning
    if grad is not None:
        fields.append(f"grad {_array_text(grad.data)}")
    elif t.requires_grad and t.grad_fn is None:
        fields.append("grad None")  # a leaf before backward(); other nodes keep no .grad
    return fields


def _ir_reader(values: dict[int, tuple], meta: Mapping | None) -> _Reader:
    """A reader for rg.sym expressions and rg.jit IR nodes; `values[id(node)]` is
    (value, grad) where known, `meta[node]` (shape, dtype) for jit programs."""

    def op(n: Any) -> str | None:
        if n.op in ("var", "const"):
            return None
        label = getattr(n, "label", None)
        text = label if isinstance(label, str) and label else n.op
        return text + _attrs_text(n.attrs)

    def fields(n: Any, label: str | None) -> list[str]:
        out = []
        if label is not None:
            out.append(label)
        elif n.op == "var":
            out.append(str(n.attr("name")))
        elif n.op == "const":
            out.append("const")
        if meta is not None and n in meta:
            shape, dtype = meta[n]
            out.append(f"{_shape_text(shape)} {np.dtype(dtype)}")
        known = values.get(id(n))
        if known is not None:
            value, grad = known
            out.append(f"value {_array_text(value)}")
            if grad is not None:
                out.append(f"grad {_array_text(grad)}")
        elif n.op == "const":
            out.append(f"value {_array_text(n.attr('value'))}")
        if not out:  # an rg.sym op with no values bound: show what it computes
            out.append(_clip(str(n), 24) if hasattr(n, "trace") else n.op)
        return out

    return _Reader(lambda n: n.inputs, op, fields)


def _sym_values(roots: Sequence[Any], values: Mapping[str, Any] | None) -> dict[int, tuple]:
    """(value, grad) for each node of rg.sym expressions: from `Expr.trace` when every
    variable has a value (given in `values` or bound), else nothing."""
    from .ir import UnboundVariableError

    found: dict[int, tuple] = {}
    for root in roots:
        if not hasattr(root, "trace"):
            return {}
        try:
            entries = root.trace(**dict(values or {}))
        except UnboundVariableError:
            return {}
        for e in entries:
            grad = e.grad if len(roots) == 1 else None
            found.setdefault(id(e.node), (e.value, grad))
    return found


def _reader_for(roots: Sequence[Any], values: Mapping[str, Any] | None) -> _Reader:
    """The reader for this kind of graph (rg.sym values bound by `values`)."""
    from .ir import IRNode

    first = roots[0]
    if isinstance(first, _Tensor):
        return _Reader(_tensor_operands, _tensor_op, _tensor_fields, by_id=True)
    if isinstance(first, IRNode):
        return _ir_reader(_sym_values(roots, values), None)
    if hasattr(first, "_prev") and hasattr(first, "data"):
        return _Reader(_value_operands, _value_op, _value_fields)
    raise TypeError(f"rg.viz draws Tensors, Values, rg.sym expressions and rg.jit programs, "
                    f"not {type(first).__name__}")


def _roots(root: Any) -> tuple[list, Mapping | None, list[str] | None]:
    """The output objects to draw from, jit shapes, and default labels for the outputs."""
    from .jit import Program

    if isinstance(root, Program):
        outs = list(root.outputs)
        names = ["out"] if len(outs) == 1 else [f"out{k}" for k in range(len(outs))]
        return outs, root.meta, names
    if isinstance(root, (list, tuple)):
        if not root:
            raise ArgumentError("nothing to draw: the list of outputs is empty")
        return list(root), None, None
    return [root], None, None


def operands(node: Any) -> tuple:
    """The operands of the op that made `node` (a Value, Tensor or rg.sym expression),
    in order; () for a leaf. A Tensor op's Python-number operands are left out."""
    roots, _, _ = _roots(node)
    reader = _reader_for(roots, None)
    return tuple(x for x in reader.operands(roots[0]) if not isinstance(x, _Number))


def topological_order(root: Any) -> list:
    """Every value `root` depends on, each after all of its operands: the lesson's order.

    The same order as the lesson's recursive `visitar` (operands first, left
    to right, then the node), found with an explicit stack.
    """
    roots, _, _ = _roots(root)
    reader = _reader_for(roots, None)
    order: list = []
    seen: set[int] = set()
    for r in roots:
        if id(r) in seen:
            continue
        seen.add(id(r))
        stack = [(r, iter(reader.operands(r)))]
        while stack:
            node, kids = stack[-1]
            for kid in kids:
                if id(kid) not in seen:
                    seen.add(id(kid))
                    stack.append((kid, iter(reader.operands(kid))))
                    break
            else:
                stack.pop()
                if not isinstance(node, _Number):
                    order.append(node)
    return order


# ---------------------------------------------------------------- DOT text

def to_dot(root: Any, *, labels: Mapping[Hashable, str] | None = None,
           values: Mapping[str, Any] | None = None, max_nodes: int = MAX_NODES,
           title: str | None = None, rankdir: str = "LR",
           size: tuple[float, float] | None = None) -> str:
    """The graph that computed `root` as Graphviz DOT text.

    `root`: a Value, a Tensor, an rg.sym expression, an rg.jit program
    (`jitted.graph`) or a list of outputs of one kind. `labels` names values
    (`{a: "a"}`); otherwise a `label` attribute is used where there is one.
    `values` binds rg.sym variables by name for the numbers in the boxes.
    Graphs of more than `max_nodes` values are summarised. `rankdir` is
    Graphviz's direction ("LR": inputs on the left, as in the lesson; "TB"
    suits a long chain of layers). `size` (width, height) in inches bounds the
    picture: a larger graph is scaled down to fit, keeping its proportions.
    """
    if max_nodes < 1:
        raise ArgumentError(f"max_nodes must be at least 1, got {max_nodes}")
    if rankdir not in ("LR", "RL", "TB", "BT"):
        raise ArgumentError(f"rankdir must be LR, RL, TB or BT, got {rankdir!r}")
    page = _size_attr(size)
    roots, meta, out_names = _roots(root)
    reader = _ir_reader({}, meta) if meta is not None else _reader_for(roots, values)
    names: dict[int, str] = {}
    if out_names is not None:
        names.update((id(r), n) for r, n in zip(roots, out_names))
    if labels:
        names.update((id(k), str(v)) for k, v in labels.items())

    # Breadth first from the outputs: the first `max_nodes` values found are the
    # ones drawn; the rest are only counted.
    # `index` maps each object (or its id, see _Reader) to its place in `order`.
    key = id if reader.by_id else _same
    order: list = []
    index: dict[Any, int] = {}
    for r in roots:
        if key(r) not in index:
            index[key(r)] = len(order)
            order.append(r)
    kids: list[Sequence] = []
    operands_of = reader.operands
    append = order.append
    total = len(order)
    for i, node in enumerate(order):  # `order` grows as the loop goes
        ins = operands_of(node)
        if i < max_nodes:
            kids.append(ins)
        if reader.by_id:
            for x in ins:
                k = id(x)
                if k not in index:
                    index[k] = total
                    total += 1
                    append(x)
        else:  # the same loop without a call per operand: the hot path for big graphs
            for x in ins:
                if x not in index:
                    index[x] = total
                    total += 1
                    append(x)
    shown = min(total, max_nodes)
    hidden = total - shown

    lines = [
        "digraph retrograd {",
        f'  graph [rankdir={rankdir}, fontname="Helvetica"{page}'
        + (f', label="{_esc(_graph_title(title, shown, total))}", labelloc=t'
           if title or hidden else "") + "];",
        '  node [fontname="Helvetica", fontsize=11];',
        '  edge [color="#555555"];',
    ]
    root_ids = {id(r) for r in roots}
    for k in _post_order(kids, index, key, shown, len(roots)):  # operands first, in order
        node = order[k]
        label = names.get(id(node))
        if label is None:
            own = getattr(node, "label", None)
            if isinstance(own, str) and own and not _is_ir(node):
                label = own
        fields = reader.fields(node, label)
        style = ', penwidth=2, color="#b03030"' if id(node) in root_ids else ""
        lines.append(f'  n{k} [shape=record, label="{{ {_record(fields)} }}"{style}];')
        op = reader.op(node)
        if op is not None:
            lines.append(f'  n{k}_op [shape=ellipse, label="{_esc(op)}"];')
            lines.append(f"  n{k}_op -> n{k};")
            for x in kids[k]:
                j = index[key(x)]
                if j < shown:
                    lines.append(f"  n{j} -> n{k}_op;")
                else:
                    lines.append(f"  more -> n{k}_op [style=dashed];")
    if hidden:
        lines.append(f'  more [shape=note, style=filled, fillcolor="#f3f3f3", '
                     f'label="… {hidden} more node{"s" if hidden != 1 else ""}"];')
    lines.append("}")
    return _dedupe_more(lines) + "\n"


def _size_attr(size: tuple[float, float] | None) -> str:
    """Graphviz's `size` attribute ("scale down to fit"), checked; '' for no bound."""
    if size is None:
        return ""
    try:
        w, h = (float(v) for v in size)
    except (TypeError, ValueError):
        raise ArgumentError(f"size must be (width, height) in inches, got {size!r}") from None
    if not (w > 0 and h > 0 and np.isfinite(w) and np.isfinite(h)):
        raise ArgumentError(f"size must be two positive finite numbers of inches, got {size!r}")
    return f', size="{w:g},{h:g}"'


def _same(x: Any) -> Any:
    return x


def _post_order(kids: list[Sequence], index: dict, key: Callable[[Any], Any], shown: int,
                n_roots: int) -> list[int]:
    """Positions 0..shown-1 in depth-first post-order (operands left to right, then
    the node), so that Graphviz lays out the first operand above the second."""
    done = [False] * shown
    order: list[int] = []
    for r in range(min(n_roots, shown)):
        if done[r]:
            continue
        done[r] = True
        stack = [(r, iter(kids[r]))]
        while stack:
            k, it = stack[-1]
            for x in it:
                j = index[key(x)]
                if j < shown and not done[j]:
                    done[j] = True
                    stack.append((j, iter(kids[j])))
                    break
            else:
                stack.pop()
                order.append(k)
    return order


def _graph_title(title: str | None, shown: int, total: int) -> str:
    parts = [title] if title else []
    if shown < total:
        parts.append(f"summarised: the {shown} values nearest the output, of {total}")
    return "\n".join(parts)


def _dedupe_more(lines: list[str]) -> str:
    """Drop repeated dashed edges from the note (one per op is enough)."""
    seen: set[str] = set()
    out = []
    for line in lines:
        if line.startswith("  more -> "):
            if line in seen:
                continue
            seen.add(line)
        out.append(line)
    return "\n".join(out)


def _is_ir(node: Any) -> bool:
    from .ir import IRNode
    return isinstance(node, IRNode)


# ---------------------------------------------------------------- pictures

def have_dot() -> bool:
    """Whether Graphviz's `dot` program is on PATH (needed for SVG and PNG)."""
    return shutil.which("dot") is not None


def draw(root: Any, path: str | Path = "graph.svg", *,
         labels: Mapping[Hashable, str] | None = None, values: Mapping[str, Any] | None = None,
         max_nodes: int = MAX_NODES, title: str | None = None, rankdir: str = "LR",
         size: tuple[float, float] | None = None) -> Path:
    """Draw `root`'s graph to `path` (.svg, .png or .dot, by suffix); returns the file written.

    `rankdir` and `size` (a bound in inches) shape the layout, as in `to_dot`.

    Without Graphviz's `dot` program the DOT text goes to `path` with the
    suffix `.dot` instead, and a `GraphvizMissing` warning says how to get the
    picture. Rendering needs the `graphviz` package (`pip install retrograd[viz]`).
    """
    written, message = render(root, path, labels=labels, values=values, max_nodes=max_nodes,
                              title=title, rankdir=rankdir, size=size)
    if message:
        warnings.warn(message, GraphvizMissing, stacklevel=2)
    return written


def render(root: Any, path: str | Path, *, labels: Mapping[Hashable, str] | None = None,
           values: Mapping[str, Any] | None = None, max_nodes: int = MAX_NODES,
           title: str | None = None, rankdir: str = "LR",
           size: tuple[float, float] | None = None) -> tuple[Path, str | None]:
    """`draw` without the warning: (file written, message or None when DOT text
    replaced the picture because `dot` is missing)."""
    path = Path(path)
    fmt = path.suffix.lower().lstrip(".")
    if fmt not in FORMATS:
        raise ArgumentError(f"cannot draw to {str(path)!r}: the file name must end in "
                            f"{', '.join('.' + f for f in FORMATS)}")
    text = to_dot(root, labels=labels, values=values, max_nodes=max_nodes, title=title,
                  rankdir=rankdir, size=size)
    if fmt == "dot":
        path.write_text(text, encoding="utf-8")
        return path, None
    graphviz = _graphviz()
    if have_dot():
        try:
            data = graphviz.Source(text).pipe(format=fmt)
        except graphviz.ExecutableNotFound:
            pass
        except graphviz.CalledProcessError as err:
            why = (err.stderr or b"").decode(errors="replace").strip().splitlines()
            raise RuntimeError(f"Graphviz's dot could not draw {path}: "
                               f"{why[-1] if why else err}") from None
        else:
            path.write_bytes(data)
            return path, None
    dot_path = path.with_suffix(".dot")
    dot_path.write_text(text, encoding="utf-8")
    hint = HOW_TO_GET_DOT.format(fmt=fmt, dot=dot_path, pic=path)
    return dot_path, (f"Graphviz's `dot` program was not found, so the graph was written as "
                      f"DOT text to {dot_path}; for the picture, {hint}")


def _graphviz() -> Any:
    """The `graphviz` package, or an ImportError naming the extra that installs it."""
    try:
        import graphviz
    except ImportError:
        raise ImportError("drawing SVG or PNG needs the `graphviz` package: "
                          "pip install 'retrograd[viz]' (or draw to a .dot file)") from None
    return graphviz


# ---------------------------------------------------------------- text helpers

def _num(x: Any, digits: int = 6) -> str:
    """A number for a box: floats as 2.0, -137.72, 148.413 (`digits` significant digits)."""
    if isinstance(x, (bool, np.bool_)):
        return str(bool(x))
    if isinstance(x, (int, np.integer)):
        return str(int(x))
    if isinstance(x, np.ndarray):
        return _array_text(x)
    try:
        f = float(x)
    except (TypeError, ValueError):
        return _clip(str(x), 30)
    text = f"{f:.{digits}g}"
    if text.lstrip("-").isdigit():
        text += ".0"
    return text


def _array_text(a: Any) -> str:
    """A few numbers of an array (the whole of a small one)."""
    a = np.asarray(a)
    if a.ndim == 0:
        return _num(a.item())
    if a.size == 0:
        return "[]"
    flat = a.reshape(-1)
    digits = 6 if a.size <= 2 else 4
    head = [_num(v, digits) for v in flat[:4].tolist()]
    if a.size > 4:
        head = head[:3] + ["…"]
    return "[" + ", ".join(head) + "]"


def _shape_text(shape: Iterable[int]) -> str:
    shape = tuple(shape)
    return "()" if not shape else "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1
                                                                      else "") + ")"


def _attrs_text(attrs: Iterable[tuple[str, Any]]) -> str:
    """An op's attributes on a second line (None and False, the usual defaults, left out)."""
    text = ", ".join(f"{k}={_short_attr(v)}" for k, v in attrs
                     if v is not None and v is not False)
    return "\n" + _clip(text, 30) if text else ""


def _short_attr(v: Any) -> str:
    if isinstance(v, np.ndarray):
        return f"array{_shape_text(v.shape)}"
    return _clip(repr(v), 16)


def _clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def _esc(text: str) -> str:
    """Text inside a double-quoted DOT string (newlines become centred line breaks)."""
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _record(fields: list[str]) -> str:
    """Fields of a record-shaped node, with the record's special characters escaped."""
    out = []
    for f in fields:
        f = f.replace("\\", "\\\\").replace("\n", " ")
        for ch in '{}|<>"':
            f = f.replace(ch, "\\" + ch)
        out.append(f)
    return " | ".join(out)
