"""`retrograd graph "EXPR" --at a=2,b=3 [-o FILE]`."""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import retrograd.viz as viz

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
# the installed `retrograd` command runs exactly this
CONSOLE_SCRIPT = "import sys; from retrograd.cli import main; sys.exit(main())"


def retrograd(*args: str, cwd: Path, module: bool = False) -> subprocess.CompletedProcess:
    """Run the CLI in a subprocess, as the `retrograd` command or as `python -m retrograd.cli`."""
    head = ["-m", "retrograd.cli"] if module else ["-c", CONSOLE_SCRIPT]
    env = dict(os.environ, PYTHONIOENCODING="utf-8")
    return subprocess.run([sys.executable, *head, *args], cwd=cwd, capture_output=True,
                          text=True, encoding="utf-8", timeout=120, env=env)


@pytest.fixture
def cli(capsys, monkeypatch):
    """Run the CLI as the console script does, `sys.exit(main())`, but in this process: the
    same exit status, stdout and stderr, without starting (and importing retrograd in) a new
    interpreter for each call. The subprocess tests keep the real entry points covered."""
    from retrograd.cli import main

    def run(*args: str, cwd: Path) -> subprocess.CompletedProcess:
        monkeypatch.chdir(cwd)
        capsys.readouterr()
        try:
            code = main(list(args))
        except SystemExit as e:  # the console script would turn this into the exit status
            code = e.code
        out, err = capsys.readouterr()
        return subprocess.CompletedProcess(["retrograd", *args], code, out, err)

    return run


def report(stdout: str) -> tuple[float, dict[str, tuple[float, float]]]:
    """(output value, {input: (value, grad)}) from what `retrograd graph` prints."""
    lines = stdout.splitlines()
    out = float(lines[0].rsplit("=", 1)[1])
    inputs = {}
    for line in lines[1:]:
        m = re.match(r"(\w+): value=\s*(\S+)\s+grad=\s*(\S+)", line)
        if m:
            inputs[m.group(1)] = (float(m.group(2)), float(m.group(3)))
    return out, inputs


def picture_written(cwd: Path, stem: str, fmt: str) -> Path:
    """The file the command must have written: the picture, or DOT text without `dot`."""
    if fmt == "dot" or viz.have_dot():
        return cwd / f"{stem}.{fmt}"
    return cwd / f"{stem}.dot"


# ---------------------------------------------------------------- good expressions

