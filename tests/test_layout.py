"""The package's layout: no import cycles, the core imports nothing above it, and no
library module imports the command line. Read with `ast`; nothing is imported."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "retrograd"

# The core, bottom up: each may import only the modules listed for it (and NumPy).
CORE = {
    "retrograd.primitive": set(),
    "retrograd.grad_mode": set(),
    "retrograd.devices": set(),
    "retrograd.size": set(),
    "retrograd.sharing": set(),
    "retrograd.dtypes": {"retrograd.devices"},
    "retrograd.tensor": {"retrograd.dtypes", "retrograd.grad_mode", "retrograd.devices",
                         "retrograd.size", "retrograd.sharing"},
    "retrograd.engine": {"retrograd.primitive", "retrograd.tensor", "retrograd.grad_mode",
                         "retrograd.dtypes", "retrograd.devices"},
}


def module_graph(root: Path) -> dict[str, set[str]]:
    """Every module of the package under `root` -> the package's modules it imports
    (at module level or inside functions alike)."""
    def name_of(path: Path) -> str:
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)

    files = {name_of(p): p for p in root.rglob("*.py")}
    graph = {}
    for me, path in files.items():
        pkg = me if path.name == "__init__.py" else me.rpartition(".")[0]
        found = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = pkg.split(".")[:len(pkg.split(".")) - (node.level - 1)]
                    base = ".".join(up + ([node.module] if node.module else []))
                # `from pkg import mod` depends on the module, `from pkg import name` on pkg
                names = [f"{base}.{a.name}" if f"{base}.{a.name}" in files else base
                         for a in node.names]
            else:
                continue
            for n in names:
                while n and n not in files:
                    n = n.rpartition(".")[0]
                if n and n != me:
                    found.add(n)
        graph[me] = found
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan, iterative)."""
    index, low, on_stack, stack, out = {}, {}, set(), [], []
    counter = 0
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    group = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        group.append(w)
                        if w == v:
                            break
                    if len(group) > 1:
                        out.append(sorted(group))
    return out


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """Imports by a core module of anything not below it, and by any library module of
    the command line."""
    bad = []
    for mod, allowed in CORE.items():
        for dep in sorted(graph.get(mod, ())):
            if dep not in allowed:
                bad.append(f"{mod} imports {dep}")
    for mod, deps in graph.items():
        if not mod.startswith("retrograd.cli"):
            bad += [f"{mod} imports {d}" for d in sorted(deps) if d.startswith("retrograd.cli")]
    return bad


def test_no_import_cycles():
    found = cycles(module_graph(PACKAGE))
    assert not found, "import cycles: " + "; ".join(" <-> ".join(c) for c in found)


def test_core_imports_nothing_above_it_and_the_library_never_imports_the_cli():
    graph = module_graph(PACKAGE)
    assert set(CORE) <= set(graph), "a core module was renamed: update CORE"
    assert not upward_imports(graph)


def _plant(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "retrograd"
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_the_checks_catch_a_planted_cycle_and_an_upward_import(tmp_path):
    root = _plant(tmp_path, {
        "__init__.py": "",
        "engine.py": "from .tensor import Tensor\nfrom . import ops\n",
        "tensor.py": "def f():\n    from .engine import apply\n",   # a cycle, inside a function
        "primitive.py": "",
        "ops/__init__.py": "from ..primitive import Op\n",
        "cli/__init__.py": "",
        "viz.py": "from .cli import main\n",
    })
    graph = module_graph(root)
    assert cycles(graph) == [["retrograd.engine", "retrograd.tensor"]]
    bad = upward_imports(graph)
    assert "retrograd.engine imports retrograd.ops" in bad
    assert "retrograd.tensor imports retrograd.engine" in bad
    assert "retrograd.viz imports retrograd.cli" in bad
