"""Data-parallel training over MPI (`rg.distributed`): throughput and allreduce cost.

    python benchmarks/bench_distributed.py                  # everything, 3 rounds
    python benchmarks/bench_distributed.py --rounds 5 --steps 30 --json out.json
    python benchmarks/bench_distributed.py --parts train     # only the 1-vs-2-rank steps/s

Parts (every rank runs with one BLAS thread; the launcher is the venv's MPICH
`mpiexec`, from the `dist` extra):
  train      steps/second of an MLP 784-1024-1024-10 (float32, ReLU, softmax
             cross-entropy, SGD) at 1 and 2 ranks, gradients averaged by
             DistributedOptimizer, in two ways (`--scaling`):
               strong: a global batch of 512 (2 ranks: 256 rows each), so the
                 speed-up is the ratio of steps/second;
               weak: a batch of 512 on every rank (Horovod's way of measuring,
                 the global batch grows with the ranks), so the speed-up is the
                 ratio of rows/second, 2 x the ratio of steps/second.
             The 1-rank and 2-rank jobs alternate over rounds; the table shows the
             median and spread, the speed-up, and the share of a 2-rank step spent
             in the gradient allreduce (pack, sum, unpack). With `--allreduce
             both` (the default) the 2-rank job runs with each gradient
             allreduce: the shared-memory window (the default on one node) and
             one MPI Allreduce per bucket (`RETROGRAD_ALLREDUCE=mpi`), and once
             with no averaging at all: that row is the ceiling, what two ranks
             gain on this host if communication cost nothing.
  allreduce  time of one in-place float32 Allreduce (SUM) against message size,
             at 2 ranks.
  eight      8 ranks on this machine (MPICH starts more ranks than cores without
             a flag): the raw allreduce curve, and DistributedOptimizer's gradient
             allreduce for the digits MLP of `retrograd train` (64-128-64-10,
             17,226 parameters) and for a 10M-parameter model (two 2500x2000
             layers), bucket_mb=25.
At the end the 2-rank curve is fitted to T = a + bytes / B, and the ring-
allreduce model T(p) = 2(p-1) * alpha + 2(p-1)/p * bytes / beta gives what the
two models' gradient allreduce would cost on 16 nodes for a few interconnects.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve()
MPIEXEC = Path(sys.executable).parent / "mpiexec"
THREAD_VARS = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
LAUNCHER_PREFIXES = ("PMI_", "PMIX_", "OMPI_", "MV2_", "SLURM_", "HYDRA_", "MPI_LOCAL")
GLOBAL_BATCH = 512
SIZES = (784, 1024, 1024, 10)
# Interconnects for the 16-node estimate: (name, alpha = per-message latency in s,
# beta = achieved bandwidth in bytes/s).
NETWORKS = (("10 GbE (TCP)", 30e-6, 1.1e9), ("25 GbE (TCP)", 20e-6, 2.8e9),
            ("100 Gb/s InfiniBand", 2e-6, 11e9))


# ---------------------------------------------------------------- workers (under mpiexec)

def _median_time(fn, repeats: int, comm) -> tuple[float, float]:
    """(median, fastest) wall time of `fn` over `repeats`, all ranks starting together."""
    times = []
    for _ in range(repeats):
        comm.Barrier()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), min(times)


def worker_train(steps: int, weak: bool) -> dict:
    sync_grads = os.environ.get("RETROGRAD_ALLREDUCE") != "none"  # "none": the ceiling
    if not sync_grads:
        os.environ["RETROGRAD_ALLREDUCE"] = "auto"  # not a library setting
    import numpy as np

    import retrograd as rg
    from retrograd import distributed as dist
    from retrograd import nn

    world = dist.init()
    rg.manual_seed(0)
    layers = []
    for a, b in zip(SIZES[:-1], SIZES[1:]):
        layers += [nn.Linear(a, b), nn.ReLU()]
    model = nn.Sequential(*layers[:-1])
    dist.broadcast_parameters(model)
    opt = dist.DistributedOptimizer(rg.optim.SGD(model.parameters(), lr=0.01))
    rng = np.random.default_rng(0)
    batch = GLOBAL_BATCH * (world.size if weak else 1)
    n = batch * 4
    X = rng.random((n, SIZES[0]), dtype=np.float32)
    y = rng.integers(0, SIZES[-1], n)
    loader = rg.data.DataLoader((X, y), batch_size=batch, shuffle=True, seed=0,
                                shard=(world.rank, world.size))
    sync: list[float] = []
    wait = cpu = 0.0
    barrier = world.comm.Barrier if world.size > 1 else (lambda: None)

    def run(k: int) -> None:
        nonlocal wait, cpu
        done = 0
        while done < k:
            for xb, yb in loader:
                c0 = time.process_time()
                opt.zero_grad()
                nn.functional.cross_entropy(model(xb), yb).backward()
                c1 = time.process_time()
                t0 = time.perf_counter()
                barrier()  # waiting for the slower rank, counted apart from the allreduce
                t1 = time.perf_counter()
                if sync_grads:
                    opt.synchronize()
                t2 = time.perf_counter()
                c2 = time.process_time()
                opt.optimizer.step()
                cpu += c1 - c0 + time.process_time() - c2
                sync.append(t2 - t1)
                wait += t1 - t0
                done += 1
                if done == k:
                    return

    run(3)  # warm-up
    sync.clear()
    wait = cpu = 0.0
    barrier()
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    t0 = time.perf_counter()
    run(steps)
    barrier()
    wall = time.perf_counter() - t0
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
    res = {"ranks": world.size, "steps_per_s": steps / wall, "sync_s": statistics.median(sync),
           "sync_min_s": min(sync),
           "wait_s": wait / steps, "cpu_s": cpu / steps, "faults": faults / steps}
    if world.size > 1:  # the slowest rank's compute CPU time bounds the step
        res["cpu_s"] = max(world.comm.allgather(res["cpu_s"]))
    return res


def worker_allreduce(sizes: list[int], repeats: int) -> dict:
    import numpy as np

    from retrograd import distributed as dist

    world = dist.init()
    mpi, comm = world.mpi, world.comm
    out = []
    for nbytes in sizes:
        buf = np.ones(nbytes // 4, dtype=np.float32)
        comm.Allreduce(mpi.IN_PLACE, buf, op=mpi.SUM)  # warm-up
        reps = repeats if nbytes <= 2 ** 20 else max(5, repeats // 4)
        t = _median_time(lambda b=buf: comm.Allreduce(mpi.IN_PLACE, b, op=mpi.SUM), reps, comm)
        out.append((nbytes, *t))
    return {"ranks": world.size, "curve": out}


def worker_models(repeats: int) -> dict:
    import numpy as np

    import retrograd as rg
    from retrograd import distributed as dist
    from retrograd import nn

    world = dist.init()
    models = {
        "digits MLP 64-128-64-10": nn.Sequential(nn.Linear(64, 128), nn.ReLU(),
                                                 nn.Linear(128, 64), nn.ReLU(),
                                                 nn.Linear(64, 10)),
        "10M parameters (2500x2000, 2000x2500)": nn.Sequential(nn.Linear(2000, 2500),
                                                               nn.Linear(2500, 2000)),
    }
    out = {}
    for name, model in models.items():
        params = list(model.parameters())
        for p in params:
            p.grad = rg.Tensor._wrap(np.ones_like(p.data))
        opt = dist.DistributedOptimizer(rg.optim.SGD(params, lr=0.0), bucket_mb=25)
        opt.synchronize()
        numel = sum(p.data.size for p in params)
        med, fastest = _median_time(opt.synchronize, repeats, world.comm)
        out[name] = {"params": numel, "bytes": 4 * numel, "seconds": med, "fastest": fastest}
    return {"ranks": world.size, "models": out}


def worker(args) -> None:
    if args.worker == "train":
        res = worker_train(args.steps, args.weak)
    elif args.worker == "allreduce":
        res = worker_allreduce([int(s) for s in args.sizes.split(",")], args.repeats)
    else:
        res = worker_models(args.repeats)
    from retrograd import distributed as dist
    if dist.rank() == 0:
        print("RESULT " + json.dumps(res), flush=True)


# ---------------------------------------------------------------- driver

ALLREDUCE_NAMES = {"auto": "shared memory", "mpi": "MPI Allreduce",
                   "none": "none (the ceiling: no averaging)"}


def train_table(args, kind: str) -> dict:
    """Run the 1- and 2-rank training jobs alternately and print their table; with
    `--allreduce both`, the 2-rank job once with each gradient allreduce per round."""
    weak = kind == "weak"
    modes = ("auto", "mpi", "none") if args.allreduce == "both" else (args.allreduce,)
    jobs = [(1, "auto")] + [(2, m) for m in modes]
    runs = {job: [] for job in jobs}
    for r in range(args.rounds):
        order = jobs[r % len(jobs):] + jobs[:r % len(jobs)]
        for n, mode in order:
            runs[n, mode].append(launch(n, "train", "--steps", str(args.steps),
                                        *(["--weak"] if weak else []),
                                        RETROGRAD_ALLREDUCE=mode))
    rows = (f"a batch of {GLOBAL_BATCH} on every rank (weak scaling)" if weak
            else f"a global batch of {GLOBAL_BATCH} split over the ranks (strong scaling)")
    print(f"\nMLP {'-'.join(map(str, SIZES))}, float32, {rows}, "
          f"{args.steps} timed steps, {args.rounds} rounds")
    print("| ranks | gradient allreduce | steps/s (median) | min-max | compute CPU s/step "
          "(slowest rank) | waiting for the other rank | gradient allreduce time |")
    print("|---|---|---|---|---|---|---|")
    med, cpu, sync, sync_min = {}, {}, {}, {}
    for job, rs in runs.items():
        sps = [x["steps_per_s"] for x in rs]
        med[job] = statistics.median(sps)
        cpu[job] = statistics.median(x["cpu_s"] for x in rs)
        sync[job] = statistics.median(x["sync_s"] for x in rs)
        sync_min[job] = min(x["sync_min_s"] for x in rs)
        wait = statistics.median(x["wait_s"] for x in rs)
        how = "-" if job[0] == 1 else ALLREDUCE_NAMES[job[1]]
        print(f"| {job[0]} | {how} | {med[job]:.2f} | {min(sps):.2f}-{max(sps):.2f} | "
              f"{cpu[job] * 1e3:.1f} ms | {wait * 1e3:.1f} ms | {sync[job] * 1e3:.2f} ms |")
    rows2 = 2 if weak else 1  # rows per step at 2 ranks, relative to 1 rank
    one = (1, "auto")
    what = "rows/second" if weak else "steps/second"
    out = {"runs": {f"{n}-{m}": rs for (n, m), rs in runs.items()}}
    for mode in modes:
        two = (2, mode)
        best, typical = cpu[two] + sync_min[two], cpu[two] + sync[two]
        print(f"{ALLREDUCE_NAMES[mode]}: from CPU time (what two idle cores would give): "
              f"1 rank {1 / cpu[one]:.2f} steps/s; 2 ranks {1 / typical:.2f} steps/s with the "
              f"median allreduce ({rows2 * cpu[one] / typical:.2f}x), {1 / best:.2f} with the "
              f"fastest ({rows2 * cpu[one] / best:.2f}x)")
        speedups = [rows2 * b["steps_per_s"] / a["steps_per_s"]
                    for a, b in zip(runs[one], runs[two])]
        out[f"speedup_{mode}"] = rows2 * med[two] / med[one]
        print(f"{ALLREDUCE_NAMES[mode]}: speed-up at 2 ranks ({what}): "
              f"{out[f'speedup_{mode}']:.2f}x (per round: "
              f"{', '.join(f'{s:.2f}' for s in speedups)}); target >= 1.7x")
    out["speedup"] = out[f"speedup_{modes[0]}"]
    return out


def launch(n: int, *worker_args: str, timeout: float = 600, **extra_env: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(LAUNCHER_PREFIXES)}
    env.update(THREAD_VARS, **extra_env)
    cmd = [str(MPIEXEC), "-n", str(n), sys.executable, str(HERE), "--worker", *worker_args]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")]
    if r.returncode != 0 or not lines:
        raise RuntimeError(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
    return json.loads(lines[-1][len("RESULT "):])


def fmt_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def fmt_time(t: float) -> str:
    return f"{t * 1e6:.0f} us" if t < 1e-3 else f"{t * 1e3:.2f} ms"


def fit(curve) -> tuple[float, float]:
    """Least squares T = a + bytes / B over the curve's fastest times (relative error)."""
    import numpy as np
    x = np.array([c[0] for c in curve], dtype=float)
    t = np.array([c[2] for c in curve])
    w = 1 / t
    A = np.stack([np.ones_like(x), x], axis=1) * w[:, None]
    a, inv_b = np.linalg.lstsq(A, t * w, rcond=None)[0]
    return max(a, 0.0), 1 / inv_b


