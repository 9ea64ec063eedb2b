"""Compatibility sweep over PyTorch's docstring examples (not a pytest file).

Every `>>>` example in the docstrings of torch's functions, Tensor methods and the
torch.nn.functional / special / linalg / fft / nn-module namespaces is extracted; the
ones whose inputs are deterministic are run twice, once with `torch` and once with
`torch` bound to retrograd (imports of `torch.x.y` resolve to `retrograd.x.y`), and
every expression's result is compared: values (allclose), dtype and shape; an
exception on one side must be an exception on the other.

With `--seeded`, examples that draw random inputs (`torch.randn`, `rand`, `randint`,
`randperm`, their `_like` forms, `manual_seed`) run too: in both namespaces those names
are replaced by functions that return the same numbers (a NumPy generator seeded per
docstring), so the two runs see identical inputs. Layers with random parameters and
in-place samplers (`normal_`, `bernoulli`, ...) are still skipped.

With `--methods`, each example's `torch.fn(x, ...)` calls are rewritten as `x.fn(...)`
where Tensor has that method, and the rewritten examples are run instead (Tensor
methods' own docstrings mostly point at the function's).

Run: `python tests/port_docs_sweep.py [-v] [--seeded] [--methods] [-k SUBSTRING]`. Prints a summary:
examples run, matching, differing (name and a one-line reason) and erroring in
retrograd only. Printed reprs are never compared (printing is out of scope).
"""

from __future__ import annotations

import argparse
import ast
import builtins
import collections
import contextlib
import doctest
import importlib
import inspect
import io
import math
import signal
import sys
import types
import warnings

import numpy as np
import torch
import torch.nn.functional

import retrograd as rg

# Example text containing any of these is not deterministic or is out of scope.
SEEDABLE = ("randn", "rand(", "rand_like", "randint", "randperm", "manual_seed")
SKIP_TOKENS = {
    "random": ("normal_(", "uniform_(", "bernoulli", "multinomial", "Generator", "poisson",
               "exponential_", "geometric_", "cauchy_", "log_normal_", "random_(",
               "dropout", "Dropout", "torch.normal", "seed(", "fractional_max_pool",
               "gumbel"),
    "cuda/device": ("cuda", "device=", "mps", "xpu", "pin_memory", "share_memory",
                    "storage", "data_ptr", "untyped", "torch.device"),
    "sparse": ("sparse", "to_dense", "coalesce", "indices()", "crow_", "col_indices",
               "values()", "to_mkldnn", "nested"),
    "quantized": ("quantize", "qint", "quint", "q_scale", "dequantize", "fake_quant"),
    "named tensors": ("names=", "refine_names", "align_to", "rename", ".names"),
    "unsupported dtype": ("complex32", "chalf", "bfloat16", "float8", "uint16", "uint32",
                          "uint64", "bits", "int1", "int2", "int4"),
    "torch internals": ("torch.jit", "torch.compile", "torch._", "torch.fx", "torch.export",
                        "torch.library", "torch.onnx", "torch.utils", "__torch_function__",
                        "torch.ops", "torch.func", "torch.autograd.graph", "vmap",
                        "torch.distributed", "torch.testing", "torch.backends",
                        "set_printoptions", "torch.overrides", "torch.hub", "save(",
                        "load(", "Stream", "Event", "torch.accelerator", "dlpack",
                        "from_file", "frombuffer", "set_rng", "get_rng", "typename",
                        "deterministic", "torch.cpu", "tolist_", "__torch"),
}
UNSPECIFIED = ("empty(", "empty_like", "empty_strided", "new_empty", "resize_")

DTYPE_MAP = {
    torch.float32: np.float32, torch.float64: np.float64, torch.float16: np.float16,
    torch.int64: np.int64, torch.int32: np.int32, torch.int16: np.int16,
    torch.int8: np.int8, torch.uint8: np.uint8, torch.bool: np.bool_,
    torch.complex64: np.complex64, torch.complex128: np.complex128,
}


class Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise Timeout("timed out")


# ---------------------------------------------------------------- collecting examples

def _namespaces():
    """(prefix, module or class) pairs whose public callables' docstrings are read."""
    import torch.fft
    import torch.linalg
    import torch.special
    return [("torch", torch), ("torch.Tensor", torch.Tensor),
            ("torch.nn.functional", torch.nn.functional), ("torch.special", torch.special),
            ("torch.linalg", torch.linalg), ("torch.fft", torch.fft), ("torch.nn", torch.nn)]


