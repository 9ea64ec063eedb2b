"""MkDocs hooks: what the site generates from the code at build time.

- Graph pictures: `rg.viz` draws the lesson's graphs as SVG (Graphviz's `dot`);
  without `dot`, a small SVG shows the DOT text instead, so the build never fails.
- Benchmark plots: one SVG per workload from the saved runs in docs/benchmarks/.
- API reference: a line `<!-- api: retrograd.nn -->` in a page becomes one
  mkdocstrings `:::` entry per public name of that module (its `__all__`),
  grouped by the submodule that defines it, so new names appear by themselves.
"""

from __future__ import annotations

import html
import importlib
import inspect
import io
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
from mkdocs.structure.files import File, Files

DOCS = Path(__file__).parent
BENCH_MARK = "<!-- benchmarks -->"
API_MARK = re.compile(r"^<!-- api: ([\w.]+)(?: skip=([\w,]+))? -->$", re.M)

# Section titles for the submodules that define the public names.
GROUPS = {
    "api.math": "Math",
    "api.elementwise": "Element-wise",
    "api.activations": "Activations",
    "api.attention": "Attention",
    "api.complex": "Complex numbers",
    "api.cumulative": "Sorting and cumulative",
    "api.indexing": "Indexing, slicing, joining",
    "api.linalg": "Products and contractions",
    "api.matrices": "Matrices and statistics",
    "linalg_aliases": "Linear algebra, PyTorch's top-level names",
    "api.losses": "Losses",
    "api.norms": "Norms and statistics",
    "api.numpy_style": "NumPy-style functions",
    "api.reductions": "Reductions",
    "api.resample": "Resampling",
    "api.shape": "Shape",
    "api.windows": "Convolution and pooling",
    "api.torch_names": "PyTorch spellings and queries",
    "api.rng": "Random sampling",
    "api.modes": "Grad mode and threads",
    "creation": "Creation",
    "dtypes": "Data types",
    "grad_mode": "Gradient mode",
    "gradcheck": "Gradient checking",
    "serialization": "Saving and loading",
    "tensor": "Tensor",
    "value": "The scalar Value",
    "devices": "Devices",
    "jit": "jit",
    "linalg": "Linear algebra",
    "special": "Special functions",
    "nn.rnn": "Recurrent layers",
    "nn.conv": "Convolution",
    "distributions.kl": "KL divergence",
    "sym.expr": "Expressions",
    "sym.functions": "Functions",
    "sym.diff": "Differentiation",
    "sym.codegen": "Compiling to NumPy",
    "sym.parse": "Parsing and SymPy",
    "sym.state": "State",
    "ir": "The graph IR",
    "sym.evaluation": "Evaluation",
}


# --------------------------------------------------------------- the API reference

def public_names(module_name: str) -> list[str]:
    """The public names of a module: its `__all__`, else `dir()` less private names;
    submodules are left out (each has its own page)."""
    mod = importlib.import_module(module_name)
    names = getattr(mod, "__all__", None)
    if names is None:
        names = [n for n in dir(mod) if not n.startswith("_")]
    return [n for n in names if not inspect.ismodule(getattr(mod, n, None))]


def _home(module_name: str, name: str) -> str:
    """The submodule (relative to retrograd) that defines `module_name.name`."""
    obj = getattr(importlib.import_module(module_name), name)
    where = getattr(obj, "__module__", None) if (inspect.isclass(obj)
                                                  or inspect.isroutine(obj)) else None
    if isinstance(obj, np.dtype):
        return "dtypes"
    if not isinstance(where, str) or not where.startswith("retrograd"):
        where = module_name if not (inspect.isclass(type(obj))
                                    and type(obj).__module__.startswith("retrograd")) \
            else type(obj).__module__
    return where.removeprefix("retrograd.").removeprefix("retrograd")


def _title(home: str, module_name: str) -> str:
    if home in GROUPS:
        return GROUPS[home]
    last = home.rsplit(".", 1)[-1] or module_name.rsplit(".", 1)[-1]
    return last.replace("_", " ").capitalize()


