"""Benchmark: retrograd's scalar ``Value`` against micrograd.

Workloads
  demo   one step of micrograd's demo.ipynb: MLP(2, [16, 16, 1]) on 100 points of
         make_moons(noise=0.1, random_state=1), SVM hinge loss + 1e-4 L2; the step
         is ``total_loss, acc = loss(); model.zero_grad(); total_loss.backward()``
         (timed), then the SGD update (not timed), exactly as the demo loops.
  chain  a chain of 1,000,000 ops, ``y = (y * c).relu()`` repeated, then backward().

Every measurement runs in its own fresh subprocess, and the subprocesses of the
different peers alternate over several rounds, so that no peer profits from a
warm machine or a quiet moment. Step times are the process's CPU time, so other
load on a shared machine does not count; wall time is shown beside them. Each
library runs with the garbage collector on (as people run it) and off (micrograd's
best case; with it off micrograd never frees a graph, see the peak RSS column).

    python benchmarks/bench_value.py              # 5 rounds, 3 timed steps each
    python benchmarks/bench_value.py --rounds 3 --steps 2 --json out.json
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHAIN_OPS = 1_000_000

# (label, library, gc on?) for the demo step
DEMO_RUNS = [
    ("micrograd, gc on", "micrograd", True),
    ("micrograd, gc off", "micrograd", False),
    ("retrograd Value, gc on", "retrograd", True),
    ("retrograd Value, gc off", "retrograd", False),
]


# ---- the demo, written once per library with its own classes -------------------


def value_class(lib: str) -> type:
    """The scalar class of ``lib``."""
    if lib == "micrograd":
        from micrograd.engine import Value
    else:
        sys.path.insert(0, str(ROOT / "src"))
        from retrograd.value import Value
    return Value


def retrograd_mlp(Value: type) -> type:
    """micrograd's nn.py Neuron/Layer/MLP, written over retrograd's Value.

    Same structure and same order of random.uniform calls, so the same seed
    gives the same weights as micrograd.nn.
    """

    class Module:
        def zero_grad(self):
            for p in self.parameters():
                p.grad = 0

    class Neuron(Module):
        def __init__(self, nin, nonlin=True):
            self.w = [Value(random.uniform(-1, 1)) for _ in range(nin)]
            self.b = Value(0)
            self.nonlin = nonlin

        def __call__(self, x):
            act = sum([wi * xi for wi, xi in zip(self.w, x)], self.b)
            return act.relu() if self.nonlin else act

        def parameters(self):
            return self.w + [self.b]

    class Layer(Module):
        def __init__(self, nin, nout, **kwargs):
            self.neurons = [Neuron(nin, **kwargs) for _ in range(nout)]

        def __call__(self, x):
            out = [n(x) for n in self.neurons]
            return out[0] if len(out) == 1 else out

        def parameters(self):
            return [p for n in self.neurons for p in n.parameters()]

    class MLP(Module):
        def __init__(self, nin, nouts):
            sz = [nin] + nouts
            self.layers = [
                Layer(sz[i], sz[i + 1], nonlin=i != len(nouts) - 1) for i in range(len(nouts))
            ]

        def __call__(self, x):
            for layer in self.layers:
                x = layer(x)
            return x

        def parameters(self):
            return [p for layer in self.layers for p in layer.parameters()]

    return MLP


def moons():
    """The demo's data: 100 points of make_moons, labels in {-1, +1}."""
    import numpy as np

    try:
        from sklearn.datasets import make_moons
    except ImportError:  # same shape and cost of work, slightly different points
        rng = np.random.default_rng(1)
        t = np.linspace(0, np.pi, 50)
        X = np.concatenate([np.c_[np.cos(t), np.sin(t)], np.c_[1 - np.cos(t), 0.5 - np.sin(t)]])
        X += rng.normal(scale=0.1, size=X.shape)
        y = np.r_[np.zeros(50, int), np.ones(50, int)]
        return X, y * 2 - 1, "NumPy copy of make_moons (scikit-learn not installed)"
    X, y = make_moons(n_samples=100, noise=0.1, random_state=1)
    return X, y * 2 - 1, "sklearn make_moons"


