"""Benchmark: rg.func's Hessians and Jacobians beside torch.func, HIPS autograd and JAX.

Workloads (each with its target)
  hessian   the full Hessian of f(x) = sum(tanh(W @ x)), W a fixed 64x64 matrix,
            x in R^64, float64. retrograd: rg.func.hessian (forward over reverse,
            all 64 tangents pushed as one batch). Peers: torch.func.hessian,
            torch.autograd.functional.hessian, HIPS autograd.hessian, JAX
            (jax.hessian eager, and under jax.jit after compiling).
            Target: faster than torch.func.hessian.
  jacobian  the Jacobian of g(x) = tanh(A @ sin(x)), A a fixed m x n matrix, for
            (n, m) = (1000, 10) and (10, 1000), float64, by reverse mode (jacrev)
            and by forward mode (jacfwd). retrograd pushes the whole basis as one
            batch; "retrograd-loop" is the same with chunk_size=1 (one pass per
            row or column) for reference. Theory: reverse wins when outputs are
            few (m << n), forward when inputs are few.
  vmap      per-example values and gradients of f(x) = sum(tanh(W @ x)) (W as
            above) over a batch of 256 inputs: vmap(f) and vmap(grad(f)).
            Peers: torch.func.vmap, jax.vmap.

Every library runs in its own fresh process (all its workloads), the libraries
alternate in a rotating order over several rounds, and each table gives the
median over rounds with the min-max spread. PyTorch is timed at its default
thread count ("torch") and with torch.set_num_threads(1) ("torch-1t"), and
retrograd likewise at NumPy's default BLAS threads ("retrograd") and with one
("retrograd-1t": OPENBLAS/OMP/MKL_NUM_THREADS=1; on a busy machine idle BLAS
threads spinning can cost more than the work). Each
worker reports a checksum of every result; the driver warns if a result
disagrees with retrograd's.

    python benchmarks/bench_func.py                 # 5 rounds
    python benchmarks/bench_func.py --rounds 3 --json out.json
    python benchmarks/bench_func.py --quick         # smoke run: 1 round, short samples
    python benchmarks/bench_func.py --worker retrograd   # one library, JSON
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

LIBS = ["retrograd", "retrograd-1t", "torch", "torch-1t", "autograd", "jax"]
ONE_THREAD = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
SIZES = [(1000, 10), (10, 1000)]
HESS_N = 64
VMAP_B = 256


def _data():
    rng = np.random.default_rng(0)
    w = rng.standard_normal((HESS_N, HESS_N)) / np.sqrt(HESS_N)
    x = rng.standard_normal(HESS_N)
    jac = {}
    for n, m in SIZES:
        jac[(n, m)] = (rng.standard_normal((m, n)) / np.sqrt(n), rng.standard_normal(n))
    return w, x, jac


def _batch():
    return np.random.default_rng(2).standard_normal((VMAP_B, HESS_N))


def _checksum(a) -> list[float]:
    a = np.asarray(a, dtype=np.float64)
    weights = np.random.default_rng(1).standard_normal(a.size)
    return [float(a.sum()), float(a.reshape(-1) @ weights)]


# ---------------------------------------------------------------- tasks per library
# Each `tasks_<lib>()` returns {task name: (run, result)}: `run()` computes once,
# `result()` gives the last result as a NumPy array.

def _keep(fn, to_numpy):
    last = [None]

    def run():
        last[0] = fn()
    return run, lambda: to_numpy(last[0])


def tasks_retrograd(tag="retrograd"):
    import retrograd as rg
    import retrograd.func as F

    w0, x0, jac = _data()
    w, x = rg.tensor(w0, dtype=rg.float64), rg.tensor(x0, dtype=rg.float64)
    out = {f"hessian/{tag}": _keep(lambda: F.hessian(lambda v: rg.tanh(w @ v).sum())(x),
                                      lambda r: r.numpy())}
    for (n, m), (a0, xj0) in jac.items():
        a, xj = rg.tensor(a0, dtype=rg.float64), rg.tensor(xj0, dtype=rg.float64)

        def g(v, a=a):
            return rg.tanh(a @ rg.sin(v))
        for mode in ("rev", "fwd"):
            jf = F.jacrev if mode == "rev" else F.jacfwd
            out[f"jac-{n}x{m}-{mode}/{tag}"] = _keep(lambda jf=jf, g=g, xj=xj: jf(g)(xj),
                                                         lambda r: r.numpy())
            out[f"jac-{n}x{m}-{mode}/{tag}-loop"] = _keep(
                lambda jf=jf, g=g, xj=xj: jf(g, chunk_size=1)(xj), lambda r: r.numpy())
    xb = rg.tensor(_batch(), dtype=rg.float64)

    def f(v):
        return rg.tanh(w @ v).sum()
    vf, vg = F.vmap(f), F.vmap(F.grad(f))
    out[f"vmap-value/{tag}"] = _keep(lambda: vf(xb), lambda r: r.numpy())
    out[f"vmap-grad/{tag}"] = _keep(lambda: vg(xb), lambda r: r.numpy())
    return out


def tasks_torch(threads=None):
    import torch

    if threads:
        torch.set_num_threads(threads)
    tag = "torch-1t" if threads else "torch"
    w0, x0, jac = _data()
    w, x = torch.tensor(w0), torch.tensor(x0)

    def f(v):
        return torch.tanh(w @ v).sum()

    hf = torch.func.hessian(f)
    out = {f"hessian/{tag}.func": _keep(lambda: hf(x), lambda r: r.numpy()),
           f"hessian/{tag}.autograd.functional": _keep(
               lambda: torch.autograd.functional.hessian(f, x), lambda r: r.numpy())}
    for (n, m), (a0, xj0) in jac.items():
        a, xj = torch.tensor(a0), torch.tensor(xj0)

        def g(v, a=a):
            return torch.tanh(a @ torch.sin(v))
        for mode in ("rev", "fwd"):
            jf = (torch.func.jacrev if mode == "rev" else torch.func.jacfwd)(g)
            out[f"jac-{n}x{m}-{mode}/{tag}.func"] = _keep(lambda jf=jf, xj=xj: jf(xj),
                                                          lambda r: r.numpy())
    xb = torch.tensor(_batch())
    vf, vg = torch.func.vmap(f), torch.func.vmap(torch.func.grad(f))
    out[f"vmap-value/{tag}.func"] = _keep(lambda: vf(xb), lambda r: r.numpy())
    out[f"vmap-grad/{tag}.func"] = _keep(lambda: vg(xb), lambda r: r.numpy())
    return out


def tasks_autograd():
    import autograd
    import autograd.numpy as anp

    w0, x0, jac = _data()
    hf = autograd.hessian(lambda v: anp.sum(anp.tanh(anp.dot(w0, v))))
    out = {"hessian/autograd": _keep(lambda: hf(x0), np.asarray)}
    for (n, m), (a0, xj0) in jac.items():
        jf = autograd.jacobian(lambda v, a0=a0: anp.tanh(anp.dot(a0, anp.sin(v))))
        out[f"jac-{n}x{m}-rev/autograd"] = _keep(lambda jf=jf, xj0=xj0: jf(xj0), np.asarray)
    return out


def tasks_jax():
    import jax

    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy
    w0, x0, jac = _data()
    w, x = jnp.asarray(w0), jnp.asarray(x0)

    def f(v):
        return jnp.sum(jnp.tanh(w @ v))

    def ready(r):
        return np.asarray(r.block_until_ready())

    hf, hj = jax.hessian(f), jax.jit(jax.hessian(f))
    out = {"hessian/jax": _keep(lambda: hf(x).block_until_ready(), ready),
           "hessian/jax-jit": _keep(lambda: hj(x).block_until_ready(), ready)}
    for (n, m), (a0, xj0) in jac.items():
        a, xj = jnp.asarray(a0), jnp.asarray(xj0)

        def g(v, a=a):
            return jnp.tanh(a @ jnp.sin(v))
        for mode in ("rev", "fwd"):
            jf = (jax.jacrev if mode == "rev" else jax.jacfwd)(g)
            jj = jax.jit(jf)
            out[f"jac-{n}x{m}-{mode}/jax"] = _keep(
                lambda jf=jf, xj=xj: jf(xj).block_until_ready(), ready)
            out[f"jac-{n}x{m}-{mode}/jax-jit"] = _keep(
                lambda jj=jj, xj=xj: jj(xj).block_until_ready(), ready)
    xb = jnp.asarray(_batch())
    vf, vg = jax.vmap(f), jax.vmap(jax.grad(f))
    out["vmap-value/jax"] = _keep(lambda: vf(xb).block_until_ready(), ready)
    out["vmap-grad/jax"] = _keep(lambda: vg(xb).block_until_ready(), ready)
    return out


MAKERS = {"retrograd": tasks_retrograd, "retrograd-1t": lambda: tasks_retrograd("retrograd-1t"),
          "torch": tasks_torch,
          "torch-1t": lambda: tasks_torch(threads=1), "autograd": tasks_autograd,
          "jax": tasks_jax}


# ---------------------------------------------------------------- worker

def _time(run, budget):
    """Median seconds per call over samples of about `budget` seconds each."""
    run()  # warm-up: imports, first-call costs, JIT compilation
    t0 = time.perf_counter()
    run()
    first = time.perf_counter() - t0
    per_sample = max(1, int(budget / max(first, 1e-9)))
    n_samples = 3 if first > budget else 7
    samples = []
    for _ in range(n_samples):
        t0 = time.perf_counter()
        for _ in range(per_sample):
            run()
        samples.append((time.perf_counter() - t0) / per_sample)
    return statistics.median(samples)


def worker(lib, budget, only=None):
    results = []
    for name, (run, result) in MAKERS[lib]().items():
        if only and not any(o in name for o in only):
            continue
        try:
            seconds = _time(run, budget)
            results.append({"task": name, "seconds": seconds, "checksum": _checksum(result())})
        except Exception as e:  # noqa: BLE001 - reported in the table, not fatal
            results.append({"task": name, "error": f"{type(e).__name__}: {e}"[:100]})
    return results


# ---------------------------------------------------------------- driver

def _run_worker(lib, args):
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", lib,
           "--budget", str(args.budget)] + (["--only", *args.only] if args.only else [])
    try:
        env = dict(os.environ, **ONE_THREAD) if lib.endswith("-1t") else None
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout, env=env)
    except subprocess.TimeoutExpired:
        return None, f"timed out after {args.timeout} s"
    if r.returncode != 0:
        lines = [ln for ln in r.stderr.strip().splitlines() if ln.strip()]
        return None, lines[-1][:100] if lines else f"exit status {r.returncode}"
    return json.loads(r.stdout.strip().splitlines()[-1]), None


def _available(lib):
    import importlib.util

    name = {"torch-1t": "torch"}.get(lib, lib)
    return name.startswith("retrograd") or importlib.util.find_spec(name) is not None


def _fmt_ms(s):
    ms = s * 1e3
    if ms >= 100:
        return f"{ms:.0f}"
    if ms >= 10:
        return f"{ms:.1f}"
    return f"{ms:.3f}" if ms >= 0.1 else f"{ms:.4f}"


def _summarise(runs):
    """{task: {"median", "lo", "hi", "n", "checksum", "errors"}} over rounds."""
    table = {}
    for rec in runs:
        row = table.setdefault(rec["task"], {"vals": [], "errors": set(), "checksum": None})
        if "error" in rec:
            row["errors"].add(rec["error"])
        else:
            row["vals"].append(rec["seconds"])
            row["checksum"] = rec["checksum"]
    for row in table.values():
        v = row["vals"]
        row.update(median=statistics.median(v) if v else None, lo=min(v) if v else None,
                   hi=max(v) if v else None, n=len(v))
    return table


def _agree(ref, other):
    if ref is None or other is None:
        return True
    return all(abs(a - b) <= 1e-6 * max(1.0, abs(a)) for a, b in zip(ref, other))


MISSING: list[str] = []  # peers not installed: a row saying so in every table


def _print_group(title, table, prefix, base, unit="ms"):
    rows = [(k.split("/", 1)[1], v) for k, v in table.items() if k.startswith(prefix + "/")]
    if not rows:
        return
    ref = table.get(f"{prefix}/{base}", {})
    print(f"\n{title}  [{unit} per call, lower is better; 'x retrograd' = its time / "
          "retrograd's]")
    head = f"  {'implementation':<32} {'median':>9} {'min':>9} {'max':>9} {'rounds':>6} " \
           f"{'x retrograd':>11}"
    print(head)
    print("  " + "-" * (len(head) - 2))
    for name, r in sorted(rows, key=lambda kv: kv[1]["median"] or float("inf")):
        if r["median"] is None:
            print(f"  {name:<32} failed: {'; '.join(sorted(r['errors']))}")
            continue
        ratio = f"{r['median'] / ref['median']:.2f}x" if ref.get("median") else "-"
        flag = "" if _agree(ref.get("checksum"), r["checksum"]) else "  DISAGREES"
        print(f"  {name:<32} {_fmt_ms(r['median']):>9} {_fmt_ms(r['lo']):>9} "
              f"{_fmt_ms(r['hi']):>9} {r['n']:>6} {ratio:>11}{flag}")
    for lib in MISSING:
        print(f"  {lib:<32} not installed (pip install {lib}): not timed")


def _report(table):
    _print_group(f"Hessian of sum(tanh(W @ x)), W {HESS_N}x{HESS_N}, x in R^{HESS_N}, float64",
                 table, "hessian", "retrograd")
    for n, m in SIZES:
        for mode, what in (("rev", "reverse mode (jacrev)"), ("fwd", "forward mode (jacfwd)")):
            _print_group(f"Jacobian of tanh(A @ sin(x)), R^{n} -> R^{m}, {what}", table,
                         f"jac-{n}x{m}-{mode}", "retrograd")
    for task, what in (("vmap-value", "vmap(f)"), ("vmap-grad", "vmap(grad(f))")):
        _print_group(f"Per-example {what}, f(x) = sum(tanh(W @ x)), {VMAP_B} inputs in "
                     f"R^{HESS_N}, float64", table, task, "retrograd")
    print("\nWhich mode wins (retrograd, batched; ratio = slower / faster)")
    for n, m in SIZES:
        rev = table.get(f"jac-{n}x{m}-rev/retrograd", {}).get("median")
        fwd = table.get(f"jac-{n}x{m}-fwd/retrograd", {}).get("median")
        if rev and fwd:
            win, ratio = ("reverse", fwd / rev) if rev < fwd else ("forward", rev / fwd)
            print(f"  R^{n} -> R^{m}: reverse {_fmt_ms(rev)} ms, forward {_fmt_ms(fwd)} ms: "
                  f"{win} wins by {ratio:.1f}x")
    print("\nEvery row against torch.func (each library at the best of its thread settings; "
          "target: at most 1.00x)")
    prefixes = sorted({k.split("/", 1)[0] for k in table})
    for prefix in prefixes:
        mine = [table.get(f"{prefix}/{t}", {}).get("median") for t in ("retrograd",
                                                                          "retrograd-1t")]
        mine = [t for t in mine if t]
        peers = [table.get(f"{prefix}/{t}.func", {}).get("median") for t in ("torch", "torch-1t")]
        peers = [p for p in peers if p]
        if mine and peers:
            ratio = min(mine) / min(peers)
            print(f"  [{'met ' if ratio <= 1 else 'MISS'}] {prefix:<22} {ratio:.2f}x torch.func")
    rg = table.get("hessian/retrograd", {}).get("median")
    tf = [table.get(f"hessian/{t}.func", {}).get("median") for t in ("torch", "torch-1t")]
    tf = [t for t in tf if t]
    if rg and tf:
        ok = rg < min(tf)
        print(f"\nTarget\n  [{'met ' if ok else 'MISS'}] hessian faster than torch.func.hessian "
              f"(best of its thread settings): {rg / min(tf):.3f}x its time")


def driver(args):
    libs = [lib for lib in LIBS if lib in (args.libs or LIBS)]
    missing = [lib for lib in libs if not _available(lib)]
    libs = [lib for lib in libs if lib not in missing]
    print(f"bench_func: {platform.python_implementation()} {platform.python_version()}, "
          f"numpy {np.__version__}, {os.cpu_count()} CPUs, {platform.machine()}")
    for lib in missing:
        print(f"  {lib}: not installed; each table says so")
    MISSING[:] = [lib for lib in missing if lib != "torch-1t"]
    runs = []
    rounds = 1 if args.quick else args.rounds
    for r in range(rounds):
        order = libs[r % len(libs):] + libs[:r % len(libs)]  # rotate who goes first
        for lib in order:
            t0 = time.perf_counter()
            res, err = _run_worker(lib, args)
            took = time.perf_counter() - t0
            print(f"  round {r + 1}/{rounds}: {lib:<10} {'ok' if err is None else err} "
                  f"({took:.0f} s)", flush=True)
            if res is not None:
                runs.extend(res)
    table = _summarise(runs)
    _report(table)
    if args.json:
        Path(args.json).write_text(json.dumps(
            {k: {kk: vv for kk, vv in v.items() if kk != "errors"} | {
                "errors": sorted(v["errors"])} for k, v in table.items()}, indent=1))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--worker", choices=LIBS, help="time one library, print JSON")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--budget", type=float, default=0.2, help="seconds per timing sample")
    p.add_argument("--libs", nargs="*", choices=LIBS)
    p.add_argument("--only", nargs="*", help="only tasks whose name contains one of these")
    p.add_argument("--quick", action="store_true", help="one round, short samples")
    p.add_argument("--timeout", type=float, default=900)
    p.add_argument("--json", help="write the summary table here")
    args = p.parse_args(argv)
    if args.quick:
        args.budget = min(args.budget, 0.05)
    if args.worker:
        print(json.dumps(worker(args.worker, args.budget, args.only)))
        return 0
    driver(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