# Where each module's counterparts live: (label, importable module), tried in order.
COUNTERPARTS = {
    "retrograd": [("PyTorch", "torch"), ("NumPy", "numpy")],
    "retrograd.func": [("PyTorch", "torch.func")],
    "retrograd.sym": [("SymPy", "sympy")],
    "retrograd.nn": [("PyTorch", "torch.nn")],
    "retrograd.nn.functional": [("PyTorch", "torch.nn.functional")],
    "retrograd.optim": [("PyTorch", "torch.optim")],
    "retrograd.optim.lr_scheduler": [("PyTorch", "torch.optim.lr_scheduler")],
    "retrograd.optim.swa_utils": [("PyTorch", "torch.optim.swa_utils")],
    "retrograd.profiler": [("PyTorch", "torch.profiler")],
    "retrograd.random": [("PyTorch", "torch.random")],
    "retrograd.data": [("PyTorch", "torch.utils.data")],
    "retrograd.linalg": [("PyTorch", "torch.linalg"), ("PyTorch", "torch")],
    "retrograd.fft": [("PyTorch", "torch.fft")],
    "retrograd.special": [("PyTorch", "torch.special"), ("SciPy", "scipy.special")],
    "retrograd.distributions": [("PyTorch", "torch.distributions")],
    "retrograd.cuda": [("PyTorch", "torch.cuda")],
    "retrograd.autograd": [("PyTorch", "torch.autograd"), ("PyTorch", "torch")],
}
# Counterparts that are not found by name.
NAMED = {
    "retrograd.jit.jit": "JAX: `jax.jit`; PyTorch: `torch.compile`",
    "retrograd.distributed.init": "Horovod: `hvd.init`",
    "retrograd.distributed.rank": "Horovod: `hvd.rank`",
    "retrograd.distributed.size": "Horovod: `hvd.size`",
    "retrograd.distributed.allreduce": "Horovod: `hvd.allreduce`",
    "retrograd.distributed.barrier": "Horovod: `hvd.barrier`",
    "retrograd.distributed.broadcast_parameters": "Horovod: `hvd.broadcast_parameters`",
    "retrograd.distributed.DistributedOptimizer": "Horovod: `hvd.DistributedOptimizer`",
    "retrograd.Value": "micrograd: `micrograd.engine.Value`",
    "retrograd.data.load_digits": "scikit-learn: `sklearn.datasets.load_digits`",
}
JAX_FUNC = {"grad", "value_and_grad", "vjp", "jvp", "jacrev", "jacfwd", "hessian", "vmap"}


def counterpart(module_name: str, name: str) -> str | None:
    """'PyTorch: `torch.nn.Linear`' (and JAX's for rg.func), or None when there is none."""
    full = f"{module_name}.{name}"
    if full in NAMED:
        return NAMED[full]
    found = []
    for label, where in COUNTERPARTS.get(module_name, []):
        try:
            mod = importlib.import_module(where)
        except Exception:  # noqa: BLE001 - the peer is not installed: no counterpart shown
            continue
        if hasattr(mod, name) and not inspect.ismodule(getattr(mod, name)):
            found.append(f"{label}: `{where}.{name}`")
            break
    if module_name == "retrograd.func" and name in JAX_FUNC:
        found.append(f"JAX: `jax.{name}`")
    return "; ".join(found) or None


def api_markdown(module_name: str, skip: set[str] = frozenset()) -> str:
    """One `:::` entry per public name, in sections by defining submodule, each followed by
    its PyTorch (or JAX, SymPy, SciPy, Horovod) counterpart where there is one."""
    groups: dict[str, list[str]] = {}
    for name in sorted(public_names(module_name), key=str.lower):
        if name in skip:
            continue
        groups.setdefault(_title(_home(module_name, name), module_name), []).append(name)
    several = len(groups) > 1
    out = []
    for title in sorted(groups):
        if several:
            out.append(f"## {title}\n")
        for name in groups[title]:
            out.append(f"::: {module_name}.{name}\n"
                       f"    options:\n      heading_level: {3 if several else 2}\n")
            peer = counterpart(module_name, name)
            if peer:
                out.append(f'<p class="counterpart">Counterpart: {_code(peer)}</p>\n')
    return "\n".join(out)


def _code(text: str) -> str:
    """`x` spans as HTML <code> (the paragraph is raw HTML, so Markdown is not applied)."""
    return re.sub(r"`([^`]+)`", lambda m: f"<code>{html.escape(m.group(1))}</code>", text)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    def expand(m: re.Match) -> str:
        skip = set((m.group(2) or "").split(",")) - {""}
        return api_markdown(m.group(1), skip)
    markdown = API_MARK.sub(expand, markdown)
    if BENCH_MARK in markdown:
        sys.path.insert(0, str(DOCS))
        try:
            from benchmarks_data import page_markdown
        finally:
            sys.path.remove(str(DOCS))
        markdown = markdown.replace(BENCH_MARK, page_markdown(DOCS / "benchmarks"))
    return markdown