def demo_worker(lib: str, gc_on: bool, steps: int) -> dict:
    """Run 1 warm-up step and ``steps`` timed steps of the demo loop."""
    X, y, data_note = moons()
    Value = value_class(lib)
    if lib == "micrograd":
        from micrograd.nn import MLP
    else:
        MLP = retrograd_mlp(Value)
    random.seed(1337)
    model = MLP(2, [16, 16, 1])

    def loss():  # micrograd demo.ipynb's loss(), full batch
        inputs = [list(map(Value, xrow)) for xrow in X]
        scores = list(map(model, inputs))
        losses = [(1 + -yi * scorei).relu() for yi, scorei in zip(y, scores)]
        data_loss = sum(losses) * (1.0 / len(losses))
        alpha = 1e-4
        reg_loss = alpha * sum(p * p for p in model.parameters())
        total_loss = data_loss + reg_loss
        accuracy = [(yi > 0) == (scorei.data > 0) for yi, scorei in zip(y, scores)]
        return total_loss, sum(accuracy) / len(accuracy)

    if not gc_on:
        gc.disable()
    forward, backward, wall, losses = [], [], [], []
    cpu = time.process_time
    for k in range(steps + 1):
        w0, t0 = time.perf_counter(), cpu()
        total_loss, acc = loss()
        t1 = cpu()
        model.zero_grad()
        total_loss.backward()
        t2, w2 = cpu(), time.perf_counter()
        if k > 0:  # step 0 is the warm-up
            forward.append(t1 - t0)
            backward.append(t2 - t1)
            wall.append(w2 - w0)
        losses.append(float(total_loss.data))
        learning_rate = 1.0 - 0.9 * k / 100
        for p in model.parameters():
            p.data -= learning_rate * p.grad
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"forward": forward, "backward": backward, "wall": wall, "losses": losses,
            "data": data_note, "peak_rss_mb": rss_mb}


