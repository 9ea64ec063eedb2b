"""Training-step time: retrograd beside PyTorch eager, HIPS autograd, mygrad, tinygrad, JAX
and a hand-written NumPy forward/backward (the floor).

    python benchmarks/bench_train.py                 # both workloads, 5 rounds
    python benchmarks/bench_train.py --rounds 9 --workload mlp --json out.json
    python benchmarks/bench_train.py --clock cpu --libs numpy,retrograd,torch

Workloads (float32, batch 64, SGD lr 0.1, softmax cross-entropy, same weights and batch):
  mlp: 64-128-64-10 with ReLU
  cnn: conv 1->16 3x3 padding 1, ReLU, 2x2 max-pool, linear 256->10

Every (library, settings) pair runs in its own subprocess, the order rotating
from round to round; a subprocess warms up, then times several repeats of a
block of steps and reports the median time per step. The table shows, per
library, the median over rounds and the spread (min-max over rounds), and
ratios to the NumPy floor and to PyTorch. PyTorch runs at its default thread
count and with torch.set_num_threads(1); NumPy-based libraries (retrograd,
the floor, autograd, mygrad) run with the BLAS default and with one BLAS
thread; each library is compared at its faster setting. Peers that are not
installed are skipped with a note.

On a busy machine wall times swing with other load; `--clock cpu` times each
process's own CPU time instead (single-threaded variants only), which is far
steadier and is the fairer comparison of the work each library does.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

BATCH, LR = 64, 0.1
MLP_SIZES = (64, 128, 64, 10)

# name -> (workloads, kind): kind "numpy" varies BLAS threads, "torch" torch threads.
LIBS = {
    "numpy": (("mlp", "cnn"), "numpy"),
    "retrograd": (("mlp", "cnn"), "numpy"),
    "retrograd-jit": (("mlp", "cnn"), "numpy"),
    "torch": (("mlp", "cnn"), "torch"),
    "autograd": (("mlp",), "numpy"),
    "mygrad": (("mlp",), "numpy"),
    "tinygrad": (("mlp",), "other"),
    "jax": (("mlp",), "other"),
    "jax-jit": (("mlp",), "other"),
}
LABELS = {"numpy": "NumPy by hand (floor)", "retrograd": "retrograd",
          "retrograd-jit": "retrograd jit(step)", "torch": "PyTorch eager",
          "autograd": "HIPS autograd", "mygrad": "mygrad", "tinygrad": "tinygrad",
          "jax": "JAX eager", "jax-jit": "JAX jit"}
THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


# ---------------------------------------------------------------- shared data

def make_data(workload: str):
    """Weights in PyTorch's layouts, one batch, all float32, from a fixed seed."""
    import numpy as np

    r = np.random.default_rng(0)

    def u(shape, fan_in):
        b = 1 / np.sqrt(fan_in)
        return r.uniform(-b, b, shape).astype(np.float32)

    if workload == "mlp":
        ws = []
        for i, o in zip(MLP_SIZES[:-1], MLP_SIZES[1:]):
            ws += [u((o, i), i), u((o,), i)]
        x = r.random((BATCH, 64), dtype=np.float32)
    else:
        ws = [u((16, 1, 3, 3), 9), u((16,), 9), u((10, 256), 256), u((10,), 256)]
        x = r.random((BATCH, 1, 8, 8), dtype=np.float32)
    y = r.integers(0, 10, BATCH)
    return ws, x, y


# ---------------------------------------------------------------- one step per library
# Each `setup_<lib>(workload, ws, x, y)` returns a function doing one full training
# step (forward, loss, backward, SGD update) and returning something that forces
# the work to finish.

