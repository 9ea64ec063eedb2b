"""Layer forward+backward time: retrograd beside PyTorch eager and a hand-written NumPy
forward/backward of the same computation (the floor), in one run.

    python benchmarks/bench_layers.py                       # all workloads, 3 rounds
    python benchmarks/bench_layers.py --only conv2d,sdpa --rounds 5 --clock cpu

Workloads (float32, one forward and one backward of sum(out * seed), where seed is a fixed
dense random array of out's shape, the same for every library: a cotangent a real
network would send, so that no library's shortcut for sum()'s broadcast ones counts):
  conv1d            N=32, C 16->32, L=1024, k=3, padding 1, bias
  conv2d            N=32, C 16->32, 32x32, k=3, padding 1, bias
  conv_transpose2d  N=32, C 32->16, 16x16 -> 32x32, k=3, stride 2, padding 1, output_padding 1
  sdpa              scaled_dot_product_attention, B=32, H=4, T=64, D=16
  layer_norm        (2048, 256) over the last dimension, affine (if F.layer_norm exists)
  lstm              one layer, 64 steps, batch 32, 32 -> 64 (if nn.LSTM exists)

Every (library, threads) pair runs in its own subprocess, the order rotating from
round to round. PyTorch runs with torch.set_num_threads(1) and (2); NumPy-based runs
(retrograd, the floor) with one BLAS thread and with the BLAS default. The table
gives each library's best setting, and the ratios the targets are stated in:
retrograd / PyTorch (best threads) and retrograd / NumPy floor (best threads).
rg-numpy is retrograd with its compiled kernels off (RETROGRAD_KERNELS=numpy): the
NumPy-only number; retrograd is as installed (Numba kernels with the `fast` extra).
`--clock cpu` times process CPU time (single-threaded variants only): steadier on a
busy machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

WORKLOADS = ("conv1d", "conv2d", "conv_transpose2d", "sdpa", "layer_norm", "lstm")
LIBS = ("numpy", "rg-numpy", "retrograd", "torch")
"""rg-numpy: retrograd with its compiled kernels off (RETROGRAD_KERNELS=numpy), NumPy only;
retrograd: as installed (with the `fast` extra, Numba's kernels where it has them)."""
THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def make_data(workload: str) -> dict:
    import numpy as np
    rng = np.random.default_rng(0)

    def r(*shape, scale=1.0):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    if workload == "conv1d":
        d = dict(x=r(32, 16, 1024), w=r(32, 16, 3, scale=0.1), b=r(32))
    elif workload == "conv2d":
        d = dict(x=r(32, 16, 32, 32), w=r(32, 16, 3, 3, scale=0.1), b=r(32))
    elif workload == "conv_transpose2d":
        d = dict(x=r(32, 32, 16, 16), w=r(32, 16, 3, 3, scale=0.1), b=r(16))
    elif workload == "sdpa":
        d = dict(q=r(32, 4, 64, 16), k=r(32, 4, 64, 16), v=r(32, 4, 64, 16))
    elif workload == "layer_norm":
        d = dict(x=r(2048, 256), w=r(256), b=r(256))
    else:
        d = dict(x=r(64, 32, 32), h0=r(32, 64) * 0, c0=r(32, 64) * 0, wih=r(256, 32, scale=0.1),
                 whh=r(256, 64, scale=0.1), bih=r(256, scale=0.1), bhh=r(256, scale=0.1))
    return d


# ---------------------------------------------------------------- NumPy floors

def _np_windows(x, k, pad):
    import numpy as np
    if pad:
        x = np.pad(x, ((0, 0), (0, 0)) + ((pad, pad),) * (x.ndim - 2))
    nd = x.ndim - 2
    outs = tuple(n - k + 1 for n in x.shape[2:])
    s = x.strides
    return np.lib.stride_tricks.as_strided(
        x, x.shape[:2] + (k,) * nd + outs, s[:2] + s[2:] + s[2:], writeable=False)


def _np_col2im(gcols, shape, k, stride, pad):
    """gcols (N, C, *k, *O) added back onto (N, C, *shape) padded by `pad`, stride `stride`."""
    import itertools

    import numpy as np
    nd = len(shape) - 2
    outs = gcols.shape[-nd:]
    z = np.zeros(shape[:2] + tuple(n + 2 * pad for n in shape[2:]), gcols.dtype)
    for off in itertools.product(range(k), repeat=nd):
        sl = tuple(slice(o, o + stride * (n - 1) + 1, stride) for o, n in zip(off, outs))
        z[(Ellipsis,) + sl] += gcols[(slice(None), slice(None)) + off]
    return z[(Ellipsis,) + (slice(pad, -pad or None),) * nd] if pad else z


def numpy_step(workload: str, d: dict):
    """A hand-written forward and backward, for the floor."""
    import numpy as np

    if workload in ("conv1d", "conv2d"):
        x, w, b = d["x"], d["w"], d["b"]
        nd = x.ndim - 2
        n, c = x.shape[:2]
        o, k = w.shape[0], w.shape[2]
        kk = k ** nd
        seed = cotangent((n, o) + x.shape[2:])

        def step():
            win = _np_windows(x, k, 1)                        # (N, C, *k, *O)
            outs = win.shape[2 + nd:]
            perm = (1,) + tuple(range(2, 2 + nd)) + (0,) + tuple(range(2 + nd, 2 + 2 * nd))
            cols = win.transpose(perm).reshape(c * kk, -1)    # (C*K, N*P)
            out = w.reshape(o, -1) @ cols                     # (O, N*P)
            y = out.reshape((o, n) + outs).swapaxes(0, 1) + b.reshape((1, o) + (1,) * nd)
            g = seed.swapaxes(0, 1).reshape(o, -1)
            gw = (g @ cols.T).reshape(w.shape)
            gb = g.sum(1)
            gcols = (w.reshape(o, -1).T @ g).reshape((c,) + (k,) * nd + (n,) + outs)
            inv = (1 + nd, 0) + tuple(range(1, 1 + nd)) + tuple(range(2 + nd, 2 + 2 * nd))
            gx = _np_col2im(gcols.transpose(inv), x.shape, k, 1, 1)
            return y, gx, gw, gb
        return step

    if workload == "conv_transpose2d":
        x, w, b = d["x"], d["w"], d["b"]
        n, c, h, wd = x.shape
        o, k = w.shape[1], w.shape[2]
        oh = (h - 1) * 2 - 2 + k + 1
        seed = cotangent((n, o, oh, oh))

        def step():
            xs = x.transpose(1, 0, 2, 3).reshape(c, -1)                 # (C, N*P)
            cols = w.reshape(c, -1).T @ xs                              # (O*K, N*P)
            cols = cols.reshape(o, k, k, n, h, wd).transpose(3, 0, 1, 2, 4, 5)
            y = _np_col2im(cols, (n, o, oh, oh), k, 2, 1) + b.reshape(1, o, 1, 1)
            gp = np.pad(seed, ((0, 0), (0, 0), (1, 1), (1, 1)))
            s = gp.strides  # the adjoint of the fold: windows of the padded cotangent
            gwin = np.lib.stride_tricks.as_strided(
                gp, (n, o, k, k, h, wd), s[:2] + s[2:] + (s[2] * 2, s[3] * 2), writeable=False)
            gcols = gwin.transpose(1, 2, 3, 0, 4, 5).reshape(o * k * k, -1)
            gx = (w.reshape(c, -1) @ gcols).reshape(c, n, h, wd).transpose(1, 0, 2, 3)
            gw = (xs @ gcols.T).reshape(w.shape)
            gb = seed.sum((0, 2, 3))
            return y, gx, gw, gb
        return step

    if workload == "sdpa":
        q, k, v = d["q"], d["k"], d["v"]
        scale = np.float32(1 / np.sqrt(q.shape[-1]))
        go = cotangent(q.shape)

        def step():
            s = (q * scale) @ k.swapaxes(-1, -2)
            s -= s.max(-1, keepdims=True)
            p = np.exp(s)
            p /= p.sum(-1, keepdims=True)
            out = p @ v
            dv = p.swapaxes(-1, -2) @ go
            dp = go @ v.swapaxes(-1, -2)
            ds = p * (dp - (dp * p).sum(-1, keepdims=True))
            dq = (ds @ k) * scale
            dk = (ds.swapaxes(-1, -2) @ q) * scale
            return out, dq, dk, dv
        return step

    if workload == "layer_norm":
        x, w, b = d["x"], d["w"], d["b"]
        gy = cotangent(x.shape)

        def step():
            mu = x.mean(-1, keepdims=True)
            xc = x - mu
            rstd = 1 / np.sqrt((xc * xc).mean(-1, keepdims=True) + 1e-5)
            xhat = xc * rstd
            y = xhat * w + b
            gw = (gy * xhat).sum(0)
            gb = gy.sum(0)
            gxh = gy * w
            gx = rstd * (gxh - gxh.mean(-1, keepdims=True)
                         - xhat * (gxh * xhat).mean(-1, keepdims=True))
            return y, gx, gw, gb
        return step

    x, h0, c0 = d["x"], d["h0"], d["c0"]
    wih, whh, bias = d["wih"], d["whh"], d["bih"] + d["bhh"]
    T, H = x.shape[0], h0.shape[1]

    def sig(a):
        return 1 / (1 + np.exp(-a))

    seed = cotangent((T,) + h0.shape)

    def step():
        xw = x @ wih.T + bias                              # (T, N, 4H) at once
        h, c = h0, c0
        hs, cs, acts = [], [], []
        for t in range(T):
            g = xw[t] + h @ whh.T
            i, f, gg, o = sig(g[:, :H]), sig(g[:, H:2 * H]), np.tanh(g[:, 2 * H:3 * H]), \
                sig(g[:, 3 * H:])
            cs.append(c)
            hs.append(h)
            c = f * c + i * gg
            tc = np.tanh(c)
            h = o * tc
            acts.append((i, f, gg, o, tc))
        gh = np.zeros_like(h)
        gc = np.zeros_like(c)
        gxw = np.empty_like(xw)
        gwhh = np.zeros_like(whh)
        for t in reversed(range(T)):
            i, f, gg, o, tc = acts[t]
            gh = gh + seed[t]                                # d sum(h_t * seed_t)
            go = gh * tc
            gc = gc + gh * o * (1 - tc * tc)
            gi, gf, ggg = gc * gg, gc * cs[t], gc * i
            gc = gc * f
            ga = np.concatenate([gi * i * (1 - i), gf * f * (1 - f), ggg * (1 - gg * gg),
                                 go * o * (1 - o)], 1)
            gxw[t] = ga
            gwhh += ga.T @ hs[t]
            gh = ga @ whh
        gflat = gxw.reshape(-1, 4 * H)
        gwih = gflat.T @ x.reshape(-1, x.shape[-1])
        gx = (gflat @ wih).reshape(x.shape)
        return h, gx, gwih, gwhh, gflat.sum(0)
    return step


# ---------------------------------------------------------------- retrograd, torch

def cotangent(shape: tuple):
    """The backward's seed: fixed dense random float32 of `shape`, the same everywhere."""
    import numpy as np

    return np.random.default_rng(7).standard_normal(shape).astype(np.float32)


def lib_step(lib: str, workload: str, d: dict):
    """One forward and backward through the library's own functional API (None: missing)."""
    if lib in ("retrograd", "rg-numpy"):
        import retrograd as m
        import retrograd.nn as nn
        import retrograd.nn.functional as F

        def leaf(a):
            return m.tensor(a, requires_grad=True)
    else:
        import torch as m
        import torch.nn as nn
        import torch.nn.functional as F

        def leaf(a):
            return m.tensor(a, requires_grad=True)

    t = {k: leaf(v) for k, v in d.items()}
    if workload == "conv1d":
        def fwd():
            return F.conv1d(t["x"], t["w"], t["b"], padding=1)
    elif workload == "conv2d":
        def fwd():
            return F.conv2d(t["x"], t["w"], t["b"], padding=1)
    elif workload == "conv_transpose2d":
        def fwd():
            return F.conv_transpose2d(t["x"], t["w"], t["b"], stride=2, padding=1,
                                      output_padding=1)
    elif workload == "sdpa":
        def fwd():
            return F.scaled_dot_product_attention(t["q"], t["k"], t["v"])
    elif workload == "layer_norm":
        if not hasattr(F, "layer_norm"):
            return None

        def fwd():
            return F.layer_norm(t["x"], (256,), t["w"], t["b"])
    else:
        if not hasattr(nn, "LSTM"):
            return None
        lstm = nn.LSTM(32, 64)
        for name in ("weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"):
            key = {"weight_ih_l0": "wih", "weight_hh_l0": "whh", "bias_ih_l0": "bih",
                   "bias_hh_l0": "bhh"}[name]
            getattr(lstm, name).data[...] = m.tensor(d[key]) if lib == "torch" else d[key]

        def fwd():
            return lstm(t["x"])[0]

    seeds = []

    def step():
        for v in t.values():
            v.grad = None
        out = fwd()
        if not seeds:
            seeds.append(m.tensor(cotangent(tuple(out.shape))))
        out.backward(seeds[0])
        return out
    return step


# ---------------------------------------------------------------- worker and driver

def worker(lib: str, workload: str, threads: str, seconds: float, clock: str) -> dict:
    now = time.perf_counter if clock == "wall" else time.process_time
    if lib == "torch":
        import torch
        torch.set_num_threads(int(threads))
    if lib == "numpy":  # the same glibc setting retrograd applies at import (keep freed
        from retrograd._allocator import keep_freed_memory  # large blocks): a fair floor
        keep_freed_memory()
    d = make_data(workload)
    step = numpy_step(workload, d) if lib == "numpy" else lib_step(lib, workload, d)
    if step is None:
        return {"skip": "not in this library yet"}
    step()
    t0 = time.perf_counter()
    n = 0
    while time.perf_counter() - t0 < 0.3 * seconds or n < 3:
        step()
        n += 1
    per = (time.perf_counter() - t0) / n
    block = max(1, int(0.1 * seconds / per))
    times = []
    for _ in range(7):
        t = now()
        for _ in range(block):
            step()
        times.append((now() - t) / block * 1e6)
    return {"us": statistics.median(times)}


def _variants(lib: str, clock: str) -> list[str]:
    if clock == "cpu":
        return ["1"]
    return ["1", "2"] if lib == "torch" else ["1", "default"]


def _run(lib, workload, threads, seconds, clock) -> dict:
    env = dict(os.environ)
    if lib != "torch" and threads == "1":
        for v in THREAD_VARS:
            env[v] = "1"
    if lib == "rg-numpy":
        env["RETROGRAD_KERNELS"] = "numpy"
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", lib, workload, threads,
           "--seconds", str(seconds), "--clock", clock]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    if r.returncode:
        return {"skip": "failed: " + (r.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(r.stdout.strip().splitlines()[-1])


def _kernels_mode() -> str:
    code = "from retrograd import kernels; print(kernels.mode())"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    return r.stdout.strip() or "? (" + r.stderr.strip()[-200:] + ")"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=1.5)
    ap.add_argument("--only", default=",".join(WORKLOADS))
    ap.add_argument("--clock", choices=["wall", "cpu"], default="wall")
    ap.add_argument("--worker", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(worker(*args.worker, args.seconds, args.clock)))
        return
    workloads = [w for w in args.only.split(",") if w]
    jobs = [(lib, w, t) for w in workloads for lib in LIBS for t in _variants(lib, args.clock)]
    results: dict = {}
    skipped: dict = {}
    for r in range(args.rounds):
        for job in jobs[r % len(jobs):] + jobs[:r % len(jobs)]:
            res = _run(*job, args.seconds, args.clock)
            if "skip" in res:
                skipped[job] = res["skip"]
            else:
                results.setdefault(job, []).append(res["us"])
        print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
    print(f"\n{args.clock} clock, median over {args.rounds} rounds, us per forward+backward; "
          f"each library at its best thread setting (threads in brackets)\n")
    print(f"  {'workload':<17} {'NumPy floor':>15} {'rg NumPy only':>15} {'retrograd':>15} "
          f"{'PyTorch':>15} {'x torch':>8} {'x floor':>8} {'NumPy-only x torch':>19}")
    for w in workloads:
        best = {}
        for lib in LIBS:
            meds = [(statistics.median(results[(lib, w, t)]), t)
                    for t in _variants(lib, args.clock) if (lib, w, t) in results]
            if meds:
                best[lib] = min(meds)
        if "retrograd" not in best:
            why = {skipped.get(("retrograd", w, t)) for t in _variants("retrograd", args.clock)}
            print(f"  {w:<17} skipped: {', '.join(sorted(s for s in why if s))}")
            continue
        cells = [f"{best[lib][0]:9.0f} [{best[lib][1]:>3}]" if lib in best else f"{'-':>15}"
                 for lib in LIBS]

        def ratio(a, b, width=8, best=best):
            return f"{best[a][0] / best[b][0]:{width}.2f}" if a in best and b in best \
                else f"{'-':>{width}}"
        print(f"  {w:<17} {' '.join(cells)} {ratio('retrograd', 'torch')} "
              f"{ratio('retrograd', 'numpy')} {ratio('rg-numpy', 'torch', 19)}")
    print(f"\n  kernels as installed: {_kernels_mode()}")
    print("\n  targets: x torch <= 1.5, x floor <= 2")


if __name__ == "__main__":
    main()