def chain_worker(lib: str) -> dict:
    """Build the 1,000,000-op chain, run backward(), delete it; report what happens."""
    Value = value_class(lib)
    result: dict = {}
    if lib == "micrograd":
        gc.disable()  # building a million micrograd nodes with the GC on takes minutes
        result["note"] = "built with gc off"
    t0 = time.perf_counter()
    x, c = Value(3.0), Value(1.0)
    y = x
    for _ in range(CHAIN_OPS // 2):
        y = (y * c).relu()
    t1 = time.perf_counter()
    result["build_s"] = t1 - t0
    try:
        y.backward()
    except BaseException as e:  # micrograd: RecursionError from its recursive walk
        result["error"] = type(e).__name__
        result["error_after_s"] = time.perf_counter() - t1
        return result
    t2 = time.perf_counter()
    result["backward_s"] = t2 - t1
    result["grad_ok"] = x.grad == 1.0 and c.grad == 3.0 * CHAIN_OPS / 2
    del y
    result["del_s"] = time.perf_counter() - t2
    result["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return result


# ---- the driver ------------------------------------------------------------------


def run_worker(args: list[str], timeout: float) -> dict:
    """Run this file as a worker in a fresh interpreter; its last line is JSON."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", *args]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timeout after {timeout:.0f} s"}
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": f"worker failed (exit {proc.returncode}): {tail}"}
    return json.loads(lines[-1])


def installed(lib: str) -> bool:
    if lib == "retrograd":
        return (ROOT / "src" / "retrograd" / "value.py").exists()
    return importlib.util.find_spec(lib) is not None


def fmt_ms(xs: list[float]) -> str:
    return f"{statistics.median(xs) * 1e3:8.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5, help="subprocesses per peer")
    parser.add_argument("--steps", type=int, default=3, help="timed demo steps per subprocess")
    parser.add_argument("--no-chain", action="store_true", help="skip the 1,000,000-op chain")
    parser.add_argument("--json", type=Path, help="also write the raw results here")
    parser.add_argument("--worker", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.worker:  # inside a subprocess
        kind, lib, *rest = args.worker
        if kind == "demo":
            out = demo_worker(lib, rest[0] == "on", int(rest[1]))
        else:
            out = chain_worker(lib)
        print(json.dumps(out), flush=True)
        os._exit(0)  # skip freeing the heap at exit: not part of what is timed

    print(f"Python {sys.version.split()[0]} on {os.uname().machine}; "
          f"{args.rounds} rounds x {args.steps} timed steps (after 1 warm-up step)")
    runs = []
    for label, lib, gc_on in DEMO_RUNS:
        if installed(lib):
            runs.append((label, lib, gc_on))
        else:
            print(f"skipped {label}: {lib} is not installed (pip install {lib})")

    # per run and subprocess: the median of its timed steps (CPU time, and wall time)
    steps = {label: [] for label, _, _ in runs}
    wall = {label: [] for label, _, _ in runs}
    fwd = {label: [] for label, _, _ in runs}
    bwd = {label: [] for label, _, _ in runs}
    rss = {label: [] for label, _, _ in runs}
    first_loss, data_note, errors = {}, "", {}
    for r in range(args.rounds):
        for label, lib, gc_on in runs:
            res = run_worker(["demo", lib, "on" if gc_on else "off", str(args.steps)], 900)
            if "error" in res:
                errors[label] = res["error"]
                continue
            total = [f + b for f, b in zip(res["forward"], res["backward"])]
            steps[label].append(statistics.median(total))
            wall[label].append(statistics.median(res["wall"]))
            fwd[label].append(statistics.median(res["forward"]))
            bwd[label].append(statistics.median(res["backward"]))
            rss[label].append(res["peak_rss_mb"])
            first_loss[label] = res["losses"][0]
            data_note = res["data"]
        print(f"  round {r + 1}/{args.rounds} done", file=sys.stderr)

    print(f"\nmicrograd demo step: forward + zero_grad + backward, 100 points ({data_note})")
    print("CPU ms of the process (time.process_time), so that other load on the machine")
    print("does not count; wall ms beside it. Median over subprocesses, min-max across them.")
    print(f"Peak RSS: the process's memory high-water mark after {args.steps + 1} steps.")
    print(f"{'peer':26s} {'step ms':>8s} {'min-max ms':>17s} {'wall ms':>8s} {'fwd ms':>8s}"
          f" {'bwd ms':>8s} {'peak RSS MB':>11s} {'loss at step 0':>20s}")
    for label, _, _ in runs:
        if label in errors and not steps[label]:
            print(f"{label:26s} {errors[label]}")
            continue
        xs = steps[label]
        spread = f"{min(xs) * 1e3:7.1f}-{max(xs) * 1e3:7.1f}"
        print(f"{label:26s} {fmt_ms(xs)} {spread:>17s} {fmt_ms(wall[label])} "
              f"{fmt_ms(fwd[label])} {fmt_ms(bwd[label])} {statistics.median(rss[label]):11.0f} "
              f"{first_loss[label]:20.16f}")

    med = {label: statistics.median(xs) for label, xs in steps.items() if xs}
    print("\nratios of median CPU step times (peer / retrograd Value; higher = retrograd faster)")
    for peer, ours in [
        ("micrograd, gc on", "retrograd Value, gc on"),
        ("micrograd, gc off", "retrograd Value, gc on"),
        ("micrograd, gc off", "retrograd Value, gc off"),
    ]:
        if peer in med and ours in med:
            print(f"  {peer:18s} / {ours:24s} {med[peer] / med[ours]:6.1f}x")

    chain = {}
    if not args.no_chain:
        print(f"\nchain of {CHAIN_OPS:,} ops, then backward() and del (one subprocess each)")
        for lib in ("retrograd", "micrograd"):
            if not installed(lib):
                print(f"  skipped {lib}: not installed")
                continue
            res = chain[lib] = run_worker(["chain", lib], 600)
            name = "retrograd Value" if lib == "retrograd" else lib
            if "backward_s" in res:
                print(f"  {name:16s} build {res['build_s']:.2f} s, "
                      f"backward {res['backward_s']:.2f} s, del {res['del_s']:.2f} s, gradients "
                      f"{'right' if res['grad_ok'] else 'WRONG'}, peak RSS "
                      f"{res['peak_rss_mb']:.0f} MB")
            elif "build_s" in res:
                print(f"  {name:16s} build {res['build_s']:.2f} s ({res.get('note', '')}), "
                      f"backward raised {res['error']} after {res['error_after_s']:.3f} s")
            else:
                print(f"  {name:16s} {res['error']}")

    if args.json:
        args.json.write_text(json.dumps(
            {"steps_cpu_s": steps, "steps_wall_s": wall, "forward_cpu_s": fwd,
             "backward_cpu_s": bwd, "peak_rss_mb": rss, "first_loss": first_loss,
             "errors": errors, "chain": chain},
            indent=1))


if __name__ == "__main__":
    main()