def setup_numpy(workload, ws, x, y):
    import numpy as np

    ws = [w.copy() for w in ws]
    rows = np.arange(BATCH)
    if workload == "cnn":
        return _numpy_cnn(ws, x, y, rows)

    def step():
        w1, b1, w2, b2, w3, b3 = ws
        z1 = x @ w1.T
        z1 += b1
        h1 = np.maximum(z1, 0)
        z2 = h1 @ w2.T
        z2 += b2
        h2 = np.maximum(z2, 0)
        z3 = h2 @ w3.T
        z3 += b3
        z3 -= z3.max(axis=1, keepdims=True)
        e = np.exp(z3)
        s = e.sum(axis=1, keepdims=True)
        loss = np.log(s[:, 0]).mean() - z3[rows, y].mean()
        g = e / s
        g[rows, y] -= 1
        g /= BATCH
        gw3, gb3 = g.T @ h2, g.sum(0)
        g = g @ w3
        g *= z2 > 0
        gw2, gb2 = g.T @ h1, g.sum(0)
        g = g @ w2
        g *= z1 > 0
        gw1, gb1 = g.T @ x, g.sum(0)
        for w, gw in zip(ws, (gw1, gb1, gw2, gb2, gw3, gb3)):
            w -= LR * gw
        return loss

    return step


def _numpy_cnn(ws, x, y, rows):
    import numpy as np

    def step():
        wc, bc, wl, bl = ws
        xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
        s = xp.strides
        cols = np.lib.stride_tricks.as_strided(xp, (BATCH, 8, 8, 3, 3),
                                               (s[0], s[2], s[3], s[2], s[3]))
        cols = cols.reshape(BATCH * 64, 9)  # im2col (a copy)
        z = cols @ wc.reshape(16, 9).T  # (N*64, 16)
        z += bc
        h = np.maximum(z, 0).reshape(BATCH, 4, 2, 4, 2, 16)
        p = h.max(axis=(2, 4))  # (N, 4, 4, 16)
        flat = p.transpose(0, 3, 1, 2).reshape(BATCH, 256)
        o = flat @ wl.T
        o += bl
        o -= o.max(axis=1, keepdims=True)
        e = np.exp(o)
        ssum = e.sum(axis=1, keepdims=True)
        loss = np.log(ssum[:, 0]).mean() - o[rows, y].mean()
        g = e / ssum
        g[rows, y] -= 1
        g /= BATCH
        gwl, gbl = g.T @ flat, g.sum(0)
        gp = (g @ wl).reshape(BATCH, 16, 4, 4).transpose(0, 2, 3, 1)
        mask = h == p[:, :, None, :, None, :]
        gh = mask * gp[:, :, None, :, None, :]
        gz = gh.reshape(BATCH * 64, 16) * (z > 0)
        gwc = (gz.T @ cols).reshape(16, 1, 3, 3)
        gbc = gz.sum(0)
        for w, gw in zip(ws, (gwc, gbc, gwl, gbl)):
            w -= LR * gw
        return loss

    return step


def setup_retrograd(workload, ws, x, y):
    import retrograd as rg
    from retrograd import nn, optim
    from retrograd.nn import functional as F

    if workload == "mlp":
        model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(),
                              nn.Linear(64, 10))
    else:
        model = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                              nn.Flatten(), nn.Linear(256, 10))
    for p, w in zip(model.parameters(), ws):
        p.data[...] = w
    opt = optim.SGD(model.parameters(), lr=LR)
    xt, yt = rg.Tensor(x), rg.Tensor(y)

    def step():
        loss = F.cross_entropy(model(xt), yt)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    return step