def test_the_lessons_example(tmp_path):
    r = retrograd("graph", "(a*b + c)*f", "--at", "a=2,b=3,c=-4,f=-2", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    lines = r.stdout.splitlines()
    assert lines[:5] == [
        "(a*b + c)*f = -4.0",
        "a: value=  2.0  grad= -6.0",
        "b: value=  3.0  grad= -4.0",
        "c: value= -4.0  grad= -2.0",
        "f: value= -2.0  grad=  2.0",
    ]
    out, inputs = report(r.stdout)
    assert out == -4.0 and inputs == {"a": (2.0, -6.0), "b": (3.0, -4.0), "c": (-4.0, -2.0),
                                      "f": (-2.0, 2.0)}
    written = picture_written(tmp_path, "graph", "svg")  # the default file, in the cwd
    assert f"graph written to {written.name}" in r.stdout
    text = written.read_text()
    if written.suffix == ".svg":
        assert "<svg" in text and "grad &#45;6.0" in text
    else:
        assert "Graphviz" in r.stdout and "dot -Tsvg" in r.stdout
        assert '"{ a | data 2.0 | grad -6.0 }"' in text


def test_png_and_dot_outputs(tmp_path):
    r = retrograd("graph", "x*x + x", "--at", "x=3", "-o", "out.png", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert report(r.stdout) == (12.0, {"x": (3.0, 7.0)})  # 2x + 1: one share per use
    written = picture_written(tmp_path, "out", "png")
    data = written.read_bytes()
    if written.suffix == ".png":
        assert data[:8] == PNG_SIGNATURE and len(data) > 1000
    else:
        assert data.startswith(b"digraph")
    r = retrograd("graph", "x*x + x", "--at", "x=3", "-o", "sub/out.dot", cwd=tmp_path,)
    assert r.returncode == 2 and "cannot write" in r.stderr  # no such folder: one line
    (tmp_path / "sub").mkdir()
    r = retrograd("graph", "x*x + x", "--at", "x=3", "-o", "sub/out.dot", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    text = (tmp_path / "sub" / "out.dot").read_text()
    assert '"{ x | data 3.0 | grad 7.0 }"' in text and '"{ output | data 12.0 | grad 1.0 }"' in text


def f_plain(x, y, z):
    """The expression of the next test, in plain math, for finite differences."""
    sig = 1 / (1 + math.exp(-x))
    return (math.tanh(x) * math.exp(y) + math.log(z) - math.sqrt(z) + math.sin(x) / math.cos(y)
            + max(-x, 0.0) + sig + x ** -2 * 0.5 + x ** 3 / 4 - -y)


def test_every_function_against_finite_differences(tmp_path):
    expr = ("tanh(x)*exp(y) + log(z) - sqrt(z) + sin(x)/cos(y) + relu(-x) + sigmoid(x) "
            "+ x**-2*0.5 + x**3/4 - -y")
    at = {"x": 0.7, "y": -0.3, "z": 2.5}
    r = retrograd("graph", expr, "--at", ",".join(f"{k}={v}" for k, v in at.items()),
                  "-o", "g.dot", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    out, inputs = report(r.stdout)
    assert out == pytest.approx(f_plain(**at), rel=1e-12)
    h = 1e-6
    for name in at:
        up, down = dict(at), dict(at)
        up[name] += h
        down[name] -= h
        numeric = (f_plain(**up) - f_plain(**down)) / (2 * h)
        assert inputs[name][0] == at[name]
        assert inputs[name][1] == pytest.approx(numeric, rel=1e-6, abs=1e-8), name


def test_constants_unused_bindings_and_ieee_numbers(tmp_path, cli):
    r = cli("graph", "2*3 + 1", "-o", "g.dot", cwd=tmp_path)  # no variables at all
    assert r.returncode == 0, r.stderr
    assert report(r.stdout) == (7.0, {})
    r = cli("graph", "a / b", "--at", "a=1,b=0,c=5", "-o", "g.dot", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    out, inputs = report(r.stdout)
    assert out == math.inf and inputs["c"] == (5.0, 0.0)
    assert "c: value=  5.0  grad=  0.0  (not in the expression)" in r.stdout
    r = cli("graph", "log(a) + 10**400*0", "--at", "a=-1", "-o", "g.dot", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert math.isnan(report(r.stdout)[0])


# ---------------------------------------------------------------- bad input

BAD = [
    ("a +", "a=1", "cannot parse"),
    ("a.b", "a=1", "Attribute"),
    ("lambda: 1", "", "Lambda"),
    ("__import__('os').system('echo hi')", "", "unknown function"),
    ("__import__('os')", "", "unknown function '__import__'"),
    ("open('x')", "", "unknown function 'open'"),
    ("foo(a)", "a=1", "unknown function 'foo'"),
    ("exp(a, a)", "a=1", "one argument"),
    ("exp(x=a)", "a=1", "one argument"),
    ("a[0]", "a=1", "Subscript"),
    ("a if a else 1", "a=1", "IfExp"),
    ("[a]", "a=1", "List"),
    ("a < 1", "a=1", "Compare"),
    ("a // 2", "a=1", "BinOp"),
    ("'s'", "", "real numbers"),
    ("True * a", "a=1", "real numbers"),
    ("2j * a", "a=1", "real numbers"),
    ("a ** b", "a=1,b=2", "exponent"),
    ("", "", "empty"),
    ("(" * 300 + "a" + ")" * 300, "a=1", "cannot parse"),
    ("a + b", "a=1", "no value for variable 'b'"),
    ("a", "a", "NAME=NUMBER"),
    ("a", "a=x", "not a number"),
    ("a", "a=1,a=2", "twice"),
    ("a", "1a=2", "not a variable name"),
    ("a", "a=1,,b=2", "empty binding"),
    ("a", "a=2,", "empty binding"),
]


@pytest.mark.parametrize("expr,at,message", BAD, ids=[f"{e[:20]!r}|{a}" for e, a, _ in BAD])
def test_bad_input_is_one_line_and_status_2(tmp_path, cli, expr, at, message):
    r = cli("graph", expr, "--at", at, "-o", "g.svg", cwd=tmp_path)
    assert r.returncode == 2
    assert "Traceback" not in r.stderr
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("retrograd: error: ")
    assert message in lines[0]
    assert r.stdout == "" and list(tmp_path.iterdir()) == []  # nothing printed, nothing drawn


def test_a_long_expression_is_fine_and_a_bad_output_suffix_is_not(tmp_path):
    expr = " + ".join(["a*b"] * 2000)
    r = retrograd("graph", expr, "--at", "a=2,b=3", "-o", "g.dot", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert report(r.stdout) == (12000.0, {"a": (2.0, 6000.0), "b": (3.0, 4000.0)})
    assert "more nodes" in (tmp_path / "g.dot").read_text()  # summarised picture
    r = retrograd("graph", "a", "--at", "a=1", "-o", "g.jpg", cwd=tmp_path)
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1 and ".svg" in r.stderr


def test_python_dash_m_entry_point_gives_one_line_errors(tmp_path):
    """`python -m retrograd.cli` must catch graph's errors as the installed command does."""
    r = retrograd("graph", "(a*b + c)*f", "--at", "a=2,b=3,c=-4,f=-2", "-o", "g.dot",
                  cwd=tmp_path, module=True)
    assert r.returncode == 0 and "a: value=  2.0  grad= -6.0" in r.stdout
    r = retrograd("graph", "a.b", "--at", "a=1", cwd=tmp_path, module=True)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert len(r.stderr.splitlines()) == 1


# ---------------------------------------------------------------- the command line itself

def test_an_expression_may_start_with_a_minus(tmp_path, cli):
    r = cli("graph", "-a*b", "--at", "a=2,b=3", "-o", "g.dot", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert report(r.stdout) == (-6.0, {"a": (2.0, -3.0), "b": (3.0, -2.0)})
    r = cli("graph", "--at", "x=4", "-o", "g.dot", "-x**2", cwd=tmp_path)  # flags first
    assert r.returncode == 0, r.stderr
    assert report(r.stdout) == (-16.0, {"x": (4.0, -8.0)})
    r = cli("graph", "-1", "-o", "g.dot", cwd=tmp_path)  # a negative number
    assert r.returncode == 0, r.stderr
    assert report(r.stdout) == (-1.0, {})


def test_misspelt_flags_are_still_flags(tmp_path, cli):
    for args in (["-a*b", "--at", "a=1,b=1", "--bogus"], ["--bogus", "a"],
                 ["a", "--at", "a=1", "--outfile", "g.dot"]):
        r = cli("graph", *args, cwd=tmp_path)
        assert r.returncode == 2 and "Traceback" not in r.stderr
        lines = r.stderr.splitlines()
        assert len(lines) == 1 and "unrecognized arguments" in lines[0], r.stderr
    assert list(tmp_path.iterdir()) == []


def test_repeated_at_merges_and_a_name_twice_is_an_error(tmp_path, cli):
    r = cli("graph", "a*b + c", "--at", "a=2", "--at", "b=3,c=1", "-o", "g.dot", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert report(r.stdout) == (7.0, {"a": (2.0, 3.0), "b": (3.0, 2.0), "c": (1.0, 1.0)})
    for at in (["a=2", "a=3"], ["a=2,b=1", "b=1"]):
        r = cli("graph", "a*b", *(x for v in at for x in ("--at", v)), "-o", "g.svg",
                cwd=tmp_path)
        assert r.returncode == 2 and len(r.stderr.splitlines()) == 1
        assert "given twice" in r.stderr and r.stdout == ""
    assert not (tmp_path / "g.svg").exists()
