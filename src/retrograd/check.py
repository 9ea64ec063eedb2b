"""`retrograd check`: gradient-check every op in the op table against finite differences."""

from __future__ import annotations

import sys
import time

import numpy as np

from . import ops
from .engine import apply
from .gradcheck import GradcheckError, gradcheck, gradgradcheck
from .op_samples import SAMPLES
from .tensor import Tensor


def cases(name: str, seed: int = 0):
    """(inputs as Tensors, attrs, differentiable input indices) for each sample of an op."""
    rng = np.random.default_rng(seed)
    for arrays, attrs in SAMPLES[name](rng):
        inputs = []
        for a in arrays:
            t = Tensor(np.asarray(a)) if isinstance(a, (np.ndarray, np.generic, float)) else a
            if isinstance(t, Tensor) and t.dtype == np.float64:
                t.requires_grad_(True)
            inputs.append(t)
        yield inputs, attrs


def op_fn(op, attrs):
    return lambda *xs: apply(op, *xs, **attrs)


def check_op(name: str, seed: int = 0, second_order: bool = True) -> tuple[int, str]:
    """Number of cases checked, and '' or the first failure's message."""
    op = ops.OPS[name]
    n = 0
    for inputs, attrs in cases(name, seed):
        fn = op_fn(op, attrs)
        try:
            gradcheck(fn, inputs)
            if second_order and op.smooth:
                gradgradcheck(fn, inputs, fast=True)
        except (GradcheckError, RuntimeError, ValueError) as e:
            shapes = [getattr(x, "shape", x) for x in inputs]
            return n, f"inputs {shapes}, attrs {attrs}: {e}"
        n += 1
    return n, ""


def run(args) -> int:
    names = args.op or [n for n in ops.OPS if n in SAMPLES]
    unknown = [n for n in names if n not in SAMPLES]
    if unknown:
        from .cli import UsageError
        raise UsageError(f"no gradient check for op(s) {', '.join(unknown)}; known: "
                         f"{', '.join(sorted(SAMPLES))}")
    width = max(len(n) for n in names)
    print(f"{'op':<{width}}  cases  order  result")
    failed = 0
    start = time.perf_counter()
    for name in names:
        order = "2" if ops.OPS[name].smooth else "1"
        n, err = check_op(name, args.seed)
        status = "ok" if not err else "FAIL " + err
        failed += bool(err)
        print(f"{name:<{width}}  {n:>5}  {order:>5}  {status}")
    print(f"{len(names) - failed} of {len(names)} ops agree with finite differences "
          f"({time.perf_counter() - start:.1f} s)")
    return 1 if failed else 0


if __name__ == "__main__":
    from .cli import main

    sys.exit(main(["check", *sys.argv[1:]]))