def setup_retrograd_jit(workload, ws, x, y):
    """`rg.jit` of `rg.func.value_and_grad(loss)` plus the SGD update, as one traced step."""
    import retrograd as rg
    from retrograd.nn import functional as F

    params = [rg.Tensor(w.copy()) for w in ws]
    xt, yt = rg.Tensor(x), rg.Tensor(y)

    def loss(*args):
        *ps, x, y = args
        if workload == "mlp":
            w1, b1, w2, b2, w3, b3 = ps
            h = F.relu(F.linear(F.relu(F.linear(x, w1, b1)), w2, b2))
            return F.cross_entropy(F.linear(h, w3, b3), y)
        cw, cb, lw, lb = ps
        h = F.max_pool2d(F.relu(F.conv2d(x, cw, cb, padding=1)), 2)
        return F.cross_entropy(F.linear(h.reshape(h.shape[0], -1), lw, lb), y)

    value_and_grad = rg.func.value_and_grad(loss, argnums=tuple(range(len(params))))

    @rg.jit
    def update(*args):  # as the JAX jit runner does: the SGD update is traced too
        value, grads = value_and_grad(*args)
        return value, [p - LR * g for p, g in zip(args, grads)]

    def step():
        value, params[:] = update(*params, xt, yt)
        return value

    return step


def setup_torch(workload, ws, x, y):
    import torch

    T = torch.nn
    if workload == "mlp":
        model = T.Sequential(T.Linear(64, 128), T.ReLU(), T.Linear(128, 64), T.ReLU(),
                             T.Linear(64, 10))
    else:
        model = T.Sequential(T.Conv2d(1, 16, 3, padding=1), T.ReLU(), T.MaxPool2d(2),
                             T.Flatten(), T.Linear(256, 10))
    with torch.no_grad():
        for p, w in zip(model.parameters(), ws):
            p.copy_(torch.from_numpy(w))
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    lossf = T.functional.cross_entropy

    def step():
        loss = lossf(model(xt), yt)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    return step


def setup_autograd(workload, ws, x, y):
    import autograd.numpy as anp
    from autograd import value_and_grad

    rows = anp.arange(BATCH)

    def loss(params):
        w1, b1, w2, b2, w3, b3 = params
        h = anp.maximum(anp.dot(x, w1.T) + b1, 0)
        h = anp.maximum(anp.dot(h, w2.T) + b2, 0)
        z = anp.dot(h, w3.T) + b3
        z = z - anp.max(z, axis=1, keepdims=True)
        lp = z - anp.log(anp.sum(anp.exp(z), axis=1, keepdims=True))
        return -anp.mean(lp[rows, y])

    g = value_and_grad(loss)
    params = [w.copy() for w in ws]

    def step():
        value, gs = g(params)
        for i, gi in enumerate(gs):
            params[i] = params[i] - LR * gi
        return value

    return step


def setup_mygrad(workload, ws, x, y):
    import mygrad as mg
    from mygrad.nnet.activations import relu
    from mygrad.nnet.losses import softmax_crossentropy

    params = [mg.tensor(w) for w in ws]

    def step():
        w1, b1, w2, b2, w3, b3 = params
        h = relu(mg.matmul(x, w1.T) + b1)
        h = relu(mg.matmul(h, w2.T) + b2)
        loss = softmax_crossentropy(mg.matmul(h, w3.T) + b3, y)
        loss.backward()
        for p in params:
            p.data -= LR * p.grad
        return loss

    return step


def setup_tinygrad(workload, ws, x, y):
    os.environ.setdefault("DEV", "CPU")  # its CPU backend compiles kernels with clang
    from tinygrad import Tensor, nn

    Tensor.training = True
    params = [Tensor(w).realize() for w in ws]
    opt = nn.optim.SGD(params, lr=LR)  # marks the params as requiring grad
    xt, yt = Tensor(x).realize(), Tensor(y.astype("int32")).realize()

    def step():
        w1, b1, w2, b2, w3, b3 = params
        h = (xt.linear(w1.T, b1)).relu()
        h = (h.linear(w2.T, b2)).relu()
        loss = h.linear(w3.T, b3).sparse_categorical_crossentropy(yt)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss.realize()

    return step