# --------------------------------------------------------------- graph pictures

def _svg_from_dot(dot_text: str) -> str:
    """SVG from DOT text with Graphviz's `dot`; without it, the DOT text in a box."""
    dot = shutil.which("dot")
    if dot:
        try:
            done = subprocess.run([dot, "-Tsvg"], input=dot_text.encode(), capture_output=True,
                                  timeout=60, check=True)
            return done.stdout.decode()
        except (OSError, subprocess.SubprocessError):
            pass
    lines = ["Graphviz's dot was not found when the site was built;",
             "this is the graph as DOT text (apt-get install graphviz to draw it):", "",
             *dot_text.splitlines()]
    height = 16 * len(lines) + 20
    body = "".join(f'<text x="10" y="{20 + 16 * i}">{html.escape(t)}</text>'
                   for i, t in enumerate(lines))
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="900" height="{height}" '
            f'font-family="monospace" font-size="12">{body}</svg>')


def lesson_graphs() -> dict[str, str]:
    """The lesson's pictures as SVG files of the site."""
    return {f"img/graph_{k}.svg": _svg_from_dot(v) for k, v in lesson_dots().items()}


def lesson_dots() -> dict[str, str]:
    """The lesson's graphs as DOT text: L = (a*b + c)*f before and after backward,
    x*x + x, and the neuron with ReLU, drawn by rg.viz with the lesson's numbers."""
    import retrograd as rg
    import retrograd.viz as viz

    pics = {}
    a, b, c, f = rg.Value(2.0), rg.Value(3.0), rg.Value(-4.0), rg.Value(-2.0)
    e = a * b
    d = e + c
    L = d * f
    names = {a: "a", b: "b", c: "c", d: "d", e: "e", f: "f", L: "L"}
    pics["forward"] = viz.to_dot(L, labels=names, title="forward: L = (a*b + c)*f")
    L.backward()
    pics["backward"] = viz.to_dot(L, labels=names, title="after L.backward()")
    x = rg.Value(3.0)
    y = x * x + x
    y.backward()
    pics["reuse"] = viz.to_dot(y, labels={x: "x", y: "y"}, title="x used three times")
    x1, x2 = rg.Value(1.0), rg.Value(-2.0)
    w1, w2, bias = rg.Value(0.5), rg.Value(-1.5), rg.Value(0.25)
    out = (w1 * x1 + w2 * x2 + bias).relu()
    out.backward()
    pics["neuron"] = viz.to_dot(out, labels={x1: "x1", x2: "x2", w1: "w1", w2: "w2",
                                             bias: "b", out: "y"}, title="a neuron with ReLU")
    return pics


# --------------------------------------------------------------- benchmark plots

def benchmark_plots() -> dict[str, str]:
    """One bar chart per workload of each saved run (docs/benchmarks/*.json)."""
    from benchmarks_data import load_runs, slug  # docs/benchmarks_data.py

    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        plt = None
    plots = {}
    for run in load_runs(DOCS / "benchmarks"):
        for workload, rows in run["workloads"].items():
            name = f"benchmarks/{run['name']}_{slug(workload)}.svg"
            if plt is None:
                plots[name] = _svg_from_dot("matplotlib is not installed")
                continue
            fig, ax = plt.subplots(figsize=(6, 0.45 * len(rows) + 1.2))
            labels = [r["library"] for r in rows]
            values = [r["median"] for r in rows]
            ax.barh(labels, values, color="#5c6bc0")
            ax.invert_yaxis()
            ax.set_xlabel(run["unit"])
            ax.set_title(workload, fontsize=10)
            for i, v in enumerate(values):
                ax.text(v, i, f" {v:.3g}", va="center", fontsize=8)
            ax.margins(x=0.2)
            fig.tight_layout()
            buf = io.StringIO()
            fig.savefig(buf, format="svg")
            plt.close(fig)
            plots[name] = buf.getvalue()
    return plots


def on_files(files: Files, config: Any) -> Files:
    sys.path.insert(0, str(DOCS))
    try:
        generated = {**lesson_graphs(), **benchmark_plots()}
    finally:
        sys.path.remove(str(DOCS))
    for uri, text in generated.items():
        files.append(File.generated(config, uri, content=text))
    return files
