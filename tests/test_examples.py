"""The example scripts redo each seed document's worked examples and print its numbers."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
HAVE_TORCH = importlib.util.find_spec("torch") is not None
HAVE_SYMPY = importlib.util.find_spec("sympy") is not None


def run_example(name: str, *args: str, cwd: Path) -> str:
    env = dict(os.environ, PYTHONIOENCODING="utf-8")
    r = subprocess.run([sys.executable, str(EXAMPLES / name), *args], cwd=cwd,
                       capture_output=True, text=True, encoding="utf-8", timeout=300, env=env)
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    return r.stdout


def numbers(line: str) -> list[float]:
    return [float(x) for x in re.findall(r"-?\d+\.\d+(?:e[-+]?\d+)?", line)]


def line_with(stdout: str, prefix: str) -> str:
    found = [line for line in stdout.splitlines() if line.startswith(prefix)]
    assert found, f"no line starting with {prefix!r}"
    return found[0]


# ---------------------------------------------------------------- the lesson (000)

# What the lesson's cells print, copied from the lesson, in its order.
LESSON_LINES = [
    "e = 6.0  op: *  hijos: [2.0, 3.0]",
    "d = 2.0  op: +  hijos: [6.0, -4.0]",
    "a.grad = 3.0   b.grad = 2.0",
    "orden: 2.0 3.0 * -4.0 + -2.0 *",
    "L: valor= -4.0  grad=  1.0",
    "d: valor=  2.0  grad= -2.0",
    "f: valor= -2.0  grad=  2.0",
    "e: valor=  6.0  grad= -2.0",
    "c: valor= -4.0  grad= -2.0",
    "a: valor=  2.0  grad= -6.0",
    "b: valor=  3.0  grad= -4.0",
    "autograd: dL/da = -6.0",
    "numérico: dL/da = -6.0",
    "x*x + x en x=3: dy/dx = 7.0 (2x+1 = 7)",
    "z =  2.5  relu = 2.5  dy/dz = 1.0",
    "z = -1.0  relu = 0.0  dy/dz = 0.0",
    "nuestro: [1.0, -2.0, 1.0, 0.5, -1.5]",
]


def test_lesson_example_prints_the_lessons_output(tmp_path):
    out = run_example("lesson_autograd_from_scratch.py", "--draw", "lesson.dot", cwd=tmp_path)
    lines = out.splitlines()
    positions = [lines.index(expected) for expected in LESSON_LINES]  # each line, verbatim
    assert positions == sorted(positions)  # in the lesson's order
    # the numbers its pictures and formulas show
    forward = line_with(out, "forward:")
    assert numbers(forward) == [2.0, 3.0, 6.0, -4.0, 2.0, -2.0, -4.0]
    assert numbers(line_with(out, "dL/da = dL/de * de/da")) == [-2.0, 3.0, -6.0]
    steps = [line.strip() for line in lines[lines.index("step by step:") + 1:][:3]]
    assert numbers(steps[0]) == [-2.0, 2.0]  # dL/dd = 1*f, dL/df = 1*d
    assert numbers(steps[1]) == [-2.0, -2.0]  # the sum copies: dL/de = dL/dc = -2*1
    assert numbers(steps[2]) == [-2.0, -6.0, -2.0, -4.0]  # dL/da = -2*b, dL/db = -2*a
    assert numbers(line_with(out, "with = instead of +=")) == [3.0]  # the += trap gives 3
    assert "the lesson's loop over the order gives the same gradients: True" in lines
    # the neuron against PyTorch
    if HAVE_TORCH:
        assert "torch  : [1.0, -2.0, 1.0, 0.5, -1.5]" in lines
        assert "y: 3.75 y torch: 3.75" in lines
    else:
        assert line_with(out, "torch  :").endswith("skipped (PyTorch is not installed)")
        assert "y: 3.75" in lines
    assert numbers(line_with(out, "backward twice")) == [-12.0]  # gradients accumulate
    drawn = (tmp_path / "lesson.dot").read_text()
    assert '"{ a | data 2.0 | grad -6.0 }"' in drawn and '"{ L | data -4.0 | grad 1.0 }"' in drawn


# ---------------------------------------------------------------- the blog post (001)

def test_blog_example_prints_the_posts_numbers(tmp_path):
    out = run_example("blog_lazy_graph.py", cwd=tmp_path)

    def tensor_value(prefix: str) -> float:
        return float(re.search(r"T:(\S+)", line_with(out, prefix)).group(1))

    assert tensor_value("z = x + y ->") == 8
    assert tensor_value("z2 = (x + y)*y ->") == 40
    assert tensor_value("after x.value = 4") == 9
    assert tensor_value("g at x=3, y=5 ->") == 13
    dx, dy = tensor_value("z.grad(x) ->"), tensor_value("z.grad(y) ->")
    assert (dx, dy) == (-3.34729777301069, -9.70176956641438)  # the post's digits, exactly
    tensor_line = line_with(out, "rg.Tensor backward():")
    assert [float(v) for v in re.findall(r"T:(\S+)", tensor_line)] == [dx, dy]
    if HAVE_SYMPY:
        sympy_line = line_with(out, "SymPy diff().evalf():")
        assert [float(v) for v in re.findall(r"T:(\S+)", sympy_line)] == [dx, dy]
        assert line_with(out, "SymPy: g - (x + 2*y) simplifies to").endswith(" 0")
    assert "all agree with the post: True" in out.splitlines()


# ---------------------------------------------------------------- the notes (003)

def test_notes_example_prints_the_notes_numbers(tmp_path):
    out = run_example("notes_numpy_tensor.py", "--draw", "notes.dot", cwd=tmp_path)
    lines = out.splitlines()
    f64 = lines[lines.index("== float64 (the notes' data)"):]
    f32 = lines[lines.index("== float32 (the notes' .grad)"):]
    assert f64[1] == "loss = [-137.72001192]"  # as the notes print it
    assert f64[2] == "x1.grad = [5.5]"
    assert numbers(f64[3]) == pytest.approx([-146.41316], abs=5e-6)
    assert f32[2:4] == ["x1.grad = [5.5]", "x2.grad = [-146.41316]"]  # the notes' float32 .grad
    table = {line.split("value")[0].strip(): numbers(line) for line in f64
             if "value =" in line}
    expect = {"x1": (2.0, 5.5), "x2": (5.0, np.exp(5) * -1 + 2), "v1 = ln x1": (np.log(2), 1),
              "v2 = x1*x2": (10, 1), "v3 = exp(x2)": (np.exp(5), -1),
              "v4 = v1 + v2": (np.log(2) + 10, 1), "y = v4 - v3": (np.log(2) + 10 - np.exp(5), 1)}
    assert table.keys() == expect.keys()
    for name, (value, grad) in expect.items():
        assert table[name] == pytest.approx([value, grad], abs=1e-5), name
    classes = lines[lines.index("== with operator classes (rg.autograd.Function), float64"):]
    assert classes[1:4] == ["loss = [-137.72001192]", "x1.grad = [5.5]", f64[3]]
    assert "so: dy/dx1 = 5.5, dy/dx2 = -146.4" in out
    drawn = (tmp_path / "notes.dot").read_text()
    assert "x1 | (1,) float64 | data [2.0] | grad [5.5]" in drawn