def _jax_parts(ws, x, y):
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_platforms", "cpu")

    def loss(params):
        w1, b1, w2, b2, w3, b3 = params
        h = jax.nn.relu(x @ w1.T + b1)
        h = jax.nn.relu(h @ w2.T + b2)
        lp = jax.nn.log_softmax(h @ w3.T + b3)
        return -jnp.mean(jnp.take_along_axis(lp, y[:, None], axis=1))

    def update(params):
        value, gs = jax.value_and_grad(loss)(params)
        return value, [p - LR * g for p, g in zip(params, gs)]

    return jax, [jnp.asarray(w) for w in ws], update


def setup_jax(workload, ws, x, y):
    jax, params, update = _jax_parts(ws, x, y)
    state = [params]

    def step():
        value, state[0] = update(state[0])
        return value.block_until_ready()

    return step


def setup_jax_jit(workload, ws, x, y):
    jax, params, update = _jax_parts(ws, x, y)
    fast = jax.jit(update)
    state = [params]

    def step():
        value, state[0] = fast(state[0])
        return value.block_until_ready()

    return step


SETUPS = {"numpy": setup_numpy, "retrograd": setup_retrograd,
          "retrograd-jit": setup_retrograd_jit, "torch": setup_torch,
          "autograd": setup_autograd, "mygrad": setup_mygrad, "tinygrad": setup_tinygrad,
          "jax": setup_jax, "jax-jit": setup_jax_jit}


# ---------------------------------------------------------------- worker

def worker(lib: str, workload: str, threads: str, seconds: float, clock: str = "wall") -> dict:
    """Time one library in this process; returns microseconds per step."""
    now = time.perf_counter if clock == "wall" else time.process_time
    if LIBS[lib][1] == "torch":
        try:
            import torch
        except ImportError as e:
            return {"skip": f"not installed ({e.name})"}
        if threads == "1":
            torch.set_num_threads(1)
    ws, x, y = make_data(workload)
    try:
        step = SETUPS[lib](workload, ws, x, y)
    except ImportError as e:
        return {"skip": f"not installed ({e.name})"}
    first = step()  # compile / warm caches
    t0 = time.perf_counter()
    n = 0
    while time.perf_counter() - t0 < 0.3 * seconds or n < 20:
        step()
        n += 1
    per = (time.perf_counter() - t0) / n
    block = max(10, int(0.1 * seconds / per))  # ~10 repeats in `seconds`
    times = []
    for _ in range(10):
        t = now()
        for _ in range(block):
            last = step()
        times.append((now() - t) / block * 1e6)
    return {"us": statistics.median(times), "repeats": times, "block": block,
            "loss0": float(first.item() if hasattr(first, "item") else 0.0),
            "last": str(type(last).__name__)}


# ---------------------------------------------------------------- driver

def _variants(lib: str, clock: str = "wall") -> list[str]:
    kind = LIBS[lib][1]
    if clock == "cpu":  # CPU time adds up all threads: compare single-threaded runs only
        return ["1"] if kind in ("numpy", "torch") else ["default"]
    return ["default", "1"] if kind in ("numpy", "torch") else ["default"]


