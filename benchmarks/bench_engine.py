"""Benchmark: retrograd's Tensor engine beside PyTorch eager, HIPS autograd, mygrad and NumPy.

Workloads (each with its target)
  ops    a chain of 100 element-wise ops (mul by a constant, add a constant, tanh,
         exp, sin, in turn) on a float32 tensor of shape (8,), then sum and
         backward; reported in microseconds per op.
         Target: below PyTorch eager, and at most 2x the hand-written NumPy
         forward+backward of the same chain.
  large  relu(a @ b).sum() with two 1024x1024 float32 tensors, forward and
         backward; milliseconds per step. Target: at most 1.10x the NumPy floor.
  deep   a chain of 1,000,000 scalar ops (y * c and y + d, in turn), built and
         backwarded; seconds per million ops. Target: completes.

"numpy" is the floor: the same computation with its backward written by hand.
PyTorch is timed at its default thread count ("torch") and with
torch.set_num_threads(1) ("torch-1t"); ratios compare against the faster of the
two. This machine is shared and noisy, so every measurement runs in its own
fresh process, the libraries alternate (in a rotating order) over several
rounds, and the table gives the median over rounds with its min-max spread.
Within a process, a timing is the best of several samples (ops, large) or a
single run (deep). The ratio columns are medians of the ratios within each
round, which are far steadier than ratios of medians when the load changes.
Each worker also reports a checksum of its gradients, and the driver warns if
the libraries disagree.

The pure-Python peers (HIPS autograd, mygrad) take minutes for a 1,000,000-op
chain, so by default they run `deep` on 100,000 ops (shown in the size column);
`--full-peers` runs them at the full size.

    python benchmarks/bench_engine.py                 # 5 rounds (3 for deep)
    python benchmarks/bench_engine.py --rounds 3 --json out.json
    python benchmarks/bench_engine.py --quick         # a smoke run: small sizes, 1 round
    python benchmarks/bench_engine.py --worker retrograd ops   # one JSON timing
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
LIBS = ["retrograd", "retrograd-jit", "torch", "torch-1t", "autograd", "mygrad", "numpy"]
NOT_RUN = {("retrograd-jit", "deep")}  # a million-op program is not what jit is for
WORKLOADS = ["ops", "large", "deep"]
PURE_PYTHON_PEERS = {"autograd", "mygrad"}
UNITS = {"ops": "us/op", "large": "ms/step", "deep": "s/Mop"}
CHAIN_LEN = 100
MUL, ADD = 0.9, 0.1          # constants of the `ops` chain
DEEP_MUL, DEEP_ADD = 0.999999, 1e-6


# ---------------------------------------------------------------- workloads per library
# Each `make_<workload>(lib, size)` returns (step, checksum): `step()` runs one full
# forward+backward, `checksum()` sums the gradients of the last step.

def _ops_input():
    return np.random.default_rng(0).standard_normal(8).astype(np.float32)


def _large_inputs(n):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((n, n)).astype(np.float32)
    b = rng.standard_normal((n, n)).astype(np.float32)
    return a, b


def _chain(x, tanh, exp, sin):
    """The `ops` chain, written once for every library with operators."""
    for i in range(CHAIN_LEN):
        k = i % 5
        if k == 0:
            x = x * MUL
        elif k == 1:
            x = x + ADD
        elif k == 2:
            x = tanh(x)
        elif k == 3:
            x = exp(x)
        else:
            x = sin(x)
    return x


def _deep_chain(y, n):
    for _ in range(n // 2):
        y = y * DEEP_MUL
        y = y + DEEP_ADD
    return y


def _import_lib(lib):
    """The library module, set up for a fair run (PyTorch threads)."""
    if lib in ("retrograd", "retrograd-jit"):
        try:
            import retrograd
        except ImportError:
            sys.path.insert(0, str(ROOT / "src"))
            import retrograd
        return retrograd
    if lib in ("torch", "torch-1t"):
        import torch
        if lib == "torch-1t":
            torch.set_num_threads(1)
        return torch
    if lib == "autograd":
        import autograd
        import autograd.numpy  # noqa: F401
        return autograd
    if lib == "mygrad":
        import mygrad
        return mygrad
    return np


def make_ops(lib, size):
    m = _import_lib(lib)
    data = _ops_input()
    if lib == "retrograd":
        x = m.tensor(data, requires_grad=True)

        def step():
            x.grad = None
            _chain(x, m.tanh, m.exp, m.sin).sum().backward()
        return step, lambda: float(x.grad.numpy().sum())
    if lib == "retrograd-jit":
        x = m.tensor(data, requires_grad=True)
        fn = m.jit(lambda x: m.autograd.grad(_chain(x, m.tanh, m.exp, m.sin).sum(), [x])[0])
        out = [None]

        def step():
            out[0] = fn(x)
        return step, lambda: float(out[0].numpy().sum())
    if lib in ("torch", "torch-1t"):
        x = m.tensor(data, requires_grad=True)

        def step():
            x.grad = None
            _chain(x, m.tanh, m.exp, m.sin).sum().backward()
        return step, lambda: float(x.grad.sum())
    if lib == "autograd":
        anp = m.numpy
        g = m.grad(lambda x: anp.sum(_chain(x, anp.tanh, anp.exp, anp.sin)))
        out = [None]

        def step():
            out[0] = g(data)
        return step, lambda: float(out[0].sum())
    if lib == "mygrad":
        x = m.tensor(data)

        def step():
            _chain(x, m.tanh, m.exp, m.sin).sum().backward()
        return step, lambda: float(x.grad.sum())
    # numpy floor: forward keeps what the backward needs, backward by hand
    out = [None]

    def step():
        x = data
        saved = []
        for i in range(CHAIN_LEN):
            k = i % 5
            if k == 0:
                x = x * MUL
            elif k == 1:
                x = x + ADD
            elif k == 2:
                x = np.tanh(x)
                saved.append(x)
            elif k == 3:
                x = np.exp(x)
                saved.append(x)
            else:
                saved.append(x)
                x = np.sin(x)
        x.sum()
        g = np.ones_like(x)
        for i in reversed(range(CHAIN_LEN)):
            k = i % 5
            if k == 0:
                g = g * MUL
            elif k == 2:
                t = saved.pop()
                g = g * (1 - t * t)
            elif k == 3:
                g = g * saved.pop()
            elif k == 4:
                g = g * np.cos(saved.pop())
        out[0] = g
    return step, lambda: float(out[0].sum())


def make_large(lib, size):
    m = _import_lib(lib)
    a0, b0 = _large_inputs(size)
    if lib == "retrograd":
        a, b = m.tensor(a0, requires_grad=True), m.tensor(b0, requires_grad=True)

        def step():
            a.grad = b.grad = None
            m.relu(a @ b).sum().backward()
        return step, lambda: float(a.grad.numpy().sum() + b.grad.numpy().sum())
    if lib == "retrograd-jit":
        a, b = m.tensor(a0, requires_grad=True), m.tensor(b0, requires_grad=True)
        fn = m.jit(lambda a, b: m.autograd.grad(m.relu(a @ b).sum(), [a, b]))
        out = [None]

        def step():
            out[0] = fn(a, b)
        return step, lambda: float(out[0][0].numpy().sum() + out[0][1].numpy().sum())
    if lib in ("torch", "torch-1t"):
        a, b = m.tensor(a0, requires_grad=True), m.tensor(b0, requires_grad=True)

        def step():
            a.grad = b.grad = None
            m.relu(a @ b).sum().backward()
        return step, lambda: float(a.grad.sum() + b.grad.sum())
    if lib == "autograd":
        anp = m.numpy
        g = m.grad(lambda a, b: anp.sum(anp.maximum(anp.dot(a, b), 0.0)), argnum=[0, 1])
        out = [None]

        def step():
            out[0] = g(a0, b0)
        return step, lambda: float(out[0][0].sum() + out[0][1].sum())
    if lib == "mygrad":
        a, b = m.tensor(a0), m.tensor(b0)

        def step():
            m.nnet.relu(m.matmul(a, b)).sum().backward()
        return step, lambda: float(a.grad.sum() + b.grad.sum())
    out = [None]

    def step():  # numpy floor
        c = a0 @ b0
        np.maximum(c, 0).sum()
        g = (c > 0).astype(np.float32)
        out[0] = (g @ b0.T, a0.T @ g)
    return step, lambda: float(out[0][0].sum() + out[0][1].sum())


def make_deep(lib, size):
    m = _import_lib(lib)
    if lib == "retrograd":
        x = m.tensor(1.0, requires_grad=True)

        def step():
            x.grad = None
            y = _deep_chain(x, size)
            y.backward()
        return step, lambda: float(x.grad.item())
    if lib in ("torch", "torch-1t"):
        x = m.tensor(1.0, requires_grad=True)

        def step():
            x.grad = None
            y = _deep_chain(x, size)
            y.backward()
        return step, lambda: float(x.grad.item())
    if lib == "autograd":
        g = m.grad(lambda x: _deep_chain(x, size))
        out = [None]

        def step():
            out[0] = g(np.float32(1.0))
        return step, lambda: float(out[0])
    if lib == "mygrad":
        x = m.tensor(np.float32(1.0))

        def step():
            y = _deep_chain(x, size)
            y.backward()
        return step, lambda: float(x.grad)
    out = [None]

    def step():  # numpy floor: float32 scalars, the backward multiplies by each mul's constant
        y = np.float32(1.0)
        c, d = np.float32(DEEP_MUL), np.float32(DEEP_ADD)
        for _ in range(size // 2):
            y = y * c
            y = y + d
        g = np.float32(1.0)
        for _ in range(size // 2):
            g = g * c
        out[0] = g
    return step, lambda: float(out[0])


MAKERS = {"ops": make_ops, "large": make_large, "deep": make_deep}


# ---------------------------------------------------------------- worker

def _time_step(step, budget):
    """Seconds per step: the best of 7 samples of about `budget` seconds each.

    On a shared machine other work can only add time, so the fastest sample is the
    best estimate of the library's own cost (as `timeit` advises); the driver then
    takes the median of these over rounds.
    """
    t0 = time.perf_counter()
    step()  # also the warm-up
    first = time.perf_counter() - t0
    per_sample = max(1, int(budget / max(first, 1e-9)))
    samples = []
    for _ in range(7):
        t0 = time.perf_counter()
        for _ in range(per_sample):
            step()
        samples.append((time.perf_counter() - t0) / per_sample)
    return min(samples), samples


def worker(lib, workload, size, quick):
    step, checksum = MAKERS[workload](lib, size)
    if workload == "deep":
        warm, _ = MAKERS["deep"](lib, 1000)  # imports and first-call costs, on a small chain
        warm()
        t0 = time.perf_counter()
        step()
        seconds = time.perf_counter() - t0
        samples = [seconds]
        value = seconds / size * 1e6
    else:
        if workload == "ops":
            for _ in range(20):
                step()
        seconds, samples = _time_step(step, 0.05 if quick else 0.2)
        value = seconds / CHAIN_LEN * 1e6 if workload == "ops" else seconds * 1e3
    return {"lib": lib, "workload": workload, "size": size, "value": value,
            "unit": UNITS[workload], "seconds": seconds, "samples": samples,
            "checksum": checksum()}


# ---------------------------------------------------------------- driver

def _size(workload, lib, args):
    if workload == "ops":
        return 8
    if workload == "large":
        return 256 if args.quick else 1024
    n = args.deep_ops or (100_000 if args.quick else 1_000_000)
    if lib in PURE_PYTHON_PEERS and not args.full_peers:
        n = min(n, n // 10 if args.quick else 100_000)
    return n


def _run_worker(lib, workload, size, args):
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", lib, workload,
           "--size", str(size)] + (["--quick"] if args.quick else [])
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {args.timeout} s"}
    if r.returncode != 0:
        lines = [ln for ln in r.stderr.strip().splitlines() if ln.strip()]
        return {"error": lines[-1][:90] if lines else f"exit status {r.returncode}"}
    return json.loads(r.stdout.strip().splitlines()[-1])


def _available(lib):
    name = {"torch-1t": "torch", "numpy": "numpy", "retrograd-jit": "retrograd"}.get(lib, lib)
    if name == "retrograd":
        return True
    import importlib.util
    return importlib.util.find_spec(name) is not None


def _fmt(v):
    if v is None:
        return "-"
    if v >= 100:
        return f"{v:.0f}"
    if v >= 10:
        return f"{v:.1f}"
    return f"{v:.3g}" if v >= 0.01 else f"{v:.2e}"


def _paired(runs_by_round, lib, ref_libs):
    """Median over rounds of lib's time over the best of `ref_libs` in the same round.

    Runs of one round are minutes apart at most, so the ratio within a round is far
    less affected by the machine's load than a ratio of medians.
    """
    ratios = []
    for rnd in runs_by_round.values():
        refs = [rnd[r] for r in ref_libs if r in rnd]
        if lib in rnd and refs:
            ratios.append(rnd[lib] / min(refs))
    return statistics.median(ratios) if ratios else None


def _summarise(results, libs):
    """{workload: {lib: {"median", "lo", "hi", "size", "n", "errors", "checksum",
    "vs_numpy", "vs_torch"}}}; the ratios are medians of per-round ratios."""
    table = {}
    for w in WORKLOADS:
        by_round = {}
        for r in results:
            if r["workload"] == w and "error" not in r:
                by_round.setdefault(r.get("round", 0), {})[r["lib"]] = r["value"]
        rows = {}
        for lib in libs:
            runs = [r for r in results if r["workload"] == w and r["lib"] == lib]
            ok = [r for r in runs if "error" not in r]
            vals = [r["value"] for r in ok]
            rows[lib] = {
                "median": statistics.median(vals) if vals else None,
                "lo": min(vals) if vals else None,
                "hi": max(vals) if vals else None,
                "n": len(vals),
                "size": ok[0]["size"] if ok else (runs[0]["size"] if runs else None),
                "errors": sorted({r["error"] for r in runs if "error" in r}),
                "checksum": ok[-1]["checksum"] if ok else None,
                "vs_numpy": _paired(by_round, lib, ["numpy"]),
                "vs_torch": _paired(by_round, lib, ["torch", "torch-1t"]),
            }
        table[w] = rows
    return table


def _print_table(table, libs):
    for w, rows in table.items():
        if not any(r["n"] or r["errors"] for r in rows.values()):
            continue
        unit = UNITS[w]
        print(f"\n{w}: {WORKLOAD_TITLES[w]}  [{unit}, lower is better]")
        head = (f"  {'library':<13} {'size':>9} {'median':>9} {'min':>9} {'max':>9} {'rounds':>6}"
                f" {'vs numpy':>9} {'vs torch':>9}")
        print(head)
        print("  " + "-" * (len(head) - 2))
        for lib in libs:
            r = rows[lib]
            if r["median"] is None:
                why = "; ".join(r["errors"]) or "not run"
                print(f"  {lib:<13} {'':>9} failed: {why}")
                continue
            vs_np = f"{r['vs_numpy']:.2f}x" if r["vs_numpy"] is not None else "-"
            vs_t = f"{r['vs_torch']:.2f}x" if r["vs_torch"] is not None else "-"
            size = f"{r['size']:,}" if w == "deep" else (f"{r['size']}^2" if w == "large"
                                                        else f"({r['size']},)")
            print(f"  {lib:<13} {size:>9} {_fmt(r['median']):>9} {_fmt(r['lo']):>9} "
                  f"{_fmt(r['hi']):>9} {r['n']:>6} {vs_np:>9} {vs_t:>9}")
        _check_agreement(w, rows)
    print("\n  vs numpy / vs torch: median over rounds of the ratio within each round (torch: "
          "the faster of torch and torch-1t in that round).")


WORKLOAD_TITLES = {
    "ops": f"{CHAIN_LEN} element-wise ops (mul, add, tanh, exp, sin) on float32 (8,), "
           "sum, backward",
    "large": "relu(a @ b).sum(), float32 square matrices, forward + backward",
    "deep": "scalar chain (y * c, y + d), build + backward + free",
}


def _check_agreement(w, rows):
    sums = {lib: r["checksum"] for lib, r in rows.items() if r["checksum"] is not None}
    if w == "deep":
        sizes = {rows[lib]["size"] for lib in sums}
        if len(sizes) > 1:  # different chain lengths have different gradients
            big = max(sizes)
            sums = {lib: s for lib, s in sums.items() if rows[lib]["size"] == big}
    if "numpy" not in sums:
        return
    ref = sums["numpy"]
    bad = [lib for lib, s in sums.items() if abs(s - ref) > 1e-3 * max(1.0, abs(ref))]
    if bad:
        print(f"  WARNING: gradient checksums disagree with numpy ({ref:.6g}): "
              + ", ".join(f"{lib}={sums[lib]:.6g}" for lib in bad))


def _targets(table):
    lines = []
    ops = table["ops"]["retrograd"]
    if ops["vs_torch"] is not None:
        lines.append(("ops: below PyTorch eager", ops["vs_torch"] < 1, f"{ops['vs_torch']:.2f}x"))
    if ops["vs_numpy"] is not None:
        lines.append(("ops: at most 2x the NumPy floor", ops["vs_numpy"] <= 2,
                      f"{ops['vs_numpy']:.2f}x"))
    jit = table["ops"].get("retrograd-jit")
    if jit and jit["median"] is not None and ops["median"] is not None:
        lines.append(("ops, jit: at least 3x faster than eager retrograd",
                      ops["median"] / jit["median"] >= 3, f"{ops['median'] / jit['median']:.1f}x"))
        if jit["vs_torch"] is not None:
            lines.append(("ops, jit: faster than PyTorch eager", jit["vs_torch"] < 1,
                          f"{jit['vs_torch']:.2f}x"))
        lines.append(("ops, jit: at most 2 us per op (forward+backward)", jit["median"] <= 2,
                      f"{jit['median']:.2f} us/op"))
    lg = table["large"]["retrograd"]
    if lg["vs_numpy"] is not None:
        lines.append(("large: at most 1.10x the NumPy floor", lg["vs_numpy"] <= 1.10,
                      f"{lg['vs_numpy']:.2f}x"))
    dp = table["deep"]["retrograd"]
    if dp["n"] or dp["errors"]:
        lines.append((f"deep: a {dp['size'] or 0:,}-op chain completes", dp["n"] > 0,
                      f"{_fmt(dp['median'])} s per million ops" if dp["n"] else
                      "; ".join(dp["errors"])))
    if lines:
        print("\nTargets")
        for what, ok, detail in lines:
            print(f"  [{'met ' if ok else 'MISS'}] {what}: {detail}")


def report(results):
    """Print the tables and targets for a list of raw results."""
    libs = [lib for lib in LIBS if any(r["lib"] == lib for r in results)]
    table = _summarise(results, libs)
    _print_table(table, libs)
    if "numpy" in libs and "retrograd" in libs and all(
            any(r["workload"] == w for r in results) for w in WORKLOADS):
        _targets(table)
    return table


def driver(args):
    libs = [lib for lib in LIBS if lib in (args.libs or LIBS)]
    missing = [lib for lib in libs if not _available(lib)]
    rounds = 1 if args.quick else args.rounds
    deep_rounds = rounds if args.quick else min(rounds, args.deep_rounds)
    workloads = [w for w in WORKLOADS if w in (args.workloads or WORKLOADS)]
    print(f"bench_engine: {platform.python_implementation()} {platform.python_version()}, "
          f"numpy {np.__version__}, {os.cpu_count()} CPUs, {platform.machine()}")
    for lib in missing:
        print(f"  {lib}: not installed (pip install -e '.[bench]'); skipped")
    libs = [lib for lib in libs if lib not in missing]
    results = []
    for w in workloads:
        n_rounds = deep_rounds if w == "deep" else rounds
        for r in range(n_rounds):
            order = libs[r % len(libs):] + libs[:r % len(libs)]  # rotate who goes first
            for lib in order:
                if (lib, w) in NOT_RUN:
                    continue
                size = _size(w, lib, args)
                res = _run_worker(lib, w, size, args)
                res.setdefault("lib", lib)
                res.setdefault("workload", w)
                res.setdefault("size", size)
                res["round"] = r
                results.append(res)
                shown = res.get("error") or f"{_fmt(res['value'])} {res['unit']}"
                print(f"  round {r + 1}/{n_rounds} {w:<5} {lib:<13} {shown}", flush=True)
    table = report(results)
    if args.json:
        Path(args.json).write_text(json.dumps({"results": results, "table": table}, indent=1))
        print(f"\nraw results: {args.json}")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rounds", type=int, default=5, help="processes per library and workload")
    p.add_argument("--deep-rounds", type=int, default=3, help="at most this many for `deep`")
    p.add_argument("--quick", action="store_true", help="small sizes, one round (a smoke run)")
    p.add_argument("--deep-ops", type=int, help="length of the deep chain (default 1,000,000)")
    p.add_argument("--full-peers", action="store_true",
                   help="run the pure-Python peers on the full deep chain too")
    p.add_argument("--libs", nargs="+", choices=LIBS, help="only these libraries")
    p.add_argument("--workloads", nargs="+", choices=WORKLOADS, help="only these workloads")
    p.add_argument("--timeout", type=float, default=900, help="seconds per worker process")
    p.add_argument("--json", help="also write the raw results to this file")
    p.add_argument("--report", metavar="JSON", help="print the tables of a saved --json run")
    p.add_argument("--worker", nargs=2, metavar=("LIB", "WORKLOAD"),
                   help="run one timing in this process and print it as JSON")
    p.add_argument("--size", type=int, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.report:
        report(json.loads(Path(args.report).read_text())["results"])
        return
    if args.worker:
        lib, w = args.worker
        if lib not in LIBS or w not in WORKLOADS:
            p.error(f"--worker takes one of {LIBS} and one of {WORKLOADS}")
        size = args.size or _size(w, lib, args)
        print(json.dumps(worker(lib, w, size, args.quick)))
        return
    driver(args)


if __name__ == "__main__":
    main()
