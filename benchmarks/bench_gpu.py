"""retrograd on a CUDA GPU (CuPy): correctness of every op against the CPU, a training step
with no host transfer but the loss, and timings beside the CPU, bare CuPy and PyTorch CUDA.

    python benchmarks/bench_gpu.py [--quick] [--rounds N]

1. Every op with samples (`retrograd.ops.samples`), in float32: forward and backward on the
   device against the same on the CPU (rtol 2e-3, atol 2e-4; a few ops that amplify
   rounding get their own tolerance). Prints the ops that disagree or fail.
2. MLP and CNN training steps (digits-sized) on the device, counting device-to-host copies
   made through retrograd (the backend's `to_host`, `.item()`, `float()`, `bool()`,
   `.tolist()`): exactly one per step, the loss, is allowed.
3. Timings (median of rounds, after warm-up, with the device synchronised): per-op
   overhead of a chain of 100 small element-wise ops with backward (device and CPU); a
   4096x4096 float32 matmul forward+backward (retrograd, bare CuPy, torch CUDA); a
   training step (device, CPU, torch CUDA). Targets: matmul within 1.2x of CuPy alone, the
   device's per-op overhead within 1.5x of the CPU engine's.

Without CuPy or a GPU it says so and exits 0.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
try:
    import retrograd as rg
except ImportError:
    sys.path.insert(0, str(ROOT / "src"))
    import retrograd as rg

from retrograd import devices, ops  # noqa: E402
from retrograd.cli.check import cases  # noqa: E402
from retrograd.engine import apply  # noqa: E402
from retrograd.ops.samples import SAMPLES  # noqa: E402

LOOSE = {"erfinv": 1e-2, "ndtri": 1e-2, "polygamma": 1e-2, "zeta": 1e-2, "matrix_exp": 1e-2,
         "pinv": 1e-2, "svd": 1e-2, "eigh": 1e-2, "qr": 1e-2, "inv": 1e-2, "solve": 1e-2,
         "det": 1e-2, "logabsdet": 1e-2, "cholesky": 1e-2, "gammainc": 1e-2,
         "gammaincc": 1e-2, "digamma": 1e-2}


def _sync():
    import cupy
    cupy.cuda.Device().synchronize()


def _host(t):
    return devices.host(t.data if isinstance(t, rg.Tensor) else t)


def _f32(x, device):
    if isinstance(x, rg.Tensor):
        data = x.data.astype(np.float32) if x.dtype == np.float64 else x.data
        t = rg.Tensor._wrap(devices.to(data, device))
        return t.requires_grad_(True) if x.requires_grad else t
    if isinstance(x, np.ndarray):
        return devices.to(x, device)
    if isinstance(x, tuple):
        return tuple(_f32(v, device) for v in x)
    if isinstance(x, list):
        return [_f32(v, device) for v in x]
    return x


def _run(name, inputs, attrs):
    out = apply(ops.OPS[name], *inputs, **attrs)
    diff = [x for x in inputs if isinstance(x, rg.Tensor) and x.requires_grad]
    if not diff or not out.requires_grad:
        return out, []
    v = np.random.default_rng(0).standard_normal(out.shape).astype(out.dtype)
    v = rg.tensor(v, device=out.device)
    return out, rg.autograd.grad(out, diff, v, allow_unused=True)


def check_ops(names) -> list[str]:
    """Every op's forward and backward on the device against the CPU, in float32."""
    bad = []
    for name in names:
        tol = LOOSE.get(name, 2e-3)
        try:
            for inputs, attrs in cases(name, seed=0):
                dev_attrs = (dict(attrs, device="cuda:0", src="cuda:0") if name == "to_device"
                             else {k: _f32(v, "cuda") for k, v in attrs.items()})
                out, grads = _run(name, [_f32(x, "cpu") for x in inputs], attrs)
                dout, dgrads = _run(name, [_f32(x, "cuda") for x in inputs], dev_attrs)
                if dout.device.type != "cuda":
                    raise AssertionError("the result left the device")
                np.testing.assert_allclose(_host(dout), _host(out), rtol=tol, atol=tol / 10)
                for g, dg in zip(grads, dgrads):
                    if g is not None:
                        np.testing.assert_allclose(_host(dg), _host(g), rtol=tol, atol=tol / 10)
        except Exception as e:  # noqa: BLE001 - report every op, not just the first
            bad.append(f"{name}: {type(e).__name__}: {str(e).splitlines()[0][:160]}")
    return bad


class _Transfers:
    """Counts device-to-host copies made through retrograd while active."""

    def __init__(self):
        self.count = 0
        self._saved = []

    def __enter__(self):
        b = devices.backend("cuda")
        T = rg.Tensor
        for owner, name in ((b, "to_host"), (T, "item"), (T, "__float__"), (T, "__bool__"),
                            (T, "tolist"), (T, "__int__")):
            orig = getattr(owner, name)
            self._saved.append((owner, name, orig))

            def counted(*a, _orig=orig, **k):
                self.count += 1
                return _orig(*a, **k)
            setattr(owner, name, counted)
        return self

    def __exit__(self, *exc):
        for owner, name, orig in self._saved:
            setattr(owner, name, orig)


def _digits_batch(model_name, device, n=256):
    rng = np.random.default_rng(0)
    X = rng.random((n, 64)).astype(np.float32)
    if model_name == "cnn":
        X = X.reshape(n, 1, 8, 8)
    return rg.tensor(X, device=device), rg.tensor(rng.integers(0, 10, n), device=device)


