"""The documentation's promises: every code block runs, prints what the page says it
prints, and every public name has a docstring and an entry in the API reference.

A page's ```python blocks run in order in one namespace (a fresh one per page),
in a temporary working directory. A block followed directly by a ```text block
must print exactly that text; a line ending in `# prints: X` must print X (in
order). Blocks in other languages (bash) are not run.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import inspect
import io
import re
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```[ \t]*$", re.M | re.S)
PRINTS = re.compile(r"#\s*prints:\s?(.*)$")
MODULES = ["retrograd", "retrograd.func", "retrograd.sym", "retrograd.jit", "retrograd.nn",
           "retrograd.nn.functional", "retrograd.optim", "retrograd.optim.lr_scheduler",
           "retrograd.data", "retrograd.distributed", "retrograd.linalg", "retrograd.fft",
           "retrograd.special", "retrograd.distributions", "retrograd.cuda",
           "retrograd.autograd", "retrograd.viz"]


def pages() -> list[Path]:
    return sorted(p for p in DOCS.rglob("*.md"))


def blocks(page: Path) -> list[tuple[str, str | None, int]]:
    """(python code, the text it must print or None, line number) for each block."""
    text = page.read_text()
    found = list(FENCE.finditer(text))
    out = []
    for i, m in enumerate(found):
        if m.group(1) != "python":
            continue
        expected = None
        if i + 1 < len(found) and found[i + 1].group(1) == "text" \
                and not text[m.end():found[i + 1].start()].strip():
            expected = found[i + 1].group(2)
        out.append((m.group(2), expected, text.count("\n", 0, m.start()) + 1))
    return out


def test_fence_parser_sees_blocks_and_outputs(tmp_path):
    page = tmp_path / "sample.md"
    page.write_text("x\n```python\nprint(1)\n```\n\n```text\n1\n```\n```bash\nls\n```\n")
    assert blocks(page) == [("print(1)\n", "1\n", 2)]


def _run_page(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import retrograd as rg

    monkeypatch.chdir(tmp_path)
    rg.manual_seed(0)
    namespace: dict = {"__name__": f"docs_{page.stem.replace('-', '_')}"}
    for code, expected, line in blocks(page):
        out = io.StringIO()
        try:
            with contextlib.redirect_stdout(out):
                exec(compile(code, f"{page.relative_to(ROOT)}:{line}", "exec"), namespace)
        except Exception as e:
            raise AssertionError(f"{page.relative_to(ROOT)}, the block at line {line} raised "
                                 f"{type(e).__name__}: {e}\n{code}") from e
        printed = [ln.rstrip() for ln in out.getvalue().rstrip("\n").split("\n")]
        if expected is not None:
            want = [ln.rstrip() for ln in expected.rstrip("\n").split("\n")]
            assert printed == want, f"{page.relative_to(ROOT)}:{line} printed\n" \
                + "\n".join(printed) + "\ninstead of\n" + "\n".join(want)
        stated = [m.group(1).rstrip() for m in map(PRINTS.search, code.splitlines()) if m]
        if stated:
            assert printed == stated, f"{page.relative_to(ROOT)}:{line} printed {printed}, " \
                f"the page says {stated}"


@pytest.mark.parametrize("page", [p for p in pages() if blocks(p)],
                         ids=lambda p: str(p.relative_to(DOCS)))
def test_page_code_runs_and_prints_what_it_says(page, tmp_path, monkeypatch):
    import retrograd as rg
    from retrograd.ops.samples import SAMPLES
    from retrograd.primitive import NUMPY, OPS

    # a page may register an op of its own, with samples (the op-table tutorial): undo
    # that after; ops that rg.jit registers for itself (no samples) stay, as jit caches them
    sampled = set(SAMPLES)
    dtype = rg.get_default_dtype()
    np_state = np.random.get_state()
    modules = set(sys.modules)
    try:
        _run_page(page, tmp_path, monkeypatch)
    finally:
        for name in set(SAMPLES) - sampled:
            del SAMPLES[name]
            OPS.pop(name, None)
            vars(NUMPY).pop(name, None)
        rg.set_default_dtype(dtype)
        np.random.set_state(np_state)
        for name in set(sys.modules) - modules:
            if name.startswith("docs_"):
                del sys.modules[name]


# ---------------------------------------------------------------- the API reference

def _hooks():
    """docs/hooks.py, the site's build hooks, loaded under a name of its own."""
    name = "retrograd_docs_hooks"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, DOCS / "hooks.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        sys.modules[name] = module
    return sys.modules[name]