def _run_worker(lib, workload, threads, seconds, clock="wall") -> dict:
    env = dict(os.environ)
    if threads == "1" and LIBS[lib][1] == "numpy":
        for v in THREAD_VARS:
            env[v] = "1"
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", lib, workload, threads,
           "--seconds", str(seconds), "--clock", clock]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    except subprocess.TimeoutExpired:
        return {"skip": "timed out"}
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return {"skip": f"failed: {tail[:100]}"}
    return json.loads(lines[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=1.5, help="timed seconds per run")
    ap.add_argument("--workload", choices=["mlp", "cnn", "all"], default="all")
    ap.add_argument("--libs", default=",".join(LIBS), help="comma-separated subset")
    ap.add_argument("--json", default=None, help="also write the raw results here")
    ap.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                    help="wall time (default), or this process's CPU time, which other load "
                         "on the machine disturbs far less (single-threaded runs only)")
    ap.add_argument("--worker", nargs=3, metavar=("LIB", "WORKLOAD", "THREADS"),
                    help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(*args.worker, args.seconds, args.clock)))
        return 0

    libs = [lib for lib in args.libs.split(",") if lib]
    unknown = [lib for lib in libs if lib not in LIBS]
    if unknown:
        ap.error(f"unknown libraries {unknown}; known: {list(LIBS)}")
    workloads = ["mlp", "cnn"] if args.workload == "all" else [args.workload]
    jobs = [(lib, w, t) for w in workloads for lib in libs if w in LIBS[lib][0]
            for t in _variants(lib, args.clock)]
    results: dict = {j: [] for j in jobs}
    losses: dict = {}  # workload -> library -> loss of the first step (all must agree)
    skipped: dict = {}
    for r in range(args.rounds):
        order = jobs[r % len(jobs):] + jobs[:r % len(jobs)]  # rotate: no fixed position
        for job in order:
            if job in skipped:
                continue
            res = _run_worker(*job, args.seconds, args.clock)
            if "skip" in res:
                skipped[job] = res["skip"]
                continue
            results[job].append(res["us"])
            losses.setdefault(job[1], {})[job[0]] = res["loss0"]
        print(f"round {r + 1}/{args.rounds} done", file=sys.stderr, flush=True)

    import platform

    import numpy as np

    print(f"\nPython {platform.python_version()}, NumPy {np.__version__}, "
          f"{os.cpu_count()} CPUs, {args.rounds} rounds x ~{args.seconds:g} s per run, "
          f"{args.clock} clock; median over rounds [min-max]\n")
    table = {}
    for w in workloads:
        best = {}
        for lib in libs:
            if w not in LIBS[lib][0]:
                continue
            cands = [(statistics.median(results[(lib, w, t)]), t, results[(lib, w, t)])
                     for t in _variants(lib, args.clock) if results.get((lib, w, t))]
            if cands:
                best[lib] = min(cands)
        floor = best.get("numpy", (None,))[0]
        torch_t = best.get("torch", (None,))[0]
        print(f"{w.upper()} training step (batch {BATCH}, float32, SGD)")
        print(f"  {'library':<24} {'threads':>8} {'us/step':>9} {'spread':>17} "
              f"{'x floor':>8} {'x torch':>8}")
        for lib in libs:
            if w not in LIBS[lib][0]:
                continue
            if lib not in best:
                reasons = {skipped.get((lib, w, t)) for t in _variants(lib, args.clock)} - {None}
                print(f"  {LABELS[lib]:<24} skipped: {'; '.join(sorted(reasons))}")
                continue
            med, t, runs = best[lib]
            spread = f"{min(runs):.0f}-{max(runs):.0f}"
            rf = f"{med / floor:.2f}" if floor else "-"
            rt = f"{med / torch_t:.2f}" if torch_t else "-"
            print(f"  {LABELS[lib]:<24} {t:>8} {med:>9.1f} {spread:>17} {rf:>8} {rt:>8}")
            table[f"{w}/{lib}"] = {"us": med, "threads": t, "runs": runs}
        first = losses.get(w, {})
        if first:
            spread = max(first.values()) - min(first.values())
            print(f"  first-step loss, all libraries: {min(first.values()):.6f} "
                  f"(max difference {spread:.1e}: {'same' if spread < 1e-4 else 'DIFFERENT'} "
                  "computation)")
        for lib in libs:
            others = [t for t in _variants(lib, args.clock) if lib in best and t != best[lib][1]
                      and results.get((lib, w, t))]
            for t in others:
                print(f"    ({LABELS[lib]} with threads={t}: "
                      f"{statistics.median(results[(lib, w, t)]):.1f} us)")
        print()
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"table": table, "first_step_loss": losses,
                       "skipped": {"/".join(k): v for k, v in skipped.items()},
                       "raw": {"/".join(k): v for k, v in results.items()}}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