def collect():
    """A list of (name, [doctest.Example]) for every docstring with examples (deduplicated)."""
    parser = doctest.DocTestParser()
    seen, out = set(), []
    for prefix, ns in _namespaces():
        for name in sorted(dir(ns)):
            if name.startswith("_") and name not in ("__getitem__",):
                continue
            try:
                obj = getattr(ns, name)
            except Exception:
                continue
            if prefix == "torch.nn" and not (inspect.isclass(obj)
                                             and issubclass(obj, torch.nn.Module)):
                continue
            doc = getattr(obj, "__doc__", None)
            if not isinstance(doc, str) or ">>>" not in doc or doc in seen:
                continue
            seen.add(doc)
            try:
                examples = parser.get_examples(doc)
            except ValueError:
                examples = []
            if examples:
                out.append((f"{prefix}.{name}", examples))
    return out


class _ToMethods(ast.NodeTransformer):
    """`torch.fn(x, ...)` becomes `x.fn(...)` where Tensor has a method `fn` and `x` is a
    name (a tensor in the example, one hopes; if not, both libraries raise)."""

    def __init__(self) -> None:
        self.changed = False

    def visit_Call(self, node):
        self.generic_visit(node)
        f = node.func
        if (isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name)
                and f.value.id == "torch" and hasattr(torch.Tensor, f.attr)
                and not f.attr.startswith("_") and f.attr not in METHOD_SKIP
                and node.args and isinstance(node.args[0], ast.Name)):
            self.changed = True
            return ast.Call(ast.Attribute(node.args[0], f.attr, ast.Load()), node.args[1:],
                            node.keywords)
        return node


METHOD_SKIP = {"tensor", "as_tensor", "from_numpy", "is_tensor", "numel", "dtype", "device",
               "size", "zeros", "ones", "full", "arange", "eye", "empty"}


def as_methods(examples):
    """The examples with `torch.fn(x, ...)` calls rewritten as `x.fn(...)`, or None when
    nothing was rewritten."""
    out, changed = [], False
    for ex in examples:
        try:
            tree = ast.parse(ex.source)
        except SyntaxError:
            return None
        t = _ToMethods()
        tree = t.visit(tree)
        changed |= t.changed
        out.append(doctest.Example(ast.unparse(tree) + "\n", ex.want) if t.changed else ex)
    return out if changed else None


def skip_reason(examples, seeded: bool) -> str | None:
    text = "\n".join(e.source for e in examples)
    if not seeded and any(t in text for t in SEEDABLE):
        return "random"
    if "torch" not in text and "F." not in text and "nn." not in text:
        return "no torch"
    for reason, tokens in SKIP_TOKENS.items():
        if any(t in text for t in tokens):
            return reason
    return None


# ---------------------------------------------------------------- running

_real_import = builtins.__import__


def _sizes(size) -> tuple:
    if len(size) == 1 and isinstance(size[0], (tuple, list)) or \
            len(size) == 1 and type(size[0]).__name__ == "Size":
        return tuple(size[0])
    return tuple(int(s) for s in size)


def _random_shims(lib, rng: np.random.Generator) -> dict:
    """randn, rand, randint, randperm and their `_like` forms for `lib`, drawing from `rng`:
    the torch and the retrograd run, given generators with one seed, see equal inputs."""
    make = torch.tensor if lib is torch else rg.tensor
    default = (lambda: torch.get_default_dtype()) if lib is torch else rg.get_default_dtype

    def floats(arr, dtype, requires_grad):
        t = make(arr, dtype=dtype or default())
        return t.requires_grad_() if requires_grad else t

    def randn(*size, dtype=None, requires_grad=False, **_):
        return floats(rng.standard_normal(_sizes(size)), dtype, requires_grad)

    def rand(*size, dtype=None, requires_grad=False, **_):
        return floats(rng.random(_sizes(size)), dtype, requires_grad)

    def randint(*args, size=None, dtype=None, **_):
        args = list(args)
        if size is None:
            size = args.pop()
        low, high = (0, args[0]) if len(args) == 1 else args
        return make(rng.integers(low, high, _sizes((size,))), dtype=dtype or lib.int64)

    def randperm(n, dtype=None, **_):
        return make(rng.permutation(int(n)), dtype=dtype or lib.int64)

    def like(fn):
        def f(t, dtype=None, **kw):
            return fn(tuple(t.shape), dtype=dtype or t.dtype, **kw)
        return f

    def randint_like(t, *args, dtype=None, **_):
        return randint(*args, size=tuple(t.shape), dtype=dtype or t.dtype)

    return {"randn": randn, "rand": rand, "randint": randint, "randperm": randperm,
            "randn_like": like(randn), "rand_like": like(rand),
            "randint_like": randint_like, "manual_seed": lambda *a, **k: None,
            "seed": lambda *a, **k: None}


def _proxy(lib, rng) -> types.ModuleType:
    """A module standing for `lib` whose random functions are `_random_shims`."""
    mod = types.ModuleType("torch")
    mod.__dict__.update(_random_shims(lib, rng))
    mod.__getattr__ = lambda name: getattr(lib, name)
    return mod