def _resolve(path: str):
    """The object named by a dotted path (a module, then attributes)."""
    parts = path.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for p in parts[i:]:
            obj = getattr(obj, p)
        return obj
    raise ImportError(path)


def reference_entries() -> tuple[set[str], list]:
    """Dotted names given a reference entry by the pages under docs/reference/ (the
    `<!-- api: module -->` lines expand to one per public name, as the site's hook
    does; `::: path` lines are entries too), and the objects they document."""
    hooks = _hooks()
    names, objects = set(), []
    for page in (DOCS / "reference").glob("*.md"):
        text = page.read_text()
        for m in hooks.API_MARK.finditer(text):
            skip = set((m.group(2) or "").split(","))
            module = importlib.import_module(m.group(1))
            for n in hooks.public_names(m.group(1)):
                if n not in skip:
                    names.add(f"{m.group(1)}.{n}")
                    objects.append(getattr(module, n))
        for m in re.finditer(r"^::: ([\w.]+)", text, re.M):
            names.add(m.group(1))
            objects.append(_resolve(m.group(1)))
    return names, objects


def public(module_name: str) -> list[tuple[str, object]]:
    mod = importlib.import_module(module_name)
    names = getattr(mod, "__all__", None)
    if names is None:
        names = [n for n in dir(mod) if not n.startswith("_")]
    return [(n, getattr(mod, n)) for n in names if not inspect.ismodule(getattr(mod, n))]


def test_every_public_name_has_a_reference_entry():
    names, objects = reference_entries()
    missing = []
    for module_name in MODULES:
        for n, obj in public(module_name):
            if f"{module_name}.{n}" not in names and not any(o is obj for o in objects):
                missing.append(f"{module_name}.{n}")
    assert not missing, f"no entry in docs/reference/ for {missing}"


def test_every_public_function_and_class_has_a_docstring():
    missing = []
    for module_name in MODULES:
        for n, obj in public(module_name):
            if (inspect.isroutine(obj) or inspect.isclass(obj)) \
                    and not (getattr(obj, "__doc__", None) or "").strip():
                missing.append(f"{module_name}.{n}")
    assert not missing, f"{len(missing)} public names have no docstring: {missing}"


def test_reference_check_can_fail():
    """The reference check sees a name that no page lists."""
    names, objects = reference_entries()
    assert "retrograd.nn.Linear" in names
    assert "retrograd.nn.NoSuchLayer" not in names


# ---------------------------------------------------------------- generated pictures

def test_lesson_graphs_carry_the_lessons_numbers():
    """L = (a*b + c)*f at a=2, b=3, c=-4, f=-2: by the chain rule dL/da = f*b = -6,
    dL/db = f*a = -4, dL/dc = dL/de = f = -2, dL/dd = f = -2, dL/df = a*b + c = 2."""
    dot = _hooks().lesson_dots()["backward"]
    a, b, c, f = 2.0, 3.0, -4.0, -2.0
    expected = [("a", a, f * b), ("b", b, f * a), ("c", c, f), ("e", a * b, f),
                ("d", a * b + c, f), ("f", f, a * b + c), ("L", (a * b + c) * f, 1.0)]
    for label, data, grad in expected:
        row = next(ln for ln in dot.splitlines() if f"{label} | data {data}" in ln)
        assert f"grad {grad}" in row, (label, row)


def test_graph_pictures_fall_back_to_dot_text_without_graphviz(monkeypatch):
    hooks = _hooks()
    monkeypatch.setattr(hooks.shutil, "which", lambda name: None)
    svg = hooks._svg_from_dot('digraph { a -> b [label="<x>"] }')
    assert svg.startswith("<svg") and "digraph" in svg and "&lt;x&gt;" in svg
