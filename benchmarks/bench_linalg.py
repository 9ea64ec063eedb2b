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
every timing is the median of several repeats. Results are checked against retrograd's
(a warning names a peer that disagrees).

Targets: retrograd at most PyTorch eager's time with its best thread setting, and within
1.2x of numpy-hand where the decomposition dominates.

    python benchmarks/bench_linalg.py            # full run
    python benchmarks/bench_linalg.py --quick    # smoke run
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--worker")
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.quick)))
        return
    results = {}
    for lib in LIBS:
        cmd = [sys.executable, __file__, "--worker", lib] + (["--quick"] if args.quick else [])
        env = dict(os.environ)
        if lib.startswith("torch"):
            env["OMP_NUM_THREADS"] = lib[-2]
        if lib.endswith("-1t"):  # idle BLAS threads spinning on a busy machine cost more
            env.update(ONE_THREAD)
        p = subprocess.run(cmd, capture_output=True, text=True, env=env)
        try:
            results[lib] = json.loads(p.stdout.strip().splitlines()[-1])
        except (IndexError, json.JSONDecodeError):
            results[lib] = {"error": (p.stderr.strip().splitlines() or ["failed"])[-1][:80]}
    keys = [f"loglik-{n}" for n in SIZES] + [f"eigh-{EIGH[0]}x{EIGH[1]}"]
    print(f"{'workload':<14}" + "".join(f"{lib:>14}" for lib in LIBS))
    for k in keys:
        row = f"{k:<14}"
        for lib in LIBS:
            r = results[lib].get(k, results[lib])
            row += f"{r['s'] * 1e3:>12.2f}ms" if "s" in r else f"{'n/a':>14}"
        print(row)
    print("\nratios (retrograd's best thread setting / peer; < 1 means retrograd is faster)")
    peers = LIBS[2:]
    print(f"{'workload':<14}" + "".join(f"{lib:>14}" for lib in peers)
          + f"{'best torch':>14}{'best hand':>14}")
    for k in keys:
        mine = [results[r].get(k, {}) for r in ("retrograd", "retrograd-1t")]
        mine = [r for r in mine if "s" in r]
        ours = min(mine, key=lambda r: r["s"]) if mine else {}
        row = f"{k:<14}"
        for lib in peers:
            r = results[lib].get(k, results[lib])
            row += f"{ours['s'] / r['s']:>14.2f}" if "s" in r and "s" in ours else f"{'n/a':>14}"
        ts = [results[t].get(k, {}).get("s") for t in ("torch-1t", "torch-2t")]
        ts = [t for t in ts if t]
        row += f"{ours['s'] / min(ts):>14.2f}" if ts and "s" in ours else f"{'n/a':>14}"
        hs = [results[h].get(k, {}).get("s") for h in ("numpy-hand", "numpy-hand-1t")]
        hs = [h for h in hs if h]
        row += f"{ours['s'] / min(hs):>14.2f}" if hs and "s" in ours else f"{'n/a':>14}"
        print(row)
        ref = ours.get("check")
        for lib in LIBS[1:]:
            c = results[lib].get(k, {}).get("check")
            if ref is not None and c is not None and not np.isclose(c, ref, rtol=1e-6):
                print(f"  warning: {lib}'s gradient for {k} disagrees ({c} vs {ref})")
    for lib in LIBS:
        if "error" in results[lib]:
            print(f"{lib}: {results[lib]['error']}")
        for k in keys:
            if "error" in results[lib].get(k, {}):
                print(f"{lib} {k}: {results[lib][k]['error']}")


if __name__ == "__main__":
    main()
