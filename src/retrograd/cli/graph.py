"""`retrograd graph "EXPR" --at a=2,b=3 [-o FILE]`: the lesson's picture, for any expression.

The expression is read with Python's `ast` and a whitelist (numbers, names,
`+ - * / **`, unary minus, parentheses, calls to exp log tanh relu sigmoid sin
cos sqrt), never evaluated by Python. It is built with `rg.Value`, one Value
per variable, and differentiated with `backward()`; each input's value and
gradient is printed and the graph is drawn with its forward values and
gradients (`rg.viz`).
"""

from __future__ import annotations

import argparse
import ast
import math
import operator
from pathlib import Path
from typing import Any

from ..value import Value
from .errors import UsageError

__all__ = ["add_parser", "run", "parse_bindings", "build"]

DEFAULT_OUTPUT = "graph.svg"
FUNCTIONS = ("exp", "log", "tanh", "relu", "sigmoid", "sin", "cos", "sqrt")
_BINOPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Pow: "**"}


def add_parser(subparsers) -> argparse.ArgumentParser:
    """`retrograd graph EXPR [--at a=2,b=3 ...] [-o FILE]`."""
    parser = subparsers.add_parser(
        "graph", help="draw an expression's graph with values and gradients")
    parser.dashed_positionals = True  # "-a*b" is the expression, not an unknown flag
    parser.add_argument("expr", help='the expression, e.g. "(a*b + c)*f" or "-a*b"')
    parser.add_argument("--at", action="append", default=[], metavar="NAME=NUMBER,...",
                        help="values of the variables, e.g. a=2,b=3 (repeatable)")
    parser.add_argument("-o", "--output", default=None, help="picture file (.svg, .png or .dot)")
    parser.set_defaults(run=run)
    return parser


def run(args: argparse.Namespace) -> int:
    """Parse, build, differentiate, print, draw. Bad input raises `UsageError` (exit 2)."""
    at = args.at if isinstance(args.at, list) else [args.at]
    bindings = parse_bindings(*at)
    out, inputs = build(args.expr, bindings)
    out.backward()
    rows = [(name, _show(v.data), _show(v.grad), "") for name, v in inputs.items()]
    rows += [(name, _show(x), "0.0", "  (not in the expression)")  # d(output)/d(unused) = 0
             for name, x in bindings.items() if name not in inputs]
    w = max([5] + [max(len(r[1]), len(r[2])) for r in rows])
    print(f"{args.expr.strip()} = {_show(out.data)}")
    for name, value, grad, note in rows:
        print(f"{name}: value={value:>{w}}  grad={grad:>{w}}{note}")
    labels = {v: name for name, v in inputs.items()}
    labels.setdefault(out, "output")
    _draw(out, labels, args.output)
    return 0


def _draw(out: Value, labels: dict, output: str | None) -> None:
    from .. import viz

    path = Path(output if output else DEFAULT_OUTPUT)
    fmt = path.suffix.lower().lstrip(".")
    if fmt not in viz.FORMATS:
        raise UsageError(f"cannot draw to {str(path)!r}: use a file name ending in "
                         f"{', '.join('.' + f for f in viz.FORMATS)}")
    try:
        try:
            written, message = viz.render(out, path, labels=labels)
        except ImportError as err:  # the graphviz package is missing: DOT text will do
            written = path.with_suffix(".dot")
            written.write_text(viz.to_dot(out, labels=labels), encoding="utf-8")
            message = f"{err}; the graph was written as DOT text to {written}"
    except OSError as err:
        raise UsageError(f"cannot write {err.filename or path}: {err.strerror or err}") from None
    except RuntimeError as err:  # dot itself failed
        raise UsageError(str(err)) from None
    print(f"graph written to {written}")
    if message:
        print(message)


# ---------------------------------------------------------------- --at

def parse_bindings(*texts: str) -> dict[str, float]:
    """`"a=2,b=3"` as `{"a": 2.0, "b": 3.0}`; several texts (repeated `--at`) are merged.
    A malformed list, or a name given twice, raises `UsageError`."""
    bindings: dict[str, float] = {}
    for text in texts:
        _parse_one(text, bindings)
    return bindings


def _parse_one(text: str, bindings: dict[str, float]) -> None:
    if not text or not text.strip():
        return
    for item in text.split(","):
        if not item.strip():
            raise UsageError(f"--at: empty binding in {text!r} (a stray comma?)")
        if "=" not in item:
            raise UsageError(f"--at: expected NAME=NUMBER, got {item.strip()!r}")
        name, _, number = item.partition("=")
        name = name.strip()
        if not name.isidentifier():
            raise UsageError(f"--at: {name!r} is not a variable name (in {item.strip()!r})")
        if name in bindings:
            raise UsageError(f"--at: {name} is given twice")
        try:
            bindings[name] = float(number.strip())
        except ValueError:
            raise UsageError(f"--at: {name}={number.strip()!r} is not a number") from None


# ---------------------------------------------------------------- the expression