def _importer(lib, top):
    """`import torch...` binds `top` (the proxy) and `torch.x.y` resolves in `lib`."""
    base = "torch" if lib is torch else "retrograd"

    def imp(name, globals=None, locals=None, fromlist=(), level=0):
        if level == 0 and (name == "torch" or name.startswith("torch.")):
            if name == "torch":
                return top
            mod = importlib.import_module(base + name[len("torch"):])
            return mod if fromlist else top
        return _real_import(name, globals, locals, fromlist, level)
    return imp


def _namespace(lib: str, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    if lib == "torch":
        import torch.nn as tnn
        mod, f, n = torch, torch.nn.functional, tnn
    else:
        import retrograd.nn as rnn
        import retrograd.nn.functional as rf
        mod, f, n = rg, rf, rnn
    top = _proxy(mod, rng)
    b = dict(vars(builtins))
    b["__import__"] = _importer(mod, top)
    return {"torch": top, "F": f, "nn": n, "np": np, "math": math, "__builtins__": b}


def _step(ns: dict, src: str):
    """Run one example statement: ('value', obj), ('none',) or ('error', exc)."""
    try:
        code, is_expr = compile(src, "<doc>", "eval"), True
    except SyntaxError:
        code, is_expr = None, False
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(10)
    try:
        with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if is_expr:
                return ("value", eval(code, ns))
            exec(compile(src, "<doc>", "exec"), ns)
            return ("none",)
    except (Timeout, Exception) as e:  # noqa: BLE001 - every failure is a result here
        return ("error", e)
    finally:
        signal.alarm(0)


def _sync_modules(tns: dict, rns: dict) -> bool:
    """Give each retrograd layer the parameters and buffers of the torch layer bound to
    the same name; False when a torch layer with parameters has no twin to take them."""
    ok = True
    for name, mod in tns.items():
        if not isinstance(mod, torch.nn.Module) or not mod.state_dict():
            continue
        twin = rns.get(name)
        try:
            twin.load_state_dict({k: v.detach().numpy() for k, v in mod.state_dict().items()})
        except Exception:  # noqa: BLE001 - no twin, or it does not fit
            ok = False
    return ok


def run_pair(examples, seed: int = 0):
    """Run the examples with torch and with retrograd, statement by statement, layers
    synchronised after each; returns (torch results, retrograd results, synced)."""
    tns, rns = _namespace("torch", seed), _namespace("rg", seed)
    want, got, synced = [], [], True
    torch_default = torch.get_default_dtype()
    try:
        for ex in examples:
            want.append(_step(tns, ex.source))
            got.append(_step(rns, ex.source))
            synced = _sync_modules(tns, rns) and synced
    finally:
        torch.set_default_dtype(torch_default)
        rg.set_default_dtype(np.float32)
    return want, got, synced


# ---------------------------------------------------------------- comparing

def _is_tensor_like(x) -> bool:
    return isinstance(x, (torch.Tensor, rg.Tensor))


def _as_dtype(d):
    if isinstance(d, torch.dtype):
        return np.dtype(DTYPE_MAP[d]) if d in DTYPE_MAP else d
    try:
        return np.dtype(d)
    except TypeError:
        return d


def compare(a, b, values: bool = True) -> str | None:
    """None when torch's `a` and retrograd's `b` agree, else a one-line reason."""
    if isinstance(a, torch.Tensor):
        if not isinstance(b, rg.Tensor):
            if isinstance(b, np.ndarray):
                return f"got a NumPy array, not a Tensor (shape {b.shape})"
            return f"got {type(b).__name__}, not a Tensor"
        ta = a.detach().resolve_conj().resolve_neg()
        want_dt = _as_dtype(ta.dtype)
        if np.dtype(b.dtype) != want_dt:
            return f"dtype {b.dtype} != torch {ta.dtype}"
        if tuple(b.shape) != tuple(ta.shape):
            return f"shape {tuple(b.shape)} != torch {tuple(ta.shape)}"
        if not values:
            return None
        x = ta.numpy()
        y = np.asarray(b.detach().numpy())
        if x.dtype.kind in "fc":
            tol = 1e-3 if x.dtype == np.float16 else 1e-4
            finite = np.abs(x[np.isfinite(x)]) if x.size else np.zeros(1)
            scale = max(1.0, float(finite.max())) if finite.size else 1.0
            ok = np.allclose(y, x, rtol=tol, atol=tol * 0.1 * scale, equal_nan=True)
        else:
            ok = np.array_equal(x, y)
        if not ok:
            return f"values differ: {np.ravel(y)[:6].tolist()} vs torch {np.ravel(x)[:6].tolist()}"
        return None
    if isinstance(a, torch.dtype):
        if _as_dtype(a) != _as_dtype(b):
            return f"dtype result {b} != torch {a}"
        return None
    if isinstance(a, torch.Size):
        if not isinstance(b, tuple) or tuple(b) != tuple(a):
            return f"size {b!r} != torch {tuple(a)}"
        return None
    if isinstance(a, torch.nn.Module) or callable(a) and not isinstance(a, torch.Tensor):
        return None
    if isinstance(a, (tuple, list)):
        if not isinstance(b, (tuple, list)):
            return f"got {type(b).__name__}, not a sequence"
        if len(a) != len(b):
            return f"length {len(b)} != torch {len(a)}"
        for i, (x, y) in enumerate(zip(a, b)):
            r = compare(x, y, values)
            if r:
                return f"[{i}]: {r}"
        return None
    if isinstance(a, dict):
        return None
    if isinstance(a, bool):
        if isinstance(b, rg.Tensor) or not isinstance(b, (bool, np.bool_)):
            return f"got {type(b).__name__} {b!r}, not bool {a}"
        return None if bool(a) == bool(b) else f"{b} != torch {a}"
    if isinstance(a, (int, float, complex)):
        if isinstance(b, rg.Tensor):
            return f"got a Tensor, not {type(a).__name__}"
        if isinstance(b, np.generic) and not isinstance(a, bool):
            pass  # NumPy scalars stand in for Python numbers
        try:
            ok = (np.isnan(a) and np.isnan(b)) or np.isclose(b, a, rtol=1e-4, atol=1e-6)
        except TypeError:
            return f"got {type(b).__name__}, not {type(a).__name__}"
        if not ok:
            return f"{b} != torch {a}"
        if isinstance(a, int) and not isinstance(b, (int, np.integer)):
            return f"got {type(b).__name__} {b}, not int"
        return None
    return None  # strings, None, other objects: not compared


def sweep(selected, verbose: bool, seeded: bool):
    stats = collections.Counter()
    differ, rgerr, skipped = [], [], collections.Counter()
    for name, examples in selected:
        reason = skip_reason(examples, seeded)
        if reason:
            skipped[reason] += 1
            continue
        values = not any(t in e.source for e in examples for t in UNSPECIFIED)
        want, got, synced = run_pair(examples)
        if not synced:
            skipped["random parameters"] += 1
            continue
        if all(w[0] == "error" for w in want):
            skipped["torch fails"] += 1
            continue
        stats["examples"] += 1
        stats["statements"] += len(examples)
        status = "match"
        for ex, w, g in zip(examples, want, got):
            line = ex.source.strip().splitlines()[0][:70]
            if w[0] == "error" and g[0] == "error":
                continue
            if w[0] != "error" and g[0] == "error":
                # a NameError after an earlier failure is a consequence, not news
                rgerr.append((name, line, f"{type(g[1]).__name__}: {str(g[1])[:110]}"))
                status = "rgerror"
                break
            if w[0] == "error":
                differ.append((name, line, f"torch raises {type(w[1]).__name__}, "
                                           f"retrograd does not"))
                status = "differ"
                break
            if w[0] == "value":
                r = compare(w[1], g[1], values)
                if r:  # a value that differs leaves the state alike: go on comparing
                    differ.append((name, line, r))
                    status = "differ"
        stats[status] += 1
        if verbose:
            print(f"{status:8s} {name}")
    return stats, differ, rgerr, skipped


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-v", "--verbose", action="store_true")
    ap.add_argument("--seeded", action="store_true",
                    help="also run examples with random inputs, drawn equal on both sides")
    ap.add_argument("--methods", action="store_true",
                    help="rewrite torch.fn(x, ...) as x.fn(...) (Tensor methods) and run those")
    ap.add_argument("-k", default="", help="only docstrings whose name contains this")
    args = ap.parse_args(argv)
    items = [it for it in collect() if args.k in it[0]]
    if args.methods:
        items = [(f"{name} (methods)", m) for name, ex in items
                 if (m := as_methods(ex)) is not None]
    stats, differ, rgerr, skipped = sweep(items, args.verbose, args.seeded)
    print(f"docstrings with examples: {len(items)}; skipped: {sum(skipped.values())} "
          f"({', '.join(f'{k} {v}' for k, v in skipped.most_common())})")
    print(f"examples run: {stats['examples']} ({stats['statements']} statements); "
          f"matching: {stats['match']}; differing: {stats['differ']}; "
          f"erroring in retrograd only: {stats['rgerror']}")
    if differ:
        print("\n== differing ==")
        for name, line, why in differ:
            print(f"{name}: {line!r}: {why}")
    if rgerr:
        print("\n== erroring in retrograd only ==")
        for name, line, why in rgerr:
            print(f"{name}: {line!r}: {why}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