def ring(p: int, nbytes: float, alpha: float, beta: float) -> float:
    return 2 * (p - 1) * alpha + 2 * (p - 1) / p * nbytes / beta


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=40)
    ap.add_argument("--parts", default="train,allreduce,eight")
    ap.add_argument("--scaling", choices=("strong", "weak", "both"), default="both",
                    help="train: a global batch of 512 split over the ranks (strong), a "
                         "batch of 512 on every rank (weak), or both")
    ap.add_argument("--weak", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--allreduce", choices=("auto", "mpi", "none", "both"), default="both",
                    help="the 2-rank gradient allreduce: auto (shared memory on one node), "
                         "mpi (one MPI Allreduce per bucket), none (no averaging at all: the "
                         "most two ranks could gain on this host) or both, side by side with "
                         "none")
    ap.add_argument("--json", help="write the raw results here")
    ap.add_argument("--worker", choices=("train", "allreduce", "models"), help=argparse.SUPPRESS)
    ap.add_argument("--sizes", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return worker(args)
    if not MPIEXEC.exists():
        sys.exit(f"no mpiexec at {MPIEXEC}: pip install -e '.[dist]'")
    parts = args.parts.split(",")
    results: dict = {"cpus": os.cpu_count()}
    print(f"rg.distributed benchmark: {os.cpu_count()} CPUs, one BLAS thread per rank, "
          f"MPICH mpiexec at {MPIEXEC}")

    if "train" in parts:
        kinds = ("strong", "weak") if args.scaling == "both" else (args.scaling,)
        for kind in kinds:
            results[f"train_{kind}"] = train_table(args, kind)

    sizes = [2 ** k for k in range(10, 27, 2)]  # 1 KiB .. 64 MiB
    if "allreduce" in parts:
        res = launch(2, "allreduce", "--sizes", ",".join(map(str, sizes)),
                     "--repeats", str(args.repeats))
        results["allreduce2"] = res["curve"]
    if "eight" in parts:
        res8 = launch(8, "allreduce", "--sizes", ",".join(map(str, sizes)),
                      "--repeats", str(max(5, args.repeats // 4)))
        results["allreduce8"] = res8["curve"]
        results["models8"] = launch(8, "models", "--repeats", str(max(5, args.repeats // 4)))
    if "allreduce2" in results or "allreduce8" in results:
        print("\nOne in-place float32 Allreduce (SUM): median (fastest) of the repeats")
        c2 = {c[0]: c[1:] for c in results.get("allreduce2", [])}
        c8 = {c[0]: c[1:] for c in results.get("allreduce8", [])}
        print("| message | 2 ranks | 2 ranks GB/s (bytes/fastest) | 8 ranks (oversubscribed) |")
        print("|---|---|---|---|")
        for s in sizes:
            t2, t8 = c2.get(s), c8.get(s)
            cells = [f"{fmt_time(t2[0])} ({fmt_time(t2[1])})" if t2 else "-",
                     f"{s / t2[1] / 1e9:.2f}" if t2 else "-",
                     f"{fmt_time(t8[0])} ({fmt_time(t8[1])})" if t8 else "-"]
            print(f"| {fmt_bytes(s)} | " + " | ".join(cells) + " |")
    if "models8" in results:
        print("\nDistributedOptimizer gradient allreduce at 8 ranks (pack, Allreduce, unpack)")
        print("| model | parameters | gradient bytes | 8 ranks here: median (fastest) |")
        print("|---|---|---|---|")
        for name, m in results["models8"]["models"].items():
            print(f"| {name} | {m['params']:,} | {fmt_bytes(m['bytes'])} | "
                  f"{fmt_time(m['seconds'])} ({fmt_time(m['fastest'])}) |")
    if "allreduce2" in results:
        a, b = fit(results["allreduce2"])
        results["fit2"] = {"latency_s": a, "bytes_per_s": b}
        print(f"\nfit of the 2-rank curve: T = {fmt_time(a)} + bytes / {b / 1e9:.2f} GB/s "
              "(shared memory)")
        models = results.get("models8", {}).get("models") or {
            "digits MLP 64-128-64-10": {"bytes": 4 * 17226},
            "10M parameters (2500x2000, 2000x2500)": {"bytes": 4 * 10_004_500}}
        print("\nRing allreduce on 16 nodes, T = 2(p-1) alpha + 2(p-1)/p bytes/beta, p = 16")
        nets = [("this machine's shared memory (fit)", a / 2, b)] + list(NETWORKS)
        print("| interconnect | alpha | beta | " +
              " | ".join(models) + " |")
        print("|---|---|---|" + "---|" * len(models))
        for name, alpha, beta in nets:
            cells = [fmt_time(ring(16, m["bytes"], alpha, beta)) for m in models.values()]
            print(f"| {name} | {fmt_time(alpha)} | {beta / 1e9:.1f} GB/s | "
                  + " | ".join(cells) + " |")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