def _make_step(model_name, device):
    from retrograd.cli.digits import build_model

    rg.manual_seed(0)
    model = build_model(model_name).to(device)
    opt = rg.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True)
    xb, yb = _digits_batch(model_name, device)

    def step():
        loss = rg.nn.functional.cross_entropy(model(xb), yb, label_smoothing=0.1)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss.item()
    return step


def check_training() -> list[str]:
    bad = []
    for model_name in ("mlp", "cnn"):
        step = _make_step(model_name, "cuda")
        step()  # state made, kernels compiled
        with _Transfers() as tr:
            losses = [step() for _ in range(3)]
        if tr.count != 3:
            bad.append(f"{model_name}: {tr.count} device-to-host copies in 3 steps (3 allowed, "
                       "the losses)")
        cpu = _make_step(model_name, "cpu")
        ref = [cpu() for _ in range(4)][1:]
        if not np.allclose(losses, ref, rtol=1e-3):
            bad.append(f"{model_name}: device losses {losses} differ from the CPU's {ref}")
    return bad


def _time(fn, rounds, sync=False, warm=2):
    for _ in range(warm):
        fn()
    if sync:
        _sync()
    ts = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        if sync:
            _sync()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def _chain(device, n_ops=100):
    x = rg.randn(8, device=device, requires_grad=True)

    def run():
        y = x
        for _ in range(n_ops // 5):
            y = (y * 0.5 + 0.1).tanh().exp().sin()
        y.sum().backward()
        x.grad = None
    return run


def timings(rounds: int, quick: bool) -> list[tuple[str, float, str]]:
    import cupy

    rows = []
    per_op = {}
    for device in ("cpu", "cuda"):
        per_op[device] = _time(_chain(device), rounds, sync=device == "cuda") / 100 * 1e6
        rows.append((f"per-op overhead ({device})", per_op[device], "us/op"))
    rows.append(("  device / cpu (target <= 1.5)", per_op["cuda"] / per_op["cpu"], "x"))

    n = 1024 if quick else 4096
    a = rg.randn(n, n, device="cuda", requires_grad=True)
    b = rg.randn(n, n, device="cuda", requires_grad=True)
    g = rg.randn(n, n, device="cuda")

    def ours():
        (a @ b).backward(g)
        a.grad = b.grad = None

    ca, cb, cg = a.data, b.data, g.data

    def bare():
        ca @ cb
        cg @ cb.T
        ca.T @ cg

    t_ours = _time(ours, rounds, sync=True)
    t_bare = _time(bare, rounds, sync=True)
    rows += [(f"matmul {n}x{n} f32 fwd+bwd (retrograd)", t_ours * 1e3, "ms"),
             (f"matmul {n}x{n} f32 fwd+bwd (CuPy alone)", t_bare * 1e3, "ms"),
             ("  retrograd / CuPy (target <= 1.2)", t_ours / t_bare, "x")]
    for model_name in ("mlp", "cnn"):
        for device in ("cuda", "cpu"):
            rows.append((f"{model_name} training step, batch 256 ({device})",
                         _time(_make_step(model_name, device), rounds,
                               sync=device == "cuda") * 1e3, "ms"))
    try:
        import torch
        if torch.cuda.is_available():
            ta = torch.randn(n, n, device="cuda", requires_grad=True)
            tb = torch.randn(n, n, device="cuda", requires_grad=True)
            tg = torch.randn(n, n, device="cuda")

            def tmat():
                (ta @ tb).backward(tg)
                ta.grad = tb.grad = None
            rows.append((f"matmul {n}x{n} f32 fwd+bwd (torch CUDA)",
                         _time(tmat, rounds, sync=True) * 1e3, "ms"))
        else:
            rows.append(("torch CUDA", float("nan"), "not available"))
    except ImportError:
        rows.append(("torch", float("nan"), "not installed"))
    del cupy
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="a 1024 matmul, fewer rounds")
    p.add_argument("--rounds", type=int, default=None)
    p.add_argument("--op", action="append", default=None, help="only this op (repeatable)")
    args = p.parse_args(argv)
    if not rg.cuda.is_available():
        print("bench_gpu: no GPU (CuPy not installed, or no CUDA device): nothing to run")
        return 0
    import cupy
    print(f"bench_gpu: CuPy {cupy.__version__}, {rg.cuda.device_count()} device(s), "
          f"{cupy.cuda.runtime.getDeviceProperties(0)['name'].decode()}")
    names = args.op or sorted(SAMPLES)
    t0 = time.perf_counter()
    bad_ops = check_ops(names)
    print(f"ops: {len(names) - len(bad_ops)} of {len(names)} match the CPU in float32 "
          f"({time.perf_counter() - t0:.1f} s)")
    for line in bad_ops:
        print("  FAIL", line)
    bad_train = check_training()
    print("training steps: " + ("no host transfer but the loss; losses match the CPU"
                                if not bad_train else "PROBLEMS"))
    for line in bad_train:
        print("  FAIL", line)
    rounds = args.rounds or (5 if args.quick else 20)
    print(f"\n{'timing (median of ' + str(rounds) + ' rounds)':<48} {'value':>10}  unit")
    for label, value, unit in timings(rounds, args.quick):
        print(f"{label:<48} {value:>10.3f}  {unit}")
    return 1 if bad_ops or bad_train else 0


if __name__ == "__main__":
    sys.exit(main())
