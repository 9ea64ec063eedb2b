"""Benchmark: gradients through linear algebra beside PyTorch, HIPS autograd, JAX and NumPy/SciPy
by hand.

Workloads (float64; each timing is value and gradient together)
  loglik-n   the Gaussian log-likelihood -1/2 y^T S^-1 y - sum(log diag L), L = cholesky(S),
             through cholesky + solve_triangular, gradient in S, for n = 64, 256, 1024.
  eigh-b     a batched eigh gradient: 64 symmetric 32x32 matrices, loss
             sum(c * eigenvalues) + sum(W * eigenvectors^2) (sign-invariant), gradient in A.

retrograd runs at NumPy's default BLAS threads and with one ("retrograd-1t").
Peers: "torch-1t" and "torch-2t" (torch.set_num_threads), HIPS "autograd", "jax" (eager,
no jit), and "numpy-hand": the same forward and backward written by hand with NumPy and
SciPy (the floor when the decomposition dominates). A peer that is not installed, or that
cannot differentiate a workload, is a row saying so. Each library runs in its own process;
every timing is the median of several repeats. The libraries run in turn, over several
rounds in a rotated order, and each ratio is taken within a round, then the median over
rounds is shown: the host's speed drifts from minute to minute, and a ratio of two runs
minutes apart measures that drift. Results are checked against retrograd's (a warning
names a peer that disagrees).

Targets: retrograd at most PyTorch eager's time with its best thread setting, and within
1.2x of numpy-hand where the decomposition dominates.

    python benchmarks/bench_linalg.py            # full run: 3 rounds over every library
    python benchmarks/bench_linalg.py --rounds 5 --libs retrograd retrograd-1t torch-1t torch-2t
    python benchmarks/bench_linalg.py --quick --rounds 1   # smoke run
    python benchmarks/bench_linalg.py --worker retrograd   # one library, JSON
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

LIBS = ["retrograd", "retrograd-1t", "numpy-hand", "numpy-hand-1t", "torch-1t", "torch-2t",
        "autograd", "jax"]
ONE_THREAD = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
SIZES = [64, 256, 1024]
EIGH = (64, 32)


def _data(n):
    rng = np.random.default_rng(n)
    x = rng.standard_normal((n, n)) / np.sqrt(n)
    return x @ x.T + np.eye(n), rng.standard_normal(n)


def _eigh_data():
    b, n = EIGH
    rng = np.random.default_rng(1)
    a = rng.standard_normal((b, n, n))
    return (a + np.swapaxes(a, -1, -2)) / 2, rng.standard_normal(n), rng.standard_normal((n, n))


def _time(fn, quick):
    fn()  # warm
    reps = []
    budget = 0.3 if quick else 1.5
    start = time.perf_counter()
    while len(reps) < 3 or (time.perf_counter() - start < budget and len(reps) < 50):
        t = time.perf_counter()
        fn()
        reps.append(time.perf_counter() - t)
    return statistics.median(reps)


def _fns(lib):
    """(loglik_grad(S, y) -> grad array, eigh_grad(A, c, W) -> grad array) for `lib`."""
    if lib.startswith("retrograd"):
        import retrograd as rg

        def loglik(S, y):
            St = rg.tensor(S, requires_grad=True)
            L = rg.linalg.cholesky(St)
            z = rg.linalg.solve_triangular(L, rg.tensor(y).reshape(-1, 1), upper=False)
            ll = -0.5 * (z * z).sum() - rg.log(rg.diagonal(L, 0, -2, -1)).sum()
            ll.backward()
            return St.grad.data

        def eigh(A, c, W):
            At = rg.tensor(A, requires_grad=True)
            w, V = rg.linalg.eigh(At)
            ((w * rg.tensor(c)).sum() + (V * V * rg.tensor(W)).sum()).backward()
            return At.grad.data
        return loglik, eigh
    if lib.startswith("numpy-hand"):
        import scipy.linalg as sl

        def loglik(S, y):
            L = np.linalg.cholesky(S)
            z = sl.solve_triangular(L, y, lower=True)
            a = sl.solve_triangular(L.T, z, lower=False)
            Sinv = sl.cho_solve((L, True), np.eye(len(y)))
            _ = -0.5 * z @ z - np.log(np.diag(L)).sum()
            return 0.5 * (np.outer(a, a) - Sinv)

        def eigh(A, c, W):
            w, V = np.linalg.eigh(A)
            gV = 2 * W * V
            n = w.shape[-1]
            E = w[..., None, :] - w[..., :, None] + np.eye(n)
            VtgV = np.swapaxes(V, -1, -2) @ gV
            inner = (VtgV - np.swapaxes(VtgV, -1, -2)) / 2 / E * (1 - np.eye(n)) + np.eye(n) * c
            return V @ inner @ np.swapaxes(V, -1, -2)
        return loglik, eigh
    if lib.startswith("torch"):
        import torch
        torch.set_num_threads(int(lib[-2]))

        def loglik(S, y):
            St = torch.tensor(S, requires_grad=True)
            L = torch.linalg.cholesky(St)
            z = torch.linalg.solve_triangular(L, torch.tensor(y).reshape(-1, 1), upper=False)
            ll = -0.5 * (z * z).sum() - torch.log(torch.diagonal(L)).sum()
            ll.backward()
            return St.grad.numpy()

        def eigh(A, c, W):
            At = torch.tensor(A, requires_grad=True)
            w, V = torch.linalg.eigh(At)
            ((w * torch.tensor(c)).sum() + (V * V * torch.tensor(W)).sum()).backward()
            return At.grad.numpy()
        return loglik, eigh
    if lib == "autograd":
        import autograd
        import autograd.numpy as anp
        import autograd.scipy.linalg as asl

        def ll(S, y):
            L = anp.linalg.cholesky(S)
            z = asl.solve_triangular(L, y, lower=True)
            return -0.5 * anp.dot(z, z) - anp.sum(anp.log(anp.diag(L)))
        g = autograd.grad(ll)

        def eigf(A, c, W):
            w, V = anp.linalg.eigh(A)
            return anp.sum(w * c) + anp.sum(V * V * W)
        ge = autograd.grad(eigf)
        return (lambda S, y: np.asarray(g(S, y))), (lambda A, c, W: np.asarray(ge(A, c, W)))
    if lib == "jax":
        import jax
        import jax.numpy as jnp
        import jax.scipy.linalg as jsl
        jax.config.update("jax_enable_x64", True)

        def ll(S, y):
            L = jnp.linalg.cholesky(S)
            z = jsl.solve_triangular(L, y, lower=True)
            return -0.5 * z @ z - jnp.sum(jnp.log(jnp.diag(L)))
        g = jax.grad(ll)

        def eigf(A, c, W):
            w, V = jnp.linalg.eigh(A)
            return jnp.sum(w * c) + jnp.sum(V * V * W)
        ge = jax.grad(eigf)
        return ((lambda S, y: np.asarray(g(S, y).block_until_ready())),
                (lambda A, c, W: np.asarray(ge(A, c, W).block_until_ready())))
    raise ValueError(lib)


def worker(lib, quick):
    out = {}
    try:
        loglik, eigh = _fns(lib)
    except ImportError as e:
        return {"error": f"not installed ({e.name})"}
    for n in SIZES:
        S, y = _data(n)
        key = f"loglik-{n}"
        try:
            g = loglik(S, y)
            out[key] = {"s": _time(lambda S=S, y=y: loglik(S, y), quick),
                        "check": float(np.sum(g))}
        except Exception as e:  # a peer that cannot differentiate it: a row saying so
            out[key] = {"error": f"{type(e).__name__}: {str(e)[:60]}"}
    A, c, W = _eigh_data()
    key = f"eigh-{EIGH[0]}x{EIGH[1]}"
    try:
        g = eigh(A, c, W)
        out[key] = {"s": _time(lambda: eigh(A, c, W), quick), "check": float(np.sum(g))}
    except Exception as e:
        out[key] = {"error": f"{type(e).__name__}: {str(e)[:60]}"}
    return out


def _run_worker(lib, quick):
    cmd = [sys.executable, __file__, "--worker", lib] + (["--quick"] if quick else [])
    env = dict(os.environ)
    if lib.startswith("torch"):
        env["OMP_NUM_THREADS"] = lib[-2]
    if lib.endswith("-1t"):  # idle BLAS threads spinning on a busy machine cost more
        env.update(ONE_THREAD)
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    try:
        return json.loads(p.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        return {"error": (p.stderr.strip().splitlines() or ["failed"])[-1][:80]}


def _best(round_, libs, k):
    """The fastest of `libs` on workload `k` in one round's results, or None."""
    ts = [round_[lib].get(k, {}).get("s") for lib in libs if lib in round_]
    ts = [t for t in ts if t]
    return min(ts) if ts else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--rounds", type=int, default=3,
                    help="rounds over all libraries, each in a rotated order (default 3)")
    ap.add_argument("--libs", nargs="+", default=LIBS, choices=LIBS)
    ap.add_argument("--worker")
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.quick)))
        return
    libs = [lib for lib in LIBS if lib in args.libs]
    rounds = []
    for r in range(max(1, args.rounds)):
        order = libs[r % len(libs):] + libs[:r % len(libs)]
        rounds.append({lib: _run_worker(lib, args.quick) for lib in order})
    keys = [f"loglik-{n}" for n in SIZES] + [f"eigh-{EIGH[0]}x{EIGH[1]}"]
    print(f"times: median over {len(rounds)} round(s), each library in its own process")
    print(f"{'workload':<14}" + "".join(f"{lib:>14}" for lib in libs))
    for k in keys:
        row = f"{k:<14}"
        for lib in libs:
            ts = [rd[lib].get(k, {}).get("s") for rd in rounds]
            ts = [t for t in ts if t]
            row += f"{statistics.median(ts) * 1e3:>12.2f}ms" if ts else f"{'n/a':>14}"
        print(row)
    ours_libs = [lib for lib in ("retrograd", "retrograd-1t") if lib in libs]
    groups = {lib: [lib] for lib in libs if lib not in ours_libs}
    groups["best torch"] = [lib for lib in ("torch-1t", "torch-2t") if lib in libs]
    groups["best hand"] = [lib for lib in ("numpy-hand", "numpy-hand-1t") if lib in libs]
    print("\nratios: retrograd's best thread setting / peer within each round, median over "
          "rounds [min-max]; < 1 means retrograd is faster")
    print(f"{'workload':<14}" + "".join(f"{g:>20}" for g in groups))
    for k in keys:
        row = f"{k:<14}"
        for peers in groups.values():
            rs = [(_best(rd, ours_libs, k), _best(rd, peers, k)) for rd in rounds]
            rs = [a / b for a, b in rs if a and b]
            cell = (f"{statistics.median(rs):.2f} [{min(rs):.2f}-{max(rs):.2f}]"
                    if rs else "n/a")
            row += f"{cell:>20}"
        print(row)
        for rd in rounds:
            ref = _best(rd, ours_libs, k) and next(
                (rd[o][k]["check"] for o in ours_libs if "check" in rd[o].get(k, {})), None)
            for lib in libs:
                c = rd[lib].get(k, {}).get("check")
                if ref is not None and c is not None and not np.isclose(c, ref, rtol=1e-6):
                    print(f"  warning: {lib}'s gradient for {k} disagrees ({c} vs {ref})")
    for lib in libs:
        for rd in rounds[:1]:
            if "error" in rd[lib]:
                print(f"{lib}: {rd[lib]['error']}")
            for k in keys:
                if "error" in rd[lib].get(k, {}):
                    print(f"{lib} {k}: {rd[lib][k]['error']}")


if __name__ == "__main__":
    main()
