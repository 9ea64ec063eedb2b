"""rg.sym beside SymPy: differentiate, size of the result, evaluate the compiled derivative.

    python benchmarks/bench_sym.py [--sizes 10,30,100,300,1000] [--budget 20] [--points 256]

Families that grow with n (all first derivatives of each):
  product   x0*x1*...*x(n-1), derivatives with respect to all n variables
  sin       sin(sin(...sin(x))) nested n deep, derivative with respect to x
  poly      sum of c_k * x**k for k = 0..n (c_k = 1/(k+1)), derivative with respect to x
  tanh-net  a 2-layer network written as scalars: 4 inputs, n tanh hidden units, one
            output; derivatives with respect to every input, weight and bias (6n+5)

Columns: time to differentiate (rg: `e.grad(vars)`, one reverse sweep; SymPy: `sympy.diff`
per variable), the size of the result (rg: distinct nodes of all derivatives together;
SymPy: nodes of the expression trees as printed, and distinct subexpressions with an n-ary
sum or product of k terms counted as k - 1 binary nodes, comparable to rg's), and the time
to evaluate the compiled derivatives on `--points` points per variable (rg: `rg.sym.compile`;
SymPy: `sympy.lambdify(..., "numpy")`), best of 5 batches. Building the expressions is not
timed.
SymPy gets `--budget` seconds per step; "timeout" means it ran past that, and larger sizes
of that family are not tried. A step that raises (SymPy's recursion on a deep expression,
`lambdify` generating source with more nested parentheses than Python accepts, ...) shows
as "fails: <exception>" in its cell, with the message in the notes under the table; the
benchmark goes on.
"""

from __future__ import annotations

import argparse
import gc
import signal
import sys
import time
import warnings

import numpy as np
import sympy as sp

import retrograd.sym as S


class Timeout(BaseException):
    """Raised by the alarm; a BaseException so that SymPy's `except Exception` cannot eat it."""


def _alarm(signum, frame):
    raise Timeout


NOTES: list[str] = []
"""Why each "fails" cell failed, printed under the table."""


def failed(err: BaseException, what: str) -> str:
    """The cell for a step that raised `err`; its message goes to NOTES."""
    name = type(err).__name__
    msg = " ".join(str(err).split())
    NOTES.append(f"{what}: {name}: {msg[:160]}" if msg else f"{what}: {name}")
    return f"fails: {name}"


def run_limited(fn, budget, what):
    """(result, seconds), or (the cell to show, None) when `fn` runs out of time or raises."""
    signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, budget)
    t0 = time.perf_counter()
    try:
        out = fn()
        return out, time.perf_counter() - t0
    except Timeout:
        return "timeout", None
    except Exception as err:  # RecursionError, MemoryError, SyntaxError from lambdify, ...
        return failed(err, what), None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def best_of(fn, repeat=5, target=0.05):
    """Seconds per call: calls batched to last about `target` seconds, best of `repeat` batches."""
    t0 = time.perf_counter()
    fn()
    once = time.perf_counter() - t0
    k = max(1, min(1000, int(target / max(once, 1e-9))))
    best = once
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(k):
            fn()
        best = min(best, (time.perf_counter() - t0) / k)
    return best


# ---------------------------------------------------------------- families

def product(n, lib):
    if lib is S:
        xs = [S.var(f"x{i}") for i in range(n)]
        f = xs[0]
        for v in xs[1:]:
            f = f * v
        return f, xs
    xs = sp.symbols(f"x0:{n}")
    return sp.Mul(*xs), list(xs)


def sin_chain(n, lib):
    x = S.var("x") if lib is S else sp.Symbol("x")
    f = x
    for _ in range(n):
        f = S.sin(f) if lib is S else sp.sin(f)
    return f, [x]


def poly(n, lib):
    if lib is S:
        x = S.var("x")
        f = S.const(1.0)
        for k in range(1, n + 1):
            f = f + (1.0 / (k + 1)) * x ** k
        return f, [x]
    x = sp.Symbol("x")
    return sp.Add(*[sp.Float(1.0 / (k + 1)) * x ** k for k in range(n + 1)]), [x]


def tanh_net(n, lib, d=4):
    V, tanh = (S.var, S.tanh) if lib is S else (sp.Symbol, sp.tanh)
    xs = [V(f"x{i}") for i in range(d)]
    w1 = [[V(f"w1_{j}_{i}") for i in range(d)] for j in range(n)]
    b1 = [V(f"b1_{j}") for j in range(n)]
    w2 = [V(f"w2_{j}") for j in range(n)]
    b2 = V("b2")
    if lib is S:
        out = b2
        for j in range(n):
            h = b1[j]
            for i in range(d):
                h = h + w1[j][i] * xs[i]
            out = out + w2[j] * tanh(h)
    else:
        out = sp.Add(b2, *[w2[j] * tanh(sp.Add(b1[j], *[w1[j][i] * xs[i] for i in range(d)]))
                           for j in range(n)])
    params = xs + [w for row in w1 for w in row] + b1 + w2 + [b2]
    return out, params


FAMILIES = {"product": product, "sin": sin_chain, "poly": poly, "tanh-net": tanh_net}