def build(expr: str, bindings: dict[str, float]) -> tuple[Value, dict[str, Value]]:
    """The expression built from Values, and its variables (in order of appearance).

    Parts without variables are folded to plain numbers; `**` needs a number
    as its exponent. Raises `UsageError` for anything outside the whitelist.
    """
    body = _parse(expr)
    inputs: dict[str, Value] = {}
    done: dict[int, Any] = {}
    stack = [body]
    while stack:  # post-order by hand: a long expression must not hit the recursion limit
        node = stack[-1]
        kids = _check(node, expr)
        todo = [k for k in kids if id(k) not in done]
        if todo:
            stack.extend(reversed(todo))  # left operand first
            continue
        stack.pop()
        args = [done[id(k)] for k in kids]
        if isinstance(node, ast.Constant):
            result: Any = _float(node.value)
        elif isinstance(node, ast.Name):
            name = node.id
            if name not in inputs:
                if name not in bindings:
                    raise UsageError(f"no value for variable {name!r}: add {name}=NUMBER to --at")
                inputs[name] = Value(bindings[name])
            result = inputs[name]
        elif isinstance(node, ast.UnaryOp):
            result = args[0] if isinstance(node.op, ast.UAdd) else _neg(args[0])
        elif isinstance(node, ast.BinOp):
            result = _binop(_BINOPS[type(node.op)], args[0], args[1], expr)
        else:  # ast.Call
            result = _call(node.func.id, args[0])
        done[id(node)] = result
    out = done[id(body)]
    if not isinstance(out, Value):
        out = Value(out)  # an expression without variables
    return out, inputs


def _parse(expr: str) -> ast.expr:
    text = expr.strip()
    if not text:
        raise UsageError("the expression is empty")
    try:
        return ast.parse(text, mode="eval").body
    except SyntaxError as err:
        raise UsageError(f"cannot parse {text!r}: {err.msg}") from None
    except (ValueError, MemoryError, RecursionError) as err:
        raise UsageError(f"cannot parse {text!r}: {type(err).__name__}") from None


def _check(node: ast.AST, expr: str) -> list[ast.AST]:
    """The operands of an allowed AST node; `UsageError` for anything else."""
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        return [node.left, node.right]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        return [node.operand]
    if isinstance(node, ast.Name):
        return []
    if isinstance(node, ast.Constant):
        if isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
            return []
        raise UsageError(f"only real numbers are allowed, not {node.value!r}")
    if isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
            what = _segment(expr, node.func)
            raise UsageError(f"unknown function {what!r}; known: {', '.join(FUNCTIONS)}")
        if node.keywords or len(node.args) != 1 or isinstance(node.args[0], ast.Starred):
            raise UsageError(f"{node.func.id}() takes exactly one argument")
        return [node.args[0]]
    raise UsageError(f"not allowed in an expression: {_segment(expr, node)!r} "
                     f"({type(node).__name__}); use numbers, variables, + - * / ** "
                     f"and {', '.join(FUNCTIONS)}")


def _segment(expr: str, node: ast.AST) -> str:
    text = ast.get_source_segment(expr.strip(), node) or type(node).__name__
    return text if len(text) <= 40 else text[:39] + "…"


# ---------------------------------------------------------------- arithmetic
# Numbers meet numbers as floats (IEEE rules: no exceptions); anything with a
# Value in it builds graph nodes.

def _float(x: float | int) -> float:
    try:
        return float(x)
    except OverflowError:
        return math.inf


def _neg(a: Any) -> Any:
    return -a


_ARITH = {"+": operator.add, "-": operator.sub, "*": operator.mul}


def _binop(op: str, a: Any, b: Any, expr: str) -> Any:
    if op == "**":
        if isinstance(b, Value):
            raise UsageError("the exponent of ** must be a number, not an expression with "
                             "variables (for a**b write exp(b*log(a)))")
        if isinstance(a, Value):
            return a**b
        return _fpow(a, b)
    if op != "/":
        return _ARITH[op](a, b)
    if isinstance(a, Value) or isinstance(b, Value):
        return a / b
    if b == 0:  # IEEE: x/0 is +-inf, 0/0 is nan
        if a == 0 or math.isnan(a):
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, b)
    return a / b


def _fpow(a: float, b: float) -> float:
    try:
        r = a**b
    except ZeroDivisionError:
        return math.inf
    except OverflowError:
        return math.inf
    return math.nan if isinstance(r, complex) else r


def _call(fn: str, x: Any) -> Any:
    if not isinstance(x, Value):  # a number: fold it
        return _call(fn, Value(x)).data
    if fn == "exp":
        return x.exp()
    if fn == "log":
        return x.log()
    if fn == "tanh":
        return x.tanh()
    if fn == "relu":
        return x.relu()
    if fn == "sigmoid":
        return x.sigmoid()
    if fn == "sqrt":
        return x**0.5
    # sin and cos, which Value lacks, added the micrograd way: a node and its _backward
    d = x.data
    finite = math.isfinite(d)
    if fn == "sin":
        y, dy = (math.sin(d), math.cos(d)) if finite else (math.nan, math.nan)
    else:
        y, dy = (math.cos(d), -math.sin(d)) if finite else (math.nan, math.nan)
    out = Value(y, (x,), fn)

    def _backward() -> None:
        x.grad += dy * out.grad

    out._backward = _backward
    return out


def _show(x: float) -> str:
    """A float as Python writes it (2.0, -6.0, 0.1)."""
    return repr(float(x))
