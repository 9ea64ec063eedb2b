"""The names transformer trained in PyTorch and in retrograd, side by side in one run.

    python benchmarks/bench_names.py                      # 600 steps, evaluations every 100
    python benchmarks/bench_names.py --steps 300 --eval-every 50 --json out.json

The model is `retrograd.models.names.Transformer` at its default sizes (4
layers, 4 heads, 64 channels, context 16) and its twin written with torch.nn
under the same parameter names; the torch twin is loaded with retrograd's
initial weights. Every variant trains on the same batches (batch 64, AdamW
betas (0.9, 0.99), weight decay 0.01, the CLI's learning rate and its tenfold
cut after 80% of the steps):

    torch-1t    PyTorch eager, torch.set_num_threads(1)
    torch-2t    PyTorch eager, torch.set_num_threads(2)
    rg          retrograd eager, one thread (BLAS and its intra-op threads)
    rg-jit      retrograd, the whole step under rg.jit, one thread
    rg-2t, rg-jit-2t   the same at two threads (BLAS and retrograd's own)
    rg-numpy, rg-jit-numpy   one thread with the compiled kernels off (NumPy only; the
                other rg variants use Numba's kernels where the `fast` extra is installed)

The steps run in blocks, the variants taking turns block by block (the order
rotating), so that a change of load on a shared machine falls on all of them.
Per variant it reports the median time per step over blocks, wall and CPU
(process time: all of the process's threads), each against the best PyTorch
variant, and the test loss (nats per character, the whole test split) at every
evaluation; retrograd's curves are compared with PyTorch's (1 thread) against the
0.02-nat tolerance.

Mix one-thread and two-thread variants in one run with care: after a two-thread
block, the idle BLAS and OpenMP threads of that library keep spinning for a while and
are charged to (and slow) the next variant in the process, so torch-1t's CPU time
read 35 ms beside torch-2t and 25 ms alone. Compare one-thread variants with
`--variants torch-1t,rg,rg-jit`, and time two-thread variants one per process:
`--processes R` runs each listed variant alone in a fresh process, the variants taking
turns for R rounds, and reports each against the best PyTorch time of the same round.

Measured on the 2-core Zen 5 host (AVX-512; NumPy's OpenBLAS held to its AVX2 kernels
by the environment's OPENBLAS_CORETYPE=Haswell, while PyTorch's CPU kernels use
AVX-512), quiet: `--variants torch-1t,rg,rg-jit` twice gave torch-1t 25.8 and 24.2 ms
per step, rg 0.78x and 0.78x, rg-jit 0.72x and 0.72x. Two threads, one variant per
run, twice each: torch-2t 17.5 and 21.2 ms, rg-2t 17.0 and 13.9, rg-jit-2t 13.6 and
13.2 (the host's speed drifts between runs; in one run beside each other torch-2t
took 17.3, rg-2t 15.6, rg-jit-2t 13.8). All curves are equal to 4 decimals at every
evaluation (3.4688 at step 0, 2.1954 at step 200). About two thirds of retrograd's
one-thread step is the linear layers' matrix products, which NumPy's BLAS runs at
PyTorch's speed or faster (1024x64 by 64x256: 282 us against 331).

On a 2-core AVX2 EPYC host (no AVX-512; 2026-12-03, quiet), one process per variant:
`--variants torch-1t,rg,rg-jit --processes 3` gave torch-1t 37.6 / 41.8 / 41.5 ms, rg
0.77x and rg-jit 0.72x (paired medians; in one process: torch-1t 42.3 ms, rg 0.78x, rg-jit
0.70x); `--variants torch-2t,rg-2t,rg-jit-2t --processes 5` gave torch-2t 39.6 / 31.5 /
37.4 / 31.4 / 24.8 ms, rg-2t 0.96x and rg-jit-2t 0.93x. Timed line by line, the jitted
step's linear layers (forward and both products of the backward) are 60% of it at one
thread and gain 1.42x from a second; attention, GELU, layer norm and Adam (about 8 ms)
do not split at these sizes.

Again on an AVX2 EPYC host (2026-12-04, while other work ran now and then), one process
per variant, 100 steps, 3 rounds: `--variants torch-2t,rg-2t,rg-jit-2t` gave torch-2t
25.7 / 33.9 / 34.9 and 32.6 / 28.2 / 27.0 ms, rg-2t 0.96x and 0.93x, rg-jit-2t 0.87x and
0.80x; `--variants torch-1t,torch-2t,rg-jit,rg-jit-2t` gave torch-1t 45.4, torch-2t 27.0,
rg-jit 32.8 (0.72x of torch-1t) and rg-jit-2t 27.3 ms (0.90x of torch-2t): PyTorch gains
1.7x from a second thread, retrograd's jitted step 1.2-1.6x. NumPy's and PyTorch's
products take the same time per shape at one thread (1024x64 by 64x256: 437 against 427
us). A fused attention kernel in Numba (per head: scores, softmax, product) ran 2.4x
slower than the NumPy path here (LLVM leaves 16-long loops unvectorised), so it was not
kept.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import time

import numpy as np
import torch
from threadpoolctl import threadpool_limits

import retrograd as rg
from retrograd import kernels
from retrograd.models import names as M

BATCH, LR, BETAS, WD, DECAY_AT = 64, 2e-3, (0.9, 0.99), 0.01, 0.8
TOL = 0.02


# ---------------------------------------------------------------- the torch twin

class TorchBlock(torch.nn.Module):
    def __init__(self, n_embd: int, n_head: int) -> None:
        super().__init__()
        T = torch.nn
        self.n_head = n_head
        self.ln1 = T.LayerNorm(n_embd)
        self.attn = T.Module()
        self.attn.qkv = T.Linear(n_embd, 3 * n_embd)
        self.attn.proj = T.Linear(n_embd, n_embd)
        self.ln2 = T.LayerNorm(n_embd)
        self.fc = T.Linear(n_embd, 4 * n_embd)
        self.fc2 = T.Linear(4 * n_embd, n_embd)

    def forward(self, x):
        F = torch.nn.functional
        B, T, C = x.shape
        H = self.n_head
        q, k, v = self.attn.qkv(self.ln1(x)).split(C, dim=2)
        q, k, v = (t.reshape(B, T, H, C // H).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.attn.proj(y.transpose(1, 2).reshape(B, T, C))
        return x + self.fc2(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class TorchTransformer(torch.nn.Module):
    def __init__(self, vocab_size: int, context: int, n_layer: int = 4, n_head: int = 4,
                 n_embd: int = 64) -> None:
        super().__init__()
        T = torch.nn
        self.wte = T.Embedding(vocab_size, n_embd)
        self.wpe = T.Embedding(context, n_embd)
        self.blocks = T.ModuleList([TorchBlock(n_embd, n_head) for _ in range(n_layer)])
        self.ln_f = T.LayerNorm(n_embd)
        self.head = T.Linear(n_embd, vocab_size, bias=False)

    def forward(self, idx):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1]))
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))


# ---------------------------------------------------------------- variants

class Variant:
    """One way of training: `step(xb, yb) -> loss`, `test_loss()`, thread settings."""

    def __init__(self, name: str, step, test_loss, set_lr, threads: int) -> None:
        self.name, self.step, self.test_loss, self.set_lr = name, step, test_loss, set_lr
        self.threads = threads
        self.wall: list[float] = []
        self.cpu: list[float] = []
        self.curve: list[tuple[int, float]] = []
        self.train: list[float] = []


def torch_variant(name, threads, state, V, context, Xte, Yte) -> Variant:
    torch.set_num_threads(threads)
    model = TorchTransformer(V, context)
    model.load_state_dict({k: torch.tensor(v) for k, v in state.items()})
    opt = torch.optim.AdamW(model.parameters(), lr=LR, betas=BETAS, weight_decay=WD)
    F = torch.nn.functional

    def loss_of(x, y):
        logits = model(x)
        return F.cross_entropy(logits.reshape(-1, V), y.reshape(-1), ignore_index=-1)

    def step(xb, yb):
        loss = loss_of(torch.from_numpy(xb), torch.from_numpy(yb))
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss.item()

    def test_loss():
        with torch.no_grad():
            logits = model(torch.from_numpy(Xte))
            return float(F.cross_entropy(logits.reshape(-1, V), torch.from_numpy(Yte)
                                         .reshape(-1), ignore_index=-1))

    def set_lr(lr):
        for g in opt.param_groups:
            g["lr"] = lr

    return Variant(name, step, test_loss, set_lr, threads)


def rg_variant(name, use_jit, state, V, context, Xte, Yte, kernels_mode=None,
               threads=1) -> Variant:
    model = M.Transformer(V, context)
    model.load_state_dict({k: rg.tensor(v) for k, v in state.items()})
    opt = rg.optim.AdamW(model.parameters(), lr=LR, betas=BETAS, weight_decay=WD)

    def train_step(x, y):
        loss = M.loss(model, x, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    fn = rg.jit(train_step) if use_jit else train_step

    def mode():  # kernels_mode ("numpy": compiled kernels off) for this variant's calls
        return kernels.use(kernels_mode) if kernels_mode else contextlib.nullcontext()

    def step(xb, yb):
        with mode():
            return float(fn(rg.tensor(xb), rg.tensor(yb)).item())

    def test_loss():
        with mode(), rg.no_grad():
            return float(M.loss(model, rg.tensor(Xte), rg.tensor(Yte)).item())

    def set_lr(lr):
        for g in opt.param_groups:
            g["lr"] = lr

    return Variant(name, step, test_loss, set_lr, threads)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--eval-every", type=int, default=100)
    ap.add_argument("--block", type=int, default=10, help="steps per timed block")
    ap.add_argument("--variants", default="torch-1t,torch-2t,rg,rg-jit")
    ap.add_argument("--json", default=None)
    ap.add_argument("--processes", type=int, default=0, metavar="R",
                    help="time each variant alone in its own process, R rounds taking turns")
    args = ap.parse_args(argv)
    if args.processes:
        return alternate(args)

    items = M.read_items(M.default_data())
    vocab = M.Vocabulary.of(items)
    context = max(map(len, items)) + 1
    train, test = M.split(items)
    Xtr, Ytr = M.encode(train, vocab, context)
    Xte, Yte = M.encode(test, vocab, context)
    V = len(vocab)
    rg.manual_seed(0)
    state = {k: v.numpy().copy() for k, v in M.Transformer(V, context).state_dict().items()}

    makers = {
        "torch-1t": lambda: torch_variant("torch-1t", 1, state, V, context, Xte, Yte),
        "torch-2t": lambda: torch_variant("torch-2t", 2, state, V, context, Xte, Yte),
        "rg": lambda: rg_variant("rg", False, state, V, context, Xte, Yte),
        "rg-jit": lambda: rg_variant("rg-jit", True, state, V, context, Xte, Yte),
        "rg-numpy": lambda: rg_variant("rg-numpy", False, state, V, context, Xte, Yte,
                                       "numpy"),
        "rg-jit-numpy": lambda: rg_variant("rg-jit-numpy", True, state, V, context, Xte, Yte,
                                           "numpy"),
        "rg-2t": lambda: rg_variant("rg-2t", False, state, V, context, Xte, Yte, threads=2),
        "rg-jit-2t": lambda: rg_variant("rg-jit-2t", True, state, V, context, Xte, Yte,
                                        threads=2),
    }
    variants = [makers[n]() for n in args.variants.split(",")]
    rng = np.random.default_rng(1)
    batches = [rng.integers(0, len(Xtr), BATCH) for _ in range(args.steps)]
    decay_at = round(DECAY_AT * args.steps)
    def use_threads(v):  # each variant's thread count, for torch, BLAS and rg's own threads
        torch.set_num_threads(v.threads)
        rg.set_num_threads(v.threads)
        threadpool_limits(v.threads, user_api="blas")

    with threadpool_limits(1, user_api="blas"):
        for v in variants:  # the initial test loss, and warm-up (first calls, jit traces)
            use_threads(v)
            v.curve.append((0, v.test_loss()))
        for start in range(0, args.steps, args.block):
            stop = min(start + args.block, args.steps)
            k = start // args.block
            for v in variants[k % len(variants):] + variants[:k % len(variants)]:
                use_threads(v)
                t0, c0 = time.perf_counter(), time.process_time()
                for s in range(start, stop):
                    v.set_lr(LR if s < decay_at else LR * 0.1)
                    ix = batches[s]
                    v.train.append(v.step(Xtr[ix], Ytr[ix]))
                if start > 0:  # the first block holds the eager first calls and the traces
                    v.wall.append((time.perf_counter() - t0) / (stop - start))
                    v.cpu.append((time.process_time() - c0) / (stop - start))
            if stop % args.eval_every == 0 or stop == args.steps:
                for v in variants:
                    use_threads(v)
                    v.curve.append((stop, v.test_loss()))
                print(f"step {stop}: " + "  ".join(f"{v.name} {v.curve[-1][1]:.4f}"
                                                   for v in variants), file=sys.stderr)
    report(variants, args)
    return 0


def alternate(args) -> int:
    """Each variant alone in a fresh process, the variants taking turns for R rounds.

    No variant shares a process with another (so no spinning threads are charged across),
    and a change of load on the host falls on neighbouring runs alike: per round, each
    variant's time is divided by the best PyTorch time of the same round, and the median
    of those paired ratios is reported.
    """
    import subprocess
    import tempfile

    names = args.variants.split(",")
    runs: dict[str, list[float]] = {n: [] for n in names}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.processes):
            for n in names[r % len(names):] + names[:r % len(names)]:
                out = f"{tmp}/{n}-{r}.json"
                subprocess.run([sys.executable, __file__, "--variants", n, "--steps",
                                str(args.steps), "--eval-every", str(args.steps), "--block",
                                str(args.block), "--json", out], check=True,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                with open(out) as f:
                    runs[n].append(json.load(f)["ms_per_step"][n][0])
            print(f"round {r + 1}: " + "  ".join(f"{n} {runs[n][-1]:.1f}" for n in names),
                  file=sys.stderr)
    torch_names = [n for n in names if n.startswith("torch")]
    print(f"\n{args.processes} rounds, one process per variant and round, {args.steps} steps "
          "each; wall ms per step (median over blocks of the run):")
    print(f"{'variant':12} " + " ".join(f"{f'round {r + 1}':>9}" for r in range(args.processes))
          + f" {'median':>8} {'/ best torch, paired':>21}")
    for n in names:
        paired = [runs[n][r] / min(runs[t][r] for t in torch_names)
                  for r in range(args.processes)] if torch_names else []
        ratio = f"{statistics.median(paired):.2f}x" if paired else "-"
        print(f"{n:12} " + " ".join(f"{t:9.1f}" for t in runs[n])
              + f" {statistics.median(runs[n]):8.1f} {ratio:>21}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"steps": args.steps, "rounds": runs}, f, indent=2)
    return 0


def report(variants: list[Variant], args) -> None:
    ms = {v.name: (1e3 * statistics.median(v.wall), 1e3 * statistics.median(v.cpu))
          for v in variants}
    torch_names = [v.name for v in variants if v.name.startswith("torch")]
    best_torch = min(torch_names, key=lambda n: ms[n][1]) if torch_names else None
    best_wall = min(torch_names, key=lambda n: ms[n][0]) if torch_names else None
    print(f"\ncompiled kernels as installed: {kernels.mode()}")
    print(f"names transformer (4 layers, 4 heads, 64 channels, context 16), batch {BATCH}, "
          f"{args.steps} steps; per step, median over blocks of {args.block}:")
    print(f"{'variant':12} {'wall ms':>9} {'cpu ms':>9} {'cpu / best torch':>17} "
          f"{'wall / best torch':>18}")
    for v in variants:
        wall, cpu = ms[v.name]
        ratio = f"{cpu / ms[best_torch][1]:.2f}x" if best_torch else "-"
        wratio = f"{wall / ms[best_wall][0]:.2f}x" if best_wall else "-"
        print(f"{v.name:12} {wall:9.1f} {cpu:9.1f} {ratio:>17} {wratio:>18}")
    ref = next((v for v in variants if v.name == "torch-1t"), None)
    print("\ntest loss (nats/char) at each evaluation:")
    print(f"{'step':>6} " + " ".join(f"{v.name:>12}" for v in variants))
    for i, (step, _) in enumerate(variants[0].curve):
        print(f"{step:6d} " + " ".join(f"{v.curve[i][1]:12.4f}" for v in variants))
    result = {"steps": args.steps, "batch": BATCH, "ms_per_step": ms, "best_torch": best_torch,
              "best_torch_wall": best_wall,
              "curves": {v.name: v.curve for v in variants}}
    if ref is not None:
        for v in variants:
            if v.name.startswith("rg"):
                gap = max(abs(a[1] - b[1]) for a, b in zip(v.curve, ref.curve))
                result[f"max_gap_{v.name}"] = gap
                print(f"{v.name}: largest gap to torch-1t {gap:.4f} nats "
                      f"({'within' if gap <= TOL else 'OUTSIDE'} {TOL})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)


if __name__ == "__main__":
    sys.exit(main())