# ---------------------------------------------------------------- sizes

def sympy_sizes(exprs):
    """(tree nodes, DAG nodes) of a list of SymPy expressions, found without recursion.

    Tree: every node of the expression trees as printed (`preorder_traversal`).
    DAG: distinct subexpressions, an n-ary Add or Mul of k terms counted as the
    k - 1 binary nodes it stands for, so that it compares with rg's count.
    """
    tree = {}
    stack = list(exprs)
    while stack:
        e = stack[-1]
        if e in tree:
            stack.pop()
            continue
        todo = [a for a in e.args if a not in tree]
        if todo:
            stack.extend(todo)
            continue
        stack.pop()
        tree[e] = 1 + sum(tree[a] for a in e.args)
    dag = sum(len(e.args) - 1 if (e.is_Add or e.is_Mul) else 1 for e in tree)
    return sum(tree[e] for e in exprs), dag


# ---------------------------------------------------------------- one case

def bench_rg(family, n, points):
    f, xs = FAMILIES[family](n, S)
    t0 = time.perf_counter()
    grads = f.grad(xs)
    t_diff = time.perf_counter() - t0
    size = S.size(grads)
    fn = S.compile(grads, xs)
    rng = np.random.default_rng(1)
    args = [rng.uniform(0.5, 1.0, points) for _ in xs]
    t_eval = best_of(lambda: fn(*args))
    return t_diff, size, t_eval


def bench_sympy(family, n, points, budget):
    where = f"{family} n={n}, SymPy"
    f, xs = FAMILIES[family](n, sp)
    res, t_diff = run_limited(lambda: [sp.diff(f, v) for v in xs], budget, f"{where} diff")
    if t_diff is None:
        return res, None, None, None
    derivs = res
    sizes, _ = run_limited(lambda: sympy_sizes(derivs), budget, f"{where} size")
    tree, dag = sizes if isinstance(sizes, tuple) else (sizes, sizes)

    def compile_and_eval():
        fn = sp.lambdify(xs, derivs, "numpy")
        rng = np.random.default_rng(1)
        args = [rng.uniform(0.5, 1.0, points) for _ in xs]
        fn(*args)
        return fn, args

    out, t = run_limited(compile_and_eval, budget, f"{where} lambdify")
    if t is None:
        t_eval = out
    else:
        fn, args = out
        t_eval, _ = run_limited(lambda: best_of(lambda: fn(*args)), budget, f"{where} eval")
    return t_diff, tree, dag, t_eval


def fmt_t(t):
    if isinstance(t, str):
        return t
    if t is None:
        return "-"
    if t < 1e-3:
        return f"{t * 1e6:.0f} us"
    if t < 1:
        return f"{t * 1e3:.1f} ms"
    return f"{t:.2f} s"


def fmt_ratio(a, b):
    if isinstance(b, (int, float)) and isinstance(a, (int, float)) and a > 0:
        return f"{b / a:.0f}x" if b / a >= 10 else f"{b / a:.1f}x"
    return "-"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="10,30,100,300,1000")
    ap.add_argument("--families", default=",".join(FAMILIES))
    ap.add_argument("--budget", type=float, default=20.0, help="seconds per SymPy step")
    ap.add_argument("--points", type=int, default=256)
    a = ap.parse_args(argv)
    sizes = [int(s) for s in a.sizes.split(",")]
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 3000))
    warnings.simplefilter("ignore")
    np.seterr(all="ignore")
    head = (f"{'family':9} {'n':>5} | {'rg diff':>9} {'sympy diff':>21} {'speedup':>7} | "
            f"{'rg size':>8} {'sympy tree':>10} {'sympy dag':>9} | "
            f"{'rg eval':>9} {'sympy eval':>21} {'speedup':>7}")
    print(f"rg.sym vs SymPy {sp.__version__}: all first derivatives; eval on {a.points} points; "
          f"SymPy budget {a.budget:g} s per step")
    print(head)
    print("-" * len(head))
    t_start = time.perf_counter()
    for family in a.families.split(","):
        given_up = None
        for n in sizes:
            gc.collect()
            try:
                d, size, ev = bench_rg(family, n, a.points)
            except Exception as err:  # shown like a peer's failure, and the table goes on
                d = failed(err, f"{family} n={n}, rg.sym")
                size, ev = "-", "-"
            if given_up is not None:
                sd, tree, dag, sev = given_up, None, None, None
            else:
                sd, tree, dag, sev = bench_sympy(family, n, a.points, a.budget)
                if isinstance(sd, str):
                    given_up = sd
            print(f"{family:9} {n:>5} | {fmt_t(d):>9} {fmt_t(sd):>21} {fmt_ratio(d, sd):>7} | "
                  f"{size:>8} {tree if tree is not None else '-':>10} "
                  f"{dag if dag is not None else '-':>9} | "
                  f"{fmt_t(ev):>9} {fmt_t(sev):>21} {fmt_ratio(ev, sev):>7}", flush=True)
    for note in NOTES:
        print(f"  note: {note}")
    print(f"total {time.perf_counter() - t_start:.0f} s")


if __name__ == "__main__":
    main()
